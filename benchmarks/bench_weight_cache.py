#!/usr/bin/env python3
"""What keeping derived weight data across calls is worth (Note [Derived data cache] in
csrc/core/derived_cache.cpp): Winograd's transformed filters of every 3x3 convolution, kept while
the weight is unchanged.

    python benchmarks/bench_weight_cache.py [--threads 1 2] [--batch 1 8] [--rounds 9]

Each row times an eval-mode forward under no_grad of one model three ways, interleaved in one
process: Kindle as it runs (the filters cached), Kindle with the cache defeated (a copy of the
model whose weights were handed to NumPy, which marks them exported: their filters are transformed
on every call, as before the cache), and torch eager. Reported: medians, cached/uncached and
cached/torch (below 1: faster), the spread (largest IQR/median), and the bytes the cache holds.
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # two OpenMP pools in one process

import argparse  # noqa: E402
import copy  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kindle  # noqa: E402
from models import resnet  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def timed(fn, min_s=0.2):
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        dt = time.perf_counter() - t0
        if dt >= min_s:
            return dt / n


def spread(xs):
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    p.add_argument("--models", nargs="+", default=["resnet18", "resnet50"])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--size", type=int, default=224)
    args = p.parse_args(argv)
    print("| thr | model | batch | cached | uncached | torch | cached/uncached | cached/torch | spread | cache |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.models:
        cached = resnet.build(kindle, name).eval()
        uncached = copy.deepcopy(cached)
        for m in uncached.modules():
            if isinstance(m, kindle.nn.Conv2d):
                m.weight.detach().numpy()  # exported: never cached again
        tm = None
        if torch is not None:
            tm = resnet.build(torch, name).eval()
            # (through copies: exporting the weights themselves would turn their cache off)
            tm.load_state_dict({k: torch.from_numpy(v.detach().clone().numpy()) for k, v in cached.state_dict().items()})
        for batch in args.batch:
            x = kindle.randn(batch, 3, args.size, args.size)
            tx = torch.from_numpy(x.numpy().copy()) if tm is not None else None
            for threads in args.threads:
                kindle.set_num_threads(threads)
                if torch is not None:
                    torch.set_num_threads(threads)
                fns = {"cached": lambda: cached(x), "uncached": lambda: uncached(x)}
                if tm is not None:
                    fns["torch"] = lambda: tm(tx)
                samples = {k: [] for k in fns}
                with kindle.no_grad(), (torch.no_grad() if torch is not None else kindle.no_grad()):
                    for f in fns.values():  # warm-up: the cache keeps the filters from the second call
                        f(), f()
                    a, b = cached(x), uncached(x)
                    assert kindle.equal(a, b), "cached and uncached forwards differ"
                    for r in range(args.rounds):
                        order = list(fns)[r % len(fns):] + list(fns)[:r % len(fns)]
                        for k in order:
                            samples[k].append(timed(fns[k]))
                med = {k: statistics.median(v) for k, v in samples.items()}
                sp = max(spread(v) for v in samples.values())
                tcol = f"{med['torch'] * 1e3:.1f} ms" if "torch" in med else "-"
                tratio = f"{med['cached'] / med['torch']:.2f}" if "torch" in med else "-"
                mib = kindle.cpu.memory_stats()["derived_bytes"] / 2 ** 20
                print(f"| {threads} | {name} | {batch} | {med['cached'] * 1e3:.1f} ms | {med['uncached'] * 1e3:.1f} ms | "
                      f"{tcol} | {med['cached'] / med['uncached']:.2f} | {tratio} | {100 * sp:.0f}% | {mib:.0f} MiB |",
                      flush=True)


if __name__ == "__main__":
    main()
