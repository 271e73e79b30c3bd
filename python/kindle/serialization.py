"""kindle.save / kindle.load: safe checkpoints.

kindle.save writes PyTorch's zip+pickle checkpoint layout by default (see _pickle_save.py), so
torch.load reads Kindle's checkpoints as they are, weights_only=True included, and whole objects
(a Module, an optimizer, NumPy arrays, any picklable object) round-trip. On request (a file name
ending in .safetensors, or format="safetensors") it writes safetensors instead: an 8-byte
little-endian header length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__":
{str: str}}, then the raw tensor bytes. A flat dict of str -> tensor becomes a plain safetensors
file any safetensors reader opens; nesting and non-tensor values (optimizer state dicts) are
described in the "kindle" metadata entry as JSON that names the tensors it holds; anything else
is refused with ValueError. Nothing in either kind of file is executed on load (below).

kindle.load also reads PyTorch's zip checkpoints (torch.save's default format). As in torch
2.6 and later, weights_only defaults to True: the core's restricted unpickler (the one C++'s
kindle::load runs too: csrc/serialize/torch_pickle.h; Python's side is _torch_pickle.py) rebuilds tensors, Parameters, containers and plain values, plus the classes and functions
allowlisted with add_safe_globals / safe_globals, and refuses any other global with
pickle.UnpicklingError, so a hostile file cannot run code. weights_only=False is full
unpickling, exactly as torch.load(weights_only=False): an explicit opt-in, only for files
from a trusted source, because such a file can run arbitrary code.

Every reader validates the whole header before allocating any tensor, so a truncated or
hostile file raises ValueError or RuntimeError naming the file; tensor memory never exceeds
the file's size, and parsing a header (JSON, zip directory, pickle) costs time and memory
linear in the file's size:
- dict keys and set items whose hash an attacker can choose (tuples, floats, big ints) are
  counted per hash value, and more than _MAX_SAME_HASH distinct ones with one hash are refused
  (Python's dicts and sets slow down quadratically on full-hash collisions);
- the restricted unpickler charges every object it builds against a budget proportional to
  the file's size, and rebuilds from one memoized value beyond the first against a budget of
  the file's size, so a memo bomb cannot turn a small file into gigabytes; containers nest at
  most _MAX_DEPTH deep, as on save;
- every tensor's sizes, strides and offset are checked against its storage before the tensor
  exists, and views that expand a storage (stride 0, overlapping strides) may together address
  at most _VIEW_FACTOR times the file's size.
"""
import ctypes
import enum
import io
import json
import os
import pickle
import pickletools
import sys

from . import _C

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "LoadEndianness", "get_default_load_endianness", "set_default_load_endianness"]

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, "
    "but it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source."
)

# Safetensors dtype names, in the spec's spelling.
_DTYPE_TO_ST = {
    _C.float64: "F64", _C.float32: "F32", _C.float16: "F16", _C.bfloat16: "BF16",
    _C.int64: "I64", _C.int32: "I32", _C.int16: "I16", _C.int8: "I8",
    _C.uint8: "U8", _C.bool: "BOOL", _C.complex64: "C64",
}
_DTYPE_NAMES = {str(d).split(".")[-1]: d for d in _DTYPE_TO_ST}

_FORMAT_VERSION = 1
_MAX_DEPTH = 100               # nesting of containers, on save and on load
_MAX_HEADER = 100 * 1024 ** 2  # safetensors' own limit on the JSON header
_MAX_DIMS = 64
_MAX_NUMEL = 2 ** 63 - 1       # products of sizes must fit the core's int64 strides
_MAX_SAME_HASH = 8             # distinct dict keys / set items sharing one hash value
_MAX_VIEW_NUMEL = 2 ** 40      # elements one loaded tensor may address
_VIEW_FACTOR = 64              # loaded tensors may address at most this many times the file's bytes
_VIEW_SLACK = 1 << 20          # ... plus this many bytes (tiny files with small expanded views)


