"""Smoke test of benchmarks/bench_e2e.py: every workload's model runs two steps at tiny sizes on
Kindle (and, where torch is installed, from torch's weights to the same losses), so the benchmark
cannot rot while the library changes under it."""
import json
import math
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import kindle

BENCH_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")
sys.path.insert(0, os.path.abspath(BENCH_DIR))
import bench_e2e  # noqa: E402

NAMES = list(bench_e2e.WORKLOADS)


def tiny_batches(wl, n=2):
    return wl.data(np.random.default_rng(0), wl.tiny, n)


@pytest.mark.parametrize("name", NAMES)
def test_workload_runs_on_kindle(name):
    wl = bench_e2e.WORKLOADS[name]
    assert not bench_e2e.missing_features(kindle, wl), "kindle lacks what the workload needs"
    kindle.manual_seed(0)
    r = bench_e2e.Runner(kindle, wl, wl.tiny, tiny_batches(wl))
    before = [p.detach().clone() for p in r.model.parameters()]
    outs = [bench_e2e.value_of(r.step()) for _ in range(2)]
    if wl.inference:
        assert not r.model.training
        for out in outs:
            assert out.shape == (wl.tiny["batch"], wl.tiny["classes"]) and np.isfinite(out).all()
        assert all(kindle.equal(a, p) for a, p in zip(before, r.model.parameters()))
    else:
        assert all(math.isfinite(v) and v > 0 for v in outs)
        # the optimizer stepped: every parameter with a gradient moved
        moved = [not kindle.equal(a, p) for a, p in zip(before, r.model.parameters())]
        assert all(moved)


@pytest.mark.parametrize("name", NAMES)
def test_workload_matches_torch(name):
    torch = pytest.importorskip("torch")
    wl = bench_e2e.WORKLOADS[name]
    runners = bench_e2e.make_pair(wl, wl.tiny, torch, kindle, n_batches=2)
    # the copied weights are torch's, bit for bit
    t_state = runners["torch"].model.state_dict()
    for key, value in runners["kindle"].model.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), t_state[key].numpy(), err_msg=key)
    _, values = bench_e2e.timed_steps(runners, warmup=0, steps=2, budget_s=0, max_steps=2)
    assert len(values["kindle"]) == len(values["torch"]) == 2
    for k, t in zip(values["kindle"], values["torch"]):
        np.testing.assert_allclose(k, t, rtol=1e-4, atol=1e-6)
    text, ok = bench_e2e.compare_float32(wl, values)
    assert ok, text
    # float64: the same two steps agree to rounding of float64
    text, ok = bench_e2e.float64_check(wl, torch, kindle, steps=2, sizes=wl.tiny)
    assert ok, text
    assert float(text.split()[-1]) <= 1e-9


def test_comparisons_flag_a_mismatch():
    wl = bench_e2e.WORKLOADS["mlp"]
    assert bench_e2e.compare_float32(wl, {"kindle": [2.3, 2.0], "torch": [2.3, 1.9]})[1]  # drift is shown
    assert not bench_e2e.compare_float32(wl, {"kindle": [2.31, 2.0], "torch": [2.3, 2.0]})[1]
    assert not bench_e2e.compare_float32(wl, {"kindle": [2.3, float("nan")], "torch": [2.3, 2.0]})[1]
    inf = bench_e2e.WORKLOADS["mlp_infer"]
    a = np.ones((1, 10), np.float32)
    assert not bench_e2e.compare_float32(inf, {"kindle": [a, a], "torch": [a, 2 * a]})[1]
    assert bench_e2e.max_rel_diff({"kindle": [1.0, 2.0], "torch": [1.0, 2.0 + 2e-9]}) == pytest.approx(1e-9)
    assert bench_e2e.max_rel_diff({"kindle": [float("nan")], "torch": [1.0]}) == float("inf")


def test_missing_features_names_the_attribute():
    wl = bench_e2e.WORKLOADS["lstm"]

    fake = types.SimpleNamespace(__name__="kindle", nn=types.SimpleNamespace())
    assert bench_e2e.missing_features(fake, wl) == ["kindle.nn.LSTM"]


def test_memory_child_reports_peak_rss():
    # a fresh process holding kindle only: the peak includes the workload, never torch
    script = os.path.join(BENCH_DIR, "bench_e2e.py")
    p = subprocess.run([sys.executable, script, "--memory-child", "mlp_infer", "kindle", "--threads", "1",
                        "--steps", "2"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["peak_kb"] >= res["base_kb"] > 0


def test_cli_writes_the_table(tmp_path):
    # In a child process: the CLI sets both libraries' thread counts, and torch's MKL, once its
    # count was set and OpenMP's changed under it, hangs in a later batched LU (seen on Intel CPUs).
    pytest.importorskip("torch")
    out = tmp_path / "results.md"
    p = subprocess.run([sys.executable, bench_e2e.__file__, "--quick", "--no-memory", "--workloads", "mlp_infer",
                        "--threads", "1", "--markdown", str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert "--workloads mlp_infer" in text and "MLP inference, batch 1" in text
    assert "**MISMATCH**" not in text


def test_cli_rejects_unknown_workload():
    with pytest.raises(SystemExit):
        bench_e2e.main(["--workloads", "mlp,nope"])


def test_fmt_time_picks_the_unit_after_rounding():
    assert [bench_e2e.fmt_time(x) for x in (0.9996, 0.0123, 2e-7)] == ["1 s", "12.3 ms", "200 ns"]
