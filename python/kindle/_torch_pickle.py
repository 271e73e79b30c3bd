"""Reading torch.save zip checkpoints: the Python side of csrc/serialize/torch_pickle.h.

The core opens the archive (zip layout, byte order, storages checked against their entries and
together against the file) and, for weights_only=True, runs the restricted unpickler: globals
resolve only from a fixed table (tensor and Parameter rebuilders, OrderedDict, set, frozenset,
torch.Size, torch.device, dtypes, storage types, bytes) or from what add_safe_globals allowed;
every opcode that builds is charged against budgets linear in the file's size, containers nest at
most 100 deep and are frozen once placed in another, and every tensor's geometry is checked
against its storage. Nothing in the file runs. What stays here is what only Python can do:
map_location, Python's hash guard on the dicts and sets it builds, running the classes and
functions add_safe_globals allowed, torch's error for a refused global, and weights_only=False,
which is pickle's own unpickler (it may run code from the file) over the core's archive.
"""
import importlib
import io
import pickle

from . import _C
from .serialization import UNSAFE_MESSAGE, _HashGuard, _check_view, _map_tensor, readinto_exact
from .storage import LEGACY_NAME

# What the restricted unpickler may build: about _MEMORY_FACTOR x the file's size + _MEMORY_SLACK
# bytes (the core's estimates of what each opcode builds).
_MEMORY_FACTOR = 64
_MEMORY_SLACK = 16 << 20


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle asked for a global outside the allowed table."""


def _refuse(name, key, hint):
    if hint:
        raise RefusedGlobal(f"kindle.load: {name}: unsupported global: GLOBAL {key} is not allowed ({hint})")
    raise RefusedGlobal(f"kindle.load: {name}: Weights only load failed. This file can still be loaded, to do so you "
                        "have two options, do those steps only if you trust the source of the checkpoint.\n\t(1) "
                        f"{UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check the "
                        "recommended steps in the following error message.\n\tWeightsUnpickler error: Unsupported "
                        f"global: GLOBAL {key} was not an allowed global by default. Please use "
                        f"`torch.serialization.add_safe_globals([{key}])` or the "
                        f"`torch.serialization.safe_globals([{key}])` context manager to allowlist this global if "
                        "you trust this class/function. (Kindle rebuilds by default only tensors, Parameters, dict, "
                        "OrderedDict, list, tuple, set and plain Python values, and never runs code from a file "
                        "unless weights_only=False.)")


class _UserGlobals:
    """add_safe_globals for one load: which globals a pickle may name, and what they are."""

    def __init__(self, table):
        self.table = table  # {"module.qualname": object}
        self.ids = {id(v): v for v in table.values()}

    def resolve(self, key):
        found = self.table.get(key)
        if found is None and self.table and "." in key:  # a kindle class listed by its own name, named by torch's
            module, name = key.rsplit(".", 1)
            found = kindle_object(module, name)
            if found is not None and not self.allows(found):
                found = None
        return found

    def allows(self, obj):
        return self.ids.get(id(obj)) is obj


def _make_object(users, type_, by_new, args, kwargs, built, state):
    """A Value::Object the core read, built: Kindle's own types, or an add_safe_globals class or function."""
    if type_ == "torch.Size":
        from . import Size
        return Size(args[0])
    if type_ == "torch.device":
        from . import device
        return device(*args)
    if type_ == "torch.nn.Parameter":
        from .nn import Parameter
        return Parameter(args[0], requires_grad=bool(args[1]))
    if type_ == "builtins.int":  # wider than 64 bits
        return int.from_bytes(args[0], "little", signed=True)
    if type_ == "builtins.frozenset":
        return frozenset(args[0])
    if type_ == "builtins.bytearray":
        return bytearray(args[0])
    target = users.resolve(type_)
    if by_new:
        if not isinstance(target, type):
            raise ValueError(f"NEWOBJ of {type_}: only classes allowlisted with add_safe_globals may be created "
                             "this way")
        inst = target.__new__(target, *args, **(kwargs or {}))
    else:
        inst = target(*args)
    if built:
        if not users.allows(type(inst)):
            raise ValueError(f"BUILD on a {type(inst).__name__} is not allowed; only classes allowlisted with "
                             "add_safe_globals may have their state set")
        if hasattr(inst, "__setstate__"):
            inst.__setstate__(state)
        else:
            slots = None
            if isinstance(state, tuple) and len(state) == 2:
                state, slots = state
            if state:
                inst.__dict__.update(state)
            for k, v in (slots or {}).items():
                setattr(inst, k, v)
    return inst


def _source(src, base):
    """What the core reads the archive through: the descriptor of a real file, else read_at."""
    if type(src) is io.FileIO:
        return src.fileno()

    def read_at(offset, view):
        src.seek(base + offset)
        return readinto_exact(src, view)

    return read_at


def _open(src, name, base, end):
    try:
        return _C._serialize.TorchArchive(_source(src, base), base, end - base, name)
    except ValueError as e:
        raise RuntimeError(str(e)) from None


