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


def test_one_profile_at_a_time():
    with profile():
        with pytest.raises(RuntimeError, match="already running"):
            profile().start()
