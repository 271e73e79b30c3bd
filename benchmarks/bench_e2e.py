#!/usr/bin/env python3
"""End-to-end benchmark: whole training steps and batch-1 inference, Kindle against PyTorch.

    python benchmarks/bench_e2e.py                          # full run (about 10 minutes)
    python benchmarks/bench_e2e.py --quick                  # a minute; checks the script, not speed
    python benchmarks/bench_e2e.py --workloads mlp,gpt --steps 50 --threads 1 --profile

Each workload's model is written once, as a function of the framework module (torch or
kindle), so both sides run the same code. The torch model is built first under a fixed seed and
its state_dict is copied (through NumPy) into the Kindle model; the data are NumPy arrays drawn
under a fixed seed and converted once per framework; the optimizer and its hyperparameters are
the same. A training step is `zero_grad, forward, loss, backward, step`, timed with
perf_counter around the whole step; the steps alternate between the frameworks (K T T K K T
...), so slow drift of the machine hits both. After the warm-up steps, the table reports the
median step time, samples per second and the ratio kindle/torch (below 1: Kindle is faster).

Both models see the same batches in the same order from the same weights, so their losses must
agree. In float32 only the first step's losses agree closely: from there rounding differences
grow through training (Adam turns near-zero gradient noise into full-size steps; BatchNorm and
unstable steps amplify them too), so after hundreds of steps the two float32 losses differ by
percents while both frameworks are right. The table prints the first and last float32 losses
from both and checks the first (1e-4); the verdict on the whole stack is a float64 run of the
same workload from the same weights, where every step's loss must agree to 1e-9 (it agrees to
about 1e-15 when nothing is wrong); a failure is flagged MISMATCH.

Peak resident memory is measured in a fresh subprocess per framework and workload that imports
only that framework, builds the model with its own default initialisation (values do not change
memory), runs a few steps and reads VmHWM from /proc/self/status; "delta" is the peak minus the
resident size after the import and the data (the framework's own libraries are in the peak).

Targets (issue 6): step time at most torch's (ratio <= 1) on every training workload, at most
two thirds of torch's for batch-1 inference (per-op overhead dominates there), and peak memory at
most torch's. Each row says met or MISSED. --profile prints, for every workload where Kindle is
slower, the top of a cProfile of Kindle's steps sorted by own time.

Compare ratios measured side by side in one run, never absolute times from different runs.
"""
import os

# Kindle and PyTorch each bring an OpenMP pool; idle threads that spin would steal the cores
# from the other framework's steps. PASSIVE makes them sleep. Must be set before the imports.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import pstats  # noqa: E402
import shlex  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

# The frameworks are imported on demand: a memory subprocess must hold only its own.
FRAMEWORKS = ("kindle", "torch")


# ----------------------------------------------------------------------------- models
def make_mlp(lib, s):
    nn = lib.nn
    return nn.Sequential(nn.Linear(s["features"], s["hidden"]), nn.ReLU(),
                         nn.Linear(s["hidden"], s["hidden"]), nn.ReLU(),
                         nn.Linear(s["hidden"], s["classes"]))


