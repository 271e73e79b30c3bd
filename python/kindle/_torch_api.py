"""Top-level names PyTorch programs touch at start-up: constants, memory formats and layouts,
finfo/iinfo, the default device, precision and determinism switches, and the Tensor methods
with PyTorch's Python-level argument forms (new_zeros(2, 3), cuda(), contiguous(memory_format=))."""
import math as _math

import numpy as _np

from . import _C
from ._legacy import _type_name, tensor_type
from .nn.modules.module import _device_arg

__all__ = [
    "broadcast_shapes", "is_complex", "is_nonzero", "is_same_size", "isreal", "conj", "conj_physical",
    "resolve_conj", "resolve_neg", "is_conj", "is_neg",
    "pi", "e", "inf", "nan", "newaxis", "memory_format", "contiguous_format", "channels_last",
    "channels_last_3d", "preserve_format", "layout", "strided", "sparse_coo", "sparse_csr", "finfo",
    "iinfo", "typename", "get_default_device", "set_default_device", "set_float32_matmul_precision",
    "get_float32_matmul_precision", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
    "get_deterministic_debug_mode", "_assert", "is_storage", "set_printoptions", "tensordot", "nonzero", "gradient",
    "get_num_interop_threads", "set_num_interop_threads", "init_num_threads", "set_warn_always",
    "is_warn_always_enabled", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
    "set_flush_denormal", "has_lapack", "has_mkl", "has_openmp", "has_spectral", "compiled_with_cxx11_abi",
    "is_vulkan_available", "set_default_tensor_type", "legacy_contiguous_format", "SymInt", "SymFloat", "SymBool",
    "to_dlpack", "DisableTorchFunction", "DisableTorchFunctionSubclass", "GradScaler", "Future",
    "einsum", "randint_like",
]

pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan
newaxis = None


class memory_format:  # noqa: N801
    """A memory format tag (kindle.contiguous_format, kindle.channels_last, ...). channels_last
    (channels_last_3d) lays a 4-d (5-d) tensor out with the channels innermost, as torch does;
    Kindle's kernels accept any strides, and their results are row-major."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
legacy_contiguous_format = contiguous_format  # torch's internal alias of contiguous_format


class layout:  # noqa: N801
    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")


class finfo:  # noqa: N801
    """Machine limits of a floating-point dtype, as torch.finfo."""

    _BF16 = dict(bits=16, eps=0.0078125, max=3.3895313892515355e38, min=-3.3895313892515355e38,
                 tiny=1.1754943508222875e-38, resolution=0.01)

    def __init__(self, type=None):  # noqa: A002
        from . import get_default_dtype
        dtype = get_default_dtype() if type is None else type
        if isinstance(dtype, _C.dtype) and dtype.is_complex:  # a complex dtype's limits are its parts'
            dtype = {_C.complex64: _C.float32, _C.complex128: _C.float64}[dtype]
        if not isinstance(dtype, _C.dtype) or not dtype.is_floating_point:
            raise TypeError(f"finfo(): argument 'type' must be a floating point dtype, but got {dtype}")
        self.dtype = str(dtype).split(".")[-1]
        if dtype == _C.bfloat16:
            v = self._BF16
        else:
            f = _np.finfo({_C.float16: _np.float16, _C.float32: _np.float32, _C.float64: _np.float64}[dtype])
            v = dict(bits=f.bits, eps=float(f.eps), max=float(f.max), min=float(f.min),
                     tiny=float(f.tiny), resolution=float(f.resolution))
        for k, val in v.items():
            setattr(self, k, val)
        self.smallest_normal = self.tiny

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:e}, max={self.max:e}, eps={self.eps}, "
                f"smallest_normal={self.smallest_normal:e}, tiny={self.tiny:e}, dtype={self.dtype})")


class iinfo:  # noqa: N801
    """Machine limits of an integer dtype, as torch.iinfo."""

    def __init__(self, type):  # noqa: A002
        np_type = {_C.int8: _np.int8, _C.int16: _np.int16, _C.int32: _np.int32, _C.int64: _np.int64,
                   _C.uint8: _np.uint8}.get(type) if isinstance(type, _C.dtype) else None
        if np_type is None:
            raise TypeError(f"iinfo(): argument 'type' must be an integer dtype, but got {type}")
        i = _np.iinfo(np_type)
        self.bits, self.min, self.max = i.bits, int(i.min), int(i.max)
        self.dtype = str(type).split(".")[-1]

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def typename(obj):
    """The type name of obj: a tensor's legacy type name ('torch.FloatTensor'), else the
    qualified class name."""
    if isinstance(obj, _C.Tensor):
        return _type_name(obj.dtype)
    cls = obj if isinstance(obj, type) else type(obj)
    module = cls.__module__
    return cls.__qualname__ if module in (None, "builtins") else f"{module}.{cls.__qualname__}"


def is_storage(obj):  # noqa: ARG001
    return False  # Kindle exposes no separate storage objects


def get_default_device():
    from . import device
    d = _C._get_default_device()
    return d if d is not None else device("cpu")


def set_default_device(device):
    """The device factories use when none is given (None: the CPU), as torch's."""
    _C._set_default_device(_device_arg(device))


