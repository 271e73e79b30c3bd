"""kindle.special: float64 accuracy against SciPy over wide ranges (the op database compares
with torch, whose float32 kernels are the looser reference), the torch.special names that are
compositions or aliases, and their errors."""
import math

import numpy as np
import pytest

import kindle

scipy_special = pytest.importorskip("scipy.special")
torch = pytest.importorskip("torch")

X = np.concatenate([np.linspace(-30, 30, 601), np.geomspace(1e-8, 1e3, 200), -np.geomspace(1e-8, 1e3, 200)])
POS = np.concatenate([np.geomspace(1e-8, 1e3, 300), np.linspace(0.1, 40, 200)])
UNIT = np.concatenate([np.geomspace(1e-300, 0.4, 200), np.linspace(0.01, 0.99, 99), 1 - np.geomspace(1e-15, 0.4, 100)])

S = scipy_special
CASES = [
    ("lgamma", lambda k: kindle.lgamma(k), S.gammaln, X[(X != np.round(X)) | (X > 0)]),
    ("digamma", lambda k: kindle.digamma(k), S.digamma, X[(X != np.round(X)) | (X > 0)]),
    ("polygamma1", lambda k: kindle.polygamma(1, k), lambda x: S.polygamma(1, x), X[(X != np.round(X)) | (X > 0)]),
    ("polygamma4", lambda k: kindle.polygamma(4, k), lambda x: S.polygamma(4, x), POS),
    ("erfc", lambda k: kindle.erfc(k), S.erfc, X[X < 26]),
    ("erfcx", kindle.special.erfcx, S.erfcx, X),
    ("ndtr", kindle.special.ndtr, S.ndtr, X),
    ("ndtri", kindle.special.ndtri, S.ndtri, UNIT),
    ("log_ndtr", kindle.special.log_ndtr, S.log_ndtr, X),
    ("i0", kindle.i0, S.i0, X), ("i0e", kindle.special.i0e, S.i0e, X), ("i1", kindle.special.i1, S.i1, X),
    ("i1e", kindle.special.i1e, S.i1e, X),
    ("bessel_j0", kindle.special.bessel_j0, S.j0, X), ("bessel_j1", kindle.special.bessel_j1, S.j1, X),
    ("bessel_y0", kindle.special.bessel_y0, S.y0, POS), ("bessel_y1", kindle.special.bessel_y1, S.y1, POS),
    ("modified_bessel_k0", kindle.special.modified_bessel_k0, S.k0, POS),
    ("modified_bessel_k1", kindle.special.modified_bessel_k1, S.k1, POS),
    ("scaled_modified_bessel_k0", kindle.special.scaled_modified_bessel_k0, S.k0e, POS),
    ("scaled_modified_bessel_k1", kindle.special.scaled_modified_bessel_k1, S.k1e, POS),
    ("spherical_bessel_j0", kindle.special.spherical_bessel_j0, lambda x: S.spherical_jn(0, x), X),
    ("airy_ai", kindle.special.airy_ai, lambda x: S.airy(x)[0], X[np.abs(X) < 30]),
    ("entr", kindle.special.entr, S.entr, X),
    ("expit", kindle.special.expit, S.expit, X),
    ("logit", kindle.special.logit, S.logit, UNIT),
]


@pytest.mark.parametrize("name,fn,ref,x", CASES, ids=[c[0] for c in CASES])
def test_float64_accuracy_against_scipy(name, fn, ref, x):
    got = fn(kindle.tensor(x, dtype=kindle.float64)).numpy()
    want = ref(x)
    # relative error scaled by the function's size near x (zeros of oscillating functions)
    scale = np.maximum(np.abs(want), 1e-300)
    if name.startswith("bessel") or name in ("airy_ai", "spherical_bessel_j0", "lgamma", "digamma", "polygamma1"):
        scale = np.maximum(scale, 1e-3)
    err = np.abs(got - want) / scale
    tol = 1e-9 if name.startswith("bessel") else 1e-10  # libstdc++'s large-x Bessel expansions
    bad = ~((err < tol) | (np.isnan(got) & np.isnan(want)) | (got == want))
    assert not bad.any(), f"{name}: {int(bad.sum())} values off, worst at x={x[bad][np.argmax(err[bad])]}: " \
                          f"{got[bad][np.argmax(err[bad])]} vs {want[bad][np.argmax(err[bad])]}"


@pytest.mark.parametrize("a", [0.3, 1.0, 2.5, 17.0, 250.0])
def test_incomplete_gamma_against_scipy(a):
    x = np.concatenate([np.geomspace(1e-6, 1e3, 200), [a, a + 1]])
    ka, kx = kindle.full((len(x),), a, dtype=kindle.float64), kindle.tensor(x, dtype=kindle.float64)
    np.testing.assert_allclose(kindle.igamma(ka, kx).numpy(), S.gammainc(a, x), rtol=1e-11, atol=1e-300)
    np.testing.assert_allclose(kindle.special.gammaincc(ka, kx).numpy(), S.gammaincc(a, x), rtol=1e-10, atol=1e-300)


