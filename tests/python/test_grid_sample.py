"""grid_sample (the grid_sampler op and its C++ kernels) against torch: every mode, padding and
align_corners, 2-d and 3-d, float32/float64 (bfloat16/float16 through float32), both gradients,
grids inside, outside and exactly on the edges (where clipping zeroes the grid's gradient), NaN
and infinite grid values, and the spatial transformer's identity start."""
import itertools

import numpy as np
import pytest

import kindle
import kindle.nn.functional as KF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

MODES2 = ["bilinear", "nearest", "bicubic"]
PADS = ["zeros", "border", "reflection"]


def run(F, L, inp, grid, **kw):
    x = L.tensor(inp, requires_grad=True)
    g = L.tensor(grid, requires_grad=True)
    out = F.grid_sample(x, g, **kw)
    w = L.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)).astype(inp.dtype))
    (out * w).sum().backward()
    return out.detach().numpy(), x.grad.numpy(), g.grad.numpy()


def compare(inp, grid, tol, **kw):
    k = run(KF, kindle, inp, grid, **kw)
    t = run(TF, torch, inp, grid, **kw)
    for name, a, b in zip(("output", "input grad", "grid grad"), k, t):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=f"{name} {kw}")


def grids(rng, shape, dtype):
    g = rng.uniform(-1.3, 1.3, shape).astype(dtype)
    flat = g.reshape(-1)
    # exact edges and centres: -1, 1 and the pixel centres of both conventions
    special = np.array([-1.0, 1.0, 0.0, -1.0, 1.0, -0.5, 0.5, 1.0], dtype)
    flat[: special.size] = special
    return g


@pytest.mark.parametrize("mode,padding,align", list(itertools.product(MODES2, PADS, [False, True])))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_2d_matches_torch(mode, padding, align, dtype):
    rng = np.random.default_rng(0)
    inp = rng.standard_normal((2, 3, 5, 7)).astype(dtype)
    grid = grids(rng, (2, 4, 6, 2), dtype)
    tol = 1e-10 if dtype == "float64" else 2e-5
    compare(inp, grid, tol, mode=mode, padding_mode=padding, align_corners=align)


@pytest.mark.parametrize("mode,padding,align", list(itertools.product(["bilinear", "nearest"], PADS, [False, True])))
def test_3d_matches_torch(mode, padding, align):
    rng = np.random.default_rng(1)
    inp = rng.standard_normal((2, 2, 3, 4, 5))
    grid = grids(rng, (2, 3, 2, 4, 3), "float64")
    compare(inp, grid, 1e-10, mode=mode, padding_mode=padding, align_corners=align)


