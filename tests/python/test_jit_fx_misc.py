"""kindle.jit.trace / kindle.fx dead-code elimination of in-place calls, kindle._assert and
placeholder names in fx graphs, kindle.compiler's compiling/exporting flags, and a set of smaller
torch names (func.replace_all_batch_norm_modules_, utils.deterministic, profiler.itt, nested
profiles, benchmark.Compare, load endianness, load/save exception types), each checked against
PyTorch where it is installed."""
import io
import pickle
import random
import re
import warnings
import zipfile

import pytest

import kindle
import kindle.fx as fx
import kindle.nn as nn
import kindle.nn.functional as F


def _torch():
    torch = pytest.importorskip("torch")
    if getattr(torch, "_is_kindle", False):
        pytest.skip("`torch` is Kindle in this process")
    return torch


def _np(t):
    return t.detach().numpy()


# ---- 1. in-place statements survive kindle.jit.trace's dead-code elimination

def _inplace_model(lib, stmt):
    """One forward with an in-place statement whose result is unused, for kindle or torch."""
    lnn, lF = lib.nn, lib.nn.functional

    class M(lnn.Module):
        def __init__(self):
            super().__init__()
            self.act = lnn.ReLU(inplace=True)
            self.drop = lnn.Dropout(0.5, inplace=True)

        def forward(self, x):
            y = x * 2 - 1
            if stmt == "F.relu(inplace=True)":
                lF.relu(y, inplace=True)
            elif stmt == "F.relu(y, True)":
                lF.relu(y, True)
            elif stmt == "F.leaky_relu(inplace=True)":
                lF.leaky_relu(y, 0.2, inplace=True)
            elif stmt == "relu_":
                lib.relu_(y)
            elif stmt == "F.relu_":
                lF.relu_(y)
            elif stmt == "clamp_":
                y.clamp_(0, 1)
            elif stmt == "setitem":
                y[0] = 1
            elif stmt == "setitem_slice":
                y[:, 1:] = x[:, 1:] * 10
            elif stmt == "copy_":
                y.copy_(x)
            elif stmt == "out=":
                lib.add(x, x, out=y)
            elif stmt == "iadd_view":
                v = y[0]
                v += 5
            elif stmt == "isub_view":
                v = y[:, 0]
                v -= x[:, 0]
            elif stmt == "imul_view":
                v = y[1]
                v *= 3
            elif stmt == "ReLU(inplace=True)":
                self.act(y)
            elif stmt == "Dropout(inplace=True).eval":
                self.drop(y)
            elif stmt == "init.zeros_":
                lnn.init.zeros_(y)
            elif stmt == "init.constant_":
                lnn.init.constant_(y, 0.25)
            elif stmt == "add_":
                y.add_(1)
            elif stmt == "masked_fill_":
                y.masked_fill_(x > 0, 0.0)
            return y

    return M().eval()


INPLACE_STATEMENTS = ["F.relu(inplace=True)", "F.relu(y, True)", "F.leaky_relu(inplace=True)", "relu_", "F.relu_",
                      "clamp_", "setitem", "setitem_slice", "copy_", "out=", "iadd_view", "isub_view", "imul_view",
                      "ReLU(inplace=True)", "Dropout(inplace=True).eval", "init.zeros_", "init.constant_", "add_",
                      "masked_fill_"]


@pytest.mark.parametrize("stmt", INPLACE_STATEMENTS)
def test_jit_trace_keeps_inplace_statements(stmt):
    kindle.manual_seed(0)
    model = _inplace_model(kindle, stmt)
    example = kindle.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", kindle.jit.TracerWarning)  # check_trace agrees with eager
        traced = kindle.jit.trace(model, (example,))
    x = kindle.randn(3, 4)  # not the example: the trace replays the in-place op
    expected = model(x)
    assert kindle.equal(traced(x), expected), traced.code
    # and the eager result is torch's
    try:
        torch = _torch()
    except pytest.skip.Exception:
        return
    tmodel = _inplace_model(torch, stmt)
    tx = torch.tensor(_np(x))
    assert torch.allclose(torch.tensor(_np(expected)), tmodel(tx))
    ttraced = torch.jit.trace(tmodel, (torch.tensor(_np(example)),), check_trace=False)
    assert torch.allclose(torch.tensor(_np(traced(x))), ttraced(tx))


