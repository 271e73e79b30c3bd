#!/usr/bin/env python3
"""Model-zoo benchmark: whole models, Kindle against PyTorch eager and torch.compile, in one process.

    python benchmarks/bench_models.py                     # full run: 1 and 2 threads, batch 1 and 8
    python benchmarks/bench_models.py --quick             # a couple of minutes; checks the script, not speed
    python benchmarks/bench_models.py --threads 1 --batch 1 --models resnet18 mlp --modes infer \\
        --rounds 9 --markdown out.md

The models (benchmarks/models/, one file per family) are written the way torchvision and the
PyTorch examples write them: ResNet-18/50, MobileNet-v2, AlexNet, VGG-11-BN, SqueezeNet 1.1,
DenseNet-121, a tiny ViT, the word-language-model LSTM and Transformer, a nanoGPT block and an
MLP. Each file defines its classes against a library module passed in, so the same source builds
the Kindle model and the PyTorch model. The PyTorch model is built under a fixed seed, its batch
norm running statistics are set from one training-mode pass over random images (so that eval
mode normalises with non-trivial statistics), and its state_dict is copied through NumPy into
the Kindle model; every workload starts again from that snapshot, on both sides.

Workloads, per model, batch (1 and 8) and thread count (kindle.set_num_threads and
torch.set_num_threads, both):
  infer  eval mode, under no_grad on both sides: one forward call.
  train  train mode: one SGD step (momentum 0.9): zero_grad, forward, cross-entropy loss,
         backward, step.
Image models run at 224x224, except batch 8 of ResNet-18, ResNet-50, VGG-11-BN and DenseNet-121,
which run at 112x112 (a 2-core machine); the "input" column gives the size of one sample. The
language models take (seq, batch) tokens (seq 35, vocab 10000); the GPT block takes (batch, 128,
768) activations and its training loss is a cross-entropy over its 768 outputs per position.

Before timing, each workload runs once per library on the same inputs and weights, and the
"check" column gives the largest relative difference max|kindle - torch| / max|torch|: over the
output for infer (tolerance 1e-3); for train, over the loss and every parameter's gradient, with
dropout switched off for this one step on both sides (its random masks differ between libraries)
and batch norm in training mode (tolerance 1e-2). A gradient whose largest value is below 1e-3 of
the largest gradient in the model (a bias in front of a batch norm, whose true gradient is zero)
is compared against that 1e-3 floor instead of its own scale.

A training step's float32 gradients are not a continuous function of the rounding errors: where
a pre-activation lies within rounding of zero, one library's ReLU passes the gradient and the
other's blocks it, and a deep network amplifies that (as it amplifies rounding through batch
norm over a few values per channel at batch 1). ResNet-18 at batch 1 shows it: one of the 25088
values entering layer4.1's first ReLU is +8e-7 in float64, and -5e-7 (still in float64) when the
block's input is Kindle's float32 activation instead, which moves layer4.1.conv1.weight.grad by
22%; torch's float32 happens to land on the same side as float64. So when a training row misses
the tolerance, the same step runs again in float64 on both sides from the same weights and
inputs, and the row passes if Kindle and torch agree there to 1e-6 (the cell reads "<float32
diff> f64 <float64 diff> ok"; a note above the row gives each library's own float32-vs-float64
error). An inference output is continuous in the rounding errors, so there a float32 miss stays
BAD (the float64 run still says whether the formula or the precision is at fault).

Timing: after warm-up calls (not timed), the variants alternate within each round and the order
reverses from one round to the next (A B C, C B A, A B C, ...), so slow drift of the machine hits
all of them; a sample is one call, or several for a call shorter than the minimum sample time.
The table reports the median over the rounds, the ratio kindle/torch of the medians (below 1:
Kindle is faster) and the spread (the largest IQR/median of the row; with 3 rounds, the range).

torch.compile (Inductor, default mode, dynamic=False) is timed for the inference rows, in the
"compiled" column with "k/c" = kindle/compiled. Inductor's CPU kernels are specialised to the
thread count at compile time, so the model is compiled afresh (torch._dynamo.reset()) for every
batch and thread count; compilation and its warm-up calls are not timed. A subprocess probe
first checks that Inductor works on the machine (a C++ compiler, ...); if it does not, or a
model's compilation fails or runs past --compile-timeout, the column says n/a and the reason is
printed. --quick leaves compilation off unless --compile is given. With compilation on, the
inference rows also time kindle.compile(model) ("k.compiled", and "kc/c" = kindle.compile /
torch.compile): the eval-mode graph traced once with convolution + batch norm + clamping
activation chains fused (python/kindle/_fusion.py); its output is checked against torch's.

A model or workload that fails on either library is reported as "error: <message>" (the
traceback goes to stderr) and the run continues.

On a 2-core VM, --threads 1 --batch 1 --rounds 3 takes about 4 minutes with a cold Inductor cache
(1.5 minutes once Inductor's on-disk cache holds the graphs); the full run (batch 8, 2 threads,
9 rounds, 48 compilations) takes several times longer.

Compare ratios measured side by side in one run, never absolute times from different runs. On a
2-core VM the 2-thread figures move from run to run; treat single figures as +-10%.
"""
import os

