#!/usr/bin/env python3
"""Checkpoint benchmark: kindle.save / kindle.load against torch.save / torch.load.

    python benchmarks/bench_serialization.py                 # ~200 MB state dict, 5 reps
    python benchmarks/bench_serialization.py --quick         # seconds; checks the script, not speed
    python benchmarks/bench_serialization.py --markdown benchmarks/results_serialization.md

The state dict is 50 float32 tensors (default 1M elements each: 200 MB), the same values on
both sides. Times are medians over repetitions in which the two libraries alternate (the
order rotates), all in one process, in a temporary folder on the local disk; the files sit
in the page cache, so loads measure the reader and the copy into tensor memory, not the disk.
kindle.save to a path is atomic and fsyncs the file and its folder, which torch.save does not,
so saving is also timed into an open file object (no fsync on either side).

Peak memory on load is measured in a fresh subprocess per side: the peak resident set
(VmHWM, reset through /proc/self/clear_refs when the kernel allows) minus the resident set
before the load. The target is a peak no larger than the file plus a small constant.
"""
import argparse
import io
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import kindle  # noqa: E402
import torch  # noqa: E402


def make_state(n_tensors, numel, seed=0):
    kindle.manual_seed(seed)
    sd_k = {f"layer{i}.weight": kindle.randn(numel // 1000, 1000) for i in range(n_tensors)}
    sd_t = {k: torch.from_numpy(v.numpy().copy()) for k, v in sd_k.items()}
    return sd_k, sd_t


def small_state(n):
    return {f"layer{i}.weight": torch.randn(16) for i in range(n)}


def adam_state(n):
    return {"state": {i: {"step": torch.tensor(3.0), "exp_avg": torch.randn(4), "exp_avg_sq": torch.randn(4)}
                      for i in range(n)},
            "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-8, "params": list(range(n))}]}


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def compare(name, kindle_fn, torch_fn, reps):
    ks, ts = [], []
    for r in range(reps):
        pair = [(kindle_fn, ks), (torch_fn, ts)]
        for fn, out in pair if r % 2 == 0 else pair[::-1]:
            out.append(timed(fn))
    k, t = statistics.median(ks), statistics.median(ts)
    return name, k, t


# The child process: load one file with one library and report the peak memory of the load.
CHILD = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
lib, path = sys.argv[2], sys.argv[3]
def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
if lib == "kindle":
    import kindle
    load = lambda p: kindle.load(p)
else:
    import torch
    load = lambda p: torch.load(p, weights_only=True)
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    reset = True
except OSError:
    reset = False
before_rss, before_hwm = status("VmRSS"), status("VmHWM")
obj = load(path)
after_hwm = status("VmHWM")
print(after_hwm - before_rss, reset, after_hwm > before_hwm or reset)
"""


def peak_on_load(lib, path):
    out = subprocess.run([sys.executable, "-c", CHILD, os.path.join(os.path.dirname(HERE), "python"), lib, path],
                         check=True, capture_output=True, text=True).stdout.split()
    return int(out[0]), out[1] == "True", out[2] == "True"


def mb(n):
    return f"{n / 1e6:.1f} MB"


def ms(s):
    return f"{s * 1e3:.0f} ms" if s >= 0.01 else f"{s * 1e3:.1f} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args()
    n_tensors, numel = (50, 1_000_000) if not args.quick else (5, 100_000)
    reps = args.reps or (5 if not args.quick else 2)

    sd_k, sd_t = make_state(n_tensors, numel)
    nbytes = sum(t.numel() * t.element_size() for t in sd_k.values())
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        pk, pt = os.path.join(tmp, "k.safetensors"), os.path.join(tmp, "t.pt")
        kindle.save(sd_k, pk)
        torch.save(sd_t, pt)
        # Every file holds the same values, read by either loader.
        for got in (kindle.load(pk), kindle.load(pt)):
            assert all(bool(got[k].equal(sd_k[k])) for k in sd_k), "kindle read wrong values"
        got = torch.load(pt, weights_only=True)
        assert all(torch.equal(got[k], sd_t[k]) for k in sd_t), "torch read wrong values"
        del got

        def to_file(lib, sd, path):
            with open(path, "wb") as f:
                lib.save(sd, f)

        rows.append(compare("save to path (kindle: atomic + fsync)",
                            lambda: kindle.save(sd_k, pk), lambda: torch.save(sd_t, pt), reps))
        rows.append(compare("save to file object (no fsync)",
                            lambda: to_file(kindle, sd_k, pk), lambda: to_file(torch, sd_t, pt), reps))
        pk_pt = os.path.join(tmp, "k.pt")
        rows.append(compare("save torch's format to path (kindle: atomic + fsync)",
                            lambda: kindle.save(sd_k, pk_pt), lambda: torch.save(sd_t, pt), reps))
        rows.append(compare("load own format", lambda: kindle.load(pk),
                            lambda: torch.load(pt, weights_only=True), reps))
        rows.append(compare("load torch's .pt", lambda: kindle.load(pt),
                            lambda: torch.load(pt, weights_only=True), reps))
        # Parse-bound: many small entries (the restricted unpickler's own speed).
        for name, obj in (("load .pt of 2000 small tensors", small_state(2000)),
                          ("load .pt of an Adam state of 1000 params", adam_state(1000))):
            raw = io.BytesIO()
            torch.save(obj, raw)
            raw = raw.getvalue()
            rows.append(compare(name, lambda: kindle.load(io.BytesIO(raw)),
                                lambda: torch.load(io.BytesIO(raw), weights_only=True), reps * 2))
        sizes = {"kindle": os.path.getsize(pk), "torch": os.path.getsize(pt)}
        peaks = {"kindle": peak_on_load("kindle", pk), "kindle (.pt)": peak_on_load("kindle", pt),
                 "torch": peak_on_load("torch", pt)}

    lines = [
        "## Checkpoint benchmark: kindle.save/load vs torch.save/load",
        "",
        f"- command: {' '.join([os.path.basename(sys.executable)] + sys.argv)}",
        f"- date: {time.strftime('%Y-%m-%dT%H:%M:%S')}",
        f"- kindle {kindle.__version__}; torch {torch.__version__}; python {platform.python_version()}; "
        f"{os.cpu_count()} logical cores",
        f"- state dict: {n_tensors} float32 tensors, {mb(nbytes)} of data; kindle file {mb(sizes['kindle'])}, "
        f"torch file {mb(sizes['torch'])}; median of {reps} interleaved repetitions; files in the page cache",
        "",
        "| operation | kindle | torch | k/t |",
        "|---|---:|---:|---:|",
    ]
    for name, k, t in rows:
        lines.append(f"| {name} | {ms(k)} | {ms(t)} | {k / t:.2f} |")
    lines += ["", "Peak resident memory added by one load, in a fresh process per side "
              "(target: no more than the file size plus a small constant):", "",
              "| loader | file | peak added | peak / file |", "|---|---:|---:|---:|"]
    for lib, (peak, reset, _) in peaks.items():
        size = sizes["torch"] if lib != "kindle" else sizes["kindle"]
        note = "" if reset else " (VmHWM not reset: lower bound)"
        lines.append(f"| {lib} | {mb(size)} | {mb(peak)}{note} | {peak / size:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
