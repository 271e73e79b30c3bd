"""assert_close: torch.testing.assert_close's pairing rules, tolerances and messages.

The inputs are first walked into (actual, expected) leaf pairs: sequences pair item by item,
mappings key by key, and a structural mismatch or an unsupported leaf raises before any value is
compared. The leaves are then compared in order and the first mismatch raises.
"""
import cmath
import collections.abc
import math
import numbers

import numpy as np

from .. import _C
from ..autograd.grad_mode import no_grad

# Default (rtol, atol) per dtype, as torch 2.x; integers and bool compare exactly.
_DEFAULT_TOLERANCES = {
    _C.float16: (1e-3, 1e-5),
    _C.bfloat16: (1.6e-2, 1e-5),
    _C.float32: (1.3e-6, 1e-5),
    _C.float64: (1e-7, 1e-7),
}


class _Mismatch(Exception):
    """A comparison failure on its way up: becomes an exception of type `kind` with the path of
    the failing item appended to the message."""

    def __init__(self, kind, message, path=()):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.path = path


def _path_suffix(path):
    if not path:
        return ""
    return "\n\nThe failure occurred for item " + "".join(f"[{p!r}]" for p in path)


def _unsupported(actual, expected, path):
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                               f"{type(expected)}.", path)


def _is_sequence(x):
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, (str, bytes, bytearray))


def _is_tensor_like(x):
    if isinstance(x, _C.Tensor):
        return True
    return isinstance(x, np.ndarray) and (x.dtype.kind in "biuf")


def _originate_pairs(actual, expected, path, pairs, allow_subclasses):
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != "
                                            f"{len(expected)}", path)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _originate_pairs(a, e, path + (i,), pairs, allow_subclasses)
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            missing = _sorted_keys(expected_keys - actual_keys)
            additional = _sorted_keys(actual_keys - expected_keys)
            raise _Mismatch(AssertionError, f"The keys of the mappings do not match:\n"
                                            f"Missing keys in the actual mapping: {missing}\n"
                                            f"Additional keys in the actual mapping: {additional}", path)
        for key in _sorted_keys(expected_keys):
            _originate_pairs(actual[key], expected[key], path + (key,), pairs, allow_subclasses)
        return
    pairs.append(_leaf_pair(actual, expected, path, allow_subclasses) + (path,))


def _sorted_keys(keys):
    try:
        return sorted(keys)
    except TypeError:  # keys of mixed types: a stable order all the same
        return sorted(keys, key=repr)


def _as_number(x):
    return x.item() if isinstance(x, np.generic) else x


def _leaf_pair(actual, expected, path, allow_subclasses):
    """(kind, actual, expected) for a leaf pair; NumPy arrays come back as tensors."""
    if actual is None and expected is None:
        return "none", actual, expected
    if isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
        return "bool", actual, expected
    a, e = _as_number(actual), _as_number(expected)
    if isinstance(a, numbers.Number) and isinstance(e, numbers.Number):
        return "number", a, e
    if _is_tensor_like(actual) and _is_tensor_like(expected):
        related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if related and (allow_subclasses or type(actual) is type(expected)):
            try:
                return "tensor", _to_tensor(actual), _to_tensor(expected)
            except (TypeError, ValueError, RuntimeError):  # e.g. negative strides, byte-swapped
                pass
    _unsupported(actual, expected, path)


def _tolerances(dtypes, rtol, atol):
    if rtol is not None:
        return rtol, atol
    rtols, atols = zip(*(_DEFAULT_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes))
    return max(rtols), max(atols)


def _number_dtype(x):
    """The dtype whose tolerances a Python number gets: int (and bool) int64, float and complex
    float64 (complex128's tolerances are float64's)."""
    return _C.int64 if isinstance(x, numbers.Integral) else _C.float64


def _describe_tolerance(tol, exact):
    return "" if exact else f" (up to {tol} allowed)"


def _scalar_message(actual, expected, rtol, atol):
    exact = rtol == 0 and atol == 0
    abs_diff = abs(actual - expected)
    denominator = abs(expected)
    if denominator == 0:
        rel_diff = math.nan if (_isnan(abs_diff) or abs_diff == 0) else math.inf
    else:
        rel_diff = abs_diff / denominator
    return (f"Scalars are not {'equal' if exact else 'close'}!\n\n"
            f"Expected {expected} but got {actual}.\n"
            f"Absolute difference: {abs_diff}{_describe_tolerance(atol, exact)}\n"
            f"Relative difference: {rel_diff}{_describe_tolerance(rtol, exact)}")


def _isnan(x):
    return cmath.isnan(x) if isinstance(x, complex) else isinstance(x, float) and math.isnan(x)


def _numbers_close(a, e, rtol, atol, equal_nan):
    if a == e:
        return True
    if _isnan(a) or _isnan(e):
        return equal_nan and _isnan(a) and _isnan(e)
    if not (cmath.isfinite(a) and cmath.isfinite(e)):
        return False  # an infinity is close only to itself
    return abs(a - e) <= atol + rtol * abs(e)


def _compare_numbers(actual, expected, rtol, atol, equal_nan, check_dtype, path):
    a, e = actual, expected
    a_dtype, e_dtype = _number_dtype(a), _number_dtype(e)
    if check_dtype and type(a) is not type(e):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(a)} != {type(e)}.", path)
    rtol, atol = _tolerances((a_dtype, e_dtype), rtol, atol)
    if not _numbers_close(a, e, rtol, atol, equal_nan):
        raise _Mismatch(AssertionError, _scalar_message(a, e, rtol, atol), path)