def make_lenet(lib, s):
    nn = lib.nn
    flat = ((s["side"] - 4) // 2 - 4) // 2  # two 5x5 valid convolutions, each pooled by 2
    return nn.Sequential(
        nn.Conv2d(1, s["c1"], 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(s["c1"], s["c2"], 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(s["c2"] * flat * flat, s["f1"]), nn.ReLU(),
        nn.Linear(s["f1"], s["f2"]), nn.ReLU(), nn.Linear(s["f2"], s["classes"]))


def make_resnet(lib, s):
    """ResNet-18 for CIFAR: 3x3 stem, no max-pool, BasicBlocks, global average pool."""
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.shortcut = nn.Identity()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + self.shortcut(x))

    widths, layers = [s["stem"]], []
    for i, (w, n) in enumerate(zip(s["widths"], s["blocks"])):
        for j in range(n):
            layers.append(BasicBlock(widths[-1], w, 2 if i > 0 and j == 0 else 1))
            widths.append(w)
    return nn.Sequential(nn.Conv2d(3, s["stem"], 3, 1, 1, bias=False), nn.BatchNorm2d(s["stem"]),
                         nn.ReLU(inplace=True), *layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(widths[-1], s["classes"]))


def make_lstm_lm(lib, s):
    nn = lib.nn

    class LSTMLanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(s["vocab"], s["embed"])
            self.rnn = nn.LSTM(s["embed"], s["hidden"], s["layers"])
            self.decoder = nn.Linear(s["hidden"], s["vocab"])

        def forward(self, tokens):  # (seq, batch) -> (seq * batch, vocab)
            out, _ = self.rnn(self.encoder(tokens))
            return self.decoder(out).view(-1, s["vocab"])

    return LSTMLanguageModel()


def make_gpt(lib, s):
    """A pre-norm GPT: fused qkv projection, causal scaled_dot_product_attention, 4x GELU MLP."""
    nn, F = lib.nn, lib.nn.functional
    d, heads = s["d_model"], s["heads"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2)
                       for z in self.qkv(self.ln1(x)).split(c, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(s["vocab"], d)
            self.pos = nn.Embedding(s["seq"], d)
            self.blocks = nn.ModuleList(Block() for _ in range(s["layers"]))
            self.ln_f = nn.LayerNorm(d)
            self.head = nn.Linear(d, s["vocab"], bias=False)

        def forward(self, idx):  # (batch, seq) -> (batch * seq, vocab)
            x = self.tok(idx) + self.pos(lib.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x)).view(-1, s["vocab"])

    return GPT()


# ----------------------------------------------------------------------------- data
# NumPy arrays under a fixed seed; labels come from a fixed random "teacher" so the loss can
# fall. Each function returns a list of (input, target) batches; the steps cycle through them.
def data_features(rng, s, n):
    w = rng.standard_normal((s["features"], s["classes"])).astype(np.float32)
    xs = [rng.standard_normal((s["batch"], s["features"])).astype(np.float32) for _ in range(n)]
    return [(x, (x @ w).argmax(1).astype(np.int64)) for x in xs]


def data_images(channels):
    def make(rng, s, n):
        shape = (s["batch"], channels, s["side"], s["side"])
        w = rng.standard_normal((channels * s["side"] ** 2, s["classes"])).astype(np.float32)
        xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]
        return [(x, (x.reshape(len(x), -1) @ w).argmax(1).astype(np.int64)) for x in xs]
    return make


def data_tokens(time_major):
    """Text-like tokens: each token usually follows from the previous one (a fixed random
    successor table), so a language model has something to learn."""
    def make(rng, s, n):
        nxt = rng.integers(0, s["vocab"], s["vocab"])
        out = []
        for _ in range(n):
            seq = np.empty((s["batch"], s["seq"] + 1), np.int64)
            seq[:, 0] = rng.integers(0, s["vocab"], s["batch"])
            for t in range(s["seq"]):
                jump = rng.random(s["batch"]) < 0.2
                seq[:, t + 1] = np.where(jump, rng.integers(0, s["vocab"], s["batch"]), nxt[seq[:, t]])
            x, y = seq[:, :-1], seq[:, 1:]
            if time_major:
                x, y = x.T, y.T
            out.append((np.ascontiguousarray(x), np.ascontiguousarray(y).reshape(-1)))
        return out
    return make


# ----------------------------------------------------------------------------- workloads
@dataclass
class Workload:
    name: str
    title: str
    build: Callable               # (lib, sizes) -> module
    data: Callable                # (rng, sizes, n_batches) -> [(x, y)] NumPy arrays
    full: dict                    # the sizes the issue asks for
    tiny: dict                    # sizes for the smoke test
    optimizer: tuple = None       # (torch.optim class name, kwargs); None: batch-1 inference
    check_steps: int = 100        # steps of the float64 agreement check (full runs)
    budget_s: float = 40.0        # seconds of timed steps (both frameworks) in a full run
    max_steps: int = 400
    needs: tuple = ()             # kindle attributes the workload needs, e.g. ("nn.LSTM",)

    @property
    def inference(self):
        return self.optimizer is None

    @property
    def target(self):
        return 2 / 3 if self.inference else 1.0


MLP = dict(batch=128, features=784, hidden=512, classes=10)
MLP_TINY = dict(batch=8, features=12, hidden=16, classes=5)
LENET = dict(batch=64, side=28, c1=6, c2=16, f1=120, f2=84, classes=10)
LENET_TINY = dict(batch=4, side=16, c1=2, c2=3, f1=8, f2=6, classes=5)

WORKLOADS = {w.name: w for w in [
    Workload("mlp", "MLP 784-512-512-10, batch 128, SGD momentum", make_mlp, data_features,
             MLP, MLP_TINY, ("SGD", dict(lr=0.01, momentum=0.9))),
    Workload("lenet", "LeNet CNN 1x28x28, batch 64, Adam", make_lenet, data_images(1),
             LENET, LENET_TINY, ("Adam", dict(lr=1e-3))),
    Workload("resnet18", "ResNet-18 (CIFAR), batch 32, SGD momentum", make_resnet, data_images(3),
             dict(batch=32, side=32, stem=64, widths=(64, 128, 256, 512), blocks=(2, 2, 2, 2), classes=10),
             dict(batch=4, side=8, stem=4, widths=(4, 8), blocks=(1, 1), classes=3),
             ("SGD", dict(lr=0.01, momentum=0.9, weight_decay=5e-4)), budget_s=60.0, check_steps=4),
    Workload("lstm", "LSTM LM 2x256, seq 35, batch 20, vocab 10k, SGD", make_lstm_lm, data_tokens(True),
             dict(batch=20, seq=35, vocab=10000, embed=256, hidden=256, layers=2),
             dict(batch=3, seq=5, vocab=11, embed=6, hidden=7, layers=2),
             ("SGD", dict(lr=1.0)), check_steps=10, needs=("nn.LSTM",)),
    Workload("gpt", "GPT 4x256, 4 heads, seq 128, batch 16, vocab 256, AdamW", make_gpt, data_tokens(False),
             dict(batch=16, seq=128, vocab=256, d_model=256, heads=4, layers=4),
             dict(batch=2, seq=6, vocab=9, d_model=8, heads=2, layers=2),
             ("AdamW", dict(lr=1e-3, weight_decay=0.1)), budget_s=60.0, check_steps=6),
    Workload("mlp_infer", "MLP inference, batch 1", make_mlp, data_features,
             dict(MLP, batch=1), MLP_TINY, budget_s=12.0, max_steps=4000),
    Workload("lenet_infer", "LeNet inference, batch 1", make_lenet, data_images(1),
             dict(LENET, batch=1), LENET_TINY, budget_s=12.0, max_steps=4000),
]}


def missing_features(lib, wl):
    """The kindle attributes a workload needs that the installed kindle lacks."""
    missing = []
    for path in wl.needs:
        obj = lib
        for part in path.split("."):
            obj = getattr(obj, part, None)
        if obj is None:
            missing.append(f"{lib.__name__}.{path}")
    return missing


# ----------------------------------------------------------------------------- running
# Distinct batches the steps cycle through: enough that the models do not just memorise a few
# batches and drive the loss to ~0, where agreement between the frameworks says little.
N_BATCHES = 16
F32_RTOL = 1e-4   # float32 losses of the first step, inference outputs of every call
F64_RTOL = 1e-9   # float64 losses of every checked step


class Runner:
    """One framework's model, optimizer and batches for one workload."""

    def __init__(self, lib, wl, sizes, batches, state=None, float64=False):
        self.lib, self.wl = lib, wl
        self.model = wl.build(lib, sizes)
        if state is not None:  # the torch model's weights, as NumPy arrays
            self.model.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in state.items()})
        if float64:  # after the copy and before the optimizer: float32 -> float64 is exact
            self.model.double()
            batches = [(x.astype(np.float64) if x.dtype == np.float32 else x, y) for x, y in batches]
        self.batches = [(lib.from_numpy(x), lib.from_numpy(y)) for x, y in batches]
        self.loss_fn = lib.nn.CrossEntropyLoss()
        self.opt = None
        if wl.inference:
            self.model.eval()
        else:
            name, kwargs = wl.optimizer
            self.opt = getattr(lib.optim, name)(self.model.parameters(), **kwargs)
        self.i = 0

    def step(self):
        """One training step (or one no_grad forward for inference); returns the loss or output."""
        x, y = self.batches[self.i % len(self.batches)]
        self.i += 1
        if self.opt is None:
            with self.lib.no_grad():
                return self.model(x)
        self.opt.zero_grad()
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.opt.step()
        return loss


