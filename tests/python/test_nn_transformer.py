"""kindle.nn MultiheadAttention and the Transformer modules against torch: with torch's weights
loaded, the same outputs, attention weights, input and parameter gradients (float32), for every
mask kind, kdim/vdim, batch_first, unbatched inputs, norm_first and gelu; the same state_dict
keys; deep-copied layers; argument errors."""
import copy

import numpy as np
import pytest

import kindle
import kindle.nn as nn
import kindle.nn.functional as F

RTOL, ATOL = 1e-4, 2e-5
# torch's TransformerEncoder explains why its nested-tensor fast path is off; not our concern
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")


def _k(t, requires_grad=False):
    out = kindle.from_numpy(t.detach().numpy().copy())
    return out.requires_grad_() if requires_grad else out


def _close(k, t, what):
    assert tuple(k.shape) == tuple(t.shape), what
    np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg=what)


def _load(km, tm):
    assert list(km.state_dict()) == list(tm.state_dict())
    km.load_state_dict({k: _k(v) for k, v in tm.state_dict().items()})


def _compare_grads(km, tm):
    kp, tp = dict(km.named_parameters()), dict(tm.named_parameters())
    assert list(kp) == list(tp)
    for name in tp:
        if tp[name].grad is None:
            assert kp[name].grad is None, name
        else:
            _close(kp[name].grad, tp[name].grad, f"grad of {name}")


def _backward(torch, touts, kouts):
    """A random weighting of every output, so each gradient path is exercised."""
    tl, kl = 0, 0
    for t, k in zip(touts, kouts):
        if t is None:
            continue
        g = torch.randn(t.shape)
        tl, kl = tl + (t * g).sum(), kl + (k * _k(g)).sum()
    tl.backward()
    kl.backward()


def _bool_mask(torch, *shape, p=0.3):
    m = torch.rand(*shape) < p
    m[..., 0] = False  # no row fully masked: its softmax would be NaN in both libraries
    return m


def _mask(torch, kind, L, S, batch_heads=None):
    shape = (L, S) if batch_heads is None else (batch_heads, L, S)
    if kind == "bool":
        return _bool_mask(torch, *shape)
    if kind == "float":
        return torch.randn(*shape)
    if kind == "causal":
        return torch.nn.Transformer.generate_square_subsequent_mask(L)
    return None


MHA_CASES = [
    # name, ctor kwargs, forward options
    ("self", {}, {"self": True}),
    ("self-weights-per-head", {}, {"self": True, "average": False}),
    ("self-no-weights", {}, {"self": True, "need_weights": False}),
    ("cross-kv", {}, {"L": 4, "S": 6}),
    ("cross-kdim-vdim", {"kdim": 5, "vdim": 3}, {"L": 4, "S": 6}),
    ("cross-kdim-noweights", {"kdim": 5, "vdim": 3}, {"L": 4, "S": 6, "need_weights": False}),
    ("kv-same", {}, {"kv_same": True, "L": 3, "S": 5}),
    ("batch-first", {"batch_first": True}, {"self": True}),
    ("batch-first-cross", {"batch_first": True}, {"L": 4, "S": 6, "need_weights": False}),
    ("no-bias", {"bias": False}, {"self": True}),
    ("bias-kv-zero-attn", {"add_bias_kv": True, "add_zero_attn": True}, {"L": 4, "S": 6, "attn": "bool",
                                                                         "kpm": True}),
    ("bias-kv-noweights", {"add_bias_kv": True}, {"self": True, "need_weights": False, "attn": "float"}),
    ("mask-bool", {}, {"self": True, "attn": "bool"}),
    ("mask-float", {}, {"L": 4, "S": 6, "attn": "float"}),
    ("mask-3d", {}, {"self": True, "attn": "float3d", "need_weights": False}),
    ("mask-3d-weights", {}, {"self": True, "attn": "bool3d"}),
    ("key-padding", {}, {"self": True, "kpm": True}),
    ("key-padding-float", {}, {"self": True, "kpm": "float", "attn": "float", "need_weights": False}),
    ("key-padding-and-mask", {}, {"L": 4, "S": 6, "kpm": True, "attn": "bool", "need_weights": False}),
    ("causal-hint", {}, {"self": True, "attn": "causal", "causal": True, "need_weights": False}),
    ("causal-hint-weights", {}, {"self": True, "attn": "causal", "causal": True}),
    ("unbatched", {}, {"self": True, "batched": False, "kpm": True}),
    ("unbatched-noweights", {"kdim": 5, "vdim": 3}, {"L": 4, "S": 6, "batched": False, "need_weights": False}),
]


