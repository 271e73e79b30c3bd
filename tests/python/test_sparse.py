"""Sparse COO basics against torch: construction and its checks, coalesce, to_dense, to_sparse,
transpose, arithmetic, sparse @ dense with gradients for the values and the dense operand."""
import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")

I = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]
V = [3.0, 4.0, 5.0, 1.0, -2.0]


def both(size=(3, 3), **kw):
    return kindle.sparse_coo_tensor(I, V, size, **kw), torch.sparse_coo_tensor(I, V, size, **kw)


def close(a, b, tol=1e-6):
    a = a.detach().numpy() if hasattr(a, "numpy") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "numpy") else np.asarray(b)
    assert a.shape == b.shape and np.allclose(a, b, atol=tol), (a, b)


def test_construct_coalesce_to_dense():
    k, t = both()
    assert k.is_sparse and k.layout == kindle.sparse_coo and k._nnz() == t._nnz() == 5
    assert k.sparse_dim() == t.sparse_dim() and k.dense_dim() == t.dense_dim()
    close(k.to_dense(), t.to_dense())
    kc, tc = k.coalesce(), t.coalesce()
    assert kc.is_coalesced() and kc._nnz() == tc._nnz()
    close(kc.indices(), tc.indices())
    close(kc.values(), tc.values())
    with pytest.raises(RuntimeError, match="uncoalesced"):
        k.indices()
    inferred = kindle.sparse_coo_tensor(I, V)
    assert tuple(inferred.shape) == tuple(torch.sparse_coo_tensor(I, V).shape)


def test_hybrid_values():
    vals = np.arange(10, dtype=np.float32).reshape(5, 2)
    k = kindle.sparse_coo_tensor(I, kindle.from_numpy(vals.copy()), (3, 3, 2))
    t = torch.sparse_coo_tensor(I, torch.from_numpy(vals.copy()), (3, 3, 2))
    assert k.dense_dim() == 1
    close(k.to_dense(), t.to_dense())
    close(k.coalesce().values(), t.coalesce().values())


def test_to_sparse_and_back():
    x = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]], dtype=np.float32)
    k, t = kindle.from_numpy(x.copy()).to_sparse(), torch.from_numpy(x.copy()).to_sparse()
    close(k.indices(), t.indices())
    close(k.values(), t.values())
    close(k.to_dense(), x)
    k1, t1 = kindle.from_numpy(x.copy()).to_sparse(1), torch.from_numpy(x.copy()).to_sparse(1)
    close(k1.values(), t1.values())
    assert kindle.ones(2).to_dense().tolist() == [1.0, 1.0]


def test_arithmetic_and_transpose():
    k, t = both()
    close((k + k).to_dense(), (t + t).to_dense())
    close((k * 2.5).to_dense(), (t * 2.5).to_dense())
    close((-k).to_dense(), (-t).to_dense())
    close(k.t().to_dense(), t.t().to_dense())
    close((k - k.t()).to_dense(), (t - t.t()).to_dense())
    dense = kindle.ones(3, 3)
    close(dense + k, torch.ones(3, 3) + t)
    with pytest.raises(RuntimeError, match="add\\(dense, sparse\\)"):
        k + dense
    close(kindle.sparse.sum(k), torch.sparse.sum(t))


def test_mm_values_and_gradients():
    rng = np.random.default_rng(0)
    d = rng.standard_normal((3, 4)).astype(np.float32)
    k, t = both(requires_grad=True)
    kd, td = kindle.from_numpy(d.copy()).requires_grad_(), torch.from_numpy(d.copy()).requires_grad_()
    ko, to = kindle.sparse.mm(k, kd), torch.sparse.mm(t, td)
    close(ko, to, 1e-5)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    (ko * kindle.from_numpy(w.copy())).sum().backward()
    (to * torch.from_numpy(w.copy())).sum().backward()
    close(kd.grad, td.grad, 1e-5)
    close(k.grad.to_dense(), t.grad.to_dense(), 1e-5)
    close(k @ kd, to.detach(), 1e-5)
    close(kindle.spmm(k, kd), torch.spmm(t, td).detach(), 1e-5)
    close(kindle.sparse.mm(kindle.ones(2, 3), k), torch.ones(2, 3) @ t.to_dense().detach(), 1e-5)


def test_errors():
    with pytest.raises(RuntimeError, match="same nnz"):
        kindle.sparse_coo_tensor(I, [1.0, 2.0], (3, 3))
    with pytest.raises(RuntimeError, match="inconsistent"):
        kindle.sparse_coo_tensor(I, V, (2, 3))
    with pytest.raises(RuntimeError, match="negative"):
        kindle.sparse_coo_tensor([[0, -1]], [1.0, 2.0], (3,))
    k, _ = both()
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        kindle.sparse.mm(k, kindle.ones(4, 2))
    with pytest.raises(TypeError):
        kindle.relu(k)  # dense ops refuse a sparse tensor instead of misreading it
