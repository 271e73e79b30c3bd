"""kindle.nn.init: distributions (mean/std/bounds of large draws), fans and gains against torch,
deterministic initialisers against torch, reproducibility under kindle.manual_seed, no autograd
history, and the default initialisation of the layers."""
import math
import warnings

import numpy as np
import pytest

import kindle
import kindle.nn as nn
from kindle.nn import init


def _np(t):
    return t.detach().numpy()


def _big(*shape):
    return nn.Parameter(kindle.empty(*shape))


@pytest.mark.parametrize("shape", [(3, 4), (5, 2, 3, 3), (2, 7, 4)])
def test_fans_match_torch(shape):
    torch = pytest.importorskip("torch")
    k = init._calculate_fan_in_and_fan_out(kindle.empty(*shape))
    t = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    assert k == t


def test_fan_errors():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(kindle.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(kindle.empty(3, 3), mode="fan_avg")


def test_calculate_gain_matches_torch():
    torch = pytest.importorskip("torch")
    for name, param in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                        ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None), ("conv_transpose1d", None)]:
        assert init.calculate_gain(name, param) == pytest.approx(torch.nn.init.calculate_gain(name, param))
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", "x")


def _stats(t):
    a = _np(t).astype(np.float64).ravel()
    return a.mean(), a.std(), a.min(), a.max()


def test_uniform_and_normal_statistics():
    mean, std, lo, hi = _stats(init.uniform_(_big(400, 250), -2.0, 3.0))
    assert lo >= -2.0 and hi <= 3.0 and abs(mean - 0.5) < 0.02 and abs(std - 5 / math.sqrt(12)) < 0.02
    mean, std, _, _ = _stats(init.normal_(_big(400, 250), 1.5, 0.5))
    assert abs(mean - 1.5) < 0.005 and abs(std - 0.5) < 0.005
    t = init.constant_(_big(3, 2), 0.25)
    assert np.all(_np(t) == 0.25)
    assert np.all(_np(init.ones_(_big(2))) == 1) and np.all(_np(init.zeros_(_big(2))) == 0)


def test_trunc_normal_statistics():
    torch = pytest.importorskip("torch")
    k = init.trunc_normal_(_big(500, 200), mean=0.5, std=1.0, a=-1.0, b=1.5)
    torch.manual_seed(0)
    t = torch.nn.init.trunc_normal_(torch.empty(500, 200), mean=0.5, std=1.0, a=-1.0, b=1.5)
    km, ks, klo, khi = _stats(k)
    tm, ts = t.double().mean().item(), t.double().std().item()
    assert klo >= -1.0 and khi <= 1.5
    assert abs(km - tm) < 0.01 and abs(ks - ts) < 0.01  # the same truncated distribution


@pytest.mark.parametrize("fn,kwargs,std", [
    ("xavier_uniform_", {"gain": 2.0}, lambda fi, fo: 2.0 * math.sqrt(2.0 / (fi + fo))),
    ("xavier_normal_", {}, lambda fi, fo: math.sqrt(2.0 / (fi + fo))),
    ("kaiming_uniform_", {"a": math.sqrt(5)}, lambda fi, fo: math.sqrt(2.0 / 6) / math.sqrt(fi)),
    ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}, lambda fi, fo: math.sqrt(2.0 / fo)),
    ("kaiming_normal_", {}, lambda fi, fo: math.sqrt(2.0 / 1.0001) / math.sqrt(fi)),
    ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "tanh"}, lambda fi, fo: 5 / 3 / math.sqrt(fo)),
])
def test_scaled_initialisers_statistics(fn, kwargs, std):
    w = _big(300, 50, 3, 3)
    fan_in, fan_out = 50 * 9, 300 * 9
    getattr(init, fn)(w, **kwargs)
    mean, s, lo, hi = _stats(w)
    expected = std(fan_in, fan_out)
    assert abs(mean) < 0.02 * expected
    assert abs(s - expected) < 0.01 * expected
    if "uniform" in fn:
        bound = math.sqrt(3) * expected * (1 + 1e-6)  # float32 rounding of the bound
        assert -bound <= lo and hi <= bound and hi > 0.99 * bound


def test_eye_and_dirac_match_torch():
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(_np(init.eye_(_big(3, 5))), torch.nn.init.eye_(torch.empty(3, 5)).numpy())
    for shape, groups in [((4, 2, 3), 1), ((4, 2, 3, 3), 2), ((2, 3, 1, 3, 3), 1)]:
        k = init.dirac_(_big(*shape), groups)
        t = torch.nn.init.dirac_(torch.empty(*shape), groups)
        np.testing.assert_array_equal(_np(k), t.numpy())
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(_big(2, 2, 2))
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(_big(2, 2))


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 2, 2)])
def test_orthogonal(shape):
    w = init.orthogonal_(_big(*shape), gain=2.0)
    m = _np(w).reshape(shape[0], -1).astype(np.float64)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-5)
    assert w.dtype == kindle.float32 and isinstance(w, nn.Parameter)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(_big(3))


