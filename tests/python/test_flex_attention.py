"""kindle.nn.attention.flex_attention against torch's (eager, CPU): outputs, lse, gradients,
BlockMask numbers and methods, errors and warnings; plus a few checks that need no torch.

torch refuses backward on CPU in flex_attention itself, so gradients are compared with its
flex_attention higher-order op called directly (the same eager math, with its own autograd),
captured tensors passed to it as explicit buffers."""
import functools
import warnings

import numpy as np
import pytest

import kindle
import kindle.nn.attention.flex_attention as KFA
from kindle.nn.attention.flex_attention import (AuxOutput, AuxRequest, BlockMask, and_masks, create_block_mask,
                                                create_mask, flex_attention, noop_mask, or_masks)

try:
    import torch
    import torch.nn.attention.flex_attention as TFA
except ImportError:  # the comparisons skip themselves
    torch = TFA = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
# torch's one-time "unfused implementation" warning and Kindle's vmap fallback notice
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

TOL = {"float64": (1e-10, 1e-10), "float32": (2e-5, 2e-5), "bfloat16": (2e-2, 2e-2), "float16": (2e-3, 2e-3)}


def to_np(t):
    if t is None:
        return None
    if isinstance(t, kindle.Tensor):
        if t.dtype in (kindle.bfloat16, kindle.float16):
            t = t.to(kindle.float32)
        return np.asarray(t.detach().numpy())
    t = t.detach()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.float()
    return t.numpy()


def close(actual, expected, dtype="float32"):
    rtol, atol = TOL[dtype]
    a, e = to_np(actual), to_np(expected)
    assert a.shape == e.shape, (a.shape, e.shape)
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def pair(rng, shape, dtype="float32", requires_grad=False):
    """The same values as a (torch, kindle) pair (torch None without torch), rounded to dtype."""
    a = rng.standard_normal(shape)
    k = kindle.tensor(a.astype(np.float64)).to(getattr(kindle, dtype))
    k = k.detach().requires_grad_(requires_grad)
    if torch is None:
        return None, k
    t = torch.tensor(a.astype(np.float64)).to(getattr(torch, dtype)).detach().requires_grad_(requires_grad)
    return t, k


# ------------------------------------------------------------------------------------------
# Mods written as torch's docs write them; T is torch or kindle, bufs the captured tensors.

def score_mods(T, bufs):
    return {
        "identity": None,
        "relative_position": lambda s, b, h, q, kv: s + (q - kv),
        "alibi": lambda s, b, h, q, kv: s + bufs["slopes"][h] * (kv - q),
        "softcap": lambda s, b, h, q, kv: T.tanh(s / 2.0) * 2.0,
        "bias_gather": lambda s, b, h, q, kv: s + bufs["bias"][b, h, q, kv],
        "bias_chained": lambda s, b, h, q, kv: s + bufs["rel"][q][kv],  # needs per-score indices
        "causal_score": lambda s, b, h, q, kv: T.where(q >= kv, s, -float("inf")),
    }


def mask_mods(F, bufs):
    def causal(b, h, q, kv):
        return q >= kv

    def sliding_window(b, h, q, kv):
        return (q >= kv) & (q - kv <= 8)

    def prefix(b, h, q, kv):
        return kv <= bufs["prefix"][b]

    def document(b, h, q, kv):
        return bufs["doc_q"][q] == bufs["doc_kv"][kv]

    def dead_rows(b, h, q, kv):  # every 5th query row attends nothing
        return (q % 5 != 0) & (kv <= q + h)

    return {"causal": causal, "sliding_window": sliding_window, "prefix_lm": F.or_masks(prefix, causal),
            "document_causal": F.and_masks(document, causal), "dead_rows": dead_rows, "noop": F.noop_mask}


def buffers(rng, B, H, L, S, dtype="float32"):
    """Captured tensors for the mods, as (torch dict, kindle dict)."""
    t, k = {}, {}
    for name, shape in (("slopes", (H,)), ("bias", (B, H, L, S)), ("rel", (L, S))):
        t[name], k[name] = pair(rng, shape, dtype)
    ints = {"prefix": rng.integers(0, S, size=B), "doc_q": np.sort(rng.integers(0, 3, size=L)),
            "doc_kv": np.sort(rng.integers(0, 3, size=S))}
    for name, a in ints.items():
        k[name] = kindle.tensor(a.astype(np.int64))
        t[name] = torch.tensor(a.astype(np.int64)) if torch is not None else None
    return t, k


