#!/usr/bin/env python3
"""Optimizer benchmark: kindle.optim against torch.optim, in one process.

    python benchmarks/bench_optim.py                     # full run, 1 and 2 threads
    python benchmarks/bench_optim.py --quick             # seconds; checks the script, not speed
    python benchmarks/bench_optim.py --threads 1 --filter adam --markdown out.md

Same method as benchmarks/bench_core.py (whose helpers this script imports): every workload runs
on Kindle and PyTorch in the same process, interleaved within each repetition (the order
rotates), and the table reports the median time per call, the ratio kindle/torch of the medians
(below 1: Kindle is faster) and the spread (largest IQR/median of the row).

The model: 100 float32 parameter tensors of about 10M values in all (50 weight matrices and
50 bias vectors of mixed sizes), every one with a gradient. A timed call is one
`optimizer.step()` over all of them (the gradients stay in place between calls). torch runs its
default CPU path (the per-parameter for-loop: `foreach` and `fused` are None); Kindle updates
each parameter group in one fused C++ call (kindle._C._optim) for SGD, Adam, AdamW, RMSprop and
Adagrad, and with per-parameter kindle ops for the others.

Before timing, both libraries take three steps from the same parameters and gradients, and the
"param diff" column gives the largest absolute difference of the parameters afterwards (a
warning is printed when they disagree), so a fast but wrong step cannot pass unnoticed.

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

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_core  # noqa: E402
from bench_core import Table, Workload, fmt_time, same, spread  # noqa: E402

kindle, torch = bench_core.kindle, bench_core.torch
import kindle.optim  # noqa: E402,F401


# ----------------------------------------------------------------------------- configuration
@dataclass
class Config:
    n_params: int      # parameter tensors (half matrices, half biases)
    total: int         # about this many values in all
    min_reps: int      # repetitions per workload, at least ...
    max_reps: int      # ... and at most
    budget_s: float    # target time per workload (per thread count); sets reps between the bounds
    min_sample_s: float  # a timed sample repeats a fast call until it lasts this long


FULL = Config(100, 10_000_000, 15, 201, 4.0, 2e-3)
QUICK = Config(100, 200_000, 3, 5, 0.05, 2e-4)


def shapes(cfg):
    """Mixed sizes: weight i is (r_i, c) with r_i from 0.5x to 1.5x the mean; bias i is (r_i,)."""
    pairs = cfg.n_params // 2
    rows = [0.5 + i / max(pairs - 1, 1) for i in range(pairs)]  # mean 1
    c = 512 if cfg.total >= 1_000_000 else 64
    mean_rows = cfg.total / (pairs * (c + 1))
    out = []
    for r in rows:
        n = max(1, round(r * mean_rows))
        out += [(n, c), (n,)]
    return out


# ----------------------------------------------------------------------------- workloads
@dataclass
class OptWorkload(Workload):
    opt_name: str = ""
    kwargs: dict = None


def build_workloads(cfg):
    total = sum(int(np.prod(s)) for s in shapes(cfg))
    size = f"{len(shapes(cfg))} tensors, {total / 1e6:.1f}M values"

    def wl(label, group, name, kwargs, target=None):
        return OptWorkload(f"{label} [{size}]", group, {}, same("opt.step()"), target=target,
                           opt_name=name, kwargs=kwargs)

    return [
        wl("SGD momentum=0.9", "sgd", "SGD", {"lr": 1e-3, "momentum": 0.9}, target=1.0),
        wl("Adam", "adam", "Adam", {"lr": 1e-3}, target=1.0),
        wl("AdamW", "adam", "AdamW", {"lr": 1e-3}),
        wl("RMSprop", "rmsprop", "RMSprop", {"lr": 1e-3}),
        wl("Adagrad", "adagrad", "Adagrad", {"lr": 1e-3}),
    ]


def make_spaces(wl, cfg, seed=0):
    """One namespace per library: the same parameters and gradients, and an optimizer over them."""
    rng = np.random.default_rng(seed)
    arrays = [(rng.standard_normal(s, dtype=np.float32), rng.standard_normal(s, dtype=np.float32))
              for s in shapes(cfg)]
    spaces = {}
    for name, lib, mod in (("kindle", kindle, kindle.optim), ("torch", torch, torch.optim)):
        params = []
        for p, g in arrays:
            t = lib.from_numpy(p).clone().requires_grad_()
            t.grad = lib.from_numpy(g).clone()
            params.append(t)
        spaces[name] = {"opt": getattr(mod, wl.opt_name)(params, **wl.kwargs), "params": params}
    return spaces


def check_params(wl, cfg):
    """Three steps on each library from the same start; the largest parameter difference."""
    spaces = make_spaces(wl, cfg, seed=1)
    for ns in spaces.values():
        for _ in range(3):
            ns["opt"].step()
    worst = 0.0
    for pk, pt in zip(spaces["kindle"]["params"], spaces["torch"]["params"]):
        k, t = pk.detach().numpy(), pt.detach().numpy()
        worst = max(worst, float(np.abs(k.astype(np.float64) - t).max(initial=0.0)))
        if not np.allclose(k, t, rtol=1e-4, atol=1e-5):
            print(f"WARNING: {wl.name}: kindle parameters differ from torch's", flush=True)
            break
    return worst


# ----------------------------------------------------------------------------- output
COLUMNS = ("thr", "workload", "kindle", "torch", "k/t", "kindle GB/s", "torch GB/s", "spread",
           "param diff", "target")
LEFT = (1, 7, 9)
# Bytes each step reads and writes per value (float32): param r/w + grad r + state r/w.
TRAFFIC = {"SGD": 4 * (2 + 1 + 2), "Adam": 4 * (2 + 1 + 4), "AdamW": 4 * (2 + 1 + 4),
           "RMSprop": 4 * (2 + 1 + 2), "Adagrad": 4 * (2 + 1 + 2)}


def row_cells(threads, wl, cfg, samples, reps, diff):
    med = {lib: statistics.median(samples[lib]) for lib in ("kindle", "torch")}
    ratio = med["kindle"] / med["torch"]
    target = "-"
    if wl.target is not None:
        target = f"<={wl.target:.2f} " + ("ok" if ratio <= wl.target else "MISS")
    worst = max(spread(s) for s in samples.values())
    nbytes = TRAFFIC[wl.opt_name] * sum(int(np.prod(s)) for s in shapes(cfg))
    return (str(threads), wl.name, fmt_time(med["kindle"]), fmt_time(med["torch"]), f"{ratio:.2f}",
            f"{nbytes / med['kindle'] / 1e9:.1f}", f"{nbytes / med['torch'] / 1e9:.1f}",
            f"{100 * worst:.0f}% n={reps}", f"{diff:.1e}", target)


# ----------------------------------------------------------------------------- main
def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small model, few repetitions (checks the script)")
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
        "times: median per optimizer.step() over all parameters; k/t = kindle/torch (below 1: "
        "kindle faster); GB/s = the bytes a step must move (params r/w, grads r, state r/w) per "
        "second; spread = largest IQR/median in the row, n = repetitions; param diff = largest "
        "abs difference of the parameters after three steps. torch runs its default CPU path "
        "(foreach=None, fused=None). Compare ratios within one run only.",
    ]
    print("\n".join(header), flush=True)
    widths = [3, max(len(wl.name) for wl in workloads), 9, 9, 5, 11, 10, 11, 10, 11]
    table = Table(widths, left=LEFT)
    print()
    print(table.line(COLUMNS))
    print(table.line(["-" * w for w in widths]), flush=True)

    rows = []
    for n in threads:
        bench_core.set_threads(n, np_setter)
        for wl in workloads:
            diff = check_params(wl, cfg)
            samples = bench_core.measure(wl, cfg, args.reps, spaces=make_spaces(wl, cfg))
            cells = row_cells(n, wl, cfg, samples, len(samples["kindle"]), diff)
            rows.append(cells)
            print(table.line(cells), flush=True)
    if args.markdown:
        bench_core.write_markdown(args.markdown, header, rows,
                                  title="Optimizer benchmark: Kindle vs PyTorch",
                                  columns=COLUMNS, left=LEFT)
        print(f"\nmarkdown table written to {args.markdown}")


if __name__ == "__main__":
    main()
