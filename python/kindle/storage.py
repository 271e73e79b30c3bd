"""kindle.storage (torch.storage): the memory behind tensors, as PyTorch exposes it.

An UntypedStorage is a byte tensor over a whole storage (or a byte slice of one), so storages
share memory with every tensor viewing them and free it by reference counting like tensors do.
TypedStorage (`tensor.storage()`, torch.FloatStorage and the other legacy classes) adds a dtype.
Tensor.set_ points a tensor at part of a storage after checking that the geometry stays inside
it. Kindle's storages keep their size: resize_ to another size raises (PyTorch would move the
memory under every tensor that views it)."""
import warnings

from . import _C, _legacy

__all__ = ["UntypedStorage", "TypedStorage"]


def _typename(cls_name):
    return f"{_legacy.type_prefix}.storage.{cls_name}"


def _elements_str(values, info):
    return " " + "\n ".join(str(v) for v in values) + "\n" + info


class UntypedStorage:
    """Bytes: UntypedStorage(), UntypedStorage(nbytes), UntypedStorage([byte, ...]); usually
    tensor.untyped_storage()."""

    is_sparse = False
    is_sparse_csr = False

    def __init__(self, *args, device=None):
        if len(args) > 1:
            raise TypeError(f"UntypedStorage(): expected at most one argument, got {len(args)}")
        arg = args[0] if args else 0
        if isinstance(arg, int) and not isinstance(arg, bool):
            if arg < 0:
                raise RuntimeError(f"UntypedStorage(): size must be non-negative, got {arg}")
            self._bytes = _C.empty(arg, dtype=_C.uint8, device=device)
        elif isinstance(arg, (list, tuple)):
            bad = [v for v in arg if not isinstance(v, int) or not 0 <= v <= 255]
            if bad:
                raise RuntimeError(f"UntypedStorage(): expected a sequence of bytes (integers in [0, 255]), got "
                                   f"{bad[0]!r}")
            self._bytes = _C.tensor(list(arg), dtype=_C.uint8, device=device)
        else:
            raise TypeError(f"UntypedStorage(): expected a size or a sequence of bytes, got {type(arg).__name__}")

    @classmethod
    def _wrap(cls, byte_tensor):
        s = cls.__new__(cls)
        s._bytes = byte_tensor
        return s

    # ---- what it is
    @property
    def device(self):
        return self._bytes.device

    @property
    def is_cuda(self):
        return self._bytes.is_cuda

    @property
    def is_hpu(self):
        return False

    @property
    def dtype(self):
        return _C.uint8

    def nbytes(self):
        return self._bytes.numel()

    def size(self):
        return self.nbytes()

    def __len__(self):
        return self.nbytes()

    def element_size(self):
        return 1

    def data_ptr(self):
        return self._bytes.data_ptr()

    def type(self):
        return _typename("UntypedStorage")

    def untyped(self):
        return self

    def get_device(self):
        return self._bytes.get_device()

    def is_shared(self):
        return self._bytes.is_shared()

    def share_memory_(self):
        self._bytes.share_memory_()
        return self

    def is_pinned(self, device="cuda"):  # noqa: ARG002
        return False

    def pin_memory(self, device="cuda"):  # noqa: ARG002
        raise RuntimeError("pin_memory: Kindle has no accelerator to pin host memory for")

    # ---- elements
    def __getitem__(self, idx):
        if isinstance(idx, slice):
            if idx.step not in (None, 1):
                raise RuntimeError(f"UntypedStorage: slices with a step are not supported, got step {idx.step}")
            return UntypedStorage._wrap(self._bytes[idx])
        return int(self._bytes[idx])

    def __setitem__(self, idx, value):
        self._bytes[idx] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        return self._bytes.tolist()

    def fill_(self, value):
        self._bytes.fill_(value)
        return self

    def copy_(self, source, non_blocking=None):  # noqa: ARG002
        src = source.untyped() if isinstance(source, TypedStorage) else source
        if not isinstance(src, UntypedStorage):
            raise TypeError(f"copy_(): expected a storage, got {type(source).__name__}")
        if src.nbytes() != self.nbytes():
            raise RuntimeError(f"copy_(): size mismatch: this storage holds {self.nbytes()} bytes, the source "
                               f"{src.nbytes()}")
        self._bytes.copy_(src._bytes)
        return self

    def clone(self):
        return UntypedStorage._wrap(self._bytes.clone())

    def cpu(self):
        return self if self.device.type == "cpu" else UntypedStorage._wrap(self._bytes.cpu())

    def to(self, *, device, non_blocking=False):
        return UntypedStorage._wrap(self._bytes.to(device=device, non_blocking=non_blocking))

    def resize_(self, size):
        if size != self.nbytes():
            raise RuntimeError(f"UntypedStorage.resize_: Kindle's storages keep their size (tensors that view this "
                               f"one would point outside it); asked for {size} bytes, it holds {self.nbytes()}")
        return self

    def __repr__(self):
        return _elements_str(self.tolist(), f"[{_typename('UntypedStorage')}(device={self.device}) of size "
                                            f"{len(self)}]")

    __str__ = __repr__

    def __reduce__(self):
        return UntypedStorage, (self.tolist(),)

    def __sizeof__(self):
        return super().__sizeof__() + self.nbytes()


