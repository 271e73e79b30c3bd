"""LBFGS steps, Kindle against PyTorch in one process (interleaved, medians): a small MLP
regression (float64, the closure's forward and backward included), with and without the
strong-Wolfe line search. The loop, the two-loop recursion and the line search run in C++
(csrc/optim/lbfgs.cpp); the closure's model runs in each library.

    python benchmarks/bench_lbfgs.py [--threads 1,2] [--reps 9]
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


def problem(lib, seed=0):
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.standard_normal((256, 16)))
    y = lib.tensor(rng.standard_normal((256, 1)))
    w1 = lib.tensor(rng.standard_normal((16, 32)) * 0.3).requires_grad_()
    w2 = lib.tensor(rng.standard_normal((32, 1)) * 0.3).requires_grad_()
    return x, y, [w1, w2]


def run(lib, mod, line_search, steps=3, optimizer=None):
    x, y, params = problem(lib)
    kwargs = {"lr": 1.0, "max_iter": 20, "history_size": 10}
    if line_search:
        kwargs["line_search_fn"] = "strong_wolfe"
    opt = (optimizer or mod.LBFGS)(params, **kwargs)

    def closure():
        opt.zero_grad()
        loss = ((lib.tanh(x @ params[0]) @ params[1] - y) ** 2).mean()
        loss.backward()
        return loss

    t0 = time.perf_counter()
    for _ in range(steps):
        opt.step(closure)
    return time.perf_counter() - t0, float(closure().detach())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", default="1,2")
    p.add_argument("--reps", type=int, default=9)
    a = p.parse_args(argv)
    if torch is None:
        print("torch is not installed: nothing to compare with")
        return
    print("thr  workload                                   kindle     torch    k/t   final loss k / t")
    for th in (int(t) for t in a.threads.split(",")):
        kindle.set_num_threads(th)
        torch.set_num_threads(th)
        for ls in (False, True):
            times = {"kindle": [], "torch": []}
            for _ in range(a.reps):
                tk, lk = run(kindle, kindle.optim, ls)
                tt, lt = run(torch, torch.optim, ls)
                times["kindle"].append(tk)
                times["torch"].append(tt)
            mk, mt = statistics.median(times["kindle"]), statistics.median(times["torch"])
            name = "LBFGS x3 steps, 20 iters" + (", strong_wolfe" if ls else "")
            print(f"{th:>3}  {name:<40} {mk * 1e3:7.1f} ms {mt * 1e3:7.1f} ms  {mk / mt:5.2f}   {lk:.6g} / {lt:.6g}")


if __name__ == "__main__":
    main()
