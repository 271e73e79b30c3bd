"""kindle.signal.windows (torch.signal.windows): SciPy-style windows of length M, symmetric by
default (sym=False gives the periodic window used for spectral analysis). Computed in float64
from positions k and rounded once to the requested dtype."""
import math

from ... import _C

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _check(name, M, dtype, layout):
    if not isinstance(M, int) or isinstance(M, bool):
        raise TypeError(f"{name}(): argument 'M' must be int, not {type(M).__name__}")
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not _C.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    dt = dtype or _C.get_default_dtype()
    if dt not in (_C.float32, _C.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dt}")
    return dt


def _finish(w, dt, device, requires_grad):
    w = w.to(dt)
    if device is not None:
        w = w.to(device)
    return w.requires_grad_() if requires_grad else w


def _trivial(M, dt, device, requires_grad):
    """The windows of length 0 and 1 (empty, and a single one), or None."""
    if M == 0:
        return _finish(_C.empty(0, dtype=_C.float64), dt, device, requires_grad)
    if M == 1:
        return _finish(_C.ones(1, dtype=_C.float64), dt, device, requires_grad)
    return None


def _positions(start, step, M):
    return _C.linspace(start, start + (M - 1) * step, M, dtype=_C.float64)


def _span(M, sym):
    """The denominator of the sample spacing: M - 1 for a symmetric window, M for a periodic one."""
    return M - 1 if sym else M


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dt = _check("cosine", M, dtype, layout)
    t = _trivial(M, dt, device, requires_grad)
    if t is not None:
        return t
    step = math.pi / (M if sym else M + 1)
    return _finish(_C.sin(_positions(0.5 * step, step, M)), dt, device, requires_grad)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dt = _check("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    t = _trivial(M, dt, device, requires_grad)
    if t is not None:
        return t
    if center is None:
        center = _span(M, sym) / 2.0
    k = _positions(-center / tau, 1.0 / tau, M)
    return _finish(_C.exp(-k.abs()), dt, device, requires_grad)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dt = _check("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    t = _trivial(M, dt, device, requires_grad)
    if t is not None:
        return t
    c = 1.0 / (std * math.sqrt(2))
    k = _positions(-_span(M, sym) / 2.0 * c, c, M)
    return _finish(_C.exp(-k * k), dt, device, requires_grad)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dt = _check("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    t = _trivial(M, dt, device, requires_grad)
    if t is not None:
        return t
    b = float(beta)
    k = _C.linspace(-b, b, M, dtype=_C.float64) if sym else _positions(-b, 2 * b / M, M)
    b_t = _C.tensor(b, dtype=_C.float64)
    w = _C.i0(_C.sqrt(_C.clamp(b * b - k * k, min=0.0))) / _C.i0(b_t)
    return _finish(w, dt, device, requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dt = _check("general_cosine", M, dtype, layout)
    if a is None:
        raise TypeError("Coefficients cannot be None")
    if not isinstance(a, (list, tuple)):
        raise TypeError(f"Coefficients must be a list/tuple, got: {type(a).__name__}")
    if len(a) == 0:
        raise ValueError("Coefficients cannot be empty")
    t = _trivial(M, dt, device, requires_grad)
    if t is not None:
        return t
    k = _positions(0.0, 2 * math.pi / _span(M, sym), M)
    w = _C.zeros(M, dtype=_C.float64)
    for i, coeff in enumerate(a):
        w = w + ((-1) ** i) * float(coeff) * _C.cos(i * k)
    return _finish(w, dt, device, requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dt = _check("bartlett", M, dtype, layout)
    t = _trivial(M, dt, device, requires_grad)
    if t is not None:
        return t
    k = _positions(-1.0, 2.0 / _span(M, sym), M)
    return _finish(1 - k.abs(), dt, device, requires_grad)
