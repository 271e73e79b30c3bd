"""kindle.special: torch.special's functions. The kernels are C++ ops (csrc/ops/special.cpp);
the rest are PyTorch's aliases and compositions of existing ops."""
import math as _math

from . import _C
from ._torch_api import write_out as _write

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf",
    "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln",
    "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
    "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0",
    "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri",
    "polygamma", "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]


def _with_out(fn, name):
    def f(*args, out=None, **kwargs):
        r = fn(*args, **kwargs)
        return _write(out, r)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = fn.__doc__
    return f


# kernels under torch.special's names
for _name in ("i0e", "i1", "i1e", "erfcx", "ndtri", "log_ndtr", "entr", "bessel_j0", "bessel_j1", "bessel_y0",
              "bessel_y1", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
              "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai"):
    globals()[_name] = _with_out(getattr(_C, "special_" + _name), _name)


def _binary(name):
    op = getattr(_C, "special_" + name)

    def f(input, other, *, out=None):  # noqa: A002
        if not isinstance(input, _C.Tensor) and not isinstance(other, _C.Tensor):
            input = _C.tensor(input)  # two numbers: torch computes on a 0-d tensor of the first
        r = op(input, other)
        return _write(out, r)
    f.__name__ = f.__qualname__ = name
    return f


for _name in ("zeta", "xlog1py"):
    globals()[_name] = _binary(_name)


def _polynomial(name):
    op = getattr(_C, "special_" + name)

    def f(input, n, *, out=None):  # noqa: A002
        if not isinstance(input, _C.Tensor) and not isinstance(n, _C.Tensor):
            input = _C.tensor(input)
        r = op(input, n)
        return _write(out, r)
    f.__name__ = f.__qualname__ = name
    return f


for _name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
              "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
              "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
              "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"):
    globals()[_name] = _polynomial(_name)

# aliases of top-level ops
gammaln = _with_out(_C.lgamma, "gammaln")
digamma = psi = _with_out(_C.digamma, "digamma")
erf = _with_out(_C.erf, "erf")
erfc = _with_out(_C.erfc, "erfc")
erfinv = _with_out(_C.erfinv, "erfinv")
exp2 = _with_out(_C.exp2, "exp2")
expm1 = _with_out(_C.expm1, "expm1")
log1p = _with_out(_C.log1p, "log1p")
expit = _with_out(_C.sigmoid, "expit")
sinc = _with_out(_C.sinc, "sinc")
i0 = _with_out(_C.i0, "i0")
xlogy = _with_out(_C.xlogy, "xlogy")
gammainc = _with_out(_C.igamma, "gammainc")
gammaincc = _with_out(_C.igammac, "gammaincc")


def polygamma(n, input, *, out=None):  # noqa: A002
    r = _C.polygamma(n, input)
    return _write(out, r)


def round(input, decimals=0, *, out=None):  # noqa: A001,A002
    r = _C.round(input, decimals=decimals)
    return _write(out, r)


def _real_input(input, kernel):  # noqa: A002
    """Floating input as is, integers in the default dtype; complex refused as torch does (a cast
    would drop the imaginary parts)."""
    if input.is_complex():
        name = "ComplexFloat" if input.dtype == _C.complex64 else "ComplexDouble"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{name}\'')
    return input if input.is_floating_point() else input.to(_C.get_default_dtype())


def ndtr(input, *, out=None):  # noqa: A002
    """The standard normal CDF, 0.5 * erfc(-x / sqrt(2))."""
    x = _real_input(input, "erf_vml_cpu")
    r = _C.erfc(x * -_math.sqrt(0.5)) * 0.5
    return _write(out, r)


def logit(input, eps=None, *, out=None):  # noqa: A002
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    x = _real_input(input, "logit_cpu")
    if eps is not None:
        x = x.clamp(eps, 1 - eps)
    r = (x / (1 - x)).log()
    return _write(out, r)


def multigammaln(input, p, *, out=None):  # noqa: A002
    """The multivariate log-gamma function of dimension p (torch.mvlgamma)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    input = _real_input(input, "mvlgamma")  # noqa: A001
    if input.numel() and not bool((input > (p - 1) / 2).all()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 (got p={p})")
    j = _C.arange(p, dtype=input.dtype) * -0.5
    r = _C.lgamma(input.unsqueeze(-1) + j).sum(-1) + p * (p - 1) / 4 * _math.log(_math.pi)
    return _write(out, r)


def softmax(input, dim, *, dtype=None):  # noqa: A002
    return _C.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):  # noqa: A002
    return _C.log_softmax(input, dim, dtype=dtype)


def logsumexp(input, dim, keepdim=False, *, out=None):  # noqa: A002
    r = _C.logsumexp(input, dim, keepdim)
    return _write(out, r)


def install(Tensor):
    """Installs the Tensor methods torch has for these functions; returns its top-level names."""
    Tensor.polygamma = lambda self, n: _C.polygamma(n, self)
    Tensor.mvlgamma = lambda self, p: multigammaln(self, p)
    Tensor.logit = lambda self, eps=None: logit(self, eps)

    def _inplace(fn):
        def f(self, *args):
            return self.copy_(fn(self, *args))
        return f
    Tensor.mvlgamma_ = _inplace(Tensor.mvlgamma)
    Tensor.logit_ = _inplace(Tensor.logit)
    return {"mvlgamma": multigammaln, "logit": logit}
