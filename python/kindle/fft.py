"""kindle.fft: torch.fft's functions, each a thin layer over the three DFT ops of the op table
(kindle._fft_c2c, _fft_r2c, _fft_c2r, MKL's DFTI underneath): this file only resolves n/s and
dim, pads or trims the input, and turns the norm name into the scale of each direction.
Gradients come from those ops' derivative formulas."""
from . import _C
from ._torch_api import write_out as _write

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _norm_mode(norm, forward):
    """torch's fft_norm_mode for one direction: 0 unscaled, 1 by 1/sqrt(n), 2 by 1/n."""
    if norm is None or norm == "backward":
        return 0 if forward else 2
    if norm == "ortho":
        return 1
    if norm == "forward":
        return 2 if forward else 0
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _check_tensor(x, fname):
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"fft_{fname}(): argument 'input' must be Tensor, not {type(x).__name__}")


def _as_float(x, fname):
    """Integers and bool compute in the default float type; 16-bit floats have no CPU kernel."""
    _check_tensor(x, fname)
    if x.dtype in (_C.float16, _C.bfloat16):
        raise RuntimeError(f"Unsupported dtype {'Half' if x.dtype == _C.float16 else 'BFloat16'}")
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(_C.get_default_dtype())
    return x


def _as_complex(x, fname):
    x = _as_float(x, fname)
    return x if x.is_complex() else x.to(_C.complex128 if x.dtype == _C.float64 else _C.complex64)


def _as_real(x, fname):
    x = _as_float(x, fname)
    if x.is_complex():
        names = {_C.complex64: "ComplexFloat", _C.complex128: "ComplexDouble"}
        raise RuntimeError(f"{fname} expects a real input tensor, but got {names[x.dtype]}")
    return x


def _wrap(d, ndim, fname):
    if not -max(ndim, 1) <= d < max(ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, {max(ndim, 1) - 1}], "
                         f"but got {d})")
    return d % ndim if ndim else 0


def _resize(x, dims, sizes):
    """Trim or zero-pad each of dims to its size (-1: as it is)."""
    for d, n in zip(dims, sizes):
        cur = x.shape[d]
        if n == -1 or n == cur:
            continue
        if n < cur:
            x = x.narrow(d, 0, n)
        else:
            shape = list(x.shape)
            shape[d] = n - cur
            x = _C.cat([x, _C.zeros(shape, dtype=x.dtype)], d)
    return x


