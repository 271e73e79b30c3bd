"""kindle.linalg against torch.linalg: values (or, for decompositions whose signs are arbitrary,
reconstructions and sign-free invariants), gradients by gradcheck in float64 and against
torch, batching and broadcasting, empty matrices, and the errors (LinAlgError naming the batch
element for singular or indefinite input)."""
import math

import numpy as np
import pytest

import kindle
import kindle.linalg as KL

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().resolve_conj().numpy() if hasattr(t, "detach") else np.asarray(t)


def _close(k, t, rtol=1e-7, atol=1e-9, what=""):
    k, t = np.asarray(_np(k), dtype=np.float64), np.asarray(_np(t), dtype=np.float64)
    assert k.shape == t.shape, f"{what}: shape {k.shape} vs torch {t.shape}"
    np.testing.assert_allclose(k, t, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _pair(a, dtype="float64"):
    a = np.asarray(a, dtype=np.float64)
    return kindle.tensor(a, dtype=getattr(kindle, dtype)), torch.tensor(a, dtype=getattr(torch, dtype))


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _spd(shape, seed=0):
    a = _rand(shape, seed)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


SHAPES = [(3, 3), (2, 4, 4), (2, 1, 5, 5), (1, 1), (0, 0), (3, 0, 0)]
TOL = {"float64": (1e-9, 1e-9), "float32": (2e-4, 2e-4)}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_cholesky_inv_det_slogdet_solve(shape, dtype):
    rtol, atol = TOL[dtype]
    k, t = _pair(_spd(shape), dtype)
    _close(KL.cholesky(k), torch.linalg.cholesky(t), rtol, atol, "cholesky")
    _close(KL.cholesky(k, upper=True), torch.linalg.cholesky(t, upper=True), rtol, atol, "cholesky upper")
    g, tg = _pair(_rand(shape, 1) + 3 * np.eye(shape[-1]), dtype)
    _close(KL.inv(g), torch.linalg.inv(tg), rtol * 10, atol * 10, "inv")
    _close(KL.det(g), torch.linalg.det(tg), rtol * 10, atol, "det")
    ks, kl = KL.slogdet(g)
    ts, tl = torch.linalg.slogdet(tg)
    _close(ks, ts, what="slogdet sign")
    _close(kl, tl, rtol, atol, "slogdet logabsdet")
    b, tb = _pair(_rand(shape[:-1] + (2,), 2), dtype)
    _close(KL.solve(g, b), torch.linalg.solve(tg, tb), rtol * 10, atol * 10, "solve")
    v, tv = _pair(_rand(shape[:-1], 3), dtype)
    _close(KL.solve(g, v), torch.linalg.solve(tg, tv), rtol * 10, atol * 10, "solve vector")


def test_solve_broadcasts_batch_dims():
    a, ta = _pair(_rand((2, 1, 3, 3)) + 3 * np.eye(3))
    b, tb = _pair(_rand((4, 3, 2), 1))
    _close(KL.solve(a, b), torch.linalg.solve(ta, tb), 1e-9, 1e-9)
    _close(KL.solve(a[0, 0], b), torch.linalg.solve(ta[0, 0], tb), 1e-9, 1e-9)
    bt, tbt = _pair(_rand((2, 3), 2))
    _close(KL.solve(a[0, 0], bt, left=False), torch.linalg.solve(ta[0, 0], tbt, left=False), 1e-9, 1e-9)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (1, 1), (0, 0)], ids=str)
def test_eigh_and_eigvalsh(shape):
    k, t = _pair(_spd(shape) - 2 * shape[-1] * np.eye(shape[-1]))
    kw, kv = KL.eigh(k)
    tw, tv = torch.linalg.eigh(t)
    _close(kw, tw, 1e-9, 1e-9, "eigenvalues")
    _close(np.abs(_np(kv)), np.abs(_np(tv)), 1e-7, 1e-8, "|eigenvectors|")
    _close(kv @ kindle.diag_embed(kw) @ kv.transpose(-2, -1), k, 1e-9, 1e-9, "V diag(w) V^T")
    _close(KL.eigvalsh(k, UPLO="U"), torch.linalg.eigvalsh(t, UPLO="U"), 1e-9, 1e-9, "eigvalsh U")


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 4, 4), (2, 6, 2), (0, 3), (3, 0)], ids=str)
@pytest.mark.parametrize("full", [False, True])
def test_svd(shape, full):
    k, t = _pair(_rand(shape))
    U, S, Vh = KL.svd(k, full_matrices=full)
    tU, tS, tVh = torch.linalg.svd(t, full_matrices=full)
    assert U.shape == tuple(tU.shape) and Vh.shape == tuple(tVh.shape)
    _close(S, tS, 1e-9, 1e-9, "S")
    kk = min(shape[-2:])
    _close((U[..., :, :kk] * S.unsqueeze(-2)) @ Vh[..., :kk, :], k, 1e-9, 1e-9, "U S Vh")
    eye_u = kindle.eye(U.shape[-1], dtype=kindle.float64)
    _close(U.transpose(-2, -1) @ U, eye_u.expand(U.transpose(-2, -1).shape[:-1] + (U.shape[-1],)), 1e-9, 1e-9)
    _close(KL.svdvals(k), torch.linalg.svdvals(t), 1e-9, 1e-9, "svdvals")


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (0, 3), (4, 0)], ids=str)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(shape, mode):
    k, t = _pair(_rand(shape))
    Q, R = KL.qr(k, mode=mode)
    tQ, tR = torch.linalg.qr(t, mode=mode)
    assert tuple(Q.shape) == tuple(tQ.shape) and tuple(R.shape) == tuple(tR.shape)
    _close(R, tR, 1e-9, 1e-9, "R")  # LAPACK's Householder QR: the same signs in both
    if mode != "r":
        _close(Q, tQ, 1e-9, 1e-9, "Q")


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular(upper, left, unit):
    a = _rand((2, 4, 4)) + 4 * np.eye(4)
    a = np.triu(a) if upper else np.tril(a)
    k, t = _pair(a)
    b, tb = _pair(_rand((2, 4, 3) if left else (2, 3, 4), 1))
    _close(KL.solve_triangular(k, b, upper=upper, left=left, unitriangular=unit),
           torch.linalg.solve_triangular(t, tb, upper=upper, left=left, unitriangular=unit), 1e-9, 1e-9)