@pytest.mark.parametrize("case", MHA_CASES, ids=[c[0] for c in MHA_CASES])
def test_multihead_attention_matches_torch(case):
    torch = pytest.importorskip("torch")
    _, kwargs, opt = case
    E, H, N = 8, 2, 3
    L = opt.get("L", 5)
    S = L if opt.get("self") else opt.get("S", L)
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(E, H, **kwargs)
    km = nn.MultiheadAttention(E, H, **kwargs)
    _load(km, tm)
    assert repr(km) == repr(tm)
    batched, bf = opt.get("batched", True), kwargs.get("batch_first", False)

    def shape(n, d):
        if not batched:
            return (n, d)
        return (N, n, d) if bf else (n, N, d)

    q = torch.randn(*shape(L, E), requires_grad=True)
    if opt.get("self"):
        k = v = q
    else:
        k = torch.randn(*shape(S, kwargs.get("kdim", E)), requires_grad=True)
        v = k if opt.get("kv_same") else torch.randn(*shape(S, kwargs.get("vdim", E)), requires_grad=True)
    kq = _k(q, True)
    kk = kq if k is q else _k(k, True)
    kv = kk if v is k else _k(v, True)
    attn = opt.get("attn")
    if attn in ("float3d", "bool3d"):
        tmask = _mask(torch, attn[:-2], L, S, N * H)
    else:
        tmask = _mask(torch, attn, L, S)
    kpm = opt.get("kpm")
    tkpm = None
    if kpm:
        tkpm = _bool_mask(torch, *((N, S) if batched else (S,)))
        if kpm == "float":
            tkpm = torch.zeros(tkpm.shape).masked_fill(tkpm, float("-inf"))
    fw = {"need_weights": opt.get("need_weights", True), "average_attn_weights": opt.get("average", True),
          "is_causal": opt.get("causal", False)}
    tout, tw = tm(q, k, v, key_padding_mask=tkpm, attn_mask=tmask, **fw)
    kout, kw = km(kq, kk, kv, key_padding_mask=None if tkpm is None else _k(tkpm),
                  attn_mask=None if tmask is None else _k(tmask), **fw)
    _close(kout, tout, "output")
    assert (kw is None) == (tw is None)
    if tw is not None:
        _close(kw, tw, "attention weights")
    _backward(torch, (tout, tw), (kout, kw))
    for t, kt, what in ((q, kq, "query"), (k, kk, "key"), (v, kv, "value")):
        _close(kt.grad, t.grad, f"{what} grad")
    _compare_grads(km, tm)


def test_multihead_attention_parameters_and_init():
    torch = pytest.importorskip("torch")
    for kwargs in ({}, {"kdim": 5, "vdim": 3, "bias": False}, {"add_bias_kv": True}):
        tm, km = torch.nn.MultiheadAttention(8, 4, **kwargs), nn.MultiheadAttention(8, 4, **kwargs)
        tsd, ksd = tm.state_dict(), km.state_dict()
        assert list(ksd) == list(tsd)
        assert all(tuple(ksd[n].shape) == tuple(tsd[n].shape) for n in tsd)
        assert type(km.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
        assert isinstance(km.out_proj, nn.Linear)
    m = nn.MultiheadAttention(8, 2)
    np.testing.assert_array_equal(m.in_proj_bias.detach().numpy(), 0)
    np.testing.assert_array_equal(m.out_proj.bias.detach().numpy(), 0)
    bound = (6 / (24 + 8)) ** 0.5  # xavier_uniform_ over the packed (3E, E) weight
    w = m.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and w.std() > bound / 3
    from kindle.nn.modules.activation import MultiheadAttention
    assert MultiheadAttention is nn.MultiheadAttention


def test_multihead_attention_dropout_and_errors():
    kindle.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, dropout=0.5)
    x = kindle.randn(4, 2, 8)
    a, b = m(x, x, x)[1], m(x, x, x)[1]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    m.eval()
    np.testing.assert_array_equal(m(x, x, x)[0].detach().numpy(), m(x, x, x)[0].detach().numpy())
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 1)
    with pytest.raises(AssertionError, match="expected `key` and `value` to be 3-D"):
        m(x, kindle.randn(4, 8), kindle.randn(4, 8))
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 8, but got 6"):
        m(kindle.randn(4, 2, 6), kindle.randn(4, 2, 6), kindle.randn(4, 2, 6))
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is .*should be \\(4, 4\\)"):
        m(x, x, x, attn_mask=kindle.zeros(4, 5))
    with pytest.raises(AssertionError, match="Expected key_padded_mask.shape\\[1\\] to be 4, but got 3"):
        m(x, x, x, key_padding_mask=kindle.zeros(2, 3, dtype=kindle.bool))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask are supported"):
        m(x, x, x, attn_mask=kindle.zeros(4, 4, dtype=kindle.int64))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)


