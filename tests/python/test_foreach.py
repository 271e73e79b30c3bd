"""torch._foreach_* (lists of tensors in, tuples or the same list out) against torch."""
import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
SHAPES = [(3,), (2, 2), ()]


def _lists(positive=False):
    arrs = [RNG.standard_normal(s).astype(np.float32) for s in SHAPES]
    if positive:
        arrs = [np.abs(a) + 0.5 for a in arrs]
    return [kindle.tensor(a) for a in arrs], [torch.tensor(a) for a in arrs]


def _same(ks, ts, tol=1e-6):
    assert len(ks) == len(ts)
    for k, t in zip(ks, ts):
        np.testing.assert_allclose(np.asarray(k.tolist()), t.numpy(), rtol=tol, atol=tol)


UNARY = ["abs", "ceil", "cos", "erf", "exp", "expm1", "floor", "frac", "log", "log1p", "neg", "reciprocal",
         "round", "rsqrt", "sigmoid", "sign", "sin", "sqrt", "tanh", "trunc", "lgamma"]


@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    k, t = _lists(positive=True)
    _same(getattr(kindle, f"_foreach_{name}")(k), getattr(torch, f"_foreach_{name}")(t), 1e-5)
    assert getattr(kindle, f"_foreach_{name}_")(k) is k
    getattr(torch, f"_foreach_{name}_")(t)
    _same(k, t, 1e-5)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "clamp_max", "clamp_min", "maximum", "minimum", "pow"])
@pytest.mark.parametrize("other", ["list", "scalar", "scalars", "tensor"])
def test_binary(name, other):
    if other == "tensor" and name not in ("add", "sub", "mul", "div"):
        pytest.skip("torch takes one tensor only for the arithmetic ops")
    k, t = _lists(positive=True)
    if other == "list":
        ok, ot = _lists(positive=True)
    elif other == "scalar":
        ok = ot = 1.5
    elif other == "scalars":
        ok = ot = [0.5, 2.0, 3.0]
    else:
        ok, ot = kindle.tensor(2.5), torch.tensor(2.5)
    _same(getattr(kindle, f"_foreach_{name}")(k, ok), getattr(torch, f"_foreach_{name}")(t, ot), 1e-5)
    getattr(kindle, f"_foreach_{name}_")(k, ok)
    getattr(torch, f"_foreach_{name}_")(t, ot)
    _same(k, t, 1e-5)


def test_alpha_lerp_addc_norm_and_the_rest():
    k, t = _lists()
    k2, t2 = _lists()
    k3, t3 = _lists(positive=True)
    _same(kindle._foreach_add(k, k2, alpha=-0.5), torch._foreach_add(t, t2, alpha=-0.5))
    _same(kindle._foreach_lerp(k, k2, 0.25), torch._foreach_lerp(t, t2, 0.25))
    _same(kindle._foreach_lerp(k, k2, k3), torch._foreach_lerp(t, t2, t3))
    _same(kindle._foreach_addcmul(k, k2, k3, value=0.5), torch._foreach_addcmul(t, t2, t3, value=0.5))
    _same(kindle._foreach_addcdiv(k, k2, k3, [1.0, 2.0, 3.0]), torch._foreach_addcdiv(t, t2, t3, [1.0, 2.0, 3.0]))
    for ordv in (1, 2, float("inf")):
        _same(kindle._foreach_norm(k, ordv), torch._foreach_norm(t, ordv), 1e-5)
    _same(kindle._foreach_max(k), torch._foreach_max(t))
    _same(kindle._foreach_pow(2.0, k), torch._foreach_pow(2.0, t), 1e-5)
    _same(kindle._foreach_clone(k), torch._foreach_clone(t))
    kindle._foreach_lerp_(k, k2, 0.5)
    torch._foreach_lerp_(t, t2, 0.5)
    _same(k, t)
    kindle._foreach_copy_(k, k2)
    _same(k, t2)
    assert kindle._foreach_zero_(k) is k and all(float(x.abs().sum()) == 0 for x in k)


def test_errors():
    with pytest.raises(RuntimeError, match="at least one tensor"):
        kindle._foreach_add([], 1)
    with pytest.raises(RuntimeError, match="same number of tensors, got 1 and 2"):
        kindle._foreach_add([kindle.ones(1)], [kindle.ones(1)] * 2)
    with pytest.raises(RuntimeError, match="same number of elements as scalar list"):
        kindle._foreach_mul([kindle.ones(1)], [1.0, 2.0])