def both(rng, B=2, Hq=2, Hkv=2, L=37, S=53, E=16, Ev=8, dtype="float32", Bkv=None, grad=False):
    """(torch q, k, v), (kindle q, k, v)."""
    Bkv = B if Bkv is None else Bkv
    tq, kq = pair(rng, (B, Hq, L, E), dtype, grad)
    tk, kk = pair(rng, (Bkv, Hkv, S, E), dtype, grad)
    tv, kv = pair(rng, (Bkv, Hkv, S, Ev), dtype, grad)
    return (tq, tk, tv), (kq, kk, kv)


# ------------------------------------------------------------------------------------------
# No torch needed

def test_importable_as_module_and_attribute():
    assert kindle.nn.attention.flex_attention.flex_attention is flex_attention
    assert set(KFA.__all__) >= {"BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "create_block_mask",
                                "create_mask", "or_masks", "and_masks", "noop_mask"}


def test_attribute_after_plain_import_kindle():
    import subprocess
    import sys
    code = "import kindle; print(kindle.nn.attention.flex_attention.create_block_mask.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "create_block_mask"


def test_mod_ignoring_score_and_index_dims_broadcasts():
    """A score_mod may return something smaller than [B, H, L, S] (here it ignores score and b/h):
    every (b, h) still gets it, as under torch's vmap."""
    rng = np.random.default_rng(3)
    _, (q, k, v) = both(rng, L=6, S=6)
    rel = kindle.tensor(rng.standard_normal((6, 6)).astype(np.float32))
    out = flex_attention(q, k, v, score_mod=lambda s, b, h, qi, ki: rel[qi, ki])
    probs = kindle.softmax(rel, dim=-1)
    close(out, probs @ v)


def test_matches_sdpa_without_and_with_causal_mask():
    rng = np.random.default_rng(0)
    _, (q, k, v) = both(rng, L=33, S=33, Ev=16)
    F = kindle.nn.functional
    close(flex_attention(q, k, v), F.scaled_dot_product_attention(q, k, v))
    bm = create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, 33, 33, device="cpu", BLOCK_SIZE=16)
    close(flex_attention(q, k, v, block_mask=bm), F.scaled_dot_product_attention(q, k, v, is_causal=True))
    _, (q4, _, _) = both(rng, Hq=4, L=33, S=33, Ev=16)
    close(flex_attention(q4, k, v, block_mask=bm, enable_gqa=True, scale=0.3),
          F.scaled_dot_product_attention(q4, k, v, is_causal=True, enable_gqa=True, scale=0.3))


def test_fully_masked_rows_give_zero_output_and_finite_grads():
    rng = np.random.default_rng(1)
    _, (q, k, v) = both(rng, L=10, S=12, grad=True)
    bm = create_block_mask(lambda b, h, qi, ki: qi % 3 != 0, None, None, 10, 12, device="cpu", BLOCK_SIZE=4)
    out, aux = flex_attention(q, k, v, block_mask=bm, return_aux=AuxRequest(lse=True))
    assert isinstance(aux, AuxOutput) and aux.max_scores is None
    o, lse = to_np(out), to_np(aux.lse)
    assert (o[:, :, ::3] == 0).all() and np.isneginf(lse[:, :, ::3]).all() and np.isfinite(lse[:, :, 1::3]).all()
    (out.sum() + aux.lse[:, :, 1::3].sum()).backward()
    for t in (q, k, v):
        assert np.isfinite(to_np(t.grad)).all()
    assert (to_np(q.grad)[:, :, ::3] == 0).all()