def test_generate_square_subsequent_mask():
    torch = pytest.importorskip("torch")
    km = nn.Transformer.generate_square_subsequent_mask(5)
    np.testing.assert_array_equal(km.numpy(), torch.nn.Transformer.generate_square_subsequent_mask(5).numpy())
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=kindle.float64).dtype == kindle.float64


def _pair(torch, cls, *args, **kwargs):
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(*args, **kwargs)
    km = getattr(nn, cls)(*args, **kwargs)
    _load(km, tm)
    # eval: dropout is the identity in both (torch's fused inference path stays off while its
    # parameters require grad)
    tm.eval()
    km.eval()
    return km, tm


LAYER_CASES = [
    ("post-norm", {}, {}),
    ("pre-norm-gelu", {"norm_first": True, "activation": "gelu"}, {}),
    ("batch-first-masks", {"batch_first": True}, {"mask": "bool", "kpm": True}),
    ("float-mask-no-bias", {"bias": False, "layer_norm_eps": 1e-3}, {"mask": "float"}),
    ("causal", {"norm_first": True}, {"mask": "causal", "causal": True}),
    ("callable-activation", {"activation": "silu"}, {"kpm": True}),
    ("unbatched", {}, {"batched": False, "mask": "bool"}),
]


def _activation(lib, spec):
    return lib.nn.functional.silu if spec == "silu" else spec


@pytest.mark.parametrize("case", LAYER_CASES, ids=[c[0] for c in LAYER_CASES])
def test_encoder_layer_matches_torch(case):
    torch = pytest.importorskip("torch")
    _, kwargs, opt = case
    kw_t = dict(kwargs, activation=_activation(torch, kwargs.get("activation", "relu")))
    kw_k = dict(kwargs, activation=_activation(kindle, kwargs.get("activation", "relu")))
    torch.manual_seed(0)
    tm = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, **kw_t)
    km = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, **kw_k)
    _load(km, tm)
    tm.eval()
    km.eval()
    L, N = 5, 3
    bf, batched = kwargs.get("batch_first", False), opt.get("batched", True)
    x = torch.randn(*((N, L, 8) if bf else (L, N, 8)) if batched else (L, 8), requires_grad=True)
    kx = _k(x, True)
    mask = _mask(torch, opt.get("mask"), L, L)
    kpm = _bool_mask(torch, N, L) if opt.get("kpm") else None
    tout = tm(x, src_mask=mask, src_key_padding_mask=kpm, is_causal=opt.get("causal", False))
    kout = km(kx, src_mask=None if mask is None else _k(mask), src_key_padding_mask=None if kpm is None else _k(kpm),
              is_causal=opt.get("causal", False))
    _close(kout, tout, "output")
    _backward(torch, (tout,), (kout,))
    _close(kx.grad, x.grad, "input grad")
    _compare_grads(km, tm)


@pytest.mark.parametrize("case", LAYER_CASES[:6], ids=[c[0] for c in LAYER_CASES[:6]])
def test_decoder_layer_matches_torch(case):
    torch = pytest.importorskip("torch")
    _, kwargs, opt = case
    kw_t = dict(kwargs, activation=_activation(torch, kwargs.get("activation", "relu")))
    kw_k = dict(kwargs, activation=_activation(kindle, kwargs.get("activation", "relu")))
    torch.manual_seed(0)
    tm = torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, **kw_t)
    km = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, **kw_k)
    _load(km, tm)
    tm.eval()
    km.eval()
    L, S, N = 4, 6, 3
    bf = kwargs.get("batch_first", False)
    tgt = torch.randn(*((N, L, 8) if bf else (L, N, 8)), requires_grad=True)
    mem = torch.randn(*((N, S, 8) if bf else (S, N, 8)), requires_grad=True)
    ktgt, kmem = _k(tgt, True), _k(mem, True)
    tmask = _mask(torch, opt.get("mask"), L, L)
    mmask = _mask(torch, "bool" if opt.get("mask") else None, L, S)
    tkpm = _bool_mask(torch, N, L) if opt.get("kpm") else None
    mkpm = _bool_mask(torch, N, S) if opt.get("kpm") else None
    args = {"tgt_is_causal": opt.get("causal", False)}
    tout = tm(tgt, mem, tgt_mask=tmask, memory_mask=mmask, tgt_key_padding_mask=tkpm,
              memory_key_padding_mask=mkpm, **args)
    opt_k = lambda t: None if t is None else _k(t)  # noqa: E731
    kout = km(ktgt, kmem, tgt_mask=opt_k(tmask), memory_mask=opt_k(mmask), tgt_key_padding_mask=opt_k(tkpm),
              memory_key_padding_mask=opt_k(mkpm), **args)
    _close(kout, tout, "output")
    _backward(torch, (tout,), (kout,))
    _close(ktgt.grad, tgt.grad, "tgt grad")
    _close(kmem.grad, mem.grad, "memory grad")
    _compare_grads(km, tm)


