"""Python-level forms of torch functions whose argument conventions the generated bindings
cannot express: varargs that return one tensor or a tuple (atleast_1d), an int-or-list-or-tensor
argument (tensor_split), optional extra outputs (unique_consecutive), torch's result tuples
(histogram), plus a few Tensor methods that are conversions or device queries. The numerics are
the C++ ops of csrc/ops/composite_numpy.cpp."""
import builtins
import math
import warnings

from . import _C, return_types
from ._torch_api import write_out
from .autograd import Function

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "tensor_split", "hsplit", "vsplit", "dsplit",
           "unique_consecutive", "histogram", "unravel_index", "chain_matmul", "get_device", "is_signed",
           "asarray", "frombuffer", "range", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "fill",
           "empty_permuted", "nonzero_static", "norm_except_dim", "cond", "while_loop", "lu", "lu_unpack",
           "nuclear_norm", "frobenius_norm", "lstsq", "symeig", "eig", "solve", "matrix_rank", "clamp_min_",
           "clamp_max_", "xlogy_", "logit_", "detach_", "conj_physical_", "resize_as_", "is_distributed"]

_Tensor = _C.Tensor
builtins_range = builtins.range


def _atleast(fn, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
        single = False
    else:
        single = len(tensors) == 1
    for t in tensors:
        if not isinstance(t, _Tensor):
            raise TypeError(f"{fn.__name__}() received an invalid combination of arguments - got "
                            f"({type(t).__name__}), but expected one of: (Tensor input) or (tuple of Tensors tensors)")
    return fn(tensors[0]) if single else tuple(fn(t) for t in tensors)


def atleast_1d(*tensors):
    return _atleast(_C.atleast_1d, tensors)


def atleast_2d(*tensors):
    return _atleast(_C.atleast_2d, tensors)


def atleast_3d(*tensors):
    return _atleast(_C.atleast_3d, tensors)


def _sections(op, arg):
    """A tensor of split points or a 0-d section count becomes a list or an int."""
    if not isinstance(arg, _Tensor):
        return list(arg) if isinstance(arg, tuple) else arg
    if arg.dtype != _C.int64:
        raise RuntimeError(f"{op} expected tensor_indices_or_sections to have dtype of long, but got {arg.dtype}")
    if arg.dim() == 0:
        return int(arg.item())
    if arg.dim() == 1:
        return arg.tolist()
    raise RuntimeError(f"{op} expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional "
                       f"tensor, but got a tensor with {arg.dim()} dims")


def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None,  # noqa: A002
                 tensor_indices_or_sections=None):
    arg = next((a for a in (indices_or_sections, sections, indices, tensor_indices_or_sections) if a is not None), None)
    if arg is None:
        raise TypeError("tensor_split() missing required argument 'indices_or_sections'")
    return _C.tensor_split(input, _sections("tensor_split", arg), dim)


def _split_along(c_fn, op):
    def split(input, indices_or_sections=None, *, sections=None, indices=None):  # noqa: A002
        arg = next((a for a in (indices_or_sections, sections, indices) if a is not None), None)
        if arg is None:
            raise TypeError(f"{op}() missing required argument 'indices_or_sections'")
        return c_fn(input, _sections(op, arg))
    split.__name__ = split.__qualname__ = op
    return split


hsplit = _split_along(_C.hsplit, "hsplit")
vsplit = _split_along(_C.vsplit, "vsplit")
dsplit = _split_along(_C.dsplit, "dsplit")


def unique_outputs(out, inverse, counts, return_inverse, return_counts):
    """unique's and unique_consecutive's result: the values, then the outputs asked for."""
    extra = (inverse,) * bool(return_inverse) + (counts,) * bool(return_counts)
    return (out, *extra) if extra else out


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    return unique_outputs(*_C._unique_consecutive(input, return_inverse, return_counts, dim), return_inverse,
                          return_counts)


_histogram_result = return_types.histogram


