"""kindle.fft against torch.fft (values, dtypes, shapes, errors, gradients) and NumPy.

The three DFT primitives (_fft_c2c/_r2c/_c2r) are in the op database (every dtype, non-contiguous
layouts, gradcheck); these tests cover the torch.fft functions built on them: n/s and dim
resolution, padding and trimming, the norm modes, the Hermitian variants, and the helpers."""
import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 6, 5))
Z = X + 1j * rng.standard_normal((4, 6, 5))
XI = rng.integers(0, 5, (4, 6))
INPUTS = {"float64": X, "complex128": Z, "int64": XI, "float32": X.astype(np.float32),
          "complex64": Z.astype(np.complex64)}
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
ONE_D_KWARGS = [{}, {"n": 4}, {"n": 9}, {"n": 1}, {"dim": 0}, {"dim": 1, "norm": "ortho"}, {"norm": "forward"},
                {"norm": "backward", "dim": -2}]
N_D = ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]
N_D_KWARGS = [{}, {"s": (3, 4)}, {"dim": (0, 2)}, {"s": (8, -1), "dim": (2, 0)}, {"norm": "ortho"},
              {"norm": "forward", "s": (5, 5)}, {"dim": (1,), "s": (7,)}]


def _outcome(lib, fname, arr, kwargs):
    try:
        return getattr(lib.fft, fname)(lib.tensor(arr), **kwargs), None
    except Exception as e:  # noqa: BLE001
        return None, e


