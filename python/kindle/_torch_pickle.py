"""Reading torch.save zip checkpoints without running code from them.

A torch.save file is a zip archive (entries stored, not compressed): <prefix>/data.pkl holds
a pickle of the object, in which each tensor is a call to torch._utils._rebuild_tensor_v2
on a storage given as a persistent id ('storage', torch.FloatStorage, key, location, numel);
the storage's bytes are the entry <prefix>/data/<key>.

The unpickler here resolves globals only from a fixed table of harmless callables (the
tensor rebuilders below, OrderedDict, set, dtypes...) and refuses every other global with
pickle.UnpicklingError, so a hostile pickle cannot reach os.system or anything like it. It
is pickle's pure-Python unpickler (its memo is a dict: a hostile memo index cannot make it
allocate, as the C unpickler's array would), with BUILD limited to setting an OrderedDict's
_metadata (what state_dict carries), the opcodes that fill containers limited to real lists,
dicts and sets, the opcodes that hash or nest guarded, and everything it builds charged
against a budget linear in the file's size (see _Unpickler).

Every size is checked against the archive before allocating: storages must match their
entries' byte counts, lie inside the file, and together fit in it; every tensor's sizes,
strides and offset must stay inside its storage.
"""
import importlib
import io
import pickle
import reprlib
import struct
import zipfile
from collections import OrderedDict

from . import _C
from .storage import LEGACY_NAME
from .serialization import (UNSAFE_MESSAGE, _MAX_DEPTH, _VIEW_FACTOR, _HashGuard, _check_view, _map_tensor, _view_budget, byte_view,
                            readinto_exact)

