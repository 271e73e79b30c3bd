"""kindle.linalg (torch.linalg): factorisations are C++ ops over LAPACK (csrc/ops/linalg_decomp.cpp)
with their derivatives; the rest composes them. Batch dims broadcast as in torch."""
import builtins
import math

from . import _C, _torch_api, return_types
from ._torch_api import write_out as _write

LinAlgError = _C.LinAlgError

__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
    "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu",
    "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank",
    "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals",
    "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm",
]


def _named(name, fields):
    return return_types._get(name, fields)


_inv_ex_t = _named("linalg_inv_ex", ["inverse", "info"])
_solve_ex_t = _named("linalg_solve_ex", ["result", "info"])
_lu_factor_t = _named("linalg_lu_factor", ["LU", "pivots"])
_lu_t = _named("linalg_lu", ["P", "L", "U"])
_lstsq_t = _named("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
_eigh_t = _named("linalg_eigh", ["eigenvalues", "eigenvectors"])
_eig_t = _named("linalg_eig", ["eigenvalues", "eigenvectors"])
_svd_t = _named("linalg_svd", ["U", "S", "Vh"])
_qr_t = _named("linalg_qr", ["Q", "R"])
_slogdet_t = _named("linalg_slogdet", ["sign", "logabsdet"])
_cholesky_ex_t = _named("linalg_cholesky_ex", ["L", "info"])


def _float_input(A, op, complex_ok=False):
    if not isinstance(A, _C.Tensor):
        raise TypeError(f"{op}(): argument 'A' (position 1) must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if A.is_complex():
        if complex_ok:
            return A
        raise NotImplementedError(f"{op}: complex input ({A.dtype}) is not implemented in Kindle yet")
    if A.dtype not in (_C.float32, _C.float64):
        if A.is_floating_point():
            raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {A.dtype}")
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {A.dtype}")
    return A


def _square(A, op, complex_ok=False):
    _float_input(A, op, complex_ok)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    return A


def _broadcast_batch(A, B):
    batch = _torch_api.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]))
    return A.expand(tuple(batch) + tuple(A.shape[-2:])), B.expand(tuple(batch) + tuple(B.shape[-2:]))


def _check_info(info, op, message):
    if info.numel() and bool((info != 0).any()):
        bad = info.reshape(-1).nonzero().reshape(-1)
        b = int(bad[0])
        code = int(info.reshape(-1)[b])
        prefix = f"(Batch element {b}): " if info.dim() > 0 else ""
        raise LinAlgError(f"{op}: {prefix}{message.format(code=code)}")


# ---- factorisations

def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    _square(A, "linalg.cholesky", complex_ok=True)
    r = _C.linalg_cholesky_ex(A, upper=upper, check_errors=check_errors)
    return _write(out, _cholesky_ex_t(*r))


def cholesky(A, *, upper=False, out=None):
    L, _ = _C.linalg_cholesky_ex(_square(A, "linalg.cholesky", complex_ok=True), upper=upper, check_errors=True)
    return _write(out, L)


def eigh(A, UPLO="L", *, out=None):
    return _write(out, _eigh_t(*_C.linalg_eigh(_square(A, "linalg.eigh", complex_ok=True), UPLO)))


def eigvalsh(A, UPLO="L", *, out=None):
    _square(A, "linalg.eigvalsh", complex_ok=True)
    if A.requires_grad and _C.is_grad_enabled():
        return _write(out, _C.linalg_eigh(A, UPLO)[0])  # the gradient needs the eigenvectors
    return _write(out, _C._linalg_eigvalsh(A, UPLO))


def eig(A, *, out=None):
    """Eigenvalues and right eigenvectors of a general square matrix, complex, as LAPACK's geev
    gives them (each eigenvector of unit norm with its largest component real)."""
    return _write(out, _eig_t(*_C.linalg_eig(_square(A, "linalg.eig", complex_ok=True))))


def eigvals(A, *, out=None):
    _square(A, "linalg.eigvals", complex_ok=True)
    if A.requires_grad and _C.is_grad_enabled():
        return _write(out, _C.linalg_eig(A)[0])  # the gradient needs the eigenvectors
    return _write(out, _C._linalg_eigvals(A))


def svd(A, full_matrices=True, *, driver=None, out=None):
    _float_input(A, "linalg.svd", complex_ok=True)
    return _write(out, _svd_t(*_C.linalg_svd(A, full_matrices)))