def test_jit_trace_drops_what_only_python_looked_at():
    # dead-code elimination still removes values no operation needs (a branch condition)
    class M(nn.Module):
        def forward(self, x):
            if bool(x.sum() > -1e9):
                return x + 1
            return x - 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kindle.jit.TracerWarning)
        traced = kindle.jit.trace(M().eval(), (kindle.randn(2),))
    assert "sum" not in traced.code and "gt" not in traced.code


def _impure_targets(graph):
    return [n.name for n in graph.nodes if n.op not in ("placeholder", "output")]


def test_fx_dead_code_elimination_keeps_what_torch_fx_keeps():
    # torch.fx keeps torch._assert and random functions (and operator.setitem, which its Proxy
    # cannot record); Kindle too, plus in-place calls, and drops the rest as torch.fx does
    def build(lib):
        def f(x):
            lib.randn_like(x)
            lib._assert(x.dim() == 2, "two dims")
            x.sum()  # pure: dropped
            y = x * 1
            return y
        return f

    kgm = fx.symbolic_trace(build(kindle))
    assert kgm.graph.eliminate_dead_code()
    kgm.recompile()
    kept = _impure_targets(kgm.graph)
    assert "sum_1" not in kept and {"randn_like", "_assert"} <= set(kept)

    def with_setitem(x):
        y = x * 1
        y[0] = 0
        return y

    g = fx.symbolic_trace(with_setitem).graph
    assert not g.eliminate_dead_code() and "setitem" in _impure_targets(g)
    torch = _torch()
    tgm = torch.fx.symbolic_trace(build(torch))
    tgm.graph.eliminate_dead_code()
    assert kept == _impure_targets(tgm.graph)


def test_fx_dead_code_elimination_keeps_inplace_calls():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = nn.ReLU(inplace=True)
            self.pure = nn.ReLU()

        def forward(self, x):
            y = x - 0.5
            kindle.relu_(y)
            y.mul_(2)
            F.hardtanh(y, 0.0, 0.5, inplace=True)
            kindle.add(y, 1, out=y)
            self.act(y)
            self.pure(y)  # pure module call: dropped
            y.exp()  # pure method: dropped
            return y

    gm = fx.symbolic_trace(M())
    gm.graph.eliminate_dead_code()
    gm.recompile()
    names = _impure_targets(gm.graph)
    assert names == ["sub", "relu_", "mul_", "hardtanh", "add", "act"]
    x = kindle.randn(4, 5)
    assert kindle.equal(gm(x), M()(x))
    # Node.is_impure(impure_random=False) lets random calls go, as torch's does
    g = fx.symbolic_trace(lambda x: kindle.rand_like(x) * 0 + x).graph
    node = next(n for n in g.nodes if n.name == "rand_like")
    assert node.is_impure() and not node.is_impure(impure_random=False)


# ---- 2. kindle._assert in graphs and jit.save; placeholders named like torch's

def _assert_fn(lib):
    def f(x, input):
        y = x * 2
        lib._assert(x.dim() == 2, "x must be a matrix")
        return y + input
    return f


def test_symbolic_trace_records_assert_and_keeps_input_name():
    gm = fx.symbolic_trace(_assert_fn(kindle))
    x = kindle.randn(2, 3)
    assert kindle.equal(gm(x, input=x), x * 3)  # the parameter is still called `input`
    with pytest.raises(AssertionError, match="x must be a matrix"):
        gm(kindle.randn(3), kindle.randn(3))
    assert any(n.op == "call_function" and n.target is kindle._assert for n in gm.graph.nodes)
    assert "target=kindle._assert" in str(gm.graph)
    torch = _torch()
    tgm = torch.fx.symbolic_trace(_assert_fn(torch))
    assert gm.code == tgm.code.replace("torch.", "kindle.")
    assert [(n.op, n.name, n.target if n.op != "call_function" else None) for n in gm.graph.nodes] == \
        [(n.op, n.name, n.target if n.op != "call_function" else None) for n in tgm.graph.nodes]


def test_jit_save_and_load_a_graph_with_assert(tmp_path):
    class M(nn.Module):
        def forward(self, x):
            kindle._assert(x.shape[0] == 2, "batch of 2")
            return x + 1

    scripted = kindle.jit.script(M())
    path = tmp_path / "m.pt"
    kindle.jit.save(scripted, str(path))
    loaded = kindle.jit.load(str(path))
    x = kindle.randn(2, 3)
    assert kindle.equal(loaded(x), x + 1)
    with pytest.raises(AssertionError, match="batch of 2"):
        loaded(kindle.randn(3, 3))