class Histogram(Function):  # (its grad_fn prints as HistogramBackward)
    """torch's histogram outputs take part in autograd, and their backward raises: the same here."""

    @staticmethod
    def forward(ctx, x, hist, edges):  # noqa: ARG004
        return hist, edges

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("the derivative for 'histogram' is not implemented.")


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A001,A002
    if isinstance(bins, _Tensor):
        if range is not None:
            raise TypeError("histogram(): range cannot be given with a tensor of bin edges")
        r = _C._histogram(input, bins, weight, density)
    else:
        lo, hi = (None, None) if range is None else (float(range[0]), float(range[1]))
        r = _C._histogram(input, bins, lo, hi, weight, density)
    hist, edges = r
    grads = [t for t in (input, weight, bins) if isinstance(t, _Tensor) and t.requires_grad]
    if grads and _C.is_grad_enabled() and out is None:
        hist, edges = Histogram.apply(grads[0], hist.detach(), edges.detach())
    return write_out(out, _histogram_result(hist, edges))


def unravel_index(indices, shape):
    """The coordinates of flat indices in a row-major array of `shape` (torch.unravel_index):
    like torch, indices wrap around (Python's floor modulo) rather than being bounds-checked."""
    if not isinstance(indices, _Tensor):
        indices = _C.tensor(indices)
    if indices.is_floating_point() or indices.is_complex() or indices.dtype == _C.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(not isinstance(s, int) for s in shape):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {shape!r}")
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    indices = indices.to(_C.int64)
    if indices.numel() and any(s == 0 for s in shape):
        raise RuntimeError(f"unravel_index: can't unravel indices into the shape {shape}, which has no elements")
    coords = []
    for s in reversed(shape):
        coords.append(_C.remainder(indices, s) if s else indices * 0)
        indices = _C.floor_divide(indices, s) if s else indices * 0
    return tuple(reversed(coords))


def chain_matmul(*matrices, out=None):
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
                  "multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    if len(matrices) == 1:
        if matrices[0].dim() != 2:
            raise RuntimeError(f"chain_matmul(): Tensor dimension is {matrices[0].dim()}, expected 2 instead.")
        return write_out(out, matrices[0].clone())
    from .linalg import multi_dot
    return write_out(out, multi_dot(list(matrices)))


def get_device(input):  # noqa: A002
    """-1 for a CPU tensor (torch's convention), else the device index."""
    d = input.device
    return -1 if d.type == "cpu" else (d.index or 0)


def is_signed(input):  # noqa: A002
    return input.dtype.is_signed


# ---- random fills torch draws per element from 53-bit uniform doubles (its CPU kernels);
# drawn the same way here from the float64 uniform stream, so a seed gives torch's values.

def _uniform64(self, generator):
    return _C.empty(tuple(self.shape), dtype=_C.float64).uniform_(0.0, 1.0, generator=generator)


def _check_float(self, op):
    if not self.is_floating_point():
        raise NotImplementedError(f"\"{op}\" not implemented for '{str(self.dtype).split('.')[-1].capitalize()}'")


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    if not self.is_floating_point():
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {str(self.dtype).split('.')[-1]}")
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    u = _uniform64(self, generator)
    return self.copy_(_C.tan((u - 0.5) * math.pi) * sigma + median)


