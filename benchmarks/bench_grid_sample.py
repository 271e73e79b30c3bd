#!/usr/bin/env python3
"""grid_sample (the grid_sampler op, csrc/cpu/grid_sample.cpp) against torch, interleaved in one
process: the spatial transformer tutorial's shapes and a 224-px batch, forward alone and forward +
backward (input and grid gradients), bilinear with zero padding.

    python benchmarks/bench_grid_sample.py [--threads 1 2] [--rounds 7]

Reported: medians over rounds (each the best of a short loop) and kindle/torch (below 1: faster).
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # two OpenMP pools in one process

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import kindle  # noqa: E402
import kindle.nn.functional as KF  # noqa: E402

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = None

SHAPES = [((64, 1, 28, 28), (64, 28, 28, 2)), ((64, 8, 28, 28), (64, 28, 28, 2)),
          ((8, 3, 224, 224), (8, 224, 224, 2))]


def case(L, F, shape, gshape, backward):
    x = L.randn(*shape, requires_grad=backward)
    g = (L.rand(*gshape) * 2.2 - 1.1).requires_grad_(backward)

    def run():
        out = F.grid_sample(x, g, align_corners=False)
        if backward:
            out.sum().backward()
    return run


def best(fn, reps=10):
    fn()
    t = 1e9
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    if torch is None:
        raise SystemExit("torch is needed as the peer")
    print("| threads | input | pass | kindle ms | torch ms | kindle/torch |\n|---|---|---|---|---|---|")
    for threads in args.threads:
        kindle.set_num_threads(threads)
        torch.set_num_threads(threads)
        for shape, gshape in SHAPES:
            for backward in (False, True):
                k, t = case(kindle, KF, shape, gshape, backward), case(torch, TF, shape, gshape, backward)
                ks, ts = [], []
                for _ in range(args.rounds):  # interleaved: A B A B
                    ks.append(best(k))
                    ts.append(best(t))
                km, tm = statistics.median(ks) * 1e3, statistics.median(ts) * 1e3
                print(f"| {threads} | {'x'.join(map(str, shape))} | {'fwd+bwd' if backward else 'fwd'} | {km:.3f} | "
                      f"{tm:.3f} | {km / tm:.2f} |")


if __name__ == "__main__":
    main()