# Kindle and PyTorch each bring an OpenMP pool; idle threads that spin would steal the cores
# from the other library's calls. PASSIVE makes them sleep. Must be set before the imports.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import gc  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_core  # noqa: E402
from bench_core import Table, fmt_time, set_threads, spread, write_markdown  # noqa: E402
from models import BY_NAME, SPECS  # noqa: E402

kindle, torch = bench_core.kindle, bench_core.torch

LIBS = {"kindle": kindle, "torch": torch}
INFER_TOL = 1e-3
TRAIN_TOL = 1e-2
GRAD_FLOOR = 1e-3  # relative to the model's largest gradient; see the docstring
F64_TOL = 1e-6     # the float64 cross-check, run when float32 differs by more than the above


# ----------------------------------------------------------------------------- configuration
@dataclass
class Config:
    rounds: int          # timed samples per variant
    warmup: int          # untimed calls per variant before the first sample
    min_sample_s: float  # a sample repeats a fast call until it lasts this long
    compile_warmup: int  # untimed calls of the compiled model (the first one compiles)


FULL = Config(rounds=9, warmup=2, min_sample_s=0.02, compile_warmup=3)
QUICK = Config(rounds=1, warmup=1, min_sample_s=0.0, compile_warmup=2)


# ----------------------------------------------------------------------------- helpers
def first(out):
    """A model's output tensor (the word-LM LSTM returns (output, hidden), as the example does)."""
    return out[0] if isinstance(out, tuple) else out


def to_numpy(t):
    """A NumPy view of the tensor, in its own precision (the view keeps the tensor alive; the
    checks never modify a result in place: gradients are set to None, not zeroed)."""
    return t.detach().numpy()


def short_error(exc, limit=160):
    msg = " ".join(f"{type(exc).__name__}: {exc}".split())
    return msg if len(msg) <= limit else msg[:limit - 3] + "..."


class SideError(Exception):
    """One library raised while running a workload: `side` says which, `exc` what."""

    def __init__(self, side, exc):
        super().__init__(f"{side}: {exc}")
        self.side, self.exc = side, exc


class CompileTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    """Raise CompileTimeout in the main thread after `seconds` (SIGALRM)."""
    def handler(signum, frame):
        raise CompileTimeout(f"torch.compile took longer than {seconds} s")
    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(int(seconds))
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


PROBE = """
import torch
f = torch.compile(lambda x: torch.nn.functional.relu(x @ x.t()).sum(1) + 1, dynamic=False)
x = torch.randn(16, 16)
assert torch.allclose(f(x), torch.relu(x @ x.t()).sum(1) + 1, rtol=1e-4, atol=1e-4)
"""