def test_lu_factor_lu_and_lu_solve():
    k, t = _pair(_rand((2, 4, 4)))
    LU, piv = KL.lu_factor(k)
    tLU, tpiv = torch.linalg.lu_factor(t)
    _close(LU, tLU, 1e-9, 1e-9, "LU")
    assert piv.tolist() == tpiv.tolist() and piv.dtype == kindle.int32
    P, L, U = KL.lu(k)
    tP, tL, tU = torch.linalg.lu(t)
    for a, b in ((P, tP), (L, tL), (U, tU)):
        _close(a, b, 1e-9, 1e-9, "lu")
    b, tb = _pair(_rand((2, 4, 2), 3))
    _close(KL.lu_solve(LU, piv, b), torch.linalg.lu_solve(tLU, tpiv, tb), 1e-9, 1e-9)
    _close(KL.lu_solve(LU, piv, b, adjoint=True), torch.linalg.lu_solve(tLU, tpiv, tb, adjoint=True), 1e-9, 1e-9)


# Kindle factors matrices up to 128 on a side with its own blocked LU (csrc/cpu/small_lu.cpp) and
# larger ones with LAPACK: both sides of the threshold, square and rectangular, tails of the
# register tile, batched, singular (info and the factoring past a zero pivot) and non-finite.
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (3, 7), (7, 3), (17, 33), (33, 17), (64, 64), (8, 64, 64),
                                   (3, 100, 100), (127, 129), (128, 128), (129, 129), (2, 200, 200)])
def test_lu_factor_matches_lapack_on_both_sides_of_the_small_kernel(shape, dtype):
    a = _rand(shape, seed=sum(shape))
    k, t = _pair(a, dtype)
    LU, piv, info = KL.lu_factor_ex(k)
    tLU, tpiv, tinfo = torch.linalg.lu_factor_ex(t)
    assert info.tolist() == tinfo.tolist()
    P, L, U = KL.lu(k)
    _close(P @ L @ U, a, 1e-5 * shape[-1] if dtype == "float32" else 1e-12, 1e-5 if dtype == "float32" else 1e-12,
           "P L U")
    # pivots may differ from torch's on near-ties between LU orderings: float32, and LAPACK's
    # blocked LU above 128 (its blocking follows MKL's thread count)
    if dtype == "float64" and max(shape[-2:]) <= 128:
        assert piv.tolist() == tpiv.tolist()
        _close(LU, tLU, 1e-10, 1e-10, "LU")
        for x, y, what in zip((P, L, U), torch.linalg.lu(t), "PLU"):
            _close(x, y, 1e-10, 1e-10, what)
    if shape[-1] == shape[-2]:  # against NumPy: torch's batched LU (MKL's getrf_batch_strided) can be wrong here
        tol = 1e-4 if dtype == "float32" else 1e-10
        _close(KL.det(k), np.linalg.det(a.astype(dtype)), tol * 10, tol, "det")


def test_batched_lu_after_a_batched_matmul_is_right():
    # MKL's getrf_batch_strided returned wrong factors after a batched GEMM on two threads
    a = _rand((2, 200, 200), seed=402)
    k = kindle.tensor(a)
    with_threads = kindle.get_num_threads()
    kindle.set_num_threads(2)
    try:
        k @ k
        got = KL.det(k)
    finally:
        kindle.set_num_threads(with_threads)
    _close(got, np.linalg.det(a), 1e-9, 0, "det")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lu_factor_of_singular_and_nonfinite_matrices_matches_torch(dtype):
    cases = [
        [[1.0, 2, 3], [2, 4, 6], [1, 1, 1]],  # rank 2: a zero pivot in the last step
        [[0.0, 0, 0], [0, 0, 0], [0, 0, 0]],  # every pivot zero: info is the first
        [[0.0, 1, 2], [0, 3, 4], [0, 5, 7]],  # a zero first column: info 1, factoring goes on
        [[1.0, math.inf, 3], [4, 5, 6], [7, 8, 10]],
        [[1.0, 2, 3], [4, math.nan, 6], [7, 8, 10]],
    ]
    k, t = _pair(np.array(cases), dtype)
    LU, piv, info = KL.lu_factor_ex(k)
    tLU, tpiv, tinfo = torch.linalg.lu_factor_ex(t)
    assert piv.tolist() == tpiv.tolist()
    assert info.tolist() == tinfo.tolist()
    _close(LU, tLU, 1e-6, 1e-6, "LU")
    # Singular only up to rounding: whether the last pivot comes out exactly 0 depends on the order
    # of the LAPACK's operations (torch's MKL gives 1.8e-7 in float32 on some CPUs and 0 on others,
    # OpenBLAS 0 in float64 where MKL does not): what is defined is the pivoting, a last pivot at
    # rounding level, and info naming it exactly when it is 0.
    k1, t1 = _pair([[1.0, 2, 3], [4, 5, 6], [7, 8, 9]], dtype)
    LU, piv, info = KL.lu_factor_ex(k1)
    tLU, tpiv, _ = torch.linalg.lu_factor_ex(t1)
    assert piv.tolist() == tpiv.tolist()
    _close(LU[:, :2], tLU[:, :2], 1e-6, 1e-6, "LU")
    last = LU[2, 2].item()
    assert abs(last) <= 8 * np.finfo(dtype).eps * 9
    assert info.item() == (3 if last == 0 else 0)
    with pytest.raises(kindle.linalg.LinAlgError, match=r"Batch element 0.*diagonal element 3 is zero"):
        KL.inv(k[:1])


