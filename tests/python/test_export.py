"""kindle.export: torch.export's API. Models are written once, as users write them, and built
against Kindle and (where installed) PyTorch, so signatures, errors and messages can be
compared with torch.export's own."""
import dataclasses
import io
import math
import os

import pytest

import kindle
import kindle.nn as nn
import kindle.nn.functional as F
from kindle.export import Dim, ExportedProgram, export, load, save


def _torch():
    torch = pytest.importorskip("torch")
    if getattr(torch, "_is_kindle", False):
        pytest.skip("`torch` is Kindle in this process")
    return torch


def build_models(torch, nn, F):
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 4)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)
            self.bn = nn.BatchNorm2d(6)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(6 * 4 * 4, 5)

        def forward(self, x):
            x = self.pool(torch.relu(self.bn(self.conv(x))))
            x = x.view(x.size(0), -1)
            return self.fc(x)

    class BufferIf(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.register_buffer("offset", torch.arange(4.0))

        def forward(self, x):
            y = self.lin(x) + self.offset
            if x.shape[0] > 2:
                return y * 2
            return y - 1

    class DictTuple(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(3, 3)

        def forward(self, inputs, pair):
            a = self.proj(inputs["a"]) * inputs["scale"]
            b = pair[0] + pair[1]
            return {"a": a, "both": (b, a.sum(-1))}, [a.mean()]

    class Kwargs(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 2)

        def forward(self, x, *, scale=1.0, bias=None):
            y = self.lin(x) * scale
            if bias is not None:
                y = y + bias
            return y

    class LSTMLoop(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = nn.LSTMCell(4, 6)
            self.head = nn.Linear(6, 3)

        def forward(self, x):
            h = torch.zeros(x.shape[0], 6)
            c = torch.zeros(x.shape[0], 6)
            outs = []
            for t in range(x.shape[1]):
                h, c = self.cell(x[:, t], (h, c))
                outs.append(self.head(h))
            return torch.stack(outs, dim=1)

    class TwoInputs(nn.Module):
        def forward(self, x, y):
            return torch.cat([x, y], dim=0) * 2

    class DataDependent(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x + 1
            return x - 1

    return dict(MLP=MLP, SmallCNN=SmallCNN, BufferIf=BufferIf, DictTuple=DictTuple, Kwargs=Kwargs,
                LSTMLoop=LSTMLoop, TwoInputs=TwoInputs, DataDependent=DataDependent)


K = build_models(kindle, nn, F)


def _both(name, seed=0):
    """The same model in Kindle and torch, with the same weights (for message comparisons)."""
    torch = _torch()
    T = build_models(torch, torch.nn, torch.nn.functional)
    km, tm = K[name](), T[name]()
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in km.state_dict().items()})
    return km, tm, torch


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


# ---- exporting user models: outputs equal the eager model's

def test_lazy_submodule():
    assert kindle.export.export is export
    import kindle.export as ke
    assert ke.ExportedProgram is ExportedProgram


def test_mlp_outputs_and_signature():
    m = K["MLP"]()
    x = kindle.randn(5, 8)
    ep = export(m, (x,))
    assert isinstance(ep, ExportedProgram)
    assert kindle.allclose(ep.module()(x), m(x))
    sig = ep.graph_signature
    assert sig.parameters == ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")
    assert sig.user_inputs == ("x",) and len(sig.user_outputs) == 1
    assert [k for k, _ in ep.named_parameters()] == list(sig.parameters)
    assert ep.state_dict["fc1.weight"] is m.fc1.weight  # shared, as torch's
    assert ep.example_inputs[0][0] is x
    assert [n.op for n in ep.graph.nodes].count("placeholder") == 5
    assert all(n.op != "get_attr" for n in ep.graph.nodes)  # state is lifted to inputs


def test_signature_matches_torch():
    km, tm, torch = _both("SmallCNN")
    km.eval()
    tm.eval()
    kep = export(km, (kindle.randn(2, 3, 8, 8),))
    tep = torch.export.export(tm, (torch.randn(2, 3, 8, 8),))

    def specs(ep):
        return [(s.kind.name, s.arg.name, s.target, s.persistent) for s in ep.graph_signature.input_specs]
    assert specs(kep) == specs(tep)
    assert kep.graph_signature.buffers == tep.graph_signature.buffers
    assert [s.kind.name for s in kep.graph_signature.output_specs] == ["USER_OUTPUT"]
    assert sorted(kep.state_dict) == sorted(tep.state_dict)


def test_cnn_batchnorm_eval():
    m = K["SmallCNN"]().eval()
    with kindle.no_grad():
        m.bn.running_mean.uniform_(-1, 1)
        m.bn.running_var.uniform_(0.5, 2)
    x = kindle.randn(2, 3, 8, 8)
    ep = export(m, (x,))
    assert kindle.allclose(ep.module()(x), m(x), atol=1e-6)
    bn = [n for n in ep.graph.nodes if n.op == "call_function" and n.target is F.batch_norm]
    assert len(bn) == 1 and False in bn[0].args  # eval mode is baked in, as in torch
    assert set(ep.graph_signature.buffers) == {"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}


def test_training_mode_export_leaves_module_untouched():
    m = K["SmallCNN"]().train()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    x = kindle.randn(4, 3, 8, 8)
    ep = export(m, (x,))
    assert all(kindle.equal(before[k], v) for k, v in m.state_dict().items())
    out = ep.module()(x)  # batch statistics, and the running stats are updated like eager's
    ref_model = K["SmallCNN"]().train()
    ref_model.load_state_dict(before)
    assert kindle.allclose(out, ref_model(x), atol=1e-5)
    assert kindle.allclose(m.bn.running_mean, ref_model.bn.running_mean, atol=1e-6)


def test_buffer_and_shape_dependent_if():
    m = K["BufferIf"]()
    ep = export(m, (kindle.randn(3, 4),))
    assert ep.graph_signature.buffers == ("offset",)
    x = kindle.randn(3, 4)
    assert kindle.allclose(ep.module()(x), m(x))
    small = export(m, (kindle.randn(2, 4),))  # the other branch
    x2 = kindle.randn(2, 4)
    assert kindle.allclose(small.module()(x2), m(x2))


def test_dict_and_tuple_inputs_and_outputs():
    m = K["DictTuple"]()
    inputs = {"a": kindle.randn(2, 3), "scale": 0.5}
    pair = (kindle.randn(4), kindle.randn(4))
    ep = export(m, (inputs, pair))
    assert ep.graph_signature.user_inputs == ("inputs_a", 0.5, "pair_0", "pair_1")
    out, ref = ep.module()(inputs, pair), m(inputs, pair)
    assert isinstance(out, tuple) and set(out[0]) == {"a", "both"} and isinstance(out[1], list)
    assert kindle.allclose(out[0]["a"], ref[0]["a"]) and kindle.allclose(out[0]["both"][1], ref[0]["both"][1])
    assert kindle.allclose(out[1][0], ref[1][0])
    # dict keys in another order are accepted; a different constant is not
    swapped = {"scale": 0.5, "a": inputs["a"]}
    assert kindle.allclose(ep.module()(swapped, pair)[0]["a"], ref[0]["a"])
    e = _error(lambda: ep.module()({"a": inputs["a"], "scale": 2.0}, pair))
    assert isinstance(e, AssertionError) and "Guard failed: inputs['scale'] == 0.5" in str(e)
    e = _error(lambda: ep.module()(inputs, (pair[0],)))
    assert isinstance(e, ValueError) and "tree spec" in str(e)


def test_kwargs_inputs():
    m = K["Kwargs"]()
    x, bias = kindle.randn(3, 4), kindle.randn(2)
    ep = export(m, (x,), {"scale": 3.0, "bias": bias})
    assert kindle.allclose(ep.module()(x, scale=3.0, bias=bias), m(x, scale=3.0, bias=bias))
    assert kindle.allclose(ep.module()(x, bias=bias, scale=3.0), m(x, scale=3.0, bias=bias))
    assert ep.module_call_graph[0].signature.forward_arg_names == ["x", "scale", "bias"]
    with pytest.raises(ValueError):
        ep.module()(x, scale=3.0)


def test_lstm_loop_with_dynamic_batch():
    m = K["LSTMLoop"]()
    ep = export(m, (kindle.randn(2, 5, 4),), dynamic_shapes={"x": {0: Dim("batch", max=32)}})
    for b in (1, 3, 17):
        x = kindle.randn(b, 5, 4)
        assert kindle.allclose(ep.module()(x), m(x), atol=1e-6)
    e = _error(lambda: ep.module()(kindle.randn(3, 6, 4)))  # the loop length is fixed
    assert isinstance(e, AssertionError) and str(e) == "Guard failed: x.size()[1] == 5"
    buf = io.BytesIO()  # the graph's own size assertion survives saving
    save(ep, buf)
    buf.seek(0)
    loaded = load(buf)
    assert any(n.op == "call_function" and n.target is kindle._assert for n in loaded.graph.nodes)
    x = kindle.randn(4, 5, 4)
    assert kindle.allclose(loaded.module()(x), m(x), atol=1e-6)


def test_data_dependent_control_flow_raises():
    e = _error(lambda: export(K["DataDependent"](), (kindle.randn(3),)))
    assert isinstance(e, RuntimeError) and "data-dependent" in str(e)
    assert type(e).__name__ == "GuardOnDataDependentSymNode"


def test_data_dependent_matches_torch():
    torch = _torch()
    T = build_models(torch, torch.nn, torch.nn.functional)
    e = _error(lambda: torch.export.export(T["DataDependent"](), (torch.randn(3),)))
    assert isinstance(e, RuntimeError) and type(e).__name__ == "GuardOnDataDependentSymNode"


# ---- calling with other shapes

def test_wrong_shape_error_matches_torch():
    km, tm, torch = _both("MLP")
    kmod = export(km, (kindle.randn(4, 8),)).module()
    tmod = torch.export.export(tm, (torch.randn(4, 8),)).module()
    for shape in [(5, 8), (4, 9)]:
        ke = _error(lambda: kmod(kindle.randn(*shape)))
        te = _error(lambda: tmod(torch.randn(*shape)))
        assert type(ke) is type(te) is AssertionError
        assert str(ke) == str(te)


def test_dynamic_batch_runs_other_sizes_and_checks_range():
    km, tm, torch = _both("MLP")
    kep = export(km, (kindle.randn(4, 8),), dynamic_shapes={"x": {0: Dim("batch", min=2, max=16)}})
    assert kep.range_constraints == {"s0": kindle.export.dynamic_shapes.ValueRanges(2, 16)}
    assert "s0: VR[2, 16]" in str(kep)
    for b in (2, 7, 16):
        x = kindle.randn(b, 8)
        assert kindle.allclose(kep.module()(x), km(x))
    tep = torch.export.export(tm, (torch.randn(4, 8),),
                              dynamic_shapes={"x": {0: torch.export.Dim("batch", min=2, max=16)}})
    ke = _error(lambda: kep.module()(kindle.randn(17, 8)))
    te = _error(lambda: tep.module()(torch.randn(17, 8)))
    assert type(ke) is type(te) is AssertionError and str(ke) == str(te) == "Guard failed: x.size()[0] <= 16"
    ke = _error(lambda: kep.module()(kindle.randn(5, 9)))
    te = _error(lambda: tep.module()(torch.randn(5, 9)))
    assert str(ke) == str(te)


def test_example_outside_dim_range_raises():
    e = _error(lambda: export(K["MLP"](), (kindle.randn(3, 8),), dynamic_shapes=({0: Dim("b", min=5, max=9)},)))
    assert isinstance(e, RuntimeError) and "3 not in range [5, 9]" in str(e)


def test_specialized_dim_raises_like_torch():
    km, tm, torch = _both("LSTMLoop")
    ke = _error(lambda: export(km, (kindle.randn(2, 3, 4),), dynamic_shapes={"x": {1: Dim("seq")}}))
    te = _error(lambda: torch.export.export(tm, (torch.randn(2, 3, 4),),
                                            dynamic_shapes={"x": {1: torch.export.Dim("seq")}}))
    assert isinstance(ke, RuntimeError) and isinstance(te, RuntimeError)
    for e in (ke, te):
        assert "Constraints violated (seq)" in str(e) and "specialized it to be a constant (3)" in str(e)


def test_shape_dependent_if_with_dynamic_dims():
    km, tm, torch = _both("BufferIf")
    x = kindle.randn(3, 4)
    ke = _error(lambda: export(km, (x,), dynamic_shapes={"x": {0: Dim("batch", min=2, max=10)}}))
    te = _error(lambda: torch.export.export(tm, (torch.randn(3, 4),),
                                            dynamic_shapes={"x": {0: torch.export.Dim("batch", min=2, max=10)}}))
    for e in (ke, te):
        assert isinstance(e, RuntimeError) and "Constraints violated (batch)" in str(e)
        assert "batch = Dim('batch', min=3, max=10)" in str(e)
    kep = export(km, (x,), dynamic_shapes={"x": {0: Dim.AUTO}})
    tep = torch.export.export(tm, (torch.randn(3, 4),), dynamic_shapes={"x": {0: torch.export.Dim.AUTO}})
    assert [(r.lower, str(r.upper)) for r in kep.range_constraints.values()] == \
        [(int(r.lower), str(r.upper)) for r in tep.range_constraints.values()]
    x6 = kindle.randn(6, 4)
    assert kindle.allclose(kep.module()(x6), km(x6))
    ke = _error(lambda: kep.module()(kindle.randn(2, 4)))
    te = _error(lambda: tep.module()(torch.randn(2, 4)))
    assert type(ke) is type(te) is AssertionError and str(ke) == str(te)


def test_shared_and_derived_dims():
    km, tm, torch = _both("TwoInputs")
    b = Dim("b")
    kep = export(km, (kindle.randn(2, 3), kindle.randn(4, 3)), dynamic_shapes=({0: b}, {0: 2 * b}))
    x, y = kindle.randn(5, 3), kindle.randn(10, 3)
    assert kindle.allclose(kep.module()(x, y), km(x, y))
    tb = torch.export.Dim("b")
    tep = torch.export.export(tm, (torch.randn(2, 3), torch.randn(4, 3)), dynamic_shapes=({0: tb}, {0: 2 * tb}))
    ke = _error(lambda: kep.module()(kindle.randn(4, 3), kindle.randn(5, 3)))
    te = _error(lambda: tep.module()(torch.randn(4, 3), torch.randn(5, 3)))
    assert str(ke) == str(te) == "Guard failed: y.size()[0] == 2 * x.size()[0]"
    same = export(km, (kindle.randn(2, 3), kindle.randn(2, 3)), dynamic_shapes=({0: b}, {0: b}))
    e = _error(lambda: same.module()(kindle.randn(4, 3), kindle.randn(5, 3)))
    assert str(e) == "Guard failed: y.size()[0] == x.size()[0]"


def test_dim_api():
    b = Dim("batch", min=2, max=10)
    assert (b.__name__, b.min, b.max) == ("batch", 2, 10)
    assert repr(b) == "Dim('batch', max=10)" and repr(Dim("n", min=1)) == "Dim('n', min=1)"
    assert repr(2 * b) == "2*batch" and repr(b + 1) == "batch + 1" and (2 * b).max == 20
    assert repr(Dim.AUTO) == "DimHint(AUTO)" and repr(Dim.DYNAMIC(max=8)) == "DimHint(DYNAMIC, max=8)"
    s, t = kindle.export.dims("s", "t", max=64)
    assert (s.max, t.__name__) == (64, "t")
    with pytest.raises(AssertionError):
        Dim("q", min=5, max=2)
    with pytest.raises(NotImplementedError):
        b * 1.5


def test_dynamic_shapes_validation():
    m = K["MLP"]()
    with pytest.raises(kindle.export.UserError, match="top-level keys must be the arg names"):
        export(m, (kindle.randn(3, 8),), dynamic_shapes={"y": {0: Dim("b")}})
    with pytest.raises(RuntimeError, match="Expecting `args` to be a tuple"):
        export(m, kindle.randn(3, 8))
    with pytest.raises(ValueError, match="Expected `mod` to be an instance"):
        export(lambda x: x, (kindle.randn(3),))


def test_shapes_collection():
    m = K["TwoInputs"]()
    x, y = kindle.randn(3, 2), kindle.randn(3, 2)
    shapes = kindle.export.ShapesCollection()
    shapes[x] = {0: Dim.DYNAMIC}
    shapes[y] = {0: Dim.DYNAMIC}
    ep = export(m, (x, y), dynamic_shapes=shapes)
    a, b = kindle.randn(5, 2), kindle.randn(2, 2)
    assert kindle.allclose(ep.module()(a, b), m(a, b))


# ---- the ExportedProgram object

def test_direct_call_and_train_eval_raise_like_torch():
    km, tm, torch = _both("MLP")
    kep = export(km, (kindle.randn(2, 8),))
    tep = torch.export.export(tm, (torch.randn(2, 8),))
    ke, te = _error(lambda: kep(kindle.randn(2, 8))), _error(lambda: tep(torch.randn(2, 8)))
    assert type(ke) is type(te) is RuntimeError and str(ke) == str(te)
    for method in ("train", "eval"):
        ke, te = _error(getattr(kep.module(), method)), _error(getattr(tep.module(), method))
        assert type(ke) is type(te) is NotImplementedError and str(ke) == str(te)


def test_print_lists_graph_and_signature():
    ep = export(K["BufferIf"](), (kindle.randn(3, 4),))
    text = str(ep)
    assert text.startswith("ExportedProgram:") and "def forward(self, p_lin_weight: \"f32[4, 4]\"" in text
    assert "b_offset: BUFFER target='offset' persistent=True" in text and "x: USER_INPUT" in text
    assert "Range constraints: {}" in text
    print(ep)  # noqa: T201  (the user's call)


def test_named_buffers_constants_and_non_persistent():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", kindle.ones(3), persistent=False)
            self.register_buffer("stat", kindle.zeros(3))
            self.table = kindle.tensor([1.0, 2.0, 3.0])  # a plain tensor attribute: a constant

        def forward(self, x):
            return x * self.mask + self.stat + self.table + kindle.ones(3)
    m = M()
    ep = export(m, (kindle.randn(2, 3),))
    assert [k for k, _ in ep.named_buffers()] == ["mask", "stat"]
    assert ep.graph_signature.non_persistent_buffers == ("mask",)
    assert set(ep.constants) == {"mask", "table", "lifted_tensor_0"} and set(ep.state_dict) == {"stat"}
    assert ep.graph_signature.lifted_tensor_constants == ("table", "lifted_tensor_0")
    mod = ep.module()
    assert set(mod.state_dict()) == {"stat"}
    x = kindle.randn(2, 3)
    assert kindle.allclose(mod(x), m(x))


def test_run_decompositions():
    m = K["MLP"]()
    ep = export(m, (kindle.randn(3, 8),), dynamic_shapes=({0: Dim("b")},))
    dec = ep.run_decompositions()
    assert isinstance(dec, ExportedProgram) and dec is not ep
    assert not any(n.op == "call_function" and n.target is F.linear for n in dec.graph.nodes)
    assert dec.range_constraints == ep.range_constraints
    for b in (3, 6):
        x = kindle.randn(b, 8)
        assert kindle.allclose(dec.module()(x), m(x), atol=1e-5)
    same = ep.run_decompositions(decomp_table={})
    assert any(n.op == "call_function" and n.target is F.linear for n in same.graph.nodes)
    custom = ep.run_decompositions({F.relu: lambda x, inplace=False: kindle.clamp(x, min=0)})
    assert any(n.op == "call_function" and n.target is kindle.clamp for n in custom.graph.nodes)
    x = kindle.randn(4, 8)
    assert kindle.allclose(custom.module()(x), m(x))


def test_unflatten_mirrors_module_tree():
    m = K["SmallCNN"]().eval()
    x = kindle.randn(2, 3, 8, 8)
    u = kindle.export.unflatten(export(m, (x,)))
    assert {n for n, _ in u.named_modules()} >= {"", "conv", "bn", "pool", "fc"}
    assert set(u.state_dict()) == set(m.state_dict())
    assert kindle.allclose(u(x), m(x), atol=1e-6)


def test_register_dataclass_io():
    @dataclasses.dataclass
    class Batch:
        feature: kindle.Tensor
        bias: int

    @dataclasses.dataclass
    class Result:
        res: kindle.Tensor

    kindle.export.register_dataclass(Batch)
    kindle.export.register_dataclass(Result)

    class M(nn.Module):
        def forward(self, b: Batch) -> Result:
            return Result(res=b.feature * 2 + b.bias)
    ep = export(M(), (Batch(kindle.ones(2, 2), 1),))
    out = ep.module()(Batch(kindle.full((2, 2), 3.0), 1))
    assert isinstance(out, Result) and kindle.equal(out.res, kindle.full((2, 2), 7.0))


def test_tied_weights_hooks_and_inplace_calls():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
            self.out = nn.Linear(4, 10, bias=False)
            self.out.weight = self.emb.weight
            self.blocks[0].register_forward_hook(lambda mod, inp, out: out * 2)

        def forward(self, ids):
            h = self.emb(ids)
            for block in self.blocks:
                h = block(h)
                F.relu(h, inplace=True)  # result unused: the in-place update must stay
            return self.out(h)
    m = Tied()
    ids = kindle.tensor([[1, 2, 3], [4, 5, 6]])
    ep = export(m, (ids,), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))
    assert ep.graph_signature.parameters[0] == "emb.weight" and "out.weight" in ep.graph_signature.parameters
    ids2 = kindle.randint(0, 10, (3, 7))
    assert kindle.allclose(ep.module()(ids2), m(ids2), atol=1e-6)
    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    mod = load(buf).module()
    assert mod.out.weight is mod.emb.weight
    assert kindle.allclose(mod(ids2), m(ids2), atol=1e-6)


def test_additional_inputs():
    m = K["TwoInputs"]()
    extra = kindle.export.AdditionalInputs()
    extra.add((kindle.randn(5, 2), kindle.randn(4, 2)))
    ep = export(m, (kindle.randn(3, 2), kindle.randn(2, 2)), dynamic_shapes=extra)
    assert len(ep.range_constraints) == 2
    extra.verify(ep)
    a, b = kindle.randn(6, 2), kindle.randn(9, 2)
    assert kindle.allclose(ep.module()(a, b), m(a, b))


def test_backward_through_exported_module():
    m = K["MLP"]()
    ep = export(m, (kindle.randn(3, 8),))
    ep.module()(kindle.randn(3, 8)).sum().backward()
    assert m.fc1.weight.grad is not None


def test_exporting_flag_and_math_on_sizes():
    class M(nn.Module):
        def forward(self, q, k):
            seen.append(kindle.compiler.is_exporting())
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
            return scores.softmax(-1)
    seen = []
    m = M()
    q, k = kindle.randn(2, 5, 8), kindle.randn(2, 5, 8)
    ep = export(m, (q, k), dynamic_shapes=({1: Dim.AUTO}, {1: Dim.AUTO}))
    assert seen == [True] and not kindle.compiler.is_exporting()
    q2, k2 = kindle.randn(2, 7, 8), kindle.randn(2, 7, 8)
    assert kindle.allclose(ep.module()(q2, k2), m(q2, k2), atol=1e-6)


# ---- save / load

def _roundtrip_checks(ep, m, x):
    assert isinstance(ep, ExportedProgram)
    assert kindle.allclose(ep.module()(x), m(x), atol=1e-6)
    assert [(s.kind, s.target) for s in ep.graph_signature.input_specs][:2] == \
        [(kindle.export.graph_signature.InputKind.PARAMETER, "conv.weight"),
         (kindle.export.graph_signature.InputKind.PARAMETER, "conv.bias")]


def test_save_load_file_and_bytesio(tmp_path):
    m = K["SmallCNN"]().eval()
    x = kindle.randn(2, 3, 8, 8)
    ep = export(m, (x,), dynamic_shapes={"x": {0: Dim("batch", max=8)}})
    path = tmp_path / "model.pt2"
    save(ep, str(path), extra_files={"note.txt": "hello"})
    extra = {}
    loaded = load(str(path), extra_files=extra)
    assert extra == {"note.txt": "hello"}
    _roundtrip_checks(loaded, m, x)
    assert loaded.range_constraints == ep.range_constraints and str(loaded) == str(ep)
    x5 = kindle.randn(5, 3, 8, 8)
    assert kindle.allclose(loaded.module()(x5), m(x5), atol=1e-6)
    with pytest.raises(AssertionError, match=r"x.size\(\)\[0\] <= 8"):
        loaded.module()(kindle.randn(9, 3, 8, 8))
    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    _roundtrip_checks(load(buf), m, x)
    again = load(path)  # a PathLike
    assert kindle.allclose(again.run_decompositions().module()(x), m(x), atol=1e-5)


def test_save_load_nested_io_and_guards():
    m = K["DictTuple"]()
    inputs, pair = {"a": kindle.randn(2, 3), "scale": 0.5}, (kindle.randn(4), kindle.randn(4))
    ep = export(m, (inputs, pair), dynamic_shapes={"inputs": {"a": {0: Dim.AUTO}, "scale": None}, "pair": None})
    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    loaded = load(buf)
    inputs3 = {"a": kindle.randn(3, 3), "scale": 0.5}
    out, ref = loaded.module()(inputs3, pair), m(inputs3, pair)
    assert kindle.allclose(out[0]["a"], ref[0]["a"]) and kindle.allclose(out[1][0], ref[1][0])
    with pytest.raises(TypeError, match="ExportedProgram"):
        save(m, io.BytesIO())


def test_load_refuses_code(tmp_path):
    ep = export(K["MLP"](), (kindle.randn(2, 8),))
    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    payload = kindle.load(buf, weights_only=True)
    marker = tmp_path / "pwned"
    payload["graph"].insert(-1, ["evil", "call_function", ["fn", "os.system"],
                                 ["tuple", [["c", f"touch {marker}"]]], ["dict", []]])
    bad = io.BytesIO()
    kindle.save(payload, bad)
    bad.seek(0)
    with pytest.raises(ValueError, match="refuses"):
        load(bad)
    assert not os.path.exists(marker)
    with pytest.raises(RuntimeError, match="not a kindle.export.save file"):
        other = io.BytesIO()
        kindle.save({"format": "something else"}, other)
        other.seek(0)
        load(other)