def test_gradcheck_qkv_and_captured_bias():
    rng = np.random.default_rng(2)
    _, (q, k, v) = both(rng, B=1, Hq=2, Hkv=1, L=5, S=6, E=3, Ev=2, dtype="float64", grad=True)
    _, bias = pair(rng, (2, 5, 6), "float64", True)
    bm = create_block_mask(lambda b, h, qi, ki: ki <= qi + 1, None, None, 5, 6, device="cpu", BLOCK_SIZE=2)

    def fn(q, k, v, bias):
        return flex_attention(q, k, v, score_mod=lambda s, b, h, qi, ki: s + bias[h, qi, ki], block_mask=bm,
                              enable_gqa=True)

    assert kindle.autograd.gradcheck(fn, (q, k, v, bias))


# ------------------------------------------------------------------------------------------
# Forward against torch

def compare_forward(rng, score_name=None, mask_name=None, dtype="float32", bm_bh=(None, None), block=16,
                    B=2, Hq=2, Hkv=2, L=37, S=53, Ev=8, Bkv=None, scale=None, lse=True):
    (tq, tk, tv), (kq, kk, kv) = both(rng, B=B, Hq=Hq, Hkv=Hkv, L=L, S=S, Ev=Ev, dtype=dtype, Bkv=Bkv)
    tb, kb = buffers(rng, B, Hq, L, S)
    results = []
    for F, T, bufs, (q, k, v) in ((TFA, torch, tb, (tq, tk, tv)), (KFA, kindle, kb, (kq, kk, kv))):
        score_mod = score_mods(T, bufs)[score_name] if score_name else None
        bm = None
        if mask_name:
            bm = F.create_block_mask(mask_mods(F, bufs)[mask_name], *bm_bh, L, S, device="cpu", BLOCK_SIZE=block)
        aux = F.AuxRequest(lse=True) if lse else None
        res = F.flex_attention(q, k, v, score_mod=score_mod, block_mask=bm, scale=scale, enable_gqa=Hq != Hkv,
                               return_aux=aux)
        results.append(res if lse else (res, None))
    (to, taux), (ko, kaux) = results
    assert ko.dtype == getattr(kindle, dtype) and tuple(ko.shape) == tuple(to.shape)
    close(ko, to, dtype)
    if lse:
        assert str(kaux.lse.dtype).split(".")[-1] == str(taux.lse.dtype).split(".")[-1]
        close(kaux.lse, taux.lse, "float32" if dtype != "float64" else dtype)


@needs_torch
@pytest.mark.parametrize("score_name", ["identity", "relative_position", "alibi", "softcap", "bias_gather",
                                        "bias_chained", "causal_score"])
def test_score_mods_match_torch(score_name):
    compare_forward(np.random.default_rng(10), score_name=score_name)


@needs_torch
@pytest.mark.parametrize("mask_name,bm_bh,block", [
    ("causal", (None, None), 16), ("sliding_window", (2, None), (16, 32)), ("prefix_lm", (2, 2), 8),
    ("document_causal", (None, None), 128), ("dead_rows", (None, 2), 16), ("noop", (None, None), 16)])
def test_mask_mods_match_torch(mask_name, bm_bh, block):
    compare_forward(np.random.default_rng(11), score_name="relative_position", mask_name=mask_name, bm_bh=bm_bh,
                    block=block)


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16", "float16"])
def test_dtypes_match_torch(dtype):
    compare_forward(np.random.default_rng(12), score_name="softcap", mask_name="sliding_window", dtype=dtype)


@needs_torch
@pytest.mark.parametrize("Hq,Hkv,mask_name", [(4, 2, "causal"), (4, 1, "dead_rows"), (6, 3, None)])
def test_gqa_matches_torch(Hq, Hkv, mask_name):
    compare_forward(np.random.default_rng(13), score_name="alibi", mask_name=mask_name, Hq=Hq, Hkv=Hkv, L=20, S=20)


@needs_torch
def test_broadcast_kv_batch_scale_and_value_dim_match_torch():
    rng = np.random.default_rng(14)
    compare_forward(rng, mask_name="causal", bm_bh=(3, None), B=3, Bkv=1, L=9, S=130, Ev=5, scale=0.17)
    compare_forward(rng, score_name="bias_gather", L=1, S=1, Ev=3, block=128)


@needs_torch
def test_return_lse_legacy_matches_torch():
    rng = np.random.default_rng(15)
    (tq, tk, tv), (kq, kk, kv) = both(rng, L=7, S=7)
    to, tl = TFA.flex_attention(tq, tk, tv, return_lse=True)
    ko, kl = flex_attention(kq, kk, kv, return_lse=True)
    close(ko, to)
    close(kl, tl)


