"""Sparse COO tensors, the basics (torch.sparse_coo_tensor, Tensor.to_sparse, torch.sparse.mm).

A SparseCOOTensor holds `indices` (sparse_dim x nnz, int64) and `values` (nnz, *dense dims) of a
tensor of `size`; every operation on it is written with dense ops on those two, so autograd runs
through the values (and the dense operands) as usual. It is its own class, not a kindle.Tensor:
dense ops given one raise TypeError instead of reading the values as if they were the tensor.
Supported: construction and validation, coalesce, to_dense, transpose of 2-d, negation, scaling,
addition, sparse @ dense (sparse.mm, spmm, addmm), sparse.sum, .grad of a sparse leaf."""
import kindle

__all__ = ["SparseCOOTensor", "sparse_coo_tensor", "mm", "addmm", "sum", "spmm"]


def _as_index_tensor(indices):
    t = indices if isinstance(indices, kindle.Tensor) else kindle.tensor(indices, dtype=kindle.int64)
    if t.dtype != kindle.int64:
        if t.dtype.is_floating_point or t.dtype.is_complex:
            raise RuntimeError(f"indices must be an int64 tensor (got {t.dtype})")
        t = t.to(kindle.int64)
    return t


class SparseCOOTensor:
    """A tensor in COO layout: values[k] sits at position indices[:, k]."""

    __slots__ = ("_idx", "_vals", "_size", "_coalesced", "__weakref__")
    is_sparse = True
    is_sparse_csr = False
    layout = kindle.sparse_coo
    device = kindle.device("cpu")

    def __init__(self, indices, values, size, coalesced=False):
        self._idx, self._vals, self._size, self._coalesced = indices, values, kindle.Size(size), coalesced

    # ---- what it is
    @property
    def shape(self):
        return self._size

    def size(self, dim=None):
        return self._size if dim is None else self._size[dim]

    def dim(self):
        return len(self._size)

    ndim = property(dim)

    @property
    def dtype(self):
        return self._vals.dtype

    @property
    def requires_grad(self):
        return self._vals.requires_grad

    def requires_grad_(self, requires_grad=True):
        self._vals.requires_grad_(requires_grad)
        return self

    @property
    def grad(self):
        """The gradient with respect to the tensor (one entry per position, as torch reports it):
        entries at a repeated index share their position's gradient."""
        g = self._vals.grad
        if g is None:
            return None
        if self._coalesced or self._nnz() == 0:
            return SparseCOOTensor(self._idx, g, self._size, self._coalesced)
        c = SparseCOOTensor(self._idx, g, self._size, False).coalesce()
        _, inverse = kindle.unique(self._linear(), sorted=True, return_inverse=True)
        per_position = kindle.zeros_like(c._vals).index_copy_(0, inverse, g)
        return SparseCOOTensor(c._idx, per_position, self._size, True)

    @property
    def grad_fn(self):
        return self._vals.grad_fn

    def sparse_dim(self):
        return self._idx.shape[0]

    def dense_dim(self):
        return self._vals.dim() - 1

    def _nnz(self):
        return self._idx.shape[1]

    def _indices(self):
        return self._idx

    def _values(self):
        return self._vals

    def indices(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._idx

    def values(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._vals

    def is_coalesced(self):
        return self._coalesced

    def numel(self):
        n = 1
        for s in self._size:
            n *= s
        return n

    def __len__(self):
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    def __repr__(self):
        return (f"tensor(indices={self._idx!r},\n       values={self._vals!r},\n       size={tuple(self._size)}, "
                f"nnz={self._nnz()}, layout=torch.sparse_coo)")

    # ---- conversions
    def _linear(self):
        """Each entry's row-major position among the sparse dimensions."""
        lin = kindle.zeros(self._nnz(), dtype=kindle.int64)
        for d in range(self.sparse_dim()):
            lin = lin * self._size[d] + self._idx[d]
        return lin

    def coalesce(self):
        """Indices sorted and unique; values at a repeated index are summed."""
        if self._coalesced:
            return self
        nnz, sd = self._nnz(), self.sparse_dim()
        dense_shape = tuple(self._vals.shape[1:])
        if nnz == 0:
            return SparseCOOTensor(self._idx, self._vals, self._size, True)
        lin = self._linear()
        uniq, inverse = kindle.unique(lin, sorted=True, return_inverse=True)
        vals = kindle.zeros((uniq.shape[0],) + dense_shape, dtype=self._vals.dtype).index_add(0, inverse, self._vals)
        idx = kindle.zeros((sd, uniq.shape[0]), dtype=kindle.int64)
        rest = uniq.clone()
        for d in reversed(range(sd)):
            idx[d] = rest % self._size[d]
            rest = rest // self._size[d]
        return SparseCOOTensor(idx, vals, self._size, True)

    def to_dense(self, dtype=None, *, masked_grad=None):
        sd = self.sparse_dim()
        sparse_numel = 1
        for s in self._size[:sd]:
            sparse_numel *= s
        dense_shape = tuple(self._size[sd:])
        flat = kindle.zeros((sparse_numel,) + dense_shape, dtype=self._vals.dtype)
        if self._nnz():
            flat = flat.index_add(0, self._linear(), self._vals)
        out = flat.reshape(tuple(self._size))
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, sparse_dim=None):
        return self

    def detach(self):
        return SparseCOOTensor(self._idx, self._vals.detach(), self._size, self._coalesced)

    def clone(self):
        return SparseCOOTensor(self._idx.clone(), self._vals.clone(), self._size, self._coalesced)

    def to(self, *args, **kwargs):
        vals = self._vals.to(*args, **kwargs)
        return SparseCOOTensor(self._idx, vals, self._size, self._coalesced)

    def double(self):
        return self.to(kindle.float64)

    def float(self):
        return self.to(kindle.float32)

    # ---- arithmetic
    def t(self):
        if self.sparse_dim() != 2 or self.dense_dim() != 0:
            raise RuntimeError(f"t() expects a 2-D sparse tensor with no dense dimensions, got sparse_dim "
                               f"{self.sparse_dim()} and dense_dim {self.dense_dim()}")
        return SparseCOOTensor(self._idx.flip(0), self._vals, (self._size[1], self._size[0]), False)

    def transpose(self, dim0, dim1):
        if sorted((dim0 % self.dim(), dim1 % self.dim())) != [0, 1] or self.dim() != 2:
            raise NotImplementedError("transpose of a sparse tensor: only the two dimensions of a 2-D one")
        return self.t()

    def __neg__(self):
        return SparseCOOTensor(self._idx, -self._vals, self._size, self._coalesced)

    def mul(self, other):
        if isinstance(other, (int, float)) or (isinstance(other, kindle.Tensor) and other.dim() == 0):
            return SparseCOOTensor(self._idx, self._vals * other, self._size, self._coalesced)
        raise NotImplementedError("sparse * tensor: only a scalar factor is supported")

    __mul__ = __rmul__ = mul

    def div(self, other):
        return self.mul(1.0 / other) if isinstance(other, (int, float)) else self.mul(1 / other)

    __truediv__ = div

    def add(self, other, alpha=1):
        if isinstance(other, SparseCOOTensor):
            if other.shape != self.shape:
                raise RuntimeError(f"add: expected sizes to match, got {tuple(self.shape)} and {tuple(other.shape)}")
            if other.sparse_dim() != self.sparse_dim():
                raise RuntimeError("add: the sparse tensors must have the same sparse_dim")
            vals = other._vals if alpha == 1 else other._vals * alpha
            return SparseCOOTensor(kindle.cat([self._idx, other._idx], 1), kindle.cat([self._vals, vals]),
                                   self._size, False)
        if isinstance(other, kindle.Tensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        raise TypeError(f"add: unsupported operand {type(other).__name__}")

    __add__ = add

    def __radd__(self, other):
        if isinstance(other, kindle.Tensor):  # dense + sparse is dense, as in torch
            return other + self.to_dense()
        return self.add(other)

    def __sub__(self, other):
        return self.add(other, alpha=-1)

    def __matmul__(self, other):
        return mm(self, other)

    def mm(self, other):
        return mm(self, other)

    def matmul(self, other):
        return mm(self, other)

    def sum(self, dim=None):
        return sum(self, dim)

    def backward(self, *args, **kwargs):
        raise RuntimeError("backward: reduce the sparse tensor to a dense scalar first (sparse.sum(x) or to_dense())")


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """torch.sparse_coo_tensor: indices (sparse_dim x nnz), values (nnz, *dense_dims), and the size
    (inferred from the largest index when not given)."""
    if device is not None and str(device) != "cpu":
        raise RuntimeError(f"sparse_coo_tensor: device {device} is not available; Kindle has the CPU only")
    idx = _as_index_tensor(indices)
    vals = values if isinstance(values, kindle.Tensor) else kindle.tensor(values)
    if dtype is not None:
        vals = vals.to(dtype)
    if idx.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    nnz = idx.shape[1]
    if vals.dim() == 0 or vals.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           f"values: {vals.shape[0] if vals.dim() else 'a 0-d tensor'}")
    sd = idx.shape[0]
    if size is None:
        if nnz == 0:
            raise RuntimeError("sparse_coo_tensor: the size cannot be inferred from zero entries; pass size=")
        size = tuple(int(m) + 1 for m in idx.max(1).values.tolist()) + tuple(vals.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sd + vals.dim() - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sd}) + dense_dim ({vals.dim() - 1}), but got "
                           f"{len(size)}")
    if tuple(vals.shape[1:]) != size[sd:]:
        raise RuntimeError(f"values has incorrect size, expected {list((nnz,) + size[sd:])}, got {list(vals.shape)}")
    if nnz:
        lo, hi = idx.min(1).values.tolist(), idx.max(1).values.tolist()
        for d in range(sd):
            if lo[d] < 0:
                raise RuntimeError(f"found negative index {lo[d]} for dim {d}")
            if hi[d] >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                                   f"index {hi[d]}")
    if requires_grad:
        vals = vals.detach().requires_grad_()
    return SparseCOOTensor(idx, vals, size, bool(is_coalesced) and nnz <= 1 or (is_coalesced is True))