def test_jit_trace_does_not_record_assert():
    # torch.jit.trace evaluates the condition on the example (a TracerWarning) and records nothing
    def f(x):
        kindle._assert(x.sum() > -1e9, "never")
        return x * 2

    with pytest.warns(kindle.jit.TracerWarning):
        traced = kindle.jit.trace(f, (kindle.randn(3),), check_trace=False)
    assert "_assert" not in traced.code


def test_graph_module_parameter_names():
    # a placeholder whose name is taken keeps its parameter name; *args keep their star
    g = fx.Graph()
    a = g.placeholder("input")
    b = g.placeholder("len")
    g.output(g.call_function(kindle.add, (a, b)))
    gm = fx.GraphModule(nn.Module(), g)
    assert "def forward(self, input, len):" in gm.code and "input_1 = input" in gm.code
    assert kindle.equal(gm(input=kindle.ones(2), len=kindle.ones(2)), kindle.full((2,), 2.0))


# ---- 3. kindle.compiler.is_compiling / is_exporting / _dynamo.is_compiling

def _flags(lib):
    return (lib.compiler.is_compiling(), lib.compiler.is_exporting(), lib.compiler.is_dynamo_compiling(),
            lib._dynamo.is_compiling())


def _flag_model(lib, seen):
    class M(lib.nn.Module):
        def forward(self, x):
            seen.append(_flags(lib))
            return x + 1
    return M()


# What torch 2.13 answers (is_compiling, is_exporting, is_dynamo_compiling, _dynamo.is_compiling):
# torch.compile runs the forward through dynamo; torch.export (strict or not) is compiling and
# exporting but not dynamo; torch.jit.trace and torch.fx.symbolic_trace set nothing.
EXPECTED_FLAGS = {"eager": (False, False, False, False), "jit.trace": (False, False, False, False),
                  "fx": (False, False, False, False), "export": (True, True, False, True),
                  "compile": (True, False, True, True)}


def _run_flag_case(lib, case, seen):
    m = _flag_model(lib, seen)
    x = lib.randn(2)
    if case == "eager":
        m(x)
    elif case == "jit.trace":
        lib.jit.trace(m, (x,), check_trace=False)
    elif case == "fx":
        lib.fx.symbolic_trace(m)
    elif case == "export":
        lib.export.export(m, (x,))
    elif case == "compile":
        lib.compile(m, backend="eager")(x)
    return seen[-1]


@pytest.mark.parametrize("case", sorted(EXPECTED_FLAGS))
def test_compiler_flags(case):
    import kindle._dynamo  # noqa: F401
    import kindle.export  # noqa: F401
    assert _run_flag_case(kindle, case, []) == EXPECTED_FLAGS[case]
    assert _flags(kindle) == (False, False, False, False)  # and nothing stays set
    if case != "compile":  # (torch.compile's dynamo is slow to start: its answer is in the table)
        torch = _torch()
        import torch._dynamo  # noqa: F401
        assert _run_flag_case(torch, case, []) == EXPECTED_FLAGS[case]


def test_compiler_flags_for_compiled_functions_and_fused_inference():
    seen = []
    m = _flag_model(kindle, seen).eval()
    with kindle.no_grad():
        kindle.compile(m)(kindle.randn(2))  # traced for the fused inference graph, then run
    assert seen and all(s == EXPECTED_FLAGS["compile"] for s in seen)
    assert kindle.compile(lambda: kindle.compiler.is_compiling())() is True
    assert kindle.compile(lambda: kindle.compiler.is_compiling(), disable=True)() is False
    seen.clear()
    kindle.compile(m, disable=True)(kindle.randn(2))
    assert seen == [EXPECTED_FLAGS["eager"]]

    def boom():
        assert kindle.compiler.is_compiling()
        raise ValueError("inside")

    with pytest.raises(ValueError):
        kindle.compile(boom)()
    assert not kindle.compiler.is_compiling()


# ---- 4. missing names

def _bn_model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3), lib.nn.BatchNorm2d(3),
                             lib.nn.Sequential(lib.nn.BatchNorm2d(3, affine=False)), lib.nn.ReLU())