def state_as_numpy(model):
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def make_pair(wl, sizes, torch, kindle, n_batches=N_BATCHES, seed=0, float64=False):
    """Runners for both frameworks: same data, and the weights of a torch model initialised
    under `seed` loaded into both (torch's own init, so the torch side is the reference)."""
    batches = wl.data(np.random.default_rng(seed), sizes, n_batches)
    torch.manual_seed(seed)
    state = state_as_numpy(wl.build(torch, sizes))
    return {lib.__name__: Runner(lib, wl, sizes, batches, state=state, float64=float64)
            for lib in (kindle, torch)}


def value_of(out):
    """The loss as a float, or for inference the output as a NumPy array (untimed)."""
    return out.item() if out.dim() == 0 else out.detach().numpy().copy()


def timed_steps(runners, warmup, steps, budget_s, max_steps, reps_per_sample=1):
    """Alternate the frameworks step by step (the order flips every step). steps=None: as many
    as fit in budget_s, estimated after the warm-up. Returns times (per call) and values."""
    names = list(runners)
    times = {n: [] for n in names}
    values = {n: [] for n in names}

    def one_round(i, record):
        for n in (names if i % 2 == 0 else names[::-1]):
            r = runners[n]
            t0 = time.perf_counter()
            for _ in range(reps_per_sample):
                out = r.step()
            dt = (time.perf_counter() - t0) / reps_per_sample
            values[n].append(value_of(out))
            if record:
                times[n].append(dt)

    for i in range(warmup):
        one_round(i, False)
    if steps is None:
        t0 = time.perf_counter()
        one_round(warmup, True)
        per_round = time.perf_counter() - t0
        steps = int(min(max_steps, max(5, budget_s / max(per_round, 1e-9))))
        steps -= 1
    gc.collect()
    for i in range(steps):
        one_round(warmup + i + 1, True)
    return times, values