_STORAGE_DTYPES = {name: dtype for dtype, name in LEGACY_NAME.items()}
_TORCH_DTYPES = {
    "float64": _C.float64, "float32": _C.float32, "float16": _C.float16, "bfloat16": _C.bfloat16,
    "int64": _C.int64, "int32": _C.int32, "int16": _C.int16, "int8": _C.int8, "uint8": _C.uint8,
    "bool": _C.bool, "complex64": _C.complex64, "complex128": _C.complex128,
}
_UNSUPPORTED_HINTS = {
    "torch._utils._rebuild_qtensor": "quantized tensors are not supported",
    "torch._utils._rebuild_sparse_tensor": "sparse tensors are not supported",
    "torch._utils._rebuild_wrapper_subclass": "tensor subclasses are not supported",
    "torch._utils._rebuild_meta_tensor_no_storage": "meta tensors are not supported",
    "torch._utils._rebuild_nested_tensor": "nested tensors are not supported",
    "torch._utils._rebuild_tensor_v3": "this tensor dtype is not supported",
    "torch.UntypedStorage": "untyped storages are not supported",
}


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle asked for a global outside the allowed table."""


class _StorageType:
    """What `torch FloatStorage` and friends resolve to: just a dtype."""

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


class _Storage:
    """A loaded storage: one flat tensor that rebuilt tensors view."""

    def __init__(self, tensor):
        self.tensor = tensor


# --- the callables a pickle may reach ------------------------------------------------------

def _ints(x, what):
    if not isinstance(x, (tuple, list)) or not all(type(v) is int for v in x):
        raise ValueError(f"{what} must be a tuple of ints, got {_short(x)}")
    return tuple(x)


def _rebuild_tensor(storage, storage_offset, size, stride):
    if not isinstance(storage, _Storage):
        raise ValueError(f"_rebuild_tensor: expected a storage, got {type(storage).__name__}")
    if type(storage_offset) is not int or storage_offset < 0:
        raise ValueError(f"_rebuild_tensor: invalid storage offset {_short(storage_offset)}")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    why = _check_view(size, stride, storage_offset, storage.tensor.numel())
    if why is not None:
        raise ValueError(f"_rebuild_tensor: invalid tensor: {why}")
    return _C.as_strided(storage.tensor, size, stride, storage_offset)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    t = _rebuild_tensor(storage, storage_offset, size, stride)
    if metadata:
        raise ValueError(f"_rebuild_tensor_v2: tensor metadata {_short(metadata)} is not supported")
    if backward_hooks:
        raise ValueError("_rebuild_tensor_v2: tensors with backward hooks are not supported")
    if requires_grad is True:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks):
    if not isinstance(data, _C.Tensor):
        raise ValueError(f"_rebuild_parameter: expected a tensor, got {type(data).__name__}")
    if backward_hooks:
        raise ValueError("_rebuild_parameter: parameters with backward hooks are not supported")
    from . import nn
    param = getattr(nn, "Parameter", None)
    if param is not None:
        return param(data, requires_grad=bool(requires_grad))
    return data.requires_grad_(bool(requires_grad))


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    if state:
        raise ValueError("_rebuild_parameter_with_state: parameters with Python attributes are not supported")
    return _rebuild_parameter(data, requires_grad, backward_hooks)


def _codecs_encode(text, encoding="utf-8"):
    # Protocol 2 pickles spell bytes as _codecs.encode(str, 'latin1').
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise ValueError(f"_codecs.encode: only encode(str, 'latin1') is allowed, got encoding {_short(encoding)}")
    return text.encode("latin1")


def _bytes(*args):
    # Protocol 2 pickles spell b'' as bytes().
    if args:
        raise ValueError("bytes() may only be rebuilt without arguments")
    return b""


def _size(dims=()):
    from . import Size
    return Size(_ints(dims, "torch.Size"))


def _device(type_, index=None):
    from . import device
    if not isinstance(type_, str) or not (index is None or type(index) is int):
        raise ValueError("torch.device: expected a str and an optional int")
    return device(type_, index)


def _allowed_globals():
    table = {
        "collections.OrderedDict": OrderedDict,
        "builtins.set": set,
        "_codecs.encode": _codecs_encode,
        "builtins.bytes": _bytes,
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch.Size": _size,
        "torch.device": _device,
    }
    for name, dtype in _STORAGE_DTYPES.items():
        table["torch." + name] = _StorageType(name, dtype)
    for name, dtype in _TORCH_DTYPES.items():
        table["torch." + name] = dtype
    return table


_ALLOWED = _allowed_globals()
_TENSOR_BUILDERS = (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_parameter, _rebuild_parameter_with_state)


# What the unpickler may build, in estimated bytes of memory, for a file of n bytes: the
# objects the pickle's opcodes create (containers, their items, memo entries, tensors...)
# at most _MEMORY_FACTOR * n + _MEMORY_SLACK, and objects rebuilt again from a value already
# rebuilt from once (the same memoized list given to set() twice, the same argument tuple to
# a tensor rebuilder twice: a "memo bomb"; torch.save never writes one) at most
# _REPEAT_FACTOR * n + _REPEAT_SLACK more. The budgets count what is built, freed or not, so
# they bound the time spent too. The estimates are CPython's sizes on 64-bit machines.
_MEMORY_FACTOR = 64
_MEMORY_SLACK = 16 << 20
_REPEAT_FACTOR = 1
_REPEAT_SLACK = 64 << 10
_REPEAT_MIN_LEN = 16  # copies of shorter values (e.g. torch.Size(()) of the shared ()) are not tracked
_COST_LIST, _COST_DICT, _COST_SET, _COST_TUPLE, _COST_ORDERED_DICT = 56, 64, 216, 40, 128
# per list/tuple item, dict entry, set entry (a set's table is up to 4x its size), OrderedDict entry
_COST_SLOT, _COST_ENTRY, _COST_SET_ENTRY, _COST_ORDERED_ENTRY = 8, 48, 96, 104
_COST_MEMO, _COST_MARK, _COST_TENSOR, _COST_OBJECT = 64, 64, 640, 64
_MAX_MEMO_INDEX = 2 ** 32 - 1  # LONG_BINPUT's own limit; bigger (text PUT) indices could collide in the memo


class _Unpickler(pickle._Unpickler):
    """pickle's pure-Python unpickler with a fixed table of globals and guarded opcodes.

    Beyond the globals table:
    - the opcodes that hash (dict keys, set items) or build tuples are checked, because
      CPython hashes tuples recursively in C with no depth check (a 1 MB pickle of nested
      TUPLE1 opcodes used as a dict key kills the interpreter), hashes big ints without
      caching, and slows down quadratically on keys that share a hash. Tuples are limited to
      _MAX_DEPTH levels, dict keys and set items to small hashable values of which at most
      _MAX_SAME_HASH distinct ones share a hash (_HashGuard), and the total hashing work to
      a bound linear in the pickle's size;
    - every object built is charged against the memory budgets above;
    - APPEND(S), SETITEM(S) and ADDITEMS work only on real lists, dicts and sets, REDUCE
      takes only a tuple of arguments, and BUILD only sets an OrderedDict's _metadata (what
      torch's state dicts carry), so no opcode reaches a method a pickle has substituted;
    - tensors are checked against their storages, and views that expand a storage may
      together address at most _VIEW_FACTOR times the file's size.
    """

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, data, reader, encoding, user_globals=None):
        super().__init__(io.BytesIO(data), encoding=encoding)
        self._reader = reader
        size = max(reader.file_end, len(data))
        self._tuples = {}  # id -> (tuple, depth, hashing cost or None if not hashable here)
        self._guard = _HashGuard()
        self._work_left = 1_000_000 + 16 * len(data)
        self._memory_limit = _MEMORY_FACTOR * size + _MEMORY_SLACK
        self._memory_left = self._memory_limit
        self._repeat_left = _REPEAT_FACTOR * size + _REPEAT_SLACK
        self._view_left = _view_budget(size)
        self._sources = {}  # id -> value some REDUCE has rebuilt an object from
        self._user_globals = user_globals or {}  # add_safe_globals: {path: class or function}
        self._user_values = {id(v): v for v in self._user_globals.values()}

    def find_class(self, module, name):
        if len(module) + len(name) > 200:
            raise RefusedGlobal(f"kindle.load: {self._reader.name}: unsupported global: GLOBAL "
                                f"{_short(module)}.{_short(name)} is not allowed")
        if module == "__builtin__":  # protocol 2 spelling
            module = "builtins"
        key = f"{module}.{name}"
        if key in _ALLOWED:
            return _ALLOWED[key]
        if key in _UNSUPPORTED_HINTS:
            raise RefusedGlobal(f"kindle.load: {self._reader.name}: unsupported global: GLOBAL {key} is not allowed "
                                f"({_UNSUPPORTED_HINTS[key]})")
        user = self._user_globals.get(key)
        if user is None and self._user_globals:  # a kindle class listed by its own name, named by torch's
            found = kindle_object(module, name)
            user = found if found is not None and self._is_user_allowed(found) else None
        if user is not None:
            self._take(_COST_OBJECT)
            return user
        raise RefusedGlobal(f"kindle.load: {self._reader.name}: Weights only load failed. This file can still be "
                            "loaded, to do so you have two options, do those steps only if you trust the source of "
                            f"the checkpoint.\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with "
                            "`weights_only=True` please check the recommended steps in the following error message."
                            f"\n\tWeightsUnpickler error: Unsupported global: GLOBAL {key} was not an allowed global "
                            f"by default. Please use `torch.serialization.add_safe_globals([{key}])` or the "
                            f"`torch.serialization.safe_globals([{key}])` context manager to allowlist this global "
                            "if you trust this class/function. (Kindle rebuilds by default only tensors, "
                            "Parameters, dict, OrderedDict, list, tuple, set and plain Python values, and never runs "
                            "code from a file unless weights_only=False.)")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise ValueError(f"unexpected persistent id {_short(pid)}")
        _, storage_type, key, location, numel = pid
        if not isinstance(storage_type, _StorageType):
            raise ValueError(f"persistent id names {_short(storage_type)}, not a storage type")
        if not isinstance(key, str) or not isinstance(location, str) or type(numel) is not int or numel < 0:
            raise ValueError(f"malformed storage id {_short(pid)}")
        return self._reader.storage(storage_type, key, location, numel)

    # --- memory ---

    def _take(self, nbytes):
        self._memory_left -= nbytes
        if self._memory_left < 0:
            raise ValueError(f"the pickle builds more objects than a file of its size may (about "
                             f"{self._memory_limit} bytes of Python objects, {_MEMORY_FACTOR}x the file's size "
                             f"plus {_MEMORY_SLACK >> 20} MiB)")

    def _take_rebuilt(self, nbytes, source):
        """Charge an object a REDUCE builds from `source`; a second rebuild from one source is a repeat."""
        key = id(source)
        seen = self._sources.get(key)
        if seen is not None and seen is source:
            self._repeat_left -= nbytes
            if self._repeat_left < 0:
                raise ValueError("the pickle rebuilds objects from the same memoized value again and again "
                                 "(a memo bomb): the copies exceed the file's size")
            return
        self._sources[key] = source
        self._take(nbytes + _COST_ENTRY)

    # --- hashing guards ---

    def _cost(self, x):
        """What hashing x costs, or None if x may not be a dict key or set item."""
        t = type(x)
        if t is str or t is bytes:
            return 1 + len(x) // 64
        if t is int:  # below 2**61 - 1 an int hashes to itself: no collisions to flood a dict with
            return 1 if x.bit_length() <= 60 else None
        if t is frozenset:  # its hash is cached and its items were checked when it was built, but
            return 1 + len(x)  # telling two of one hash apart compares their items
        if t is bool or t is float or x is None or isinstance(x, _C.dtype):
            return 1
        if isinstance(x, tuple):
            info = self._tuples.get(id(x))
            if info is not None and info[0] is x:
                return info[2]
            costs = [self._cost(v) for v in x] if all(type(v) is int for v in x) else [None]
            return None if None in costs else 1 + sum(costs)  # torch.Size and () get here
        return None

    def _charge(self, keys):
        for k in keys:
            c = self._cost(k)
            if c is None:
                raise ValueError(f"a {type(k).__name__} cannot be a dict key or set item in a checkpoint "
                                 "(allowed: str, bytes, bool, None, float, ints below 2**60, tuples of these)")
            self._work_left -= c * (1 + self._guard.check(k))  # the guard compares with its same-hash keys
        if self._work_left < 0:
            raise ValueError("the pickle asks for more hashing work than its size allows")

    def _push_tuple(self, items):
        depth, cost = 1, 1
        for v in items:
            info = self._tuples.get(id(v)) if type(v) is tuple else None
            if info is not None and info[0] is v:
                depth = max(depth, info[1] + 1)
            c = self._cost(v)
            cost = None if cost is None or c is None else cost + c
        if depth > _MAX_DEPTH:
            raise ValueError(f"tuples nested deeper than {_MAX_DEPTH} levels")
        t = tuple(items)
        if t:
            self._take(_COST_TUPLE + _COST_SLOT * len(t) + _COST_MEMO)  # the tuple and its entry in _tuples
            self._tuples[id(t)] = (t, depth, cost)
        return t

    # --- opcodes ---

    def load_tuple(self):
        items = self.pop_mark()  # first: it rebinds self.append to the enclosing stack
        self.append(self._push_tuple(items))

    def load_tuple1(self):
        self.stack[-1] = self._push_tuple(self.stack[-1:])

    def load_tuple2(self):
        self.stack[-2:] = [self._push_tuple(self.stack[-2:])]

    def load_tuple3(self):
        self.stack[-3:] = [self._push_tuple(self.stack[-3:])]

    def load_mark(self):
        self._take(_COST_MARK)
        pickle._Unpickler.load_mark(self)

    def load_empty_list(self):
        self._take(_COST_LIST)
        self.append([])

    def load_empty_dict(self):
        self._take(_COST_DICT)
        self.append({})

    def load_empty_set(self):
        self._take(_COST_SET)
        self.append(set())

    def load_list(self):
        items = self.pop_mark()
        self._take(_COST_LIST + _COST_SLOT * len(items))
        self.append(items)

    def load_append(self):
        value = self.stack.pop()
        target = self.stack[-1]
        if type(target) is not list:
            raise ValueError(f"APPEND on a {type(target).__name__} is not allowed")
        self._take(_COST_SLOT)
        target.append(value)

    def load_appends(self):
        items = self.pop_mark()
        target = self.stack[-1]
        if type(target) is not list:
            raise ValueError(f"APPENDS on a {type(target).__name__} is not allowed")
        self._take(_COST_SLOT * len(items))
        target.extend(items)

    def load_dict(self):
        items = self.pop_mark()
        self._charge(items[0::2])
        self._take(_COST_DICT + _COST_ENTRY * (len(items) // 2))
        self.append({items[i]: items[i + 1] for i in range(0, len(items) - 1, 2)})

    def load_setitem(self):
        value, key = self.stack.pop(), self.stack.pop()
        self._setitems(self.stack[-1], [key, value], "SETITEM")

    def load_setitems(self):
        items = self.pop_mark()
        self._setitems(self.stack[-1], items, "SETITEMS")

    def _setitems(self, target, items, op):
        if type(target) is dict:
            per_entry = _COST_ENTRY
        elif type(target) is OrderedDict:
            per_entry = _COST_ORDERED_ENTRY
        else:
            raise ValueError(f"{op} on a {type(target).__name__} is not allowed")
        self._charge(items[0::2])
        self._take(per_entry * (len(items) // 2))
        for i in range(0, len(items) - 1, 2):
            target[items[i]] = items[i + 1]

    def load_additems(self):
        items = self.pop_mark()
        target = self.stack[-1]
        if type(target) is not set:
            raise ValueError(f"ADDITEMS on a {type(target).__name__} is not allowed")
        self._charge(items)
        self._take(_COST_SET_ENTRY * len(items))
        target.update(items)

    def load_frozenset(self):
        items = self.pop_mark()
        self._charge(items)
        self._take(_COST_SET + _COST_SET_ENTRY * len(items))
        self.append(frozenset(items))

    # Memo entries: each new index costs an entry; indices stay small ints, which cannot collide.
    def _memo_store(self, i):
        if type(i) is not int or not 0 <= i <= _MAX_MEMO_INDEX:
            raise ValueError(f"memo index {_short(i)} is out of range")
        if i not in self.memo:
            self._take(_COST_MEMO)
        self.memo[i] = self.stack[-1]

    def load_put(self):
        line = self.readline()[:-1]
        if len(line) > 12:
            raise ValueError("PUT index is out of range")
        self._memo_store(int(line))

    def load_binput(self):
        self._memo_store(self.read(1)[0])

    def load_long_binput(self):
        (i,) = struct.unpack("<I", self.read(4))
        self._memo_store(i)

    def load_memoize(self):
        self._memo_store(len(self.memo))

    def _reduce_cost(self, func, args):
        """(estimated bytes, source or None) of func(*args); checks what the call will hash."""
        first = args[0] if args else None
        n = len(first) if type(first) in (tuple, list, str) else 0
        if func is set or func is OrderedDict:
            if not args:
                return (_COST_SET if func is set else _COST_ORDERED_DICT), None
            # set(iterable) and OrderedDict(iterable of pairs) hash what they are given.
            if len(args) != 1 or type(first) not in (list, tuple):
                raise ValueError(f"{func.__name__}() may only be rebuilt from one list")
            items = first
            if func is OrderedDict:
                if not all(type(p) in (tuple, list) and len(p) == 2 for p in items):
                    raise ValueError("OrderedDict() may only be rebuilt from (key, value) pairs")
                items = [p[0] for p in items]
                cost = _COST_ORDERED_DICT + _COST_ORDERED_ENTRY * n
            else:
                cost = _COST_SET + _COST_SET_ENTRY * n
            self._charge(items)
            return cost, (first if n >= _REPEAT_MIN_LEN else None)
        if func is _size:
            return _COST_TUPLE + _COST_SLOT * n, (first if n >= _REPEAT_MIN_LEN else None)
        if func is _codecs_encode:
            return 40 + n, (first if n >= _REPEAT_MIN_LEN else None)
        if any(func is f for f in _TENSOR_BUILDERS):  # torch.save writes a fresh argument tuple for every tensor
            return _COST_TENSOR, args
        return _COST_OBJECT, None

    def load_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if type(args) is not tuple:
            raise ValueError(f"REDUCE arguments must be a tuple, got a {type(args).__name__}")
        cost, source = self._reduce_cost(func, args)
        if source is None:
            self._take(cost)
        else:
            self._take_rebuilt(cost, source)
        result = func(*args)
        if func is _rebuild_tensor or func is _rebuild_tensor_v2:
            self._view_left -= result.numel() * result.element_size()
            if self._view_left < 0:
                raise ValueError(f"the tensors' views address more than {_VIEW_FACTOR} times the file's size "
                                 f"(tensor of size {tuple(result.shape)} with stride {tuple(result.stride())}): "
                                 "a storage expanded by stride 0 or overlapping strides")
        self.stack[-1] = result

    def _is_user_allowed(self, obj):
        return self._user_values.get(id(obj)) is obj

    def load_build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
        if self._is_user_allowed(type(inst)):  # a class the user listed with add_safe_globals, as torch
            self._take(_COST_OBJECT)
            if hasattr(inst, "__setstate__"):
                inst.__setstate__(state)
                return
            slotstate = None
            if isinstance(state, tuple) and len(state) == 2:
                state, slotstate = state
            if state:
                inst.__dict__.update(state)
            for k, v in (slotstate or {}).items():
                setattr(inst, k, v)
            return
        # torch's state dicts are OrderedDicts with a _metadata attribute (a dict of per-module
        # versions); nothing else may be set, so no later opcode can meet a substituted method.
        if type(inst) is OrderedDict and type(state) is dict and list(state) == ["_metadata"] and \
                type(state["_metadata"]) in (dict, OrderedDict):
            self._take(_COST_OBJECT)
            inst._metadata = state["_metadata"]
            return
        keys = list(state)[:4] if type(state) is dict else None
        raise ValueError(f"BUILD (setting state {_short(keys) if keys is not None else type(state).__name__}) "
                         f"on a {type(inst).__name__} is not allowed; only an OrderedDict's _metadata may be set")

    def _instantiate(self, klass, args):  # INST and OBJ: torch.save never writes them
        raise ValueError(f"building a {getattr(klass, '__name__', type(klass).__name__)} with INST/OBJ is not allowed")

    def load_newobj(self):  # torch.save writes REDUCE for everything it allows by default
        args = self.stack.pop()
        cls = self.stack[-1]
        if not (isinstance(cls, type) and self._is_user_allowed(cls)) or type(args) is not tuple:
            raise ValueError(f"NEWOBJ of {_short(cls)}: only classes allowlisted with add_safe_globals may be "
                             "created this way")
        self._take(_COST_OBJECT)
        self.stack[-1] = cls.__new__(cls, *args)

    def load_newobj_ex(self):
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack[-1]
        if not (isinstance(cls, type) and self._is_user_allowed(cls)) or type(args) is not tuple or \
                type(kwargs) is not dict:
            raise ValueError(f"NEWOBJ_EX of {_short(cls)}: only classes allowlisted with add_safe_globals may be "
                             "created this way")
        self._take(_COST_OBJECT)
        self.stack[-1] = cls.__new__(cls, *args, **kwargs)

    def load_bytearray8(self):
        # pickle's own version allocates the declared length before reading: a hostile
        # length would allocate without bound. Reading first is bounded by the pickle's size.
        (n,) = struct.unpack("<Q", self.read(8))
        data = self.read(n)
        if len(data) != n:
            raise ValueError(f"BYTEARRAY8 declares {n} bytes but the pickle holds {len(data)}")
        self.append(bytearray(data))

    for _op, _fn in [(pickle.TUPLE, load_tuple), (pickle.TUPLE1, load_tuple1), (pickle.TUPLE2, load_tuple2),
                     (pickle.TUPLE3, load_tuple3), (pickle.MARK, load_mark), (pickle.EMPTY_LIST, load_empty_list),
                     (pickle.EMPTY_DICT, load_empty_dict), (pickle.EMPTY_SET, load_empty_set),
                     (pickle.LIST, load_list), (pickle.APPEND, load_append), (pickle.APPENDS, load_appends),
                     (pickle.DICT, load_dict), (pickle.SETITEM, load_setitem), (pickle.SETITEMS, load_setitems),
                     (pickle.ADDITEMS, load_additems), (pickle.FROZENSET, load_frozenset),
                     (pickle.PUT, load_put), (pickle.BINPUT, load_binput), (pickle.LONG_BINPUT, load_long_binput),
                     (pickle.MEMOIZE, load_memoize), (pickle.REDUCE, load_reduce), (pickle.BUILD, load_build),
                     (pickle.NEWOBJ, load_newobj), (pickle.NEWOBJ_EX, load_newobj_ex),
                     (pickle.BYTEARRAY8, load_bytearray8)]:
        dispatch[_op[0]] = _fn
    del _op, _fn


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxtuple, _SHORT.maxdict, _SHORT.maxstring = 3, 6, 6, 4, 60


def _short(x):
    """A bounded repr for error messages: pickled structures can be huge, deep or shared."""
    try:
        return _SHORT.repr(x)
    except Exception:  # noqa: BLE001  (a repr that fails must not hide the real error)
        return f"<{type(x).__name__}>"


class _ZipReader:
    """The entries of one torch.save archive, read with bounds checks."""

    def __init__(self, src, name, file_end, map_location):
        self.src, self.name, self.file_end, self.map_location = src, name, file_end, map_location
        self.budget = file_end  # bytes of storages we may still allocate
        self.storages = {}
        try:
            self.zip = zipfile.ZipFile(src)
            names = self.zip.namelist()
        except Exception as e:  # zipfile raises many types on damaged archives
            raise RuntimeError(f"kindle.load: {name}: not a readable zip archive ({type(e).__name__}: {e})") from None
        pickles = [n for n in names if n.endswith("data.pkl") and n.count("/") <= 1
                   and n.rsplit("/", 1)[-1] == "data.pkl"]
        if len(pickles) != 1:
            raise RuntimeError(f"kindle.load: {name}: expected one data.pkl in the zip archive, found {len(pickles)}; "
                               "is this a torch.save checkpoint?")
        self.prefix = pickles[0][: -len("data.pkl")]

    def entry_span(self, entry):
        """(start, size) of an entry's bytes in the file, validated against the file."""
        try:
            info = self.zip.getinfo(self.prefix + entry)
        except KeyError:
            raise ValueError(f"the archive has no entry {self.prefix + entry!r}") from None
        if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
            raise ValueError(f"entry {info.filename!r} is compressed or encrypted; torch.save stores entries as is")
        if info.compress_size != info.file_size:
            raise ValueError(f"entry {info.filename!r} has inconsistent sizes")
        if info.header_offset < 0 or info.header_offset + 30 > self.file_end:
            raise ValueError(f"entry {info.filename!r} starts past the end of the file")
        self.src.seek(info.header_offset)
        local = self.src.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise ValueError(f"entry {info.filename!r} has no valid local header")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        local_name = self.src.read(name_len).decode("utf-8" if info.flag_bits & 0x800 else "cp437", "replace")
        if local_name != info.orig_filename:  # the central directory and the entry disagree
            raise ValueError(f"entry {info.filename!r} has local header name {local_name!r:.100}")
        start = info.header_offset + 30 + name_len + extra_len
        if start + info.file_size > self.file_end:
            raise ValueError(f"entry {info.filename!r} ({info.file_size} bytes) runs past the end of the file")
        return start, info.file_size

    def read_entry(self, entry):
        start, size = self.entry_span(entry)
        self.src.seek(start)
        data = self.src.read(size)
        if len(data) != size:
            raise ValueError(f"entry {entry!r} is truncated")
        return data

    def storage(self, storage_type, key, location, numel):
        cached = self.storages.get(key)
        if cached is not None:
            t = cached.tensor
            if t.dtype != storage_type.dtype or t.numel() != numel:
                raise ValueError(f"storage {key!r} is used as both {t.dtype} x {t.numel()} and "
                                 f"{storage_type.dtype} x {numel}")
            return cached
        start, size = self.entry_span("data/" + key)
        if size != numel * storage_type.dtype.itemsize:
            raise ValueError(f"storage {key!r}: {numel} elements of {storage_type.name} need "
                             f"{numel * storage_type.dtype.itemsize} bytes, the entry holds {size}")
        if size > self.budget:  # entries that overlap could otherwise make us allocate past the file size
            raise ValueError(f"storage {key!r}: storages add up to more bytes than the file holds")
        self.budget -= size
        t = _C.empty((numel,), dtype=storage_type.dtype)
        if size:
            self.src.seek(start)
            if not readinto_exact(self.src, byte_view(t)):
                raise ValueError(f"storage {key!r} is truncated")
        t = _map_tensor(t, location, self.map_location)
        self.storages[key] = _Storage(t)
        return self.storages[key]