def _geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = _uniform64(self, generator)
    return self.copy_(_C.ceil(_C.log(u) / math.log1p(-p)))


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Box-Muller on pairs of uniform doubles (u1 the angle, u2 the radius), both results of a
    pair used in turn, as torch's per-element normal_distribution<double> does."""
    _check_float(self, "log_normal_cpu")
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    n = self.numel()
    u = _C.empty(((n + 1) // 2, 2), dtype=_C.float64).uniform_(0.0, 1.0, generator=generator)
    r = _C.sqrt(-2.0 * _C.log1p(-u[:, 1]))
    theta = 2.0 * math.pi * u[:, 0]
    z = _C.stack([r * _C.cos(theta), r * _C.sin(theta)], 1).reshape(-1)[:n]
    return self.copy_(_C.exp(z * std + mean).reshape(tuple(self.shape)))


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """A tensor from obj, sharing its memory where it can (a tensor, a NumPy array or a buffer of
    the requested dtype) unless copy=True; copy=False raises where sharing is impossible."""
    import numpy as np
    from . import device as _device
    if device is not None and _device(device).type != "cpu":
        raise RuntimeError(f"asarray: no {_device(device).type} device: Kindle was built without it")
    if isinstance(obj, _Tensor):
        t = obj
        if dtype is not None and t.dtype != dtype:
            if copy is False:
                raise ValueError("asarray: can't alias the tensor with a different dtype (copy=False)")
            t = t.to(dtype)
        elif copy:
            t = t.clone()
    elif isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__"):
        arr = np.asarray(obj)
        t = _C.from_numpy(arr) if arr.dtype.kind in "biufc" else None
        if t is None:
            raise TypeError(f"asarray: can't convert a NumPy array of dtype {arr.dtype}")
        if dtype is not None and t.dtype != dtype:
            if copy is False:
                raise ValueError("asarray: can't alias the array with a different dtype (copy=False)")
            t = t.to(dtype)
        elif copy:
            t = t.clone()
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        if dtype is None:
            raise TypeError("asarray: a buffer needs a dtype")
        t = frombuffer(obj, dtype=dtype)
        if copy:
            t = t.clone()
    else:
        if copy is False:
            raise ValueError(f"asarray: can't alias an object of type {type(obj).__name__} (copy=False)")
        t = _C.tensor(obj, dtype=dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d tensor viewing a writable object that exposes the buffer protocol (bytearray,
    array.array, mmap): no copy."""
    import numpy as np
    if dtype == _C.bfloat16:
        arr = np.frombuffer(buffer, dtype=np.uint16, count=count, offset=offset)
        t = _C.from_numpy(arr.copy() if not arr.flags.writeable else arr).view(_C.bfloat16)
        return t.requires_grad_(True) if requires_grad else t
    arr = np.frombuffer(buffer, dtype=_C.empty(0, dtype=dtype).numpy().dtype, count=count, offset=offset)
    # A read-only buffer (bytes) is copied: Kindle's tensors are always writable, and writing
    # through a view into an immutable object would break Python's guarantees.
    t = _C.from_numpy(arr if arr.flags.writeable else arr.copy())
    if requires_grad:
        t.requires_grad_(True)
    return t


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,  # noqa: A001
          requires_grad=False):  # noqa: ARG001
    """The deprecated torch.range: like arange but including `end`, float by default."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    n = int(math.floor((end - start) / step)) + 1
    if n < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    from . import get_default_dtype
    r = _C.arange(n, dtype=_C.float64) * step + start
    r = r.to(dtype or get_default_dtype())
    if requires_grad:
        r.requires_grad_(True)
    return write_out(out, r)


def unsafe_chunk(input, chunks, dim=0):  # noqa: A002
    return input.chunk(chunks, dim)


def unsafe_split(tensor, split_size_or_sections, dim=0):
    return tensor.split(split_size_or_sections, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    return input.split(list(split_sizes), dim)


def fill(input, value):  # noqa: A002
    """A new tensor like input, every element `value` (torch.fill; fill_ is in place)."""
    return input.clone().fill_(value)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,  # noqa: ARG001
                   pin_memory=False):  # noqa: ARG001
    """An uninitialised tensor of `size` whose memory is laid out in the dim order `physical_layout`."""
    size, order = list(size), list(physical_layout)
    if sorted(order) != list(builtins_range(len(size))):
        raise RuntimeError(f"empty_permuted: physical_layout {order} must be a permutation of the {len(size)} dims")
    t = _C.empty([size[d] for d in order], dtype=dtype)
    inverse = [order.index(d) for d in builtins_range(len(size))]
    t = t.permute(inverse)
    if requires_grad:
        t.requires_grad_(True)
    return t


def nonzero_static(input, *, size, fill_value=-1):  # noqa: A002
    """nonzero padded (with fill_value) or truncated to exactly `size` rows."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got {size}")
    nz = _C.nonzero(input)
    if nz.shape[0] >= size:
        return nz[:size].contiguous()
    pad = _C.full((size - nz.shape[0], nz.shape[1]), fill_value, dtype=_C.int64)
    return _C.cat([nz, pad], 0)


def norm_except_dim(v, pow=2, dim=0):  # noqa: A002
    """The p-norm over every dim but `dim` (kept with size 1 elsewhere); dim=-1: over all."""
    if dim == -1:
        return v.norm(pow)
    d = dim % v.dim()
    others = [i for i in builtins_range(v.dim()) if i != d]
    return v.norm(pow, others, keepdim=True) if others else v.abs()


def cond(pred, true_fn, false_fn, operands=()):
    """torch.cond in eager mode: one branch, picked by a bool or a one-element tensor."""
    if isinstance(pred, _Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"cond: expected pred to be a bool or a tensor with a single item, got {list(pred.shape)}")
        pred = bool(pred.item())
    return true_fn(*operands) if pred else false_fn(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """torch.while_loop in eager mode: body_fn applied while cond_fn holds."""
    carried = tuple(carried_inputs)
    while bool(cond_fn(*carried)):
        out = body_fn(*carried)
        carried = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return carried


def lu(A, pivot=True, get_infos=False, out=None):
    from . import linalg
    LU, pivots, info = linalg.lu_factor_ex(A, pivot=pivot)
    return write_out(out, (LU, pivots, info) if get_infos else (LU, pivots))


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) from lu_factor's packed factors: L unit lower, U upper, P from the row swaps."""
    if LU_data.dim() < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    if LU_pivots.dtype != _C.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
                           "Note: this function is intended to be used with the output produced by "
                           "torch.linalg.lu_factor")
    if tuple(LU_pivots.shape) != tuple(LU_data.shape[:-2]) + (k,):
        raise RuntimeError(f"torch.lu_unpack: Expected LU_pivots.size(-1) == min(LU_data.size(-1), LU_data.size(-2)) "
                           f"and the same batch dims, but got LU_data {list(LU_data.shape)} and LU_pivots "
                           f"{list(LU_pivots.shape)}")
    if unpack_data:
        L = _C.tril(LU_data[..., :, :k], -1) + _C.eye(m, k, dtype=LU_data.dtype)
        U = _C.triu(LU_data[..., :k, :])
    else:
        L = U = _C.empty(0, dtype=LU_data.dtype)
    if unpack_pivots:
        batch = list(LU_pivots.shape[:-1])
        perm = _C.arange(m).expand(batch + [m]).contiguous()
        piv = LU_pivots.to(_C.int64) - 1
        for i in builtins_range(LU_pivots.shape[-1]):
            j = piv[..., i:i + 1]
            a = perm[..., i:i + 1].clone()
            b = perm.gather(-1, j)
            perm[..., i:i + 1] = b
            perm.scatter_(-1, j, a)
        P = _C.eye(m, dtype=LU_data.dtype)[perm].transpose(-2, -1)
    else:
        P = _C.empty(0, dtype=LU_data.dtype)
    return write_out(out, (P, L, U))


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):  # noqa: A002
    from . import linalg
    return write_out(out, linalg.matrix_norm(input, "nuc", dim if dim is not None else (-2, -1), keepdim))


def frobenius_norm(input, dim=(-2, -1), keepdim=False, *, out=None):  # noqa: A002
    from . import linalg
    return write_out(out, linalg.vector_norm(input, 2, dim, keepdim))


def _removed(name, advice):
    def f(*args, **kwargs):  # noqa: ARG001
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now removed. {advice}")
    f.__name__ = f.__qualname__ = name
    return f


lstsq = _removed("lstsq", "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.")
symeig = _removed("symeig", "Use `torch.linalg.eigh` (or `torch.linalg.eigvalsh`) instead.")
eig = _removed("eig", "Use `torch.linalg.eig` (or `torch.linalg.eigvals`) instead.")
solve = _removed("solve", "`torch.solve` is deprecated in favor of `torch.linalg.solve`, which has its arguments "
                          "reversed and does not return the LU factorization.")
matrix_rank = _removed("matrix_rank", "Please use the `torch.linalg.matrix_rank` function instead.")


def clamp_min_(input, min):  # noqa: A002
    return input.clamp_min_(min)


def clamp_max_(input, max):  # noqa: A002
    return input.clamp_max_(max)


def xlogy_(input, other):  # noqa: A002
    return input.xlogy_(other)


def logit_(input, eps=None):  # noqa: A002
    return input.logit_(eps)


def detach_(input):  # noqa: A002
    return input.detach_()


def conj_physical_(input):  # noqa: A002
    return input.copy_(_C.conj_physical(input)) if input.is_complex() else input


def resize_as_(input, the_template, *, memory_format=None):  # noqa: A002
    return input.resize_as_(the_template, memory_format)


def is_distributed(input):  # noqa: A002,ARG001
    return False


def _where_method(self, condition, y):
    return _C.where(condition, self, y)


def _new(self, *args, **kwargs):
    """The legacy Tensor.new: the forms of torch.Tensor(...), with self's dtype."""
    from ._legacy import _new as legacy_new
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"new() got unexpected keyword arguments {sorted(kwargs)}")
    return legacy_new(self.dtype, args, device)