NORM_CASES = [
    ("vector_norm", (5,), dict()), ("vector_norm", (3, 4), dict(ord=1)), ("vector_norm", (3, 4), dict(ord=math.inf)),
    ("vector_norm", (3, 4), dict(ord=-math.inf, dim=1)), ("vector_norm", (3, 4), dict(ord=0)),
    ("vector_norm", (3, 4), dict(ord=3.5, dim=(0, 1), keepdim=True)), ("vector_norm", (2, 3, 4), dict(dim=-1)),
    ("matrix_norm", (3, 4), dict()), ("matrix_norm", (2, 3, 4), dict(ord="nuc")), ("matrix_norm", (3, 4), dict(ord=2)),
    ("matrix_norm", (3, 4), dict(ord=-2)), ("matrix_norm", (3, 4), dict(ord=1)), ("matrix_norm", (3, 4), dict(ord=-1)),
    ("matrix_norm", (2, 3, 4), dict(ord=math.inf, keepdim=True)), ("matrix_norm", (3, 4, 2), dict(dim=(0, 2))),
    ("norm", (5,), dict()), ("norm", (3, 4), dict()), ("norm", (3, 4), dict(ord="fro")), ("norm", (3, 4), dict(ord=2)),
    ("norm", (2, 3, 4), dict(dim=1)), ("norm", (2, 3, 4), dict(ord=1, dim=(1, 2))), ("norm", (2, 3, 4), dict()),
    ("cond", (3, 3), dict()), ("cond", (2, 3, 3), dict(p="fro")), ("cond", (3, 3), dict(p=1)),
    ("matrix_rank", (4, 3), dict()), ("matrix_rank", (2, 3, 5), dict()), ("pinv", (4, 3), dict()),
    ("pinv", (2, 3, 5), dict()), ("matrix_exp", (3, 3), dict()), ("matrix_exp", (2, 4, 4), dict()),
    ("matrix_power", (3, 3), dict(n=3)), ("matrix_power", (3, 3), dict(n=0)), ("matrix_power", (2, 3, 3), dict(n=-2)),
]


@pytest.mark.parametrize("name,shape,kw", NORM_CASES, ids=lambda x: str(x))
def test_derived_functions_match_torch(name, shape, kw):
    a = _rand(shape) + (3 * np.eye(shape[-1]) if name in ("cond", "matrix_power") else 0)
    k, t = _pair(a)
    _close(getattr(KL, name)(k, **kw), getattr(torch.linalg, name)(t, **kw), 1e-8, 1e-9, name)


def test_lstsq_multi_dot_vecdot_cross_tensorinv_householder():
    a, ta = _pair(_rand((5, 3)))
    b, tb = _pair(_rand((5, 2), 1))
    _close(KL.lstsq(a, b).solution, torch.linalg.lstsq(ta, tb).solution, 1e-9, 1e-9, "lstsq")
    _close(KL.lstsq(a, b, driver="gelsd").residuals, torch.linalg.lstsq(ta, tb, driver="gelsd").residuals, 1e-9, 1e-9)
    xs = [_pair(_rand(s, i)) for i, s in enumerate([(3,), (3, 4), (4, 5), (5,)])]
    _close(KL.multi_dot([x[0] for x in xs]), torch.linalg.multi_dot([x[1] for x in xs]), 1e-9, 1e-9)
    _close(KL.vecdot(a, a), torch.linalg.vecdot(ta, ta), 1e-9, 1e-9)
    c, tc = _pair(_rand((4, 3), 4))
    _close(KL.cross(c, c.flip(0)), torch.linalg.cross(tc, tc.flip(0)), 1e-9, 1e-9)
    m, tm = _pair(_rand((4, 2, 8), 5))
    _close(KL.tensorinv(m, ind=2), torch.linalg.tensorinv(tm, ind=2), 1e-8, 1e-8)
    h, th = _pair(_rand((5, 3), 6))
    tau, ttau = _pair(_rand((3,), 7))
    _close(KL.householder_product(h, tau), torch.linalg.householder_product(th, ttau), 1e-9, 1e-9)