def test_replace_all_batch_norm_modules_():
    model = _bn_model(kindle)
    assert kindle.func.replace_all_batch_norm_modules_(model) is model
    for bn in (model[1], model[2][0]):
        assert bn.running_mean is None and bn.running_var is None and bn.num_batches_tracked is None
        assert not bn.track_running_stats
    assert "1.running_mean" not in model.state_dict()
    bn = nn.BatchNorm1d(4)
    kindle.func.replace_all_batch_norm_modules_(bn)  # the root itself
    assert bn.running_mean is None
    model.eval()  # batch statistics even in eval mode now
    x = kindle.randn(4, 2, 6, 6)
    out = model(x)
    torch = _torch()
    tmodel = torch.func.replace_all_batch_norm_modules_(_bn_model(torch))
    assert set(tmodel.state_dict()) == set(model.state_dict())
    tmodel.load_state_dict({k: torch.tensor(_np(v)) for k, v in model.state_dict().items()})
    tmodel.eval()
    assert torch.allclose(tmodel(torch.tensor(_np(x))), torch.tensor(_np(out)), atol=1e-5)
    # vmap over a model with batch norm works once the running stats are gone
    w = kindle.func.vmap(lambda t: model(t.unsqueeze(0)))(x)
    assert w.shape == (4, 1, 3, 4, 4)


def test_utils_deterministic_flag():
    import kindle.utils.deterministic as det
    assert det is kindle.utils.deterministic
    assert det.fill_uninitialized_memory is True
    try:
        det.fill_uninitialized_memory = False
        assert kindle.utils.deterministic.fill_uninitialized_memory is False
        with pytest.raises(RuntimeError, match="expected a bool, but got int"):
            det.fill_uninitialized_memory = 1
        assert det.fill_uninitialized_memory is False
    finally:
        det.fill_uninitialized_memory = True
    torch = _torch()
    import torch.utils.deterministic as tdet
    assert tdet.fill_uninitialized_memory is True
    with pytest.raises(RuntimeError, match="expected a bool, but got int"):
        tdet.fill_uninitialized_memory = 1


def test_profiler_itt():
    from kindle.profiler import itt
    assert kindle.profiler.itt is itt and itt.is_available() is False
    assert itt.range_push("a") is None and itt.range_pop() is None and itt.mark("m") is None
    with itt.range("step {}", 3):
        kindle.ones(1) + 1
    torch = _torch()
    assert itt.__all__ == torch.profiler.itt.__all__


def test_profiler_action_members():
    names = [(a.name, a.value) for a in kindle.profiler.ProfilerAction]
    assert ("DEVICE_STOPPED", 4) in names
    torch = _torch()
    assert names == [(a.name, a.value) for a in torch.profiler.ProfilerAction]


def test_autograd_profile_totals():
    x = kindle.randn(64, 64)
    with kindle.autograd.profiler.profile() as prof:
        x @ x
        x + x
    events = prof.function_events
    assert prof.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in events))
    assert prof.self_cpu_time_total > 0
    total = prof.total_average()
    assert total.key == "Total" and total.count == len(events)
    assert total.self_cpu_time_total == pytest.approx(prof.self_cpu_time_total)
    assert prof.key_averages().total_average().count == len(events)
    torch = _torch()
    with torch.autograd.profiler.profile() as tprof:
        torch.ones(2) + 1
    assert tprof.total_average().key == "Total" and isinstance(tprof.self_cpu_time_total, float)


def _nested(lib):
    prof = lib.profiler
    x = lib.ones(8)
    with prof.profile() as outer:
        x * 2
        with prof.profile() as inner:
            x + 1
        x - 1
    return [e.name for e in outer.events()], sorted({e.name for e in inner.events()})


def test_nested_profiles_as_torch():
    # the inner profile has the events from its start to its stop, the outer none
    outer, inner = _nested(kindle)
    assert outer == [] and inner == ["aten::add"]
    torch = _torch()
    touter, tinner = _nested(torch)
    assert touter == [] and "aten::add" in tinner and "aten::mul" not in tinner and "aten::sub" not in tinner


@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2), dict(wait=2, warmup=1, active=1, repeat=2),
                                dict(wait=1, warmup=2, active=3, repeat=1, skip_first=2),
                                dict(wait=3, warmup=1, active=2, skip_first=1, skip_first_wait=1),
                                dict(wait=2, warmup=1, active=2, repeat=3, skip_first_wait=1)])
def test_schedule_matches_torch(kw):
    ks = kindle.profiler.schedule(**kw)
    actions = [ks(i).name for i in range(30)]
    torch = _torch()
    ts = torch.profiler.schedule(**kw)
    assert actions == [ts(i).name for i in range(30)]


def test_schedule_checks_and_warning():
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        kindle.profiler.schedule(wait=0, warmup=1, active=0)
    with pytest.raises(AssertionError, match="Step must be non-negative"):
        kindle.profiler.schedule(wait=0, warmup=1, active=1)(-1)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        kindle.profiler.schedule(wait=0, warmup=0, active=1)


