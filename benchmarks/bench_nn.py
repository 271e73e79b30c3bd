#!/usr/bin/env python3
"""nn benchmark: Kindle's kindle.nn.functional against torch.nn.functional, in one process.

    python benchmarks/bench_nn.py                        # full run, 1 and 2 threads
    python benchmarks/bench_nn.py --quick                # seconds; checks the script, not speed
    python benchmarks/bench_nn.py --threads 1 --filter conv --markdown out.md

Same method as benchmarks/bench_core.py (whose helpers this script imports) and
benchmarks/bench_autograd.py: every workload runs on Kindle and PyTorch in the same process with
identical float32 inputs and weights, interleaved within each repetition (the order rotates),
and the table reports the median time per call, the ratio kindle/torch of the medians (below 1:
Kindle is faster) and the spread (largest IQR/median of the row). The sizes are the same in
--quick (only the repetitions shrink).

A "fwd" workload times the forward call alone, on inputs that do not require grad (inference).
A "fwd+bwd" workload times a training-step-like unit: clear the leaves' .grad (set to None, on
both sides), run the forward pass, and call .backward() on the loss or on out.sum() (for
layer_norm and batch_norm out.backward(g) with a fixed random g: through a normalisation the
gradient of out.sum() is zero up to rounding and would check nothing). The leaves
are the input and every weight (a layer in the middle of a network: all gradients are needed).

Before timing, each workload runs once per library on the same inputs and the "check" column
gives the largest relative difference max|kindle - torch| / max|torch| over the outputs, the
updated running statistics (batch norm) and every leaf's gradient ("ok" when all of them pass
allclose, "BAD" and a warning otherwise), so a fast but wrong kernel cannot pass unnoticed.

The LSTM row times the module nn.LSTM on both sides, loaded with the same weights.

A full run takes about 2.5 minutes on a 2-core VM (the depthwise row dominates while Kindle's
grouped convolution is slow); --budget lowers the repetitions, never the sizes.

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
from bench_core import Table, Variant, Workload, fmt_time, measure, set_threads, spread, write_markdown  # noqa: E402

kindle, torch = bench_core.kindle, bench_core.torch
import kindle.nn.functional as KF  # noqa: E402
import torch.nn.functional as TF  # noqa: E402


# ----------------------------------------------------------------------------- configuration
@dataclass
class Config:
    min_reps: int      # repetitions per workload, at least ...
    max_reps: int      # ... and at most
    budget_s: float    # target time per workload (per thread count); sets reps between the bounds
    min_sample_s: float  # a timed sample repeats a fast call until it lasts this long


FULL = Config(11, 101, 3.0, 2e-3)
QUICK = Config(3, 3, 0.05, 2e-4)


# ----------------------------------------------------------------------------- workloads
@dataclass
class NNWorkload(Workload):
    make: Callable = None     # rng -> {name: numpy array}: the inputs, the same for both libraries
    leaves: tuple = ()        # names of the inputs that are leaves with requires_grad=True
    outputs: tuple = ()       # namespace names compared after the check run (besides the grads)
    setup: dict = None        # lib -> callable(ns) run once on the namespace (modules, ...)


def clear(*names):
    return "".join(f"{n}.grad = None; " for n in names)


def randn(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)).astype(np.float32)


def both(stmt):
    """The same statement on both libraries (`F` is each library's functional module)."""
    return {lib: Variant(lib, stmt) for lib in ("kindle", "torch")}


def conv_inputs(cin_per_group, k, batch=32, c=64, hw=32):
    def make(rng):
        fan_in = cin_per_group * k * k
        return {"x": randn(rng, batch, c, hw, hw),
                "w": randn(rng, c, cin_per_group, k, k, scale=fan_in ** -0.5),
                "b": randn(rng, c, scale=0.1)}
    return make


# LSTM: 2 layers, hidden 256, input 256, sequence 35, batch 20 (PyTorch's word-language-model
# shape). Weights in torch.nn.LSTM's order and names; uniform(-1/sqrt(H), 1/sqrt(H)) as torch.
LSTM_T, LSTM_B, LSTM_I, LSTM_H, LSTM_L = 35, 20, 256, 256, 2
LSTM_PARAMS = tuple(f"{kind}_l{layer}" for layer in range(LSTM_L)
                    for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))