def _check(fname, arr, kwargs):
    k, ke = _outcome(kindle, fname, arr, kwargs)
    t, te = _outcome(torch, fname, arr, kwargs)
    if te is not None:
        assert ke is not None, f"torch raised {te!r}, kindle returned {k}"
        assert type(ke) is type(te), (ke, te)
        return
    assert ke is None, f"kindle raised {ke!r}"
    assert str(k.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(k.shape) == tuple(t.shape)
    single = str(t.dtype).endswith(("float32", "complex64"))
    tol = 2e-5 if single else 1e-10
    np.testing.assert_allclose(k.numpy(), t.resolve_conj().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("fname", ONE_D)
@pytest.mark.parametrize("dtype", list(INPUTS))
def test_one_dimensional_matches_torch(fname, dtype):
    for kw in ONE_D_KWARGS:
        _check(fname, INPUTS[dtype], kw)


@pytest.mark.parametrize("fname", N_D)
@pytest.mark.parametrize("dtype", ["float64", "complex128", "float32"])
def test_n_dimensional_matches_torch(fname, dtype):
    for kw in N_D_KWARGS:
        if fname.endswith("2") and len(kw.get("dim", (0, 0))) != 2:
            continue
        _check(fname, INPUTS[dtype], kw)


@pytest.mark.parametrize("fname,kwargs", [
    ("fft", {"n": 0}), ("fft", {"norm": "bad"}), ("fft", {"dim": 3}), ("rfft", {}), ("ihfft", {}),
    ("irfft", {"n": 0}), ("fftn", {"s": (2, 2, 2, 2)}), ("fftn", {"dim": (0, 0)}), ("fftn", {"s": (2,), "dim": (0, 1)}),
])
def test_errors_match_torch(fname, kwargs):
    _check(fname, Z if fname in ("rfft", "ihfft") else X, kwargs)
    with pytest.raises(RuntimeError, match="Unsupported dtype Half"):
        kindle.fft.fft(kindle.ones(4, dtype=kindle.float16))


def test_matches_numpy_and_round_trips():
    x = kindle.tensor(X)
    np.testing.assert_allclose(kindle.fft.fft(x).numpy(), np.fft.fft(X), atol=1e-12)
    np.testing.assert_allclose(kindle.fft.rfftn(x).numpy(), np.fft.rfftn(X), atol=1e-12)
    np.testing.assert_allclose(kindle.fft.ifft(kindle.fft.fft(x)).real.numpy(), X, atol=1e-12)
    np.testing.assert_allclose(kindle.fft.irfft(kindle.fft.rfft(x), n=5).numpy(), X, atol=1e-12)
    np.testing.assert_allclose(kindle.fft.irfftn(kindle.fft.rfftn(x), s=X.shape).numpy(), X, atol=1e-12)
    big = rng.standard_normal(1 << 16) + 1j * rng.standard_normal(1 << 16)
    np.testing.assert_allclose(kindle.fft.fft(kindle.tensor(big)).numpy(), np.fft.fft(big), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("n", [1, 2, 7, 8])
def test_helpers_match_torch(n):
    for f in ("fftfreq", "rfftfreq"):
        np.testing.assert_allclose(getattr(kindle.fft, f)(n, 0.25).numpy(), getattr(torch.fft, f)(n, 0.25).numpy())
        assert getattr(kindle.fft, f)(n, dtype=kindle.float64).dtype == kindle.float64
    a = np.arange(n * 3).reshape(n, 3)
    for f in ("fftshift", "ifftshift"):
        for dim in (None, 0, (0, 1), -1):
            assert getattr(kindle.fft, f)(kindle.tensor(a), dim=dim).tolist() == \
                getattr(torch.fft, f)(torch.tensor(a), dim=dim).tolist()


@pytest.mark.parametrize("fname,dtype,kwargs", [
    ("fft", "float64", {}), ("fft", "complex128", {"n": 7, "norm": "ortho"}), ("ifft", "complex128", {"dim": 0}),
    ("rfft", "float64", {"n": 8}), ("irfft", "complex128", {}), ("irfft", "complex128", {"n": 7}),
    ("hfft", "complex128", {"norm": "forward"}), ("ihfft", "float64", {}), ("fft2", "complex128", {}),
    ("rfftn", "float64", {"s": (3, 4)}), ("irfftn", "complex128", {"dim": (0, 2)}), ("hfftn", "complex128", {}),
    ("ihfft2", "float64", {}),
])
def test_gradients(fname, dtype, kwargs):
    """gradcheck (complex inputs and outputs through their real views) and .grad equal to torch's
    for the same upstream gradient (PyTorch's conjugate Wirtinger convention)."""
    a = INPUTS[dtype][:3, :4, :3].copy()
    f = getattr(kindle.fft, fname)
    assert kindle.autograd.gradcheck(lambda t: f(t, **kwargs), (kindle.tensor(a, requires_grad=True),))
    kx, tx = kindle.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    kr, tr = f(kx, **kwargs), getattr(torch.fft, fname)(tx, **kwargs)
    w = rng.standard_normal(tuple(tr.shape)) + (1j * rng.standard_normal(tuple(tr.shape)) if tr.is_complex() else 0)
    kr.backward(kindle.tensor(w))
    tr.backward(torch.tensor(w))
    np.testing.assert_allclose(kx.grad.numpy(), tx.grad.resolve_conj().numpy(), atol=1e-10)


def test_spectral_layer_trains():
    """A learned spectral filter (the FNO / global-filter pattern): rfft2, a complex weight, irfft2;
    the loss falls and the weight's gradient matches torch's."""
    x = rng.standard_normal((2, 8, 8))
    w0 = (rng.standard_normal((8, 5)) + 1j * rng.standard_normal((8, 5))) * 0.1
    grads = {}
    for lib in (kindle, torch):
        w = lib.tensor(w0, requires_grad=True)
        y = lib.fft.irfft2(lib.fft.rfft2(lib.tensor(x)) * w, s=(8, 8))
        ((y - lib.tensor(x) * 0.5) ** 2).mean().backward()
        grads[lib.__name__] = w.grad.resolve_conj().numpy()
    np.testing.assert_allclose(grads["kindle"], grads["torch"], atol=1e-12)
    w = kindle.tensor(w0, requires_grad=True)
    opt = kindle.optim.Adam([w], lr=0.05)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        y = kindle.fft.irfft2(kindle.fft.rfft2(kindle.tensor(x)) * w, s=(8, 8))
        loss = ((y - kindle.tensor(x) * 0.5) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
def test_windows_match_torch(name):
    for n in (0, 1, 2, 7, 16):
        for periodic in (True, False):
            for dt in ("float32", "float64"):
                k = getattr(kindle, name)(n, periodic, dtype=getattr(kindle, dt))
                t = getattr(torch, name)(n, periodic, dtype=getattr(torch, dt))
                assert k.dtype == getattr(kindle, dt) and tuple(k.shape) == tuple(t.shape)
                np.testing.assert_allclose(k.numpy(), t.numpy(), atol=1e-6)
    with pytest.raises(RuntimeError):
        getattr(kindle, name)(-1)
    with pytest.raises(RuntimeError):
        getattr(kindle, name)(4, dtype=kindle.int64)


STFT_CASES = [dict(n_fft=32), dict(n_fft=32, hop_length=8, win_length=20, window="hann"),
              dict(n_fft=31, center=False, normalized=True), dict(n_fft=16, onesided=False),
              dict(n_fft=16, hop_length=5, window="hamming", pad_mode="constant")]


def _stft_args(lib, case):
    kw = dict(case)
    if kw.get("window") in ("hann", "hamming"):
        kw["window"] = getattr(lib, kw["window"] + "_window")(kw.get("win_length", kw["n_fft"]), dtype=lib.float64)
    return kw


@pytest.mark.parametrize("case", STFT_CASES)
def test_stft_istft_match_torch(case):
    x = rng.standard_normal((2, 200))
    for data in (x, x[0]):
        k = kindle.stft(kindle.tensor(data), **_stft_args(kindle, case), return_complex=True)
        t = torch.stft(torch.tensor(data), **_stft_args(torch, case), return_complex=True)
        assert tuple(k.shape) == tuple(t.shape) and k.dtype == kindle.complex128
        np.testing.assert_allclose(k.numpy(), t.numpy(), atol=1e-10)
        inv = {a: v for a, v in _stft_args(kindle, case).items() if a != "pad_mode"}
        tinv = {a: v for a, v in _stft_args(torch, case).items() if a != "pad_mode"}
        if case.get("pad_mode") is None:
            rk, rt = kindle.istft(k, **inv), torch.istft(t, **tinv)
            np.testing.assert_allclose(rk.numpy(), rt.numpy(), atol=1e-10)
            if case.get("center", True):
                np.testing.assert_allclose(rk.numpy(), data[..., :rk.shape[-1]], atol=1e-10)
    legacy = kindle.stft(kindle.tensor(x), 16, return_complex=False)
    assert tuple(legacy.shape) == tuple(torch.stft(torch.tensor(x), 16, return_complex=False).shape)
    with pytest.raises(RuntimeError, match="return_complex"):
        kindle.stft(kindle.tensor(x), 16)
    with pytest.raises(RuntimeError, match="win_length"):
        kindle.stft(kindle.tensor(x), 16, window=kindle.ones(8), return_complex=True)


def test_stft_gradient_matches_torch():
    x = rng.standard_normal(64)
    grads = []
    for lib in (kindle, torch):
        t = lib.tensor(x, requires_grad=True)
        s = lib.stft(t, 16, hop_length=4, window=lib.hann_window(16, dtype=lib.float64), return_complex=True)
        s.abs().pow(2).sum().backward()
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], atol=1e-9)
    assert kindle.autograd.gradcheck(
        lambda t: kindle.istft(kindle.stft(t, 8, hop_length=2, return_complex=True), 8, hop_length=2),
        (kindle.tensor(x[:24], requires_grad=True),))