@needs_torch
def test_user_block_mask_from_kv_blocks_matches_torch():
    """torch's eager path reads only mask_mod: blocks missing from a hand-made BlockMask are still
    attended (noop_mask), and a mask_mod applies everywhere whatever blocks are listed."""
    rng = np.random.default_rng(16)
    (tq, tk, tv), (kq, kk, kv) = both(rng, L=32, S=32)
    num = np.array([[1, 2, 0, 1]], dtype=np.int32)
    idx = np.array([[[0, 1, 2, 3], [1, 3, 0, 2], [0, 1, 2, 3], [3, 2, 1, 0]]], dtype=np.int32)
    for mask_mod in (None, "causal"):
        outs = []
        for F, T, q, k, v in ((TFA, torch, tq, tk, tv), (KFA, kindle, kq, kk, kv)):
            mm = mask_mods(F, {})[mask_mod] if mask_mod else None
            bm = F.BlockMask.from_kv_blocks(T.tensor(num)[None], T.tensor(idx)[None], BLOCK_SIZE=8, mask_mod=mm)
            outs.append((bm, F.flex_attention(q, k, v, block_mask=bm)))
        (tbm, to), (kbm, ko) = outs
        close(ko, to)
        for name in ("q_num_blocks", "q_indices"):
            np.testing.assert_array_equal(to_np(getattr(kbm, name)), to_np(getattr(tbm, name)))
        assert kbm.seq_lengths == tbm.seq_lengths == (32, 32)


# ------------------------------------------------------------------------------------------
# Gradients against torch's flex_attention op

def torch_op_grads(q, k, v, body, bufs, block_mask, scale, gout):
    from torch._higher_order_ops.flex_attention import flex_attention as flex_op
    bm = block_mask if block_mask is not None else TFA._create_empty_block_mask(q, k)
    out, _, _ = flex_op(q, k, v, body, bm.as_tuple(), scale, {"OUTPUT_LOGSUMEXP": True, "OUTPUT_MAX": False},
                        tuple(bufs), ())
    (out * gout).sum().backward()
    return out


GRAD_CASES = {
    "plain": (lambda s, b, h, q, kv: s, None, (2, 2), "float64"),
    "relative_causal": (lambda s, b, h, q, kv: s + (q - kv) * 0.1, "causal", (2, 2), "float64"),
    "bias_gather": (lambda s, b, h, q, kv, bias: s + bias[b, h, q, kv], "sliding_window", (2, 2), "float64"),
    "alibi_gqa": (lambda s, b, h, q, kv, slopes: s + slopes[h] * (kv - q), "dead_rows", (4, 2), "float64"),
    "softcap_float32": (lambda s, b, h, q, kv: kindle_or_torch_tanh(s), "prefix_lm", (2, 1), "float32"),
}


def kindle_or_torch_tanh(s):
    return (kindle if isinstance(s, kindle.Tensor) else torch).tanh(s / 3.0) * 3.0