def svdvals(A, *, driver=None, out=None):
    _float_input(A, "linalg.svdvals", complex_ok=True)
    if A.requires_grad and _C.is_grad_enabled():
        return _write(out, _C.linalg_svd(A, False)[1])  # the gradient needs the singular vectors
    return _write(out, _C._linalg_svdvals(A))


def qr(A, mode="reduced", *, out=None):
    _float_input(A, "linalg.qr", complex_ok=True)
    return _write(out, _qr_t(*_C.linalg_qr(A, mode)))


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    _float_input(A, "linalg.lu_factor", complex_ok=True)
    return _write(out, _C.linalg_lu_factor_ex(A, pivot=pivot, check_errors=check_errors))


def lu_factor(A, *, pivot=True, out=None):
    _float_input(A, "linalg.lu_factor", complex_ok=True)
    LU, piv, info = _C.linalg_lu_factor_ex(A, pivot=pivot, check_errors=True)
    return _write(out, _lu_factor_t(LU, piv))


def _pivots_to_permutation(pivots, n):
    """The permutation matrix P of LAPACK's row interchanges (A = P L U)."""
    batch = tuple(pivots.shape[:-1])
    perm = _C.arange(n, device=pivots.device).expand(batch + (n,)).clone()
    piv = pivots.to(_C.int64) - 1
    for i in range(pivots.shape[-1]):
        j = piv[..., i:i + 1]
        a = perm[..., i:i + 1].clone()
        b = perm.gather(-1, j)
        perm[..., i:i + 1] = b
        perm.scatter_(-1, j, a)
    # row i of P^T is e_{perm[i]}
    return _one_hot(perm, n).transpose(-2, -1)


def _one_hot(idx, n):
    out = _C.zeros(tuple(idx.shape) + (n,), dtype=_C.float64, device=idx.device)
    out.scatter_(-1, idx.unsqueeze(-1), 1.0)
    return out


def lu(A, *, pivot=True, out=None):
    _float_input(A, "linalg.lu", complex_ok=True)
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    LU, piv, _ = _C.linalg_lu_factor_ex(A, pivot=pivot, check_errors=False)
    L = LU[..., :, :k].tril(-1) + _C.eye(m, k, dtype=A.dtype, device=A.device)
    U = LU[..., :k, :].triu()
    P = _pivots_to_permutation(piv, m).to(A.dtype)
    return _write(out, _lu_t(P, L, U))


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    n = LU.shape[-1]
    P = _pivots_to_permutation(pivots, n).to(LU.dtype)
    L = LU.tril(-1) + _C.eye(n, dtype=LU.dtype, device=LU.device)
    U = LU.triu()
    if left and not adjoint:  # A X = B, A = P L U
        X = solve_triangular(U, solve_triangular(L, P.transpose(-2, -1) @ B, upper=False, unitriangular=True),
                             upper=True)
    elif left:  # A^H X = B: U^H L^H P^T X = B
        Y = solve_triangular(L.mH, solve_triangular(U.mH, B, upper=False), upper=True, unitriangular=True)
        X = P @ Y
    elif not adjoint:  # X A = B: A^H X^H = B^H
        return _write(out, lu_solve(LU, pivots, B.mH, left=True, adjoint=True).mH)
    else:  # X A^H = B: A X^H = B^H
        return _write(out, lu_solve(LU, pivots, B.mH, left=True, adjoint=False).mH)
    return _write(out, X)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    _square(A, "linalg.solve_triangular", complex_ok=True)
    A2, B2 = _broadcast_batch(A, B)
    return _write(out, _C.linalg_solve_triangular(A2, B2, upper=upper, left=left, unitriangular=unitriangular))


def _vector_rhs(A, B):
    """torch.linalg.solve treats B as a (batch of) vector(s) when B.ndim == 1, or B has one dim
    less than A and matches A's batch shape."""
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve(A, B, *, left=True, out=None):
    _square(A, "linalg.solve", complex_ok=True)
    if not isinstance(B, _C.Tensor):
        raise TypeError(f"linalg.solve(): argument 'B' must be Tensor, not {type(B).__name__}")
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type {A.dtype} and "
                           f"B of type {B.dtype} instead.")
    if not left:
        return _write(out, solve(A.transpose(-2, -1), B.transpose(-2, -1)).transpose(-2, -1))
    vector = _vector_rhs(A, B)
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {Bm.shape[-2]}x{Bm.shape[-1]})")
    A2, B2 = _broadcast_batch(A, Bm)
    X = _C._linalg_solve(A2, B2)
    return _write(out, X.squeeze(-1) if vector else X)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    info = _C.linalg_lu_factor_ex(_square(A, "linalg.solve_ex", complex_ok=True))[2]
    if check_errors:
        _check_info(info, "linalg.solve_ex", "The solver failed because the input matrix is singular.")
    if not info.is_meta and bool((info != 0).any()):
        X = _C.full_like(B, float("nan")) if B.dim() else B
        return _write(out, _solve_ex_t(X, info))
    return _write(out, _solve_ex_t(solve(A, B, left=left), info))