def load_zip(src, name, file_end, map_location, encoding="ASCII", weights_only=True, pickle_module=None,
             pickle_load_args=None):
    from .serialization import _user_allowed_globals
    user_globals = _user_allowed_globals()  # first: a malformed entry raises its own error, as in torch
    reader = _ZipReader(src, name, file_end, map_location)
    if not weights_only:
        return _load_zip_trusted(reader, pickle_module, pickle_load_args or {})
    try:
        if reader.prefix + "byteorder" in reader.zip.NameToInfo:
            order = reader.read_entry("byteorder")
            if order != b"little":
                raise ValueError(f"byte order {order!r:.20} is not supported (only little-endian)")
        data = reader.read_entry("data.pkl")
        return _Unpickler(data, reader, encoding, user_globals).load()
    except (RefusedGlobal, MemoryError):
        raise
    except Exception as e:
        if str(e).startswith("kindle.load:"):  # map_location errors carry their own context
            raise
        # Our checks raise ValueError; anything else is the pickle machinery choking.
        what = str(e) if type(e) in (ValueError, RuntimeError) else f"{type(e).__name__}: {e}"
        raise RuntimeError(f"kindle.load: {name}: invalid torch checkpoint: {what}") from e
    finally:
        reader.zip.close()


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


# --- weights_only=False: the trusted path ---------------------------------------------------