@needs_torch
@pytest.mark.parametrize("case", list(GRAD_CASES))
def test_gradients_match_torch(case):
    body, mask_name, (Hq, Hkv), dtype = GRAD_CASES[case]
    rng = np.random.default_rng(20)
    B, L, S = 2, 11, 19
    (tq, tk, tv), (kq, kk, kv) = both(rng, B=B, Hq=Hq, Hkv=Hkv, L=L, S=S, E=8, Ev=6, dtype=dtype, grad=True)
    tbuf, kbuf = pair(rng, (B, Hq, L, S) if case == "bias_gather" else (Hq,), dtype, True)
    tgout, kgout = pair(rng, (B, Hq, L, 6), dtype)
    n_bufs = body.__code__.co_argcount - 5
    tb_ints, kb_ints = buffers(rng, B, Hq, L, S)
    tbm = kbm = None
    if mask_name:
        tbm = TFA.create_block_mask(mask_mods(TFA, tb_ints)[mask_name], B, None, L, S, device="cpu", BLOCK_SIZE=8)
        kbm = create_block_mask(mask_mods(KFA, kb_ints)[mask_name], B, None, L, S, device="cpu", BLOCK_SIZE=8)
    scale = 0.4
    try:
        to = torch_op_grads(tq, tk, tv, body, (tbuf,) * n_bufs, tbm, scale, tgout)
    except Exception as e:  # noqa: BLE001  (a private op: skip if its calling convention changed)
        pytest.skip(f"torch's flex_attention op is not callable here: {e}")
    kmod = functools.partial(body, **({body.__code__.co_varnames[5]: kbuf} if n_bufs else {}))
    ko = flex_attention(kq, kk, kv, score_mod=lambda s, b, h, q, kv_: kmod(s, b, h, q, kv_), block_mask=kbm,
                        scale=scale, enable_gqa=Hq != Hkv)
    (ko * kgout).sum().backward()
    close(ko, to, dtype)
    tol = dtype if dtype == "float64" else "float16"  # float32 grads: a few ulps of accumulated error
    for kt, tt in ((kq, tq), (kk, tk), (kv, tv)):
        close(kt.grad, tt.grad, tol)
    if n_bufs:
        close(kbuf.grad, tbuf.grad, tol)


# ------------------------------------------------------------------------------------------
# BlockMask numbers and methods against torch

def block_mask_pair(mask_name, B, H, L, S, block, **kw):
    tb, kb = buffers(np.random.default_rng(30), B or 1, H or 1, L, S)
    t = TFA.create_block_mask(mask_mods(TFA, tb)[mask_name], B, H, L, S, device="cpu", BLOCK_SIZE=block, **kw)
    k = create_block_mask(mask_mods(KFA, kb)[mask_name], B, H, L, S, device="cpu", BLOCK_SIZE=block, **kw)
    return t, k


def assert_same_block_mask(k, t):
    assert k.seq_lengths == t.seq_lengths and tuple(k.BLOCK_SIZE) == tuple(t.BLOCK_SIZE) and k.shape == t.shape
    for name in BlockMask._TENSOR_ATTRS:
        a, b = getattr(k, name), getattr(t, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1], name
            np.testing.assert_array_equal(to_np(a), to_np(b), err_msg=name)
    assert k.dq_kv_order_spt == t.dq_kv_order_spt


@needs_torch
@pytest.mark.parametrize("mask_name,B,H,L,S,block,kw", [
    ("causal", None, None, 300, 200, (64, 32), {}),
    ("sliding_window", 2, 3, 37, 53, 16, {}),
    ("prefix_lm", 2, None, 64, 64, 16, {"separate_full_blocks": False}),
    ("document_causal", None, 2, 40, 40, 8, {"compute_dq_write_order": True}),
    ("dead_rows", 1, 2, 20, 30, 4, {"compute_dq_write_order": True, "dq_kv_order": False}),
    ("noop", None, None, 10, 10, 128, {}),
])
def test_create_block_mask_matches_torch(mask_name, B, H, L, S, block, kw):
    t, k = block_mask_pair(mask_name, B, H, L, S, block, **kw)
    assert_same_block_mask(k, t)
    assert k.mask_mod.__name__ == t.mask_mod.__name__
    assert k.sparsity() == pytest.approx(t.sparsity())
    assert k.numel() == t.numel()
    np.testing.assert_array_equal(to_np(k.to_dense()), to_np(t.to_dense()))
    assert k.to_string() == t.to_string()
    assert k.to_string(grid_size=-1, limit=1) == t.to_string(grid_size=-1, limit=1)
    assert k.to_string(grid_size=(2, 3)) == t.to_string(grid_size=(2, 3))
    assert str(k) == str(t)
    assert repr(k) == repr(t).replace("torch.Size", "kindle.Size")
    kt, tt = k.as_tuple(), t.as_tuple()
    assert len(kt) == len(tt) and len(k.as_tuple(flatten=False)) == len(t.as_tuple(flatten=False))
    assert kt[:2] == tt[:2] and kt[-3:-1] == tt[-3:-1] and kt[-1] is k.mask_mod
    assert_same_block_mask(k.to("cpu"), t.to("cpu"))


