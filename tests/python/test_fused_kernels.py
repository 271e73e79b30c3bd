"""The fused kernels behind conv2d, layer_norm, batch_norm, LSTM and scaled_dot_product_attention,
and the small core additions that came with the front ends (view(dtype), _make_subclass, seeds)."""
import numpy as np
import pytest

import kindle
import kindle.nn.functional as F


def _t(a, grad=True):
    t = kindle.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dims", [4, 3, 5])
def test_sdpa_reads_heads_split_from_one_projection(dims, causal):
    """q, k and v as nanoGPT makes them (views of one projection, heads transposed) are read in
    place; the output's layout follows the query's as torch's does, so transpose(1, 2).contiguous()
    is free; gradients reach the projection."""
    torch = pytest.importorskip("torch")
    B, T, H, hs = 2, 37, 3, 8
    rng = np.random.default_rng(1)
    x, go = rng.standard_normal((B, T, 3 * H * hs)), rng.standard_normal((B, H, T, hs))
    outs = []
    for lib, xt in ((kindle, _t(x)), (torch, torch.from_numpy(x).requires_grad_())):
        q, k, v = (t.view(B, T, H, hs).transpose(1, 2) for t in xt.split(H * hs, dim=2))
        if dims == 3:
            q, k, v = (t.reshape(B * H, T, hs) for t in (q, k, v))
        if dims == 5:
            q, k, v = (t.unsqueeze(0) for t in (q, k, v))
        y = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        y.backward(lib.from_numpy(go.reshape(y.shape)))
        outs.append((y, xt.grad))
    (ky, kg), (ty, tg) = outs
    assert ky.shape == ty.shape and ky.stride() == ty.stride()
    np.testing.assert_allclose(ky.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(kg.numpy(), tg.numpy(), rtol=1e-10, atol=1e-12)
    if dims == 4:
        assert ky.transpose(1, 2).is_contiguous()


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 70, 70, 8, 5), (1, 2, 130, 90, 16, 16), (2, 1, 5, 9, 4, 4),
                                   (1, 2, 70, 300, 8, 8), (1, 1, 300, 300, 8, 6)])  # several key blocks
def test_sdpa_fused_matches_torch(shape, causal):
    torch = pytest.importorskip("torch")
    B, H, L, S, E, Ev = shape
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((B, H, L, E)), rng.standard_normal((B, H, S, E)), rng.standard_normal((B, H, S, Ev))
    go = rng.standard_normal((B, H, L, Ev))
    kq, kk, kv = _t(q), _t(k), _t(v)
    tq, tk, tv = (torch.from_numpy(a).requires_grad_() for a in (q, k, v))
    ky = F.scaled_dot_product_attention(kq, kk, kv, is_causal=causal)
    ty = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    assert ky.grad_fn is not None
    ky.backward(_t(go, False))
    ty.backward(torch.from_numpy(go))
    np.testing.assert_allclose(ky.detach().numpy(), ty.detach().numpy(), atol=1e-12)
    for a, b in ((kq, tq), (kk, tk), (kv, tv)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("heads", [1, 3])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_float32_ignores_the_thread_count(heads, causal):
    # Heads run in parallel, or one head's products on every thread; either way the same bits.
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, heads, 300, 64)).astype(np.float32) for _ in range(3))
    go = rng.standard_normal((2, heads, 300, 64)).astype(np.float32)
    results = []
    old = kindle.get_num_threads()
    try:
        for threads in (1, 2):
            kindle.set_num_threads(threads)
            kq, kk, kv = _t(q), _t(k), _t(v)
            out = F.scaled_dot_product_attention(kq, kk, kv, is_causal=causal)
            out.backward(_t(go, False))
            results.append([out.detach().numpy(), kq.grad.numpy(), kk.grad.numpy(), kv.grad.numpy()])
    finally:
        kindle.set_num_threads(old)
    for a, b in zip(*results):
        assert np.array_equal(a, b)


