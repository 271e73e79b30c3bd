"""kindle.profiler: the events recorded match what ran (names, counts, nesting, shapes, memory),
the schedule and trace handlers behave as torch.profiler's, traces are valid Chrome JSON."""
import json
import os

import pytest

import kindle
from kindle.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Conv2d(1, 4, 3), lib.nn.ReLU(), lib.nn.Flatten(), lib.nn.Linear(4 * 6 * 6, 10))


def _counts(prof):
    return {e.key: e.count for e in prof.key_averages()}


def test_events_match_what_ran():
    a, b = kindle.ones(3), kindle.ones(3)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            a + b
        a.mul(b).relu()
    c = _counts(prof)
    assert c["aten::add"] == 3 and c["aten::mul"] == 1 and c["aten::relu"] == 1
    assert all(e.cpu_time_total >= 0 for e in prof.events())
    # nothing is recorded outside the profile
    a + b
    assert _counts(prof)["aten::add"] == 3


def test_backward_nodes_and_nesting():
    x = kindle.randn(4, 8, requires_grad=True)
    m = kindle.nn.Linear(8, 3)
    with profile() as prof:
        with record_function("forward"):
            y = m(x).relu().sum()
        y.backward()
    events = prof.events()
    fwd = [e for e in events if e.name == "forward"][0]
    children = {c.name for c in fwd.cpu_children}
    assert {"aten::linear", "aten::relu", "aten::sum"} <= children
    assert fwd.self_cpu_time_total == pytest.approx(fwd.cpu_time_total - sum(c.cpu_time_total for c in fwd.cpu_children))
    names = {e.name for e in events if e.kind == "backward"}
    assert {"SumBackward0", "ReluBackward0", "AddmmBackward0", "AccumulateGrad"} <= names
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
    lines = table.splitlines()
    assert "Self CPU %" in lines[1] and "# of Calls" in lines[1] and lines[-1].startswith("Self CPU time total")
    assert len([ln for ln in lines if ln and not ln.startswith("-")]) == 1 + 5 + 1


def test_same_op_names_as_torch():
    torch = pytest.importorskip("torch")

    def run(lib, prof_cls):
        m = _model(lib)
        x = lib.randn(2, 1, 8, 8)
        with prof_cls() as p:
            lib.nn.functional.cross_entropy(m(x), lib.tensor([1, 2])).backward()
        return _counts(p)
    k, t = run(kindle, profile), run(torch, torch.profiler.profile)
    ops = {n for n in k if n.startswith("aten::")}
    assert ops == {"aten::conv2d", "aten::relu", "aten::flatten", "aten::linear", "aten::cross_entropy_loss"}
    for n in ops:  # every op Kindle records torch records too, as many times
        assert t.get(n) == k[n], (n, k[n], t.get(n))
    assert {"ConvolutionBackward0", "AddmmBackward0", "ReluBackward0"} <= set(k) & set(t)


def test_record_shapes_and_memory():
    x = kindle.randn(4, 8)
    w, b = kindle.randn(16, 8), kindle.randn(16)
    with profile(record_shapes=True, profile_memory=True) as prof:
        kindle.nn.functional.linear(x, w, b)
        kindle.empty(256, 1024)  # 1 MiB
    lin = [e for e in prof.events() if e.name == "aten::linear"][0]
    assert lin.input_shapes == [[4, 8], [16, 8], [16]]
    assert lin.cpu_memory_usage == 4 * 16 * 4
    emp = [e for e in prof.events() if e.name == "aten::empty"][0]
    assert emp.cpu_memory_usage == 1 << 20
    grouped = prof.key_averages(group_by_input_shape=True)
    assert any(r.key == "aten::linear" and r.input_shapes == [[4, 8], [16, 8], [16]] for r in grouped)
    assert "Input Shapes" in grouped.table() and "CPU Mem" in grouped.table()
    with pytest.raises(RuntimeError, match="record_shapes"):
        profile().key_averages(group_by_input_shape=True)


def test_schedule_and_trace_handler(tmp_path):
    sched = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [sched(i) for i in range(6)] == [ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
                                            ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE, ProfilerAction.NONE]
    traces = []
    handler = kindle.profiler.tensorboard_trace_handler(str(tmp_path), worker_name="w")
    with profile(schedule=sched, on_trace_ready=lambda p: (traces.append(_counts(p)), handler(p))) as prof:
        for step in range(6):
            with record_function(f"step{step}"):
                kindle.ones(2) + 1
            prof.step()
    assert len(traces) == 1
    assert {k for k in traces[0] if k.startswith("step")} == {"step2", "step3"}
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].startswith("w.") and files[0].endswith(".pt.trace.json")
    _check_trace(json.load(open(tmp_path / files[0])))


def _check_trace(trace):
    """Chrome's trace event format, as chrome://tracing and Perfetto read it."""
    assert isinstance(trace["traceEvents"], list) and trace["traceEvents"]
    for ev in trace["traceEvents"]:
        assert ev["ph"] in ("X", "M") and isinstance(ev["name"], str) and isinstance(ev["pid"], int)
        if ev["ph"] == "X":
            assert isinstance(ev["ts"], (int, float)) and ev["dur"] >= 0 and isinstance(ev["tid"], int)


