"""Gaps a compatibility sweep of kindle.nn against torch.nn found, each checked against torch
where it is importable: TransformerEncoder's nested-tensor ("sparsity fast path") conditions,
outputs and construction warning; the grad_output / grad_input entries full backward hooks see;
the legacy register_backward_hook; Module.compile; the private state-dict hook registrations;
nn.common_types, the nn.modules submodules, nn.utils.skip_init and the memory-format converters,
the deprecated nn.init aliases, nn.attention.bias; the keyword-only bias= of the lazy and sync
norms; exception types and warnings of the losses and layers."""
import copy
import importlib
import pickle
import types
import warnings

import numpy as np
import pytest

import kindle
import kindle.nn as nn
import kindle.nn.functional as F
from kindle.nn.modules import module as kmodule

RTOL, ATOL = 1e-4, 2e-5


def _torch():
    torch = pytest.importorskip("torch")
    for sub in ("torch.nn.attention.bias", "torch.nn.common_types", "torch.nn.utils.memory_format"):
        importlib.import_module(sub)
    return torch


def _k(t, requires_grad=False):
    out = kindle.from_numpy(np.ascontiguousarray(t.detach().numpy()))
    return out.requires_grad_() if requires_grad else out


def _np(t):
    return t.detach().numpy()


def _close(k, t, what=""):
    assert tuple(k.shape) == tuple(t.shape), what
    np.testing.assert_allclose(_np(k), _np(t), rtol=RTOL, atol=ATOL, equal_nan=True, err_msg=what)


def _load(km, tm):
    assert list(km.state_dict()) == list(tm.state_dict())
    km.load_state_dict({k: _k(v) for k, v in tm.state_dict().items()})


def _messages(record, category=None):
    return [str(w.message) for w in record if category is None or issubclass(w.category, category)]


# ---- 1. TransformerEncoder: torch's nested-tensor (sparsity) fast path

_NESTED = "enable_nested_tensor is True"


def _encoders(torch, layer_kw=None, enc_kw=None, norm=False, tweak=None):
    """The same encoder in both libraries (torch's weights), and the warnings each constructor gave."""
    kw = dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)
    kw.update(layer_kw or {})
    enc_kw = enc_kw or {}
    out = []
    for lib in (torch, kindle):
        layer_kw_lib = dict(kw)
        if kw.get("activation") == "tanh":
            layer_kw_lib["activation"] = lib.tanh
        layer = lib.nn.TransformerEncoderLayer(**layer_kw_lib)
        if tweak is not None:
            tweak(layer)
        norm_mod = lib.nn.LayerNorm(8) if norm else None
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            enc = lib.nn.TransformerEncoder(layer, 2, norm=norm_mod, **enc_kw)
        out.append((enc, [m for m in _messages(rec) if m.startswith(_NESTED)]))
    (tm, tw), (km, kw_) = out
    if norm:
        with torch.no_grad():
            tm.norm.bias.normal_()  # LayerNorm(0) is its bias: the padded rows show it
    _load(km, tm)
    return tm, km, tw, kw_


def _run(torch, tm, km, src, mask=None, attn_mask=None, train=False, grad=False, is_causal=None):
    tm.train(train)
    km.train(train)
    outs = []
    for lib, m, conv in ((torch, tm, lambda t: t), (kindle, km, _k)):
        ctx = lib.enable_grad() if grad else lib.no_grad()
        with ctx, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's "nested tensors are in prototype stage"
            outs.append(m(conv(src), src_key_padding_mask=None if mask is None else conv(mask),
                          mask=None if attn_mask is None else conv(attn_mask), is_causal=is_causal))
    return outs


def _pad_mask(torch, rows):
    return torch.tensor(rows).bool()


def test_encoder_fast_path_zeros_padded_positions():
    torch = _torch()
    torch.manual_seed(0)
    tm, km, _, _ = _encoders(torch)
    src = torch.randn(2, 5, 8)
    mask = _pad_mask(torch, [[0, 0, 0, 1, 1], [0, 0, 0, 0, 0]])
    ty, ky = _run(torch, tm, km, src, mask)
    assert bool((ty[0, 3:] == 0).all())  # torch's behaviour, which is the spec
    assert bool((ky[0, 3:] == 0).all())
    _close(ky, ty)
    # the same model in training mode or with grad enabled: the composed path, values there
    for kwargs in (dict(grad=True), dict(train=True)):
        ty, ky = _run(torch, tm, km, src, mask, **kwargs)
        assert not bool((ty[0, 3:] == 0).all()) and not bool((ky[0, 3:] == 0).all())
        _close(ky, ty, str(kwargs))