def test_sdpa_fused_gradcheck_and_noncontiguous():
    rng = np.random.default_rng(1)
    q = _t(rng.standard_normal((1, 2, 5, 3)))
    k = _t(rng.standard_normal((1, 2, 4, 3)))
    v = _t(rng.standard_normal((1, 2, 4, 2)))
    assert kindle.autograd.gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), (q, k, v))
    base = rng.standard_normal((1, 5, 2, 3))
    qt = _t(base, False).transpose(1, 2)  # (1, 2, 5, 3), not contiguous
    out = F.scaled_dot_product_attention(qt, k.detach(), v.detach())
    ref = F.scaled_dot_product_attention(qt.contiguous(), k.detach(), v.detach())
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-14)


def test_sdpa_rows_masked_out_give_zeros():
    rng = np.random.default_rng(2)
    q, k, v = (_t(rng.standard_normal(s), False) for s in ((1, 4, 3), (1, 6, 3), (1, 6, 3)))
    m = np.zeros((4, 6))
    m[1, :] = -np.inf
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=_t(m, False)).numpy()
    assert np.all(out[0, 1] == 0) and np.all(np.isfinite(out))
    # causal with more queries than keys: queries see keys j <= i, all rows have some key
    out = F.scaled_dot_product_attention(_t(rng.standard_normal((1, 6, 3)), False), k[:, :2], v[:, :2], is_causal=True)
    assert np.all(np.isfinite(out.numpy()))