class LoadEndianness(enum.Enum):
    """The byte order to assume for a torch checkpoint that has no byteorder record."""
    NATIVE = 1
    LITTLE = 2
    BIG = 3


_default_load_endianness = None  # torch's default: such files are read as little-endian


def get_default_load_endianness():
    """The fallback byte order for checkpoints without a byteorder record (None: little)."""
    return _default_load_endianness


def set_default_load_endianness(endianness):
    """Sets the fallback byte order for checkpoints without a byteorder record. Kindle runs on
    little-endian machines only, so None, LITTLE and NATIVE read such files alike; with BIG,
    loading one raises (Kindle does not byte-swap) instead of returning wrong numbers."""
    global _default_load_endianness
    if not isinstance(endianness, LoadEndianness) and endianness is not None:
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _default_load_endianness = endianness


def _check_load_endianness(src, name, base):
    """Refuses a torch archive without a byteorder record when the fallback is BIG (see above)."""
    if _default_load_endianness is not LoadEndianness.BIG:
        return
    import zipfile
    src.seek(base)
    try:
        names = zipfile.ZipFile(src).namelist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return  # the reader reports what is wrong with the archive
    finally:
        src.seek(base)
    if not any(n == "byteorder" or n.endswith("/byteorder") for n in names):
        raise RuntimeError(f"kindle.load: {name}: the checkpoint has no byteorder record and "
                           "set_default_load_endianness(LoadEndianness.BIG) says it is big-endian; Kindle reads "
                           "little-endian data only")


# ---------------------------------------------------------------------------------------
# guards shared by the readers
# ---------------------------------------------------------------------------------------

class _HashGuard:
    """Refuses dict keys and set items crafted to collide in Python's hash.

    CPython's dicts and sets compare a key with every stored key of the same full hash, so
    n keys of one hash cost n**2 comparisons. str and bytes hash with a per-process random
    key and small ints hash to themselves (no two share a hash but -1 and -2), but the hash
    of a tuple, a frozenset, a float or an int of more than 60 bits is a public function an
    attacker can invert (ints equal modulo 2**61 - 1 collide, tuples of two ints collide at
    will). check() keeps, for each hash value, the distinct such keys seen in this load, and
    raises once more than _MAX_SAME_HASH distinct keys share one hash. Its own table is keyed
    by the hash value (an int below 2**64: at most 16 of those share a hash) and each check
    compares with at most _MAX_SAME_HASH keys, so it costs O(size of the key).
    """

    def __init__(self):
        self._seen = {}

    @staticmethod
    def exempt(key):
        t = type(key)
        return t is str or t is bytes or t is bool or key is None or (t is int and key.bit_length() <= 60)

    def check(self, key):
        """Record `key`; returns how many keys it was compared with. Raises TypeError if unhashable."""
        if self.exempt(key):
            return 0
        h = hash(key)
        same = self._seen.get(h)
        if same is None:
            self._seen[h] = [key]
            return 0
        for k in same:
            if k is key or k == key:
                return len(same)
        if len(same) >= _MAX_SAME_HASH:
            raise ValueError(f"more than {_MAX_SAME_HASH} distinct dict keys or set items share the hash value {h} "
                             "(keys crafted to collide make loading quadratic)")
        same.append(key)
        return len(same)


def _num(v):
    """An int for a message: file-supplied ints can have millions of digits."""
    return str(v) if type(v) is int and v.bit_length() <= 128 else f"<{type(v).__name__}>"


def _dims(t):
    shown = ", ".join(_num(v) for v in t[:8]) + (", ..." if len(t) > 8 else "," if len(t) == 1 else "")
    return f"({shown})"


