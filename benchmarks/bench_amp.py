#!/usr/bin/env python3
"""CPU mixed precision (issue 21): a training step (forward + backward + SGD) of an MLP and of a
CIFAR ResNet-18 in float32 and under `autocast(device_type="cpu", dtype=bfloat16)`, Kindle beside
torch, interleaved (A B A B) in one process, at 1 and 2 threads.

    python benchmarks/bench_amp.py [--quick] [--threads 1,2]
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
sys.path.insert(0, HERE)

import kindle  # noqa: E402
import torch  # noqa: E402
from bench_distributed import timed  # noqa: E402
from bench_e2e import make_mlp, make_resnet  # noqa: E402

WORKLOADS = {
    "mlp": (make_mlp, {"features": 784, "hidden": 1024, "classes": 10, "batch": 128}, (784,)),
    "resnet18": (make_resnet, {"stem": 64, "widths": [64, 128, 256, 512], "blocks": [2, 2, 2, 2], "classes": 10,
                               "batch": 8, "side": 32}, (3, 32, 32)),
}


def runner(lib, name, amp):
    make, s, shape = WORKLOADS[name]
    lib.manual_seed(0)
    model = make(lib, s)
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((s["batch"],) + shape).astype(np.float32))
    y = lib.from_numpy(rng.integers(0, s["classes"], s["batch"]).astype(np.int64))

    def step():
        opt.zero_grad()
        with lib.autocast(device_type="cpu", dtype=lib.bfloat16, enabled=amp):
            loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", default="1,2")
    args = ap.parse_args()
    print("| workload | threads | precision | Kindle step | torch step | Kindle / torch |")
    print("|---|---:|---|---:|---:|---:|")
    for threads in [int(t) for t in args.threads.split(",")]:
        kindle.set_num_threads(threads)
        torch.set_num_threads(threads)
        for name in WORKLOADS:
            for amp in (False, True):
                k, t = runner(kindle, name, amp), runner(torch, name, amp)
                reps = 3 if args.quick else (10 if name == "resnet18" else 30)
                ks, ts = [], []
                for _ in range(3):
                    ks.append(timed(k, reps))
                    ts.append(timed(t, reps))
                kt, tt = min(ks), min(ts)
                print(f"| {name} | {threads} | {'bf16 autocast' if amp else 'float32'} | {kt * 1e3:.1f} ms | "
                      f"{tt * 1e3:.1f} ms | {kt / tt:.2f} |", flush=True)


if __name__ == "__main__":
    main()
