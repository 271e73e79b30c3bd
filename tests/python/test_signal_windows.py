"""kindle.signal.windows against torch.signal.windows: every window, length, symmetry and dtype,
their parameters, and the errors torch raises for bad arguments."""
import pytest

import kindle
import kindle.signal.windows as kw

torch = pytest.importorskip("torch")
tw = torch.signal.windows

PARAMS = {"general_cosine": {"a": [0.46, 0.3, 0.24]}}


@pytest.mark.parametrize("name", kw.__all__)
@pytest.mark.parametrize("M", [0, 1, 2, 3, 8, 33])
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows_match_torch(name, M, sym, dtype):
    k = getattr(kw, name)(M, sym=sym, dtype=getattr(kindle, dtype), **PARAMS.get(name, {}))
    t = getattr(tw, name)(M, sym=sym, dtype=getattr(torch, dtype), **PARAMS.get(name, {}))
    assert str(k.dtype).split(".")[1] == dtype and tuple(k.shape) == tuple(t.shape)
    torch.testing.assert_close(torch.tensor(k.tolist(), dtype=t.dtype), t, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("name,kwargs", [
    ("exponential", {"tau": 0.5}), ("exponential", {"center": 2.0, "sym": False}), ("gaussian", {"std": 3.0}),
    ("kaiser", {"beta": 0.0}), ("kaiser", {"beta": 5.5, "sym": False}), ("general_hamming", {"alpha": 0.6}),
    ("general_cosine", {"a": (1.0,)}),
])
def test_window_parameters(name, kwargs):
    k = getattr(kw, name)(9, **kwargs)
    t = getattr(tw, name)(9, **kwargs)
    torch.testing.assert_close(torch.tensor(k.tolist()), t)


def test_default_dtype_and_requires_grad():
    w = kw.hann(4, requires_grad=True)
    assert w.dtype == kindle.float32 and w.requires_grad and w.is_leaf


@pytest.mark.parametrize("call", [
    lambda m: m.hann(-1), lambda m: m.gaussian(4, std=0.0), lambda m: m.exponential(4, tau=-1.0),
    lambda m: m.exponential(4, center=1.0), lambda m: m.kaiser(4, beta=-1.0), lambda m: m.general_cosine(4, a=[]),
    lambda m: m.general_cosine(4, a=None), lambda m: m.general_cosine(4, a=0.5),
    lambda m: m.hamming(4, dtype=m_dtype(m, "int64")), lambda m: m.cosine(2.5),
])
def test_bad_arguments_raise_torchs_exception_types(call):
    with pytest.raises(Exception) as kt:
        call(kw)
    with pytest.raises(Exception) as tt:
        call(tw)
    assert type(kt.value) is type(tt.value), (kt.value, tt.value)


def m_dtype(m, name):
    return getattr(kindle if m is kw else torch, name)