def inv(A, *, out=None):
    _square(A, "linalg.inv", complex_ok=True)
    n = A.shape[-1]
    eye = _C.eye(n, dtype=A.dtype, device=A.device).expand(A.shape)
    return _write(out, _C._linalg_solve(A, eye))


def inv_ex(A, *, check_errors=False, out=None):
    info = _C.linalg_lu_factor_ex(_square(A, "linalg.inv_ex", complex_ok=True))[2]
    if check_errors:
        _check_info(info, "linalg.inv_ex", "The diagonal element {code} is zero, the inversion could not be completed "
                    "because the input matrix is singular.")
    if not info.is_meta and bool((info != 0).any()):
        return _write(out, _inv_ex_t(_C.full_like(A, float("nan")), info))
    return _write(out, _inv_ex_t(inv(A), info))


def det(A, *, out=None):
    _square(A, "linalg.det", complex_ok=True)
    return _write(out, _C.linalg_det(A))


def slogdet(A, *, out=None):
    _square(A, "linalg.slogdet", complex_ok=True)
    return _write(out, _slogdet_t(*_C.linalg_slogdet(A)))


# ---- norms

def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"linalg.vector_norm(): argument 'x' must be Tensor, not {type(x).__name__}")
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {x.dtype}")
    if dtype is not None:
        x = x.to(dtype)
    if x.is_complex():  # the norm of the magnitudes, in the real dtype
        x = x.abs()
    if isinstance(dim, int):
        dim = (dim,)
    if x.numel() == 0 and (ord < 0 or ord == math.inf) and dim is None:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the operation "
                           "does not have an identity")
    a = x.abs()
    reduce_all = dim is None
    dims = tuple(range(x.dim())) if reduce_all else tuple(dim)
    if ord == math.inf:
        r = a.amax(dim=dims, keepdim=keepdim) if x.dim() else a
    elif ord == -math.inf:
        r = a.amin(dim=dims, keepdim=keepdim) if x.dim() else a
    elif ord == 0:
        r = (a != 0).to(x.dtype).sum(dim=dims, keepdim=keepdim) if x.dim() else (a != 0).to(x.dtype)
    elif ord == 1:
        r = a.sum(dim=dims, keepdim=keepdim) if x.dim() else a
    elif ord == 2:
        r = _C.norm(x, 2, dim=list(dims) if not reduce_all else None, keepdim=keepdim) if x.dim() else a
        if reduce_all and keepdim and x.dim():
            r = r.reshape((1,) * x.dim())
    else:
        r = (a.pow(ord).sum(dim=dims, keepdim=keepdim) if x.dim() else a.pow(ord)).pow(1.0 / ord)
    return _write(out, r)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):  # noqa: A002
    if not isinstance(A, _C.Tensor):
        raise TypeError(f"linalg.matrix_norm(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if dtype is not None:
        A = A.to(dtype)
    if not (A.is_floating_point() or A.is_complex()):
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got {A.dtype}")
    d0, d1 = (d % A.dim() for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        r = vector_norm(A, 2, dim=(d0, d1), keepdim=keepdim)
    elif ord == "nuc" or ord in (2, -2):
        B = A.movedim((d0, d1), (-2, -1))
        s = svdvals(B)
        r = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
        if keepdim:
            r = r.unsqueeze(-1).unsqueeze(-1).movedim((-2, -1), (min(d0, d1), max(d0, d1)))
    elif ord in (1, -1, math.inf, -math.inf):
        sum_dim, red_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(sum_dim, keepdim=True)
        r = s.amax(red_dim, keepdim=True) if ord > 0 else s.amin(red_dim, keepdim=True)
        if not keepdim:
            r = r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    return _write(out, r)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """Vector norm over 1 dim (or all, when dim and ord are None), matrix norm over 2 dims."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None and A.dim() == 2):
        return matrix_norm(A, "fro" if ord is None else ord, dim=(-2, -1) if dim is None else dim, keepdim=keepdim,
                           dtype=dtype, out=out)
    if ord is not None and dim is None and A.dim() != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.dim()}D.")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord={ord!r} is a matrix norm: pass two dims")
    return vector_norm(A, 2 if ord is None else ord, dim=dim, keepdim=keepdim, dtype=dtype, out=out)


def cond(A, p=None, *, out=None):
    if p is None or p in (2, -2):
        s = svdvals(_float_input(A, "linalg.cond", complex_ok=True))
        r = s.amax(-1) / s.amin(-1) if p in (None, 2) else s.amin(-1) / s.amax(-1)
        return _write(out, r)
    return _write(out, matrix_norm(A, p) * matrix_norm(inv(A), p))


# ---- derived

def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    _float_input(A, "linalg.matrix_rank", complex_ok=True)
    s = eigvalsh(A).abs() if hermitian else svdvals(A)
    smax = s.amax(-1, keepdim=True) if s.shape[-1] else _C.zeros(tuple(s.shape[:-1]) + (1,), dtype=s.dtype, device=s.device)
    if tol is not None:
        threshold = _C.as_tensor(tol, dtype=s.dtype)
        threshold = threshold.unsqueeze(-1) if threshold.dim() else threshold
    else:
        if atol is None and rtol is None:
            rtol = max(A.shape[-2:]) * _torch_api.finfo(A.dtype).eps
        elif rtol is None:
            rtol = 0.0
        at = _C.as_tensor(0.0 if atol is None else atol, dtype=s.dtype)
        rt = _C.as_tensor(rtol, dtype=s.dtype)
        at = at.unsqueeze(-1) if at.dim() else at
        rt = rt.unsqueeze(-1) if rt.dim() else rt
        threshold = _C.maximum(at, rt * smax)
    return _write(out, (s > threshold).sum(-1))


def pinv(A, *, atol=None, rtol=None, hermitian=False, rcond=None, out=None):
    _float_input(A, "linalg.pinv", complex_ok=True)
    if rcond is not None:
        rtol = rcond
    if hermitian:
        L, V = eigh(A)
        s, smax = L.abs(), L.abs().amax(-1, keepdim=True)
    else:
        U, s, Vh = svd(A, full_matrices=False)
        smax = s.amax(-1, keepdim=True) if s.shape[-1] else s.sum(-1, keepdim=True)
    if atol is None and rtol is None:
        rtol = max(A.shape[-2:]) * _torch_api.finfo(A.dtype).eps
    elif rtol is None:
        rtol = 0.0
    threshold = _C.maximum(_C.as_tensor(0.0 if atol is None else atol, dtype=s.dtype), rtol * smax)
    keep = s > threshold
    sinv = _C.where(keep, 1 / _C.where(keep, s, _C.ones_like(s)), _C.zeros_like(s))
    if hermitian:
        return _write(out, (V * (sinv * L.sign()).unsqueeze(-2).to(V.dtype)) @ V.mH)
    return _write(out, (Vh.mH * sinv.unsqueeze(-2).to(Vh.dtype)) @ U.mH)


def lstsq(A, B, rcond=None, *, driver=None, out=None):
    _float_input(A, "linalg.lstsq", complex_ok=True)
    if driver not in (None, "gelsy", "gelsd", "gelss", "gels"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), "
                           f"got {driver}")
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2], A.shape[-1]
    eps = _torch_api.finfo(A.dtype).eps
    rtol = rcond if rcond is not None and rcond > 0 else eps * max(m, n)
    U, s, Vh = svd(A, full_matrices=False)
    smax = s.amax(-1, keepdim=True) if s.shape[-1] else s.sum(-1, keepdim=True)
    keep = s > rtol * smax
    sinv = _C.where(keep, 1 / _C.where(keep, s, _C.ones_like(s)), _C.zeros_like(s))
    X = Vh.mH @ (sinv.unsqueeze(-1).to(A.dtype) * (U.mH @ Bm))
    rank = keep.sum(-1)
    real_dtype = s.dtype
    if driver in (None, "gelsy", "gels") and driver != "gels":
        sv = _C.empty(0, dtype=real_dtype, device=A.device)
    else:
        sv = s
    if driver == "gels":
        rank = _C.empty(0, dtype=_C.int64, device=A.device)
    if m > n and not rank.is_meta and bool((rank == n).all()):
        residuals = ((A @ X - Bm).abs() ** 2).sum(-2)
    else:
        residuals = _C.empty(0, dtype=real_dtype, device=A.device)
    X = X.squeeze(-1) if vector else X
    return _write(out, _lstsq_t(X, residuals, rank, sv))


def matrix_power(A, n, *, out=None):
    _square(A, "linalg.matrix_power") if A.is_floating_point() else None
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_power: A must be batches of square matrices")
    if n == 0:
        return _write(out, _C.eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape).clone())
    if n < 0:
        A, n = inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return _write(out, result)


def matrix_exp(A):
    """exp(A) by scaling and squaring with a degree-18 Taylor polynomial (differentiable: matmuls)."""
    _square(A, "linalg.matrix_exp", complex_ok=True)
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    norm1 = float(A.detach().abs().sum(-2).amax()) if A.numel() and not A.is_meta else 0.0
    s = builtins.max(0, math.ceil(math.log2(norm1)) + 1) if norm1 > 0.5 else 0
    X = A / (2 ** s)
    eye = _C.eye(n, dtype=A.dtype, device=A.device).expand(A.shape)
    result, term = eye, eye
    for k in range(1, 19):
        term = term @ X / k
        result = result + term
    for _ in range(s):
        result = result @ result
    return result


def cross(input, other, *, dim=-1, out=None):  # noqa: A002
    return _write(out, _C.cross(*_C.broadcast_tensors(input, other), dim=dim))


def vecdot(x, y, *, dim=-1, out=None):
    """sum(conj(x) * y) over dim."""
    return _write(out, ((x.conj() if x.is_complex() else x) * y).sum(dim))


def multi_dot(tensors, *, out=None):
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    ts = list(tensors)
    first_vec, last_vec = ts[0].dim() == 1, ts[-1].dim() == 1
    if first_vec:
        ts[0] = ts[0].unsqueeze(0)
    if last_vec:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i, t in enumerate(ts):
        if t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    r = ts[0]
    for t in ts[1:]:
        r = r @ t
    if first_vec:
        r = r.squeeze(0)
    if last_vec:
        r = r.squeeze(-1)
    return _write(out, r)


def matmul(input, other, *, out=None):  # noqa: A002
    return _write(out, _C.matmul(input, other))


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset=offset, dim1=dim1, dim2=dim2)


def vander(x, *, N=None):
    n = x.shape[-1] if N is None else N
    return x.unsqueeze(-1).pow(_C.arange(n, dtype=_C.int64, device=x.device))


def tensorinv(A, ind=2, *, out=None):
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape = tuple(A.shape[ind:]) + tuple(A.shape[:ind])
    rows = math.prod(A.shape[:ind])
    cols = math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           "prod(self.shape[:ind])")
    return _write(out, inv(A.reshape(rows, cols)).reshape(out_shape))


def tensorsolve(A, B, dims=None, *, out=None):
    if dims is not None:
        A = A.movedim(dims, tuple(range(A.dim() - len(dims), A.dim())))
    rows = B.numel()
    cols = math.prod(A.shape[B.dim():])
    x = solve(A.reshape(rows, cols), B.reshape(rows))
    return _write(out, x.reshape(tuple(A.shape[B.dim():])))


def householder_product(A, tau, *, out=None):
    """Q = H_1 ... H_k with H_i = I - tau_i v_i v_i^H, v_i the i-th column of A below the diagonal."""
    m, n = A.shape[-2], A.shape[-1]
    eye = _C.eye(m, dtype=A.dtype, device=A.device)
    Q = eye.expand(tuple(A.shape[:-2]) + (m, m)).clone()
    for i in range(tau.shape[-1]):
        v = A[..., :, i].clone()
        v[..., :i] = 0
        v[..., i] = 1
        H = eye - tau[..., i, None, None] * (v.unsqueeze(-1) * (v.conj() if v.is_complex() else v).unsqueeze(-2))
        Q = Q @ H
    return _write(out, Q[..., :, :n])


_ldl_ex_t = _named("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
_ldl_t = _named("linalg_ldl_factor", ["LD", "pivots"])


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """The Bunch-Kaufman LDL^T factorisation of symmetric matrices (LAPACK's sytrf, lower
    triangle): LD holds L and D compactly, pivots are LAPACK's (1-based; negative for 2x2 blocks)."""
    return _write(out, _ldl_ex_t(*_C.linalg_ldl_factor_ex(_square(A, "linalg.ldl_factor_ex"), hermitian=hermitian,
                                                         check_errors=check_errors)))


def ldl_factor(A, *, hermitian=False, out=None):
    LD, pivots, _ = _C.linalg_ldl_factor_ex(_square(A, "linalg.ldl_factor"), hermitian=hermitian, check_errors=True)
    return _write(out, _ldl_t(LD, pivots))


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """Solves A X = B from A's ldl_factor (batch dimensions broadcast)."""
    _square(LD, "linalg.ldl_solve")
    if not isinstance(B, _C.Tensor) or B.dim() < 2:
        raise RuntimeError("linalg.ldl_solve: Expected B to have at least 2 dimensions")
    LD2, B2 = _broadcast_batch(LD, B)
    piv = pivots.expand(tuple(LD2.shape[:-1]))
    return _write(out, _C.linalg_ldl_solve(LD2, piv, B2, hermitian=hermitian))


# ---- the older top-level names (torch.det, torch.svd, torch.qr, ...) and their Tensor methods

_svd_old_t = _named("svd", ["U", "S", "V"])
_qr_old_t = _named("qr", ["Q", "R"])
_slogdet_old_t = _named("slogdet", ["sign", "logabsdet"])
_triangular_solve_t = _named("triangular_solve", ["solution", "cloned_coefficient"])


def _svd_old(input, some=True, compute_uv=True, *, out=None):  # noqa: A002
    """torch.svd: V rather than V^H; with compute_uv=False, U and V are zero-filled."""
    U, S, Vh = svd(input, full_matrices=not some)
    V = Vh.mH
    if not compute_uv:
        U, V = _C.zeros_like(U), _C.zeros_like(V)
    return _write(out, _svd_old_t(U, S, V))


def _qr_old(input, some=True, *, out=None):  # noqa: A002
    return _write(out, _qr_old_t(*qr(input, "reduced" if some else "complete")))


def _logdet(input):  # noqa: A002
    """log(det(A)): NaN for a negative determinant; complex A gets the complex logarithm."""
    sign, logabs = slogdet(input)
    if input.is_complex():
        return logabs.to(input.dtype) + sign.log() - sign.abs().log().to(input.dtype)  # log|det| + i arg(det)
    return _C.where(sign < 0, _C.full_like(logabs, float("nan")), logabs)


def _cholesky_old(input, upper=False, *, out=None):  # noqa: A002
    return cholesky(input, upper=upper, out=out)


def _cholesky_solve(B, L, upper=False, *, out=None):
    """Solves A X = B given A's Cholesky factor."""
    U = L if upper else L.mH
    Y = solve_triangular(U.mH, B, upper=False)
    return _write(out, solve_triangular(U, Y, upper=True))


def _cholesky_inverse(L, upper=False, *, out=None):
    n = L.shape[-1]
    return _cholesky_solve(_C.eye(n, dtype=L.dtype, device=L.device).expand(L.shape), L, upper, out=out)


def _triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    A_ = A.transpose(-2, -1) if transpose else A  # (torch transposes without conjugating here)
    X = solve_triangular(A_, b, upper=upper != transpose, unitriangular=unitriangular)
    return _write(out, _triangular_solve_t(X, A.clone()))


def _pinverse(input, rcond=1e-15):  # noqa: A002
    return pinv(input, rtol=rcond)


def install(Tensor):
    """Installs the Tensor methods; returns the top-level names torch has for these functions."""
    names = {
        "det": det, "logdet": _logdet, "slogdet": lambda A, *, out=None: _write(out, _slogdet_old_t(*slogdet(A))),
        "inverse": inv, "cholesky": _cholesky_old, "cholesky_solve": _cholesky_solve,
        "cholesky_inverse": _cholesky_inverse, "svd": _svd_old, "qr": _qr_old, "triangular_solve": _triangular_solve,
        "matrix_power": matrix_power, "matrix_exp": matrix_exp, "pinverse": _pinverse, "lu_solve":
            lambda b, LU_data, LU_pivots, *, out=None: lu_solve(LU_data, LU_pivots, b, out=out),
    }
    for name, fn in names.items():
        setattr(Tensor, name, fn)
    return names