def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor subclass (or a tensor with Python attributes), as torch._tensor._rebuild_from_type_v2."""
    t = func(*args)
    if type(t) is not new_type:
        t = _C.Tensor._make_subclass(new_type, t, t.requires_grad)
    for k, v in (state or {}).items():
        setattr(t, k, v)
    return t


def _rebuild_parameter_trusted(data, requires_grad, backward_hooks, state=None):
    p = _rebuild_parameter(data, requires_grad, None)
    for k, v in (state or {}).items():
        setattr(p, k, v)
    return p


def _trusted_unpickler_class(base):
    class _TrustedUnpickler(base):
        """Full unpickling, as torch.load(weights_only=False): the file may run code. torch.X
        globals resolve to kindle.X (the same module paths), tensors to Kindle's."""

        def find_class(self, module, name):
            key = f"{module}.{name}"
            if key == "torch._utils._rebuild_parameter" or key == "torch._utils._rebuild_parameter_with_state":
                return _rebuild_parameter_trusted
            if key == "torch._tensor._rebuild_from_type_v2":
                return _rebuild_from_type_v2
            if key in _ALLOWED and key.startswith("torch."):
                return _ALLOWED[key]
            if module == "torch" or module.startswith("torch."):
                found = kindle_object(module, name)
                if found is None:
                    raise AttributeError(f"kindle.load: {self.reader.name}: the checkpoint needs {key}, which is "
                                         "not in Kindle yet")
                return found
            return super().find_class(module, name)

        def persistent_load(self, pid):
            if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
                raise pickle.UnpicklingError(f"unexpected persistent id {_short(pid)}")
            _, storage_type, key, location, numel = pid
            if not isinstance(storage_type, _StorageType):
                raise pickle.UnpicklingError(f"persistent id names {_short(storage_type)}, not a storage type")
            return self.reader.storage(storage_type, key, location, numel)

    return _TrustedUnpickler


def _load_zip_trusted(reader, pickle_module, pickle_load_args):
    try:
        data = reader.read_entry("data.pkl")
        base = getattr(pickle_module, "Unpickler", pickle.Unpickler)
        unpickler = _trusted_unpickler_class(base)(io.BytesIO(data), **pickle_load_args)
        unpickler.reader = reader
        return unpickler.load()
    finally:
        reader.zip.close()
