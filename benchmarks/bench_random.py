#!/usr/bin/env python3
"""Random fills: Kindle's CPU generator against torch's, side by side (A B A B) in one process.

    python benchmarks/bench_random.py                # 100M-element normal_, 16M others
    python benchmarks/bench_random.py --quick        # seconds; checks the script, not speed

Both libraries are seeded the same, so each row also checks that they drew the same numbers
(Kindle's generator is PyTorch's). Each row reports the median time of each library over the
repetitions and the ratio kindle/torch (below 1: Kindle is faster), at 1 and 2 threads.
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import numpy as np  # noqa: E402
import kindle  # noqa: E402
import torch  # noqa: E402


def workloads(big, n):
    return [
        (f"normal_ float32, {big // 10**6}M", lambda L, x: x.normal_(), lambda L: L.empty(big)),
        (f"normal_ float64, {n // 10**6}M", lambda L, x: x.normal_(), lambda L: L.empty(n, dtype=L.float64)),
        (f"uniform_ float32, {n // 10**6}M", lambda L, x: x.uniform_(-1, 1), lambda L: L.empty(n)),
        (f"bernoulli_(0.5) float32, {n // 10**6}M", lambda L, x: x.bernoulli_(0.5), lambda L: L.empty(n)),
        (f"exponential_ float32, {n // 10**6}M", lambda L, x: x.exponential_(), lambda L: L.empty(n)),
        (f"randint int64, {n // 10**6}M", lambda L, x: x.random_(0, 1000), lambda L: L.empty(n, dtype=L.int64)),
        (f"randperm, {max(n // 16, 1000)} elements", None, None),
    ]


def run(reps, big, n, threads):
    rows = []
    for name, fill, make in workloads(big, n):
        kt, tt = [], []
        for r in range(reps):
            for lib, times in ((kindle, kt), (torch, tt)) if r % 2 == 0 else ((torch, tt), (kindle, kt)):
                lib.manual_seed(r)
                if fill is None:
                    m = max(n // 16, 1000)
                    t0 = time.perf_counter()
                    out = lib.randperm(m)
                else:
                    x = make(lib)
                    t0 = time.perf_counter()
                    out = fill(lib, x)
                times.append(time.perf_counter() - t0)
                if lib is kindle:
                    k_out = out.numpy()
                else:
                    t_out = out.numpy()
            same = np.array_equal(k_out, t_out)
            del k_out, t_out
        km, tm = statistics.median(kt), statistics.median(tt)
        rows.append((name, threads, km, tm, km / tm, same))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()
    big, n = (10**6, 10**6) if args.quick else (10**8, 16 * 10**6)
    reps = 2 if args.quick else args.reps
    print(f"kindle vs torch {torch.__version__}, {reps} reps each, medians")
    print(f"{'workload':34s} {'threads':>7s} {'kindle s':>9s} {'torch s':>9s} {'k/t':>6s}  same")
    for threads in (1, 2):
        kindle.set_num_threads(threads)
        torch.set_num_threads(threads)
        for name, th, km, tm, ratio, same in run(reps, big, n, threads):
            print(f"{name:34s} {th:7d} {km:9.3f} {tm:9.3f} {ratio:6.2f}  {same}")


if __name__ == "__main__":
    main()