@pytest.mark.parametrize("case", [
    "base", "grad", "train", "norm_first", "batch_first_false", "gelu", "gelu_module", "tanh", "odd_heads",
    "no_bias", "disabled", "eps_mismatch", "attn_mask", "not_left_aligned", "not_left_aligned_no_check",
    "fully_padded", "float_mask", "final_norm", "is_causal", "unbatched", "no_padding", "kdim_vdim"])
def test_encoder_fast_path_conditions_match_torch(case):
    """Every condition of torch's sparsity fast path (and its outputs) on the same weights: where
    torch writes zeros, so does Kindle, and every other value agrees."""
    torch = _torch()
    torch.manual_seed(1)
    layer_kw, enc_kw, norm, tweak = {}, {}, False, None
    rows = [[0, 0, 0, 1, 1], [0, 0, 0, 0, 1]]
    run_kw = {}
    if case == "grad":
        run_kw["grad"] = True
    elif case == "train":
        run_kw["train"] = True
    elif case == "norm_first":
        layer_kw["norm_first"] = True
    elif case == "batch_first_false":
        layer_kw["batch_first"] = False
    elif case == "gelu":
        layer_kw["activation"] = "gelu"
    elif case == "gelu_module":
        layer_kw["activation"] = None  # set below per library
    elif case == "tanh":
        layer_kw["activation"] = "tanh"
    elif case == "odd_heads":
        layer_kw["nhead"] = 1
    elif case == "no_bias":
        layer_kw["bias"] = False
    elif case == "disabled":
        enc_kw["enable_nested_tensor"] = False
    elif case == "eps_mismatch":
        def tweak(layer):
            layer.norm2.eps = 1e-3
    elif case == "not_left_aligned":
        rows = [[1, 0, 0, 1, 1], [0, 0, 0, 0, 0]]
    elif case == "not_left_aligned_no_check":
        rows = [[1, 0, 0, 1, 1], [0, 0, 0, 0, 0]]
        enc_kw["mask_check"] = False
    elif case == "fully_padded":
        rows = [[1, 1, 1, 1, 1], [0, 0, 0, 1, 1]]
    elif case == "final_norm":
        norm = True
    elif case == "no_padding":
        rows = [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0]]
    if case == "gelu_module":
        tm_, km_ = None, None
        layers = []
        for lib in (torch, kindle):
            layers.append(lib.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                                         activation=lib.nn.GELU()))
        tm_ = torch.nn.TransformerEncoder(layers[0], 2)
        km_ = nn.TransformerEncoder(layers[1], 2)
        _load(km_, tm_)
        tm, km = tm_, km_
    elif case == "kdim_vdim":
        tm, km, _, _ = _encoders(torch)
        for m in (tm, km):
            m.use_nested_tensor = True  # what torch's constructor checks: the layer's attention
            m.layers[0].self_attn._qkv_same_embed_dim = True
    else:
        tm, km, _, _ = _encoders(torch, layer_kw, enc_kw, norm, tweak)
    assert km.use_nested_tensor == tm.use_nested_tensor
    batch_first = layer_kw.get("batch_first", True)
    src = torch.randn(2, 5, 8) if batch_first else torch.randn(5, 2, 8)
    mask = _pad_mask(torch, rows)
    attn_mask = None
    if case == "attn_mask":
        attn_mask = torch.zeros(5, 5).bool()
    if case == "float_mask":
        mask = torch.zeros(2, 5).masked_fill(mask, float("-inf"))
    if case == "is_causal":
        run_kw["is_causal"] = True
    if case == "unbatched":
        src, mask = src[1], mask[1]
    ty, ky = _run(torch, tm, km, src, mask, attn_mask=attn_mask, **run_kw)
    np.testing.assert_array_equal(_np(ky) == 0, _np(ty) == 0, err_msg=case)
    _close(ky, ty, case)


@pytest.mark.parametrize("case", ["norm_first", "batch_first", "tanh", "odd_heads", "no_bias", "eps", "not_layer",
                                  "disabled", "ok"])
