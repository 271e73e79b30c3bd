#!/usr/bin/env python3
"""Core benchmark: Kindle against PyTorch (and NumPy where it applies), in one process.

    python benchmarks/bench_core.py                    # full run, 1 and 2 threads
    python benchmarks/bench_core.py --quick            # seconds; checks the script, not speed
    python benchmarks/bench_core.py --threads 1 --filter matmul --markdown out.md

Every workload runs on each library in the same process. The libraries are interleaved within
each repetition (the order rotates from one repetition to the next), and the table reports the
median time per call over many repetitions, the ratio kindle/torch of those medians (below 1:
Kindle is faster), throughput where it means something, and the spread (the largest IQR/median
of the row's columns) so a noisy row can be told from a real difference.

Machines are noisy: compare ratios measured side by side in one run, never absolute times from
different runs. The 1-thread figures are the steady ones; on a small VM whose second core is
time-sliced the 2-thread figures move from run to run.
"""
import os

# Kindle and PyTorch each bring an OpenMP runtime; two pools whose idle threads spin would
# steal the cores from each other. Kindle and NumPy each bring an OpenBLAS whose idle workers
# spin for ~0.1 s after every call (stealing a core from whatever library runs next in the
# interleaving); the shortest timeout makes them sleep at once, as PASSIVE does for OpenMP.
# Both must be set before the libraries are imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import argparse  # noqa: E402
import ctypes  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import timeit  # noqa: E402
import dataclasses  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Callable, Optional  # noqa: E402

import numpy as np  # noqa: E402
import kindle  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

LIBS = ("kindle", "torch", "numpy")


# ----------------------------------------------------------------------------- configuration
@dataclass
class Config:
    n_elem: int        # elements of the large 1-D workloads
    mat: int           # side of the square matrices (transposed copy, softmax)
    mm_sizes: tuple    # square matmul sizes
    min_reps: int      # repetitions per workload, at least ...
    max_reps: int      # ... and at most
    budget_s: float    # target time per workload (per thread count); sets reps between the bounds
    min_sample_s: float  # a timed sample repeats a fast call until it lasts this long


FULL = Config(16 << 20, 4096, (256, 512, 1024, 2048), 15, 101, 3.0, 2e-3)
QUICK = Config(1 << 20, 512, (64, 128), 3, 5, 0.05, 2e-4)