def _pin_memory(self, device=None):  # noqa: ARG001
    raise RuntimeError("Cannot access accelerator device when none is available.")


def _resize_(self, *sizes, memory_format=None):
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = tuple(sizes[0])
    _c_resize_(self, list(sizes))
    if memory_format is not None:
        from . import preserve_format, contiguous_format
        if memory_format not in (preserve_format, contiguous_format):
            self.copy_(self.contiguous(memory_format=memory_format))
    return self


def _resize_as_(self, other, memory_format=None):
    return _resize_(self, tuple(other.shape), memory_format=memory_format)


def _resize(self, *sizes):
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = tuple(sizes[0])
    return self.reshape(sizes)


def _chalf(self, memory_format=None):  # noqa: ARG001
    raise TypeError("chalf(): Kindle has no complex32 (chalf) kernels; use cfloat()")


def _dim_order(self, *, ambiguity_check=False):  # noqa: ARG001
    """The dims from outermost to innermost in memory (largest stride first; ties keep dim order)."""
    return tuple(sorted(builtins_range(self.dim()), key=lambda d: -self.stride(d)))


def _module_load(self, other, assign=False):
    """What Module.load_state_dict puts in place of self (torch.Tensor.module_load): other,
    detached, or a copy of it in self's dtype unless assign."""
    if assign:
        return other.detach()
    return other.detach().to(self.dtype)