@needs_torch
@pytest.mark.parametrize("index", [0, -1, (1, 0), (slice(0, 2), slice(1, 2)), (slice(None), 0, "rows")])
def test_block_mask_getitem_matches_torch(index):
    t, k = block_mask_pair("sliding_window", 2, 3, 37, 53, 16)
    if isinstance(index, tuple) and index[-1] == "rows":
        tidx = index[:-1] + (torch.tensor([1, 2], dtype=torch.int32),)
        kidx = index[:-1] + (kindle.tensor([1, 2], dtype=kindle.int32),)
    else:
        tidx = kidx = index
    ts, ks = t[tidx], k[kidx]
    assert_same_block_mask(ks, ts)
    assert repr(ks) == repr(ts).replace("torch.Size", "kindle.Size")


@needs_torch
def test_sliced_block_mask_cannot_be_used():
    t, k = block_mask_pair("causal", 2, 2, 16, 16, 8)
    _, (q, kk, v) = both(np.random.default_rng(31), B=1, L=16, S=16)
    with pytest.raises(RuntimeError, match="sliced BlockMask"):
        flex_attention(q, kk, v, block_mask=k[0])
    with pytest.raises(RuntimeError, match="sliced BlockMask"):
        k[0].mask_mod(*[kindle.tensor(0)] * 4)


@needs_torch
@pytest.mark.parametrize("new_len", [(17, 33), (64, 16), (1, 1)])
def test_adjust_matches_torch(new_len):
    t, k = block_mask_pair("sliding_window", 2, None, 70, 90, 16)
    ta, ka = t._adjust(*new_len), k._adjust(*new_len)
    assert_same_block_mask(ka, ta)
    rng = np.random.default_rng(32)
    (tq, tk, tv), (kq, kk, kv) = both(rng, L=new_len[0], S=new_len[1])
    close(flex_attention(kq, kk, kv, block_mask=ka), TFA.flex_attention(tq, tk, tv, block_mask=ta))


@needs_torch
def test_from_kv_blocks_with_full_blocks_matches_torch():
    t, k = block_mask_pair("causal", 2, 1, 48, 48, 16)
    tf = TFA.BlockMask.from_kv_blocks(t.kv_num_blocks, t.kv_indices, t.full_kv_num_blocks, t.full_kv_indices,
                                      BLOCK_SIZE=(16, 16), mask_mod=t.mask_mod, seq_lengths=(40, 48))
    kf = BlockMask.from_kv_blocks(k.kv_num_blocks, k.kv_indices, k.full_kv_num_blocks, k.full_kv_indices,
                                  BLOCK_SIZE=(16, 16), mask_mod=k.mask_mod, seq_lengths=(40, 48))
    assert_same_block_mask(kf, tf)
    kn = BlockMask.from_kv_blocks(k.kv_num_blocks, k.kv_indices, compute_q_blocks=False)
    tn = TFA.BlockMask.from_kv_blocks(t.kv_num_blocks, t.kv_indices, compute_q_blocks=False)
    assert_same_block_mask(kn, tn)
    assert kn.mask_mod is noop_mask


@needs_torch
@pytest.mark.parametrize("B,H", [(None, None), (2, 3)])
def test_create_mask_matches_torch(B, H):
    tb, kb = buffers(np.random.default_rng(33), B or 1, H or 1, 9, 13)
    for name in ("causal", "prefix_lm", "noop"):
        np.testing.assert_array_equal(to_np(create_mask(mask_mods(KFA, kb)[name], B, H, 9, 13, device="cpu")),
                                      to_np(TFA.create_mask(mask_mods(TFA, tb)[name], B, H, 9, 13, device="cpu")))
    np.testing.assert_array_equal(
        to_np(create_mask(score_mods(kindle, kb)["causal_score"], B, H, 9, 13, device="cpu")),
        to_np(TFA.create_mask(score_mods(torch, tb)["causal_score"], B, H, 9, 13, device="cpu")))


# ------------------------------------------------------------------------------------------
# Errors: the same exception type as torch

def _X(T):
    return lambda *shape: T.randn(*shape)