_matmul_precision = "highest"


def set_float32_matmul_precision(precision):
    """Accepted as torch accepts it; Kindle's CPU matmul always computes in full float32."""
    global _matmul_precision
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision '{precision}': expected one of 'highest', 'high', 'medium'")
    _matmul_precision = precision


def get_float32_matmul_precision():
    return _matmul_precision


_deterministic = [False, False]  # [enabled, warn_only]
_debug_mode = 0


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Kindle's kernels are deterministic (results do not depend on thread count or run), so
    this records the setting and changes nothing."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool, but got {type(mode).__name__}")
    _deterministic[0], _deterministic[1] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _deterministic[0]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic[1]


def set_deterministic_debug_mode(debug_mode):
    global _debug_mode
    modes = {"default": 0, "warn": 1, "error": 2}
    _debug_mode = modes[debug_mode] if isinstance(debug_mode, str) else int(debug_mode)
    use_deterministic_algorithms(_debug_mode > 0, warn_only=_debug_mode == 1)


def get_deterministic_debug_mode():
    return _debug_mode


# ---- runtime switches torch has: Kindle runs ops on one intra-op pool (no inter-op pool), warns
# as Python's warnings filters say, and leaves denormals to the hardware default.

_interop_threads = [None]


def get_num_interop_threads():
    """Kindle runs each op on the intra-op pool; the inter-op setting is kept for code that reads it."""
    return _interop_threads[0] or _C.get_num_threads()


def set_num_interop_threads(num):
    if not isinstance(num, int) or num <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")  # torch's message
    if _interop_threads[0] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _interop_threads[0] = num


def init_num_threads():
    """A no-op: Kindle's pool starts on first use."""


_warn_always = [False]


def set_warn_always(b):
    _warn_always[0] = bool(b)


def is_warn_always_enabled():
    return _warn_always[0]


def is_anomaly_enabled():
    return _C._is_anomaly_enabled()


def is_anomaly_check_nan_enabled():
    return _C._is_anomaly_check_nan_enabled()


def set_anomaly_enabled(enabled, check_nan=True):
    _C._set_anomaly_enabled(bool(enabled), bool(check_nan))


def set_flush_denormal(mode):  # noqa: ARG001
    """False: Kindle does not switch the CPU's denormal mode (torch returns False where unsupported)."""
    return False


has_lapack = has_mkl = has_openmp = has_spectral = True


def compiled_with_cxx11_abi():
    return True


def is_vulkan_available():
    return False


def set_default_tensor_type(t):
    """The deprecated switch: a CPU floating tensor type sets the default dtype; CUDA types raise."""
    import warnings
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    name = name.split(".")[-1] if isinstance(t, str) else name
    if isinstance(t, str) and ".cuda." in t:
        raise RuntimeError("set_default_tensor_type: no CUDA device: Kindle was built without CUDA")
    from . import set_default_dtype
    dtypes = {"FloatTensor": _C.float32, "DoubleTensor": _C.float64, "HalfTensor": _C.float16,
              "BFloat16Tensor": _C.bfloat16}
    if name not in dtypes:
        raise TypeError(f"only floating-point types are supported as the default type, got {t}")
    set_default_dtype(dtypes[name])