def _no_device(dev):
    def to_device(self, *args, **kwargs):  # noqa: ARG001
        raise RuntimeError(f"no {dev} device: Kindle was built without {dev.upper()} support")
    to_device.__name__ = dev
    return to_device


def _map_elements(self, fn, *others):
    """self's elements replaced by fn(element, the others' elements), in Python (CPU tensors, as
    torch's apply_/map_/map2_): the others broadcast to self's shape."""
    shape = tuple(self.shape)
    columns = [self.reshape(-1).tolist()] + [o.expand(shape).reshape(-1).tolist() for o in others]
    values = [fn(*args) for args in zip(*columns)]
    return self.copy_(_C.tensor(values, dtype=self.dtype).reshape(shape))


def _apply_(self, callable):  # noqa: A002
    return _map_elements(self, callable)


def _map_(self, tensor, callable):  # noqa: A002
    return _map_elements(self, callable, tensor)


def _map2_(self, x, y, callable):  # noqa: A002
    return _map_elements(self, callable, x, y)


def _prelu(self, weight):
    from .nn import functional as F
    return F.prelu(self, weight)


def _hardshrink(self, lambd):
    from .nn import functional as F
    return F.hardshrink(self, lambd)


def install(Tensor):
    """The Tensor methods of this module; returns the top-level names to add."""
    Tensor.tensor_split = tensor_split
    Tensor.hsplit, Tensor.vsplit, Tensor.dsplit = hsplit, vsplit, dsplit
    Tensor.unique_consecutive = unique_consecutive
    Tensor.histogram = histogram
    Tensor.where = _where_method
    Tensor.new = _new
    Tensor.get_device = get_device
    Tensor.is_signed = is_signed
    Tensor.cfloat = lambda self, memory_format=None: self.to(_C.complex64)
    Tensor.cdouble = lambda self, memory_format=None: self.to(_C.complex128)
    Tensor.is_pinned = lambda self, device=None: False
    Tensor.pin_memory = _pin_memory
    Tensor.cauchy_ = _cauchy_
    Tensor.geometric_ = _geometric_
    Tensor.log_normal_ = _log_normal_
    global _c_resize_
    _c_resize_ = Tensor.resize_
    Tensor.resize_ = _resize_
    Tensor.resize_as_ = _resize_as_
    Tensor.resize = _resize
    Tensor.resize_as = lambda self, tensor: _resize(self, *tensor.shape)
    Tensor.new_empty_strided = lambda self, size, stride, *, dtype=None, device=None, requires_grad=False, \
        layout=None, pin_memory=False: _C.empty_strided(size, stride, dtype=dtype or self.dtype,
                                                         device=self.device if device is None else device,
                                                         requires_grad=requires_grad)
    Tensor.unsafe_chunk = unsafe_chunk
    Tensor.unsafe_split = unsafe_split
    Tensor.unsafe_split_with_sizes = unsafe_split_with_sizes
    Tensor.nonzero_static = nonzero_static
    Tensor.lu = lambda self, pivot=True, get_infos=False: lu(self, pivot, get_infos)
    Tensor.is_distributed = is_distributed
    Tensor.chalf = _chalf
    Tensor.apply_ = _apply_
    Tensor.map_ = _map_
    Tensor.prelu = lambda self, weight: _prelu(self, weight)
    Tensor.hardshrink = lambda self, lambd=0.5: _hardshrink(self, lambd)
    for name in ("lstsq", "symeig", "eig", "solve"):
        setattr(Tensor, name, globals()[name])
    Tensor.addmv_ = lambda self, mat, vec, *, beta=1, alpha=1: self.copy_(_C.addmv(self, mat, vec, beta=beta,
                                                                                     alpha=alpha))
    Tensor.baddbmm_ = lambda self, batch1, batch2, *, beta=1, alpha=1: self.copy_(
        _C.baddbmm(self, batch1, batch2, beta=beta, alpha=alpha))
    Tensor.conj_physical_ = conj_physical_
    Tensor.const_data_ptr = lambda self: self.data_ptr()
    Tensor.dim_order = _dim_order
    Tensor.is_set_to = lambda self, tensor: (self.data_ptr() == tensor.data_ptr() and self.shape == tensor.shape
                                             and self.stride() == tensor.stride() and self.dtype == tensor.dtype)
    Tensor.module_load = _module_load
    Tensor.map2_ = _map2_
    for dev in ("ipu", "xpu", "mtia"):
        setattr(Tensor, dev, _no_device(dev))
    for name in ("is_ipu", "is_maia", "is_mtia", "is_vulkan", "is_xla", "is_mkldnn", "is_nested", "volatile"):
        if not hasattr(Tensor, name):
            setattr(Tensor, name, property(lambda self: False))
    return {n: globals()[n] for n in __all__}
