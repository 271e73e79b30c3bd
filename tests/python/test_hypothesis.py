"""Property-based shape and stride fuzzing against NumPy: elementwise binary ops on broadcast
shapes whose operands are random views (dims permuted, sliced with steps and offsets, expanded),
and reductions over random dims with and without keepdim."""
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import kindle  # noqa: E402
from common import to_numpy, values_mismatch  # noqa: E402
from opdb import DEFAULT_TOL, RED_TOL, dtype_name  # noqa: E402

NP = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "int64": np.int64, "int16": np.int16,
      "uint8": np.uint8, "bool": np.bool_}


@st.composite
def strided(draw, shape, dtype, low=-5, high=5, nonzero=False):
    """A (numpy logical value, kindle tensor) pair of `shape`, the tensor a random view: the
    base has the dims permuted and each dim stretched by a step and an offset; size-1 dims may
    be expanded (stride 0)."""
    n = len(shape)
    perm = draw(st.permutations(range(n))) if n else []
    steps = [draw(st.integers(1, 3)) for _ in range(n)]
    offs = [draw(st.integers(0, 2)) for _ in range(n)]
    expand = [draw(st.booleans()) and shape[i] != 1 for i in range(n)]
    seed = draw(st.integers(0, 2 ** 31))
    rng = np.random.default_rng(seed)
    # logical dim i lives at base dim perm.index(i)
    base_logical = [1 if expand[i] else offs[i] + steps[i] * max(shape[i], 1) for i in range(n)]
    base_shape = [base_logical[perm[j]] for j in range(n)]
    if dtype == "bool":
        base = rng.random(base_shape) < 0.5
    elif dtype.startswith("float"):
        base = rng.uniform(low, high, base_shape).astype(NP[dtype])
        if nonzero:
            base[np.abs(base) < 0.1] = 1.0
    else:
        lo = 0 if dtype == "uint8" else low
        base = rng.integers(lo, high + 1, base_shape).astype(NP[dtype])
        if nonzero:
            base[base == 0] = 1
    base = np.asarray(base)
    inv = [perm.index(i) for i in range(n)]

    def view(x, lib):
        x = np.transpose(x, inv) if lib is np else (x.permute(*inv) if n else x)
        idx = tuple(slice(0, 1) if expand[i] else slice(offs[i], offs[i] + steps[i] * shape[i], steps[i])
                    for i in range(n))
        x = x[idx]
        if any(expand):
            x = np.broadcast_to(x, shape) if lib is np else x.expand(*shape)
        return x
    return view(base, np), view(kindle.tensor(base), kindle)


BINARY = {
    "add": (np.add, lambda a, b: kindle.add(a, b)), "sub": (np.subtract, lambda a, b: a - b),
    "mul": (np.multiply, lambda a, b: kindle.mul(a, b)), "div": (np.true_divide, lambda a, b: a / b),
    "maximum": (np.maximum, kindle.maximum), "minimum": (np.minimum, kindle.minimum),
    "eq": (np.equal, kindle.eq), "lt": (np.less, lambda a, b: a < b), "ge": (np.greater_equal, kindle.ge),
    "atan2": (np.arctan2, kindle.atan2), "fmod": (np.fmod, kindle.fmod), "hypot": (np.hypot, kindle.hypot),
    "copysign": (np.copysign, kindle.copysign),
}
INT_BINARY = {
    "add": (np.add, kindle.add), "mul": (np.multiply, kindle.mul), "sub": (np.subtract, kindle.sub),
    "bitwise_and": (np.bitwise_and, kindle.bitwise_and), "bitwise_xor": (np.bitwise_xor, lambda a, b: a ^ b),
    "maximum": (np.maximum, kindle.maximum), "floor_divide": (np.floor_divide, kindle.floor_divide),
    "remainder": (np.remainder, kindle.remainder), "gt": (np.greater, kindle.gt),
}


def _check(kres, expected):
    assert tuple(kres.shape) == tuple(np.shape(expected)), (tuple(kres.shape), np.shape(expected))
    d = dtype_name(kres.dtype)
    rtol, atol = DEFAULT_TOL.get(d, (0.0, 0.0))
    m = values_mismatch(to_numpy(kres), np.asarray(expected), rtol, atol)
    assert m is None, m