def probe_compile(timeout_s):
    """Whether Inductor works on this machine: a tiny compile in a subprocess (a hang or a crash
    there cannot take the benchmark with it). Returns None or the reason it does not."""
    try:
        r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"probe compile took longer than {timeout_s} s"
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        return "probe compile failed: " + (lines[-1] if lines else f"exit code {r.returncode}")
    return None


# ----------------------------------------------------------------------------- models
def calibrate_batchnorm(model, spec, size):
    """Running statistics of every BatchNorm from one training-mode pass (momentum None: a
    cumulative average, so one batch sets them exactly); torch side only, before the copy."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    saved = [m.momentum for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    x, _ = spec.inputs(np.random.default_rng(1), 4, size if spec.size_dependent else min(size, 96))
    model.train()
    with torch.no_grad():
        model(torch.from_numpy(x))
    for m, mom in zip(bns, saved):
        m.momentum = mom
    model.eval()


def load_snapshot(lib, model, state):
    model.load_state_dict({k: lib.from_numpy(v) for k, v in state.items()})  # copies into the model


class Pair:
    """The PyTorch and Kindle models of one spec at one build size, with identical weights."""

    def __init__(self, spec, size):
        try:
            torch.manual_seed(0)
            self.models = {"torch": spec.build(torch, size)}
            calibrate_batchnorm(self.models["torch"], spec, size)
            self.state = {k: v.detach().numpy().copy() for k, v in self.models["torch"].state_dict().items()}
        except Exception as e:  # noqa: BLE001
            raise SideError("torch", e) from e
        try:
            kindle.manual_seed(0)
            km = spec.build(kindle, size)
            kkeys, tkeys = set(km.state_dict()), set(self.state)
            if kkeys != tkeys:
                raise RuntimeError(f"state_dict keys differ: only kindle {sorted(kkeys - tkeys)[:4]}, "
                                   f"only torch {sorted(tkeys - kkeys)[:4]}")
            self.models["kindle"] = km
            load_snapshot(kindle, km, self.state)
        except Exception as e:  # noqa: BLE001
            raise SideError("kindle", e) from e

    def reset(self):
        for name, model in self.models.items():
            load_snapshot(LIBS[name], model, self.state)


# ----------------------------------------------------------------------------- timing
def timed(fns, cfg, rounds):
    """Samples (seconds per call) of each callable in `fns` (label -> fn), interleaved A B C,
    C B A, ... after cfg.warmup untimed calls each."""
    labels = list(fns)
    number = {}
    for label in labels:
        for _ in range(cfg.warmup):
            fns[label]()
        number[label] = 1
        if cfg.min_sample_s:  # calibrate: calls per sample
            t0 = time.perf_counter()
            fns[label]()
            dt = time.perf_counter() - t0
            number[label] = max(1, math.ceil(cfg.min_sample_s / max(dt, 1e-9)))
    samples = {label: [] for label in labels}
    gc.collect()
    for r in range(rounds):
        for label in (labels if r % 2 == 0 else labels[::-1]):
            fn, n = fns[label], number[label]
            gc.disable()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            dt = time.perf_counter() - t0
            gc.enable()
            samples[label].append(dt / n)
    return samples


# ----------------------------------------------------------------------------- checks
def cast(t, lib, dtype_name):
    """A floating input in the check's precision (token indices stay int64)."""
    return t.to(getattr(lib, dtype_name)) if t.is_floating_point() else t


@contextlib.contextmanager
def precision(pair, dtype_name):
    """The pair's models in `dtype_name` for the duration; afterwards float32 and the snapshot."""
    if dtype_name == "float32":
        yield
        return
    for name, model in pair.models.items():
        model.to(getattr(LIBS[name], dtype_name))
    try:
        yield
    finally:
        for name, model in pair.models.items():
            model.to(LIBS[name].float32)
        pair.reset()


def infer_outputs(pair, xs, dtype_name):
    """{lib: {"output": array}}: one eval-mode forward under no_grad per library."""
    outs = {}
    for name in ("torch", "kindle"):
        lib, model = LIBS[name], pair.models[name]
        model.eval()
        try:
            with lib.no_grad():
                outs[name] = {"output": to_numpy(first(model(cast(xs[name], lib, dtype_name))))}
        except Exception as e:  # noqa: BLE001
            raise SideError(name, e) from e
    return outs