def load_zip(src, name, base, end, map_location, encoding="ASCII", weights_only=True, pickle_module=None,
             pickle_load_args=None):
    from .serialization import _user_allowed_globals
    users = _UserGlobals(_user_allowed_globals())  # first: a malformed entry raises its own error, as in torch
    archive = _open(src, name, base, end)
    if not weights_only:
        return _load_trusted(archive, name, map_location, pickle_module, pickle_load_args or {})
    guard = _HashGuard()
    try:
        return archive.load(lambda t, location: _map_tensor(t, location, map_location), encoding,
                            lambda key: users.resolve(key) is not None, lambda key, hint: _refuse(name, key, hint),
                            lambda *a: _make_object(users, *a), guard.check, _MEMORY_FACTOR, _MEMORY_SLACK)
    except ValueError as e:  # the core's checks, the hash guard, a string that is not UTF-8
        what = str(e)
        if not what.startswith("kindle.load:"):
            what = f"kindle.load: {name}: invalid torch checkpoint: {what}"
        raise RuntimeError(what) from None


def kindle_object(module, name):
    """The object of Kindle's that torch's path module.name names, or None. Kindle's public
    names are torch's but its files are laid out differently: torch.nn.modules.flatten.Flatten
    is found as kindle.nn.modules.flatten.Flatten, else in the nearest package above that has it
    (kindle.nn.Flatten). Only Kindle's own modules are imported."""
    if not (module == "torch" or module.startswith("torch.")) or not name.isidentifier():
        return None
    parts = ("kindle" + module[len("torch"):]).split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    while parts:
        try:
            found = getattr(importlib.import_module(".".join(parts)), name, None)
        except ImportError:
            found = None
        if found is not None:
            return found
        parts.pop()
    return None


# --- weights_only=False: pickle's own unpickler, which may run code from the file ------------

class _StorageType:
    """What `torch.FloatStorage` and friends resolve to: a dtype."""

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


class _Storage:
    """A loaded storage: one flat tensor that rebuilt tensors view."""

    def __init__(self, tensor):
        self.tensor = tensor


def _rebuild_tensor(storage, storage_offset, size, stride):
    if not isinstance(storage, _Storage):
        raise ValueError(f"_rebuild_tensor: expected a storage, got {type(storage).__name__}")
    size, stride = tuple(size), tuple(stride)
    why = _check_view(size, stride, storage_offset, storage.tensor.numel())
    if why is not None:
        raise ValueError(f"_rebuild_tensor: invalid tensor: {why}")
    return _C.as_strided(storage.tensor, size, stride, storage_offset)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    t = _rebuild_tensor(storage, storage_offset, size, stride)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    from .nn import Parameter
    p = Parameter(data, requires_grad=bool(requires_grad))
    for k, v in (state or {}).items():
        setattr(p, k, v)
    return p


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor subclass (or a tensor with Python attributes), as torch._tensor._rebuild_from_type_v2."""
    t = func(*args)
    if type(t) is not new_type:
        t = _C.Tensor._make_subclass(new_type, t, t.requires_grad)
    for k, v in (state or {}).items():
        setattr(t, k, v)
    return t


_TRUSTED = {
    "torch._utils._rebuild_tensor": _rebuild_tensor,
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
    "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
}
_TRUSTED.update({"torch." + name: _StorageType(name, dtype) for dtype, name in LEGACY_NAME.items()})


def _trusted_unpickler_class(base):
    class _TrustedUnpickler(base):
        """Full unpickling, as torch.load(weights_only=False): the file may run code. torch.X
        globals resolve to kindle.X (the same module paths), tensors to Kindle's."""

        def find_class(self, module, name):
            key = f"{module}.{name}"
            if key in _TRUSTED:
                return _TRUSTED[key]
            if module == "torch" or module.startswith("torch."):
                found = kindle_object(module, name)
                if found is None:
                    raise AttributeError(f"kindle.load: {self.archive_name}: the checkpoint needs {key}, which is "
                                         "not in Kindle yet")
                return found
            return super().find_class(module, name)

        def persistent_load(self, pid):
            if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
                raise pickle.UnpicklingError(f"unexpected persistent id {pid!r:.100}")
            _, storage_type, key, location, numel = pid
            if not isinstance(storage_type, _StorageType):
                raise pickle.UnpicklingError(f"persistent id names {storage_type!r:.100}, not a storage type")
            found = self.storages.get(key)
            if found is None:
                t = self.archive.storage(key, storage_type.dtype, numel)
                found = self.storages[key] = _Storage(_map_tensor(t, location, self.map_location))
            return found

    return _TrustedUnpickler


def _load_trusted(archive, name, map_location, pickle_module, pickle_load_args):
    base = getattr(pickle_module, "Unpickler", pickle.Unpickler)
    unpickler = _trusted_unpickler_class(base)(io.BytesIO(archive.pickle()), **pickle_load_args)
    unpickler.archive, unpickler.archive_name, unpickler.map_location, unpickler.storages = \
        archive, name, map_location, {}
    try:
        return unpickler.load()
    except ValueError as e:
        if str(e).startswith("kindle.load:"):  # the core's checks on a storage
            raise RuntimeError(str(e)) from None
        raise
