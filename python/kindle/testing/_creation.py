"""make_tensor: random test tensors over torch.testing.make_tensor's value ranges.

Defaults, [low, high): bool [0, 2), unsigned integers [0, 10), signed integers [-9, 10),
floating types [-9, 9). Bounds outside the dtype's finite range are clamped to it; integer
bounds are rounded up (low so that no value falls below it, high because it is exclusive).
"""
import collections.abc
import math
import warnings

from .. import _C

_INTEGER_RANGES = {  # dtype: (lowest, highest)
    _C.uint8: (0, 2**8 - 1),
    _C.int8: (-2**7, 2**7 - 1),
    _C.int16: (-2**15, 2**15 - 1),
    _C.int32: (-2**31, 2**31 - 1),
    _C.int64: (-2**63, 2**63 - 1),
}
_FLOAT_LIMITS = {  # dtype: (largest finite, smallest positive normal)
    _C.float16: (65504.0, 6.103515625e-05),
    _C.bfloat16: (3.3895313892515355e38, 1.1754943508222875e-38),
    _C.float32: (3.4028234663852886e38, 1.1754943508222875e-38),
    _C.float64: (1.7976931348623157e308, 2.2250738585072014e-308),
}


def _bounds(dtype, low, high, lowest, highest_exclusive, default_low, default_high):
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype in _FLOAT_LIMITS:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating types is deprecated "
                      "since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.", FutureWarning,
                      stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest_exclusive:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} "
                         f"only supports [{lowest}, {highest_exclusive})")
    low = min(max(low, lowest), highest_exclusive)
    high = min(max(high, lowest), highest_exclusive)
    if dtype not in _FLOAT_LIMITS:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of `shape` (ints, or one sequence) with values drawn uniformly from [low, high).

    noncontiguous: the result is a strided view (when it has two or more elements).
    exclude_zero: zeros become 1 (bool, integers) or the dtype's smallest positive normal."""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(int(s) for s in shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    is_float = dtype in _FLOAT_LIMITS
    if requires_grad and not is_float:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype}")
    if not is_float and dtype != _C.bool and dtype not in _INTEGER_RANGES:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by kindle.testing.make_tensor().")

    numel = math.prod(shape)
    noncontiguous = noncontiguous and numel > 1
    if noncontiguous:  # twice as wide, then every other column from the second: a strided view
        shape = shape[:-1] + (2 * shape[-1],)

    if dtype == _C.bool:
        low, high = _bounds(dtype, low, high, 0, 2, 0, 2)
        result = _C.randint(low, high, list(shape), dtype=dtype, device=device)
    elif not is_float:
        lowest, highest = _INTEGER_RANGES[dtype]
        # randint cannot draw int64's largest value: its exclusive bound would overflow
        highest_exclusive = highest + (0 if dtype == _C.int64 else 1)
        low, high = _bounds(dtype, low, high, lowest, highest_exclusive, -9, 10)
        result = _C.randint(low, high, list(shape), dtype=dtype, device=device)
    else:
        largest, _ = _FLOAT_LIMITS[dtype]
        low, high = _bounds(dtype, low, high, -largest, largest, -9, 9)
        result = _C.empty(list(shape), dtype=dtype, device=device)
        if high - low >= largest:  # the width itself would overflow: draw half the range and double
            result.uniform_(low / 2, high / 2).mul_(2)
        else:
            result.uniform_(low, high)
        if dtype in (_C.float16, _C.bfloat16) and low < high:
            # uniform_ rounds its float draw to the dtype, which can land on `high`; keep [low, high)
            result.masked_fill_(result >= high, low)

    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)

    if exclude_zero:
        replacement = _FLOAT_LIMITS[dtype][1] if is_float else 1
        result.masked_fill_(result == 0, replacement)

    if is_float:
        result.requires_grad_(requires_grad)
    return result