def lstm_inputs(rng):
    d = {"x": randn(rng, LSTM_T, LSTM_B, LSTM_I),
         "h0": randn(rng, LSTM_L, LSTM_B, LSTM_H, scale=0.1),
         "c0": randn(rng, LSTM_L, LSTM_B, LSTM_H, scale=0.1)}
    bound = LSTM_H ** -0.5
    for name in LSTM_PARAMS:
        if name.startswith("bias"):
            shape = (4 * LSTM_H,)
        elif name.startswith("weight_ih"):
            shape = (4 * LSTM_H, LSTM_I if name.endswith("_l0") else LSTM_H)
        else:
            shape = (4 * LSTM_H, LSTM_H)
        d[name] = rng.uniform(-bound, bound, size=shape).astype(np.float32)
    return d


def lstm_setup_module(lib):
    """Builds lib.nn.LSTM in the namespace and puts its parameters there under their own names,
    loaded with the shared weights (the namespace's leaves become the module's parameters)."""
    def setup(ns):
        mod = lib.nn.LSTM(LSTM_I, LSTM_H, num_layers=LSTM_L)
        with lib.no_grad():
            for name in LSTM_PARAMS:
                getattr(mod, name).copy_(ns[name])
        for name in LSTM_PARAMS:
            ns[name] = getattr(mod, name)
        ns["lstm"] = mod
    return setup


LSTM_MODULE = "out, (hn, cn) = lstm(x, (h0, c0)); out.sum().backward()"