ERROR_CASES = {
    "heads_without_gqa": lambda F, T, X: F.flex_attention(X(2, 4, 6, 8), X(2, 2, 6, 8), X(2, 2, 6, 8)),
    "gqa_not_multiple": lambda F, T, X: F.flex_attention(X(2, 3, 6, 8), X(2, 2, 6, 8), X(2, 2, 6, 8),
                                                         enable_gqa=True),
    "three_dims": lambda F, T, X: F.flex_attention(X(4, 6, 8), X(4, 6, 8), X(4, 6, 8)),
    "one_dim": lambda F, T, X: F.flex_attention(X(8), X(8), X(8)),
    "embed_dim": lambda F, T, X: F.flex_attention(X(2, 2, 6, 8), X(2, 2, 6, 4), X(2, 2, 6, 8)),
    "batch_without_mask": lambda F, T, X: F.flex_attention(X(2, 2, 6, 8), X(1, 2, 6, 8), X(1, 2, 6, 8)),
    "batch_vs_mask": lambda F, T, X: F.flex_attention(
        X(2, 2, 6, 8), X(1, 2, 6, 8), X(1, 2, 6, 8),
        block_mask=F.create_block_mask(F.noop_mask, 1, None, 6, 6, device="cpu")),
    "batch_not_broadcastable": lambda F, T, X: F.flex_attention(
        X(1, 2, 6, 8), X(2, 2, 6, 8), X(2, 2, 6, 8),
        block_mask=F.create_block_mask(F.noop_mask, 1, None, 6, 6, device="cpu")),
    "mask_too_short": lambda F, T, X: F.flex_attention(
        X(1, 2, 6, 8), X(1, 2, 6, 8), X(1, 2, 6, 8),
        block_mask=F.create_block_mask(F.noop_mask, 1, None, 4, 6, device="cpu")),
    "mask_too_long": lambda F, T, X: F.flex_attention(
        X(1, 2, 6, 8), X(1, 2, 6, 8), X(1, 2, 6, 8),
        block_mask=F.create_block_mask(F.noop_mask, 1, None, 6, 9, device="cpu")),
    "lse_and_aux": lambda F, T, X: F.flex_attention(X(1, 1, 3, 4), X(1, 1, 3, 4), X(1, 1, 3, 4), return_lse=True,
                                                    return_aux=F.AuxRequest(lse=True)),
    "max_scores_on_cpu": lambda F, T, X: F.flex_attention(X(1, 1, 3, 4), X(1, 1, 3, 4), X(1, 1, 3, 4),
                                                          return_aux=F.AuxRequest(max_scores=True)),
    "bad_backend": lambda F, T, X: F.flex_attention(X(1, 1, 3, 4), X(1, 1, 3, 4), X(1, 1, 3, 4),
                                                    kernel_options={"BACKEND": "CUTLASS"}),
    "backend_and_force": lambda F, T, X: F.flex_attention(
        X(1, 1, 3, 4), X(1, 1, 3, 4), X(1, 1, 3, 4),
        kernel_options={"BACKEND": "TRITON", "FORCE_USE_FLEX_ATTENTION": True}),
    "internal_option": lambda F, T, X: F.flex_attention(X(1, 1, 3, 4), X(1, 1, 3, 4), X(1, 1, 3, 4),
                                                        kernel_options={"OUTPUT_LOGSUMEXP": True}),
    "value_length": lambda F, T, X: F.flex_attention(X(1, 1, 3, 4), X(1, 1, 5, 4), X(1, 1, 4, 4)),
    "value_heads": lambda F, T, X: F.flex_attention(X(1, 4, 3, 4), X(1, 4, 5, 4), X(1, 2, 5, 4)),
    "empty_keys": lambda F, T, X: F.flex_attention(X(1, 1, 3, 4), X(1, 1, 0, 4), X(1, 1, 0, 4)),
    "score_mod_arity": lambda F, T, X: F.flex_attention(X(1, 1, 3, 4), X(1, 1, 3, 4), X(1, 1, 3, 4),
                                                        score_mod=lambda s, b: s),
    "block_mask_from_score_mod": lambda F, T, X: F.create_block_mask(lambda s, b, h, q, kv: s, 1, 1, 4, 4,
                                                                     device="cpu"),
    "create_mask_arity": lambda F, T, X: F.create_mask(lambda b, h: b, 1, 1, 4, 4, device="cpu"),
    "dq_kv_order_type": lambda F, T, X: F.create_block_mask(F.noop_mask, 1, 1, 4, 4, device="cpu", dq_kv_order=1),
    "from_kv_blocks_1d": lambda F, T, X: F.BlockMask.from_kv_blocks(T.zeros(3, dtype=T.int32),
                                                                    T.zeros(3, dtype=T.int32)),
    "from_kv_blocks_half_full": lambda F, T, X: F.BlockMask.from_kv_blocks(
        T.zeros(1, 3, dtype=T.int32), T.zeros(1, 3, 1, dtype=T.int32), T.zeros(1, 3, dtype=T.int32)),
    "or_masks_not_callable": lambda F, T, X: F.or_masks(F.noop_mask, 3),
    "and_masks_not_callable": lambda F, T, X: F.and_masks(3),
}