def size_name(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


# ----------------------------------------------------------------------------- workloads
@dataclass
class Variant:
    lib: str                     # which library's tensors the statement sees
    stmt: str                    # timed statement (timeit: no per-call lambda overhead)
    before: Optional[Callable] = None  # untimed, called with the namespace before each sample


@dataclass
class Workload:
    name: str
    group: str
    inputs: dict                 # input name -> shape (float32, standard normal)
    variants: dict               # label -> Variant
    rows: list = None            # (row name, kindle label, torch label, numpy label or None)
    unit: str = ""               # "GB/s" or "GFLOP/s"
    work: float = 0.0            # bytes moved or flops per call
    target: Optional[float] = None  # kindle/torch ratio we aim to stay at or below
    after: Optional[Callable] = None

    def __post_init__(self):
        if self.rows is None:
            self.rows = [(self.name, "kindle", "torch", "numpy" if "numpy" in self.variants else None)]


def same(stmt, numpy=None, **per_lib):
    """Variants running `stmt` on kindle and torch (and `numpy` when given); overrides by lib."""
    v = {lib: Variant(lib, per_lib.get(lib, stmt)) for lib in ("kindle", "torch")}
    if numpy:
        v["numpy"] = Variant("numpy", numpy)
    return v


def default_cache_limit():
    # What Kindle's CPU allocator starts with (csrc/core/allocator.cpp): physical memory / 8.
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 8
    except (ValueError, OSError):
        return 8 << 30


def build_workloads(cfg):
    n, m, sn = cfg.n_elem, cfg.mat, size_name(cfg.n_elem)
    one, vec, mat = {"a": (1,), "b": (1,)}, {"a": (n,), "b": (n,)}, {"x": (m, m)}
    f4 = 4  # bytes per float32
    W = [
        # Python per-op overhead: the time is almost all dispatch, argument parsing and the
        # output tensor's creation. Target: Kindle at most half of torch.
        Workload("a + b [1 elem]", "overhead", one, same("a + b", numpy="a + b"), target=0.5),
        Workload("relu [1 elem]", "overhead", one,
                 same("kindle.relu(a)", numpy="np.maximum(a, 0)", torch="torch.relu(a)"), target=0.5),
        Workload("sum [1 elem]", "overhead", one, same("a.sum()", numpy="a.sum()"), target=0.5),
        Workload("matmul 4x4", "overhead", {"a": (4, 4), "b": (4, 4)},
                 same("a @ b", numpy="a @ b"), target=0.5),
        # Memory-bound elementwise ops, each into a fresh output (Kindle's caching allocator
        # hands back a warm block; torch gets fresh pages from the OS every call).
        Workload(f"add {sn}", "elementwise", vec, same("a + b", numpy="a + b"),
                 unit="GB/s", work=3 * f4 * n),
        Workload(f"mul {sn}", "elementwise", vec, same("a * b", numpy="a * b"),
                 unit="GB/s", work=3 * f4 * n),
        Workload(f"exp {sn}", "elementwise", vec,
                 same("kindle.exp(a)", torch="torch.exp(a)", numpy="np.exp(a)"),
                 unit="GB/s", work=2 * f4 * n),
        Workload(f"tanh {sn}", "elementwise", vec,
                 same("kindle.tanh(a)", torch="torch.tanh(a)", numpy="np.tanh(a)"),
                 unit="GB/s", work=2 * f4 * n),
        Workload(f"gelu {sn}", "elementwise", vec, same("kindle.gelu(a)", torch="F.gelu(a)"),
                 unit="GB/s", work=2 * f4 * n),
        Workload(f"gelu(tanh) {sn}", "elementwise", vec,
                 same("kindle.gelu(a, approximate='tanh')", torch="F.gelu(a, approximate='tanh')"),
                 unit="GB/s", work=2 * f4 * n),
        # The no-allocation reference for the fresh-output rows above.
        Workload(f"add_ {sn} (in place)", "elementwise", vec,
                 same("a.add_(b)", numpy="np.add(a, b, out=a)"), unit="GB/s", work=3 * f4 * n),
        Workload(f"t().contiguous() {m}x{m}", "copy", mat,
                 same("x.t().contiguous()", numpy="np.ascontiguousarray(x.T)"),
                 unit="GB/s", work=2 * f4 * m * m),
        Workload(f"sum {sn}", "reduction", {"x": (n,)}, same("x.sum()", numpy="x.sum()"),
                 unit="GB/s", work=f4 * n),
        Workload(f"softmax(1) {m}x{m}", "reduction", mat, same("x.softmax(1)"),
                 unit="GB/s", work=2 * f4 * m * m),
    ]
    # float32 GEMM. Target: at least 90% of torch's GFLOP/s, i.e. kindle/torch time <= 1/0.9.
    for s in cfg.mm_sizes:
        W.append(Workload(f"matmul {s}", "matmul", {"a": (s, s), "b": (s, s)},
                          same("a @ b", numpy="a @ b"), unit="GFLOP/s", work=2.0 * s ** 3,
                          target=1 / 0.9))

    # The caching allocator: the same fresh-output add with Kindle's cache off and on,
    # interleaved with each other and with torch in every repetition.
    limit = default_cache_limit()

    def cache_off(ns):
        kindle.cpu_cache_set_limit(0)  # also empties the cache

    def cache_on(ns):
        kindle.cpu_cache_set_limit(limit)
        ns["a"] + ns["b"]  # noqa: B018  one call to put a block in the cache

    W.append(Workload(
        f"a + b {sn} (cache)", "allocator", vec,
        {"kindle_off": Variant("kindle", "a + b", cache_off),
         "kindle_on": Variant("kindle", "a + b", cache_on),
         "torch": Variant("torch", "a + b")},
        rows=[(f"a + b {sn}, kindle cache off", "kindle_off", "torch", None),
              (f"a + b {sn}, kindle cache on", "kindle_on", "torch", None)],
        unit="GB/s", work=3 * f4 * n,
        after=lambda: kindle.cpu_cache_set_limit(limit)))
    return W


def make_namespaces(wl, seed=0):
    """One namespace per library, each with its own copy of the same inputs, allocated by that
    library (so alignment and allocator are the library's own)."""
    rng = np.random.default_rng(seed)
    arrays = {k: rng.standard_normal(shape, dtype=np.float32) for k, shape in wl.inputs.items()}
    base = {"kindle": kindle, "torch": torch, "F": F, "np": np}
    conv = {"kindle": lambda a: kindle.from_numpy(a).clone(),
            "torch": lambda a: torch.from_numpy(a).clone(),
            "numpy": lambda a: a.copy()}
    libs = {v.lib for v in wl.variants.values()}
    return {lib: dict(base, **{k: conv[lib](a) for k, a in arrays.items()}) for lib in libs}


# ----------------------------------------------------------------------------- timing
def measure(wl, cfg, fixed_reps=None, spaces=None):
    """Median-ready samples (seconds per call) for each variant of `wl`, interleaved.

    `spaces` (lib -> namespace) replaces the inputs made from `wl.inputs`; a caller that passes
    it checks the results itself (as benchmarks/bench_autograd.py does for gradients)."""
    if spaces is None:
        spaces = make_namespaces(wl)
        check_results(wl, spaces)
    timers = {}
    for label, v in wl.variants.items():
        ns = spaces[v.lib]
        before = (lambda ns=ns, f=v.before: f(ns)) if v.before else (lambda: None)
        t = timeit.Timer(v.stmt, globals=ns)
        before()
        t.timeit(2)  # warm-up: lazy initialisation, first touch of pages, caches
        number = 1   # calibrate: calls per sample so that a sample lasts >= min_sample_s
        while True:
            before()
            dt = t.timeit(number)
            if dt >= cfg.min_sample_s or number >= 1 << 20:
                break
            number = min(1 << 20, max(2 * number, int(number * 1.2 * cfg.min_sample_s / max(dt, 1e-9))))
        timers[label] = (t, number, before, dt)
    per_rep = sum(dt for _, _, _, dt in timers.values())
    reps = fixed_reps or max(cfg.min_reps, min(cfg.max_reps, int(cfg.budget_s / max(per_rep, 1e-9))))
    labels = list(timers)
    samples = {label: [] for label in labels}
    for r in range(reps):
        k = r % len(labels)
        for label in labels[k:] + labels[:k]:  # rotate the order: A B C, B C A, C A B, ...
            t, number, before, _ = timers[label]
            before()
            samples[label].append(t.timeit(number) / number)
    if wl.after:
        wl.after()
    del spaces, timers
    gc.collect()
    return samples


def check_results(wl, spaces):
    """Evaluate every variant once on fresh inputs and compare with torch, so a fast but wrong
    kernel cannot pass unnoticed. Prints a warning; the timing still runs."""
    out = {}
    for label, v in wl.variants.items():
        if v.before:
            v.before(spaces[v.lib])
        r = eval(v.stmt, spaces[v.lib])  # noqa: S307
        out[label] = np.asarray(r.numpy() if hasattr(r, "numpy") else r, dtype=np.float64)
        if wl.after:
            wl.after()
    ref = out.pop("torch")
    for label, got in out.items():
        tol = 2e-3 * max(1.0, float(np.abs(ref).max(initial=0.0)))
        if got.shape != ref.shape or not np.allclose(got, ref, rtol=2e-3, atol=tol):
            err = np.abs(got - ref).max() if got.shape == ref.shape else f"shape {got.shape} vs {ref.shape}"
            print(f"WARNING: {wl.name}: {label} differs from torch (max abs error {err})", flush=True)


def spread(xs):
    if len(xs) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(xs, n=4)
    return (q3 - q1) / statistics.median(xs)


# ----------------------------------------------------------------------------- threads
def numpy_blas_thread_setter():
    """NumPy's bundled OpenBLAS has its own thread pool; find its set_num_threads, as
    threadpoolctl would (None if this NumPy build does not expose one)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {ln.split()[-1] for ln in f if "openblas" in ln.lower() and "/" in ln}
    except OSError:
        return None
    for path in sorted(p for p in paths if "numpy" in p):
        lib = ctypes.CDLL(path)
        for sym in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_",
                    "openblas_set_num_threads"):
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn.argtypes, fn.restype = [ctypes.c_int], None
                return fn
    return None


def set_threads(n, np_setter):
    kindle.set_num_threads(n)
    torch.set_num_threads(n)
    if np_setter:
        np_setter(n)
    assert kindle.get_num_threads() == n and torch.get_num_threads() == n


# ----------------------------------------------------------------------------- output
def fmt_time(s):
    if s is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}" if s / scale < 100 else f"{s / scale:.0f} {unit}"
    return f"{s * 1e9:.3g} ns"


def fmt_rate(wl, s):
    return f"{wl.work / s / 1e9:.1f}" if (wl.unit and s) else "-"


COLUMNS = ("thr", "workload", "kindle", "torch", "numpy", "k/t", "kindle rate", "torch rate",
           "numpy rate", "unit", "spread", "target")


def row_cells(threads, wl, name, labels, samples, reps):
    med = {lib: (statistics.median(samples[lb]) if lb else None) for lib, lb in zip(LIBS, labels)}
    ratio = med["kindle"] / med["torch"]
    target = "-"
    if wl.target is not None:
        target = f"<={wl.target:.2f} " + ("ok" if ratio <= wl.target else "MISS")
    worst = max(spread(samples[lb]) for lb in labels if lb)
    return (str(threads), name, *(fmt_time(med[lib]) for lib in LIBS), f"{ratio:.2f}",
            *(fmt_rate(wl, med[lib]) for lib in LIBS), wl.unit or "-",
            f"{100 * worst:.0f}% n={reps}", target)


def header_lines(args, cfg, np_setter):
    so = getattr(kindle._C, "__file__", kindle.__file__)
    built = datetime.datetime.fromtimestamp(os.path.getmtime(so)).isoformat(timespec="seconds")
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return [
        f"command: {shlex.join(getattr(sys, 'orig_argv', [sys.executable] + sys.argv))}",
        f"date: {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"kindle {kindle.__version__} ({so}, built {built}); torch {torch.__version__}; "
        f"numpy {np.__version__}; python {platform.python_version()}",
        f"cpu: {cpu}, {os.cpu_count()} logical cores; OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, "
        f"OPENBLAS_THREAD_TIMEOUT={os.environ.get('OPENBLAS_THREAD_TIMEOUT')}; "
        f"numpy BLAS threads {'follow --threads' if np_setter else 'NOT controlled'}",
        f"mode: {'quick (sizes and repetitions too small for real figures)' if args.quick else 'full'}; "
        f"reps per workload {args.reps or f'{cfg.min_reps}..{cfg.max_reps}'}, "
        f"budget {cfg.budget_s:g} s, sample >= {cfg.min_sample_s * 1e3:g} ms",
        "times: median per call; k/t = kindle/torch (below 1: kindle faster); spread = largest "
        "IQR/median in the row, n = repetitions; rates from the medians. Compare ratios within "
        "one run only.",
    ]


LEFT = (1, 9, 10, 11)  # left-aligned columns of COLUMNS (text); the others are numbers


class Table:
    def __init__(self, widths, left=LEFT):
        self.widths = widths
        self.left = left

    def line(self, cells):
        out = []
        for i, (c, w) in enumerate(zip(cells, self.widths)):
            out.append(c.ljust(w) if i in self.left else c.rjust(w))
        return "  ".join(out).rstrip()


def write_markdown(path, header, rows, title="Core benchmark: Kindle vs PyTorch",
                   columns=COLUMNS, left=LEFT):
    with open(path, "w") as f:
        f.write(f"## {title}\n\n")
        for ln in header:
            f.write(f"- {ln.replace('|', '/')}\n")
        f.write("\n| " + " | ".join(columns) + " |\n")
        f.write("|" + "|".join("---" if i in left else "---:" for i in range(len(columns))) + "|\n")
        for r in rows:
            f.write("| " + " | ".join(c.replace("|", "/") for c in r) + " |\n")


# ----------------------------------------------------------------------------- main
def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, few repetitions (checks the script)")
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

    np_setter = numpy_blas_thread_setter()
    header = header_lines(args, cfg, np_setter)
    print("\n".join(header), flush=True)
    names = [r[0] for wl in workloads for r in wl.rows]
    widths = [3, max(map(len, names)), 9, 9, 9, 5, 11, 10, 10, 7, 11, 11]
    table = Table(widths)
    print()
    print(table.line(COLUMNS))
    print(table.line(["-" * w for w in widths]), flush=True)

    rows = []
    for n in threads:
        set_threads(n, np_setter)
        for wl in workloads:
            samples = measure(wl, cfg, args.reps)
            reps = len(next(iter(samples.values())))
            for name, *labels in wl.rows:
                cells = row_cells(n, wl, name, labels, samples, reps)
                rows.append(cells)
                print(table.line(cells), flush=True)
    hits, misses = kindle.cpu_cache_stats()[1:]
    print(f"\nkindle CPU cache over the run: {hits} hits, {misses} misses")
    if args.markdown:
        write_markdown(args.markdown, header, rows)
        print(f"markdown table written to {args.markdown}")


if __name__ == "__main__":
    main()