def set_check_mode(model, lib):
    """Training mode without randomness, for the check step: everything in eval mode (dropout,
    the LSTM's inter-layer dropout) except batch norm, which uses batch statistics."""
    model.eval()
    for m in model.modules():
        if isinstance(m, lib.nn.modules.batchnorm._BatchNorm):
            m.train()


def train_grads(pair, xs, ys, dtype_name):
    """{lib: {"loss": array, parameter name: gradient}}: forward, cross-entropy, backward per
    library (dropout off, batch norm in training mode, no optimizer step)."""
    outs = {}
    for name in ("torch", "kindle"):
        lib, model = LIBS[name], pair.models[name]
        set_check_mode(model, lib)
        try:
            for p in model.parameters():
                p.grad = None
            out = first(model(cast(xs[name], lib, dtype_name)))
            loss = lib.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), ys[name])
            loss.backward()
            got = {"loss": to_numpy(loss)}
            got.update((n, to_numpy(p.grad)) for n, p in model.named_parameters() if p.grad is not None)
            outs[name] = got
        except Exception as e:  # noqa: BLE001
            raise SideError(name, e) from e
        finally:
            for p in model.parameters():
                p.grad = None
            model.train()
    return outs


def compare(got, ref, grad_floor):
    """Largest max|got - ref| / max|ref| over the arrays of `ref` and where it is. With a
    grad_floor, a gradient's scale is at least grad_floor * the largest gradient (see the
    docstring). An array on one side only counts as inf."""
    top = max((max(float(v.max(initial=0.0)), -float(v.min(initial=0.0))) for n, v in ref.items() if n != "loss"),
              default=0.0)
    worst, where = 0.0, "-"
    for n, r in ref.items():
        if n not in got:
            continue
        g = got[n]
        if g.shape != r.shape:
            d = math.inf
        else:
            scale = max(float(r.max(initial=0.0)), -float(r.min(initial=0.0)))
            if n != "loss":
                scale = max(scale, grad_floor * top)
            e = np.subtract(g, r)
            d = max(float(e.max(initial=0.0)), -float(e.min(initial=0.0))) / (scale or 1.0)
        if d > worst:
            worst, where = d, n
    missing = sorted(set(got) ^ set(ref))
    if missing:
        worst, where = math.inf, f"only on one side: {missing[:4]}"
    return worst, where


def check(pair, run, tol, grad_floor, label, f64_decides):
    """Compare Kindle with torch on `run(dtype_name) -> {lib: {name: array}}` in float32. Above
    `tol`, run both in float64 too (same weights and inputs) and print both libraries' own
    float32-vs-float64 errors. With `f64_decides` (training: gradients jump at ReLU kinks, see the
    docstring) the row passes when the float64 results agree to F64_TOL; without it (inference:
    the output is continuous in every rounding error) a float32 miss is BAD either way.
    Returns the check cell and the float32 results."""
    r32 = run("float32")
    d32, where = compare(r32["kindle"], r32["torch"], grad_floor)
    if d32 <= tol:
        return f"{d32:.1e} ok", r32
    try:
        with precision(pair, "float64"):
            r64 = run("float64")
    except SideError as e:
        print(f"WARNING: {label}: float32 differs by {d32:.1e} (at {where}); the float64 cross-check "
              f"failed on {e.side}: {short_error(e.exc)}", flush=True)
        return f"{d32:.1e} BAD", r32
    d64, where64 = compare(r64["kindle"], r64["torch"], grad_floor)
    own_t, _ = compare(r32["torch"], r64["torch"], grad_floor)
    own_k, _ = compare(r32["kindle"], r64["torch"], grad_floor)
    ok = d64 <= F64_TOL and f64_decides
    print(f"note: {label}: kindle and torch differ by {d32:.1e} in float32 (at {where}); against "
          f"float64 torch, kindle's float32 is off by {own_k:.1e} and torch's by {own_t:.1e}; in float64 "
          f"kindle and torch differ by {d64:.1e}" + ("" if d64 <= F64_TOL else f" (at {where64}): MISMATCH"),
          flush=True)
    return f"{d32:.1e} f64 {d64:.0e} " + ("ok" if ok else "BAD"), r32