@given(data=st.data(), shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=5),
       op=st.sampled_from(sorted(BINARY)), dtype=st.sampled_from(["float32", "float64"]))
def test_float_binary_broadcast_strided(data, shapes, op, dtype):
    sa, sb = shapes.input_shapes
    nonzero = op in ("div", "fmod")
    a, ka = data.draw(strided(sa, dtype))
    b, kb = data.draw(strided(sb, dtype, nonzero=nonzero))
    np_fn, k_fn = BINARY[op]
    with np.errstate(all="ignore"):
        expected = np_fn(a, b)
    r = k_fn(ka, kb)
    assert tuple(r.shape) == shapes.result_shape
    _check(r, expected)


@given(data=st.data(), shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=5),
       op=st.sampled_from(sorted(INT_BINARY)), dtype=st.sampled_from(["int32", "int64", "int16", "uint8"]))
def test_int_binary_broadcast_strided(data, shapes, op, dtype):
    sa, sb = shapes.input_shapes
    nonzero = op in ("floor_divide", "remainder")
    a, ka = data.draw(strided(sa, dtype, low=-20, high=20))
    b, kb = data.draw(strided(sb, dtype, low=-20, high=20, nonzero=nonzero))
    np_fn, k_fn = INT_BINARY[op]
    r = k_fn(ka, kb)
    _check(r, np_fn(a, b).astype(to_numpy(r).dtype) if r.dtype != kindle.bool else np_fn(a, b))


@given(data=st.data(), shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3, max_side=4),
       da=st.sampled_from(["float32", "float64", "int64", "int32", "bool", "uint8"]),
       db=st.sampled_from(["float32", "float64", "int64", "int32", "bool", "uint8"]))
def test_mixed_dtype_add_mul_values(data, shapes, da, db):
    """Type promotion: the values of a mixed-dtype add/mul are those of the computation in the
    promoted dtype (kindle.result_type), whatever the operands' strides."""
    sa, sb = shapes.input_shapes
    a, ka = data.draw(strided(sa, da))
    b, kb = data.draw(strided(sb, db))
    rt = dtype_name(kindle.result_type(ka, kb))
    for k_fn, np_fn in ((kindle.mul, np.multiply),) + (((kindle.add, np.add),) if rt != "bool" else ()):
        r = k_fn(ka, kb)
        assert dtype_name(r.dtype) == rt
        expected = np_fn(a.astype(np.float64), b.astype(np.float64))
        if rt == "bool":
            expected = expected.astype(bool)
        elif not rt.startswith("float"):
            expected = expected.astype(NP[rt])
        _check(r, expected)


@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
       op=st.sampled_from(["exp", "tanh", "abs", "neg", "sqrt", "sin", "floor", "sigmoid"]))
def test_unary_strided(data, shape, op):
    a, ka = data.draw(strided(shape, "float32", low=0.1 if op == "sqrt" else -3, high=3))
    np_fn = {"sigmoid": lambda x: 1 / (1 + np.exp(-x)), "neg": np.negative}.get(op, getattr(np, op, None))
    with np.errstate(all="ignore"):
        expected = np_fn(a.astype(np.float64)).astype(np.float32)
    _check(getattr(kindle, op)(ka), expected)


