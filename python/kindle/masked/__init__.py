"""kindle.masked (torch.masked's reductions and normalizations on strided tensors): each function
takes a boolean `mask` broadcastable to the input and computes over the elements where it is
True, as if the others were absent: masked-out elements take the operation's identity (0 for sums
and norms, 1 for products, -inf/+inf (the dtype's extremes for integers) for max/min, -inf before a
softmax or logsumexp, NaN for the median), and a slice with nothing left gives what torch's gives
(the identity, or NaN for means, variances, medians and softmaxes). Without a mask each is the
plain operation. (torch.masked's MaskedTensor class is not implemented.)"""
import math

from .. import _C

__all__ = ["sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "logsumexp", "norm", "var", "std",
           "softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod", "logaddexp"]


def _input(input, dtype):
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"masked: expected input to be a Tensor, got {type(input).__name__}")
    return input if dtype is None else input.to(dtype)


def _mask(input, mask):
    """The mask broadcast to the input's shape (None: every element)."""
    if mask is None:
        return None
    if not isinstance(mask, _C.Tensor):
        raise TypeError(f"masked: mask must be a Tensor, got {type(mask).__name__}")
    if mask.dtype != _C.bool:
        raise ValueError(f"masked: mask must have dtype bool, got {mask.dtype}")
    if mask.dim() > input.dim():
        raise IndexError(f"_input_mask expected broadcastable mask (got mask dimensionality higher than of the "
                         f"input: mask {tuple(mask.shape)}, input {tuple(input.shape)})")
    return mask.expand(input.shape)


def _dims(input, dim):
    if dim is None or dim == () or dim == []:
        return tuple(range(input.dim()))
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _extreme(dtype, largest):
    if dtype.is_floating_point:
        return math.inf if largest else -math.inf
    if dtype == _C.bool:
        return largest
    from .. import iinfo
    info = iinfo(dtype)
    return info.max if largest else info.min


def _fill(input, mask, value):
    return input if mask is None else _C.where(mask, input, _C.tensor(value, dtype=input.dtype))


def _reduce(x, dims, keepdim, fn):
    """fn(x, dim, keepdim) over each of dims (for the ops that take one dimension at a time)."""
    for d in sorted((d % max(x.dim(), 1) for d in dims), reverse=True):
        x = fn(x, d, True)
    if not keepdim:
        for d in sorted((d % max(x.dim(), 1) for d in dims), reverse=True):
            x = x.squeeze(d)
    return x


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    x = _input(input, dtype)
    return _fill(x, _mask(x, mask), 0).sum(_dims(x, dim), keepdim=keepdim)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    x = _input(input, dtype)
    x = _fill(x, _mask(x, mask), 1)
    if x.dim() == 0:
        return x.prod()
    return _reduce(x, _dims(x, dim), keepdim, lambda t, d, k: t.prod(d, keepdim=k))


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    x = _input(input, dtype)
    return _fill(x, _mask(x, mask), _extreme(x.dtype, False)).amax(_dims(x, dim), keepdim=keepdim)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    x = _input(input, dtype)
    return _fill(x, _mask(x, mask), _extreme(x.dtype, True)).amin(_dims(x, dim), keepdim=keepdim)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    x = _input(input, dtype)
    return _fill(x, _mask(x, mask), _extreme(x.dtype, False)).argmax(dim, keepdim=keepdim).to(x.dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    x = _input(input, dtype)
    return _fill(x, _mask(x, mask), _extreme(x.dtype, True)).argmin(dim, keepdim=keepdim).to(x.dtype)


def _count(x, m, dims, keepdim):
    return m.sum(dims, keepdim=keepdim).to(x.dtype)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    x = _input(input, dtype)
    m = _mask(x, mask)
    dims = _dims(x, dim)
    if m is None:
        return x.mean(dims, keepdim=keepdim)
    return _fill(x, m, 0).sum(dims, keepdim=keepdim) / _count(x, m, dims, keepdim)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    x = _input(input, dtype)
    m = _mask(x, mask)
    if m is not None:
        if not x.is_floating_point():
            raise ValueError(f"masked median: a mask needs a floating-point input (got {x.dtype}): masked-out "
                             "elements are NaN")
        x = _C.where(m, x, _C.tensor(math.nan, dtype=x.dtype))
    return x.nanmedian(dim, keepdim=keepdim)[0] if x.dim() else x.clone()


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    x = _input(input, dtype)
    return _fill(x, _mask(x, mask), -math.inf).logsumexp(_dims(x, dim), keepdim=keepdim)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    x = _input(input, dtype)
    identity = math.inf if ord is not None and ord < 0 else 0  # (a masked-out element never wins a min-norm)
    from ..linalg import vector_norm
    return vector_norm(_fill(x, _mask(x, mask), identity), 2.0 if ord is None else ord, _dims(x, dim),
                                 keepdim=keepdim)


def _correction(unbiased, correction):
    if unbiased is not None and correction is not None:
        raise ValueError("masked var/std: only one of unbiased and correction may be given")
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    x = _input(input, dtype)
    m = _mask(x, mask)
    dims = _dims(x, dim)
    c = _correction(unbiased, correction)
    if m is None:
        return x.var(dims, correction=c, keepdim=keepdim)
    count = _count(x, m, dims, True)
    centered = _fill(x - _fill(x, m, 0).sum(dims, keepdim=True) / count, m, 0)
    squares = (centered * centered.conj()).real if centered.is_complex() else centered * centered
    out = squares.sum(dims, keepdim=True) / (count - c).clamp(min=0)
    return out if keepdim else out.squeeze(dims)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    return var(input, dim, unbiased, correction=correction, keepdim=keepdim, dtype=dtype, mask=mask).sqrt()


def softmax(input, dim, *, dtype=None, mask=None):
    x = _input(input, dtype)
    return _fill(x, _mask(x, mask), -math.inf).softmax(dim)


def log_softmax(input, dim, *, dtype=None, mask=None):
    x = _input(input, dtype)
    return _fill(x, _mask(x, mask), -math.inf).log_softmax(dim)


def softmin(input, dim, *, dtype=None, mask=None):
    x = _input(input, dtype)
    return _fill(-x, _mask(x, mask), -math.inf).softmax(dim)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    x = _input(input, dtype)
    m = _mask(x, mask)
    n = norm(x, ord, dim, keepdim=True, mask=m)
    return _fill(x, m, 0) / n.clamp(min=eps)


def cumsum(input, dim, *, dtype=None, mask=None):
    x = _input(input, dtype)
    return _fill(x, _mask(x, mask), 0).cumsum(dim)


def cumprod(input, dim, *, dtype=None, mask=None):
    x = _input(input, dtype)
    return _fill(x, _mask(x, mask), 1).cumprod(dim)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    x, y = _input(input, dtype), _input(other, dtype)
    return _C.logaddexp(_fill(x, _mask(x, input_mask), -math.inf), _fill(y, _mask(y, other_mask), -math.inf))