def _check_view(size, stride, offset, available):
    """Why a tensor of `size`, `stride` (tuples) and `offset` cannot view a storage of
    `available` elements, or None. Sizes, strides and offset must be non-negative, the element
    count and every stride's reach must fit in int64, the addressed elements must lie in the
    storage, and a view that expands its storage may not address more than _MAX_VIEW_NUMEL
    elements."""
    if len(size) != len(stride):
        return f"size {_dims(size)} and stride {_dims(stride)} have different lengths"
    if len(size) > _MAX_DIMS:
        return f"{len(size)} dimensions (at most {_MAX_DIMS})"
    if type(offset) is not int or offset < 0:
        return f"invalid storage offset {_num(offset)}"
    if any(type(v) is not int for v in size + stride):
        return f"size {_dims(size)} and stride {_dims(stride)} must be ints"
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        return f"negative size or stride in size {_dims(size)}, stride {_dims(stride)}"
    numel = _checked_numel(list(size))
    if numel is None or any(s > _MAX_NUMEL for s in stride) or offset > _MAX_NUMEL:
        return f"size {_dims(size)} with stride {_dims(stride)} and offset {_num(offset)} overflows 64-bit indexing"
    if numel == 0:
        if offset > available:
            return f"offset {offset} is past a storage of {available} elements"
        return None
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= available:
        return (f"size {_dims(size)}, stride {_dims(stride)} and offset {offset} reach element {_num(last)} of a "
                f"storage of {available} elements")
    if numel > available and numel > _MAX_VIEW_NUMEL:  # an expanded (stride 0 or overlapping) view
        return (f"size {_dims(size)} addresses {numel} elements of a storage of {available} "
                f"(more than {_MAX_VIEW_NUMEL})")
    return None


def _checked_numel(shape):
    """numel of a shape, or None if it is negative, too long, or its strides overflow int64."""
    if len(shape) > _MAX_DIMS:
        return None
    numel, span = 1, 1
    for s in shape:
        if s < 0 or s > _MAX_NUMEL:
            return None
        numel *= s
        span *= max(s, 1)
        if span > _MAX_NUMEL:
            return None
    return numel


def _view_budget(file_size):
    """Bytes that all the tensors loaded from a file of `file_size` bytes may address together."""
    return _VIEW_FACTOR * file_size + _VIEW_SLACK


# ---------------------------------------------------------------------------------------
# tensor memory as bytes
# ---------------------------------------------------------------------------------------

def byte_view(t):
    """A writable byte memoryview of a contiguous CPU tensor's memory: shared, never copied.

    The caller keeps `t` alive while it uses the view.
    """
    if not t.is_cpu:  # (a meta tensor has no bytes; a device tensor's are not host memory)
        raise NotImplementedError(f"cannot read the bytes of a {t.device} tensor: move it with .cpu() first"
                                  + (" (a meta tensor has no data to save)" if t.is_meta else ""))
    n = t.numel() * t.element_size()
    if n == 0:
        return memoryview(bytearray())
    if t.dtype == _C.bfloat16:  # NumPy has no bfloat16: look at the same bytes as int16
        try:
            return memoryview(t.view(_C.int16).numpy()).cast("B")
        except (TypeError, RuntimeError, AttributeError):  # no Tensor.view(dtype): address the memory
            return memoryview((ctypes.c_ubyte * n).from_address(t.data_ptr())).cast("B")
    return memoryview(t.numpy()).cast("B")


def readinto_exact(src, view):
    """Fill `view` from `src`; False if the file ends first."""
    readinto = getattr(src, "readinto", None)
    while len(view):
        if readinto is not None:
            k = readinto(view)
        else:  # a file object without readinto: bounded chunks
            chunk = src.read(min(len(view), 1 << 24))
            k = len(chunk)
            view[:k] = chunk
        if not k:
            return False
        view = view[k:]
    return True


def write_all(out, data):
    """Write every byte: raw files may write less than asked (Linux caps one write at ~2 GiB)."""
    view = memoryview(data)
    while len(view):
        k = out.write(view)
        if k is None:
            if isinstance(out, io.RawIOBase):
                raise BlockingIOError("kindle.save: the file is non-blocking and not ready for writing")
            return  # a file-like object that does not report counts writes everything
        view = view[k:]


# ---------------------------------------------------------------------------------------
# save
# ---------------------------------------------------------------------------------------