def test_encoder_nested_tensor_warning_matches_torch(case):
    torch = _torch()
    msgs = []
    for lib in (torch, kindle):
        kw = dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)
        enc_kw = {}
        if case == "norm_first":
            kw["norm_first"] = True
        elif case == "batch_first":
            kw["batch_first"] = False
        elif case == "tanh":
            kw["activation"] = lib.tanh
        elif case == "odd_heads":
            kw["nhead"] = 1
        elif case == "no_bias":
            kw["bias"] = False
        elif case == "disabled":
            kw["norm_first"] = True
            enc_kw["enable_nested_tensor"] = False
        layer = lib.nn.TransformerEncoderLayer(**kw)
        if case == "eps":
            layer.norm1.eps = 1e-6
        if case == "not_layer":
            layer = lib.nn.Linear(8, 8)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            enc = lib.nn.TransformerEncoder(layer, 1, **enc_kw)
        msgs.append((_messages(rec, UserWarning), enc.use_nested_tensor, enc.enable_nested_tensor))
        if case not in ("ok", "disabled"):
            assert rec and rec[0].filename == __file__  # the warning names the caller's line
    assert msgs[1] == msgs[0]
    assert bool(msgs[0][0]) == (case not in ("ok", "disabled"))


def test_encoder_layer_with_builtin_activation_clones():
    """TransformerEncoder deep-copies its layer: a kindle builtin (kindle.tanh) as activation
    copies by reference, as torch's builtins do."""
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=kindle.tanh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = nn.TransformerEncoder(layer, 2)
    assert enc.layers[1].activation is kindle.tanh
    assert copy.deepcopy(kindle.tanh) is kindle.tanh
    assert pickle.loads(pickle.dumps(kindle.tanh)) is kindle.tanh


# ---- 2. full backward hooks: grad_output / grad_input entries


class _TwoOut:
    @staticmethod
    def make(lib):
        class M(lib.nn.Module):
            def forward(self, a, b):
                return a * b, a + b
        return M()


def _hook_record(lib, module, inputs, loss):
    seen = []

    def hook(mod, gi, go):
        seen.append(([None if g is None else _np(g).tolist() for g in gi],
                     [None if g is None else _np(g).tolist() for g in go]))
    module.register_full_backward_hook(hook)
    loss(module(*inputs)).backward()
    return seen


@pytest.mark.parametrize("case", ["first_output", "second_output", "b_no_grad", "non_tensor_arg", "unused_input"])
def test_full_backward_hook_entries_match_torch(case):
    torch = _torch()
    res = []
    for lib in (torch, kindle):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=case != "b_no_grad")
        if case == "non_tensor_arg":
            class N(lib.nn.Module):
                def forward(self, x, k, y):
                    return x * k, y
            res.append(_hook_record(lib, N(), (a, 2.0, b), lambda o: o[0].sum()))
        elif case == "unused_input":
            class U(lib.nn.Module):
                def forward(self, x, y):
                    return x * 2
            res.append(_hook_record(lib, U(), (a, b), lambda o: o.sum()))
        else:
            idx = 1 if case == "second_output" else 0
            res.append(_hook_record(lib, _TwoOut.make(lib), (a, b), lambda o, i=idx: o[i].sum()))
    assert res[1] == res[0]
    if case == "first_output":
        assert res[1][0][1][1] is None  # the unused output's gradient is None, not zeros


def test_full_backward_pre_hook_sees_none_for_unused_output():
    torch = _torch()
    res = []
    for lib in (torch, kindle):
        m = _TwoOut.make(lib)
        seen = []
        m.register_full_backward_pre_hook(lambda mod, go: seen.append([g is None for g in go]))
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        m(a, a * 1)[1].sum().backward()
        res.append(seen)
    assert res[1] == res[0] == [[True, False]]


def test_full_backward_hook_warns_when_no_input_requires_grad():
    torch = _torch()
    res = []
    for lib in (torch, kindle):
        lin = lib.nn.Linear(2, 2)
        seen = []
        lin.register_full_backward_hook(lambda m, gi, go: seen.append(gi))
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            lin(lib.ones(3, 2)).sum().backward()
        res.append((seen, [m[:40] for m in _messages(rec)], [w.filename for w in rec]))
    assert res[1][0] == res[0][0] == [(None,)]
    assert res[1][1] == res[0][1] and res[1][1]
    assert res[1][2] == [__file__]


# ---- 3. the missing pieces

