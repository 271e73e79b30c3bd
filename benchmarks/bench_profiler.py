#!/usr/bin/env python3
"""What the profiler costs (issue 21): per-op time of small ops with kindle.profiler off and on
(and record_shapes on), beside torch's with torch.profiler off and on, interleaved in one process.

    python benchmarks/bench_profiler.py [--quick]

Medians of repeated timings of 2,000-op loops; "on - off" is the profiler's cost per op.
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import kindle  # noqa: E402

try:
    import torch  # noqa: E402
except ImportError:
    torch = None

N = 2000


def per_op(lib, op, prof=None):
    a, b = lib.ones(4), lib.ones(4)
    fn = {"a + b": lambda: a + b, "relu": lambda: a.relu(), "sum": lambda: a.sum()}[op]
    if prof is None:
        t0 = time.perf_counter()
        for _ in range(N):
            fn()
        return (time.perf_counter() - t0) / N
    with prof:
        t0 = time.perf_counter()
        for _ in range(N):
            fn()
        dt = (time.perf_counter() - t0) / N
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    reps = 3 if args.quick else 15
    kindle.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    print(f"{'op':8s} {'kindle off':>11s} {'on':>9s} {'+shapes':>9s} {'on-off':>9s}   "
          f"{'torch off':>10s} {'on':>9s} {'on-off':>9s}   (ns per op, medians of {reps})")
    for op in ("a + b", "relu", "sum"):
        cols = {k: [] for k in ("k_off", "k_on", "k_shapes", "t_off", "t_on")}
        for _ in range(reps):
            cols["k_off"].append(per_op(kindle, op))
            cols["k_on"].append(per_op(kindle, op, kindle.profiler.profile()))
            cols["k_shapes"].append(per_op(kindle, op, kindle.profiler.profile(record_shapes=True)))
            if torch is not None:
                cols["t_off"].append(per_op(torch, op))
                cols["t_on"].append(per_op(torch, op, torch.profiler.profile()))
        m = {k: statistics.median(v) * 1e9 if v else float("nan") for k, v in cols.items()}
        print(f"{op:8s} {m['k_off']:11.0f} {m['k_on']:9.0f} {m['k_shapes']:9.0f} {m['k_on'] - m['k_off']:9.0f}   "
              f"{m['t_off']:10.0f} {m['t_on']:9.0f} {m['t_on'] - m['t_off']:9.0f}", flush=True)


if __name__ == "__main__":
    main()
