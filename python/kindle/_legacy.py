"""PyTorch's legacy tensor constructors and type names.

kindle.Tensor(2, 3), kindle.Tensor([1, 2]), kindle.FloatTensor(...), x.type('torch.LongTensor'),
isinstance(x, kindle.LongTensor): old code (and code written against old tutorials) uses these
everywhere, e.g. nn.Parameter(torch.Tensor(out_features)) followed by an init function.
"""
from . import _C

__all__ = ["tensor_new", "legacy_type_classes", "tensor_type"]

_INT = int


def _is_size(args):
    return all(isinstance(a, _INT) and not isinstance(a, bool) for a in args)


def _new(dtype, args, device=None):
    """The forms torch.Tensor / torch.<T>Tensor accept: (), (*sizes), (Size), (sequence), (tensor)."""
    if device is not None:
        from . import device as _device_cls
        d = _device_cls(device)
        if d.type != "cpu":
            raise RuntimeError(f"legacy constructor: Kindle was built without support for device '{d}' "
                               "(only cpu is available)")
    from . import Size
    if len(args) == 0:
        return _C.empty(0, dtype=dtype)
    if len(args) == 1:
        a = args[0]
        if isinstance(a, _C.Tensor):
            if a.dtype != dtype:
                raise TypeError(f"expected {_type_name(dtype)} (got {_type_name(a.dtype)})")
            return a.detach()  # shares a's storage, as torch's legacy constructor does
        if isinstance(a, Size):
            return _C.empty(list(a), dtype=dtype)
        if isinstance(a, (float, complex, bool)) or (isinstance(a, str)):
            raise TypeError(f"new(): data must be a sequence (got {type(a).__name__})")
        if not isinstance(a, _INT):
            return _C.tensor(a, dtype=dtype)
    if not _is_size(args):
        bad = next(a for a in args if not (isinstance(a, _INT) and not isinstance(a, bool)))
        raise TypeError(f"new() received an invalid combination of arguments: expected sizes as ints, "
                        f"but got an argument of type {type(bad).__name__}")
    for s in args:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(args)}")
    return _C.empty(list(args), dtype=dtype)


def tensor_new(*args, device=None):
    """kindle.Tensor(...): the legacy constructor, in the default dtype."""
    return _new(_C.get_default_dtype(), args, device)


_TYPE_NAMES = {
    "FloatTensor": _C.float32, "DoubleTensor": _C.float64, "HalfTensor": _C.float16,
    "BFloat16Tensor": _C.bfloat16, "CharTensor": _C.int8, "ShortTensor": _C.int16,
    "IntTensor": _C.int32, "LongTensor": _C.int64, "ByteTensor": _C.uint8, "BoolTensor": _C.bool,
}
_NAME_OF = {v: k for k, v in _TYPE_NAMES.items()}


# The module name in type names and reprs: "torch" once kindle.install_as_torch() has run, so
# that x.type() == 'torch.FloatTensor' holds and torch.Size([2, 3]), torch.float32 and
# tensor(..., dtype=torch.int64) print as PyTorch prints them in a program run on Kindle.
type_prefix = "kindle"
_tensor_repr = _C.Tensor.__repr__  # the core's repr, which spells dtypes "kindle.<name>"


def _dtype_repr(dtype):
    return f"{type_prefix}.{dtype.__reduce__()}"


def _torch_tensor_repr(self):
    return _tensor_repr(self).replace("dtype=kindle.", "dtype=torch.")


def set_type_prefix(prefix):
    """Spell type names and reprs with `prefix` ("kindle" or "torch")."""
    global type_prefix
    if prefix not in ("kindle", "torch"):
        raise ValueError(f"set_type_prefix: expected 'kindle' or 'torch', got {prefix!r}")
    type_prefix = prefix
    _C.dtype.__repr__ = _dtype_repr
    # Only a program run as PyTorch pays for the rewrite of the core's tensor repr.
    _C.Tensor.__repr__ = _tensor_repr if prefix == "kindle" else _torch_tensor_repr
    _C.Tensor.__module__ = prefix


def _type_name(dtype):
    return f"{type_prefix}.{_NAME_OF[dtype]}"


class _LegacyTensorType(type):
    """The metaclass of kindle.FloatTensor and friends: calling one constructs, isinstance checks
    the dtype, as torch's tensor type objects do."""

    def __call__(cls, *args, device=None):
        return _new(cls.dtype, args, device)

    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Tensor) and obj.dtype == cls.dtype and obj.device.type == "cpu"

    def __repr__(cls):
        return f"<class '{type_prefix}.{cls.__name__}'>"


def legacy_type_classes():
    """{name: class} for kindle.FloatTensor, kindle.LongTensor, ..."""
    return {name: _LegacyTensorType(name, (), {"dtype": dt, "is_cuda": False, "__module__": "kindle"})
            for name, dt in _TYPE_NAMES.items()}


def _parse_type(t):
    if isinstance(t, _LegacyTensorType):
        return t.dtype
    if isinstance(t, _C.dtype):
        return t
    if isinstance(t, str):
        parts = t.split(".")
        if len(parts) == 2 and parts[0] in ("torch", "kindle") and parts[1] in _TYPE_NAMES:
            return _TYPE_NAMES[parts[1]]
        if len(parts) == 3 and parts[1] == "cuda" and parts[2] in _TYPE_NAMES:
            raise RuntimeError(f"type(): Kindle was built without CUDA; '{t}' needs a CUDA device")
        raise ValueError(f"invalid type: '{t}'")
    raise TypeError(f"type(): expected a dtype, a type name string or a tensor type, but got {type(t).__name__}")


def tensor_type(self, dtype=None, non_blocking=False, **kwargs):
    """Tensor.type(): the legacy type name with no argument; a conversion given a dtype, a name
    such as 'torch.LongTensor', or a type such as kindle.LongTensor."""
    if dtype is None:
        return _type_name(self.dtype)
    return self.to(_parse_type(dtype))
