"""Vector math (the transcendental functions the kernels call on whole vectors: SLEEF, or glibc's
libmvec in a build without SLEEF), Kindle against PyTorch in one process, interleaved, medians:
each function over 1M float32 (and float64) values in its usual domain, outputs checked against
each other. `kindle.__config__.show()` names the library this build uses.

    python benchmarks/bench_vector_math.py [--threads 1,2] [--reps 15] [--size 1048576]
"""
import argparse
import statistics
import time

import numpy as np

import kindle

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

# name, domain, unary (or binary: the second operand's domain)
FUNCTIONS = [
    ("exp", (-80, 80)), ("exp2", (-100, 100)), ("expm1", (-10, 10)), ("log", (1e-3, 1e3)),
    ("log2", (1e-3, 1e3)), ("log10", (1e-3, 1e3)), ("log1p", (-0.9, 1e3)), ("sin", (-100, 100)),
    ("cos", (-100, 100)), ("tan", (-1.5, 1.5)), ("asin", (-1, 1)), ("acos", (-1, 1)), ("atan", (-100, 100)),
    ("sinh", (-80, 80)), ("cosh", (-80, 80)), ("tanh", (-10, 10)), ("erf", (-5, 5)), ("sigmoid", (-20, 20)),
    ("gelu", (-6, 6)), ("silu", (-20, 20)), ("pow", (1e-3, 10), (-4, 4)), ("atan2", (-10, 10), (-10, 10)), ("hypot", (-10, 10), (-10, 10)),
]


def function(lib, name):
    """lib.<name>, or lib.nn.functional.<name> (gelu, silu)."""
    return getattr(lib, name, None) or getattr(lib.nn.functional, name)


def timed(fn, args):
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", default="1,2")
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--size", type=int, default=1 << 20)
    p.add_argument("--dtypes", default="float32,float64")
    a = p.parse_args(argv)
    if torch is None:
        print("torch is not installed: nothing to compare with")
        return
    config = getattr(kindle, "__config__", None)  # (older builds: none)
    print(config.show().strip() if config else "kindle (no __config__: an older build)")
    rng = np.random.default_rng(0)
    print("thr  dtype    function     kindle ms   torch ms    k/t   max rel diff")
    for th in (int(t) for t in a.threads.split(",")):
        kindle.set_num_threads(th)
        torch.set_num_threads(th)
        for dt in a.dtypes.split(","):
            for spec in FUNCTIONS:
                name = spec[0]
                arrays = [rng.uniform(lo, hi, a.size).astype(dt) for lo, hi in spec[1:]]
                kargs = [kindle.from_numpy(x) for x in arrays]
                targs = [torch.from_numpy(x) for x in arrays]
                kf, tf = function(kindle, name), function(torch, name)
                kt, tt = [], []
                for _ in range(a.reps):  # interleaved: A B A B
                    d, kout = timed(kf, kargs)
                    kt.append(d)
                    d, tout = timed(tf, targs)
                    tt.append(d)
                km, tm = statistics.median(kt), statistics.median(tt)
                ref = tout.numpy().astype(np.float64)
                diff = np.abs(kout.numpy().astype(np.float64) - ref) / np.maximum(np.abs(ref), 1e-30)
                print(f"{th:>3}  {dt:<8} {name:<10} {km * 1e3:>10.3f} {tm * 1e3:>10.3f} {km / tm:>6.2f}   "
                      f"{np.nanmax(diff):.1e}")


if __name__ == "__main__":
    main()
