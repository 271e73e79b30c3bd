"""Kindle's CUDA backend beside PyTorch on the same GPU, in one process, interleaved (A B A B).

Each row times one workload per library: warm-up, then rounds of `iters` calls between device
synchronisations, the median round per call. Ratio = Kindle's time / torch's (below 1: Kindle
faster). Both run float32 matmul without TF32 (torch's default), bf16 through cuBLAS.

    python benchmarks/bench_cuda.py [--out results.md]
"""
import argparse
import statistics
import time

import kindle
import torch


def timed(sync, fn, iters):
    sync()
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - t) / iters


def side_by_side(make, iters=20, rounds=7):
    """make(lib) -> a no-argument callable; returns (kindle seconds, torch seconds)."""
    fk, ft = make(kindle), make(torch)
    ks, ts = kindle.cuda.synchronize, torch.cuda.synchronize
    for _ in range(3):
        fk(), ft()
    kt, tt = [], []
    for _ in range(rounds):
        kt.append(timed(ks, fk, iters))
        tt.append(timed(ts, ft, iters))
    return statistics.median(kt), statistics.median(tt)


def matmul(n, dtype):
    def make(lib):
        a = lib.randn(n, n, device="cuda").to(getattr(lib, dtype))
        b = lib.randn(n, n, device="cuda").to(getattr(lib, dtype))
        return lambda: a @ b
    return make


def add(numel):
    def make(lib):
        a, b = lib.randn(numel, device="cuda"), lib.randn(numel, device="cuda")
        return lambda: a + b
    return make


def reduce_sum(rows, cols, dim):
    def make(lib):
        a = lib.randn(rows, cols, device="cuda")
        return lambda: a.sum(dim)
    return make


def softmax(rows, cols):
    def make(lib):
        a = lib.randn(rows, cols, device="cuda")
        return lambda: lib.softmax(a, -1)
    return make


def mlp_step(batch, width):
    def make(lib):
        lib.manual_seed(0)
        nn = lib.nn
        model = nn.Sequential(nn.Linear(width, 4 * width), nn.ReLU(), nn.Linear(4 * width, width)).cuda()
        opt = lib.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        x, y = lib.randn(batch, width, device="cuda"), lib.randn(batch, width, device="cuda")

        def step():
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
        return step
    return make


ROWS = [
    ("matmul 4096² float32", matmul(4096, "float32"), lambda s: 2 * 4096**3 / s / 1e12, "TFLOP/s"),
    ("matmul 8192² bfloat16", matmul(8192, "bfloat16"), lambda s: 2 * 8192**3 / s / 1e12, "TFLOP/s"),
    ("add 64M float32", add(1 << 26), lambda s: 3 * 4 * (1 << 26) / s / 1e9, "GB/s"),
    ("add 1K float32 (per-op overhead)", add(1 << 10), None, ""),
    ("sum 8192×8192 over rows (dim 1)", reduce_sum(8192, 8192, 1), lambda s: 4 * 8192**2 / s / 1e9, "GB/s"),
    ("sum 8192×8192 over columns (dim 0)", reduce_sum(8192, 8192, 0), lambda s: 4 * 8192**2 / s / 1e9, "GB/s"),
    ("softmax 8192×4096", softmax(8192, 4096), lambda s: 2 * 4 * 8192 * 4096 / s / 1e9, "GB/s"),
    ("MLP step 1024-4096-1024, batch 512 (SGD)", mlp_step(512, 1024), None, ""),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    lines = [f"GPU: {torch.cuda.get_device_name(0)}; torch {torch.__version__}", "",
             "| workload | Kindle | torch | Kindle / torch |", "|---|---|---|---|"]
    for name, make, rate, unit in ROWS:
        try:
            k, t = side_by_side(make)
        except Exception as e:  # noqa: BLE001  (a row Kindle cannot run yet says why)
            lines.append(f"| {name} | {type(e).__name__}: {str(e)[:80]} | | |")
            print(lines[-1], flush=True)
            continue
        fmt = (lambda s: f"{s * 1e3:.3f} ms" + (f" ({rate(s):.1f} {unit})" if rate else ""))
        lines.append(f"| {name} | {fmt(k)} | {fmt(t)} | {k / t:.2f} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