# ---- benchmark.Compare

def _measurement_specs():
    rng = random.Random(0)
    specs = []
    for label in ("add", "matmul"):
        for sub in ("small", "large"):
            for desc in ("kindle", "torch"):
                for threads in (1, 4):
                    n = rng.choice([1, 5, 20])
                    base = rng.choice([3e-7, 2.5e-6, 1.7e-4, 0.02])
                    raw = [base * n * (1 + rng.uniform(-0.3, 0.3)) for _ in range(rng.choice([1, 3, 10]))]
                    specs.append((label, sub, desc, threads, n, raw))
    specs.append(specs[0][:4] + (2, [specs[0][5][0] * 0.5, specs[0][5][0] * 0.6]))  # a replicate: merged
    return specs


def test_benchmark_compare_prints_torchs_table():
    from kindle.utils.benchmark import Compare, Measurement
    specs = _measurement_specs()
    kms = [Measurement(n, raw, "x + y", label, sub, desc, th) for label, sub, desc, th, n, raw in specs]
    compare = Compare(kms)
    text = str(compare)
    assert "[" in text and "threads:" in text and "Times are in" in text
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        Compare([1.0])
    torch = _torch()
    from torch.utils.benchmark.utils.common import TaskSpec
    tms = [torch.utils.benchmark.Measurement(n, raw, TaskSpec("x + y", "pass", label=label, sub_label=sub,
                                                              description=desc, num_threads=th))
           for label, sub, desc, th, n, raw in specs]
    for options in ([], ["trim"], ["colorize"], ["rowwise"], ["warnings"], ["trim", "warnings", "colorize"]):
        kc, tc = Compare(kms), torch.utils.benchmark.Compare(tms)
        for c in (kc, tc):
            if "trim" in options:
                c.trim_significant_figures()
            if "colorize" in options:
                c.colorize()
            if "rowwise" in options:
                c.colorize(rowwise=True)
            if "warnings" in options:
                c.highlight_warnings()
        assert str(kc) == str(tc), options
    assert [m.significant_figures for m in kms] == [m.significant_figures for m in tms]


def test_benchmark_compare_with_timer_measurements(capsys):
    from kindle.utils.benchmark import Compare, Timer
    x = kindle.ones(16)
    results = []
    for desc, stmt in (("add", "x + x"), ("mul", "x * x")):
        for threads in (1, 2):
            t = Timer(stmt, globals={"x": x}, label="ops", sub_label="16", description=desc, num_threads=threads)
            results.append(t.timeit(50))
            results.append(t.blocked_autorange(min_run_time=0.01))
    compare = Compare(results)
    compare.trim_significant_figures()
    compare.print()
    out = capsys.readouterr().out
    assert "ops" in out and "add" in out and "mul" in out and "2 threads:" in out
    merged = results[0].merge(results[:2])
    assert len(merged) == 1 and merged[0].number_per_run == 1
    assert len(merged[0].times) == len(results[0].times) + len(results[1].times)


# ---- serialization: load endianness, exception types

def test_load_endianness_setting(tmp_path):
    s = kindle.serialization
    assert [(e.name, e.value) for e in s.LoadEndianness] == [("NATIVE", 1), ("LITTLE", 2), ("BIG", 3)]
    assert s.get_default_load_endianness() is None
    with pytest.raises(TypeError, match="Invalid argument type in function set_default_load_endianness"):
        s.set_default_load_endianness("big")
    path = tmp_path / "w.pt"
    kindle.save({"w": kindle.arange(3.0)}, str(path))  # it has a byteorder record
    try:
        for e in (s.LoadEndianness.LITTLE, s.LoadEndianness.NATIVE, s.LoadEndianness.BIG):
            s.set_default_load_endianness(e)
            assert s.get_default_load_endianness() is e
            assert kindle.equal(kindle.load(str(path))["w"], kindle.arange(3.0))
    finally:
        s.set_default_load_endianness(None)
    bare = tmp_path / "bare.pt"
    # an archive without the byteorder record (torch 2.13 always writes one: drop it by hand)
    with zipfile.ZipFile(str(path)) as src, zipfile.ZipFile(str(bare), "w", zipfile.ZIP_STORED) as dst:
        for name in src.namelist():
            if not name.endswith("/byteorder"):
                dst.writestr(name, src.read(name))
    assert kindle.equal(kindle.load(str(bare))["w"], kindle.arange(3.0))
    try:
        s.set_default_load_endianness(s.LoadEndianness.BIG)  # torch would byte-swap: Kindle refuses
        with pytest.raises(RuntimeError, match="no byteorder record"):
            kindle.load(str(bare))
    finally:
        s.set_default_load_endianness(None)
    torch = _torch()
    assert [(e.name, e.value) for e in torch.serialization.LoadEndianness] == \
        [(e.name, e.value) for e in s.LoadEndianness]
    assert torch.serialization.get_default_load_endianness() is None