def test_top_level_names_and_methods():
    k, t = _pair(_spd((3, 3)))
    _close(kindle.det(k), torch.det(t), 1e-9)
    _close(k.logdet(), t.logdet(), 1e-9)
    _close(kindle.inverse(k), torch.inverse(t), 1e-9)
    _close(k.cholesky(), t.cholesky(), 1e-9)
    U, S, V = kindle.svd(k)
    tU, tS, tV = torch.svd(t)
    _close(S, tS, 1e-9)
    _close((U * S) @ V.T, k, 1e-9)
    Q, R = kindle.qr(k)
    _close(R, torch.qr(t)[1], 1e-9)
    b, tb = _pair(_rand((3, 2), 1))
    L = kindle.linalg.cholesky(k)
    _close(kindle.cholesky_solve(b, L), torch.cholesky_solve(tb, torch.linalg.cholesky(t)), 1e-9)
    _close(kindle.cholesky_inverse(L), torch.cholesky_inverse(torch.linalg.cholesky(t)), 1e-9)
    sol = kindle.triangular_solve(b, L, upper=False)
    _close(sol.solution, torch.triangular_solve(tb, torch.linalg.cholesky(t), upper=False).solution, 1e-9)
    _close(kindle.matrix_power(k, 2), torch.matrix_power(t, 2), 1e-9)
    _close(kindle.pinverse(k), torch.pinverse(t), 1e-8)


# ---- gradients

def _sym(f):
    return lambda a: f((a + a.transpose(-2, -1)) / 2)


GRAD_CASES = {
    "cholesky": (lambda a: KL.cholesky(a @ a.transpose(-2, -1) + 3 * kindle.eye(3, dtype=a.dtype)), (2, 3, 3)),
    "cholesky_upper": (lambda a: KL.cholesky(a @ a.transpose(-2, -1) + 3 * kindle.eye(3, dtype=a.dtype), upper=True),
                       (3, 3)),
    "inv": (lambda a: KL.inv(a + 3 * kindle.eye(3, dtype=a.dtype)), (2, 3, 3)),
    "det": (lambda a: KL.det(a), (2, 3, 3)),
    "slogdet": (lambda a: KL.slogdet(a + 3 * kindle.eye(3, dtype=a.dtype)).logabsdet, (3, 3)),
    "solve": (lambda a: KL.solve(a + 3 * kindle.eye(3, dtype=a.dtype), a[..., :2]), (2, 3, 3)),
    "eigvalsh": (_sym(lambda a: KL.eigvalsh(a)), (2, 3, 3)),
    "eigh_vectors": (_sym(lambda a: KL.eigh(a).eigenvectors.abs()), (3, 3)),
    "svdvals": (lambda a: KL.svdvals(a), (2, 4, 3)),
    "svd_u": (lambda a: KL.svd(a, full_matrices=False).U.abs(), (4, 3)),
    "svd_vh": (lambda a: KL.svd(a, full_matrices=False).Vh.abs(), (3, 4)),
    "qr": (lambda a: KL.qr(a).Q, (4, 3)),
    "qr_r": (lambda a: KL.qr(a).R, (2, 4, 3)),
    "qr_wide": (lambda a: KL.qr(a).R, (3, 5)),
    "solve_triangular": (lambda a: KL.solve_triangular(a.triu() + 3 * kindle.eye(3, dtype=a.dtype), a[..., :2],
                                                       upper=True), (3, 3)),
    "solve_triangular_right": (lambda a: KL.solve_triangular(a.tril() + 3 * kindle.eye(3, dtype=a.dtype), a,
                                                             upper=False, left=False, unitriangular=True), (3, 3)),
    "pinv": (lambda a: KL.pinv(a), (4, 3)),
    "matrix_exp": (lambda a: KL.matrix_exp(a), (3, 3)),
    "matrix_norm_nuc": (lambda a: KL.matrix_norm(a, "nuc"), (3, 4)),
    "matrix_norm_2": (lambda a: KL.matrix_norm(a, 2), (3, 4)),
    "vector_norm_3": (lambda a: KL.vector_norm(a, 3, dim=1), (3, 4)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck(name):
    f, shape = GRAD_CASES[name]
    a = kindle.tensor(_rand(shape, 11), dtype=kindle.float64, requires_grad=True)
    assert kindle.autograd.gradcheck(f, (a,), eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_grad_matches_torch(name):
    f, shape = GRAD_CASES[name]
    data = _rand(shape, 12)
    k = kindle.tensor(data, requires_grad=True)
    t = torch.tensor(data, requires_grad=True)
    tf = _torch_version(name)
    ko, to = f(k), tf(t)
    go = _rand(tuple(to.shape), 13)
    ko.backward(kindle.tensor(go))
    to.backward(torch.tensor(go))
    _close(k.grad, t.grad, 1e-6, 1e-8, name)


def _torch_version(name):
    src = {
        "cholesky": lambda a: torch.linalg.cholesky(a @ a.mT + 3 * torch.eye(3, dtype=a.dtype)),
        "cholesky_upper": lambda a: torch.linalg.cholesky(a @ a.mT + 3 * torch.eye(3, dtype=a.dtype), upper=True),
        "inv": lambda a: torch.linalg.inv(a + 3 * torch.eye(3, dtype=a.dtype)),
        "det": lambda a: torch.linalg.det(a),
        "slogdet": lambda a: torch.linalg.slogdet(a + 3 * torch.eye(3, dtype=a.dtype)).logabsdet,
        "solve": lambda a: torch.linalg.solve(a + 3 * torch.eye(3, dtype=a.dtype), a[..., :2]),
        "eigvalsh": lambda a: torch.linalg.eigvalsh((a + a.mT) / 2),
        "eigh_vectors": lambda a: torch.linalg.eigh((a + a.mT) / 2).eigenvectors.abs(),
        "svdvals": lambda a: torch.linalg.svdvals(a),
        "svd_u": lambda a: torch.linalg.svd(a, full_matrices=False).U.abs(),
        "svd_vh": lambda a: torch.linalg.svd(a, full_matrices=False).Vh.abs(),
        "qr": lambda a: torch.linalg.qr(a).Q,
        "qr_r": lambda a: torch.linalg.qr(a).R,
        "qr_wide": lambda a: torch.linalg.qr(a).R,
        "solve_triangular": lambda a: torch.linalg.solve_triangular(a.triu() + 3 * torch.eye(3, dtype=a.dtype),
                                                                    a[..., :2], upper=True),
        "solve_triangular_right": lambda a: torch.linalg.solve_triangular(
            a.tril() + 3 * torch.eye(3, dtype=a.dtype), a, upper=False, left=False, unitriangular=True),
        "pinv": lambda a: torch.linalg.pinv(a),
        "matrix_exp": lambda a: torch.linalg.matrix_exp(a),
        "matrix_norm_nuc": lambda a: torch.linalg.matrix_norm(a, "nuc"),
        "matrix_norm_2": lambda a: torch.linalg.matrix_norm(a, 2),
        "vector_norm_3": lambda a: torch.linalg.vector_norm(a, 3, dim=1),
    }
    return src[name]


def test_det_gradient_of_a_singular_matrix():
    """d det(A) / dA is the cofactor matrix, defined for singular A too: for [[a, b], [c, d]] it is
    [[d, -c], [-b, a]]. (torch 2.13 returns zeros for this input: kindle returns the derivative.)"""
    k = kindle.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=kindle.float64, requires_grad=True)
    KL.det(k).backward()
    _close(k.grad, [[4.0, -2.0], [-2.0, 1.0]], 1e-9, 1e-9)
    b = kindle.tensor([[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 5.0]]], dtype=kindle.float64, requires_grad=True)
    KL.det(b).sum().backward()
    a = b.detach()[0].numpy()
    cof = np.array([[np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) * (-1) ** (i + j) for j in range(3)]
                    for i in range(3)])
    _close(b.grad[0], cof, 1e-9, 1e-9)