@pytest.mark.parametrize("groups,mult", [(1, 1), (2, 1), (4, 1), (4, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_native_matches_torch(groups, mult, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    C, O = 4, 4 * mult
    x = rng.standard_normal((3, C, 9, 11)).astype(dtype)
    w = rng.standard_normal((O, C // groups, 3, 3)).astype(dtype)
    b = rng.standard_normal(O).astype(dtype)
    for kw in (dict(padding=1), dict(stride=2, padding=2, dilation=2), dict(stride=(1, 2))):
        kx, kw_, kb = _t(x), _t(w), _t(b)
        tx, tw, tb = (torch.from_numpy(a).requires_grad_() for a in (x, w, b))
        ky = F.conv2d(kx, kw_, kb, groups=groups, **kw)
        ty = torch.nn.functional.conv2d(tx, tw, tb, groups=groups, **kw)
        gy = rng.standard_normal(ty.shape).astype(dtype)
        ky.backward(_t(gy, False))
        ty.backward(torch.from_numpy(gy))
        tol = 1e-4 if dtype == np.float32 else 1e-10
        np.testing.assert_allclose(ky.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
        for a, t in ((kx, tx), (kw_, tw), (kb, tb)):
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _conv_f64_reference(x, w, b, gy, stride=1, padding=0, dilation=1, groups=1):
    """Output and gradients of conv2d in float64 by direct sums in NumPy, one tap at a time: no
    code shared with the kernels under test (whose float64 build takes the same paths)."""
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    x, w, b, gy = (a.astype(np.float64) for a in (x, w, b, gy))
    N, C, H, W = x.shape
    O, Cg, kh, kw = w.shape
    oh, ow = gy.shape[2:]
    xp = np.zeros((N, C, H + 2 * ph, W + 2 * pw))
    xp[:, :, ph:ph + H, pw:pw + W] = x
    dxp, dwt = np.zeros_like(xp), np.zeros_like(w)
    y = np.broadcast_to(b[None, :, None, None], (N, O, oh, ow)).copy()
    Og = O // groups
    for g in range(groups):
        os_, cs = slice(g * Og, (g + 1) * Og), slice(g * Cg, (g + 1) * Cg)
        for i in range(kh):
            for j in range(kw):
                win = (slice(None), cs, slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                       slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))
                y[:, os_] += np.einsum("nchw,oc->nohw", xp[win], w[os_, :, i, j])
                dxp[win] += np.einsum("nohw,oc->nchw", gy[:, os_], w[os_, :, i, j])
                dwt[os_, :, i, j] = np.einsum("nohw,nchw->oc", gy[:, os_], xp[win])
    return [y, dxp[:, :, ph:ph + H, pw:pw + W], dwt, gy.sum(axis=(0, 2, 3))]


def _conv_kindle(x, w, b, gy, **kw):
    kx, kw_, kb = _t(x), _t(w), _t(b)
    y = F.conv2d(kx, kw_, kb, **kw)
    y.backward(_t(gy, False))
    return [y.detach().numpy(), kx.grad.numpy(), kw_.grad.numpy(), kb.grad.numpy()]


# Shapes that reach every path of csrc/cpu/conv2d.cpp and winograd.cpp: Winograd (3x3, stride 1,
# >= 16 channels; odd and even planes, padding 0-3, where padding 3 sends the input gradient to
# im2col), several images per GEMM (planes under 256 positions, batch not a multiple of the
# tile), bands of output rows (planes over 512 positions), strided and 1x1 convolutions.
CONV_CASES = [
    ((3, 16, 9, 11), (24, 16, 3, 3), dict(padding=1)),
    ((5, 17, 8, 8), (16, 17, 3, 3), dict(padding=1)),
    ((2, 16, 4, 5), (33, 16, 3, 3), dict(padding=0)),
    ((2, 16, 6, 7), (16, 16, 3, 3), dict(padding=2)),
    ((2, 16, 5, 4), (16, 16, 3, 3), dict(padding=3)),
    ((1, 16, 1, 1), (16, 16, 3, 3), dict(padding=1)),
    ((7, 8, 6, 6), (12, 8, 3, 3), dict(padding=1, stride=2)),
    ((33, 3, 4, 4), (5, 3, 3, 3), dict(padding=1)),
    ((2, 4, 40, 30), (6, 4, 3, 3), dict(padding=1)),
    ((2, 4, 40, 30), (6, 4, 1, 1), dict()),
    ((3, 6, 7, 7), (8, 6, 1, 1), dict(stride=2)),
    ((2, 16, 30, 33), (16, 16, 3, 3), dict(padding=1)),
    ((1, 4, 40, 30), (6, 4, 3, 3), dict(padding=1)),  # a lone image
    ((1, 16, 64, 64), (64, 16, 5, 5), dict(padding=2)),  # a lone image large enough to spread its bands
    ((1, 4, 40, 30), (6, 4, 1, 1), dict()),
    ((1, 4, 41, 29), (6, 4, 3, 3), dict(padding=2, stride=2)),
    # Tabulated taps (strided or narrow rows), gathered and scattered 16 positions at a time:
    # whole vectors, vectors with a tail, tiles of 8 images with a short last tile.
    ((19, 6, 8, 8), (10, 6, 4, 4), dict(padding=1, stride=2)),
    ((9, 6, 16, 16), (10, 6, 4, 4), dict(padding=1, stride=2)),
    ((5, 3, 11, 13), (4, 3, 4, 4), dict(padding=1, stride=2)),
    ((3, 4, 13, 12), (5, 4, 3, 3), dict(padding=2, stride=3, dilation=2)),
    ((4, 5, 7, 7), (6, 5, 4, 4), dict(padding=(0, 2), stride=(2, 1))),
    # A lone image in one band, with work enough for two threads to share the GEMM's rows.
    ((1, 96, 7, 7), (132, 96, 3, 3), dict(padding=1)),
    # The direct kernel for 5x5 and larger (AVX-512 builds): forward, input gradient (on the
    # adjoint) and weight gradient; rows with a short last vector, channel blocks of 9 and of 14
    # with a short last one, a 7-wide kernel with unequal padding, a 3x15 kernel (the weight
    # gradient's widths stop at 14: im2col there), padding too large for the adjoint (im2col for
    # the input gradient), few input channels (im2col for both gradients), and a weight gradient
    # whose chunks of rows cross images.
    ((2, 16, 20, 37), (18, 16, 5, 5), dict(padding=2)),
    ((1, 17, 19, 24), (20, 17, 9, 7), dict(padding=(4, 2))),
    ((2, 16, 22, 22), (40, 16, 5, 5), dict(padding=0)),
    ((1, 16, 20, 30), (16, 16, 3, 15), dict(padding=(1, 7))),
    ((1, 16, 20, 20), (16, 16, 5, 5), dict(padding=5)),
    ((3, 3, 24, 33), (5, 3, 7, 7), dict(padding=3)),
    ((3, 16, 40, 40), (64, 16, 5, 5), dict(padding=2)),
    # Small planes' forward in column tiles of 16-column blocks across images, the last tile short
    # (its columns padded with zeros), with small filters (tiles of 128) and large (256).
    ((9, 16, 7, 7), (20, 16, 3, 3), dict(padding=1)),
    ((3, 128, 5, 5), (256, 128, 3, 3), dict(padding=1)),
    # The input gradient by sub-pixel phases (csrc/cpu/conv_subpixel.cpp): a 4x4 stride-2 kernel
    # (2x2 taps per phase, one GEMM per row shift), stride 1 (one phase, one GEMM), a 3x5 kernel at
    # strides (2, 3) on odd planes (phases with different tap counts and rows), padding 2 at stride
    # 2, and lone tiles: phases shared over the threads, and at stride 1 blocks of rows.
    ((6, 128, 14, 14), (24, 128, 4, 4), dict(padding=1, stride=2)),
    ((5, 128, 7, 7), (24, 128, 3, 3), dict(padding=1)),
    ((4, 128, 11, 13), (20, 128, 3, 5), dict(padding=(1, 2), stride=(2, 3))),
    ((3, 128, 9, 9), (18, 128, 3, 3), dict(padding=2, stride=2)),
    ((1, 144, 7, 7), (40, 144, 3, 3), dict(padding=1)),
    ((1, 128, 8, 8), (16, 128, 4, 4), dict(padding=1, stride=2)),
    # Depthwise (csrc/cpu/depthwise.h): phase planes at strides 1-3, dilation, a channel
    # multiplier, a 1x1 plane, kernels wider than a block's reach.
    ((3, 6, 7, 7), (6, 1, 3, 3), dict(padding=1, groups=6)),
    ((2, 4, 14, 13), (4, 1, 3, 3), dict(padding=1, stride=2, groups=4)),
    ((2, 3, 11, 9), (6, 1, 5, 5), dict(padding=2, groups=3)),
    ((1, 4, 12, 12), (4, 1, 3, 3), dict(padding=2, dilation=2, groups=4)),
    ((2, 5, 9, 10), (5, 1, 4, 4), dict(padding=(0, 1), stride=(3, 2), groups=5)),
    ((1, 3, 1, 1), (3, 1, 3, 3), dict(padding=1, groups=3)),
    ((2, 2, 40, 37), (2, 1, 7, 7), dict(padding=3, groups=2)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,kw", CONV_CASES)
def test_conv2d_paths_match_float64(xs, ws, kw, dtype):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(xs).astype(dtype)
    w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype)
    gy_shape = F.conv2d(_t(x, False), _t(w, False), None, **kw).shape
    gy = rng.standard_normal(gy_shape).astype(dtype)
    tol = 2e-6 if dtype == np.float32 else 1e-12
    want = _conv_f64_reference(x, w, b, gy, **kw)
    results = []
    old = kindle.get_num_threads()
    try:
        for threads in (1, 2):
            kindle.set_num_threads(threads)
            got = _conv_kindle(x, w, b, gy, **kw)
            for name, g, r in zip(("out", "grad_input", "grad_weight", "grad_bias"), got, want):
                scale = np.abs(r).max() + 1e-30
                assert g.shape == r.shape and g.dtype == dtype, name
                assert np.abs(g - r).max() / scale < tol, (name, np.abs(g - r).max() / scale)
            results.append(got)
    finally:
        kindle.set_num_threads(old)
    # Bit-identical whatever the thread count.
    for a, c in zip(*results):
        assert np.array_equal(a, c)


def test_conv_and_norm_double_backward():
    rng = np.random.default_rng(4)
    x, w = _t(rng.standard_normal((2, 2, 5, 5))), _t(rng.standard_normal((3, 2, 3, 3)))
    assert kindle.autograd.gradgradcheck(lambda a, b: F.conv2d(a, b, padding=1, stride=2), (x, w))
    dw = _t(rng.standard_normal((2, 1, 3, 3)))
    assert kindle.autograd.gradgradcheck(lambda a, b: F.conv2d(a, b, padding=1, groups=2), (x, dw))
    x2, g, b = _t(rng.standard_normal((3, 4))), _t(rng.standard_normal(4)), _t(rng.standard_normal(4))
    assert kindle.autograd.gradgradcheck(lambda a, c, d: F.layer_norm(a, (4,), c, d), (x2, g, b))
    x3 = _t(rng.standard_normal((3, 2, 4)))
    assert kindle.autograd.gradgradcheck(lambda a, c: F.batch_norm(a, None, None, c[:2], c[2:], True), (x3, g))


def test_batch_norm_eval_outputs_do_not_alias_running_stats():
    rm, rv = kindle.zeros(3), kindle.ones(3)
    x = kindle.randn(4, 3, 2, requires_grad=True)
    F.batch_norm(x, rm, rv, training=False).sum().backward()
    assert not rm.requires_grad and rm.grad_fn is None and not rv.requires_grad


def test_lstm_pointwise_double_backward_and_rnn_cn():
    rng = np.random.default_rng(5)
    D = kindle.float64
    x, h, c = _t(rng.standard_normal((2, 3))), _t(rng.standard_normal((2, 2))), _t(rng.standard_normal((2, 2)))
    w_ih, w_hh = kindle.ones(8, 3, dtype=D) * 0.3, kindle.ones(8, 2, dtype=D) * 0.1
    assert kindle.autograd.gradgradcheck(lambda a, hh, cc: kindle._C._nn.lstm_cell(a, hh, cc, w_ih, w_hh, None, None),
                                         (x, h, c))
    out = kindle._C._nn.rnn(kindle.randn(3, 2, 4), kindle.zeros(1, 2, 5), None, [kindle.randn(5, 4), kindle.randn(5, 5)],
                            "RNN_TANH", False, 1, 0.0, False, False, False)
    assert out[2].shape == (0,)  # c_n of a non-LSTM: an empty tensor, never a null handle


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("T,bias,batch_first", [(1, True, False), (6, True, True), (4, False, False)])
def test_lstm_recurrence_matches_torch(T, bias, batch_first, bidirectional):
    """The fused recurrence (one node per layer and direction, packed w_hh) against torch.nn.LSTM,
    with gradients reaching the output, h_n and c_n separately."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    L, B, F_, H = 2, 3, 5, 4
    D = 2 if bidirectional else 1
    tm = torch.nn.LSTM(F_, H, num_layers=L, bias=bias, batch_first=batch_first, bidirectional=bidirectional).double()
    km = kindle.nn.LSTM(F_, H, num_layers=L, bias=bias, batch_first=batch_first, bidirectional=bidirectional).double()
    km.load_state_dict({k: kindle.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    xs = (B, T, F_) if batch_first else (T, B, F_)
    x, h0, c0 = rng.standard_normal(xs), rng.standard_normal((L * D, B, H)), rng.standard_normal((L * D, B, H))
    for which in ("out", "h", "c", "all"):
        kx, kh, kc = _t(x), _t(h0), _t(c0)
        tx, th, tc = (torch.from_numpy(a).requires_grad_() for a in (x, h0, c0))
        ko, (khn, kcn) = km(kx, (kh, kc))
        to, (thn, tcn) = tm(tx, (th, tc))
        for a, b in ((ko, to), (khn, thn), (kcn, tcn)):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-12)
        ws = {n: rng.standard_normal(t.shape) for n, t in (("out", to), ("h", thn), ("c", tcn))}
        pick = ["out", "h", "c"] if which == "all" else [which]
        kl = sum((k * _t(ws[n], False)).sum() for n, k in (("out", ko), ("h", khn), ("c", kcn)) if n in pick)
        tl = sum((t * torch.from_numpy(ws[n])).sum() for n, t in (("out", to), ("h", thn), ("c", tcn)) if n in pick)
        km.zero_grad()
        tm.zero_grad()
        kl.backward()
        tl.backward()
        for a, b in ((kx, tx), (kh, th), (kc, tc)):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12)
        for (n, p), (_, q) in zip(km.named_parameters(), tm.named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-12, err_msg=n)


def test_lstm_recurrence_double_backward():
    kindle.manual_seed(0)
    m = kindle.nn.LSTM(3, 2, num_layers=2, bidirectional=True).double()
    x = kindle.randn(4, 2, 3, dtype=kindle.float64, requires_grad=True)
    h0 = kindle.randn(4, 2, 2, dtype=kindle.float64, requires_grad=True)
    c0 = kindle.randn(4, 2, 2, dtype=kindle.float64, requires_grad=True)
    w = m.weight_hh_l0_reverse

    def f(a, hh, cc, ww):
        flat = list(m._flat_weights)
        flat[5] = ww  # layer 0, reverse direction: weight_hh
        return kindle._C._nn.rnn(a, hh, cc, flat, "LSTM", True, 2, 0.0, True, True, False)

    assert kindle.autograd.gradcheck(f, (x, h0, c0, w))
    assert kindle.autograd.gradgradcheck(f, (x, h0, c0, w))


def test_view_dtype_and_make_subclass():
    t = kindle.arange(8, dtype=kindle.float32).reshape(2, 4)
    assert t.view(kindle.int32).shape == (2, 4)
    assert t.view(kindle.int16).shape == (2, 8) and t.view(kindle.float64).shape == (2, 2)
    np.testing.assert_array_equal(t.view(kindle.int32).numpy(), t.numpy().view(np.int32))
    with pytest.raises(RuntimeError, match="divisible"):
        kindle.zeros(2, 3).view(kindle.float64)
    with pytest.raises(RuntimeError, match="stride"):
        kindle.zeros(4, 4).t().view(kindle.float64)

    class Sub(kindle.Tensor):
        pass

    s = kindle.Tensor._make_subclass(Sub, t, True)
    assert type(s) is Sub and s.requires_grad and s.is_leaf and s.data_ptr() == t.data_ptr()


def test_tensor_from_numpy_scalars_and_seeds():
    assert kindle.tensor([np.int32(1), np.int32(2)]).dtype == kindle.int32
    assert kindle.tensor([np.float64(1.5)]).dtype == kindle.float64
    assert kindle.tensor([np.bool_(True)]).dtype == kindle.bool
    assert kindle.tensor([np.float16(1)]).dtype == kindle.float16
    kindle.manual_seed(2**64 - 1)
    a = kindle.rand(3)
    kindle.manual_seed(-1)  # the same seed modulo 2^64
    np.testing.assert_array_equal(a.numpy(), kindle.rand(3).numpy())
    assert kindle.zeros(1).type() == "kindle.FloatTensor" and kindle.zeros(1, dtype=kindle.int64).type() == "kindle.LongTensor"


def test_fused_optimizer_errors():
    p, g = kindle.zeros(3), kindle.zeros(4)
    with pytest.raises(RuntimeError, match="shape"):
        kindle._C._optim.sgd_step([p], [g], [None], 0.1, 0.0, 0.0, 0.0, False, False)
    with pytest.raises(RuntimeError, match="floating-point"):
        kindle._C._optim.sgd_step([kindle.zeros(3, dtype=kindle.int64)], [kindle.zeros(3, dtype=kindle.int64)], [None],
                                  0.1, 0.0, 0.0, 0.0, False, False)


@pytest.mark.parametrize("m,k,n", [(1, 784, 512), (3, 100, 300), (8, 33, 257)])
def test_few_rows_gemm_blocks(m, k, n):
    """Products with a few rows run as fixed column blocks spread over the threads
    (csrc/cpu/blas.cpp): right for both layouts of B, and the same bits on any thread count."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)  # linear's layout: B transposed
    b = rng.standard_normal((k, n)).astype(np.float32)  # matmul's
    want_lin = a.astype(np.float64) @ w.T.astype(np.float64)
    want_mm = a.astype(np.float64) @ b.astype(np.float64)
    old = kindle.get_num_threads()
    got = []
    try:
        for threads in (1, 2):
            kindle.set_num_threads(threads)
            lin = F.linear(_t(a, False), _t(w, False)).numpy()
            mm = (_t(a, False) @ _t(b, False)).numpy()
            np.testing.assert_allclose(lin, want_lin, rtol=1e-4, atol=1e-4 * np.sqrt(k))
            np.testing.assert_allclose(mm, want_mm, rtol=1e-4, atol=1e-4 * np.sqrt(k))
            got.append((lin, mm))
    finally:
        kindle.set_num_threads(old)
    assert np.array_equal(got[0][0], got[1][0]) and np.array_equal(got[0][1], got[1][1])


@pytest.mark.parametrize("shape,ns", [((7, 5, 13), (13,)), ((3, 4, 6), (4, 6)), ((130, 70), (70,)), ((1, 3), (3,))])
@pytest.mark.parametrize("req", [(True, True, True), (True, False, True), (True, True, False), (False, True, True)])
def test_layer_norm_one_pass_parameter_gradients(shape, ns, req):
    """The input formula of fused_layer_norm also produces the weight and bias gradients (one
    pass); whichever of the three is wanted, all match torch."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    x, w, b, g = (rng.standard_normal(s) for s in (shape, ns, ns, shape))
    got = []
    for lib, FF in ((kindle, F), (torch, torch.nn.functional)):
        X, W, B = (lib.from_numpy(a.copy()).requires_grad_(r) for a, r in zip((x, w, b), req))
        FF.layer_norm(X, ns, W, B).backward(lib.from_numpy(g.copy()))
        got.append([t.grad.numpy() if t.grad is not None else None for t in (X, W, B)])
    for a, c in zip(*got):
        assert (a is None) == (c is None)
        if a is not None:
            np.testing.assert_allclose(a, c, atol=1e-10)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((5, 7), -1), ((3, 4, 9), 2), ((3, 4, 9), 1), ((1,), 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_backward_fused_rows(fn, shape, dim, dtype):
    """(log_)softmax's backward over the last dimension is one row kernel; other dimensions and
    double backward use the formula with ops. Both match torch."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    x, g = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
    kx = _t(x)
    getattr(F, fn)(kx, dim).backward(_t(g, False))
    tx = torch.from_numpy(x.astype(np.float64)).requires_grad_()
    getattr(torch.nn.functional, fn)(tx, dim).backward(torch.from_numpy(g.astype(np.float64)))
    np.testing.assert_allclose(kx.grad.numpy(), tx.grad.numpy(), atol=1e-5 if dtype == np.float32 else 1e-12)
    if dtype == np.float64:
        assert kindle.autograd.gradgradcheck(lambda a: getattr(F, fn)(a, dim), (_t(x),))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignored", ["none", "some", "all"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_fused_rows(reduction, ignored, dtype):
    """cross_entropy over class indices of (N, C) logits is one node over two row kernels;
    values and gradients match torch, ignored rows included (all ignored: NaN mean, zero grad)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    N, C = 9, 13
    x = (rng.standard_normal((N, C)) * 3).astype(dtype)
    t = rng.integers(0, C, N)
    if ignored == "some":
        t[[1, 4]] = -100
    elif ignored == "all":
        t[:] = -100
    kx, tx = _t(x), torch.from_numpy(x.astype(np.float64)).requires_grad_()
    kl = F.cross_entropy(kx, kindle.from_numpy(t), reduction=reduction)
    tl = torch.nn.functional.cross_entropy(tx, torch.from_numpy(t), reduction=reduction)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(kl.detach().numpy(), tl.detach().numpy(), rtol=tol, atol=tol)
    gw = rng.standard_normal(tl.shape)
    kl.backward(kindle.from_numpy(gw.astype(dtype)))
    tl.backward(torch.from_numpy(gw))
    np.testing.assert_allclose(kx.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)


def test_cross_entropy_fused_double_backward_errors_and_views():
    rng = np.random.default_rng(11)
    x = _t(rng.standard_normal((4, 5)))
    t = kindle.tensor([0, 4, -100, 2])
    assert kindle.autograd.gradgradcheck(lambda a: F.cross_entropy(a, t), (x,))
    assert kindle.autograd.gradgradcheck(lambda a: F.cross_entropy(a, t, reduction="none"), (x,))
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(x, kindle.tensor([0, 7, 1, 1]))
    with pytest.raises(ValueError, match="batch_size"):
        F.cross_entropy(x, kindle.tensor([0, 1, 1]))
    # A transposed (non-contiguous) input gives the contiguous input's result.
    xt = _t(rng.standard_normal((5, 4))).t()
    a = F.cross_entropy(xt, t)
    b = F.cross_entropy(xt.contiguous(), t)
    assert kindle.allclose(a, b)
