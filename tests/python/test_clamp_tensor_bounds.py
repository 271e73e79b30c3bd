"""clamp_min / clamp_max with tensor bounds (torch's Tensor overloads) and copy_(non_blocking=)."""
import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
@pytest.mark.parametrize("case", ["same", "broadcast", "nan", "int_float"])
def test_tensor_bounds_match_torch(name, case):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4) if case != "broadcast" else (4,)).astype(np.float32)
    if case == "nan":
        x[0, 0], b[1, 1] = np.nan, np.nan
    if case == "int_float":
        x = (x * 10).astype(np.int64)
    kx, tx = kindle.tensor(x), torch.tensor(x)
    kb, tb = kindle.tensor(b), torch.tensor(b)
    got, want = getattr(kindle, name)(kx, kb), getattr(torch, name)(tx, tb)
    assert got.dtype == getattr(kindle, str(want.dtype).split(".")[-1])
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(getattr(kx, name)(kb).numpy(), want.numpy())
    if case in ("same", "broadcast"):
        kx2, tx2 = kx.clone(), tx.clone()
        assert getattr(kx2, name + "_")(kb) is kx2
        getattr(tx2, name + "_")(tb)
        np.testing.assert_array_equal(kx2.numpy(), tx2.numpy())
        kg, tg = kx.clone().requires_grad_(), tx.clone().requires_grad_()
        getattr(kindle, name)(kg, kb).sum().backward()
        getattr(torch, name)(tg, tb).sum().backward()
        np.testing.assert_array_equal(kg.grad.numpy(), tg.grad.numpy())


def test_copy_non_blocking():
    src = kindle.arange(6.0).reshape(2, 3)
    dst = kindle.empty(2, 3)
    assert dst.copy_(src, non_blocking=True) is dst and kindle.equal(dst, src)
    assert kindle.equal(kindle.zeros(3).copy_(kindle.ones(3), True), kindle.ones(3))
    g = kindle.zeros(3, requires_grad=True)
    out = kindle.zeros(3).copy_(g * 2, non_blocking=False)
    out.sum().backward()
    assert g.grad.tolist() == [2.0, 2.0, 2.0]