class _SymbolicNumber:
    """torch.SymInt/SymFloat/SymBool: Kindle traces nothing symbolically, so no value is one;
    code that checks isinstance(x, torch.SymInt) takes its concrete-number branch."""

    def __init__(self, *args, **kwargs):  # noqa: ARG002
        raise TypeError(f"{type(self).__name__}: Kindle has no symbolic shapes")


class SymInt(_SymbolicNumber):
    pass


class SymFloat(_SymbolicNumber):
    pass


class SymBool(_SymbolicNumber):
    pass


def to_dlpack(tensor):
    return tensor.__dlpack__()


DisableTorchFunction = _C.DisableTorchFunction
DisableTorchFunctionSubclass = _C.DisableTorchFunctionSubclass


def __getattr__(name):
    if name == "GradScaler":
        from .amp import GradScaler
        return GradScaler
    if name == "Future":
        from .futures import Future
        return Future
    raise AttributeError(name)


def _assert(condition, message):
    """torch._assert: an assert that symbolic tracing can record."""
    if not condition:
        raise AssertionError(message)


def _sublist_subscripts(sub):
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, int) and 0 <= s < len(letters):
            out.append(letters[s])
        else:
            raise ValueError(f"einsum(): subscript in subscript list is not within the valid range [0, 52): {s!r}")
    return "".join(out)


def einsum(*args, **kwargs):
    """torch.einsum: einsum("ij,jk->ik", a, b), or the sublist format einsum(a, [0, 1], b, [1, 2], [0, 2])
    (operands each followed by its subscripts as ints in [0, 52) or Ellipsis; an optional output
    sublist last)."""
    if not args or isinstance(args[0], str):
        return _C.einsum(*args, **kwargs)
    if len(args) < 2:
        raise TypeError("einsum(): must specify the equation string and at least one operand, or at least one "
                        "operand and its subscripts list")
    pairs = args if len(args) % 2 == 0 else args[:-1]
    eq = ",".join(_sublist_subscripts(s) for s in pairs[1::2])
    if len(args) % 2 == 1:
        eq += "->" + _sublist_subscripts(args[-1])
    return _C.einsum(eq, *pairs[0::2], **kwargs)


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None, requires_grad=False,  # noqa: A002
                 memory_format=None):
    """torch.randint_like(input, high) or (input, low, high)."""
    if high is None:
        low, high = 0, low
    return _C.randint_like(input, low, high, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad,
                           memory_format=memory_format)


_PRINT_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, float("inf"), 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """How tensors print, as torch.set_printoptions: a profile ("default", "short", "full") first,
    then each option given; sci_mode=None lets the values choose (the options not given keep their
    current value, except sci_mode, which torch also resets to None when it is not given)."""
    cur = list(_C._get_printoptions())
    if profile is not None:
        if profile not in _PRINT_PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r} (default, short or full)")
        cur[:4] = _PRINT_PROFILES[profile]
    for i, v in enumerate((precision, threshold, edgeitems, linewidth)):
        if v is not None:
            cur[i] = v
    _C._set_printoptions(int(cur[0]), float(cur[1]), int(cur[2]), int(cur[3]),
                         None if sci_mode is None else bool(sci_mode))


def get_printoptions():
    precision, threshold, edgeitems, linewidth, sci_mode = _C._get_printoptions()
    return {"precision": precision, "threshold": threshold, "edgeitems": edgeitems, "linewidth": linewidth,
            "sci_mode": sci_mode}


# --- Tensor methods with PyTorch's Python-level argument forms ---------------------------------