def test_zeta_and_polynomials_against_scipy():
    s = np.array([1.5, 2.0, 3.0, 7.5, 30.0])
    q = np.array([0.3, 1.0, 2.5, 10.0, 100.0])
    ss, qq = np.meshgrid(s, q)
    got = kindle.special.zeta(kindle.tensor(ss, dtype=kindle.float64), kindle.tensor(qq, dtype=kindle.float64))
    np.testing.assert_allclose(got.numpy(), S.zeta(ss, qq), rtol=1e-12)
    x = np.linspace(-1, 1, 41)
    for n in range(0, 15):
        k = lambda f: f(kindle.tensor(x, dtype=kindle.float64), n).numpy()  # noqa: E731
        np.testing.assert_allclose(k(kindle.special.chebyshev_polynomial_t), S.eval_chebyt(n, x), atol=1e-11)
        np.testing.assert_allclose(k(kindle.special.chebyshev_polynomial_u), S.eval_chebyu(n, x), atol=1e-10)
        np.testing.assert_allclose(k(kindle.special.hermite_polynomial_h), S.eval_hermite(n, x), rtol=1e-11, atol=1e-9)
        np.testing.assert_allclose(k(kindle.special.hermite_polynomial_he), S.eval_hermitenorm(n, x), rtol=1e-11,
                                   atol=1e-9)
        np.testing.assert_allclose(k(kindle.special.laguerre_polynomial_l), S.eval_laguerre(n, x), atol=1e-11)
        np.testing.assert_allclose(k(kindle.special.legendre_polynomial_p), S.eval_legendre(n, x), atol=1e-11)
        np.testing.assert_allclose(k(kindle.special.shifted_chebyshev_polynomial_t), S.eval_sh_chebyt(n, x),
                                   atol=1e-11)


COMPOSITES = [
    ("ndtr", (), {}), ("logit", (), {}), ("logit", (), {"eps": 1e-3}), ("multigammaln", (3,), {}),
    ("gammaln", (), {}), ("psi", (), {}), ("expit", (), {}), ("sinc", (), {}), ("round", (), {}),
    ("log1p", (), {}), ("expm1", (), {}), ("exp2", (), {}), ("erfinv", (), {}), ("xlogy", ("other",), {}),
    ("xlog1py", ("other",), {}), ("softmax", (1,), {}), ("log_softmax", (0,), {}), ("logsumexp", (1,), {}),
    ("i0", (), {}), ("polygamma", None, {}), ("zeta", ("other",), {}),
]


@pytest.mark.parametrize("name,args,kw", COMPOSITES, ids=lambda c: str(c))
def test_torch_special_names(name, args, kw):
    rng = np.random.default_rng(0)
    data = rng.uniform(0.05, 0.95, (3, 4)) + (1.5 if name in ("multigammaln", "zeta") else 0)
    other = rng.uniform(0.1, 3, (3, 4)) + (1 if name == "zeta" else 0)
    k, t = kindle.tensor(data, dtype=kindle.float32), torch.tensor(data, dtype=torch.float32)
    kf, tf = getattr(kindle.special, name), getattr(torch.special, name)
    if args is None:  # polygamma(n, x)
        kr, tr = kf(2, k), tf(2, t)
    else:
        ka = [kindle.tensor(other, dtype=kindle.float32) if a == "other" else a for a in args]
        ta = [torch.tensor(other, dtype=torch.float32) if a == "other" else a for a in args]
        kr, tr = kf(k, *ka, **kw), tf(t, *ta, **kw)
    np.testing.assert_allclose(kr.numpy(), tr.numpy(), rtol=2e-5, atol=1e-6)
    assert kr.dtype == kindle.float32