class _Plan:
    """What a save writes: the "kindle" tree of `obj` and the tensors it names, as a core plan.

    Built entirely before the file is opened, so an object that cannot be saved leaves
    the disk untouched.
    """

    def __init__(self, obj):
        self.tensors = []   # (name, tensor)
        self._names = set()
        self._active = set()  # ids of the containers on the current path (cycle check)
        flat = self._is_flat(obj)
        if flat:
            for key, t in obj.items():
                self._add(key, t)
        self.file = self._header(flat, None if flat else self._encode(obj, [], 0))

    @staticmethod
    def _is_flat(obj):
        if not isinstance(obj, dict):
            return False
        for k, v in obj.items():
            if type(k) is not str or k == "__metadata__" or not isinstance(v, _C.Tensor):
                return False
            if v.requires_grad or type(v) is not _C.Tensor or getattr(v, "__dict__", None):
                return False
        return True

    def _add(self, name, t):
        if t.dtype not in _DTYPE_TO_ST:  # complex128: safetensors has no name for it; torch's zip layout does
            raise _NeedsPickle(f"kindle.save: tensor '{name}' has dtype {t.dtype}, which safetensors cannot store")
        base, n = name, 1
        while name in self._names or name == "__metadata__":
            name = f"{base}#{n}"
            n += 1
        self._names.add(name)
        self.tensors.append((name, t))
        return name

    def _encode(self, x, path, depth):
        if depth > _MAX_DEPTH:
            raise ValueError(f"kindle.save: object nested deeper than {_MAX_DEPTH} levels at {_where(path)}")
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, int):
            return int(x)
        if isinstance(x, float):
            x = float(x)
            # JSON has no NaN or infinities.
            return x if x - x == 0 else {"float": repr(x)}
        if isinstance(x, _C.Tensor):
            if getattr(x, "__dict__", None) or type(x) not in (_C.Tensor, _parameter_class()):
                raise _NeedsPickle("kindle.save: a tensor subclass or a tensor with attributes")  # pickled whole
            node = {"tensor": self._add(".".join(path) or "tensor", x)}
            if x.requires_grad:
                node["requires_grad"] = True
            if _is_parameter(x):
                node["parameter"] = True
            return node
        if isinstance(x, _C.dtype):
            return {"dtype": str(x).split(".")[-1]}
        if isinstance(x, (dict, list, tuple, set, frozenset)):
            if id(x) in self._active:
                raise ValueError(f"kindle.save: object contains itself at {_where(path)}")
            self._active.add(id(x))
            try:
                return self._encode_container(x, path, depth)
            finally:
                self._active.discard(id(x))
        raise _NeedsPickle(f"kindle.save: cannot save an object of type {type(x).__name__} at {_where(path)} "
                           "in a safetensors file")

    def _encode_container(self, x, path, depth):
        if isinstance(x, dict):
            items = []
            for k, v in x.items():
                if type(k) is not str and (type(k) is not int):
                    raise _NeedsPickle(f"kindle.save: dict key {k!r} at {_where(path)} has type {type(k).__name__}; "
                                    "keys must be str or int")
                items.append([k, self._encode(v, path + [str(k)], depth + 1)])
            return {"dict": items}
        if isinstance(x, (set, frozenset)):
            return {"set": [self._encode(v, path + [str(i)], depth + 1) for i, v in enumerate(x)]}
        kind = "tuple" if isinstance(x, tuple) else "list"
        return {kind: [self._encode(v, path + [str(i)], depth + 1) for i, v in enumerate(x)]}

    def _header(self, flat, tree):
        metadata = {"format": "pt"}
        if not flat:
            metadata["kindle"] = json.dumps({"version": _FORMAT_VERSION, "tree": tree},
                                            separators=(",", ":"), allow_nan=False)
        # The header, the file order and the byte stream are the core's (csrc/serialize/), as for C++.
        return _C._serialize.SafetensorsPlan(self.tensors, metadata)


class _NeedsPickle(TypeError):
    """The object holds something a safetensors file cannot describe: save pickles it instead."""


def _where(path):
    return "the top level" if not path else "'" + ".".join(path) + "'"


