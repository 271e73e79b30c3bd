#!/usr/bin/env python3
"""Data loading benchmark: kindle.utils.data.DataLoader against torch.utils.data.DataLoader.

    python benchmarks/bench_data.py                      # 10,000 images, 5 epochs per row
    python benchmarks/bench_data.py --quick              # seconds; checks the script, not speed
    python benchmarks/bench_data.py --markdown benchmarks/results_data.md

The dataset is the same on both sides: a TensorDataset of N in-memory images (3x32x32
float32) and int64 labels, read one item at a time (dataset[i] -> (image, label)) and
collated into batches of 64 by default_collate. One epoch is timed per sample, from
iter(loader) to the last batch (so the rows without persistent workers include starting the
worker processes); the libraries alternate epoch by epoch (the order rotates) in one process,
and the table reports the median batches/s and the ratio kindle/torch of the epoch times
(below 1: Kindle is faster). With workers, each batch is built in a worker process and comes
back through shared memory (a file descriptor on a Unix socket) on both sides.
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import numpy as np  # noqa: E402
import kindle  # noqa: E402
import kindle.utils.data as kdata  # noqa: E402
import torch  # noqa: E402
import torch.utils.data as tdata  # noqa: E402


def make_data(n, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((n, 3, 32, 32), dtype=np.float32)
    labels = rng.integers(0, 10, n, dtype=np.int64)
    k = kdata.TensorDataset(kindle.from_numpy(images.copy()), kindle.from_numpy(labels.copy()))
    t = tdata.TensorDataset(torch.from_numpy(images.copy()), torch.from_numpy(labels.copy()))
    return k, t


def epoch(loader):
    t0 = time.perf_counter()
    n = 0
    for images, labels in loader:
        n += 1
    return time.perf_counter() - t0, n


def check_same(kl, tl):
    # Unshuffled loaders: every batch is the same images and labels on both sides.
    for (ki, kl_), (ti, tl_) in zip(kl, tl):
        assert tuple(ki.shape) == tuple(ti.shape) and str(ki.dtype)[7:] == str(ti.dtype)[6:]
        assert np.array_equal(ki.numpy(), ti.numpy()) and np.array_equal(kl_.numpy(), tl_.numpy())


def run_row(name, k_loader, t_loader, epochs):
    check_same(k_loader, t_loader)
    epoch(k_loader), epoch(t_loader)  # warm up (and start persistent workers)
    times = {"kindle": [], "torch": []}
    pair = [("kindle", k_loader), ("torch", t_loader)]
    nbatches = None
    for r in range(epochs):
        for lib, loader in pair if r % 2 == 0 else pair[::-1]:
            s, nbatches = epoch(loader)
            times[lib].append(s)
    k, t = statistics.median(times["kindle"]), statistics.median(times["torch"])
    spread = max((max(v) - min(v)) / statistics.median(v) for v in times.values())
    return name, nbatches / k, nbatches / t, k / t, spread


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--images", type=int, default=None)
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args()
    n = args.images or (10_000 if not args.quick else 640)
    epochs = args.epochs or (5 if not args.quick else 2)
    bs = 64
    kds, tds = make_data(n)

    rows = []
    for workers, persistent in [(0, False), (2, False), (2, True)]:
        kw = dict(batch_size=bs, num_workers=workers, persistent_workers=persistent)
        name = (f"{workers} workers" + (", persistent" if persistent else "")
                if workers else "main process (num_workers=0)")
        kl, tl = kdata.DataLoader(kds, **kw), tdata.DataLoader(tds, **kw)
        rows.append(run_row(name, kl, tl, epochs))
        del kl, tl  # persistent workers go with their loaders

    lines = [
        "## Data loading benchmark: kindle DataLoader vs torch DataLoader",
        "",
        f"- command: {' '.join([os.path.basename(sys.executable)] + sys.argv)}",
        f"- date: {time.strftime('%Y-%m-%dT%H:%M:%S')}",
        f"- kindle {kindle.__version__}; torch {torch.__version__}; "
        f"python {platform.python_version()}; {os.cpu_count()} logical cores; "
        f"kindle threads {kindle.get_num_threads()}, "
        f"torch threads {torch.get_num_threads()} (workers run 1 thread on both sides)",
        f"- dataset: TensorDataset of {n} images 3x32x32 float32 + int64 labels, read per item, "
        f"batch {bs}, default_collate, no shuffle; median over {epochs} interleaved epochs per "
        "row; spread = largest (max-min)/median of the two columns",
        "",
        "| loader | kindle batches/s | torch batches/s | k/t (time) | spread |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, kb, tb, ratio, spread in rows:
        lines.append(f"| {name} | {kb:.0f} | {tb:.0f} | {ratio:.2f} | {spread:.0%} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
