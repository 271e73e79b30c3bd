"""kindle.nn.Module, Parameter, the containers, hooks, state dicts, conversion, deepcopy/pickle
and nn.utils (gradient clipping, parameter vectors), against torch where it is importable."""
import copy
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import kindle
import kindle.nn as nn
from kindle.nn.utils import (clip_grad_norm_, clip_grad_value_, parameters_to_vector,
                             vector_to_parameters)


def _np(t):
    return t.detach().numpy()


class Net(nn.Module):
    """conv -> bn -> relu -> pool -> flatten -> linear, with a shared parameter and a buffer."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.ModuleDict({"fc": nn.Linear(12, 4), "act": nn.Tanh()})
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)] + [nn.Dropout(0.1)])
        self.register_buffer("scale", kindle.ones(1))
        self.register_buffer("tmp", kindle.zeros(2), persistent=False)

    def forward(self, x):
        x = self.features(x).flatten(1)
        x = self.head["act"](self.head["fc"](x))
        for b in self.blocks:
            x = b(x)
        return x * self.scale


def _torch():
    return pytest.importorskip("torch")


def _make_torch_net():
    torch = _torch()

    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            tn = torch.nn
            self.features = tn.Sequential(tn.Conv2d(2, 3, 3, padding=1), tn.BatchNorm2d(3), tn.ReLU(),
                                          tn.MaxPool2d(2))
            self.head = tn.ModuleDict({"fc": tn.Linear(12, 4), "act": tn.Tanh()})
            self.blocks = tn.ModuleList([tn.Linear(4, 4) for _ in range(3)] + [tn.Dropout(0.1)])
            self.register_buffer("scale", torch.ones(1))
            self.register_buffer("tmp", torch.zeros(2), persistent=False)

        forward = Net.forward

    TNet.__name__ = "Net"
    return TNet(), torch


# ---- Parameter

def test_parameter_basics():
    data = kindle.randn(2, 3)
    p = nn.Parameter(data)
    assert isinstance(p, kindle.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p.shape == (2, 3) and p.dtype == kindle.float32
    p.detach().add_(1)  # shares data's storage
    np.testing.assert_array_equal(_np(p), data.numpy())
    assert not nn.Parameter(kindle.randn(2), requires_grad=False).requires_grad
    with kindle.no_grad():
        assert nn.Parameter(kindle.randn(2)).requires_grad  # no_grad does not change the default
    assert nn.Parameter().shape == (0,)
    # ops on a Parameter give plain tensors with history
    y = p * 2
    assert type(y) is kindle.Tensor and y.grad_fn is not None


def test_parameter_repr_matches_torch():
    torch = _torch()
    k = nn.Parameter(kindle.tensor([1.0, 2.0]))
    t = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    assert repr(k) == repr(t)
    assert repr(k).startswith("Parameter containing:\ntensor(")


# ---- registration and attribute protocol

def test_registration_by_assignment():
    m = nn.Module()
    m.w = nn.Parameter(kindle.zeros(2))
    m.sub = nn.Linear(2, 2)
    m.register_buffer("buf", kindle.ones(3))
    m.plain = kindle.ones(1)  # a plain tensor attribute is not registered
    assert list(m._parameters) == ["w"] and list(m._modules) == ["sub"] and list(m._buffers) == ["buf"]
    assert "plain" in m.__dict__ and "plain" not in m.state_dict()
    assert m.w is m._parameters["w"] and m.sub is m._modules["sub"]
    m.buf = kindle.zeros(3)  # reassigning a buffer keeps it a buffer
    assert float(m._buffers["buf"].sum()) == 0
    with pytest.raises(TypeError, match="cannot assign 'kindle.Tensor' as parameter 'w'"):
        m.w = kindle.zeros(2)
    m.w = None
    assert m._parameters["w"] is None and "w" not in m.state_dict()
    with pytest.raises(TypeError, match="child module 'sub'"):
        m.sub = kindle.zeros(1)
    # a parameter replaces an attribute of the same name
    m.other = 3
    m.other = nn.Parameter(kindle.zeros(1))
    assert "other" not in m.__dict__ and "other" in m._parameters
    del m.other, m.sub, m.buf
    assert "other" not in m._parameters and "sub" not in m._modules and "buf" not in m._buffers
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nope'"):
        m.nope  # noqa: B018


def test_registration_errors():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(kindle.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()
    m = nn.Module()
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", kindle.zeros(1))
    with pytest.raises(KeyError, match="contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(KeyError, match="empty string"):
        m.add_module("", nn.ReLU())
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)
    with pytest.raises(TypeError, match="torch.nn.Parameter or None required"):
        m.register_parameter("p", kindle.zeros(1))
    with pytest.raises(TypeError, match="buffer 'b'"):
        m.register_buffer("b", 3)
    m.attr = 1
    with pytest.raises(KeyError, match="attribute 'attr' already exists"):
        m.register_buffer("attr", kindle.zeros(1))


def test_buffer_class_and_persistence():
    m = nn.Module()
    m.b = nn.Buffer(kindle.ones(2), persistent=False)
    assert "b" in m._buffers and "b" in m._non_persistent_buffers_set
    assert "b" not in m.state_dict()
    assert type(m.b) is kindle.Tensor


def test_get_submodule_parameter_buffer():
    m = Net()
    assert m.get_submodule("features.0") is m.features[0]
    assert m.get_submodule("") is m
    assert m.get_parameter("head.fc.weight") is m.head["fc"].weight
    assert m.get_buffer("features.1.running_mean") is m.features[1].running_mean
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        m.get_submodule("features.nope")
    with pytest.raises(AttributeError, match="is not an nn.Module"):
        m.get_submodule("scale.x")
    with pytest.raises(AttributeError, match="is not an nn.Parameter"):
        m.get_parameter("scale")
    with pytest.raises(AttributeError, match="is not a buffer"):
        m.get_buffer("head.fc.weight")
    m.set_submodule("head.act", nn.ReLU())
    assert isinstance(m.head["act"], nn.ReLU)


def test_dir_lists_members():
    m = nn.Sequential(nn.Linear(2, 2))
    d = dir(m[0])
    assert "weight" in d and "bias" in d and "forward" in d
    assert "0" not in dir(m)


# ---- iteration

def test_named_members_and_sharing():
    shared = nn.Linear(2, 2)
    m = nn.Sequential(shared, nn.ReLU(), shared)
    assert [n for n, _ in m.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(m.named_parameters(remove_duplicate=False))) == 4
    assert [n for n, _ in m.named_modules()] == ["", "0", "1"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "0", "1", "2"]
    assert [n for n, _ in m.named_parameters(prefix="model")] == ["model.0.weight", "model.0.bias"]
    assert list(m.named_parameters(recurse=False)) == []
    assert len(list(m.children())) == 2
    # a Parameter shared between two different modules is counted once
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    b.weight = a.weight
    assert len(list(nn.Sequential(a, b).parameters())) == 3
    n = Net()
    assert [name for name, _ in n.named_buffers()] == [
        "scale", "tmp", "features.1.running_mean", "features.1.running_var", "features.1.num_batches_tracked"]
    assert len(list(n.buffers(recurse=False))) == 2


def test_state_dict_keys_match_torch():
    t, torch = _make_torch_net()
    k = Net()
    ksd, tsd = k.state_dict(), t.state_dict()
    assert isinstance(ksd, OrderedDict)
    assert list(ksd) == list(tsd)
    for key in tsd:
        assert tuple(ksd[key].shape) == tuple(tsd[key].shape), key
    assert list(k.state_dict(prefix="net.")) == ["net." + key for key in tsd]
    assert ksd._metadata[""]["version"] == 1 and ksd._metadata["features.1"]["version"] == 2
    # detached by default, the Parameter itself with keep_vars
    w = k.features[0].weight
    assert ksd["features.0.weight"].requires_grad is False
    assert k.state_dict(keep_vars=True)["features.0.weight"] is w


def test_state_dict_round_trip_with_torch():
    t, torch = _make_torch_net()
    k = Net()
    k.load_state_dict({key: kindle.from_numpy(v.numpy().copy()) for key, v in t.state_dict().items()})
    t.eval()
    k.eval()
    x = np.random.default_rng(0).standard_normal((2, 2, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(_np(k(kindle.from_numpy(x))), t(torch.from_numpy(x)).detach().numpy(), atol=1e-5)


def test_load_state_dict_errors():
    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2))
    sd = m.state_dict()
    sd["0.weight"] = kindle.zeros(5, 3)
    sd["extra"] = kindle.zeros(1)
    sd["1.nested.x"] = kindle.zeros(1)
    del sd["1.bias"]
    with pytest.raises(RuntimeError) as ei:
        m.load_state_dict(sd)
    msg = str(ei.value)
    assert msg.startswith("Error(s) in loading state_dict for Sequential:\n\t")
    assert 'Missing key(s) in state_dict: "1.bias".' in msg
    assert 'Unexpected key(s) in state_dict: "extra", "1.nested.x".' in msg
    assert ("size mismatch for 0.weight: copying a param with shape kindle.Size([5, 3]) from checkpoint, the shape "
            "in current model is kindle.Size([2, 3]).") in msg
    sd["0.weight"] = kindle.zeros(2, 3)
    r = m.load_state_dict(sd, strict=False)
    assert r.missing_keys == ["1.bias"] and r.unexpected_keys == ["extra", "1.nested.x"]  # reported, not raised
    assert float(m[0].weight.abs().sum()) == 0
    sd2 = m.state_dict()
    sd2["0.bias"] = [1, 2]
    with pytest.raises(RuntimeError, match='While copying the parameter named "0.bias", expected torch.Tensor'):
        m.load_state_dict(sd2)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        m.load_state_dict([1, 2])
    ok = m.load_state_dict(m.state_dict())
    assert repr(ok) == "<All keys matched successfully>"
    assert ok.missing_keys == [] and ok.unexpected_keys == []


def test_load_state_dict_copies_in_place_or_assigns():
    m = nn.Linear(2, 2)
    w = m.weight
    new = {"weight": kindle.ones(2, 2), "bias": kindle.zeros(2)}
    m.load_state_dict(new)
    assert m.weight is w and float(w.sum()) == 4 and w.requires_grad
    m.load_state_dict(new, assign=True)
    assert m.weight is not w and isinstance(m.weight, nn.Parameter) and m.weight.requires_grad


def test_batchnorm_loads_checkpoint_without_num_batches_tracked():
    bn = nn.BatchNorm1d(3)
    sd = bn.state_dict()
    del sd["num_batches_tracked"]
    sd._metadata[""]["version"] = 1
    bn.load_state_dict(sd)  # version-1 checkpoints predate the counter


def test_load_state_dict_hooks():
    m = nn.Linear(2, 2)
    seen = []
    m.register_load_state_dict_post_hook(lambda mod, keys: seen.append(list(keys.missing_keys)))
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: seen.append(prefix))
    m.load_state_dict({"weight": kindle.zeros(2, 2)}, strict=False)
    m.state_dict(prefix="p.")
    assert seen == [["bias"], "p."]


# ---- modes and conversion

def test_train_eval_apply_requires_grad():
    m = Net()
    assert all(mod.training for mod in m.modules())
    assert m.eval() is m and not any(mod.training for mod in m.modules())
    m.train()
    assert all(mod.training for mod in m.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")
    names = []
    m.apply(lambda mod: names.append(type(mod).__name__))
    assert names[-1] == "Net" and names[0] == "Conv2d"
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_to_dtype_keeps_parameter_objects():
    m = Net()
    w = m.features[0].weight
    m(kindle.randn(1, 2, 4, 4)).sum().backward()
    assert m.to(kindle.float64) is m
    assert m.features[0].weight is w and isinstance(w, nn.Parameter) and w.dtype == kindle.float64
    assert w.grad.dtype == kindle.float64
    assert m.features[1].num_batches_tracked.dtype == kindle.int64  # integer buffers keep their dtype
    assert m.scale.dtype == kindle.float64
    m.float()
    assert w.dtype == kindle.float32
    m.half()
    assert w.dtype == kindle.float16
    m.bfloat16()
    assert w.dtype == kindle.bfloat16
    m.to(dtype=kindle.float32)
    m.to("cpu")
    m.to(kindle.device("cpu"), kindle.float64)
    m.to(kindle.zeros(1, dtype=kindle.float32))
    m.cpu()
    assert w.dtype == kindle.float32 and w.requires_grad and w.is_leaf
    with pytest.raises(TypeError, match="only accepts floating point"):
        m.to(kindle.int32)


def test_share_memory():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    w = m[0].weight
    assert m.share_memory() is m and m[0].weight is w
    assert all(t.is_shared() for t in list(m.parameters()) + list(m.buffers()))


def test_zero_grad():
    m = nn.Linear(2, 2)
    m(kindle.randn(3, 2)).sum().backward()
    m.zero_grad(set_to_none=False)
    assert float(m.weight.grad.abs().sum()) == 0
    m(kindle.randn(3, 2)).sum().backward()
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None


def test_forward_missing_raises():
    with pytest.raises(NotImplementedError, match='missing the required "forward" function'):
        nn.Module()(kindle.zeros(1))


# ---- hooks

def test_forward_hooks_order_and_modification():
    m = nn.Linear(2, 2)
    calls = []

    def pre1(mod, args):
        calls.append("pre1")
        return (args[0] * 0,)

    def pre2(mod, args):
        calls.append("pre2")
        assert float(args[0].abs().sum()) == 0  # sees pre1's replacement

    def post(mod, args, out):
        calls.append("post")
        return out + 100

    h1 = m.register_forward_pre_hook(pre1)
    m.register_forward_pre_hook(pre2)
    m.register_forward_hook(post)
    m.register_forward_hook(lambda mod, args, out: calls.append("first"), prepend=True)
    out = m(kindle.randn(3, 2))
    assert calls == ["pre1", "pre2", "first", "post"]
    np.testing.assert_allclose(_np(out), _np(m.bias.expand(3, 2) + 100), rtol=1e-6)
    h1.remove()
    h1.remove()  # removing twice is harmless
    calls.clear()
    with pytest.raises(AssertionError):
        m(kindle.ones(3, 2))  # pre2 now sees the unmodified input
    assert calls == ["pre2"]


def test_forward_hooks_with_kwargs_and_always_call():
    class M(nn.Module):
        def forward(self, x, scale=1.0):
            if scale < 0:
                raise ValueError("negative scale")
            return x * scale

    m = M()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 3.0}), with_kwargs=True)
    seen = []
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(kwargs["scale"]), with_kwargs=True)
    assert float(m(kindle.ones(1), scale=2.0)) == 3.0 and seen == [3.0]
    m2 = M()
    fired = []
    with m2.register_forward_hook(lambda mod, args, out: fired.append(out), always_call=True):
        with pytest.raises(ValueError):
            m2(kindle.ones(1), scale=-1.0)
    assert fired == [None]
    assert not m2._forward_hooks  # the context manager removed it
    bad = M()
    bad.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        bad(kindle.ones(1))


def _backward_hook_case(lib, torch_mode):
    """Two inputs (one needing no grad), a module with a tuple output; returns what the hooks saw
    and the input gradients."""
    class Two(lib.nn.Module if torch_mode else nn.Module):
        def forward(self, a, b, c):
            return a * b + c, (a * 2).sum(1)

    m = Two()
    seen = {}

    def pre(mod, grad_out):
        seen["pre"] = [None if g is None else g.detach().numpy().copy() for g in grad_out]
        return (grad_out[0] * 2, grad_out[1])

    def hook(mod, grad_in, grad_out):
        seen["in"] = [None if g is None else g.detach().numpy().copy() for g in grad_in]
        seen["out"] = [None if g is None else g.detach().numpy().copy() for g in grad_out]
        return (grad_in[0] * 10, None, grad_in[2])

    m.register_full_backward_pre_hook(pre)
    m.register_full_backward_hook(hook)
    rng = np.random.default_rng(1)
    av, bv, cv = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3))
    a = lib.tensor(av, requires_grad=True)
    b = lib.tensor(bv)
    c = lib.tensor(cv, requires_grad=True)
    y, s = m(a, b, c)
    (y.sum() * 3 + (s * s).sum()).backward()
    return seen, a.grad.numpy(), c.grad.numpy()


def test_full_backward_hooks_match_torch():
    torch = _torch()
    ks, ka, kc = _backward_hook_case(kindle, False)
    ts, ta, tc = _backward_hook_case(torch, True)
    for key in ("pre", "in", "out"):
        assert len(ks[key]) == len(ts[key]), key
        for kv, tv in zip(ks[key], ts[key]):
            assert (kv is None) == (tv is None), key
            if kv is not None:
                np.testing.assert_allclose(kv, tv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ka, ta, rtol=1e-5)
    np.testing.assert_allclose(kc, tc, rtol=1e-5)


def test_full_backward_hook_on_layers_and_removal():
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
    got = []
    h = m[0].register_full_backward_hook(lambda mod, gi, go: got.append((gi[0].shape, go[0].shape)))
    x = kindle.randn(5, 3, requires_grad=True)
    m(x).sum().backward()
    assert got == [((5, 3), (5, 4))]
    h.remove()
    m(x).sum().backward()
    assert len(got) == 1


def test_full_backward_hook_without_input_grad():
    m = nn.Linear(3, 2)
    got = []
    m.register_full_backward_hook(lambda mod, gi, go: got.append((gi, go[0].shape)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m(kindle.randn(4, 3)).sum().backward()
    assert got == [((None,), (4, 2))]
    assert m.weight.grad is not None


def test_backward_hook_wrong_count_raises():
    m = nn.Linear(2, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but expected 1"):
        m(kindle.randn(1, 2, requires_grad=True)).sum().backward()


# ---- printing

def test_repr_matches_torch():
    t, torch = _make_torch_net()
    assert repr(Net()) == repr(t)
    tn = torch.nn
    cases = [
        (nn.Sequential(OrderedDict(a=nn.Linear(2, 3, bias=False), b=nn.LeakyReLU(0.2, inplace=True))),
         tn.Sequential(OrderedDict(a=tn.Linear(2, 3, bias=False), b=tn.LeakyReLU(0.2, inplace=True)))),
        (nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh(), nn.ReLU()]),
         tn.ModuleList([tn.ReLU(), tn.ReLU(), tn.Tanh(), tn.ReLU()])),
        (nn.ModuleList(), tn.ModuleList()),
        (nn.Sequential(), tn.Sequential()),
    ]
    for k, tt in cases:
        assert repr(k) == repr(tt)
    kp = nn.ParameterList([nn.Parameter(kindle.zeros(2, 3)), kindle.zeros(1)])
    tp = tn.ParameterList([tn.Parameter(torch.zeros(2, 3)), torch.zeros(1)])
    assert repr(kp) == repr(tp).replace("torch.", "kindle.")
    kd = nn.ParameterDict({"a": nn.Parameter(kindle.zeros(2))})
    td = tn.ParameterDict({"a": tn.Parameter(torch.zeros(2))})
    assert repr(kd) == repr(td).replace("torch.", "kindle.")


# ---- containers

def test_sequential_ops():
    a, b, c = nn.Linear(2, 2), nn.ReLU(), nn.Tanh()
    s = nn.Sequential(a, b)
    assert len(s) == 2 and s[0] is a and s[-1] is b and list(s) == [a, b]
    with pytest.raises(IndexError, match="index 2 is out of range"):
        s[2]  # noqa: B018
    sl = s[0:1]
    assert isinstance(sl, nn.Sequential) and len(sl) == 1 and sl[0] is a
    s.append(c)
    assert s[2] is c
    s.insert(0, nn.Identity())
    assert isinstance(s[0], nn.Identity) and s[1] is a and list(s._modules) == ["0", "1", "2", "3"]
    s.extend([nn.Sigmoid()])
    assert len(s) == 5
    del s[0]
    assert s[0] is a and list(s._modules) == ["0", "1", "2", "3"]
    s[1] = nn.GELU()
    assert isinstance(s[1], nn.GELU)
    assert s.pop(1).__class__ is nn.GELU and len(s) == 3
    assert len(s + nn.Sequential(b)) == 4 and len(s * 2) == 6
    named = nn.Sequential(OrderedDict([("first", a), ("second", c)]))
    assert named.first is a and list(named._modules) == ["first", "second"]
    x = kindle.randn(3, 2)
    np.testing.assert_allclose(_np(named(x)), _np(c(a(x))))


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(2, 2)])
    ml.append(nn.ReLU())
    ml.extend([nn.Tanh(), nn.Sigmoid()])
    ml.insert(1, nn.Identity())
    assert [type(m).__name__ for m in ml] == ["Linear", "Identity", "ReLU", "Tanh", "Sigmoid"]
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    del ml[1]
    assert type(ml[1]).__name__ == "ReLU" and len(ml) == 4
    ml += [nn.GELU()]
    assert len(ml) == 5 and len(list(ml.parameters())) == 2
    with pytest.raises(TypeError, match="should be called with an iterable"):
        ml.extend(3)
    md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
    assert list(md) == ["b", "a"] and "a" in md and len(md) == 2
    md["c"] = nn.Linear(1, 1)
    assert list(md.keys()) == ["b", "a", "c"] and len(list(md.parameters())) == 2
    assert isinstance(md.pop("a"), nn.Tanh) and "a" not in md
    md.update([("d", nn.ReLU())])
    assert list(md.keys()) == ["b", "c", "d"]
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        md.update([("e", nn.ReLU(), 1)])
    md.clear()
    assert len(md) == 0


def test_parameter_list_and_dict():
    pl = nn.ParameterList([kindle.zeros(2), nn.Parameter(kindle.ones(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    pl.append(kindle.ones(1))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert isinstance(pl[1:], nn.ParameterList) and len(pl[1:]) == 2
    with pytest.raises(RuntimeError, match="ParameterList should not be called"):
        pl(1)
    pd = nn.ParameterDict({"w": kindle.zeros(2)})
    pd["b"] = nn.Parameter(kindle.ones(1))
    assert isinstance(pd["w"], nn.Parameter) and list(pd.keys()) == ["w", "b"] and "b" in pd
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"]
    assert pd.get("zz") is None and isinstance(pd.pop("w"), nn.Parameter) and len(pd) == 1
    with pytest.raises(TypeError, match="not a string"):
        pd[1] = kindle.zeros(1)
    holder = nn.Module()
    holder.plist = pl
    assert len(list(holder.parameters())) == 3


# ---- deepcopy and pickling

def test_deepcopy_module_keeps_sharing_and_grads():
    a = nn.Linear(3, 3)
    m = nn.Sequential(a, nn.ReLU(), a)
    m(kindle.randn(2, 3)).sum().backward()
    c = copy.deepcopy(m)
    assert c[0] is c[2] and c[0] is not a
    assert isinstance(c[0].weight, nn.Parameter) and c[0].weight.requires_grad and c[0].weight.is_leaf
    np.testing.assert_array_equal(_np(c[0].weight), _np(a.weight))
    np.testing.assert_array_equal(c[0].weight.grad.numpy(), a.weight.grad.numpy())
    with kindle.no_grad():
        c[0].weight.add_(1)
    assert not np.array_equal(_np(c[0].weight), _np(a.weight))  # the copy owns its memory
    b = nn.BatchNorm1d(2)
    assert copy.deepcopy(b).num_batches_tracked.dtype == kindle.int64


def test_deepcopy_tensor():
    t = kindle.randn(2, 2, requires_grad=True)
    t.tag = "x"
    c = copy.deepcopy(t)
    assert c.requires_grad and c.is_leaf and c.tag == "x" and type(c) is kindle.Tensor
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(t * 2)
    d = {"a": t, "b": t}
    cd = copy.deepcopy(d)
    assert cd["a"] is cd["b"]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"])
def test_pickle_tensor_round_trip(dtype):
    t = (kindle.randn(3, 4) * 5).to(getattr(kindle, dtype))
    for x in (t, t.t(), t[0, 1]):
        r = pickle.loads(pickle.dumps(x))
        assert r.dtype == x.dtype and r.shape == x.shape
        assert bool((r == x).all())


def test_pickle_parameter_and_module():
    p = nn.Parameter(kindle.randn(2))
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is nn.Parameter and r.requires_grad
    assert not pickle.loads(pickle.dumps(nn.Parameter(kindle.zeros(1), requires_grad=False))).requires_grad
    m = Net()
    m2 = pickle.loads(pickle.dumps(m))
    for (n1, v1), (n2, v2) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert n1 == n2 and v1.dtype == v2.dtype and bool((v1 == v2).all())
    assert isinstance(m2.features[0].weight, nn.Parameter)


# ---- nn.utils

def _grads_pair(torch, norm_type, scale=1.0):
    rng = np.random.default_rng(2)
    shapes = [(3, 4), (4,), (2, 2, 2)]
    gs = [rng.standard_normal(s).astype(np.float32) * scale for s in shapes]
    kp = [nn.Parameter(kindle.zeros(*s)) for s in shapes]
    tp = [torch.nn.Parameter(torch.zeros(*s)) for s in shapes]
    for k, t, g in zip(kp, tp, gs):
        k.grad = kindle.from_numpy(g.copy())
        t.grad = torch.from_numpy(g.copy())
    return kp, tp


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf"), "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    torch = _torch()
    kp, tp = _grads_pair(torch, norm_type)
    kn = clip_grad_norm_(kp, max_norm, norm_type)
    tn = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type)
    np.testing.assert_allclose(float(kn), float(tn), rtol=1e-5)
    for k, t in zip(kp, tp):
        np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_edge_cases():
    p = nn.Parameter(kindle.zeros(2))
    assert float(clip_grad_norm_([p], 1.0)) == 0.0  # no gradients
    assert float(clip_grad_norm_(p, 1.0)) == 0.0  # a single tensor
    p.grad = kindle.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    clip_grad_norm_([p], 1.0, foreach=True)  # foreach accepted


def test_clip_grad_value_matches_torch():
    torch = _torch()
    kp, tp = _grads_pair(torch, 2.0, scale=3.0)
    clip_grad_value_(kp, 1.5)
    torch.nn.utils.clip_grad_value_(tp, 1.5)
    for k, t in zip(kp, tp):
        np.testing.assert_array_equal(k.grad.numpy(), t.grad.numpy())


def test_parameters_vector_round_trip():
    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    v = parameters_to_vector(m.parameters())
    assert v.shape == (sum(p.numel() for p in m.parameters()),)
    expected = np.concatenate([_np(p).ravel() for p in m.parameters()])
    np.testing.assert_array_equal(_np(v), expected)
    new = kindle.arange(0, v.numel(), 1, dtype=kindle.float32)
    vector_to_parameters(new, m.parameters())
    np.testing.assert_array_equal(_np(m[0].weight).ravel(), np.arange(6, dtype=np.float32))
    assert isinstance(m[0].weight, nn.Parameter)
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        vector_to_parameters([1.0], m.parameters())
    with pytest.raises(RuntimeError, match="has 3 elements but the parameters hold 11"):
        vector_to_parameters(kindle.zeros(3), m.parameters())


def test_global_module_hooks_match_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        mm = lib.nn.modules.module
        log = []
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.ReLU())
        local = net[0].register_forward_hook(lambda m, a, o: log.append(("local", type(m).__name__)))
        handles = [
            mm.register_module_forward_pre_hook(lambda m, a: log.append(("pre", type(m).__name__))),
            mm.register_module_forward_hook(lambda m, a, o: (log.append(("post", type(m).__name__)), o * 2)[1]),
            mm.register_module_forward_hook(lambda m, a, kw, o: log.append(("kw", sorted(kw))), with_kwargs=True),
            mm.register_module_full_backward_hook(lambda m, gi, go: log.append(("bw", type(m).__name__))),
            mm.register_module_full_backward_pre_hook(lambda m, go: log.append(("bwpre", type(m).__name__))),
        ]
        x = lib.ones(1, 3, requires_grad=True)
        out = net(x)
        out.sum().backward()
        for h in handles:
            h.remove()
        local.remove()
        plain = net(x)
        always = mm.register_module_forward_hook(lambda m, a, o: log.append(("always", o)), always_call=True)

        class Boom(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")
        with pytest.raises(ValueError):
            Boom()(x)
        always.remove()
        reg = [mm.register_module_parameter_registration_hook(lambda m, n, p: log.append(("param", n))),
               mm.register_module_buffer_registration_hook(lambda m, n, b: log.append(("buf", n))),
               mm.register_module_module_registration_hook(lambda m, n, s: log.append(("mod", n)))]
        lib.nn.BatchNorm1d(2)
        for h in reg:
            h.remove()
        lib.nn.Linear(1, 1)
        return log, out.detach().tolist(), plain.detach().tolist(), x.grad.tolist()
    k, t = run(kindle), run(torch)
    assert k == t