def _parameter_class():
    from . import nn
    return getattr(nn, "Parameter", None)


def _is_parameter(t):
    from . import nn
    param = getattr(nn, "Parameter", None)
    return param is not None and isinstance(t, param)


def _write_plan(out, plan):
    if not isinstance(plan, _Plan):  # a pickled object: its own zip layout
        plan.write(out)
        return
    plan.file.write(lambda view: write_all(out, view))


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False, *, format=None):
    """Save a tensor, a structure holding tensors, or any picklable object.

    By default (format="torch") the file is PyTorch's zip checkpoint, which torch.load reads
    (with weights_only=True for tensors, state dicts and plain containers) and kindle.load reads
    back safely (whole objects need weights_only=False or add_safe_globals, as in torch).
    format="safetensors", the default for a path ending in .safetensors, writes a safetensors
    file instead: a tensor or nested dicts (str or int keys), lists, tuples and sets of tensors,
    ints, floats, bools, strings, None and dtypes -- model and optimizer state dicts; a dict of
    str -> tensor is a plain safetensors file that any safetensors reader opens, other structures
    are described in the header's metadata; anything else raises ValueError.
    f is a path or a writable binary file object.

    In the torch format a CPU tensor is written as its whole storage, each storage once, as
    torch.save does: tensors that share storage (views, tied weights) come back sharing it (and
    a small view of a large tensor writes the large tensor: .clone() it first to save less). In
    safetensors each tensor is written contiguous on its own. Writing to a path is atomic: the data
    goes to a temporary file in the same folder, which is flushed, fsync'ed and renamed
    over the target, so a failed save leaves any previous file intact. A path that is a
    symlink is written through (its target is replaced, the link kept), and the temporary
    files of earlier saves of the same target whose process has died are removed.

    pickle_protocol (default 2, as torch) applies to pickled objects; pickle_module and the
    underscore arguments exist for compatibility with torch.save and are ignored.
    """
    if sys.byteorder != "little":
        raise NotImplementedError("kindle.save: big-endian machines are not supported")
    if format is None:
        is_path = isinstance(f, (str, bytes, os.PathLike))
        format = "safetensors" if is_path and os.fsdecode(f).endswith(".safetensors") else "torch"
    if format not in ("torch", "safetensors"):
        raise ValueError(f"kindle.save: format must be 'torch' or 'safetensors', got {format!r}")
    plan = None
    if format == "safetensors":
        try:
            plan = _Plan(obj)
        except _NeedsPickle as e:
            raise ValueError(f"kindle.save: {e}; save it in torch's format (format='torch', or a file name "
                             "not ending in .safetensors)") from None
    if plan is None:
        from ._pickle_save import PicklePlan
        plan = PicklePlan(obj, pickle_protocol)
    if isinstance(f, (str, bytes, os.PathLike)):
        _atomic_save(os.fsdecode(f), plan)
        return
    if isinstance(f, io.TextIOBase) or not hasattr(f, "write"):
        raise TypeError(f"kindle.save: f must be a path or a binary file object opened for writing, "
                        f"got {type(f).__name__}")
    _write_plan(f, plan)
    if hasattr(f, "flush"):
        f.flush()


def _atomic_save(path, plan):
    """Replace `path` atomically (csrc/serialize/atomic_file.h): a temporary file next to the
    target (through symlinks), fsync'ed, given the target's mode and renamed over it; stale
    temporaries of dead writers are removed first, and a failed save leaves the old file intact."""
    def write(fd):
        with open(fd, "wb", buffering=0, closefd=False) as out:
            _write_plan(out, plan)

    _C._serialize.atomic_write(path, write)


def _temp_name(base, pid):
    return _C._serialize.temp_name(base, pid)


# ---------------------------------------------------------------------------------------
# load
# ---------------------------------------------------------------------------------------