@pytest.mark.parametrize("padding", PADS)
@pytest.mark.parametrize("align", [False, True])
def test_identity_affine_grid_gradient_is_torchs(padding, align):
    # the spatial transformer tutorial's start: theta = identity, grid points on pixel centres
    rng = np.random.default_rng(2)
    img = rng.standard_normal((2, 1, 6, 6)).astype(np.float32)
    res = []
    for L, F in ((kindle, KF), (torch, TF)):
        theta = L.tensor([[[1.0, 0, 0], [0, 1.0, 0]]] * 2, requires_grad=True)
        out = F.grid_sample(L.tensor(img), F.affine_grid(theta, (2, 1, 6, 6), align_corners=align),
                            padding_mode=padding, align_corners=align)
        (out * out).sum().backward()
        res.append((out.detach().numpy(), theta.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-4, atol=1e-4)
    # a constant image has no gradient anywhere, clipped edges included
    theta = kindle.tensor([[[1.0, 0, 0], [0, 1.0, 0]]], requires_grad=True)
    KF.grid_sample(kindle.ones(1, 1, 4, 4), KF.affine_grid(theta, (1, 1, 4, 4), align_corners=align),
                   padding_mode=padding, align_corners=align).sum().backward()
    if padding != "zeros":
        assert kindle.equal(theta.grad, kindle.zeros_like(theta.grad))


@pytest.mark.parametrize("mode", MODES2)
@pytest.mark.parametrize("padding", PADS)
def test_non_finite_grid_values(mode, padding):
    inp = np.arange(2 * 4 * 4, dtype=np.float64).reshape(1, 2, 4, 4)
    grid = np.array([[[[np.nan, 0.0], [np.inf, 0.2], [-np.inf, -0.3], [0.1, np.nan], [5e30, -5e30]]]])
    k = KF.grid_sample(kindle.tensor(inp), kindle.tensor(grid), mode=mode, padding_mode=padding, align_corners=False)
    t = TF.grid_sample(torch.tensor(inp), torch.tensor(grid), mode=mode, padding_mode=padding, align_corners=False)
    np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_compute_in_float(dtype):
    rng = np.random.default_rng(3)
    inp = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    grid = rng.uniform(-1, 1, (1, 3, 3, 2)).astype(np.float32)
    k = KF.grid_sample(kindle.tensor(inp).to(getattr(kindle, dtype)), kindle.tensor(grid).to(getattr(kindle, dtype)),
                       align_corners=False)
    t = TF.grid_sample(torch.tensor(inp).to(getattr(torch, dtype)), torch.tensor(grid).to(getattr(torch, dtype)),
                       align_corners=False)
    assert k.dtype == getattr(kindle, dtype)
    np.testing.assert_allclose(k.float().numpy(), t.float().numpy(), rtol=2e-2, atol=2e-2)


def test_non_contiguous_inputs_empty_batches_and_errors():
    rng = np.random.default_rng(4)
    base = rng.standard_normal((3, 2, 6, 5))
    x = kindle.tensor(base).transpose(2, 3)
    g = kindle.tensor(rng.uniform(-1, 1, (3, 2, 4, 2))).transpose(1, 2)
    k = KF.grid_sample(x, g, align_corners=True)
    t = TF.grid_sample(torch.tensor(base).transpose(2, 3), torch.tensor(g.numpy()), align_corners=True)
    np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)
    assert KF.grid_sample(kindle.zeros(0, 2, 3, 3), kindle.zeros(0, 2, 2, 2), align_corners=False).shape == (0, 2, 2, 2)
    assert KF.grid_sample(kindle.zeros(1, 2, 3, 3), kindle.zeros(1, 0, 2, 2), align_corners=False).shape == (1, 2, 0, 2)
    with pytest.raises(RuntimeError, match="same batch size"):
        KF.grid_sample(kindle.zeros(2, 1, 3, 3), kindle.zeros(1, 2, 2, 2), align_corners=False)
    with pytest.raises(NotImplementedError):
        KF.grid_sample(kindle.zeros(1, 1, 3, 3, dtype=kindle.int64), kindle.zeros(1, 2, 2, 2, dtype=kindle.int64),
                       align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic"):
        KF.grid_sample(kindle.zeros(1, 1, 2, 3, 3), kindle.zeros(1, 1, 2, 2, 3), mode="bicubic", align_corners=False)
    with pytest.raises(RuntimeError):
        kindle.grid_sampler(kindle.zeros(1, 1, 3, 3), kindle.zeros(1, 2, 2, 2), 7, 0, False)


def test_gradcheck_every_mode():
    rng = np.random.default_rng(5)
    for mode, padding, align in itertools.product(["bilinear", "bicubic"], PADS, [False, True]):
        x = kindle.tensor(rng.standard_normal((1, 2, 4, 4)), requires_grad=True)
        g = kindle.tensor(rng.uniform(-0.9, 0.9, (1, 3, 2, 2)), requires_grad=True)
        assert kindle.autograd.gradcheck(lambda a, b: KF.grid_sample(a, b, mode=mode, padding_mode=padding,
                                                                     align_corners=align), (x, g))