def test_chrome_trace_and_stacks(tmp_path):
    with profile(record_shapes=True, with_stack=True) as prof:
        kindle.ones(2, 3).sum()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.load(open(path))
    _check_trace(trace)
    s = [e for e in trace["traceEvents"] if e["name"] == "aten::sum"][0]
    assert s["args"]["Input Dims"][0] == [2, 3] and s["cat"] == "cpu_op"
    prof.export_stacks(str(tmp_path / "stacks.txt"))
    lines = open(tmp_path / "stacks.txt").read().splitlines()
    assert any("test_chrome_trace_and_stacks" in ln and ln.rsplit(" ", 1)[0].endswith("aten::sum") for ln in lines)


def test_record_function_decorator_and_legacy_api():
    @record_function("helper")
    def helper(t):
        return t * 2

    helper(kindle.ones(1))  # no profile running: nothing happens
    with kindle.autograd.profiler.profile(record_shapes=True) as prof:
        helper(kindle.ones(1))
        helper(kindle.ones(1))
    c = _counts(prof)
    assert c["helper"] == 2 and c["aten::mul"] == 2
    assert "helper" in prof.key_averages().table()
    assert len(prof.function_events) == 6  # ones, helper and its mul, twice
    with kindle.autograd.profiler.profile(enabled=False) as off:
        kindle.ones(1) + 1
    assert len(off.function_events) == 0


def test_nested_profile_takes_the_session_over():
    # torch: the inner profile records from its start to its stop, the outer ends up empty
    with profile() as outer:
        kindle.ones(2) * 2
        with profile() as inner:
            kindle.ones(2) + 1
        kindle.ones(2) - 1
    assert len(outer.events()) == 0
    assert "aten::add" in _counts(inner) and "aten::mul" not in _counts(inner)
    with profile() as again:  # the session was released
        kindle.ones(2) + 1
    assert "aten::add" in _counts(again)


def _flop_workload(lib):
    lib.manual_seed(0)
    a, b = lib.randn(8, 1), lib.randn(1, 4)
    x, w = lib.randn(2, 4, 10, 10), lib.randn(6, 2, 3, 3)
    a * b
    a + b
    b.mul_(3)  # in-place ops are not counted (torch's rule)
    lib.nn.functional.conv2d(x, w, groups=2, stride=2, padding=1)
    lib.nn.functional.conv2d(x, lib.randn(6, 4, 3, 3), dilation=2)
    lib.bmm(lib.randn(3, 4, 5), lib.randn(3, 5, 6))
    lib.baddbmm(lib.randn(3, 4, 6), lib.randn(3, 4, 5), lib.randn(3, 5, 6))
    lib.mm(lib.randn(4, 5), lib.randn(5, 6))
    lib.addmm(lib.randn(6), lib.randn(4, 5), lib.randn(5, 6))


def test_flops_match_torch():
    torch = pytest.importorskip("torch")

    def flops(lib, prof_cls, work):
        with prof_cls(with_flops=True) as p:
            work(lib)
        per_op = {}
        for e in p.events():
            if e.flops:
                per_op.setdefault(e.name, []).append(e.flops)
        return per_op, p
    k, kp = flops(kindle, profile, _flop_workload)
    t, tp = flops(torch, torch.profiler.profile, _flop_workload)
    assert k == t and set(k) == {"aten::mul", "aten::add", "aten::conv2d", "aten::bmm", "aten::baddbmm",
                                 "aten::mm", "aten::addmm"}
    header = kp.key_averages().table().splitlines()[1]
    assert header.split()[-2:] == tp.key_averages().table().splitlines()[1].split()[-2:] == ["Total", "FLOPs"]
    # a model's total: Kindle counts linear where torch counts the addmm inside it
    def model_step(lib):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(16, 32), lib.nn.ReLU(), lib.nn.Linear(32, 4))
        m(lib.randn(8, 16)) @ lib.randn(4, 3)
    k, _ = flops(kindle, profile, model_step)
    t, _ = flops(torch, torch.profiler.profile, model_step)
    assert sum(map(sum, k.values())) == sum(map(sum, t.values())) == 2 * 8 * (16 * 32 + 32 * 4 + 4 * 3)
    with profile() as off:  # without with_flops nothing is counted and the column is absent
        _flop_workload(kindle)
    assert all(e.flops == 0 for e in off.events()) and "FLOPs" not in off.key_averages().table()


def test_with_modules_ranges(tmp_path):
    m = kindle.nn.Sequential(kindle.nn.Linear(4, 8), kindle.nn.ReLU(), kindle.nn.Linear(8, 2))
    with profile(with_modules=True) as prof:
        m(kindle.randn(3, 4))
        m(kindle.randn(3, 4))
    mods = [e for e in prof.events() if e.kind == "module"]
    assert [e.name for e in mods] == ["nn.Module: Sequential_0", "nn.Module: Linear_0", "nn.Module: ReLU_0",
                                      "nn.Module: Linear_1"] * 2
    ops = [e for e in prof.events() if e.name == "aten::linear"]
    lin0 = mods[1]  # the first Linear's range holds the first linear op
    assert lin0.time_range_start_ns <= ops[0].time_range_start_ns <= ops[0].time_range_end_ns <= lin0.time_range_end_ns
    assert ops[0].cpu_parent is None  # modules stay outside the op tree and out of key_averages
    assert not any(k.startswith("nn.Module") for k in _counts(prof))
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    trace = json.load(open(path))
    _check_trace(trace)
    assert sum(e.get("cat") == "python_function" for e in trace["traceEvents"]) == 8
    # the hooks are gone once the profile stops
    from kindle.nn.modules import module as nn_module
    assert not nn_module._global_forward_pre_hooks and not nn_module._global_forward_hooks
    with profile() as plain:
        m(kindle.randn(3, 4))
    assert not [e for e in plain.events() if e.kind == "module"]