# ----------------------------------------------------------------------------- workloads
@dataclass
class Result:
    times: dict = None     # label -> median seconds
    spread: float = 0.0
    rounds: int = 0
    check: str = "-"
    compiled: str = "-"    # "" when timed, else "-" or "n/a"
    error: str = None


def inputs_for(spec, batch, size):
    x, y = spec.inputs(np.random.default_rng(0), batch, size)
    return ({name: lib.from_numpy(x).clone() for name, lib in LIBS.items()},
            {name: lib.from_numpy(y).clone() for name, lib in LIBS.items()})


def run_infer(pair, spec, batch, size, cfg, args, compile_state):
    res = Result()
    xs, _ = inputs_for(spec, batch, size)
    label = f"{spec.name} infer batch {batch}"
    try:
        res.check, r32 = check(pair, lambda dt: infer_outputs(pair, xs, dt), INFER_TOL, 0.0, label, False)
    except SideError as e:
        return report_error(res, e.side, e.exc)
    models = pair.models
    for m in models.values():
        m.eval()
    fns = {name: (lambda m=models[name], x=xs[name]: first(m(x))) for name in ("kindle", "torch")}
    with torch.no_grad(), kindle.no_grad():
        if compile_state["reason"] is None:
            res.compiled = "n/a"
            try:
                torch._dynamo.reset()
                cm = torch.compile(models["torch"], dynamic=False)
                t0 = time.perf_counter()
                with time_limit(args.compile_timeout):
                    for _ in range(cfg.compile_warmup):
                        out_c = first(cm(xs["torch"]))
                diff_c, _ = compare({"output": to_numpy(out_c)}, r32["torch"], 0.0)
                note = f"compiled in {time.perf_counter() - t0:.0f} s"
                if diff_c > INFER_TOL:
                    note += f"; WARNING: differs from eager torch by {diff_c:.1e}"
                print(f"torch.compile {label} ({torch.get_num_threads()} threads): {note}", flush=True)
                fns["compiled"] = lambda m=cm, x=xs["torch"]: first(m(x))
                res.compiled = ""
            except Exception as e:  # noqa: BLE001
                print(f"torch.compile n/a for {label}: {short_error(e)}", flush=True)
                compile_state["failures"] += 1
        if compile_state["want"]:
            kc = kindle.compile(models["kindle"])
            out_k = first(kc(xs["kindle"]))
            diff_k, _ = compare({"output": to_numpy(out_k)}, r32["torch"], 0.0)
            if diff_k > INFER_TOL:
                return report_error(res, "kindle.compile", AssertionError(
                    f"kindle.compile's output differs from torch's by {diff_k:.1e}"))
            fns["kindle_compiled"] = lambda m=kc, x=xs["kindle"]: first(m(x))
        try:
            samples = timed(fns, cfg, args.rounds or cfg.rounds)
        except Exception as e:  # noqa: BLE001
            return report_error(res, "timing", e)
    return finish(res, samples)


def train_step(lib, model, opt, x, y):
    opt.zero_grad()
    out = first(model(x))
    loss = lib.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y)
    loss.backward()
    opt.step()
    return loss