# ---- errors

def test_errors_match_torch():
    sing, tsing = _pair([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]])
    with pytest.raises(KL.LinAlgError, match=r"Batch element 0.*singular"):
        KL.inv(sing)
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.inv(tsing)
    assert issubclass(KL.LinAlgError, RuntimeError)
    indef, _ = _pair([[1.0, 0.0], [0.0, -1.0]])
    with pytest.raises(KL.LinAlgError, match="not positive-definite.*order 2"):
        KL.cholesky(indef)
    L, info = KL.cholesky_ex(indef)
    assert int(info) == 2
    with pytest.raises(RuntimeError, match="square"):
        KL.inv(kindle.zeros(2, 3))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        KL.det(kindle.zeros(3))
    for lib in (kindle, torch):
        with pytest.raises(RuntimeError):
            lib.linalg.inv(lib.ones(2, 2, dtype=lib.int64))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        KL.solve(kindle.eye(3), kindle.ones(4, 2))
    inv_ex = KL.inv_ex(sing)
    assert inv_ex.info.tolist() == [2, 0]
    with pytest.raises(NotImplementedError, match="complex"):  # (torch has a complex LDL; Kindle not yet)
        KL.ldl_factor(kindle.eye(2, dtype=kindle.complex64))
    with pytest.raises(KL.LinAlgError, match="not positive-definite"):
        KL.cholesky(kindle.tensor([[1, 2j], [-2j, 1]]))
    with pytest.raises(RuntimeError, match="infs or NaNs"):
        KL.eig(kindle.tensor([[1.0, float("nan")], [0.0, 1.0]]))


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (3, 4, 4), (2, 0, 0), (6, 6)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eig_matches_torch(shape, dtype):
    """Eigenvalues and eigenvectors of general real matrices (complex pairs included): the same
    LAPACK routine as torch, so the same vectors, normalisation included; A V = V diag(L)."""
    a = np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype)
    lk, vk = KL.eig(kindle.tensor(a))
    lt, vt = torch.linalg.eig(torch.tensor(a))
    tol = 1e-4 if dtype == "float32" else 1e-10
    assert lk.dtype == (kindle.complex64 if dtype == "float32" else kindle.complex128) and vk.dtype == lk.dtype
    np.testing.assert_allclose(lk.numpy(), lt.numpy(), atol=tol)
    # the same vectors up to each one's sign or phase (float32 rounding can flip which of two
    # near-equal components LAPACK makes real): equal moduli, and each pair of columns parallel
    np.testing.assert_allclose(np.abs(vk.numpy()), np.abs(vt.numpy()), atol=tol)
    overlap = np.abs(np.einsum("...ij,...ij->...j", vk.numpy().conj(), vt.numpy()))
    np.testing.assert_allclose(overlap, np.ones_like(overlap), atol=10 * tol)
    np.testing.assert_allclose(a.astype(complex) @ vk.numpy(), vk.numpy() * lk.numpy()[..., None, :], atol=10 * tol)
    np.testing.assert_allclose(KL.eigvals(kindle.tensor(a)).numpy(), lt.numpy(), atol=tol)


