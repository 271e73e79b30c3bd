#!/usr/bin/env python3
"""Autograd benchmark: Kindle's reverse mode against PyTorch's, in one process.

    python benchmarks/bench_autograd.py                  # full run, 1 and 2 threads
    python benchmarks/bench_autograd.py --quick          # seconds; checks the script, not speed
    python benchmarks/bench_autograd.py --threads 1 --filter mlp --markdown out.md

Same method as benchmarks/bench_core.py (whose helpers this script imports): every workload runs
on Kindle and PyTorch in the same process with identical float32 inputs, interleaved within each
repetition (the order rotates), and the table reports the median time per call, the ratio
kindle/torch of the medians (below 1: Kindle is faster) and the spread (largest IQR/median of
the row). Every timed call is a whole training-step-like unit: clear the leaves' .grad (set to
None, on both sides), run the forward pass, and call .backward() on a scalar.

Before timing, each workload runs once per library on the same inputs and the table's
"grad diff" column gives the largest absolute difference between Kindle's and PyTorch's
gradients over all leaves (a warning is printed when they disagree), so a fast but broken
backward cannot pass unnoticed.

Compare ratios measured side by side in one run, never absolute times from different runs.
"""
import os

# As in bench_core: two OpenMP pools (Kindle's, PyTorch's) whose idle threads spin would steal
# the cores from each other; PASSIVE makes them sleep. Must be set before the imports.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_core  # noqa: E402
from bench_core import Table, Workload, fmt_time, same, spread  # noqa: E402

kindle, torch = bench_core.kindle, bench_core.torch


# ----------------------------------------------------------------------------- configuration
@dataclass
class Config:
    min_reps: int      # repetitions per workload, at least ...
    max_reps: int      # ... and at most
    budget_s: float    # target time per workload (per thread count); sets reps between the bounds
    min_sample_s: float  # a timed sample repeats a fast call until it lasts this long


FULL = Config(15, 301, 4.0, 2e-3)
QUICK = Config(3, 5, 0.05, 2e-4)


# ----------------------------------------------------------------------------- workloads
@dataclass
class GradWorkload(Workload):
    make: Callable = None   # rng -> {name: numpy array}: the inputs, the same for both libraries
    leaves: tuple = ()      # names of the inputs that are leaves with requires_grad=True


def clear(*names):
    return "; ".join(f"{n}.grad = None" for n in names) + "\n"


def randn(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)).astype(np.float32)


# The 50-op chain: five pairs of five-op rounds of cheap elementwise ops on small values
# (inputs 0.1 * N(0, 1)). Each round is the identity to first order at 0
# (exp(4 sigmoid(x) - 2) - 1 and 2 sigmoid(2 tanh(x)) - 1), so the values stay small and the
# gradient stays O(1) after 50 ops: a chain of contracting maps would drive it to ~1e-19, where
# any backward, broken or not, would pass the gradient check.
CHAIN_ROUNDS = (("x = x.sigmoid()", "x = x * 4.0", "x = x - 2.0", "x = x.exp()", "x = x - 1.0"),
                ("x = x.tanh()", "x = x * 2.0", "x = x.sigmoid()", "x = x * 2.0", "x = x - 1.0"))
CHAIN_OPS = sum(CHAIN_ROUNDS, ()) * 5
CHAIN = "x = a\n" + "\n".join(CHAIN_OPS) + "\nx.sum().backward()"
assert len(CHAIN_OPS) == 50

# MLP 784-512-512-10 from plain ops; loss = mean negative log-likelihood of the labels y.
MLP = ("h = (x @ W1 + b1).relu()\n"
       "h = (h @ W2 + b2).relu()\n"
       "loss = -(h @ W3 + b3).log_softmax(1).gather(1, y).mean()\n"
       "loss.backward()")
MLP_LEAVES = ("W1", "b1", "W2", "b2", "W3", "b3")


def mlp_inputs(rng, batch=128, sizes=(784, 512, 512, 10)):
    d = {"x": randn(rng, batch, sizes[0]),
         "y": rng.integers(0, sizes[-1], size=(batch, 1), dtype=np.int64)}
    for i, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:]), 1):
        d[f"W{i}"] = randn(rng, fan_in, fan_out, scale=fan_in ** -0.5)  # keeps activations O(1)
        d[f"b{i}"] = randn(rng, fan_out, scale=0.1)
    return d


def build_workloads(cfg):
    W = [
        # Per-op overhead of the autograd machinery: two recorded ops and a backward through
        # them on 16 elements; the time is almost all graph building, engine and dispatch.
        GradWorkload("autograd round trip [16 elem]", "overhead", {},
                     same(clear("a", "b") + "(a * b).sum().backward()"), target=0.5,
                     make=lambda rng: {"a": randn(rng, 16), "b": randn(rng, 16)}, leaves=("a", "b")),
        # A small training step: three GEMMs forward, six backward (MKL on both sides).
        GradWorkload("MLP 784-512-512-10 fwd+bwd [batch 128]", "mlp", {},
                     same(clear(*MLP_LEAVES) + MLP), target=1.0,
                     make=mlp_inputs, leaves=MLP_LEAVES),
    ]
    # Many small nodes: graph bookkeeping and per-node kernel launch dominate.
    for n in (1000, 100):
        W.append(GradWorkload(f"50-op chain [{n} elem]", "chain", {},
                              same(clear("a") + CHAIN), target=1.0,
                              make=lambda rng, n=n: {"a": randn(rng, n, scale=0.1)}, leaves=("a",)))
    return W