def run_train(pair, spec, batch, size, cfg, args):
    res = Result()
    xs, ys = inputs_for(spec, batch, size)
    label = f"{spec.name} train batch {batch}"
    try:
        res.check, _ = check(pair, lambda dt: train_grads(pair, xs, ys, dt), TRAIN_TOL, GRAD_FLOOR, label, True)
    except SideError as e:
        return report_error(res, e.side, e.exc)
    models = pair.models
    for m in models.values():
        m.train()
    opts = {name: LIBS[name].optim.SGD(models[name].parameters(), lr=0.01, momentum=0.9)
            for name in ("kindle", "torch")}
    fns = {name: (lambda lib=LIBS[name], m=models[name], o=opts[name], x=xs[name], y=ys[name]:
                  train_step(lib, m, o, x, y))
           for name in ("kindle", "torch")}
    try:
        samples = timed(fns, cfg, args.rounds or cfg.rounds)
        last = {name: float(fn().detach()) for name, fn in fns.items()}
    except Exception as e:  # noqa: BLE001
        return report_error(res, "timing", e)
    if not all(math.isfinite(v) for v in last.values()):
        print(f"WARNING: {label}: loss not finite after the timed steps: {last}", flush=True)
    return finish(res, samples)


def report_error(res, side, exc):
    res.error = f"{side}: {short_error(exc)}"
    print(f"ERROR ({side}): {short_error(exc, 400)}", flush=True)
    traceback.print_exception(exc, file=sys.stderr)
    return res


def finish(res, samples):
    res.times = {label: statistics.median(s) for label, s in samples.items()}
    res.spread = max(spread(s) for s in samples.values())
    res.rounds = len(samples["kindle"])
    return res


# ----------------------------------------------------------------------------- output
COLUMNS = ("thr", "model", "mode", "batch", "input", "kindle", "torch", "k/t", "compiled", "k/c",
           "k.compiled", "kc/c", "spread", "check")
LEFT = (1, 2, 4, 13)
WIDTHS = [3, 14, 5, 5, 11, 9, 9, 5, 9, 5, 10, 5, 10, 20]


def row_cells(threads, spec, mode, batch, size, res):
    head = [str(threads), spec.name, mode, str(batch), spec.describe(size)]
    if res.error:
        return head + [f"error: {res.error}"] + ["-"] * 8
    t = res.times
    comp = fmt_time(t["compiled"]) if "compiled" in t else res.compiled
    kc = f"{t['kindle'] / t['compiled']:.2f}" if "compiled" in t else res.compiled
    kcomp = fmt_time(t["kindle_compiled"]) if "kindle_compiled" in t else "-"
    kcc = f"{t['kindle_compiled'] / t['compiled']:.2f}" if "kindle_compiled" in t and "compiled" in t else "-"
    return head + [fmt_time(t["kindle"]), fmt_time(t["torch"]), f"{t['kindle'] / t['torch']:.2f}", comp, kc,
                   kcomp, kcc, f"{100 * res.spread:.0f}% n={res.rounds}", res.check]


def header_lines(args, cfg, np_setter, compile_note):
    # command, date, versions, cpu and thread settings: as the other benchmarks print them (the
    # lines after those describe bench_core's own configuration, which these arguments stand in for)
    common = bench_core.header_lines(argparse.Namespace(quick=args.quick, reps=None), bench_core.QUICK, np_setter)
    return common[:4] + [
        f"mode: {'quick (small inputs, few rounds: checks the script, not speed)' if args.quick else 'full'}; "
        f"rounds {args.rounds or cfg.rounds}, warm-up {cfg.warmup} calls, sample >= {cfg.min_sample_s * 1e3:g} ms",
        f"torch.compile: {compile_note}",
        "times: median per call (infer: eval-mode forward under no_grad; train: one SGD step = "
        "zero_grad, forward, cross-entropy, backward, step); k/t = kindle/torch eager, k/c = "
        "kindle eager/torch.compile, k.compiled = kindle.compile (inference fusions), kc/c = "
        "kindle.compile/torch.compile (below 1: kindle faster); spread = largest IQR/median in the row, "
        "n = rounds; check = largest max abs(kindle - torch) / max abs(torch) (infer: output, tolerance 1e-3; "
        "train: loss and gradients, 1e-2, and above it the same step in float64 decides, tolerance "
        "1e-6, shown as 'f64'). Input: one sample. Compare ratios within one run only.",
    ]


