#!/usr/bin/env python3
"""kindle.linalg, kindle.special, kindle.distributions, kindle.fft and complex arithmetic against torch, side by side (A B A B)
in one process.

    python benchmarks/bench_scientific.py            # the sizes of issue 16
    python benchmarks/bench_scientific.py --quick    # seconds; checks the script, not speed

Each row times one call on identical float32 inputs (float64 where noted), reports the median
of each library over the repetitions and the ratio kindle/torch (below 1: Kindle is faster),
at 1 and 2 threads, and checks that both computed the same thing (the largest difference
between results, on a sign-free invariant for the decompositions).
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import numpy as np  # noqa: E402
import kindle  # noqa: E402
import torch  # noqa: E402


def _spd(n, batch=()):
    a = np.random.default_rng(0).standard_normal(batch + (n, n)).astype(np.float32)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=np.float32)


def _mat(n, batch=(), seed=1):
    return np.random.default_rng(seed).standard_normal(batch + (n, n)).astype(np.float32)


def workloads(quick):
    sizes = (64, 128) if quick else (256, 512, 1024)
    out = []
    for n in sizes:
        out += [
            (f"linalg.solve {n}x{n}", lambda L, d: L.linalg.solve(d[0], d[1]), (_mat(n) + n * np.eye(n, dtype=np.float32), _mat(n, seed=2)), None),
            (f"linalg.cholesky {n}x{n}", lambda L, d: L.linalg.cholesky(d[0]), (_spd(n),), None),
            (f"linalg.svd {n}x{n}", lambda L, d: L.linalg.svdvals(d[0]), (_mat(n),), None),
            (f"linalg.eigh {n}x{n}", lambda L, d: L.linalg.eigvalsh(d[0]), (_spd(n),), None),
        ]
    b = 8 if quick else 256
    out += [
        (f"linalg.solve {b}x64x64", lambda L, d: L.linalg.solve(d[0], d[1]), (_mat(64, (b,)) + 64 * np.eye(64, dtype=np.float32), _mat(64, (b,), 2)), None),
        (f"linalg.cholesky {b}x64x64", lambda L, d: L.linalg.cholesky(d[0]), (_spd(64, (b,)),), None),
        (f"linalg.svd {b}x64x64", lambda L, d: L.linalg.svdvals(d[0]), (_mat(64, (b,)),), None),
        (f"linalg.eigh {b}x64x64", lambda L, d: L.linalg.eigvalsh(d[0]), (_spd(64, (b,)),), None),
        (f"linalg.det {b}x64x64", lambda L, d: L.linalg.slogdet(d[0]).logabsdet, (_mat(64, (b,)),), None),
    ]
    m = 10**5 if quick else 10**6
    x = np.random.default_rng(3).standard_normal(m).astype(np.float32)
    out += [
        (f"special.lgamma {m // 1000}k", lambda L, d: L.lgamma(d[0]), (np.abs(x) + 0.1,), None),
        (f"special.digamma {m // 1000}k", lambda L, d: L.digamma(d[0]), (np.abs(x) + 0.1,), None),
        (f"special.i0e {m // 1000}k", lambda L, d: L.special.i0e(d[0]), (x,), None),
        (f"special.ndtri {m // 1000}k", lambda L, d: L.special.ndtri(d[0]), (np.abs(x) % 1,), None),
        (f"Normal log_prob + rsample {m // 1000}k",
         lambda L, d: L.distributions.Normal(d[0], d[1]).log_prob(L.distributions.Normal(d[0], d[1]).rsample()),
         (x, np.abs(x) + 0.5), "stat"),
    ]
    rng = np.random.default_rng(5)
    n1 = 1 << (14 if quick else 20)
    n2 = 128 if quick else 1024
    c1 = (rng.standard_normal(n1) + 1j * rng.standard_normal(n1)).astype(np.complex64)
    c2 = (rng.standard_normal((n2, n2)) + 1j * rng.standard_normal((n2, n2))).astype(np.complex64)
    r1 = rng.standard_normal(n1).astype(np.float32)
    r2 = rng.standard_normal((n2, n2)).astype(np.float32)
    cm = (rng.standard_normal((n2 // 2, n2 // 2)) + 1j * rng.standard_normal((n2 // 2, n2 // 2))).astype(np.complex64)
    out += [
        (f"fft.fft complex64 2^{n1.bit_length() - 1}", lambda L, d: L.fft.fft(d[0]), (c1,), None),
        (f"fft.ifft complex64 2^{n1.bit_length() - 1}", lambda L, d: L.fft.ifft(d[0]), (c1,), None),
        (f"fft.fft2 complex64 {n2}x{n2}", lambda L, d: L.fft.fft2(d[0]), (c2,), None),
        (f"fft.rfft float32 2^{n1.bit_length() - 1}", lambda L, d: L.fft.rfft(d[0]), (r1,), None),
        (f"fft.rfft2 float32 {n2}x{n2}", lambda L, d: L.fft.rfft2(d[0]), (r2,), None),
        (f"fft.irfft2 {n2}x{n2 // 2 + 1}", lambda L, d: L.fft.irfft2(d[0][:, : n2 // 2 + 1]), (c2,), None),
        (f"complex64 mul 2^{n1.bit_length() - 1}", lambda L, d: d[0] * d[0], (c1,), None),
        (f"complex64 exp 2^{n1.bit_length() - 1}", lambda L, d: d[0].exp(), (c1,), None),
        (f"complex64 abs 2^{n1.bit_length() - 1}", lambda L, d: d[0].abs(), (c1,), None),
        (f"complex64 sum 2^{n1.bit_length() - 1}", lambda L, d: d[0].sum(), (c1,), None),
        (f"complex64 matmul {n2 // 2}x{n2 // 2}", lambda L, d: d[0] @ d[0], (cm,), None),
        # Kindle's conj copies; torch's sets a bit (a view): torch's row is resolve_conj's copy
        (f"complex64 conj (copy) 2^{n1.bit_length() - 1}", lambda L, d: d[0].conj().resolve_conj(), (c1,), None),
    ]
    return out


def _invariant(r):
    r = r.detach().resolve_conj().numpy() if hasattr(r, "detach") else r
    return np.asarray(r, dtype=np.complex128 if np.iscomplexobj(r) else np.float64)


def run(reps, threads, quick, name_filter=""):
    rows = []
    for name, fn, data, check in workloads(quick):
        if name_filter not in name:
            continue
        kd = tuple(kindle.tensor(a) for a in data)
        td = tuple(torch.tensor(a) for a in data)
        kt, tt = [], []
        fn(kindle, kd), fn(torch, td)  # warm-up (allocator, MKL's first call)
        for r in range(reps):
            order = ((kindle, kd, kt), (torch, td, tt)) if r % 2 == 0 else ((torch, td, tt), (kindle, kd, kt))
            for lib, d, times in order:
                t0 = time.perf_counter()
                out = fn(lib, d)
                times.append(time.perf_counter() - t0)
                if lib is kindle:
                    k_out = _invariant(out)
                else:
                    t_out = _invariant(out)
        if check == "stat":  # random draws: compare the mean log-density instead of values
            diff = abs(k_out.mean() - t_out.mean())
        else:
            diff = float(np.nanmax(np.abs(k_out - t_out) / (1 + np.abs(t_out))))
        km, tm = statistics.median(kt), statistics.median(tt)
        rows.append((name, threads, km, tm, km / tm, diff))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--filter", default="", help="only the workloads whose name contains this")
    args = ap.parse_args()
    reps = 2 if args.quick else args.reps
    print(f"kindle vs torch {torch.__version__}, {reps} reps each, medians")
    print(f"{'workload':34s} {'threads':>7s} {'kindle ms':>10s} {'torch ms':>10s} {'k/t':>6s}  rel diff")
    for threads in (1, 2):
        kindle.set_num_threads(threads)
        torch.set_num_threads(threads)
        for name, th, km, tm, ratio, diff in run(reps, threads, args.quick, args.filter):
            print(f"{name:34s} {th:7d} {km * 1e3:10.3f} {tm * 1e3:10.3f} {ratio:6.2f}  {diff:.1e}", flush=True)


if __name__ == "__main__":
    main()