def _outcome(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    return None


@needs_torch
@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_match_torch(case):
    kinds = (NotImplementedError, IndexError, ValueError, TypeError, AssertionError, RuntimeError)
    te = _outcome(lambda: ERROR_CASES[case](TFA, torch, _X(torch)))
    ke = _outcome(lambda: ERROR_CASES[case](KFA, kindle, _X(kindle)))
    assert te is not None, "torch accepted it"
    expected = next(k for k in kinds if isinstance(te, k))
    assert isinstance(ke, expected), f"torch raised {type(te).__name__}: {te}; kindle: {ke!r}"


# ------------------------------------------------------------------------------------------
# Warnings

def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message)) for w in caught]


def test_unfused_and_return_lse_warnings_are_shown_once(monkeypatch):
    monkeypatch.setattr(KFA, "_WARNINGS_SHOWN", set())
    q = kindle.randn(1, 1, 3, 4)
    first = _warnings_of(lambda: flex_attention(q, q, q, return_lse=True))
    assert [c for c, _ in first] == [FutureWarning, UserWarning]
    assert "called without torch.compile()" in first[1][1]
    assert _warnings_of(lambda: flex_attention(q, q, q, return_lse=True)) == []
    monkeypatch.setattr(KFA, "_WARNINGS_SHOWN", set())
    monkeypatch.setattr(KFA, "_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG", True)
    assert _warnings_of(lambda: flex_attention(q, q, q)) == []


def test_create_block_mask_compile_flag_is_deprecated():
    caught = _warnings_of(lambda: create_block_mask(noop_mask, 1, 1, 4, 4, device="cpu", _compile=True))
    assert [c for c, _ in caught] == [DeprecationWarning]


@needs_torch
def test_torch_warns_the_same_way(monkeypatch):
    monkeypatch.setattr(TFA, "_WARNINGS_SHOWN", set())
    q = torch.randn(1, 1, 3, 4)
    kinds = [c for c, _ in _warnings_of(lambda: TFA.flex_attention(q, q, q, return_lse=True))]
    assert kinds == [FutureWarning, UserWarning]


@needs_torch
def test_signatures_match_torch():
    import inspect
    pairs = [(flex_attention, TFA.flex_attention), (create_block_mask, TFA.create_block_mask),
             (create_mask, TFA.create_mask), (BlockMask.__init__, TFA.BlockMask.__init__),
             (BlockMask.from_kv_blocks, TFA.BlockMask.from_kv_blocks), (BlockMask.to_string, TFA.BlockMask.to_string),
             (BlockMask.as_tuple, TFA.BlockMask.as_tuple), (BlockMask._adjust, TFA.BlockMask._adjust),
             (or_masks, TFA.or_masks), (and_masks, TFA.and_masks), (noop_mask, TFA.noop_mask)]
    for ours, theirs in pairs:
        def described(fn):  # a function default (noop_mask) by its name: the two modules each have one
            return [(p.name, p.kind, getattr(p.default, "__name__", p.default))
                    for p in inspect.signature(fn).parameters.values()]
        assert described(ours) == described(theirs), ours.__qualname__
    assert AuxRequest._fields == TFA.AuxRequest._fields and AuxRequest() == TFA.AuxRequest()
    assert AuxOutput._fields == TFA.AuxOutput._fields
