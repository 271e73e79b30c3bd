"""Helpers shared by the distributions (torch.distributions.utils)."""
import numbers
from functools import update_wrapper

import kindle

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060

_TORCH_DTYPE_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                      "bool": "Bool", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64"}


def _dtype_name(dtype):
    """A dtype as torch's kernels name it in their errors ('Long' for int64)."""
    name = str(dtype).rsplit(".", 1)[-1]
    return _TORCH_DTYPE_NAMES.get(name, name)


def _is_floating(dtype):
    return dtype.is_floating_point or dtype.is_complex


def _require_floating(dtype, kernel):
    """Raises the NotImplementedError torch's random kernels raise for a dtype they have no
    implementation for (integer and bool parameters)."""
    if not _is_floating(dtype):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype_name(dtype)}'")


def broadcast_all(*values):
    """Numbers become tensors (of the tensors' dtype, or the default float dtype) and every value
    is broadcast to one shape."""
    if not all(isinstance(v, (kindle.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, kindle.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(isinstance(v, kindle.Tensor) for v in values):
        dtype = kindle.get_default_dtype()
        for v in values:
            if isinstance(v, kindle.Tensor):
                dtype = v.dtype
                break
        values = [v if isinstance(v, kindle.Tensor) else kindle.tensor(v, dtype=dtype) for v in values]
    return kindle.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    _require_floating(dtype, "normal_kernel_cpu")
    return kindle.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim):
    """Sums out the `dim` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    return kindle.sigmoid(logits) if is_binary else kindle.nn.functional.softmax(logits, dim=-1)


def clamp_probs(probs):
    eps = kindle.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return kindle.log(ps_clamped) - kindle.log1p(-ps_clamped)
    return kindle.log(ps_clamped)


class lazy_property:
    """A property computed once per instance, on first use (a parameter derived from another)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with kindle.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    n = mat.shape[-1]
    rows, cols = kindle.tril_indices(n, n, offset=diag)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec, diag=0):
    n = int((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2)
    mat = vec.new_zeros(vec.shape[:-1] + (n, n))
    rows, cols = kindle.tril_indices(n, n, offset=diag)
    mat[..., rows, cols] = vec
    return mat