def _check_n(n):
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _dims_and_sizes(x, s, dim, fname):
    """torch's rules for s and dim: both None is every dim; s alone is the last len(s) dims; dim
    alone keeps those dims' sizes. Returns (dims, sizes) with sizes -1 where s says so."""
    if dim is not None and not isinstance(dim, (list, tuple)):
        dim = [dim]
    if s is not None and not isinstance(s, (list, tuple)):
        s = [s]
    if dim is None:
        dims = list(range(x.dim())) if s is None else list(range(x.dim() - len(s), x.dim()))
        if s is not None and len(s) > x.dim():
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {x.dim()} dimensions.")
    else:
        dims = [_wrap(d, x.dim(), fname) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is None:
        sizes = [x.shape[d] for d in dims]
    else:
        if len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        sizes = [x.shape[d] if n == -1 else n for d, n in zip(dims, s)]
    for n in sizes:
        _check_n(n)
    return dims, sizes


# ---- one dimension

def fft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    x = _as_float(input, "fft")
    _check_n(n)
    d = _wrap(dim, x.dim(), "fft")
    x = _resize(x, [d], [x.shape[d] if n is None else n])
    if x.is_complex():
        r = _C._fft_c2c(x, [d], _norm_mode(norm, True), True)
    else:
        r = _C._fft_r2c(x, [d], _norm_mode(norm, True), False)
    return _write(out, r)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    x = _as_complex(input, "ifft")
    _check_n(n)
    d = _wrap(dim, x.dim(), "ifft")
    x = _resize(x, [d], [x.shape[d] if n is None else n])
    return _write(out, _C._fft_c2c(x, [d], _norm_mode(norm, False), False))


def rfft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    x = _as_real(input, "rfft")
    _check_n(n)
    d = _wrap(dim, x.dim(), "rfft")
    x = _resize(x, [d], [x.shape[d] if n is None else n])
    return _write(out, _C._fft_r2c(x, [d], _norm_mode(norm, True), True))


def _c2r(x, d, n, mode):
    n = 2 * (x.shape[d] - 1) if n is None else n
    _check_n(n)
    x = _resize(x, [d], [n // 2 + 1])
    return _C._fft_c2r(x, [d], mode, n)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    x = _as_complex(input, "irfft")
    d = _wrap(dim, x.dim(), "irfft")
    return _write(out, _c2r(x, d, n, _norm_mode(norm, False)))


def hfft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    """The forward transform of a Hermitian-symmetric signal given by its first half: real."""
    x = _as_complex(input, "hfft")
    d = _wrap(dim, x.dim(), "hfft")
    return _write(out, _c2r(x.conj(), d, n, _norm_mode(norm, True)))


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    x = _as_real(input, "ihfft")
    _check_n(n)
    d = _wrap(dim, x.dim(), "ihfft")
    x = _resize(x, [d], [x.shape[d] if n is None else n])
    return _write(out, _C._fft_r2c(x, [d], _norm_mode(norm, False), True).conj())


# ---- n dimensions

def fftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    x = _as_float(input, "fftn")
    dims, sizes = _dims_and_sizes(x, s, dim, "fftn")
    x = _resize(x, dims, sizes)
    if not dims:
        return _write(out, x.to(_C.complex128 if x.dtype in (_C.float64, _C.complex128) else _C.complex64).clone())
    if x.is_complex():
        r = _C._fft_c2c(x, dims, _norm_mode(norm, True), True)
    else:
        r = _C._fft_r2c(x, dims, _norm_mode(norm, True), False)
    return _write(out, r)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    x = _as_complex(input, "ifftn")
    dims, sizes = _dims_and_sizes(x, s, dim, "ifftn")
    x = _resize(x, dims, sizes)
    return _write(out, _C._fft_c2c(x, dims, _norm_mode(norm, False), False))


def rfftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    x = _as_real(input, "rfftn")
    dims, sizes = _dims_and_sizes(x, s, dim, "rfftn")
    if not dims:
        raise RuntimeError("rfftn must transform at least one axis")
    x = _resize(x, dims, sizes)
    return _write(out, _C._fft_r2c(x, dims, _norm_mode(norm, True), True))


def _c2rn(x, s, dim, mode, fname):
    dims, sizes = _dims_and_sizes(x, s, dim, fname)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    last = dims[-1]
    n = 2 * (x.shape[last] - 1) if s is None or (isinstance(s, (list, tuple)) and s[-1] == -1) else sizes[-1]
    _check_n(n)
    x = _resize(x, dims, sizes[:-1] + [n // 2 + 1])
    return _C._fft_c2r(x, dims, mode, n)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    x = _as_complex(input, "irfftn")
    return _write(out, _c2rn(x, s, dim, _norm_mode(norm, False), "irfftn"))


def hfftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    x = _as_complex(input, "hfftn")
    return _write(out, _c2rn(x.conj(), s, dim, _norm_mode(norm, True), "hfftn"))


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    x = _as_real(input, "ihfftn")
    dims, sizes = _dims_and_sizes(x, s, dim, "ihfftn")
    if not dims:
        raise RuntimeError("ihfftn must transform at least one axis")
    x = _resize(x, dims, sizes)
    return _write(out, _C._fft_r2c(x, dims, _norm_mode(norm, False), True).conj())


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    return fftn(input, s, dim, norm, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    return ifftn(input, s, dim, norm, out=out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    return irfftn(input, s, dim, norm, out=out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    return ihfftn(input, s, dim, norm, out=out)


# ---- helpers

def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an n-point DFT: [0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d n)."""
    dt = dtype or _C.get_default_dtype()
    k = _C.cat([_C.arange(0, (n - 1) // 2 + 1, dtype=dt), _C.arange(-(n // 2), 0, dtype=dt)])
    r = (k / (d * n)).to(dt)
    if requires_grad:
        r.requires_grad_()
    return _write(out, r)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    dt = dtype or _C.get_default_dtype()
    r = (_C.arange(0, n // 2 + 1, dtype=dt) / (d * n)).to(dt)
    if requires_grad:
        r.requires_grad_()
    return _write(out, r)


def _shift(x, dim, sign):
    if dim is None:
        dim = list(range(x.dim()))
    elif isinstance(dim, int):
        dim = [dim]
    dim = [_wrap(d, x.dim(), "fftshift") for d in dim]
    if not dim:
        return x.clone()
    shifts = [(x.shape[d] // 2) if sign > 0 else -(x.shape[d] // 2) for d in dim]
    return x.roll(shifts, dim)


def fftshift(input, dim=None):  # noqa: A002
    """Moves the zero frequency to the middle (rolls each dim by n // 2)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):  # noqa: A002
    return _shift(input, dim, -1)
