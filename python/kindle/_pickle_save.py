"""kindle.save of whole objects (a Module, an optimizer, NumPy arrays, any picklable object):
PyTorch's zip+pickle checkpoint layout, which kindle.load(weights_only=False) reads back.

The archive holds <archive>/data.pkl (a pickle of the object), version, byteorder and one entry
data/<key> per storage, 64-byte aligned, as torch.save writes them. In the pickle a tensor is
torch._utils._rebuild_tensor_v2 on a persistent storage id ('storage', torch.FloatStorage, key,
'cpu', numel), a Parameter is torch._utils._rebuild_parameter, dtypes, devices and sizes are
torch's, and classes defined in kindle are named by their torch paths (kindle.nn.modules.linear
.Linear as torch.nn.modules.linear.Linear), so the file names what PyTorch names. A CPU
tensor is written as a view of its whole storage, each storage once: views of one storage (tied
weights) come back as views of one storage, as torch's. Tensors reached twice through the same Python object (a Parameter in a model and in its
optimizer) come back as one object, as pickle keeps identity.
"""
import importlib
import io
import pickle
import sys
from collections import OrderedDict

from . import _C

from .storage import LEGACY_NAME as _STORAGE_NAMES, contiguous_strides as _contiguous_strides  # noqa: E402


class _GlobalRef:
    """A global written into the pickle by name, without importing it here."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle insists that a reduce function is callable
        raise TypeError(f"{self.module}.{self.name} is only a name in a checkpoint being written")


class _StorageRef:
    def __init__(self, key, tensor):
        self.key, self.tensor = key, tensor


def _torch_module(module):
    # kindle.X is torch.X in the file; kindle._C's types live at torch's top level.
    if module == "kindle._C":
        return "torch"
    return "torch" + module[len("kindle"):] if module == "kindle" or module.startswith("kindle.") else module


class _Pickler(pickle._Pickler):
    # pickle's Python pickler: its save() and save_global() can be extended, the C one's cannot.

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.storages = []  # contiguous tensors, the key is the index
        self._storage_refs = {}  # (storage identity, dtype) -> its _StorageRef

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            t = obj.tensor
            return ("storage", _GlobalRef("torch", _STORAGE_NAMES[t.dtype]), str(obj.key), "cpu", t.numel())
        return None

    def save(self, obj, save_persistent_id=True):
        if type(obj) is _GlobalRef:
            self._write_global(obj.module, obj.name)
        elif isinstance(obj, _C.dtype):
            self._write_global("torch", obj.__reduce__())
        else:
            super().save(obj, save_persistent_id)

    def _write_global(self, module, name):
        if self.proto >= 4:
            self.save(module)
            self.save(name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode("utf-8"))

    def _save_as_torch(self, obj, name=None):
        """Write a class or function defined in kindle under its torch name; False if obj is not one.

        The name is the shortest public path that reaches obj (kindle.nn.Linear, not
        kindle.nn.modules.linear.Linear): Kindle's files are not laid out as PyTorch's, but its
        public names are PyTorch's, so torch.load finds torch.nn.Linear."""
        module = getattr(obj, "__module__", None) or ""
        qualname = name or getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "")
        if _torch_module(module) == module or not isinstance(qualname, str) or "." in qualname or "<" in qualname:
            return False
        parts = module.split(".")
        for n in range(1, len(parts) + 1):
            prefix = ".".join(parts[:n])
            if n < len(parts) and parts[n - 1].startswith("_"):
                continue
            mod = sys.modules.get(prefix)
            if mod is None and n == len(parts):
                try:
                    mod = importlib.import_module(prefix)
                except ImportError:
                    mod = None
            if mod is not None and getattr(mod, qualname, None) is obj:
                self._write_global(_torch_module(prefix), qualname)
                self.memoize(obj)
                return True
        return False

    def save_global(self, obj, name=None):
        if self._save_as_torch(obj, name):
            return
        # torch.save uses the C pickler, whose errors for an unreachable function or class are not
        # pickle.py's: a local object (a lambda or function defined in a function, as a module
        # attribute) raises AttributeError, one its module does not hold raises PicklingError
        # "attribute lookup ... failed". Raise what torch.save raises.
        qualname = name if name is not None else getattr(obj, "__qualname__", None)
        if isinstance(qualname, str) and "<locals>" in qualname.split("."):
            raise AttributeError(f"Can't pickle local object {qualname!r}")
        try:
            super().save_global(obj, name)
        except pickle.PicklingError as e:
            if not isinstance(qualname, str) or "it's not found as" not in str(e):
                raise
            module = pickle.whichmodule(obj, qualname)
            raise pickle.PicklingError(f"Can't pickle {obj!r}: attribute lookup {qualname} on {module} "
                                       "failed") from None

    def _save_type(self, obj):
        if not self._save_as_torch(obj):
            pickle._Pickler.save_type(self, obj)


    def reducer_override(self, obj):
        if isinstance(obj, _C.Tensor):
            return self._reduce_tensor(obj)
        if getattr(obj, "_kindle_device", False) and type(obj).__name__ == "device":
            return _GlobalRef("torch", "device"), ((obj.type,) if obj.index is None else (obj.type, obj.index))
        from . import Size
        if type(obj) is Size:
            return _GlobalRef("torch", "Size"), (tuple(obj),)
        return NotImplemented

    def _storage_args(self, t):
        # A CPU tensor is written as a view of its whole storage, each storage once (per dtype), so
        # that views and tied weights load as views of one storage again, as torch.save's do.
        t = t.detach()
        if t.is_cpu:
            ident, nbytes = t._storage_identity()
            item = t.element_size()
            if nbytes % item == 0:
                ref = self._storage_refs.get((ident, t.dtype))
                if ref is None:
                    whole = t.as_strided((nbytes // item,), (1,), 0)
                    ref = _StorageRef(len(self.storages), whole)
                    self.storages.append(whole)  # (held: the storage, and with it its identity, stays alive)
                    self._storage_refs[(ident, t.dtype)] = ref
                return (ref, t.storage_offset(), tuple(t.shape), tuple(t.stride()), False, OrderedDict())
        data = t.contiguous()
        ref = _StorageRef(len(self.storages), data)
        self.storages.append(data)
        shape = tuple(data.shape)
        return (ref, 0, shape, _contiguous_strides(shape), False, OrderedDict())

    def _reduce_tensor(self, t):
        from .nn import Parameter
        if t.dtype not in _STORAGE_NAMES:
            raise TypeError(f"kindle.save: cannot save a tensor of dtype {t.dtype}")
        state = dict(getattr(t, "__dict__", {}))
        args = self._storage_args(t)
        if type(t) is Parameter:
            plain = (_GlobalRef("torch._utils", "_rebuild_tensor_v2"), args)
            if state:
                return (_GlobalRef("torch._utils", "_rebuild_parameter_with_state"),
                        (_Rebuilt(plain), t.requires_grad, OrderedDict(), state))
            return _GlobalRef("torch._utils", "_rebuild_parameter"), (_Rebuilt(plain), t.requires_grad, OrderedDict())
        args = args[:4] + (t.requires_grad,) + args[5:]
        if type(t) is _C.Tensor and not state:
            return _GlobalRef("torch._utils", "_rebuild_tensor_v2"), args
        return (_GlobalRef("torch._tensor", "_rebuild_from_type_v2"),
                (_GlobalRef("torch._utils", "_rebuild_tensor_v2"), type(t), args, state))


# The dispatch table holds the base class's functions: point its global savers at ours.
_Pickler.dispatch = {t: (_Pickler.save_global if f is pickle._Pickler.save_global else
                         _Pickler._save_type if f is pickle._Pickler.save_type else f)
                     for t, f in pickle._Pickler.dispatch.items()}


class _Rebuilt:
    """An argument written as a nested REDUCE (func, args): the tensor inside a Parameter."""

    def __init__(self, reduce_value):
        self.reduce_value = reduce_value

    def __reduce__(self):
        return self.reduce_value


class PicklePlan:
    """A whole object pickled in memory (the pickle holds no tensor data); write() lays out the
    archive around it, by the core's writer (csrc/serialize/torch_pickle.h), as kindle::save does."""

    def __init__(self, obj, protocol=None):
        buf = io.BytesIO()
        pickler = _Pickler(buf, 2 if protocol is None else protocol)
        pickler.dump(obj)
        self.data_pkl = buf.getvalue()
        self.storages = pickler.storages

    def write(self, out):
        from .serialization import write_all
        _C._serialize.write_torch_archive(self.data_pkl, self.storages, lambda view: write_all(out, view))