def build_workloads(cfg):
    conv = "out = F.conv2d(x, w, b, padding={p}, groups={g})"
    fb = "; out.sum().backward()"
    gb = "; out.backward(g)"
    xwb = ("x", "w", "b")
    W = [
        NNWorkload("conv2d 3x3 64->64 fwd [32x64x32x32]", "conv", {},
                   both(conv.format(p=1, g=1)), target=1.0,
                   make=conv_inputs(64, 3), outputs=("out",)),
        NNWorkload("conv2d 3x3 64->64 fwd+bwd [32x64x32x32]", "conv", {},
                   both(clear(*xwb) + conv.format(p=1, g=1) + fb), target=1.0,
                   make=conv_inputs(64, 3), leaves=xwb, outputs=("out",)),
        NNWorkload("conv2d 1x1 64->64 fwd+bwd [32x64x32x32]", "conv", {},
                   both(clear(*xwb) + conv.format(p=0, g=1) + fb), target=1.0,
                   make=conv_inputs(64, 1), leaves=xwb, outputs=("out",)),
        NNWorkload("depthwise 3x3 g=64 fwd+bwd [32x64x32x32]", "conv", {},
                   both(clear(*xwb) + conv.format(p=1, g=64) + fb), target=1.0,
                   make=conv_inputs(1, 3), leaves=xwb, outputs=("out",)),
        NNWorkload("linear 784->512 fwd+bwd [batch 128]", "linear", {},
                   both(clear(*xwb) + "out = F.linear(x, w, b)" + fb), target=1.0,
                   make=lambda rng: {"x": randn(rng, 128, 784),
                                     "w": randn(rng, 512, 784, scale=784 ** -0.5),
                                     "b": randn(rng, 512, scale=0.1)},
                   leaves=xwb, outputs=("out",)),
        # The normalisation layers backpropagate a fixed random gradient g (out.backward(g), no
        # extra op): the gradient of out.sum() through a normalisation is zero up to rounding
        # (sum of x_hat over the normalised axes is 0), which would make the check meaningless.
        NNWorkload("layer_norm fwd+bwd [4096x1024]", "norm", {},
                   both(clear(*xwb) + "out = F.layer_norm(x, (1024,), w, b)" + gb), target=1.0,
                   make=lambda rng: {"x": randn(rng, 4096, 1024),
                                     "w": 1 + randn(rng, 1024, scale=0.1),
                                     "b": randn(rng, 1024, scale=0.1),
                                     "g": randn(rng, 4096, 1024)},
                   leaves=xwb, outputs=("out",)),
        # F.cross_entropy = log_softmax + nll_loss (mean) on int64 class targets.
        NNWorkload("softmax+cross_entropy fwd+bwd [4096x1024]", "loss", {},
                   both(clear("x") + "loss = F.cross_entropy(x, y); loss.backward()"), target=1.0,
                   make=lambda rng: {"x": randn(rng, 4096, 1024),
                                     "y": rng.integers(0, 1024, size=(4096,), dtype=np.int64)},
                   leaves=("x",), outputs=("loss",)),
        # Training mode: batch statistics, and the running statistics updated in place (both
        # libraries keep updating their own copy over the repetitions; the check compares them
        # after the first call). Random upstream gradient g, as for layer_norm.
        NNWorkload("batch_norm2d train fwd+bwd [32x64x32x32]", "norm", {},
                   both(clear(*xwb) + "out = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1)" + gb),
                   target=1.0,
                   make=lambda rng: {"x": randn(rng, 32, 64, 32, 32),
                                     "g": randn(rng, 32, 64, 32, 32),
                                     "w": 1 + randn(rng, 64, scale=0.1),
                                     "b": randn(rng, 64, scale=0.1),
                                     "rm": np.zeros(64, np.float32),
                                     "rv": np.ones(64, np.float32)},
                   leaves=xwb, outputs=("out", "rm", "rv")),
        NNWorkload("sdpa causal fwd+bwd [16x4x256x32]", "attention", {},
                   both(clear("q", "k", "v")
                        + "out = F.scaled_dot_product_attention(q, k, v, is_causal=True)" + fb),
                   target=1.0,
                   make=lambda rng: {n: randn(rng, 16, 4, 256, 32) for n in ("q", "k", "v")},
                   leaves=("q", "k", "v"), outputs=("out",)),
        # nn.MultiheadAttention's body (one C++ op since issue 14 part 3; Python before): the
        # small shape is dominated by per-call overhead, the larger one by the GEMMs.
        NNWorkload("multi_head_attention_forward fwd [seq 16, batch 2, E 64, 4 heads]", "attention", {},
                   both(MHA_CALL.format(w="False", h=4)), target=1.0,
                   make=mha_inputs(16, 2, 64), outputs=("out",)),
        NNWorkload("multi_head_attention_forward fwd, weights [seq 64, batch 8, E 256, 8 heads]", "attention", {},
                   both(MHA_CALL.format(w="True", h=8)), target=1.0,
                   make=mha_inputs(64, 8, 256), outputs=("out", "attn")),
        NNWorkload("multi_head_attention_forward fwd+bwd [seq 64, batch 8, E 256, 8 heads]", "attention", {},
                   both(clear("x", "w_in", "w_out") + MHA_CALL.format(w="False", h=8) + fb), target=1.0,
                   make=mha_inputs(64, 8, 256), leaves=("x", "w_in", "w_out"), outputs=("out",)),
        NNWorkload("conv3d 3x3x3 16->32 fwd+bwd [4x16x16x32x32]", "conv3d", {},
                   both(clear(*xwb) + "out = F.conv3d(x, w, b, padding=1)" + fb), target=None,
                   make=lambda rng: {"x": randn(rng, 4, 16, 16, 32, 32),
                                     "w": randn(rng, 32, 16, 3, 3, 3, scale=432 ** -0.5),
                                     "b": randn(rng, 32, scale=0.1)},
                   leaves=xwb, outputs=("out",)),
        # inference-time kernels of the model zoo (issue 18, twelfth session): the pools of
        # ResNet (3x3 stride 2 pad 1) and SqueezeNet (ceil_mode), a GPT block's layer_norm and
        # GELU, MobileNet's ReLU6 in place
        NNWorkload("max_pool2d 3x3 s2 p1 fwd [8x64x112x112]", "pool2d", {},
                   both("out = F.max_pool2d(x, 3, 2, 1)"), target=1.0,
                   make=lambda rng: {"x": randn(rng, 8, 64, 112, 112)}, outputs=("out",)),
        NNWorkload("max_pool2d 3x3 s2 ceil fwd [1x64x111x111]", "pool2d", {},
                   both("out = F.max_pool2d(x, 3, 2, ceil_mode=True)"), target=1.0,
                   make=lambda rng: {"x": randn(rng, 1, 64, 111, 111)}, outputs=("out",)),
        NNWorkload("layer_norm fwd [8x128x768]", "norm", {},
                   both("out = F.layer_norm(x, (768,), w, b)"), target=1.0,
                   make=lambda rng: {"x": randn(rng, 8, 128, 768), "w": 1 + randn(rng, 768, scale=0.1),
                                     "b": randn(rng, 768, scale=0.1)}, outputs=("out",)),
        NNWorkload("gelu fwd [8x128x3072]", "activation", {},
                   both("out = F.gelu(x)"), target=1.0,
                   make=lambda rng: {"x": randn(rng, 8, 128, 3072)}, outputs=("out",)),
        NNWorkload("relu6 in place fwd [8x96x112x112]", "activation", {},
                   both("out = F.relu6(x, inplace=True)"), target=1.0,
                   make=lambda rng: {"x": randn(rng, 8, 96, 112, 112)}, outputs=("out",)),
        NNWorkload("max_pool3d 2 fwd+bwd [4x16x16x32x32]", "pool3d", {},
                   both(clear("x") + "out = F.max_pool3d(x, 2)" + fb), target=None,
                   make=lambda rng: {"x": randn(rng, 4, 16, 16, 32, 32)}, leaves=("x",), outputs=("out",)),
        NNWorkload("avg_pool3d 2 fwd+bwd [4x16x16x32x32]", "pool3d", {},
                   both(clear("x") + "out = F.avg_pool3d(x, 2)" + fb), target=None,
                   make=lambda rng: {"x": randn(rng, 4, 16, 16, 32, 32)}, leaves=("x",), outputs=("out",)),
        NNWorkload("conv_transpose3d 3x3x3 s2 32->16 fwd+bwd [4x32x8x16x16]", "conv3d", {},
                   both(clear("x", "w") + "out = F.conv_transpose3d(x, w, None, 2, 1, 1)" + fb), target=None,
                   make=lambda rng: {"x": randn(rng, 4, 32, 8, 16, 16), "w": randn(rng, 32, 16, 3, 3, 3, scale=0.05)},
                   leaves=("x", "w"), outputs=("out",)),
        # composites that moved into the core this round (Python compositions before)
        NNWorkload("ctc_loss fwd+bwd [T 50, batch 16, C 20, S 10]", "composite", {},
                   both(clear("x") + "out = F.ctc_loss(x.log_softmax(2), y, il, tl); out.backward()"), target=None,
                   make=lambda rng: {"x": randn(rng, 50, 16, 20),
                                     "y": rng.integers(1, 20, size=(16, 10), dtype=np.int64),
                                     "il": np.full(16, 50, np.int64), "tl": np.full(16, 10, np.int64)},
                   leaves=("x",), outputs=("out",)),
        NNWorkload("fractional_max_pool2d 2 fwd+bwd [8x16x32x32]", "composite", {},
                   both(clear("x") + "out = F.fractional_max_pool2d(x, 2, output_size=16, _random_samples=s)" + fb),
                   target=None,
                   make=lambda rng: {"x": randn(rng, 8, 16, 32, 32),
                                     "s": rng.random((8, 16, 2)).astype(np.float32)},
                   leaves=("x",), outputs=("out",)),
        NNWorkload("pdist fwd+bwd [256x64]", "composite", {},
                   both(clear("x") + "out = F.pdist(x)" + fb), target=None,
                   make=lambda rng: {"x": randn(rng, 256, 64)}, leaves=("x",), outputs=("out",)),
        *activation_workloads(),
        NNWorkload(f"LSTM {LSTM_L}x{LSTM_H} fwd+bwd [seq {LSTM_T}, batch {LSTM_B}]", "rnn", {},
                   both(clear("x", *LSTM_PARAMS) + LSTM_MODULE), target=1.0,
                   make=lstm_inputs, leaves=("x",) + LSTM_PARAMS, outputs=("out", "hn", "cn"),
                   setup={"kindle": lstm_setup_module(kindle), "torch": lstm_setup_module(torch)}),
    ]
    return W


