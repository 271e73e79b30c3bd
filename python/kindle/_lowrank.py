"""Randomized low-rank SVD and PCA (torch.svd_lowrank, torch.pca_lowrank): Halko, Martinsson and
Tropp's range finder with `niter` subspace iterations, then an exact SVD of the small projected
matrix. Composed of ops with derivatives, so gradients flow through the factors."""
from . import _C

__all__ = ["svd_lowrank", "pca_lowrank", "get_approximate_basis"]


def _check(A, name):
    if not isinstance(A, _C.Tensor):
        raise TypeError(f"{name}(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{name}: expected a matrix or a batch of matrices, got a tensor of shape "
                           f"{list(A.shape)}")
    if not (A.is_floating_point() or A.is_complex()):
        raise RuntimeError(f"{name}: expected a floating point or complex tensor, got {A.dtype}")


def get_approximate_basis(A, q, niter=2, M=None):
    """An m x q matrix Q with orthonormal columns whose range approximates that of A - M."""
    if not isinstance(q, int) or q < 0:
        raise ValueError(f"get_approximate_basis: q must be a non-negative integer, got {q}")
    if not isinstance(niter, int) or niter < 0:
        raise ValueError(f"get_approximate_basis: niter must be a non-negative integer, got {niter}")
    real = A.real.dtype if A.is_complex() else A.dtype
    R = _C.randn(*A.shape[:-2], A.shape[-1], q, dtype=real)
    if A.is_complex():
        R = _C.complex(R, _C.randn(*R.shape, dtype=real)).to(A.dtype)

    def apply(X, mat, mat_m):
        Y = mat @ X
        return Y - mat_m @ X if mat_m is not None else Y
    AH = A.mH
    MH = M.mH if M is not None else None
    Q = _qr(apply(R, A, M))
    for _ in range(niter):
        Q = _qr(apply(Q, AH, MH))
        Q = _qr(apply(Q, A, M))
    return Q


def _qr(X):
    from . import linalg
    return linalg.qr(X).Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """U, S, V with A - M ~= U diag(S) V^H, of rank q (default 6)."""
    _check(A, "svd_lowrank")
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:  # the range finder wants a tall matrix: factor the transpose and swap the factors
        V, S, U = svd_lowrank(A.mH, q, niter, None if M is None else M.mH)
        return U, S, V
    from . import linalg
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = Q.mH @ A
    if M is not None:
        B = B - Q.mH @ M
    U, S, Vh = linalg.svd(B, full_matrices=False)
    return Q @ U, S, Vh.mH


def pca_lowrank(A, q=None, center=True, niter=2):
    """U, S, V of the principal components of A's rows (centred unless center=False)."""
    _check(A, "pca_lowrank")
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (isinstance(q, int) and 0 <= q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (isinstance(niter, int) and niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter)
    return svd_lowrank(A - A.mean(dim=-2, keepdim=True), q, niter=niter)