def calibrate_reps(runners):
    """Calls per timed sample for fast inference calls, so a sample lasts about a millisecond."""
    r = runners["torch"]
    r.step()
    t0 = time.perf_counter()
    for _ in range(10):
        r.step()
    per_call = (time.perf_counter() - t0) / 10
    r.i = 0  # both frameworks then see the same batches in the same order
    return max(1, min(50, int(1e-3 / max(per_call, 1e-9))))


def max_rel_diff(values):
    """Largest relative difference between the frameworks over all steps (losses or outputs)."""
    diffs = [float(np.max(np.abs(np.asarray(k) - t)) / max(float(np.max(np.abs(t))), 1e-30))
             for k, t in zip(values["kindle"], values["torch"])]
    return max(diffs) if all(np.isfinite(diffs)) else float("inf")


def compare_float32(wl, values):
    """(text, ok) for the timed float32 run. The first step differs only by rounding; later
    float32 losses drift apart as rounding differences grow through training (Adam, BatchNorm
    and unstable steps amplify them), so they are printed, and float64_check is the verdict."""
    k, t = values["kindle"], values["torch"]
    if wl.inference:  # no training: every call must agree
        diff = max_rel_diff(values)
        return f"output rel diff {diff:.1e}", diff <= F32_RTOL
    text = f"{k[0]:.4f}/{t[0]:.4f} -> {k[-1]:.4f}/{t[-1]:.4f}"
    ok = max_rel_diff({"kindle": k[:1], "torch": t[:1]}) <= F32_RTOL and np.isfinite(k[-1])
    return text, bool(ok)


def float64_check(wl, torch, kindle, steps, sizes=None):
    """(text, ok): the same workload in float64 for `steps` steps; there rounding stays far
    below the tolerance, so every step's loss (or output) must agree to F64_RTOL."""
    runners = make_pair(wl, sizes or wl.full, torch, kindle, float64=True)
    _, values = timed_steps(runners, 0, steps, 0, steps)
    diff = max_rel_diff(values)
    return f"{steps} steps: {diff:.0e}", diff <= F64_RTOL


# ----------------------------------------------------------------------------- memory
def read_status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def memory_child(wl_name, lib_name, threads, steps):
    """Run in a fresh process: one framework, one workload; print the peak RSS as JSON."""
    lib = importlib.import_module(lib_name)
    importlib.import_module(lib_name + ".nn")
    importlib.import_module(lib_name + ".optim")
    lib.set_num_threads(threads)
    wl = WORKLOADS[wl_name]
    batches = wl.data(np.random.default_rng(0), wl.full, N_BATCHES)
    lib.manual_seed(0)
    base = read_status_kb("VmRSS")
    r = Runner(lib, wl, wl.full, batches)
    for _ in range(steps):
        out = r.step()
    value_of(out)
    print(json.dumps({"peak_kb": read_status_kb("VmHWM"), "base_kb": base}))