def test_legacy_register_backward_hook_matches_torch():
    torch = _torch()
    res = []
    for lib in (torch, kindle):
        x = lib.tensor([[1.0, -2.0, 3.0]], requires_grad=True)
        got = []
        m = lib.nn.Tanh()
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            h = m.register_backward_hook(lambda mod, gi, go: got.append(
                (type(mod).__name__, [_np(g).round(5).tolist() for g in gi], [_np(g).round(5).tolist() for g in go])))
            m(x * 1).sum().backward()
            h.remove()
            m(x * 1).sum().backward()  # removed: not called again
        res.append((got, [(w.category, str(w.message)[:50]) for w in rec]))
        # the returned grad_input replaces the node's
        m2 = lib.nn.Tanh()
        m2.register_backward_hook(lambda mod, gi, go: (lib.ones_like(gi[0]),))
        a = lib.tensor([0.5, 1.0], requires_grad=True)
        m2(a * 1).sum().backward()
        res[-1] += (_np(a.grad).tolist(),)
        # a leaf input: torch warns that the forward has several autograd nodes
        m3 = lib.nn.ReLU()
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            m3.register_backward_hook(lambda *args: None)
            m3(a).sum().backward()
        res[-1] += ([w.category for w in rec],)
        # mixing the two kinds on one module
        errs = []
        for first, second in (("register_backward_hook", "register_full_backward_hook"),
                              ("register_full_backward_hook", "register_backward_hook")):
            mm = lib.nn.ReLU()
            getattr(mm, first)(lambda *args: None)
            with pytest.raises(RuntimeError) as e:
                getattr(mm, second)(lambda *args: None)
            errs.append(str(e.value))
        res[-1] += (errs,)
    assert res[1] == res[0]
    assert res[1][0] and res[1][3] == [FutureWarning]


def test_legacy_global_backward_hook():
    torch = _torch()
    res = []
    for lib, mod in ((torch, torch.nn.modules.module), (kindle, kmodule)):
        saved = mod._global_is_full_backward_hook
        mod._global_is_full_backward_hook = None
        try:
            m = lib.nn.Tanh()
            seen = []
            h = mod.register_module_backward_hook(lambda module, gi, go: seen.append(type(module).__name__))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                x = lib.ones(2, requires_grad=True)
                m(x * 1).sum().backward()
            with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full"):
                mod.register_module_full_backward_hook(lambda *a: None)
            h.remove()
            flag = mod._global_is_full_backward_hook
        finally:
            mod._global_is_full_backward_hook = saved
        res.append((seen, flag))
    assert res[1] == res[0] == (["Tanh"], False)


def test_module_compile_in_place():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    x = kindle.randn(2, 3)
    expected = m(x)
    calls = []
    m.register_forward_hook(lambda *args: calls.append(1))
    assert m.compile() is None
    assert m._compiled_call_impl is not None
    np.testing.assert_array_equal(_np(m(x)), _np(expected))
    assert calls == [1]  # hooks still run: the compiled function is the whole call
    assert list(m.state_dict()) == ["0.weight", "0.bias"]  # no "_orig_mod." prefix: the module itself
    m._forward_hooks.clear()
    assert copy.deepcopy(m)._compiled_call_impl is None  # torch does not copy or pickle it
    assert pickle.loads(pickle.dumps(m))._compiled_call_impl is None
    lin = nn.Linear(2, 2)
    lin.compile(mode="max-autotune")
    with pytest.raises(RuntimeError, match="Invalid backend"):
        lin.compile(backend="no-such-backend")


def test_private_state_dict_hooks_match_torch():
    torch = _torch()
    res = []
    for lib in (torch, kindle):
        lin = lib.nn.Linear(2, 1)
        # _register_state_dict_hook may return a new state dict (the root's is returned)
        lin._register_state_dict_hook(lambda mod, sd, prefix, meta: {"only": 1})
        out = lin.state_dict()
        # the public post hook must return None
        lin2 = lib.nn.Linear(2, 1)

        def public(mod, sd, prefix, meta):
            return {"x": 1}
        lin2.register_state_dict_post_hook(public)
        with pytest.raises(RuntimeError, match="must return None"):
            lin2.state_dict()
        with pytest.raises(RuntimeError, match="previously registered via register_state_dict_post_hook"):
            lin2._register_state_dict_hook(public)
        # _register_load_state_dict_pre_hook: with_module decides whether the module comes first
        calls = []
        lin3 = lib.nn.Linear(2, 1)
        lin3._register_load_state_dict_pre_hook(lambda *args: calls.append(("no_module", len(args), args[1])))
        lin3._register_load_state_dict_pre_hook(lambda *args: calls.append(
            ("module", len(args), args[0] is lin3, args[2])), with_module=True)
        lin3.load_state_dict(lib.nn.Linear(2, 1).state_dict())
        res.append((out, calls))
    assert res[1] == res[0]


def test_common_types():
    torch = _torch()
    from kindle.nn import common_types
    public = [n for n in dir(torch.nn.common_types) if n.startswith("_") and n.endswith("_t")]
    assert public and all(hasattr(common_types, n) for n in public)
    assert hasattr(nn, "common_types")