def _load_error(lib, data, weights_only):
    with pytest.raises(Exception) as info:
        lib.load(io.BytesIO(data), weights_only=weights_only)
    return info.value


@pytest.mark.parametrize("weights_only", [True, False])
def test_load_garbage_raises_unpickling_error(weights_only, tmp_path):
    garbage = bytes([0xBA]) + bytes(random.Random(1).randrange(256) for _ in range(199))
    err = _load_error(kindle, garbage, weights_only)
    assert isinstance(err, pickle.UnpicklingError) and isinstance(err, ValueError)
    assert "invalid load key, '\\xba'." in str(err)
    path = tmp_path / "notes.txt"
    path.write_text("hello world, this is text\n")
    with pytest.raises(pickle.UnpicklingError, match="notes.txt"):
        kindle.load(str(path), weights_only=weights_only)
    empty = _load_error(kindle, b"", weights_only)
    assert isinstance(empty, EOFError)
    torch = _torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert isinstance(_load_error(torch, garbage, weights_only), pickle.UnpicklingError)
        assert isinstance(_load_error(torch, b"", weights_only), EOFError)
        if not weights_only:
            assert "invalid load key, '\\xba'." in str(_load_error(torch, garbage, False))


def test_truncated_safetensors_still_reports_the_header():
    # a file that starts like safetensors keeps the safetensors reader's error
    with pytest.raises(ValueError, match="larger than the rest of the file") as info:
        kindle.load(io.BytesIO((1000).to_bytes(8, "little") + b"{}"))
    assert not isinstance(info.value, pickle.UnpicklingError)


_GLOBAL_LAMBDA = lambda t: t  # noqa: E731  (a module-level lambda: pickle cannot find it by name)


def _module_with(lib, attr):
    m = lib.nn.Linear(2, 2)
    m.fn = attr
    return m


def test_save_unpicklable_attribute_raises_as_torch():
    def local(t):
        return t

    cases = {"lambda": lambda t: t, "local function": local, "module-level lambda": _GLOBAL_LAMBDA}
    kinds = {}
    for name, fn in cases.items():
        with pytest.raises(Exception) as info:
            kindle.save(_module_with(kindle, fn), io.BytesIO())
        kinds[name] = (type(info.value), re.sub(" at 0x[0-9a-f]+", "", str(info.value)))
    assert kinds["lambda"][0] is AttributeError and "Can't pickle local object" in kinds["lambda"][1]
    assert kinds["local function"][0] is AttributeError
    assert issubclass(kinds["module-level lambda"][0], pickle.PicklingError)
    assert "attribute lookup <lambda> on" in str(kinds["module-level lambda"])
    torch = _torch()
    for name, fn in cases.items():
        with pytest.raises(Exception) as info:
            torch.save(_module_with(torch, fn), io.BytesIO())
        assert (type(info.value), re.sub(" at 0x[0-9a-f]+", "", str(info.value))) == kinds[name], name


def test_set_num_interop_threads_zero_raises_as_torch():
    with pytest.raises(RuntimeError, match="set_num_interop_threads expects a positive integer"):
        kindle.set_num_interop_threads(0)


def test_set_num_threads_zero_raises_runtime_error():
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
        kindle.set_num_threads(0)


def test_jit_trace_records_random_factories_without_traced_arguments():
    # torch.jit.trace records aten::rand: each call of the traced module draws anew (torch.fx and
    # kindle.fx.symbolic_trace bake the draw in as a constant instead)
    class Noisy(kindle.nn.Module):
        def forward(self, x):
            return x + kindle.rand(2, 3) + kindle.randn(x.shape[0], 3)

    m = Noisy()
    traced = kindle.jit.trace(m, (kindle.zeros(2, 3),), check_trace=False)
    assert not kindle.equal(traced(kindle.zeros(2, 3)), traced(kindle.zeros(2, 3)))
    kindle.manual_seed(0)
    a = traced(kindle.zeros(2, 3))
    kindle.manual_seed(0)
    assert kindle.equal(a, m(kindle.zeros(2, 3)))