REDUCTIONS = {
    "sum": (np.sum, lambda x, d, k: x.sum(d, keepdim=k)),
    "mean": (np.mean, lambda x, d, k: x.mean(d, keepdim=k)),
    "amax": (np.amax, lambda x, d, k: x.amax(d, keepdim=k)),
    "amin": (np.amin, lambda x, d, k: x.amin(d, keepdim=k)),
    "var": (lambda a, axis, keepdims: np.var(a, axis=axis, keepdims=keepdims, ddof=1),
            lambda x, d, k: x.var(d, keepdim=k)),
    "std0": (lambda a, axis, keepdims: np.std(a, axis=axis, keepdims=keepdims),
             lambda x, d, k: x.std(d, correction=0, keepdim=k)),
    "all": (np.all, lambda x, d, k: x.all(d, keepdim=k)),
    "any": (np.any, lambda x, d, k: x.any(d, keepdim=k)),
    "nansum": (np.nansum, lambda x, d, k: x.nansum(d, keepdim=k)),
    "logsumexp": (lambda a, axis, keepdims: np.log(np.sum(np.exp(a), axis=axis, keepdims=keepdims)),
                  lambda x, d, k: x.logsumexp(d, keepdim=k)),
}
ONE_DIM = {
    "prod": (np.prod, lambda x, d, k: x.prod(d, keepdim=k)),
    "argmax": (np.argmax, lambda x, d, k: x.argmax(d, keepdim=k)),
    "argmin": (np.argmin, lambda x, d, k: x.argmin(d, keepdim=k)),
    "cumsum": (np.cumsum, lambda x, d, k: x.cumsum(d)),
    "softmax": (lambda a, axis: np.exp(a - a.max(axis, keepdims=True)) / np.exp(a - a.max(axis, keepdims=True)).sum(axis, keepdims=True),
                lambda x, d, k: x.softmax(d)),
}


def _red_tol(r):
    return RED_TOL.get(dtype_name(r.dtype), (0.0, 0.0))


@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5),
       op=st.sampled_from(sorted(REDUCTIONS)), keepdim=st.booleans(), dtype=st.sampled_from(["float32", "float64"]))
def test_reduction_random_dims(data, shape, op, keepdim, dtype):
    a, ka = data.draw(strided(shape, dtype))
    n = len(shape)
    dims = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    dims = tuple(d - n if data.draw(st.booleans()) else d for d in dims)  # negative dims too
    np_fn, k_fn = REDUCTIONS[op]
    if op in ("var",) and all(shape[d] == 1 for d in dims):
        return  # zero degrees of freedom: nan/inf and a warning, covered by the op database
    expected = np_fn(a.astype(np.float64), axis=dims, keepdims=keepdim)
    r = k_fn(ka, dims, keepdim)
    assert tuple(r.shape) == np.shape(expected)
    rtol, atol = _red_tol(r)
    m = values_mismatch(to_numpy(r), np.asarray(expected), rtol, atol)
    assert m is None, m


@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5),
       op=st.sampled_from(sorted(ONE_DIM)), keepdim=st.booleans())
def test_single_dim_reductions(data, shape, op, keepdim):
    a, ka = data.draw(strided(shape, "float64", low=-2, high=2))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    np_fn, k_fn = ONE_DIM[op]
    if op in ("argmax", "argmin", "prod"):
        expected = np_fn(a, axis=dim)
        if keepdim:
            expected = np.expand_dims(expected, dim)
    else:
        expected = np_fn(a, axis=dim)
    r = k_fn(ka, dim, keepdim)
    assert tuple(r.shape) == np.shape(expected)
    m = values_mismatch(to_numpy(r), np.asarray(expected), 1e-7, 1e-7)
    assert m is None, m


@given(data=st.data(), shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4),
       dtype=st.sampled_from(["float32", "int64", "bool", "uint8"]))
def test_full_reductions_including_empty(data, shape, dtype):
    a, ka = data.draw(strided(shape, dtype))
    s = ka.sum()
    assert s.dim() == 0
    np.testing.assert_allclose(to_numpy(s).astype(np.float64), np.sum(a.astype(np.float64)), rtol=1e-5, atol=1e-4)
    assert ka.any().item() == bool(np.any(a)) and ka.all().item() == bool(np.all(a))
    assert kindle.count_nonzero(ka).item() == np.count_nonzero(a)
    if a.size:
        assert to_numpy(ka.amax()).item() == np.max(a) and to_numpy(ka.amin()).item() == np.min(a)


@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
def test_contiguous_and_clone_of_random_views(data, shape):
    a, ka = data.draw(strided(shape, "float32"))
    for t in (ka.contiguous(), ka.clone(), ka.reshape(-1), ka + 0):
        np.testing.assert_array_equal(to_numpy(t).reshape(a.shape) if t.dim() == 1 else to_numpy(t), a)
    assert ka.contiguous().is_contiguous()
    np.testing.assert_array_equal(ka.numpy(), a)
