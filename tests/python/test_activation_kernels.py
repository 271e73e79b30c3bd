"""The activations' one-pass kernels (forward and first-order backward) against PyTorch, at the
points where their formulas switch (the thresholds, 0, +-3, large values, infinities, NaN), over
dtypes, strides and runs longer and shorter than a kernel block; and the composite formulas that
take over for double backward and forward-over-forward."""
import numpy as np
import pytest

import kindle
import kindle.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

ACTIVATIONS = {
    "elu": {}, "elu_alpha": {"alpha": 0.7}, "selu": {}, "celu": {"alpha": 1.5}, "softplus": {},
    "softplus_beta": {"beta": 2.0, "threshold": 5.0}, "mish": {}, "hardswish": {}, "hardsigmoid": {},
    "silu": {}, "logsigmoid": {}, "gelu": {},
}
SPECIAL = [0.0, -0.0, 3.0, -3.0, 2.5, 5.0, 20.0, -20.0, 25.0, 88.0, 89.0, -100.0, 1e-8, -1e-8,
           np.inf, -np.inf]


def _fn(lib, key):
    name = key.split("_")[0]
    mod = F if lib == "kindle" else TF
    return lambda x: getattr(mod, name)(x, **ACTIVATIONS[key])


def _inputs(n, nan):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n) * 6
    sp = SPECIAL + ([np.nan] if nan else [])
    x[: min(n, len(sp))] = sp[: min(n, len(sp))]
    rng.shuffle(x)
    return x


def _close(a, b, tol):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol,
                               equal_nan=True)


@pytest.mark.parametrize("key", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "broadcast"])
@pytest.mark.parametrize("n", [5, 300, 1000])
def test_forward_and_backward_match_torch(key, dtype, layout, n):
    # PyTorch's strided loops treat a NaN input differently from its vectorised ones (elu's and
    # hardswish's gradients): NaN is compared on contiguous inputs only, where both take the
    # vectorised path. gelu(inf) is NaN in torch's vectorised kernel (Kindle gives inf, the limit).
    nan = layout == "contiguous"
    x = _inputs(n, nan)
    if key == "gelu":
        x = np.where(np.isinf(x), 7.0, x)
    kx = kindle.tensor(x).to(getattr(kindle, dtype))
    tx = torch.tensor(x).to(getattr(torch, dtype))
    if layout == "strided":
        kx, tx = kindle.stack([kx, kx], 1)[:, 1], torch.stack([tx, tx], 1)[:, 1]
    elif layout == "broadcast":
        kx, tx = kx[:1].expand(n), tx[:1].expand(n)
    tol = 2e-6 if dtype == "float64" else 1e-5 if dtype == "float32" else 1e-2
    kx.requires_grad_(dtype in ("float32", "float64"))
    tx.requires_grad_(dtype in ("float32", "float64"))
    ky, ty = _fn("kindle", key)(kx), _fn("torch", key)(tx)
    assert ky.dtype == getattr(kindle, dtype)
    _close(ky.detach().float().numpy(), ty.detach().float().numpy(), tol)
    if not kx.requires_grad:
        return
    g = np.random.default_rng(1).standard_normal(n)
    kg, = kindle.autograd.grad(ky, kx, kindle.tensor(g).to(ky.dtype))
    tg, = torch.autograd.grad(ty, tx, torch.tensor(g).to(ty.dtype))
    # (float64 to 1e-7: torch's hardsigmoid backward multiplies by a float32 1/6)
    _close(kg.numpy(), tg.numpy(), 1e-4 if dtype == "float32" else 1e-7)


# (hardsigmoid's gradient is piecewise constant: torch has no derivative for its backward either)
@pytest.mark.parametrize("key", sorted(set(ACTIVATIONS) - {"hardsigmoid"}))
def test_double_backward_and_forward_over_forward(key):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4)) * 3
    kx = kindle.tensor(x, requires_grad=True)
    assert kindle.autograd.gradgradcheck(_fn("kindle", key), (kx,))
    tx = torch.tensor(x, requires_grad=True)
    for lib, t in (("kindle", kx), ("torch", tx)):
        y = _fn(lib, key)(t)
        g, = (kindle if lib == "kindle" else torch).autograd.grad(y.sum(), t, create_graph=True)
        gg, = (kindle if lib == "kindle" else torch).autograd.grad(g.sum(), t)
        if lib == "kindle":
            kgg = gg.numpy()
        else:
            _close(kgg, gg.numpy(), 1e-9)
    # second derivatives by forward over forward (the tangent formulas run the backward ones)
    from kindle.func import jacfwd
    h = jacfwd(jacfwd(lambda v: _fn("kindle", key)(v).sum()))(kindle.tensor(x[0]))
    th = torch.func.jacfwd(torch.func.jacfwd(lambda v: _fn("torch", key)(v).sum()))(torch.tensor(x[0]))
    _close(h.numpy(), th.numpy(), 1e-9)


@pytest.mark.parametrize("name", ["elu", "selu", "celu", "hardswish", "hardsigmoid", "silu", "mish"])
def test_inplace_forms(name):
    x = _inputs(300, False)
    kx, tx = kindle.tensor(x), torch.tensor(x)
    ko = getattr(F, name)(kx, inplace=True)
    to = getattr(TF, name)(tx, inplace=True)
    assert ko.data_ptr() == kx.data_ptr()
    _close(kx.numpy(), tx.numpy(), 1e-12)
    _close(ko.numpy(), to.numpy(), 1e-12)


def test_integer_inputs_are_refused():
    for f in (F.mish, F.logsigmoid, F.elu, F.softplus):
        with pytest.raises(RuntimeError):
            f(kindle.arange(4))
    with pytest.raises(NotImplementedError, match="hardswish"):
        F.hardswish(kindle.arange(4))