def test_modules_submodules_match_torch():
    torch = _torch()
    tmods = torch.nn.modules
    names = [n for n in dir(tmods) if isinstance(getattr(tmods, n), types.ModuleType)]
    # torch's private autograd Functions (_functions) and the chunked linear cross-entropy
    # options (LinearCrossEntropyLoss is not in Kindle yet)
    skip = {"_functions", "linear_cross_entropy_options"}
    for name in names:
        if name in skip:
            continue
        kmod = getattr(nn.modules, name, None)
        assert isinstance(kmod, types.ModuleType), name
        assert importlib.import_module(f"kindle.nn.modules.{name}") is kmod
        for cls in getattr(getattr(tmods, name), "__all__", []):
            if cls == "LinearCrossEntropyLoss":
                continue
            assert hasattr(kmod, cls), f"{name}.{cls}"
            if hasattr(nn, cls):
                assert getattr(kmod, cls) is getattr(nn, cls), f"{name}.{cls}"
    from kindle.nn.modules.utils import consume_prefix_in_state_dict_if_present
    sd = nn.Sequential(nn.Linear(2, 2)).state_dict(prefix="module.")
    consume_prefix_in_state_dict_if_present(sd, "module.")
    assert list(sd) == ["0.weight", "0.bias"] and "0" in sd._metadata


def test_skip_init():
    m = nn.utils.skip_init(nn.Linear, 5, 1)
    assert isinstance(m.weight, nn.Parameter) and tuple(m.weight.shape) == (1, 5)
    assert m.weight.device.type == "cpu" and m.weight.requires_grad
    m2 = nn.utils.skip_init(nn.Linear, in_features=6, out_features=2, bias=False)
    assert tuple(m2.weight.shape) == (2, 6) and m2.bias is None
    from kindle.nn.utils.init import skip_init
    assert skip_init is nn.utils.skip_init
    with pytest.raises(RuntimeError, match="'device' arg"):
        nn.utils.skip_init(nn.ReLU)
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(int)


def test_convert_conv_weight_memory_format():
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Sequential(nn.ConvTranspose2d(4, 2, 3)), nn.Conv3d(2, 3, 3),
                        nn.Linear(2, 2))
    x = kindle.randn(1, 3, 6, 6)
    before = net[1](net[0](x))
    assert nn.utils.convert_conv2d_weight_memory_format(net, kindle.channels_last) is net
    assert net[0].weight.is_contiguous(memory_format=kindle.channels_last)
    assert net[1][0].weight.is_contiguous(memory_format=kindle.channels_last)
    assert isinstance(net[0].weight, nn.Parameter)
    assert not net[2].weight.is_contiguous(memory_format=kindle.channels_last_3d)
    np.testing.assert_allclose(_np(net[1](net[0](x))), _np(before), rtol=1e-5, atol=1e-6)
    nn.utils.convert_conv3d_weight_memory_format(net, kindle.channels_last_3d)
    assert net[2].weight.is_contiguous(memory_format=kindle.channels_last_3d)
    from kindle.nn.utils import memory_format
    assert memory_format.convert_conv2d_weight_memory_format is nn.utils.convert_conv2d_weight_memory_format


@pytest.mark.parametrize("name,args", [("uniform", ()), ("normal", ()), ("constant", (0.5,)), ("eye", ()),
                                       ("xavier_uniform", ()), ("xavier_normal", ()), ("kaiming_uniform", ()),
                                       ("kaiming_normal", ()), ("orthogonal", ()), ("sparse", (0.5,))])
