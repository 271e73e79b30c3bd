"""kindle.masked against torch.masked: every function, over dims, keepdim, broadcast masks with
fully masked-out slices, float and integer inputs."""
import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")

REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "logsumexp", "norm", "var", "std"]
INTEGER_OK = {"sum", "prod", "amax", "amin", "argmax", "argmin", "cumsum", "cumprod"}


def inputs(dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, 4, 5)) * 3
    if dtype in ("int64", "int32"):
        x = np.round(x)
    mask = rng.random((3, 4, 5)) < 0.6
    mask[1, 2, :] = False   # a fully masked-out row
    mask[:, :, 3] = False   # and a fully masked-out column
    return x.astype(dtype), mask


def both(x, mask):
    return (kindle.tensor(x), kindle.tensor(mask)), (torch.tensor(x), torch.tensor(mask))


def check(got, want, dtype):
    want = want.detach().numpy()
    got = got.detach().numpy()
    assert got.shape == want.shape and str(got.dtype) == str(want.dtype)
    tol = 1e-5 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


def cases(names):
    """(name, dtype) pairs: integer inputs only for the functions defined on them."""
    return [(n, d) for n in names for d in ("float32", "float64", "int64") if d != "int64" or n in INTEGER_OK]


@pytest.mark.parametrize("name, dtype", cases(REDUCTIONS))
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_match_torch(name, dim, keepdim, dtype):
    x, mask = inputs(dtype)
    (kx, km), (tx, tm) = both(x, mask)
    kf, tf = getattr(kindle.masked, name), getattr(torch.masked, name)
    args = (2.0, dim) if name == "norm" else (dim,)
    check(kf(kx, *args, keepdim=keepdim, mask=km), tf(tx, *args, keepdim=keepdim, mask=tm), dtype)
    check(kf(kx, *args, keepdim=keepdim), tf(tx, *args, keepdim=keepdim), dtype)  # no mask: the plain op


@pytest.mark.parametrize("name, dtype", cases(["argmax", "argmin", "median", "softmax", "log_softmax", "softmin",
                                                "cumsum", "cumprod"]))
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_single_dimension_functions_match_torch(name, dim, dtype):
    x, mask = inputs(dtype, seed=1)
    (kx, km), (tx, tm) = both(x, mask)
    check(getattr(kindle.masked, name)(kx, dim, mask=km), getattr(torch.masked, name)(tx, dim, mask=tm), dtype)


@pytest.mark.parametrize("ord", [1.0, 2.0, 3.0, float("inf"), -float("inf")])
def test_norms_and_normalize_match_torch(ord):
    x, mask = inputs("float64", seed=2)
    (kx, km), (tx, tm) = both(x, mask)
    check(kindle.masked.norm(kx, ord, (1, 2), mask=km), torch.masked.norm(tx, ord, (1, 2), mask=tm), "float64")
    if np.isfinite(ord):
        check(kindle.masked.normalize(kx, ord, 1, mask=km), torch.masked.normalize(tx, ord, 1, mask=tm), "float64")


@pytest.mark.parametrize("kw", [{"unbiased": False}, {"unbiased": True}, {"correction": 0}, {"correction": 2}])
def test_variance_corrections_match_torch(kw):
    x, mask = inputs("float64", seed=3)
    (kx, km), (tx, tm) = both(x, mask)
    for name in ("var", "std"):
        check(getattr(kindle.masked, name)(kx, 2, mask=km, **kw), getattr(torch.masked, name)(tx, 2, mask=tm, **kw),
              "float64")


def test_broadcast_masks_dtype_and_logaddexp_match_torch():
    x, _ = inputs("float32", seed=4)
    row_mask = np.array([[True], [False], [True], [True]])  # (4, 1): broadcast over the last dimension
    (kx, km), (tx, tm) = both(x, row_mask)
    check(kindle.masked.sum(kx, 1, mask=km), torch.masked.sum(tx, 1, mask=tm), "float32")
    check(kindle.masked.mean(kx, -1, dtype=kindle.float64, mask=km),
          torch.masked.mean(tx, -1, dtype=torch.float64, mask=tm), "float64")
    y, other = inputs("float32", seed=5)
    _, mask = inputs("float32", seed=6)
    got = kindle.masked.logaddexp(kx, kindle.tensor(y), input_mask=kindle.tensor(mask),
                                  other_mask=kindle.tensor(other))
    want = torch.masked.logaddexp(tx, torch.tensor(y), input_mask=torch.tensor(mask), other_mask=torch.tensor(other))
    check(got, want, "float32")


def test_bad_masks_are_refused():
    x = kindle.randn(3, 4)
    with pytest.raises(ValueError, match="dtype bool"):
        kindle.masked.sum(x, mask=kindle.ones(3, 4))
    with pytest.raises(IndexError, match="broadcastable mask"):
        kindle.masked.sum(x, mask=kindle.ones(2, 3, 4, dtype=kindle.bool))
    with pytest.raises(RuntimeError):
        kindle.masked.sum(x, mask=kindle.ones(5, dtype=kindle.bool))  # not broadcastable to (3, 4)