def _to_tensor(x):
    if isinstance(x, np.ndarray):
        if not x.dtype.isnative:
            raise TypeError("byte-swapped array")
        return _C.as_tensor(x)
    return x.detach()


def _check_attributes(a, e, check_device, check_dtype, check_layout, check_stride, path):
    def mismatch(name, va, ve):
        raise _Mismatch(AssertionError, f"The values for attribute '{name}' do not match: {va} != {ve}.", path)

    if a.shape != e.shape:
        mismatch("shape", a.shape, e.shape)
    if check_device and a.device != e.device:
        mismatch("device", a.device, e.device)
    if check_dtype and a.dtype != e.dtype:
        mismatch("dtype", a.dtype, e.dtype)
    layout_a, layout_e = getattr(a, "layout", None), getattr(e, "layout", None)
    if check_layout and layout_a != layout_e:
        mismatch("layout", layout_a, layout_e)
    if check_stride and a.stride() != e.stride():
        mismatch("stride()", a.stride(), e.stride())


def _matches(a, e, rtol, atol, equal_nan):
    if a.is_floating_point():
        return _C.isclose(a, e, rtol, atol, equal_nan)
    if rtol == 0 and atol == 0:
        return _C.eq(a, e)
    return _C.isclose(a.to(_C.float64), e.to(_C.float64), rtol, atol, equal_nan)


def _first_max(values):
    """(value, flat index) of the greatest element, a NaN winning (first one on ties)."""
    nans = _C.isnan(values) if values.is_floating_point() else None
    if nans is not None and bool(nans.any()):
        idx = int(_C.nonzero(nans).reshape(-1)[0].item())
    else:
        idx = int(_C.argmax(values).item())
    return values[idx].item(), idx


def _unravel(flat_index, shape):
    idx = []
    for size in reversed(list(shape)):
        idx.append(flat_index % size)
        flat_index //= size
    return tuple(reversed(idx))


def _tensor_message(a, e, matches, rtol, atol):
    exact = rtol == 0 and atol == 0
    total = matches.numel()
    mismatched = total - int(matches.sum().item())
    a_flat, e_flat, m_flat = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    if not a.is_floating_point():  # integers (and bool) differ without wrapping around
        a_flat, e_flat = a_flat.to(_C.int64), e_flat.to(_C.int64)
    abs_diff = (a_flat - e_flat).abs().masked_fill(m_flat, 0)
    max_abs, abs_idx = _first_max(abs_diff)
    rel_diff = (abs_diff / e_flat.abs()).masked_fill(m_flat, 0)
    max_rel, rel_idx = _first_max(rel_diff)
    return (f"Tensor-likes are not {'equal' if exact else 'close'}!\n\n"
            f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})\n"
            f"Greatest absolute difference: {max_abs} at index {_unravel(abs_idx, a.shape)}"
            f"{_describe_tolerance(atol, exact)}\n"
            f"Greatest relative difference: {max_rel} at index {_unravel(rel_idx, a.shape)}"
            f"{_describe_tolerance(rtol, exact)}")


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, check_layout,
                     check_stride, path):
    a, e = actual, expected
    _check_attributes(a, e, check_device, check_dtype, check_layout, check_stride, path)
    rtol, atol = _tolerances((a.dtype, e.dtype), rtol, atol)
    if a.dtype != e.dtype:
        common = _C.promote_types(a.dtype, e.dtype)
        a, e = a.to(common), e.to(common)
    if a.device != e.device:
        a, e = a.cpu(), e.cpu()
    if a.numel() == 0:
        return
    matches = _matches(a, e, rtol, atol, equal_nan)
    if bool(matches.all()):
        return
    if a.dim() == 0:
        message = _scalar_message(a.item(), e.item(), rtol, atol)
    else:
        message = _tensor_message(a, e, matches, rtol, atol)
    raise _Mismatch(AssertionError, message, path)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Asserts that `actual` and `expected` are close: tensors (and NumPy arrays, against each
    other) elementwise with |actual - expected| <= atol + rtol * |expected|, Python numbers
    likewise, sequences and mappings item by item. Default tolerances depend on the dtype
    (float32: rtol 1.3e-6, atol 1e-5; float64: 1e-7, 1e-7; integers and bool: exact); give both
    rtol and atol or neither. `msg` replaces the failure message, or maps it when callable."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'atol' if atol is None else 'rtol'}.")
    try:
        pairs = []
        _originate_pairs(actual, expected, (), pairs, allow_subclasses)
        with no_grad():
            for kind, a, e, path in pairs:
                if kind == "bool":
                    if bool(a) != bool(e):
                        raise _Mismatch(AssertionError, f"Booleans mismatch: {bool(a)} is not {bool(e)}", path)
                elif kind == "number":
                    _compare_numbers(a, e, rtol, atol, equal_nan, check_dtype, path)
                elif kind == "tensor":
                    _compare_tensors(a, e, rtol, atol, equal_nan, check_device, check_dtype, check_layout,
                                     check_stride, path)
    except _Mismatch as m:
        text = m.message + _path_suffix(m.path)
        if m.kind is AssertionError and msg is not None:
            text = msg(text) if callable(msg) else str(msg)
        raise m.kind(text) from None