def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load an object saved by kindle.save, a safetensors file, or a torch.save zip checkpoint.

    weights_only (default True, as in torch 2.6 and later unless pickle_module is given):
    torch checkpoints are read with a restricted unpickler that rebuilds tensors, Parameters,
    dicts, OrderedDicts, lists, tuples, sets, plain Python values and what add_safe_globals
    allowlists, and raises pickle.UnpicklingError naming any other global (with torch's advice:
    allowlist it, or pass weights_only=False if the file is trusted). Nothing in the file runs.
    weights_only=False: full unpickling, as torch.load(weights_only=False) -- whole modules,
    optimizers, any pickled object -- which can run arbitrary code from the file; use it only
    for files from a trusted source. The environment variables TORCH_FORCE_WEIGHTS_ONLY_LOAD and
    TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD work as in torch. Safetensors files never run code.

    map_location may be None, 'cpu', kindle.device('cpu'), a dict mapping saved locations
    to devices, or a callable (storage, location) -> storage or None, as in torch.load;
    only the CPU is available. mmap is accepted for compatibility (f must then be a path)
    but tensors are always read into memory. With weights_only, only
    pickle_load_args['encoding'] is used; otherwise they go to the unpickler.
    Corrupt or hostile files raise ValueError or RuntimeError naming the file.
    """
    weights_only = _resolve_weights_only(weights_only, pickle_module)
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
        unknown = set(pickle_load_args) - {"encoding"}
        if unknown:
            raise TypeError(f"kindle.load: unexpected keyword argument(s) {sorted(unknown)}")
    _check_map_location(map_location)
    is_path = isinstance(f, (str, bytes, os.PathLike))
    if mmap and not is_path:
        raise ValueError("kindle.load: f must be a file path in order to use the mmap argument")
    how = (weights_only, pickle_module, pickle_load_args)
    if is_path:
        name = os.fsdecode(f)
        with open(name, "rb", buffering=0) as src:
            return _load_from(src, name, map_location, how)
    if not hasattr(f, "read"):
        raise TypeError(f"kindle.load: f must be a path or a binary file object, got {type(f).__name__}")
    name = str(getattr(f, "name", "<file object>"))
    if not (hasattr(f, "seekable") and f.seekable()):
        f = io.BytesIO(f.read())  # zip and safetensors both need to seek
    return _load_from(f, name, map_location, how)


def _resolve_weights_only(weights_only, pickle_module):
    not_set = weights_only is None
    if not_set:
        weights_only = pickle_module is None
    yes = ("1", "y", "yes", "true")
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in yes
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in yes
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` "
                           "should be set, but both were set.")
    if force:
        return True
    if force_no and not_set:  # only overrides a call that did not choose
        import warnings
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the"
                      "`weights_only` argument was not explicitly passed to `torch.load`, forcing weights_only=False.",
                      UserWarning, stacklevel=3)
        return False
    return bool(weights_only)


def _load_from(src, name, map_location, how):
    from . import _torch_pickle
    weights_only, pickle_module, pickle_load_args = how
    base = src.tell()
    end = src.seek(0, io.SEEK_END)
    src.seek(base)
    head = src.read(9)
    src.seek(base)
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        _check_load_endianness(src, name, base)
        if weights_only:
            obj = _torch_pickle.load_zip(src, name, base, end, map_location, pickle_load_args.get("encoding", "ASCII"))
        else:
            obj = _torch_pickle.load_zip(src, name, base, end, map_location, weights_only=False,
                                         pickle_module=pickle_module, pickle_load_args=pickle_load_args)
        src.seek(end)  # past the archive, as after reading a safetensors file
        return obj
    if len(head) == 9 and head[8:9] != b"{" and head[0] == 0x80 and 2 <= head[1] <= 5:
        raise RuntimeError(f"kindle.load: {name}: this is a legacy (non-zip) torch.save checkpoint, which Kindle "
                           "does not read; re-save it with torch.save's default zip format")
    _check_not_garbage(name, head, end - base)
    return _load_safetensors(src, name, base, end - base, map_location)


# torch.load hands a file that is not a zip archive to the unpickler, so an empty file raises
# EOFError and other bytes pickle.UnpicklingError. Kindle raises the same types (which are also
# ValueErrors, what Kindle's loader raises for a malformed file, so either except clause works).
class _EmptyFileError(EOFError, ValueError):
    pass


class _NotACheckpointError(pickle.UnpicklingError, ValueError):
    pass


_PICKLE_OPCODES = {op.code.encode("latin-1") for op in pickletools.opcodes}


def _check_not_garbage(name, head, size):
    """Raises as torch.load would for a file that is none of the formats (see above): empty, or
    not even the start of a safetensors file (a header length past the end of the file and no '{'
    where the header starts). A damaged safetensors file gets the safetensors reader's error."""
    if size == 0:
        raise _EmptyFileError(f"kindle.load: {name}: Ran out of input: the file is 0 bytes, too short for a "
                              "safetensors header or a torch.save checkpoint")
    if size >= 9 and (head[8:9] == b"{" or int.from_bytes(head[:8], "little") <= size - 8):
        return
    what = (f"not a torch.save checkpoint, a kindle.save file or a safetensors file (it is {size} bytes: too short "
            "for a safetensors header, or its header length is larger than the rest of the file)")
    if head[:1] not in _PICKLE_OPCODES:
        # pickle's own words for a first byte that is no opcode, as torch.load reports it (one
        # byte that is not an opcode: unpickling it only raises)
        try:
            pickle.loads(head[:1])
        except pickle.UnpicklingError as e:
            what = f"{e} ({what})"
    raise _NotACheckpointError(f"kindle.load: {name}: {what}")