class TypedStorage:
    """A storage seen as elements of one dtype: tensor.storage(), or TypedStorage(size or
    sequence, dtype=..., device=...), or TypedStorage(wrap_storage=untyped, dtype=...)."""

    is_sparse = False

    def __init__(self, *args, wrap_storage=None, dtype=None, device=None, _internal=False):  # noqa: ARG002
        dt = dtype if dtype is not None else _C.get_default_dtype()
        if wrap_storage is not None:
            if args or device is not None:
                raise RuntimeError("TypedStorage(): with wrap_storage, no positional arguments or device are accepted")
            if not isinstance(wrap_storage, UntypedStorage):
                raise TypeError(f"TypedStorage(): argument 'wrap_storage' must be UntypedStorage, not "
                                f"{type(wrap_storage).__name__}")
            self._untyped_storage = wrap_storage
        elif len(args) > 1:
            raise TypeError(f"TypedStorage(): expected at most one positional argument, got {len(args)}")
        else:
            arg = args[0] if args else 0
            if isinstance(arg, int) and not isinstance(arg, bool):
                if arg < 0:
                    raise RuntimeError(f"TypedStorage(): size must be non-negative, got {arg}")
                t = _C.empty(arg, dtype=dt, device=device)
            elif isinstance(arg, (list, tuple)):
                t = _C.tensor(list(arg), dtype=dt, device=device)
            else:
                raise TypeError(f"TypedStorage(): expected a size or a sequence, got {type(arg).__name__}")
            self._untyped_storage = UntypedStorage._wrap(_C._storage_bytes(t))
        self._dtype = dt

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._untyped_storage.device

    @property
    def is_cuda(self):
        return self._untyped_storage.is_cuda

    def _tensor(self):
        """A 1-D tensor of this dtype over every whole element of the storage."""
        return _set_(_C.empty(0, dtype=self._dtype, device=self.device), self._untyped_storage, 0, [self.size()])

    def size(self):
        return self._untyped_storage.nbytes() // self.element_size()

    def __len__(self):
        return self.size()

    def nbytes(self):
        return self.size() * self.element_size()

    def element_size(self):
        return self._dtype.itemsize

    def data_ptr(self):
        return self._untyped_storage.data_ptr()

    def untyped(self):
        return self._untyped_storage

    def get_device(self):
        return self._untyped_storage.get_device()

    def type(self, dtype=None, non_blocking=False):  # noqa: ARG002
        if dtype is None:
            return f"{_legacy.type_prefix}.{LEGACY_NAME[self._dtype]}"
        return self._to(dtype)

    def pickle_storage_type(self):
        return LEGACY_NAME[self._dtype]

    def is_shared(self):
        return self._untyped_storage.is_shared()

    def share_memory_(self):
        self._untyped_storage.share_memory_()
        return self

    def is_pinned(self, device="cuda"):  # noqa: ARG002
        return False

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        n = self.size()
        if not isinstance(idx, int) or isinstance(idx, bool):
            raise RuntimeError(f"can't index a {self.type()} with {type(idx).__name__}")
        if not -n <= idx < n:
            raise IndexError(f"index {idx} out of range for storage of size {n}")
        return self._tensor()[idx].item()

    def __setitem__(self, idx, value):
        self._tensor()[idx] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        return self._tensor().tolist()

    def fill_(self, value):
        self._tensor().fill_(value)
        return self

    def copy_(self, source, non_blocking=None):  # noqa: ARG002
        if isinstance(source, TypedStorage):
            if source.size() != self.size():
                raise RuntimeError(f"copy_(): size mismatch: {self.size()} elements here, {source.size()} in the "
                                   f"source")
            self._tensor().copy_(source._tensor())
        else:
            self._untyped_storage.copy_(source)
        return self

    def clone(self):
        return TypedStorage(wrap_storage=self._untyped_storage.clone(), dtype=self._dtype)

    def cpu(self):
        return self if self.device.type == "cpu" else TypedStorage(wrap_storage=self._untyped_storage.cpu(),
                                                                   dtype=self._dtype)

    def to(self, *, device, non_blocking=False):
        return TypedStorage(wrap_storage=self._untyped_storage.to(device=device, non_blocking=non_blocking),
                            dtype=self._dtype)

    def resize_(self, size):
        self._untyped_storage.resize_(size * self.element_size())
        return self

    def _to(self, dtype):
        if dtype == self._dtype:
            return self
        t = self._tensor().to(dtype)
        return TypedStorage(wrap_storage=UntypedStorage._wrap(_C._storage_bytes(t)), dtype=dtype)

    def __repr__(self):
        info = (f"[{_typename('TypedStorage')}(dtype={self._dtype}, device={self.device}) of size "
                f"{len(self)}]")
        return _elements_str(self.tolist(), info)

    __str__ = __repr__

    def __reduce__(self):
        return _rebuild_typed, (self.tolist(), self._dtype)


def _rebuild_typed(values, dtype):
    return TypedStorage(values, dtype=dtype)