def test_deprecated_init_aliases(name, args):
    torch = _torch()
    msgs = []
    for lib in (torch, kindle):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            getattr(lib.nn.init, name)(lib.empty(4, 3), *args)
        msgs.append([(w.category, str(w.message), w.filename) for w in rec])
    assert msgs[1] == msgs[0]
    kindle.manual_seed(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = getattr(nn.init, name)(kindle.empty(4, 3), *args)
    kindle.manual_seed(3)
    b = getattr(nn.init, name + "_")(kindle.empty(4, 3), *args)
    np.testing.assert_array_equal(_np(a), _np(b))
    assert getattr(nn.init, name).__name__ == name


@pytest.mark.parametrize("variant", ["lower_right", "upper_left", "square"])
def test_attention_bias_matches_torch(variant):
    torch = _torch()
    from kindle.nn.attention import bias as kbias
    tbias = torch.nn.attention.bias
    sizes = (5, 5) if variant == "square" else (3, 5)
    make = "causal_upper_left" if variant == "upper_left" else "causal_lower_right"
    torch.manual_seed(0)
    q = torch.randn(2, 2, sizes[0], 8, requires_grad=True)
    k = torch.randn(2, 2, sizes[1], 8, requires_grad=True)
    v = torch.randn(2, 2, sizes[1], 8)
    tout = torch.nn.functional.scaled_dot_product_attention(q, k, v, getattr(tbias, make)(*sizes))
    kq, kk = _k(q, True), _k(k, True)
    kb = getattr(kbias, make)(*sizes)
    assert isinstance(kb, kbias.CausalBias) and isinstance(kb, kindle.Tensor)
    kout = F.scaled_dot_product_attention(kq, kk, _k(v), kb)
    _close(kout, tout)
    g = torch.randn(tout.shape)
    tout.backward(g)
    kout.backward(_k(g))
    _close(kq.grad, q.grad)
    _close(kk.grad, k.grad)
    np.testing.assert_array_equal(_np(kb._materialize()), _np(getattr(tbias, make)(*sizes)._materialize()))
    assert repr(kb) == repr(getattr(tbias, make)(*sizes)).replace("torch", "kindle")
    with pytest.raises(ValueError, match="causal=True"):
        F.scaled_dot_product_attention(kq, kk, _k(v), kb, is_causal=True)


def test_attention_bias_warns_for_lower_right_longer_query():
    with pytest.warns(UserWarning, match="Lower right causal bias will produce NaNs"):
        nn.attention.bias.causal_lower_right(5, 3)
    with pytest.raises(AssertionError):
        nn.attention.bias.causal_upper_left(1, 2, 3)


# ---- 4. the keyword-only bias= of the lazy and sync norms

@pytest.mark.parametrize("name,dims", [("LazyBatchNorm1d", 1), ("LazyBatchNorm2d", 2), ("LazyBatchNorm3d", 3),
                                       ("LazyInstanceNorm1d", 1), ("LazyInstanceNorm2d", 2),
                                       ("LazyInstanceNorm3d", 3)])
def test_lazy_norm_bias_false_matches_torch(name, dims):
    torch = _torch()
    res = []
    for lib in (torch, kindle):
        m = getattr(lib.nn, name)(bias=False)
        before = repr(m)
        m(lib.ones(2, 3, *([4] * dims)))
        res.append((before, repr(m), list(m.state_dict()), m.bias is None, type(m).__name__))
    assert res[1] == res[0]


def test_uninitialized_lazy_modules_deepcopy():
    """torch deep-copies a lazy module before its first forward (new placeholders); each copy then
    materialises on its own."""
    for m, x in ((nn.LazyLinear(3), kindle.randn(2, 4)), (nn.LazyBatchNorm1d(bias=False), kindle.randn(4, 5))):
        c = copy.deepcopy(m)
        assert type(c) is type(m) and c.weight is not m.weight and c.has_uninitialized_params()
        c(x)
        assert type(m).__name__.startswith("Lazy") and not type(c).__name__.startswith("Lazy")
        assert c.weight.shape[-1] == x.shape[-1] or c.weight.shape[0] == x.shape[1]


def test_sync_batchnorm_bias_false_matches_torch():
    torch = _torch()
    t = torch.nn.SyncBatchNorm(3, bias=False)
    k = nn.SyncBatchNorm(3, bias=False)
    assert repr(k) == repr(t) and list(k.state_dict()) == list(t.state_dict()) and k.bias is None


# ---- 5. exception types


def _raises_same(torch, fn_t, fn_k):
    try:
        fn_t()
    except Exception as e:  # noqa: BLE001
        texc = type(e)
    else:
        texc = None
    try:
        fn_k()
    except Exception as e:  # noqa: BLE001
        kexc = type(e)
    else:
        kexc = None
    return texc, kexc


_EXC_CASES = {
    "mse_int64": lambda L: L.nn.functional.mse_loss(L.tensor([1, 2]), L.tensor([1, 3])),
    "mse_int64_none": lambda L: L.nn.functional.mse_loss(L.tensor([1, 2]), L.tensor([1, 3]), reduction="none"),
    "mse_bool": lambda L: L.nn.functional.mse_loss(L.tensor([True]), L.tensor([False])),
    "mse_uint8": lambda L: L.nn.MSELoss()(L.tensor([1, 2]).byte(), L.tensor([1, 3]).byte()),
    "mse_int_float_ok": lambda L: L.nn.functional.mse_loss(L.tensor([1, 2]), L.tensor([1.0, 3.0])),
    "group_norm_0": lambda L: L.nn.functional.group_norm(L.randn(2, 4, 3), 0),
    "group_norm_negative": lambda L: L.nn.functional.group_norm(L.randn(2, 4, 3), -2),
    "group_norm_one_value": lambda L: L.nn.functional.group_norm(L.randn(1, 2, 1), 2),
    "bce_target_above_1": lambda L: L.nn.functional.binary_cross_entropy(L.rand(3), L.tensor([0.0, 1.0, 2.0])),
    "bce_target_negative": lambda L: L.nn.BCELoss()(L.rand(3), L.tensor([0.0, 1.0, -0.5])),
    "bce_target_nan": lambda L: L.nn.functional.binary_cross_entropy(L.rand(1), L.tensor([float("nan")])),
    "bce_target_float64": lambda L: L.nn.functional.binary_cross_entropy(L.rand(3), L.rand(3, dtype=L.float64)),
    "bce_input_float64": lambda L: L.nn.functional.binary_cross_entropy(L.rand(3, dtype=L.float64), L.rand(3)),
    "bce_target_int64": lambda L: L.nn.functional.binary_cross_entropy(L.rand(3), L.tensor([0, 1, 1])),
    "bce_weight_float64_ok": lambda L: L.nn.functional.binary_cross_entropy(L.rand(3), L.rand(3),
                                                                            weight=L.rand(3, dtype=L.float64)),
    "bce_logits_int64_target": lambda L: L.nn.functional.binary_cross_entropy_with_logits(
        L.randn(3), L.tensor([0, 1, 1])),
    "bce_logits_module_int_target": lambda L: L.nn.BCEWithLogitsLoss()(L.randn(3),
                                                                       L.tensor([0, 1, 1], dtype=L.int32)),
    "bce_logits_float64_target_ok": lambda L: L.nn.functional.binary_cross_entropy_with_logits(
        L.randn(3), L.rand(3, dtype=L.float64)),
    "linear_numpy": lambda L: L.nn.Linear(3, 2)(np.ones((2, 3), dtype=np.float32)),
    "conv2d_numpy": lambda L: L.nn.Conv2d(1, 1, 1)(np.ones((1, 1, 2, 2), dtype=np.float32)),
    "relu_numpy": lambda L: L.nn.functional.relu(np.ones(3)),
    "embedding_bag_decreasing": lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2, 3, 4]), L.randn(5, 3),
                                                                        L.tensor([0, 3, 1])),
    "embedding_bag_decreasing_sum": lambda L: L.nn.EmbeddingBag(5, 3, mode="sum")(L.tensor([1, 2, 3, 4]),
                                                                                  L.tensor([0, 4, 3])),
    "embedding_bag_decreasing_max_ok": lambda L: L.nn.functional.embedding_bag(
        L.tensor([1, 2, 3, 4]), L.randn(5, 3), L.tensor([0, 3, 1]), mode="max"),
    "embedding_bag_include_last_decreasing": lambda L: L.nn.functional.embedding_bag(
        L.tensor([1, 2, 3, 4]), L.randn(5, 3), L.tensor([0, 3, 2]), include_last_offset=True),
    "embedding_bag_repeated_offsets_ok": lambda L: L.nn.functional.embedding_bag(
        L.tensor([1, 2, 3, 4]), L.randn(5, 3), L.tensor([0, 1, 1])),
    "soft_margin_broadcast_ok": lambda L: L.nn.functional.soft_margin_loss(L.randn(3, 4), L.randn(3, 1)),
}