# ----------------------------------------------------------------------------- main
def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts (default 1 2)")
    p.add_argument("--batch", type=int, nargs="+", default=[1, 8], help="batch sizes (default 1 8)")
    p.add_argument("--models", nargs="+", default=None, metavar="NAME",
                   help="subset of: " + " ".join(s.name for s in SPECS))
    p.add_argument("--modes", nargs="+", default=["infer", "train"], choices=["infer", "train"])
    p.add_argument("--rounds", type=int, help=f"timed rounds per workload (default {FULL.rounds}; "
                                              f"--quick {QUICK.rounds})")
    p.add_argument("--quick", action="store_true",
                   help="small inputs (64x64 images, short sequences) and few rounds: checks the script")
    p.add_argument("--compile", dest="compile", action="store_true", default=None,
                   help="time torch.compile on inference rows (default: on, off with --quick)")
    p.add_argument("--no-compile", dest="compile", action="store_false")
    p.add_argument("--compile-timeout", type=int, default=600,
                   help="seconds allowed for one model's compilation and warm-up (default 600)")
    p.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown to FILE")
    args = p.parse_args(argv)

    cfg = QUICK if args.quick else FULL
    names = args.models or [s.name for s in SPECS]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        p.error(f"unknown model(s) {unknown}; choose from {[s.name for s in SPECS]}")
    specs = [BY_NAME[n] for n in names]
    want_compile = (not args.quick) if args.compile is None else args.compile

    compile_state = {"reason": "off (--no-compile, or --quick without --compile)", "failures": 0,
                     "want": want_compile}
    if want_compile and "infer" in args.modes:
        print("probing torch.compile (Inductor) in a subprocess ...", flush=True)
        compile_state["reason"] = probe_compile(min(args.compile_timeout, 600))
    if compile_state["reason"] is None:
        # Dynamo explains every graph break (torch's TransformerEncoder checks its mask with a
        # data-dependent branch) at warning level; the graph breaks are torch's, not ours.
        torch._logging.set_logs(dynamo=logging.ERROR)
    compile_note = ("Inductor, default mode, dynamic=False, compiled per batch and thread count "
                    "(not timed)" if compile_state["reason"] is None else f"n/a: {compile_state['reason']}")

    np_setter = bench_core.numpy_blas_thread_setter()
    header = header_lines(args, cfg, np_setter, compile_note)
    print("\n".join(header), flush=True)
    table = Table(WIDTHS, left=LEFT)
    print()
    print(table.line(COLUMNS))
    print(table.line(["-" * w for w in WIDTHS]), flush=True)

    rows = []
    t_start = time.perf_counter()
    for spec in specs:
        pairs = {}
        for batch in args.batch:
            size = spec.size_for(batch, args.quick)
            key = size if spec.size_dependent else None
            if key not in pairs:
                try:
                    pairs[key] = Pair(spec, size)
                except SideError as e:
                    pairs[key] = report_error(Result(), f"{e.side} (building the model)", e.exc)
            pair = pairs[key]
            for n in args.threads:
                set_threads(n, np_setter)
                for mode in args.modes:
                    if isinstance(pair, Result):  # the build failed
                        res = pair
                    else:
                        pair.reset()
                        gc.collect()
                        if mode == "infer":
                            res = run_infer(pair, spec, batch, size, cfg, args, compile_state)
                        else:
                            res = run_train(pair, spec, batch, size, cfg, args)
                    cells = row_cells(n, spec, mode, batch, size, res)
                    rows.append(cells)
                    print(table.line(cells), flush=True)
        pair = pairs = None  # free this model (and its compiled graphs) before the next
        torch._dynamo.reset()
        gc.collect()
    print(f"\n{len(rows)} rows in {time.perf_counter() - t_start:.0f} s", flush=True)
    if compile_state["failures"]:
        print(f"torch.compile failed on {compile_state['failures']} workload(s): n/a in those rows (reasons above)")
    if args.markdown:
        write_markdown(args.markdown, header, rows, title="Model zoo: Kindle vs PyTorch eager and torch.compile",
                       columns=COLUMNS, left=LEFT)
        print(f"markdown table written to {args.markdown}")


if __name__ == "__main__":
    main()