def test_top_level_names_methods_and_errors():
    x = kindle.tensor([0.5, 1.5, 3.0])
    assert kindle.allclose(x.lgamma(), kindle.lgamma(x))
    assert kindle.allclose(x.polygamma(1), kindle.polygamma(1, x))
    assert kindle.allclose((x + 1).mvlgamma(2), kindle.mvlgamma(x + 1, p=2))
    y = x.clone()
    y.digamma_()
    assert kindle.allclose(y, kindle.digamma(x))
    assert kindle.allclose(kindle.arctanh(kindle.tensor([0.5])), kindle.atanh(kindle.tensor([0.5])))
    assert kindle.lgamma(kindle.tensor([1, 2, 3])).dtype == kindle.float32
    with pytest.raises(RuntimeError, match="negative n"):
        kindle.polygamma(-1, x)
    with pytest.raises(RuntimeError, match=r"\(p-1\)/2"):
        kindle.mvlgamma(kindle.tensor([0.2]), p=3)
    with pytest.raises(NotImplementedError):
        kindle.igamma(kindle.tensor([1, 2]), kindle.tensor([1, 2]))
    with pytest.raises(NotImplementedError):
        kindle.special.bessel_j0(kindle.tensor([1.0], dtype=kindle.float16))
    with pytest.raises(TypeError):
        kindle.igamma(kindle.tensor([1.0]), 2.0)
    a = kindle.tensor([2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="igamma: input"):
        kindle.igamma(a, kindle.tensor([1.0])).backward()


def test_complex_dtypes_are_real_and_complex32_refused():
    assert repr(kindle.cfloat) == "kindle.complex64" and kindle.cdouble is kindle.complex128
    assert kindle.cfloat.is_complex and not kindle.zeros(2).dtype == kindle.cfloat
    assert kindle.zeros(2, dtype=kindle.cfloat).dtype == kindle.complex64
    assert kindle.ones(2).to(kindle.complex128).tolist() == [1 + 0j, 1 + 0j]
    assert kindle.chalf.is_complex and repr(kindle.chalf) == "kindle.complex32"
    with pytest.raises(TypeError):
        kindle.zeros(2, dtype=kindle.chalf)


def test_complex_api_on_real_tensors_matches_torch():
    """conj/resolve_conj/real return the tensor itself, imag raises, isreal is all True, as torch
    does for real tensors (code written for both real and complex inputs runs on real ones)."""
    x = kindle.arange(3.0)
    t = torch.arange(3.0)
    for name in ("conj", "conj_physical", "resolve_conj", "resolve_neg"):
        assert getattr(kindle, name)(x) is x and getattr(x, name)() is x
        assert getattr(torch, name)(t) is t
    assert x.real is x and not x.is_conj() and not x.is_neg() and not kindle.is_complex(x)
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        x.imag  # noqa: B018
    assert kindle.isreal(x).tolist() == torch.isreal(t).tolist()
    assert kindle.is_nonzero(kindle.tensor([2.0])) and not kindle.is_nonzero(kindle.tensor(0))
    for bad in (kindle.tensor([1.0, 2.0]), kindle.tensor([])):
        with pytest.raises(RuntimeError, match="ambiguous"):
            kindle.is_nonzero(bad)
    assert kindle.is_same_size(x, x) and not kindle.is_same_size(x, x[:2])


def _ulp_error(got, ref):
    """|got - ref| in units of float32's last place at ref (finite refs)."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    return np.abs(got - ref) / np.maximum(spacing, np.spacing(np.float32(0)))


@pytest.mark.parametrize("name", ["lgamma", "digamma", "i0e", "ndtri"])
def test_float32_kernels_within_an_ulp_of_the_exact_values(name):
    """The float32 kernels (vectorised double formulas, special_fast.h) against SciPy in float64:
    within an ulp or two on every range, exact at the zeros, and the inputs outside the formulas'
    domain (negatives, infinities, NaN) as the float64 kernels give them."""
    sp = pytest.importorskip("scipy.special")
    rng = np.random.default_rng(7)
    if name == "ndtri":
        x = np.concatenate([rng.uniform(0, 1, 100000), np.exp(rng.uniform(-103, 0, 50000)),
                            1 - np.exp(rng.uniform(-16, 0, 20000)), [0.075, 0.925, 0.5, 1e-45, 0, 1, -1, 2, np.nan]])
        ref, kfn, tol = sp.ndtri, kindle.special.ndtri, 1.0
    else:
        x = np.concatenate([rng.uniform(0, 1, 40000), rng.uniform(0, 30, 40000), np.exp(rng.uniform(-80, 80, 40000)),
                            rng.uniform(-30, 30, 40000), [0, -0.0, 1, 2, 1e-45, 3e38, -1, -2.5, np.inf, -np.inf, np.nan]])
        ref, kfn, tol = {"lgamma": (sp.gammaln, kindle.lgamma, 2.0), "digamma": (sp.psi, kindle.digamma, None),
                         "i0e": (sp.i0e, kindle.special.i0e, 1.0)}[name]
    x = x.astype(np.float32)
    got = kfn(kindle.from_numpy(x)).numpy()
    exact = ref(x.astype(np.float64))
    with np.errstate(over="ignore"):
        from_double = kfn(kindle.from_numpy(x.astype(np.float64))).numpy().astype(np.float32)
    finite = np.isfinite(exact) & (np.abs(exact) < 3e38)
    if tol is None:  # digamma crosses zero at 1.4616...: there the bound is absolute
        err = np.abs(got[finite].astype(np.float64) - exact[finite])
        assert (err <= np.maximum(2 * np.spacing(np.abs(exact[finite]).astype(np.float32)), 1e-13)).all()
    else:
        assert _ulp_error(got[finite], exact[finite]).max() <= tol
    np.testing.assert_array_equal(got[~finite], from_double[~finite])  # the scalar path's infinities and NaN
    if name == "lgamma":
        assert got[np.isin(x, [1, 2])].tolist() == [0.0, 0.0]
    strided = kfn(kindle.from_numpy(x[:4000].reshape(40, 100)).t()).numpy()
    np.testing.assert_array_equal(strided, got[:4000].reshape(40, 100).T)