def test_eig_gradients():
    """gradcheck through the complex outputs, and gradients equal to torch's for a loss that uses
    both eigenvalues and eigenvector magnitudes (invariant to each vector's phase)."""
    a = np.random.default_rng(7).standard_normal((4, 4))
    x = kindle.tensor(a, requires_grad=True)
    assert kindle.autograd.gradcheck(lambda t: KL.eigvals(t), (x,))
    assert kindle.autograd.gradcheck(lambda t: KL.eig(t).eigenvectors.abs(), (x,))
    grads = []
    for lib in (kindle, torch):
        t = lib.tensor(a, requires_grad=True)
        lam, v = lib.linalg.eig(t)
        ((lam * lam.conj()).real.sum() + (v.abs() ** 2 * lib.arange(4.0, dtype=lib.float64)).sum()).backward()
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], atol=1e-10)


def test_complex_solve_matches_numpy():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
    b = rng.standard_normal((2, 3, 2)) + 1j * rng.standard_normal((2, 3, 2))
    for dt in (np.complex64, np.complex128):
        x = KL.solve(kindle.tensor(a.astype(dt)), kindle.tensor(b.astype(dt)))
        np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b), atol=1e-4 if dt == np.complex64 else 1e-12)


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 5), (1, 1), (3, 0, 0)])
def test_ldl_factor_and_solve_match_torch(shape):
    """sytrf's compact factors and pivots equal torch's (the same LAPACK routine, lower triangle);
    ldl_solve solves A X = B; the factorisation has no gradient, as in torch."""
    a = np.random.default_rng(len(shape) + shape[-1]).standard_normal(shape)
    a = a + np.swapaxes(a, -1, -2)
    b = np.random.default_rng(9).standard_normal(shape[:-1] + (2,))
    k = KL.ldl_factor(kindle.tensor(a))
    t = torch.linalg.ldl_factor(torch.tensor(a))
    np.testing.assert_allclose(k.LD.numpy(), t.LD.numpy(), atol=1e-12)
    assert k.pivots.dtype == kindle.int32 and k.pivots.tolist() == t.pivots.tolist()
    x = KL.ldl_solve(k.LD, k.pivots, kindle.tensor(b))
    np.testing.assert_allclose(x.numpy(), torch.linalg.ldl_solve(t.LD, t.pivots, torch.tensor(b)).numpy(), atol=1e-10)
    ex = KL.ldl_factor_ex(kindle.tensor(a))
    assert ex.info.shape == tuple(shape[:-2]) and not bool(ex.info.any())


def test_ldl_errors():
    LD, piv, info = KL.ldl_factor_ex(kindle.zeros(3, 3, dtype=kindle.float64))
    assert int(info) == 1
    with pytest.raises(RuntimeError, match="singular"):
        KL.ldl_factor(kindle.zeros(3, 3, dtype=kindle.float64))
    with pytest.raises(RuntimeError, match="pivots"):
        KL.ldl_solve(kindle.eye(2, dtype=kindle.float64), kindle.tensor([5, 1], dtype=kindle.int32),
                     kindle.ones(2, 1, dtype=kindle.float64))
    x = kindle.eye(3, dtype=kindle.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="not implemented"):
        KL.ldl_factor(x * 2).LD.sum().backward()


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1), (0, 0)])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_det_slogdet_inv_match_torch(shape, dtype):
    rng = np.random.default_rng(shape[-1])
    a = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    tol = 1e-4 if dtype == "complex64" else 1e-10
    np.testing.assert_allclose(KL.det(kindle.tensor(a)).numpy(), torch.linalg.det(torch.tensor(a)).numpy(), atol=tol)
    s, ld = KL.slogdet(kindle.tensor(a))
    st, ldt = torch.linalg.slogdet(torch.tensor(a))
    assert ld.dtype == (kindle.float32 if dtype == "complex64" else kindle.float64)
    np.testing.assert_allclose(s.numpy(), st.numpy(), atol=tol)
    np.testing.assert_allclose(ld.numpy(), ldt.numpy(), atol=tol)
    if shape[-1]:
        np.testing.assert_allclose(KL.inv(kindle.tensor(a)).numpy(), np.linalg.inv(a), atol=10 * tol)
    sign, logabs = KL.slogdet(kindle.zeros(2, 2, dtype=getattr(kindle, dtype)))
    assert sign.item() == 0 and logabs.item() == float("-inf")


# ---- complex matrices: every decomposition and what is built on it, values and gradients

def _cpair(shape, dtype, seed=0, hermitian_pd=False):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    if hermitian_pd:
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])
    a = a.astype(dtype)
    return kindle.tensor(a), torch.tensor(a)