# ---------------------------------------------------------------------------------------
# safe globals: what weights_only=True may rebuild beyond its fixed table
# ---------------------------------------------------------------------------------------

_safe_globals_set = set()


def add_safe_globals(safe_globals):
    """Marks classes and functions (or (object, "module.qualname") pairs) as safe for
    weights_only=True loads: the functions may be called and the classes instantiated and
    have their state set. Items are named {__module__}.{__qualname__} unless a pair says
    otherwise; a kindle class also matches the torch path a checkpoint names it by."""
    global _safe_globals_set
    _safe_globals_set = _safe_globals_set.union(set(safe_globals))


def get_safe_globals():
    """The user-added safe globals, as a list."""
    return list(_safe_globals_set)


def clear_safe_globals():
    global _safe_globals_set
    _safe_globals_set = set()


class safe_globals:  # noqa: N801  (torch's name)
    """Context manager: add_safe_globals(safe_globals) for its body, removed again at exit."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, exc_type, exc_value, tb):
        global _safe_globals_set
        _safe_globals_set = _safe_globals_set - set(self.safe_globals)


def _user_allowed_globals():
    """{"module.qualname": object} of the safe globals, checked as torch checks them."""
    out = {}
    for f in _safe_globals_set:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple "
                                 f"of length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: {type(f[1])}")
            out[f[1]] = f[0]
        else:
            out[f"{f.__module__}.{f.__qualname__}"] = f
    return out


def _fail(name, what):
    return ValueError(f"kindle.load: {name}: {what}")


def _load_safetensors(src, name, base, size, map_location):
    # The core reads and validates the file (csrc/serialize/safetensors.h): straight from the
    # descriptor of a real file, through read_at for any other file object.
    if type(src) is io.FileIO:
        source = src.fileno()
    else:
        def source(offset, view):
            src.seek(base + offset)
            return readinto_exact(src, view)
    named, metadata = _C._serialize.read_safetensors(source, base, size, name, _MAX_HEADER)
    src.seek(base + size)
    tensors = {key: _map_tensor(t, "cpu", map_location) for key, t in named}
    tree = (metadata or {}).get("kindle")
    if tree is None:
        return tensors  # the header's order
    return _decode_tree(name, tree, tensors)


def _decode_tree(name, text, tensors):
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise _fail(name, f"'kindle' metadata is not valid JSON ({type(e).__name__})") from None
    if not isinstance(doc, dict) or "tree" not in doc:
        raise _fail(name, "'kindle' metadata must be an object with a 'tree'")
    if doc.get("version") != _FORMAT_VERSION:
        raise _fail(name, f"'kindle' metadata has version {doc.get('version')!r}; this Kindle reads version "
                          f"{_FORMAT_VERSION}")
    return _decode(name, doc["tree"], tensors, 0, _HashGuard())


def _guarded(name, guard, key):
    try:
        guard.check(key)
    except ValueError as e:
        raise _fail(name, f"'kindle' metadata: {e}") from None
    except TypeError:
        raise _fail(name, "'kindle' metadata: a set holds an unhashable value") from None


def _decode(name, node, tensors, depth, guard):
    if depth > _MAX_DEPTH:
        raise _fail(name, f"'kindle' metadata is nested deeper than {_MAX_DEPTH} levels")
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if not isinstance(node, dict) or not node:
        raise _fail(name, f"'kindle' metadata: unexpected node {node!r:.100}")
    tag = next(iter(node))
    value = node[tag]
    if tag == "tensor":
        if not isinstance(value, str) or value not in tensors:
            raise _fail(name, f"'kindle' metadata references tensor {value!r:.100}, which the file does not hold")
        t = tensors[value]
        if node.get("requires_grad") is True:
            if not t.is_floating_point():
                raise _fail(name, f"'kindle' metadata asks tensor {value!r:.100} of {t.dtype} to require grad")
            t.requires_grad_(True)
        if node.get("parameter") is True:
            from . import nn
            if getattr(nn, "Parameter", None) is not None:
                t = nn.Parameter(t, requires_grad=t.requires_grad)
        return t
    if tag == "float" and value in ("nan", "inf", "-inf"):
        return float(value)
    if tag == "dtype" and value in _DTYPE_NAMES:
        return _DTYPE_NAMES[value]
    if tag in ("list", "tuple", "set", "dict") and isinstance(value, list):
        if tag == "dict":
            out = {}
            for pair in value:
                if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) in (str, int)):
                    raise _fail(name, f"'kindle' metadata: dict item {pair!r:.100} is not a "
                                      "[str or int key, value] pair")
                _guarded(name, guard, pair[0])
                out[pair[0]] = _decode(name, pair[1], tensors, depth + 1, guard)
            return out
        items = [_decode(name, v, tensors, depth + 1, guard) for v in value]
        if tag == "list":
            return items
        if tag == "tuple":
            return tuple(items)
        for item in items:
            _guarded(name, guard, item)
        return set(items)
    raise _fail(name, f"'kindle' metadata: unexpected node {node!r:.100}")


# ---------------------------------------------------------------------------------------
# map_location
# ---------------------------------------------------------------------------------------

def _check_map_location(map_location):
    if map_location is None or callable(map_location) or isinstance(map_location, dict):
        return
    if not isinstance(map_location, str) and not getattr(map_location, "_kindle_device", False):
        raise TypeError(f"kindle.load: map_location must be None, a str, a kindle.device, a dict or a callable, "
                        f"got {type(map_location).__name__}")
    _target_device(map_location, "cpu")


def _target_device(target, location):
    text = str(target)
    kind = text.split(":", 1)[0]
    if kind != "cpu":
        raise RuntimeError(f"kindle.load: cannot map a tensor saved on '{location}' to '{text}': only the CPU "
                           "is available; pass map_location='cpu'")
    return text


def _map_tensor(t, location, map_location):
    """Apply torch.load's map_location rules to a freshly read tensor (or storage) saved at `location`."""
    if map_location is None:
        _target_device(location, location)
        return t
    if isinstance(map_location, dict):
        _target_device(map_location.get(location, location), location)
        return t
    if callable(map_location) and not getattr(map_location, "_kindle_device", False):
        result = map_location(t, location)
        if result is None:
            _target_device(location, location)
            return t
        if not isinstance(result, _C.Tensor) or result.dtype != t.dtype or tuple(result.shape) != tuple(t.shape):
            raise TypeError("kindle.load: map_location callable must return the storage it was given, "
                            "a tensor of the same dtype and shape, or None")
        return result
    _target_device(map_location, location)
    return t
