"""Recurrent layers on packed batches, Kindle against PyTorch in one process (interleaved,
medians): pack_sequence of 32 sequences of random lengths 10-50, a 2-layer LSTM (64 -> 128) and a
GRU, forward and forward+backward, outputs checked against each other (padded, in the batch's
order: the two libraries may order sequences of equal length differently when packing). The packing and the
per-length recurrence are the core's (csrc/nn/packed.cpp), as for the C++ front end.

    python benchmarks/bench_packed.py [--threads 1,2] [--reps 9]
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


def setup(lib, cls, seqs, state):
    layer = getattr(lib.nn, cls)(64, 128, num_layers=2)
    layer.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    xs = [lib.tensor(s, requires_grad=True) for s in seqs]
    return layer, xs


def step(lib, layer, xs, backward):
    packed = lib.nn.utils.rnn.pack_sequence(xs, enforce_sorted=False)
    t0 = time.perf_counter()
    if backward:
        out, _ = layer(packed)
        out.data.sum().backward()
    else:
        with lib.no_grad():
            out, _ = layer(packed)
    dt = time.perf_counter() - t0
    return dt, lib.nn.utils.rnn.pad_packed_sequence(out)[0]  # in the batch's order (ties sort either way)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", default="1,2")
    p.add_argument("--reps", type=int, default=9)
    a = p.parse_args(argv)
    if torch is None:
        print("torch is not installed: nothing to compare with")
        return
    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((int(n), 64)).astype(np.float32) for n in rng.integers(10, 51, 32)]
    print("thr  workload                              kindle      torch    k/t   max |diff|")
    for th in (int(t) for t in a.threads.split(",")):
        kindle.set_num_threads(th)
        torch.set_num_threads(th)
        for cls in ("LSTM", "GRU"):
            ref = getattr(torch.nn, cls)(64, 128, num_layers=2)
            state = {k: v.detach().numpy() for k, v in ref.state_dict().items()}
            for backward in (False, True):
                times = {"kindle": [], "torch": []}
                for _ in range(a.reps):
                    for lib in (kindle, torch):
                        layer, xs = setup(lib, cls, seqs, state)
                        dt, out = step(lib, layer, xs, backward)
                        times[lib.__name__].append(dt)
                        outs = out if lib is torch else None
                        if lib is kindle:
                            kout = out
                diff = float(np.abs(kout.detach().numpy() - outs.detach().numpy()).max())
                mk, mt = statistics.median(times["kindle"]), statistics.median(times["torch"])
                name = f"{cls} packed, {'fwd+bwd' if backward else 'forward'}"
                print(f"{th:>3}  {name:<36} {mk * 1e3:7.2f} ms {mt * 1e3:7.2f} ms  {mk / mt:5.2f}   {diff:.1e}")


if __name__ == "__main__":
    main()