CTOL = {"complex64": 2e-4, "complex128": 1e-10}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (1, 1), (0, 0), (2, 0, 0)], ids=str)
def test_complex_square_decompositions_match_torch(shape, dtype):
    tol = CTOL[dtype]
    h, th = _cpair(shape, dtype, 1, hermitian_pd=True)
    for upper in (False, True):
        _cclose(KL.cholesky(h, upper=upper), torch.linalg.cholesky(th, upper=upper), tol)
    w, V = KL.eigh(h)
    tw = torch.linalg.eigvalsh(th)
    assert w.dtype == (kindle.float32 if dtype == "complex64" else kindle.float64)
    _cclose(w, tw, tol * 10)
    _cclose(KL.eigvalsh(h, UPLO="U"), torch.linalg.eigvalsh(th, UPLO="U"), tol * 10)
    _cclose((V * w.unsqueeze(-2).to(V.dtype)) @ V.mH, h, tol * 10)  # A = V diag(w) V^H
    a, ta = _cpair(shape, dtype, 2)
    lk, vk = KL.eig(a)
    lt = torch.linalg.eigvals(ta)
    assert lk.shape == lt.shape
    if shape[-1]:
        _cclose(np.sort_complex(lk.numpy().reshape(-1, shape[-1])),
                np.sort_complex(lt.numpy().reshape(-1, shape[-1])), tol * 10)
    _cclose(a @ vk, vk * lk.unsqueeze(-2), tol * 10)
    _cclose(KL.eigvals(a), lk, tol)
    for upper in (False, True):
        for left in (False, True):
            for unit in (False, True):
                tri = (a.triu() if upper else a.tril()) + 3 * kindle.eye(shape[-1], dtype=a.dtype)
                ttri = (ta.triu() if upper else ta.tril()) + 3 * torch.eye(shape[-1], dtype=ta.dtype)
                b, tb = _cpair(shape, dtype, 3)
                _cclose(KL.solve_triangular(tri, b, upper=upper, left=left, unitriangular=unit),
                        torch.linalg.solve_triangular(ttri, tb, upper=upper, left=left, unitriangular=unit), tol * 10)
    _cclose(KL.matrix_exp(a * 0.3), torch.linalg.matrix_exp(ta * 0.3), tol * 10)
    if shape[-1]:
        _cclose(KL.pinv(h, hermitian=True), torch.linalg.pinv(th, hermitian=True), tol * 10)
        _cclose(a.logdet(), ta.logdet(), tol * 10)
        L = KL.cholesky(h)
        b, tb = _cpair(shape, dtype, 4)
        _cclose(kindle.cholesky_solve(b, L), torch.cholesky_solve(tb, torch.linalg.cholesky(th)), tol * 10)
        _cclose(kindle.cholesky_inverse(L), torch.cholesky_inverse(torch.linalg.cholesky(th)), tol * 10)
        LU, piv = KL.lu_factor(a)
        tLU, tpiv = torch.linalg.lu_factor(ta)
        for adjoint in (False, True):
            for left in (False, True):
                _cclose(KL.lu_solve(LU, piv, b, adjoint=adjoint, left=left),
                        torch.linalg.lu_solve(tLU, tpiv, tb, adjoint=adjoint, left=left), tol * 10)
        for p in (None, "fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
            _cclose(KL.cond(a, p), torch.linalg.cond(ta, p), tol * 100)


def _cclose(k, t, tol):
    k, t = _np(k), _np(t)
    assert k.shape == t.shape, (k.shape, t.shape)
    np.testing.assert_allclose(k, t, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (2, 3, 5), (2, 5, 3), (1, 1), (0, 3), (3, 0)], ids=str)
def test_complex_rectangular_decompositions_match_torch(shape, dtype):
    tol = CTOL[dtype]
    a, ta = _cpair(shape, dtype, 5)
    k = min(shape[-2:])
    for full in (True, False):
        U, S, Vh = KL.svd(a, full_matrices=full)
        tU, tS, tVh = torch.linalg.svd(ta, full_matrices=full)
        assert U.shape == tU.shape and Vh.shape == tVh.shape and S.dtype == kindle.float32 if dtype == "complex64" \
            else S.dtype == kindle.float64
        _cclose(S, tS, tol * 10)
        _cclose((U[..., :k] * S.unsqueeze(-2).to(U.dtype)) @ Vh[..., :k, :], a, tol * 10)
        _cclose(U.mH @ U, np.broadcast_to(np.eye(U.shape[-1]), tU.shape[:-2] + (U.shape[-1],) * 2), tol * 10)
    _cclose(KL.svdvals(a), torch.linalg.svdvals(ta), tol * 10)
    for mode in ("reduced", "complete", "r"):
        Q, R = KL.qr(a, mode=mode)
        tQ, tR = torch.linalg.qr(ta, mode=mode)
        _cclose(R, tR, tol * 10)  # LAPACK's Householder QR in both: the same signs
        if mode != "r":
            _cclose(Q, tQ, tol * 10)
    for ord_ in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        if k == 0 and ord_ in (-1, -2, -math.inf, 2, 1, math.inf, "nuc") and (ord_ in (-1, -2, -math.inf) or 0 in shape):
            continue  # empty reductions without an identity: both libraries raise
        _cclose(KL.matrix_norm(a, ord_), torch.linalg.matrix_norm(ta, ord_), tol * 10)
    _cclose(KL.pinv(a), torch.linalg.pinv(ta), tol * 100)
    _cclose(KL.matrix_rank(a), torch.linalg.matrix_rank(ta), 0)
    U, S, V = kindle.svd(a)
    tU, tS, tV = torch.svd(ta)
    _cclose(S, tS, tol * 10)
    _cclose((U * S.unsqueeze(-2).to(U.dtype)) @ V.mH, a, tol * 10)  # torch.svd returns V, not V^H
    if shape[-2] >= shape[-1] and k:
        b, tb = _cpair(shape[:-1] + (2,), dtype, 6)
        kl, tl = KL.lstsq(a, b, driver="gelsd"), torch.linalg.lstsq(ta, tb, driver="gelsd")
        _cclose(kl.solution, tl.solution, tol * 100)
        _cclose(kl.singular_values, tl.singular_values, tol * 10)
        assert kl.rank.tolist() == tl.rank.tolist()
        tau = ta[..., 0, :k] * 0.3
        _cclose(KL.householder_product(a, kindle.tensor(tau.numpy())), torch.linalg.householder_product(ta, tau),
                tol * 10)
    x, tx = _cpair(shape, dtype, 7)
    _cclose(KL.vecdot(a, x), torch.linalg.vecdot(ta, tx), tol * 10)