def test_sparse():
    w = init.sparse_(_big(10, 6), sparsity=0.3)
    zeros_per_col = (_np(w) == 0).sum(0)
    assert np.all(zeros_per_col >= 3)


def test_reproducible_under_manual_seed_and_generator():
    for fn in (lambda t: init.kaiming_uniform_(t, a=1.0), init.xavier_normal_, init.orthogonal_,
               lambda t: init.trunc_normal_(t, std=0.02)):
        kindle.manual_seed(123)
        a = _np(fn(_big(8, 5))).copy()
        kindle.manual_seed(123)
        b = _np(fn(_big(8, 5)))
        np.testing.assert_array_equal(a, b)
    g1, g2 = kindle.Generator(), kindle.Generator()
    g1.manual_seed(5)
    g2.manual_seed(5)
    np.testing.assert_array_equal(_np(init.normal_(_big(4, 4), generator=g1)),
                                  _np(init.normal_(_big(4, 4), generator=g2)))


def test_init_records_no_history_and_keeps_leaves():
    p = _big(4, 3)
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_, init.orthogonal_,
               init.trunc_normal_, init.zeros_, lambda t: init.constant_(t, 2.0)):
        out = fn(p)
        assert out.grad_fn is None and p.is_leaf and p.requires_grad


def test_zero_element_warns():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(kindle.empty(0, 3))


def test_default_layer_initialisation():
    kindle.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    for p in (lin.weight, lin.bias):
        a = _np(p)
        assert a.min() >= -bound and a.max() <= bound and a.max() > 0.95 * bound
    assert abs(_np(lin.weight).std() - bound / math.sqrt(3)) < 0.01 * bound
    conv = nn.Conv2d(16, 32, 3)
    cb = 1 / math.sqrt(16 * 9)
    assert np.abs(_np(conv.weight)).max() <= cb and np.abs(_np(conv.bias)).max() <= cb
    tconv = nn.ConvTranspose2d(16, 8, 3)  # weight (in, out, k, k): fan_in = 8 * 9
    tb = 1 / math.sqrt(8 * 9)
    assert np.abs(_np(tconv.weight)).max() <= tb and np.abs(_np(tconv.weight)).max() > 0.9 * tb
    bil = nn.Bilinear(20, 30, 5)
    assert np.abs(_np(bil.weight)).max() <= 1 / math.sqrt(20)
    emb = nn.Embedding(500, 64, padding_idx=3)
    e = _np(emb.weight)
    assert np.all(e[3] == 0) and abs(e.std() - 1) < 0.02
    bn = nn.BatchNorm2d(4)
    assert np.all(_np(bn.weight) == 1) and np.all(_np(bn.bias) == 0)
    assert np.all(bn.running_var.numpy() == 1) and int(bn.num_batches_tracked) == 0
    assert np.all(_np(nn.PReLU(3, init=0.1).weight) == np.float32(0.1))
    ln = nn.LayerNorm(5)
    assert np.all(_np(ln.weight) == 1) and np.all(_np(ln.bias) == 0)


def test_layer_init_reproducible():
    kindle.manual_seed(42)
    a = [_np(p).copy() for p in nn.Sequential(nn.Linear(5, 4), nn.Conv1d(2, 3, 3)).parameters()]
    kindle.manual_seed(42)
    b = [_np(p) for p in nn.Sequential(nn.Linear(5, 4), nn.Conv1d(2, 3, 3)).parameters()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_trunc_normal_far_mean_warns():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        init.trunc_normal_(_big(2, 2), mean=10.0, a=-1.0, b=1.0)
    assert any("mean is more than 2 std" in str(x.message) for x in w)


def test_draws_dispatch_torch_function_and_return_their_argument():
    """uniform_/normal_/trunc_normal_ hand a __torch_function__ tensor-like to it, as torch's do;
    on tensors (Parameters included) they fill in place and return the same object."""
    class Like:
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func.__name__

    for fn in (init.uniform_, init.normal_, init.trunc_normal_):
        assert fn(Like()) == fn.__name__
        w = nn.Parameter(kindle.empty(3, 4))
        assert fn(w) is w and w.requires_grad and w.grad_fn is None
