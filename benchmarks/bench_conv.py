#!/usr/bin/env python3
"""Convolution shapes from issue 18, Kindle against PyTorch, side by side in one process.

    OMP_WAIT_POLICY=PASSIVE python benchmarks/bench_conv.py --threads 1 2 --rounds 5
    python benchmarks/bench_conv.py --quick            # seconds: checks the script, not speed

Each row is one layer shape from the models of issue 18 (ResNet's small late stages, the 7x7
stem, fast-neural-style's 9x9 layers, 5x5 layers, DCGAN's stride-2 4x4 convolutions and transposed convolutions),
timed as inference ("fwd": no autograd) and as a training step ("fwd+bwd": forward, then
backward of out.sum() into the input and the weight). Kindle and torch run alternately (A B B A
...) on the same float32 data; the figure is the best of each library's per-round medians, and
the ratio kindle/torch (below 1: Kindle is faster). Before timing, outputs and gradients are
compared (largest difference relative to the largest value), so a fast but wrong kernel shows.
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import kindle  # noqa: E402
import kindle.nn.functional as KF  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as TF  # noqa: E402

# name, (N, C, H=W, O, kernel, stride, padding, transposed)
SHAPES = [
    ("ResNet 3x3 512->512 on 4x4, batch 8", (8, 512, 4, 512, 3, 1, 1, False)),
    ("ResNet 3x3 512->512 on 7x7, batch 1", (1, 512, 7, 512, 3, 1, 1, False)),
    ("3x3 384->256 on 3x3, batch 1", (1, 384, 3, 256, 3, 1, 1, False)),
    ("3x3 256->1 on 3x3, batch 1", (1, 256, 3, 1, 3, 1, 1, False)),
    ("ResNet 3x3 256->256 on 14x14, batch 1", (1, 256, 14, 256, 3, 1, 1, False)),
    ("ResNet 3x3 64->64 on 56x56, batch 1", (1, 64, 56, 64, 3, 1, 1, False)),
    ("ResNet 7x7/2 stem 3->64 on 224x224, batch 1", (1, 3, 224, 64, 7, 2, 3, False)),
    ("style 9x9 32->32 on 72x72, batch 1", (1, 32, 72, 32, 9, 1, 4, False)),
    ("style 9x9 32->3 on 80x80, batch 1", (1, 32, 80, 3, 9, 1, 4, False)),
    ("5x5 64->64 on 56x56, batch 1", (1, 64, 56, 64, 5, 1, 2, False)),
    ("LeNet 5x5 1->20 on 28x28, batch 64", (64, 1, 28, 20, 5, 1, 0, False)),
    ("DCGAN D 4x4/2 1->64 on 16x16, batch 64", (64, 1, 16, 64, 4, 2, 1, False)),
    ("DCGAN D 4x4/2 64->128 on 8x8, batch 64", (64, 64, 8, 128, 4, 2, 1, False)),
    ("DCGAN G T4x4/2 128->64 on 4x4, batch 64", (64, 128, 4, 64, 4, 2, 1, True)),
    ("DCGAN G T4x4/2 64->1 on 8x8, batch 64", (64, 64, 8, 1, 4, 2, 1, True)),
    ("T4x4/2 256->128 on 7x7, batch 64", (64, 256, 7, 128, 4, 2, 1, True)),
]


def make_step(lib, F, x, w, shape, train):
    N, C, H, O, k, s, p, tr = shape
    xt = lib.tensor(x, requires_grad=train)
    wt = lib.tensor(w, requires_grad=train)

    def conv():
        if tr:
            return F.conv_transpose2d(xt, wt, stride=s, padding=p)
        return F.conv2d(xt, wt, stride=s, padding=p)

    if train:
        def step():
            xt.grad = None
            wt.grad = None
            out = conv()
            out.sum().backward()
            return out
    else:
        def step():
            with lib.no_grad():
                return conv()
    return step, xt, wt


def rel_diff(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def median_time(f, min_s):
    ts = []
    t_end = time.perf_counter() + min_s
    while len(ts) < 3 or time.perf_counter() < t_end:
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]


def run(threads, rounds, min_s, only):
    kindle.set_num_threads(threads)
    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    rows = []
    for name, shape in SHAPES:
        if only and only not in name:
            continue
        N, C, H, O, k, s, p, tr = shape
        x = rng.standard_normal((N, C, H, H), dtype=np.float32)
        w = (rng.standard_normal((C, O, k, k) if tr else (O, C, k, k), dtype=np.float32) * 0.05).astype(np.float32)
        row = [name]
        for train in (False, True):
            ks, kx, kw = make_step(kindle, KF, x, w, shape, train)
            ts, tx, tw = make_step(torch, TF, x, w, shape, train)
            ko, to = ks(), ts()
            diff = rel_diff(ko.detach().numpy(), to.detach().numpy())
            if train:
                diff = max(diff, rel_diff(kx.grad.numpy(), tx.grad.numpy()), rel_diff(kw.grad.numpy(), tw.grad.numpy()))
            tk, tt = [], []
            for r in range(rounds):
                for lib in ("kt" if r % 2 == 0 else "tk"):
                    (tk if lib == "k" else tt).append(median_time(ks if lib == "k" else ts, min_s))
            row += [min(tk), min(tt), diff]
        rows.append(row)
        print(f"{threads}t  {name:46s} fwd {row[1] * 1e3:8.3f} ms / {row[2] * 1e3:8.3f} = {row[1] / row[2]:4.2f}"
              f"   fwd+bwd {row[4] * 1e3:8.3f} / {row[5] * 1e3:8.3f} = {row[4] / row[5]:4.2f}"
              f"   diff {max(row[3], row[6]):.1e}", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-seconds", type=float, default=0.2, help="per timed sample set")
    ap.add_argument("--filter", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", default=None, help="write the table to this file")
    a = ap.parse_args()
    rounds, min_s = (1, 0.0) if a.quick else (a.rounds, a.min_seconds)
    results = {t: run(t, rounds, min_s, a.filter) for t in a.threads}
    bad = [r[0] for rows in results.values() for r in rows if max(r[3], r[6]) > 1e-3]
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("| layer | " + " | ".join(f"fwd {t}t | fwd+bwd {t}t" for t in a.threads) + " |\n")
            f.write("|---|" + "---:|---:|" * len(a.threads) + "\n")
            for i, row in enumerate(results[a.threads[0]]):
                cells = []
                for t in a.threads:
                    r = results[t][i]
                    cells += [f"{r[1] / r[2]:.2f}", f"{r[4] / r[5]:.2f}"]
                f.write(f"| {row[0]} | " + " | ".join(cells) + " |\n")
    if bad:
        raise SystemExit(f"outputs differ from torch's: {bad}")


if __name__ == "__main__":
    main()