def _lib_cases():
    """Complex gradient cases, each written once for either library (lib is kindle or torch)."""
    def hpd(lib, a):
        return a @ a.mH + 4 * lib.eye(a.shape[-1], dtype=a.dtype)

    def tri(lib, a, upper):
        return (a.triu() if upper else a.tril()) + 3 * lib.eye(a.shape[-1], dtype=a.dtype)
    return {
        "cholesky": (lambda lib, a: lib.linalg.cholesky(hpd(lib, a)), (2, 3, 3)),
        "cholesky_upper": (lambda lib, a: lib.linalg.cholesky(hpd(lib, a), upper=True), (3, 3)),
        "eigvalsh": (lambda lib, a: lib.linalg.eigvalsh(hpd(lib, a)), (2, 3, 3)),
        "eigh_vectors": (lambda lib, a: lib.linalg.eigh(hpd(lib, a)).eigenvectors.abs(), (3, 3)),
        "eigh_projector": (lambda lib, a: (lambda w, V: V[..., :1] @ V[..., :1].mH * w[..., :1, None])(
            *lib.linalg.eigh(hpd(lib, a))), (3, 3)),
        "eig": (lambda lib, a: lib.linalg.eigvals(a), (3, 3)),
        "eig_vectors": (lambda lib, a: lib.linalg.eig(a).eigenvectors.abs(), (3, 3)),
        "svdvals": (lambda lib, a: lib.linalg.svdvals(a), (2, 4, 3)),
        "svd_u": (lambda lib, a: lib.linalg.svd(a, full_matrices=False).U.abs(), (4, 3)),
        "svd_vh": (lambda lib, a: lib.linalg.svd(a, full_matrices=False).Vh.abs(), (3, 4)),
        "svd_rank1": (lambda lib, a: (lambda U, S, Vh: U[..., :1] @ Vh[..., :1, :])(
            *lib.linalg.svd(a, full_matrices=False)), (2, 3, 4)),
        "qr": (lambda lib, a: lib.linalg.qr(a), (4, 3)),
        "qr_wide": (lambda lib, a: lib.linalg.qr(a), (2, 3, 5)),
        "det": (lambda lib, a: lib.linalg.det(a), (2, 3, 3)),
        "slogdet": (lambda lib, a: lib.linalg.slogdet(a + 3 * lib.eye(3, dtype=a.dtype)), (2, 3, 3)),
        "logdet": (lambda lib, a: (a + 3 * lib.eye(3, dtype=a.dtype)).logdet(), (3, 3)),
        "inv": (lambda lib, a: lib.linalg.inv(a + 3 * lib.eye(3, dtype=a.dtype)), (2, 3, 3)),
        "solve": (lambda lib, a: lib.linalg.solve(a + 3 * lib.eye(3, dtype=a.dtype), a[..., :2] * 2), (2, 3, 3)),
        "solve_triangular": (lambda lib, a: lib.linalg.solve_triangular(tri(lib, a, True), a[..., :2], upper=True),
                             (3, 3)),
        "solve_triangular_right": (lambda lib, a: lib.linalg.solve_triangular(tri(lib, a, False), a, upper=False,
                                                                              left=False, unitriangular=True), (3, 3)),
        "pinv": (lambda lib, a: lib.linalg.pinv(a), (4, 3)),
        "lstsq": (lambda lib, a: lib.linalg.lstsq(a, a[..., :2] + 1).solution, (4, 3)),
        "matrix_exp": (lambda lib, a: lib.linalg.matrix_exp(a * 0.5), (3, 3)),
        "matrix_norm_nuc": (lambda lib, a: lib.linalg.matrix_norm(a, "nuc"), (3, 4)),
        "matrix_norm_2": (lambda lib, a: lib.linalg.matrix_norm(a, 2), (3, 4)),
        "cond": (lambda lib, a: lib.linalg.cond(a), (3, 3)),
        "cholesky_inverse": (lambda lib, a: lib.cholesky_inverse(lib.linalg.cholesky(hpd(lib, a))), (3, 3)),
    }


COMPLEX_GRAD_CASES = _lib_cases()


def _loss(lib, outs, weights):
    outs = outs if isinstance(outs, tuple) else (outs,)
    total = 0
    for o, w in zip(outs, weights):
        w = lib.tensor(w)
        total = total + ((w.conj() * o).real.sum() if o.is_complex() else (w * o).sum())
    return total


@pytest.mark.parametrize("name", sorted(COMPLEX_GRAD_CASES))
def test_complex_gradcheck(name):
    f, shape = COMPLEX_GRAD_CASES[name]
    rng = np.random.default_rng(21)
    a = kindle.tensor(rng.standard_normal(shape) + 1j * rng.standard_normal(shape), requires_grad=True)
    assert kindle.autograd.gradcheck(lambda x: f(kindle, x), (a,), eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", sorted(COMPLEX_GRAD_CASES))
def test_complex_grad_matches_torch(name):
    f, shape = COMPLEX_GRAD_CASES[name]
    rng = np.random.default_rng(22)
    data = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    k, t = kindle.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    ko, to = f(kindle, k), f(torch, t)
    tos = to if isinstance(to, tuple) else (to,)
    weights = [rng.standard_normal(tuple(o.shape)) + (1j * rng.standard_normal(tuple(o.shape)) if o.is_complex()
                                                       else 0) for o in tos]
    _loss(kindle, ko, weights).backward()
    _loss(torch, to, weights).backward()
    np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-9, err_msg=name)