@pytest.mark.parametrize("norm_first,batch_first", [(False, False), (True, True)])
def test_transformer_matches_torch(norm_first, batch_first):
    torch = pytest.importorskip("torch")
    km, tm = _pair(torch, "Transformer", d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                   dim_feedforward=16, norm_first=norm_first, batch_first=batch_first)
    assert repr(km) == repr(tm)
    S, L, N = 6, 4, 2
    src = torch.randn(*((N, S, 8) if batch_first else (S, N, 8)), requires_grad=True)
    tgt = torch.randn(*((N, L, 8) if batch_first else (L, N, 8)), requires_grad=True)
    ksrc, ktgt = _k(src, True), _k(tgt, True)
    tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(L)
    src_kpm = _bool_mask(torch, N, S)
    tout = tm(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=src_kpm, memory_key_padding_mask=src_kpm)
    kout = km(ksrc, ktgt, tgt_mask=_k(tgt_mask), src_key_padding_mask=_k(src_kpm),
              memory_key_padding_mask=_k(src_kpm))
    _close(kout, tout, "output")
    _backward(torch, (tout,), (kout,))
    _close(ksrc.grad, src.grad, "src grad")
    _close(ktgt.grad, tgt.grad, "tgt grad")
    _compare_grads(km, tm)


def test_transformer_structure_and_init():
    torch = pytest.importorskip("torch")
    kw = {"d_model": 8, "nhead": 2, "num_encoder_layers": 2, "num_decoder_layers": 1, "dim_feedforward": 16}
    tm, km = torch.nn.Transformer(**kw), nn.Transformer(**kw)
    tsd, ksd = tm.state_dict(), km.state_dict()
    assert list(ksd) == list(tsd)
    assert all(tuple(ksd[n].shape) == tuple(tsd[n].shape) for n in tsd)
    # xavier_uniform_ on every matrix: linear1.weight (16, 8) is bounded by sqrt(6 / 24)
    w = km.encoder.layers[0].linear1.weight.detach().numpy()
    assert np.abs(w).max() <= 0.5 and w.std() > 0.15
    # the layers are deep copies: distinct parameters with equal starting values
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    enc = nn.TransformerEncoder(layer, num_layers=3, norm=nn.LayerNorm(8))
    assert len(enc.layers) == 3 and enc.num_layers == 3
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    assert enc.layers[0].linear1.weight is not layer.linear1.weight
    np.testing.assert_array_equal(enc.layers[2].linear1.weight.detach().numpy(),
                                  layer.linear1.weight.detach().numpy())
    assert list(enc.state_dict()) == list(torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16), 3, torch.nn.LayerNorm(8),
        enable_nested_tensor=False).state_dict())
    assert layer.activation is F.relu and layer.activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(8, 2, activation=nn.GELU()).activation_relu_or_gelu == 2
    copy.deepcopy(km)  # whole models copy


def test_encoder_and_decoder_stacks_match_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, activation="gelu", norm_first=True)
    tenc = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8), enable_nested_tensor=False)
    kenc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, activation="gelu",
                                                            norm_first=True), 2, norm=nn.LayerNorm(8))
    tdec = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16), 2)
    kdec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, dim_feedforward=16), 2)
    for km, tm in ((kenc, tenc), (kdec, tdec)):
        _load(km, tm)
        km.eval()
        tm.eval()
    src, tgt = torch.randn(5, 2, 8, requires_grad=True), torch.randn(3, 2, 8, requires_grad=True)
    ksrc, ktgt = _k(src, True), _k(tgt, True)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5)
    tmem = tenc(src, mask=causal)  # detected as causal (is_causal=None)
    kmem = kenc(ksrc, mask=_k(causal))
    _close(kmem, tmem, "encoder output")
    tout = tdec(tgt, tmem, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(3), tgt_is_causal=True)
    kout = kdec(ktgt, kmem, tgt_mask=nn.Transformer.generate_square_subsequent_mask(3), tgt_is_causal=True)
    _close(kout, tout, "decoder output")
    _backward(torch, (tout,), (kout,))
    _close(ksrc.grad, src.grad, "src grad")
    _close(ktgt.grad, tgt.grad, "tgt grad")
    _compare_grads(kenc, tenc)
    _compare_grads(kdec, tdec)


def test_transformer_training_dropout_and_errors():
    kindle.manual_seed(0)
    m = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.5)
    x = kindle.randn(4, 2, 8)
    assert not np.allclose(m(x).detach().numpy(), m(x).detach().numpy())
    m.eval()
    np.testing.assert_array_equal(m(x).detach().numpy(), m(x).detach().numpy())
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    t = nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        t(kindle.randn(4, 2, 8), kindle.randn(4, 3, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        t(kindle.randn(4, 2, 6), kindle.randn(4, 2, 6))