_CONVERSIONS = {"double": "float64", "float": "float32", "half": "float16", "bfloat16": "bfloat16",
                "long": "int64", "int": "int32", "short": "int16", "char": "int8", "byte": "uint8", "bool": "bool",
                "complex_float": "complex64", "complex_double": "complex128"}
for _name, _dt in _CONVERSIONS.items():
    setattr(TypedStorage, _name, (lambda dt: lambda self: self._to(getattr(_C, dt)))(_dt))

_LEGACY = {"DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
           "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16",
           "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
           "ComplexDoubleStorage": "complex128"}
# (also the class names torch's pickles refer to: _pickle_save.py and _torch_pickle.py use this table)
LEGACY_NAME = {getattr(_C, dt): name for name, dt in _LEGACY.items()}


class _LegacyStorageMeta(type):
    """torch.FloatStorage and friends: calling one makes a TypedStorage of its dtype, and
    isinstance(s, FloatStorage) asks whether s is a TypedStorage of that dtype."""

    def __call__(cls, *args, wrap_storage=None, device=None):
        if wrap_storage is not None:
            return TypedStorage(wrap_storage=wrap_storage, dtype=cls.dtype)
        return TypedStorage(*args, dtype=cls.dtype, device=device)

    def __instancecheck__(cls, obj):
        return isinstance(obj, TypedStorage) and obj.dtype == cls.dtype

    def __repr__(cls):
        return f"<class '{_legacy.type_prefix}.{cls.__name__}'>"


def _legacy_class(name, dt):
    cls = _LegacyStorageMeta(name, (), {"dtype": getattr(_C, dt), "__module__": "kindle"})
    cls.from_buffer = classmethod(lambda c, *a, **k: _from_buffer(*a, dtype=c.dtype, **k))
    return cls


def _from_buffer(buffer, byte_order="native", count=-1, offset=0, *, dtype):
    import numpy as np
    if byte_order not in ("native", "little", "big"):
        raise ValueError(f"from_buffer: byte_order must be 'native', 'little' or 'big', got {byte_order!r}")
    np_dt = np.dtype(str(dtype).split(".")[-1] if dtype != _C.bool else "bool")
    if byte_order != "native":
        np_dt = np_dt.newbyteorder("<" if byte_order == "little" else ">")
    arr = np.frombuffer(buffer, dtype=np_dt, count=count, offset=offset).astype(np_dt.newbyteorder("="))
    return TypedStorage(arr.tolist(), dtype=dtype)


LEGACY_CLASSES = {name: _legacy_class(name, dt) for name, dt in _LEGACY.items()}


# ---- the Tensor methods

_warned_typed = [False]


def _untyped_storage(self):
    return UntypedStorage._wrap(_C._storage_bytes(self))


def _storage(self):
    if not _warned_typed[0]:
        _warned_typed[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the "
                      "only storage class. This should only matter to you if you are using storages directly.  To "
                      "access UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=2)
    return TypedStorage(wrap_storage=_untyped_storage(self), dtype=self.dtype)


def _storage_type(self):
    return LEGACY_CLASSES[LEGACY_NAME[self.dtype]]


def contiguous_strides(shape):
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return tuple(reversed(strides))


def _set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Points self at source: another tensor's memory and geometry, or a storage (all of it, or
    size / stride from storage_offset), or nothing (set_() leaves an empty tensor)."""
    if source is None:
        _C._set_storage(self, _C.empty(0, dtype=_C.uint8, device=self.device), 0, [0], [1])
        return self
    if isinstance(source, _C.Tensor):
        if source.dtype != self.dtype:
            raise RuntimeError(f"set_: could not set a tensor of dtype {self.dtype} to one of dtype {source.dtype}")
        _C._set_storage(self, _C._storage_bytes(source), source.storage_offset(), list(source.shape),
                        list(source.stride()))
        return self
    if isinstance(source, TypedStorage):
        if source.dtype != self.dtype:
            raise RuntimeError(f"set_: could not set a tensor of dtype {self.dtype} to a storage of dtype "
                               f"{source.dtype}")
        source = source.untyped()
    if not isinstance(source, UntypedStorage):
        raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not {type(source).__name__}")
    item = self.dtype.itemsize
    if size is None:
        size = [source.nbytes() // item - storage_offset]
    size = [int(s) for s in size]
    stride = list(contiguous_strides(size)) if stride is None else [int(s) for s in stride]
    _C._set_storage(self, source._bytes, storage_offset, size, stride)  # checks that the geometry fits
    return self


def _is_set_to(self, tensor):
    return (self.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()
            and self.storage_offset() == tensor.storage_offset() and tuple(self.shape) == tuple(tensor.shape)
            and tuple(self.stride()) == tuple(tensor.stride()) and self.dtype == tensor.dtype)


def install(tensor_cls):
    tensor_cls.untyped_storage = _untyped_storage
    tensor_cls.storage = _storage
    tensor_cls.storage_type = _storage_type
    tensor_cls.set_ = _set_
    if not hasattr(tensor_cls, "is_set_to"):
        tensor_cls.is_set_to = _is_set_to