def measure_memory(wl, threads, steps):
    res = {}
    for lib_name in FRAMEWORKS:
        cmd = [sys.executable, os.path.abspath(__file__), "--memory-child", wl.name, lib_name,
               "--threads", str(threads), "--steps", str(steps)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"memory run of {wl.name} on {lib_name} failed:\n{p.stderr[-2000:]}")
        res[lib_name] = json.loads(p.stdout.strip().splitlines()[-1])
    return res


# ----------------------------------------------------------------------------- report
def fmt_time(s):
    for unit, div in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if float(f"{s / div:.3g}") >= 1:  # 0.9996 s is "1 s", not "1e+03 ms"
            return f"{s / div:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def iqr_over_median(xs):
    """Spread of the step times: interquartile range over median (noisy rows stand out)."""
    q1, _, q3 = statistics.quantiles(xs, n=4) if len(xs) > 1 else (xs[0],) * 3
    return (q3 - q1) / statistics.median(xs)


def fmt_rate(x):
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def fmt_mb(kb):
    return f"{kb / 1024:.0f} MB"


def profile_kindle(runner, steps, top=15):
    """cProfile of kindle steps sorted by own time: where the Python-visible time goes."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        value_of(runner.step())
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    lines = out.getvalue().strip().splitlines()
    start = next((i for i, l in enumerate(lines) if "function calls" in l), 0)
    return "\n".join(l.rstrip() for l in lines[start:] if l.strip())


HEADER = ("| workload | steps | kindle | torch | k/t | spread | samples/s kindle / torch | peak RSS kindle (delta)"
          " | peak RSS torch (delta) | float32 loss kindle/torch: first -> last | float64 check: max rel diff"
          " | time target | memory target |")


def run_workload(wl, args, torch, kindle):
    """The workload's table row, its time ratio and (with --profile, when slower) a profile."""
    missing = missing_features(kindle, wl)
    if missing:
        cells = ["-"] * (HEADER.count("|") - 4) + [f"skipped: {', '.join(missing)} missing", "-"]
        return f"| {wl.title} | " + " | ".join(cells) + " |", None, None
    runners = make_pair(wl, wl.full, torch, kindle)
    reps = calibrate_reps(runners) if wl.inference else 1
    if args.quick:
        steps, warmup, check_steps = (20 if wl.inference else 3), 1, 2
    else:
        steps, warmup, check_steps = args.steps, (20 if wl.inference else 3), wl.check_steps
    times, values = timed_steps(runners, warmup, steps, wl.budget_s, wl.max_steps, reps)
    mk, mt = statistics.median(times["kindle"]), statistics.median(times["torch"])
    ratio = mk / mt
    spread = max(iqr_over_median(times[n]) for n in times)
    f32, ok32 = compare_float32(wl, values)
    f64, ok64 = float64_check(wl, torch, kindle, check_steps)
    for text, ok in ((f32, ok32), (f64, ok64)):
        if not ok:
            print(f"warning: {wl.name}: kindle and torch disagree: {text}", file=sys.stderr)
    f32, f64 = (t if ok else f"**MISMATCH** {t}" for t, ok in ((f32, ok32), (f64, ok64)))
    mem_cells = ["-", "-", "-"]
    if not args.no_memory:
        mem = measure_memory(wl, args.threads, 2 if args.quick else 6)
        k, t = mem["kindle"], mem["torch"]
        mem_cells = [f"{fmt_mb(x['peak_kb'])} ({fmt_mb(x['peak_kb'] - x['base_kb'])})" for x in (k, t)]
        mem_cells.append("met" if k["peak_kb"] <= t["peak_kb"] else "MISSED")
    batch = wl.full["batch"]
    row = (f"| {wl.title} | {len(times['kindle'])}x{reps} | {fmt_time(mk)} | {fmt_time(mt)} | {ratio:.2f} | {spread:.0%} | "
           f"{fmt_rate(batch / mk)} / {fmt_rate(batch / mt)} | {mem_cells[0]} | {mem_cells[1]} | {f32} | {f64} | "
           f"<= {wl.target:.2f} {'met' if ratio <= wl.target else 'MISSED'} | {mem_cells[2]} |")
    prof = None
    if args.profile and ratio > wl.target:
        n = max(3, min(200, int(5.0 / mk / reps))) * reps
        prof = profile_kindle(runners["kindle"], n)
    return row, ratio, prof