def _to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """Tensor.to_sparse: the nonzero entries (over the first sparse_dim dimensions) in COO form."""
    if layout is not None and layout != kindle.sparse_coo:
        raise NotImplementedError(f"to_sparse: layout {layout} is not in Kindle (sparse_coo only)")
    sd = self.dim() if sparse_dim is None else int(sparse_dim)
    if not 0 < sd <= self.dim():
        raise RuntimeError(f"to_sparse: sparse_dim {sd} must be in [1, {self.dim()}] for a {self.dim()}-D tensor")
    mask = self != 0
    if sd < self.dim():
        mask = mask.reshape(tuple(self.shape[:sd]) + (-1,)).any(-1)
    idx = mask.nonzero().t().contiguous()
    vals = self[tuple(idx[d] for d in range(sd))] if idx.shape[1] else self.reshape((-1,) + tuple(self.shape[sd:]))[:0]
    return SparseCOOTensor(idx, vals, tuple(self.shape), True)


def mm(mat1, mat2, reduce=None):
    """sparse (m x k) @ dense (k x n) -> dense, differentiable in both (torch.sparse.mm)."""
    if reduce is not None:
        raise NotImplementedError("sparse.mm: reduce= is not in Kindle yet")
    if isinstance(mat1, SparseCOOTensor) and isinstance(mat2, kindle.Tensor):
        if mat1.sparse_dim() != 2 or mat1.dense_dim() != 0:
            raise RuntimeError("sparse.mm: the sparse operand must be 2-D with no dense dimensions")
        if mat2.dim() != 2 or mat2.shape[0] != mat1.shape[1]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} and "
                               f"{'x'.join(str(s) for s in mat2.shape)})")
        rows, cols = mat1._idx[0], mat1._idx[1]
        out = kindle.zeros(mat1.shape[0], mat2.shape[1], dtype=kindle.promote_types(mat1.dtype, mat2.dtype))
        if mat1._nnz():
            out = out.index_add(0, rows, mat1._vals.unsqueeze(1) * mat2[cols])
        return out
    if isinstance(mat1, kindle.Tensor) and isinstance(mat2, SparseCOOTensor):
        return mm(mat2.t(), mat1.t()).t()
    if isinstance(mat1, SparseCOOTensor) and isinstance(mat2, SparseCOOTensor):
        return mm(mat1, mat2.to_dense()).to_sparse()
    return kindle.mm(mat1, mat2)


spmm = mm


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    return mat * beta + mm(mat1, mat2) * alpha


def sum(input, dim=None, dtype=None):  # noqa: A001,A002  (torch.sparse.sum)
    if not isinstance(input, SparseCOOTensor):
        return input.sum() if dim is None else input.sum(dim)
    vals = input._vals if dtype is None else input._vals.to(dtype)
    if dim is None:
        return vals.sum()
    return input.to_dense().sum(dim)