# Pointwise activations (issue 18): one forward row and one forward+backward row each, on a
# DCGAN-sized map with both signs present, so the kernels' selects see unpredictable branches.
ACTIVATIONS = ("elu", "selu", "celu", "softplus", "mish", "hardswish", "hardsigmoid", "gelu",
               "silu", "relu6", "logsigmoid", "softsign", "tanhshrink")


def activation_workloads():
    make = lambda rng: {"x": randn(rng, 64, 128, 8, 8, scale=3.0)}
    W = []
    for name in ACTIVATIONS:
        W.append(NNWorkload(f"{name} fwd [64x128x8x8]", "activation", {},
                            both(f"out = F.{name}(x)"), target=1.0, make=make, outputs=("out",)))
        W.append(NNWorkload(f"{name} fwd+bwd [64x128x8x8]", "activation", {},
                            both(clear("x") + f"out = F.{name}(x)" + "; out.sum().backward()"),
                            target=1.0, make=make, leaves=("x",), outputs=("out",)))
    return W


MHA_CALL = ("out, attn = F.multi_head_attention_forward(x, x, x, x.shape[-1], {h}, w_in, b_in, None, None, False, "
            "0.0, w_out, b_out, training=False, need_weights={w})")


def mha_inputs(seq, batch, embed):
    def make(rng):
        return {"x": randn(rng, seq, batch, embed), "w_in": randn(rng, 3 * embed, embed, scale=embed ** -0.5),
                "b_in": randn(rng, 3 * embed, scale=0.1), "w_out": randn(rng, embed, embed, scale=embed ** -0.5),
                "b_out": randn(rng, embed, scale=0.1)}
    return make