@pytest.mark.parametrize("case", sorted(_EXC_CASES))
def test_exception_types_match_torch(case):
    torch = _torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        texc, kexc = _raises_same(torch, lambda: _EXC_CASES[case](torch), lambda: _EXC_CASES[case](kindle))
    assert kexc is texc, (case, texc, kexc)


def test_aten_forms_keep_torch_behaviour():
    """torch.group_norm / torch.kl_div (the ATen ops, kindle._aten_nn here) have neither
    torch.nn.functional's batch-size check nor its reduction='mean' warning."""
    torch = _torch()
    for lib in (torch, kindle):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert tuple(lib.group_norm(lib.ones(1, 2, 1), 2).shape) == (1, 2, 1)
            lib.kl_div(lib.zeros(2, 3), lib.ones(2, 3), 1)
        with pytest.raises(RuntimeError):
            lib.group_norm(lib.ones(1, 2, 1), 0)


def test_soft_margin_loss_broadcasts_like_torch():
    torch = _torch()
    a, b = torch.randn(3, 4), torch.randn(3, 1)
    for red in ("none", "mean", "sum"):
        _close(F.soft_margin_loss(_k(a), _k(b), reduction=red),
               torch.nn.functional.soft_margin_loss(a, b, reduction=red), red)


# ---- 6. warnings


def _warnings_of(lib, fn):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            fn(lib)
        except Exception:  # noqa: BLE001  (the warning is what is compared)
            pass
    return [(w.category, str(w.message).replace("torch.Size", "Size").replace("kindle.Size", "Size"),
             w.filename.rsplit("/", 1)[-1] if w.filename != __file__ else "<test>") for w in rec]