def make_spaces(wl, seed=0):
    """One namespace per library, each with its own copy of the same inputs; the leaves require
    grad (made as library tensors first, then requires_grad_(), so they are true leaves)."""
    arrays = wl.make(np.random.default_rng(seed))
    spaces = {}
    for name, lib in (("kindle", kindle), ("torch", torch)):
        ns = {"kindle": kindle, "torch": torch}
        for k, a in arrays.items():
            t = lib.from_numpy(a).clone()
            ns[k] = t.requires_grad_() if k in wl.leaves else t
        spaces[name] = ns
    return spaces


def check_grads(wl, spaces):
    """Run each library's statement once and compare the gradients of every leaf. Returns the
    largest absolute difference (inf when a gradient is missing or has the wrong shape)."""
    for lib in ("kindle", "torch"):
        exec(wl.variants[lib].stmt, spaces[lib])  # noqa: S102
    worst, bad = 0.0, []
    for leaf in wl.leaves:
        gk, gt = spaces["kindle"][leaf].grad, spaces["torch"][leaf].grad
        if gk is None or gt is None:
            bad.append(f"{leaf}: grad is None (kindle {gk is None}, torch {gt is None})")
            worst = float("inf")
            continue
        k = np.asarray(gk.numpy(), dtype=np.float64)
        t = np.asarray(gt.numpy(), dtype=np.float64)
        if k.shape != t.shape:
            bad.append(f"{leaf}: shape {k.shape} vs {t.shape}")
            worst = float("inf")
            continue
        err = float(np.abs(k - t).max(initial=0.0))
        worst = max(worst, err)
        scale = max(1.0, float(np.abs(t).max(initial=0.0)))
        if not np.allclose(k, t, rtol=1e-3, atol=1e-4 * scale):
            bad.append(f"{leaf}: max abs error {err:.3g}")
    for b in bad:
        print(f"WARNING: {wl.name}: kindle gradient differs from torch: {b}", flush=True)
    return worst


# ----------------------------------------------------------------------------- output
COLUMNS = ("thr", "workload", "kindle", "torch", "k/t", "spread", "grad diff", "target")
LEFT = (1, 5, 7)


def row_cells(threads, wl, samples, reps, diff):
    med = {lib: statistics.median(samples[lib]) for lib in ("kindle", "torch")}
    ratio = med["kindle"] / med["torch"]
    target = "-"
    if wl.target is not None:
        target = f"<={wl.target:.2f} " + ("ok" if ratio <= wl.target else "MISS")
    worst = max(spread(s) for s in samples.values())
    return (str(threads), wl.name, fmt_time(med["kindle"]), fmt_time(med["torch"]), f"{ratio:.2f}",
            f"{100 * worst:.0f}% n={reps}", f"{diff:.1e}", target)


# ----------------------------------------------------------------------------- main
def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="few repetitions (checks the script)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--filter", default="", help="run only workloads whose name or group contains "
                                                "one of these comma-separated words")
    p.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown to FILE")
    p.add_argument("--reps", type=int, help="fixed number of repetitions per workload")
    p.add_argument("--budget", type=float, help="seconds per workload used to choose repetitions")
    args = p.parse_args(argv)

    cfg = QUICK if args.quick else FULL
    if args.budget is not None:
        cfg = dataclasses.replace(cfg, budget_s=args.budget)
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    words = [w.strip().lower() for w in args.filter.split(",") if w.strip()]
    workloads = [wl for wl in build_workloads(cfg)
                 if not words or any(w in wl.name.lower() or w in wl.group for w in words)]
    if not workloads:
        p.error(f"--filter {args.filter!r} matches no workload")

    np_setter = bench_core.numpy_blas_thread_setter()
    header = bench_core.header_lines(args, cfg, np_setter)[:-1] + [
        "times: median per call (clear .grad, forward, backward); k/t = kindle/torch (below 1: "
        "kindle faster); spread = largest IQR/median in the row, n = repetitions; grad diff = "
        "largest abs difference of kindle's and torch's gradients over all leaves. Compare ratios "
        "within one run only.",
    ]
    print("\n".join(header), flush=True)
    widths = [3, max(len(wl.name) for wl in workloads), 9, 9, 5, 11, 11, 11]
    table = Table(widths, left=LEFT)
    print()
    print(table.line(COLUMNS))
    print(table.line(["-" * w for w in widths]), flush=True)

    rows = []
    for n in threads:
        bench_core.set_threads(n, np_setter)
        for wl in workloads:
            spaces = make_spaces(wl)
            diff = check_grads(wl, spaces)
            samples = bench_core.measure(wl, cfg, args.reps, spaces=spaces)
            reps = len(samples["kindle"])
            cells = row_cells(n, wl, samples, reps, diff)
            rows.append(cells)
            print(table.line(cells), flush=True)
    if args.markdown:
        bench_core.write_markdown(args.markdown, header, rows,
                                  title="Autograd benchmark: Kindle vs PyTorch",
                                  columns=COLUMNS, left=LEFT)
        print(f"\nmarkdown table written to {args.markdown}")


if __name__ == "__main__":
    main()