def header_lines(args, argv, torch, kindle):
    cmd = " ".join(shlex.quote(a) for a in ["python", "benchmarks/bench_e2e.py", *argv])
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return [
        f"- command: `OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']} {cmd}`",
        f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"- kindle {getattr(kindle, '__version__', '?')}; torch {torch.__version__}; numpy {np.__version__};"
        f" python {platform.python_version()}",
        f"- cpu: {cpu}, {os.cpu_count()} logical cores; {args.threads} threads per framework; float32;"
        f" load average at start {os.getloadavg()[0]:.1f} (other work on the machine slows both sides,"
        " and slows many small parallel regions more than a few large ones)",
        "- times: median of the timed steps (a training step is zero_grad, forward, loss, backward, step;"
        " inference is a no_grad forward in eval mode, `NxR` = N samples of R calls); k/t = kindle/torch"
        " (below 1: kindle faster); steps alternate between the frameworks after the warm-up; spread ="
        " the larger IQR/median of the two frameworks' step times.",
        "- peak RSS: VmHWM of a fresh process per framework that imports only that framework and runs"
        " the workload; delta = peak minus the RSS after the import and the data.",
        "- loss: same initial weights (torch's copied into kindle), same batches, same optimizer."
        " float32: the first step's losses (inference: every output) must agree to 1e-4 relative; later"
        " float32 losses drift apart as training amplifies rounding differences, so they are shown, not"
        " checked. float64 check: the same workload in float64 from the same weights, every step's loss"
        " (inference: output) must agree to 1e-9 relative; MISMATCH marks a failure.",
    ]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default=",".join(WORKLOADS),
                   help=f"comma-separated subset of {', '.join(WORKLOADS)}")
    p.add_argument("--steps", type=int, default=None,
                   help="timed steps per framework (default: as many as fit each workload's budget)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="a few steps each: checks the script, not speed")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocesses")
    p.add_argument("--profile", action="store_true", help="cProfile kindle where it misses the time target")
    p.add_argument("--markdown", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "results_e2e.md"), help="where to write the table")
    p.add_argument("--memory-child", nargs=2, metavar=("WORKLOAD", "FRAMEWORK"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.memory_child:
        wl_name, lib_name = args.memory_child
        if wl_name not in WORKLOADS or lib_name not in FRAMEWORKS:
            p.error(f"--memory-child: unknown workload or framework {args.memory_child}")
        return memory_child(wl_name, lib_name, args.threads, args.steps or 6)
    names = [n.strip() for n in args.workloads.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        p.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    if args.threads < 1:
        p.error("--threads must be at least 1")

    import kindle
    import kindle.nn  # noqa: F401
    import kindle.optim  # noqa: F401
    import torch
    for lib in (kindle, torch):
        lib.set_num_threads(args.threads)

    header = header_lines(args, sys.argv[1:] if argv is None else argv, torch, kindle)
    print("\n".join(header), "\n", HEADER, sep="\n")
    print("|" + "---|" * (HEADER.count("|") - 1))
    rows, profiles = [], []
    for name in names:
        row, _, prof = run_workload(WORKLOADS[name], args, torch, kindle)
        print(row, flush=True)
        rows.append(row)
        if prof:
            profiles.append((WORKLOADS[name].title, prof))
    for title, prof in profiles:
        print(f"\ncProfile of kindle, {title} (top 15 by own time):\n{prof}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("## End-to-end benchmark: Kindle vs PyTorch\n\n" + "\n".join(header) + "\n\n")
            f.write(HEADER + "\n|" + "---|" * (HEADER.count("|") - 1) + "\n" + "\n".join(rows) + "\n")
            for title, prof in profiles:
                f.write(f"\n### cProfile of kindle: {title} (top 15 by own time)\n\n```\n{prof}\n```\n")
        print(f"\nwrote {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
