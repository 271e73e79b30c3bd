"""default_collate and default_convert, as in torch.utils.data._utils.collate.

default_collate turns a list of samples into a batch: tensors are stacked on a new first
dimension, NumPy arrays and scalars become tensors, Python ints become an int64 tensor, floats
a float64 tensor, bools a bool tensor, strings and bytes stay lists, and mappings, namedtuples
and sequences are collated field by field. `collate(batch, collate_fn_map=...)` lets a custom
collate_fn reuse the traversal with its own per-type functions.
"""
import collections.abc
import copy
import re

import kindle

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map",
           "collate_tensor_fn"]

# NumPy dtype codes of strings and objects, which cannot become tensors.
np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, "
                                  "numbers, dicts or lists; found {}")


def _is_numpy(obj):
    t = type(obj)
    return t.__module__ == "numpy" and t.__name__ not in ("str_", "string_", "bytes_")


def _numpy_as_tensor(data):
    # Through an ndarray: a NumPy scalar keeps its dtype (np.int32 -> int32, np.bool_ -> bool).
    import numpy as np
    return kindle.as_tensor(np.asarray(data))


def default_convert(data):
    """Converts NumPy arrays and scalars to tensors, recursing into mappings, namedtuples and
    sequences; everything else is returned unchanged (used when batching is disabled)."""
    elem_type = type(data)
    if isinstance(data, kindle.Tensor):
        return data
    if _is_numpy(data):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return _numpy_as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        converted = {key: default_convert(data[key]) for key in data}
        return _rebuild_mapping(data, converted)
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # PyTorch returns a list here too
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def _rebuild_mapping(like, values):
    # Keep the mapping's own type (OrderedDict, defaultdict, ...) where it can be rebuilt.
    try:
        if isinstance(like, collections.abc.MutableMapping):
            clone = copy.copy(like)
            clone.update(values)
            return clone
        return type(like)(values)
    except TypeError:
        return values


def _rebuild_sequence(like, items):
    try:
        if isinstance(like, collections.abc.MutableSequence):
            clone = copy.copy(like)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(like)(items)
    except TypeError:
        return items


def collate(batch, *, collate_fn_map=None):
    """Collates ``batch`` by the type of its first element: an exact type (or, failing that, a
    base class) in ``collate_fn_map`` picks the function; mappings, namedtuples and sequences
    are collated field by field; anything else raises TypeError."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        values = {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                  for key in elem}
        return _rebuild_mapping(elem, values)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map)
                           for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        # Each column is a tuple (strings stay tuples there, as in PyTorch).
        columns = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return columns  # a list, as in PyTorch
        return _rebuild_sequence(elem, columns)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    return kindle.stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([kindle.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return _numpy_as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map=None):
    return kindle.tensor(batch, dtype=kindle.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    # bool is an int: a batch of bools becomes a bool tensor, of ints an int64 tensor.
    return kindle.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {kindle.Tensor: collate_tensor_fn}
try:
    import numpy as _np
except ImportError:  # pragma: no cover - NumPy is a dependency of kindle in practice
    _np = None
if _np is not None:
    default_collate_fn_map[_np.ndarray] = collate_numpy_array_fn
    # String scalars are not numbers: np.str_ / np.bytes_ fall through to str / bytes.
    default_collate_fn_map[(_np.bool_, _np.number, _np.object_)] = collate_numpy_scalar_fn
default_collate_fn_map[float] = collate_float_fn
default_collate_fn_map[int] = collate_int_fn
default_collate_fn_map[str] = collate_str_fn
default_collate_fn_map[bytes] = collate_str_fn


def default_collate(batch):
    """The DataLoader's collate_fn when batching is on (see the module docstring)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