def make_spaces(wl, libs=("kindle", "torch"), seed=0):
    """One namespace per library, each with its own copy of the same inputs; the leaves require
    grad (made as library tensors first, then requires_grad_(), so they are true leaves)."""
    arrays = wl.make(np.random.default_rng(seed))
    spaces = {}
    for name in libs:
        lib, fn = (kindle, KF) if name == "kindle" else (torch, TF)
        ns = {"kindle": kindle, "torch": torch, "F": fn}
        for k, a in arrays.items():
            t = lib.from_numpy(a).clone()
            ns[k] = t.requires_grad_() if k in wl.leaves else t
        if wl.setup and name in wl.setup:
            wl.setup[name](ns)
        spaces[name] = ns
    return spaces


def to_numpy(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def check(wl, spaces):
    """Run each library's statement once; compare the outputs and every leaf's gradient.
    Returns the largest relative difference (inf when something is missing or misshapen) and
    whether every comparison passed allclose."""
    for lib in ("kindle", "torch"):
        exec(wl.variants[lib].stmt, spaces[lib])  # noqa: S102
    pairs = [(n, spaces["kindle"].get(n), spaces["torch"].get(n)) for n in wl.outputs]
    pairs += [(f"{leaf}.grad", spaces["kindle"][leaf].grad, spaces["torch"][leaf].grad) for leaf in wl.leaves]
    worst, bad = 0.0, []
    for name, k, t in pairs:
        if k is None or t is None:
            bad.append(f"{name}: missing (kindle {k is None}, torch {t is None})")
            worst = float("inf")
            continue
        k, t = to_numpy(k), to_numpy(t)
        if k.shape != t.shape:
            bad.append(f"{name}: shape {k.shape} vs {t.shape}")
            worst = float("inf")
            continue
        scale = float(np.abs(t).max(initial=0.0)) or 1.0
        err = float(np.abs(k - t).max(initial=0.0))
        worst = max(worst, err / scale)
        if not np.allclose(k, t, rtol=1e-3, atol=1e-4 * scale):
            bad.append(f"{name}: max abs error {err:.3g} (max |torch| {scale:.3g})")
    for b in bad:
        print(f"WARNING: {wl.name}: kindle differs from torch: {b}", flush=True)
    return worst, not bad


# ----------------------------------------------------------------------------- output
COLUMNS = ("thr", "workload", "kindle", "torch", "k/t", "spread", "check", "target")
LEFT = (1, 5, 6, 7)


def row_cells(threads, wl, samples, reps, diff, ok):
    med = {lib: statistics.median(samples[lib]) for lib in ("kindle", "torch")}
    ratio = med["kindle"] / med["torch"]
    target = "-"
    if wl.target is not None:
        target = f"<={wl.target:.2f} " + ("ok" if ratio <= wl.target else "MISS")
    worst = max(spread(s) for s in samples.values())
    return (str(threads), wl.name, fmt_time(med["kindle"]), fmt_time(med["torch"]), f"{ratio:.2f}",
            f"{100 * worst:.0f}% n={reps}", f"{diff:.1e} " + ("ok" if ok else "BAD"), target)


def run_workload(wl, cfg, n, args):
    spaces = make_spaces(wl)
    diff, ok = check(wl, spaces)
    samples = measure(wl, cfg, args.reps, spaces=spaces)
    return row_cells(n, wl, samples, len(samples["kindle"]), diff, ok)


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
        "times: median per call (fwd: forward only, no grad; fwd+bwd: clear .grad, forward, "
        "backward); k/t = kindle/torch (below 1: kindle faster); spread = largest IQR/median in "
        "the row, n = repetitions; check = largest max|kindle-torch|/max|torch| over outputs and "
        "gradients. Sizes are the same in --quick. Compare ratios within one run only.",
    ]
    print("\n".join(header), flush=True)
    widths = [3, max(len(wl.name) for wl in workloads), 9, 9, 5, 11, 10, 11]
    table = Table(widths, left=LEFT)
    print()
    print(table.line(COLUMNS))
    print(table.line(["-" * w for w in widths]), flush=True)

    rows = []
    for n in threads:
        set_threads(n, np_setter)
        for wl in workloads:
            cells = run_workload(wl, cfg, n, args)
            rows.append(cells)
            print(table.line(cells), flush=True)
    if args.markdown:
        write_markdown(args.markdown, header, rows, title="nn benchmark: Kindle vs PyTorch",
                       columns=COLUMNS, left=LEFT)
        print(f"\nmarkdown table written to {args.markdown}")


if __name__ == "__main__":
    main()
