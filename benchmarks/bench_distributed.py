#!/usr/bin/env python3
"""Distributed (issue 20): all_reduce bandwidth between 2 processes for 1 KB - 256 MB float32
tensors, and a DDP training step of an MLP with 2 processes vs 1; Kindle (Gloo through Kindle's
process group) beside torch.distributed with gloo, interleaved in the same processes.

    python benchmarks/bench_distributed.py [--quick]

Bandwidth is torch's "bus bandwidth" for a ring all-reduce: 2 (n-1)/n x bytes / time. DDP rows give
the step time (forward, backward with the gradient all-reduce, SGD step) and, for Kindle, the time
the end of backward waited for communication (the exposed part; the rest overlapped backward).
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(os.path.dirname(HERE), "python")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(fn, reps):
    fn()  # warm-up
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def worker(quick):
    sys.path.insert(0, PYDIR)
    import kindle
    import kindle.distributed as kd
    import torch
    import torch.distributed as td
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    kport, tport = int(os.environ["KPORT"]), int(os.environ["TPORT"])
    kd.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{kport}", rank=rank, world_size=world)
    td.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{tport}", rank=rank, world_size=world)
    rows = []
    if world > 1:
        sizes = [1 << 10, 16 << 10, 256 << 10, 4 << 20, 64 << 20] + ([] if quick else [256 << 20])
        for nbytes in sizes:
            n = nbytes // 4
            kt, tt = kindle.ones(n), torch.ones(n)
            reps = max(30, min(200, int(2e9 / max(nbytes, 1) / 50))) if nbytes <= (4 << 20) else 5
            if quick:
                reps = max(3, reps // 4)
            k_s, t_s = [], []
            for _ in range(3):  # interleaved A B A B
                k_s.append(timed(lambda: kd.all_reduce(kt), reps))
                t_s.append(timed(lambda: td.all_reduce(tt), reps))
            k, t = min(k_s), min(t_s)
            bus = 2 * (world - 1) / world * nbytes
            rows.append(("all_reduce", nbytes, k, t, bus / k / 1e9, bus / t / 1e9))

    # DDP step of an MLP: each process runs its share of a global batch of 256.
    def mlp(nn):
        return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))

    batch = 256 // world
    kindle.manual_seed(0)
    torch.manual_seed(0)
    km = kindle.nn.parallel.DistributedDataParallel(mlp(kindle.nn))
    tm = torch.nn.parallel.DistributedDataParallel(mlp(torch.nn))
    kopt = kindle.optim.SGD(km.parameters(), lr=0.01)
    topt = torch.optim.SGD(tm.parameters(), lr=0.01)
    kx, ky = kindle.randn(batch, 784), kindle.randint(0, 10, (batch,))
    tx, ty = torch.randn(batch, 784), torch.randint(0, 10, (batch,))
    waits = []

    def kstep():
        kopt.zero_grad()
        kindle.nn.functional.cross_entropy(km(kx), ky).backward()
        waits.append(km.reducer.last_wait_seconds())
        kopt.step()

    def tstep():
        topt.zero_grad()
        torch.nn.functional.cross_entropy(tm(tx), ty).backward()
        topt.step()

    reps = 5 if quick else 20
    k_s, t_s = [], []
    for _ in range(3):
        k_s.append(timed(kstep, reps))
        t_s.append(timed(tstep, reps))
    rows.append(("ddp_mlp", batch, min(k_s), min(t_s), statistics.median(waits), 0.0))
    kd.destroy_process_group()
    td.destroy_process_group()
    if rank == 0:
        for r in rows:
            print("ROW", *r, flush=True)


def launch(world, quick, threads):
    kport, tport = free_port(), free_port()
    procs = []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), KPORT=str(kport), TPORT=str(tport),
                   OMP_NUM_THREADS=str(threads), BENCH_WORKER="1")
        procs.append(subprocess.Popen([sys.executable, __file__] + (["--quick"] if quick else []), env=env,
                                      stdout=subprocess.PIPE, text=True))
    out = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"a worker failed: {[p.returncode for p in procs]}")
    rows = []
    for line in out[0].splitlines():
        if line.startswith("ROW"):
            _, name, size, k, t, a, b = line.split()
            rows.append((name, int(size), float(k), float(t), float(a), float(b)))
    return rows


def human(n):
    for unit, s in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= s:
            return f"{n // s} {unit}"
    return f"{n} B"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if os.environ.get("BENCH_WORKER"):
        worker(args.quick)
        return
    two = launch(2, args.quick, 1)
    one = launch(1, args.quick, 1)
    print("all_reduce between 2 processes (1 thread each), float32; bus bandwidth GB/s (higher is better)\n")
    print("| size | Kindle time | torch time | Kindle GB/s | torch GB/s | Kindle / torch time |")
    print("|---|---|---|---|---|---|")
    for name, size, k, t, kb, tb in two:
        if name == "all_reduce":
            print(f"| {human(size)} | {k * 1e6:.0f} us | {t * 1e6:.0f} us | {kb:.2f} | {tb:.2f} | {k / t:.2f} |")
    print("\nDDP step, MLP 784-1024-1024-10, global batch 256 (SGD), 1 thread per process\n")
    print("| processes | Kindle step | torch step | Kindle / torch | Kindle exposed communication |")
    print("|---|---|---|---|---|")
    for label, rows in (("1", one), ("2", two)):
        for name, size, k, t, wait, _ in rows:
            if name == "ddp_mlp":
                print(f"| {label} | {k * 1e3:.1f} ms | {t * 1e3:.1f} ms | {k / t:.2f} | {wait * 1e3:.2f} ms |")


if __name__ == "__main__":
    main()
