"""python -m kindle.distributed.run: torchrun's launcher. Starts --nproc-per-node worker processes
on this node with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
GROUP_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID). Node 0's launcher hosts the store the
workers meet through, so a worker that dies does not take it along. When a worker fails, the
others are stopped and the launcher exits with its exit code, naming it and its error.

Several hosts: run the same command on each with --nnodes N --node-rank i --master-addr HOST0."""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

__all__ = ["main", "get_args_parser", "run"]


def _int_or_auto(value):
    if value in ("auto", "cpu", "gpu"):
        return os.cpu_count() if value in ("auto", "cpu") else 1
    return int(value)


def get_args_parser():
    p = argparse.ArgumentParser(prog="python -m kindle.distributed.run",
                                description="Start a distributed training job on this node (torchrun's flags).")
    p.add_argument("--nnodes", type=str, default="1", help="number of nodes, or MIN:MAX (Kindle uses MAX)")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=_int_or_auto, default=1,
                   help="worker processes on this node")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0, help="this node's rank (0 hosts the store)")
    p.add_argument("--master-addr", "--master_addr", type=str, default="127.0.0.1", help="address of node 0")
    p.add_argument("--master-port", "--master_port", type=int, default=29500, help="a free port on node 0")
    p.add_argument("--standalone", action="store_true", help="single node, any free port")
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", type=str, default="", help="HOST:PORT (as master-addr/port)")
    p.add_argument("--rdzv-backend", "--rdzv_backend", type=str, default="static")
    p.add_argument("--rdzv-id", "--rdzv_id", type=str, default="none")
    p.add_argument("--max-restarts", "--max_restarts", type=int, default=0)
    p.add_argument("--monitor-interval", "--monitor_interval", type=float, default=0.1)
    p.add_argument("--start-method", "--start_method", type=str, default="spawn")
    p.add_argument("--role", type=str, default="default")
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true", help="run the script as an executable")
    p.add_argument("--log-dir", "--log_dir", type=str, default=None)
    p.add_argument("-r", "--redirects", type=str, default="0")
    p.add_argument("-t", "--tee", type=str, default="0")
    p.add_argument("training_script", type=str)
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _command(args):
    if args.no_python:
        return [args.training_script, *args.training_script_args]
    if args.module:
        return [sys.executable, "-u", "-m", args.training_script, *args.training_script_args]
    return [sys.executable, "-u", args.training_script, *args.training_script_args]


def _stop(procs, grace=5.0):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.time() + grace
    for p in procs:
        while p.poll() is None and time.time() < deadline:
            time.sleep(0.02)
        if p.poll() is None:
            p.kill()
            p.wait()


def run(args):
    nnodes = int(str(args.nnodes).split(":")[-1])
    nproc = args.nproc_per_node
    if nproc < 1 or nnodes < 1 or not 0 <= args.node_rank < nnodes:
        raise ValueError(f"invalid job shape: nnodes={nnodes}, nproc_per_node={nproc}, node_rank={args.node_rank}")
    addr, port = args.master_addr, args.master_port
    if args.rdzv_endpoint:
        host, _, p = args.rdzv_endpoint.rpartition(":")
        addr, port = host or addr, int(p) if p else port
    if args.standalone:
        addr, port = "127.0.0.1", _free_port()
    world = nnodes * nproc
    store = None
    if args.node_rank == 0:
        from kindle._C import _distributed as _d  # the launcher serves the store
        store = _d.TCPStore("0.0.0.0" if addr not in ("127.0.0.1", "localhost") else addr, port, None, True, 1800.0)
    run_id = os.environ.get("TORCHELASTIC_RUN_ID", args.rdzv_id if args.rdzv_id != "none" else uuid.uuid4().hex[:8])
    error_dir = tempfile.mkdtemp(prefix="kindle_run_")
    procs, error_files = [], []
    if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
        print("kindle.distributed.run: setting OMP_NUM_THREADS=1 for each worker (several workers share this "
              "machine's cores); set it yourself to change that", file=sys.stderr)
    for local in range(nproc):
        rank = args.node_rank * nproc + local
        env = dict(os.environ)
        err = os.path.join(error_dir, f"error_{rank}.json")
        env.update({
            "RANK": str(rank), "LOCAL_RANK": str(local), "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(nproc),
            "GROUP_RANK": str(args.node_rank), "ROLE_RANK": str(rank), "ROLE_NAME": args.role,
            "ROLE_WORLD_SIZE": str(world), "GROUP_WORLD_SIZE": str(nnodes), "MASTER_ADDR": addr,
            "MASTER_PORT": str(port), "TORCHELASTIC_RUN_ID": run_id, "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": str(args.max_restarts), "TORCHELASTIC_USE_AGENT_STORE": "True",
            "TORCHELASTIC_ERROR_FILE": err, "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
        })
        if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
            env["OMP_NUM_THREADS"] = "1"
        procs.append(subprocess.Popen(_command(args), env=env))
        error_files.append((rank, err))

    def forward(signum, _frame):
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    failed = None
    try:
        while True:
            codes = [p.poll() for p in procs]
            bad = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
            if bad:
                failed = bad[0]
                break
            if all(c == 0 for c in codes):
                break
            time.sleep(args.monitor_interval)
    finally:
        if failed is not None:
            _stop(procs)
        for s, h in old.items():
            signal.signal(s, h)
        del store
    if failed is None:
        return 0
    local, code = failed
    rank, err = error_files[local]
    detail = ""
    if os.path.exists(err):
        with open(err) as f:
            msg = json.load(f).get("message", {})
        detail = msg.get("message", "") + "\n" + msg.get("extraInfo", {}).get("py_callstack", "")
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
    print(f"kindle.distributed.run: worker rank {rank} (local rank {local}, pid {procs[local].pid}) failed with "
          f"{how}; the other workers were stopped.\n{detail}", file=sys.stderr)
    return code if code > 0 else 128 - code


def main(argv=None):
    args = get_args_parser().parse_args(argv)
    sys.exit(run(args))


if __name__ == "__main__":
    main()