def _sizes(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return list(size[0])
    return list(size)


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _make_new(name):
    c_method = getattr(_C.Tensor, name)

    def new(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False,  # noqa: ARG001
            **size_kw):
        if size_kw:  # torch's keyword form: x.new_ones(size=(2, 3))
            if size or set(size_kw) != {"size"}:
                raise TypeError(f"{name}() got an unexpected keyword argument "
                                f"'{next(k for k in size_kw if k != 'size') if set(size_kw) - {'size'} else 'size'}'")
            size = (size_kw["size"],)
        return _finish(c_method(self, _sizes(size), dtype, _device_arg(device)), requires_grad)
    new.__name__ = name
    return new


def _make_new_full(c_new_full):
    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,  # noqa: ARG001
                 pin_memory=False):  # noqa: ARG001
        return _finish(c_new_full(self, list(size), fill_value, dtype, _device_arg(device)), requires_grad)
    return new_full


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):  # noqa: ARG001
    if isinstance(data, _C.Tensor):
        t = data.detach().clone().to(dtype or data.dtype)
    else:
        t = _C.tensor(data, dtype=dtype or self.dtype, device="cpu")
    device = _device_arg(device) or str(self.device)  # (self's device by default, as torch's)
    return _finish(t if str(t.device) == device else t.to(device), requires_grad)


def _cuda(self, device=None, non_blocking=False, memory_format=None):  # noqa: ARG001
    if not _C._cuda_is_built():
        raise AssertionError("Torch not compiled with CUDA enabled (Kindle was built without a CUDA backend; only "
                             "cpu is available)")
    if not _C._cuda_is_available():
        raise RuntimeError("cuda(): Found no NVIDIA driver on your system: this machine has no GPU (only cpu is "
                           "available)")
    target = "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device)
    return self.to(target, non_blocking=non_blocking)


def _record_stream(self, stream):
    _C._cuda_record_stream(self, stream.cuda_stream, stream._device)


def _with_memory_format(c_method):
    """contiguous / clone with memory_format= (is_contiguous and to take it in C++)."""
    name = c_method.__name__

    def method(self, memory_format=None):
        if memory_format is None:
            return c_method(self)  # clone keeps a dense tensor's strides (preserve_format)
        if not isinstance(memory_format, globals()["memory_format"]):
            raise TypeError(f"{name}(): argument 'memory_format' must be torch.memory_format, not "
                            f"{type(memory_format).__name__}")
        fmt = memory_format._name
        if fmt == "preserve_format":
            if name == "contiguous":
                raise RuntimeError("contiguous: preserve memory format is unsupported by the contiguous operator")
            return c_method(self)
        if fmt == "contiguous_format":
            return self.contiguous() if name == "clone" and not self.is_contiguous() else c_method(self)
        if name == "contiguous" and self.is_contiguous(memory_format=memory_format):
            return self
        return self.to(memory_format=memory_format, copy=True)
    method.__name__ = name
    return method


def tensordot(a, b, dims=2, out=None):
    """torch.tensordot: dims is a count (the last `dims` of a with the first of b), a pair of
    dimension lists, or a tensor holding either."""
    if hasattr(dims, "tolist"):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.dim() or dims > b.dim():
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a pair of dimension lists")
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    return _C.tensordot(a, b, da, db, out=out)


def gradient(input, *, spacing=1, dim=None, edge_order=1):  # noqa: A002
    """torch.gradient: one tensor of estimated derivatives per dimension in `dim` (all by
    default). spacing is a number for every dimension, or one per dimension: a number (uniform
    spacing) or a 1-D tensor of coordinates. The differences are computed by the core."""
    dims = list(range(input.dim())) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            what = (f"'self.dim() = {input.dim()}', since dim argument was not given" if dim is None
                    else f"'len(dim) = {len(dims)}'")
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"equal to {what}, but got a list of length {len(spacing)}")
        per_dim = list(spacing)
    else:
        per_dim = [spacing] * len(dims)
    out = []
    for d, sp in zip(dims, per_dim):
        if isinstance(sp, _C.Tensor) and sp.dim() > 0:
            out.append(_C._gradient_along(input, d, sp, 1.0, edge_order))
        else:
            out.append(_C._gradient_along(input, d, None, float(sp), edge_order))
    return tuple(out)


_c_nonzero = _C.nonzero


def nonzero(input, *, out=None, as_tuple=False):  # noqa: A002
    """torch.nonzero; as_tuple=True gives one index tensor per dimension (as torch.where(c))."""
    if as_tuple:
        return _C.where(input)
    return _c_nonzero(input, out=out)