_WARN_CASES = {
    "MSELoss_size_average_false": lambda L: L.nn.MSELoss(size_average=False),
    "L1Loss_reduce_false": lambda L: L.nn.L1Loss(reduce=False),
    "NLLLoss_size_average_true": lambda L: L.nn.NLLLoss(size_average=True),
    "F_mse_size_average_false": lambda L: L.nn.functional.mse_loss(L.ones(2), L.ones(2), size_average=False),
    "F_nll_reduce_false": lambda L: L.nn.functional.nll_loss(L.zeros(2, 3), L.tensor([0, 1]), reduce=False),
    "kl_div_mean": lambda L: L.nn.functional.kl_div(L.zeros(2, 3), L.ones(2, 3)),
    "kl_div_batchmean": lambda L: L.nn.functional.kl_div(L.zeros(2, 3), L.ones(2, 3), reduction="batchmean"),
    "KLDivLoss_default": lambda L: L.nn.KLDivLoss()(L.zeros(2, 3), L.ones(2, 3)),
    "mse_broadcast": lambda L: L.nn.functional.mse_loss(L.ones(3, 4), L.ones(3, 1)),
    "l1_broadcast": lambda L: L.nn.functional.l1_loss(L.ones(3, 4), L.ones(3, 1)),
    "smooth_l1_broadcast": lambda L: L.nn.functional.smooth_l1_loss(L.ones(3, 4), L.ones(3, 1)),
    "huber_broadcast": lambda L: L.nn.functional.huber_loss(L.ones(3, 4), L.ones(3, 1)),
    "MSELoss_broadcast": lambda L: L.nn.MSELoss()(L.ones(3, 4), L.ones(4)),
    "mse_same_size": lambda L: L.nn.functional.mse_loss(L.ones(3, 4), L.ones(3, 4)),
    "elementwise_mean": lambda L: L.nn.functional.l1_loss(L.ones(2), L.ones(2), reduction="elementwise_mean"),
    "upsample": lambda L: L.nn.functional.upsample(L.ones(1, 1, 2, 2), scale_factor=2),
    "upsample_nearest": lambda L: L.nn.functional.upsample_nearest(L.ones(1, 1, 2, 2), scale_factor=2),
    "upsample_bilinear": lambda L: L.nn.functional.upsample_bilinear(L.ones(1, 1, 2, 2), scale_factor=2),
    "Upsample_module": lambda L: L.nn.Upsample(scale_factor=2)(L.ones(1, 1, 2, 2)),
    "NLLLoss2d": lambda L: L.nn.NLLLoss2d(),
    "log_softmax_implicit_dim": lambda L: L.nn.functional.log_softmax(L.ones(2, 3)),
}


@pytest.mark.parametrize("case", sorted(_WARN_CASES))
def test_warnings_match_torch(case):
    torch = _torch()
    assert _warnings_of(kindle, _WARN_CASES[case]) == _warnings_of(torch, _WARN_CASES[case])


def test_legacy_reduction_warning_names_the_reduction():
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert nn.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.L1Loss(reduce=False).reduction == "none"
    from kindle.nn import _reduction
    assert _reduction.get_enum("sum") == 2 and _reduction.legacy_get_string(True, False, False) == "none"


@pytest.mark.parametrize("conv,kernel,dilation,warns", [
    ("conv2d", (2, 2), 1, True), ("conv2d", (3, 2), 1, True), ("conv2d", (2, 2), 2, False),
    ("conv2d", (2, 2), 3, True), ("conv2d", (3, 3), 1, False), ("conv1d", (2,), 1, True),
    ("conv3d", (3, 2, 3), 1, True), ("Conv2d", (2, 2), 1, True)])
def test_same_padding_even_kernel_warns_once(conv, kernel, dilation, warns, monkeypatch):
    """torch warns once a process (TORCH_WARN_ONCE) when padding='same' needs an uneven split."""
    monkeypatch.setattr(F, "_same_padding_warned", [False])
    n = len(kernel)
    x = kindle.ones(1, 1, *([6] * n))

    def call():
        if conv == "Conv2d":
            return nn.Conv2d(1, 1, kernel, padding="same", dilation=dilation)(x)
        return getattr(F, conv)(x, kindle.ones(1, 1, *kernel), padding="same", dilation=dilation)

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        call()
        call()
    msgs = _messages(rec)
    assert len(msgs) == (1 if warns else 0)
    if warns:
        assert msgs[0].startswith("Using padding='same' with even kernel lengths and odd dilation")
        if conv != "Conv2d":
            assert rec[0].filename == __file__