def _nonzero_method(self, *, as_tuple=False):
    return _C.where(self) if as_tuple else _c_nonzero(self)


# Complex numbers: conj copies (Kindle has no lazy conjugate or negative bit), so is_conj and
# is_neg are always False; real and imag are views, settable as attributes as in torch.
def is_complex(input):  # noqa: A002
    return input.is_complex()


def is_conj(input):  # noqa: A002
    return False


def is_neg(input):  # noqa: A002
    return False


# For a real tensor these return the tensor object itself, as torch does.
def conj(input):  # noqa: A002
    return _C.conj(input) if input.is_complex() else input


def conj_physical(input, *, out=None):  # noqa: A002
    return write_out(out, _C.conj(input) if input.is_complex() else input)


def resolve_conj(input):  # noqa: A002
    return input


resolve_neg = resolve_conj


def isreal(input):  # noqa: A002
    if input.is_complex():
        return _C.imag(input) == 0
    return _C.ones_like(input, dtype=_C.bool)


def is_nonzero(input):  # noqa: A002
    if input.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with " + ("no values" if input.numel() == 0 else
                                                               "more than one value") + " is ambiguous")
    return bool(input.reshape(()).item() != 0)


def is_same_size(input, other):  # noqa: A002
    return tuple(input.shape) == tuple(other.shape)


def _real(self):
    return _C.real(self) if self.is_complex() else self


def _set_real(self, value):
    _C.real(self).copy_(value)


def _set_imag(self, value):
    _C.imag(self).copy_(value)


def install_tensor_methods(Tensor):
    for name, fn in (("conj", conj), ("conj_physical", conj), ("resolve_conj", resolve_conj),
                     ("resolve_neg", resolve_neg)):
        setattr(Tensor, name, fn)
    for name, fn in (("is_conj", is_conj), ("is_neg", is_neg), ("isreal", isreal), ("is_nonzero", is_nonzero),
                     ("is_same_size", is_same_size)):
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    if not hasattr(Tensor, "real"):
        Tensor.real = property(_real, _set_real)
        Tensor.imag = property(_C.imag, _set_imag)
    Tensor.nonzero = _nonzero_method
    for name in ("new_zeros", "new_ones", "new_empty"):
        setattr(Tensor, name, _make_new(name))
    Tensor.new_full = _make_new_full(Tensor.new_full)
    Tensor.new_tensor = _new_tensor
    Tensor.cuda = _cuda
    Tensor.record_stream = _record_stream
    Tensor.type = tensor_type
    Tensor.contiguous = _with_memory_format(Tensor.contiguous)
    Tensor.clone = _with_memory_format(Tensor.clone)
    for name, value in (("is_mps", False), ("is_xpu", False), ("is_meta", False), ("is_quantized", False),
                        ("layout", strided)):
        if not hasattr(Tensor, name):
            setattr(Tensor, name, property(lambda self, v=value: v))


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (torch.broadcast_shapes); ints count as 1-d shapes."""
    ndim = 0
    norm = []
    for s in shapes:
        s = (s,) if isinstance(s, int) else tuple(s)
        for d in s:
            if not isinstance(d, int) or isinstance(d, bool):
                raise TypeError(f"broadcast_shapes: expected ints in the shapes, got {d!r}")
            if d < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {d}: {list(s)}")
        norm.append(s)
        ndim = max(ndim, len(s))
    out = [1] * ndim
    for s in norm:
        for i, d in enumerate(s, ndim - len(s)):
            if d == 1 or d == out[i]:
                continue
            if out[i] != 1:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is "
                                   f"between {list(s)} and {out}.")
            out[i] = d
    from . import Size
    return Size(out)


def write_out(out, r):
    """`out=` for the Python-level functions: r (a tensor or a tuple of them) copied into out,
    resized to r's shape as torch resizes; out itself (or a tuple of its tensors) returned."""
    if out is None:
        return r
    if isinstance(r, tuple):
        for o, v in zip(out, r):
            write_out(o, v)
        return type(r)(*out)
    if out.shape != r.shape:
        out.resize_(r.shape)
    return out.copy_(r)
