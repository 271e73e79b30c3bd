"""Helpers shared by the Python tests: converting results to NumPy, comparing them with a
reference (values, dtype, shape), and classifying exceptions for error-parity checks."""
from __future__ import annotations

import numpy as np

import kindle
from opdb import DEFAULT_TOL, dtype_name

# The builtin exception types PyTorch raises, most specific first (NotImplementedError and
# ZeroDivisionError derive from RuntimeError / ArithmeticError).
_EXC_KINDS = (NotImplementedError, IndexError, ValueError, TypeError, ZeroDivisionError, RuntimeError)


def exc_kind(e: BaseException):
    for k in _EXC_KINDS:
        if isinstance(e, k):
            return k
    return type(e)


def exc_compatible(kindle_exc, torch_exc) -> bool:
    """kindle raised what torch raised: the same builtin kind; for torch's NotImplementedError
    (a kernel missing for a dtype, RuntimeError before torch 2.x) a plain RuntimeError will do."""
    k, t = exc_kind(kindle_exc), exc_kind(torch_exc)
    return k is t or (t is NotImplementedError and k is RuntimeError)


def run(fn, *args, **kwargs):
    """(result, None) or (None, exception)."""
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001  (any exception is an outcome to compare)
        return None, e


def is_tensor(x) -> bool:
    return isinstance(x, kindle.Tensor) or type(x).__name__ == "Tensor"


def to_numpy(t) -> np.ndarray:
    """A tensor (kindle or torch) as a NumPy array; bfloat16 widened to float32 (exact)."""
    if isinstance(t, kindle.Tensor):
        if dtype_name(t.dtype) == "bfloat16":
            t = t.to(kindle.float32)
        return np.asarray(t.numpy())
    if hasattr(t, "detach"):  # torch
        t = t.detach().resolve_conj().resolve_neg()
        if dtype_name(t.dtype) == "bfloat16":
            t = t.float()
        return t.numpy()
    return np.asarray(t)


def values_mismatch(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float):
    """None when close (NaN == NaN, inf == inf), else a short description of the difference.
    Complex values: the real and the imaginary parts each."""
    if actual.shape != expected.shape:
        return f"shape {actual.shape} != {expected.shape}"
    if actual.size == 0:
        return None
    if np.iscomplexobj(actual) or np.iscomplexobj(expected):
        a, e = np.asarray(actual, np.complex128), np.asarray(expected, np.complex128)
        return values_mismatch(np.stack([a.real, a.imag], -1), np.stack([e.real, e.imag], -1), rtol, atol)
    if actual.dtype == np.bool_ or expected.dtype == np.bool_ or (rtol == 0 and atol == 0):
        a, e = actual.astype(np.float64), expected.astype(np.float64)
        bad = ~((a == e) | (np.isnan(a) & np.isnan(e)))
    else:
        a, e = actual.astype(np.float64), expected.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            bad = ~np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
            bad &= ~((a == e))  # inf == inf
    if not bad.any():
        return None
    idx = np.argwhere(bad)[:4]
    pairs = ", ".join(f"{tuple(int(j) for j in i)}: {a[tuple(i)]!r} vs {e[tuple(i)]!r}" for i in idx)
    with np.errstate(invalid="ignore"):
        diff = np.nanmax(np.abs(a - e)[bad]) if np.isfinite(a[bad]).all() and np.isfinite(e[bad]).all() else "nan/inf"
    return f"{int(bad.sum())}/{bad.size} values differ (max abs diff {diff}; rtol={rtol}, atol={atol}); {pairs}"


def tolerance(result_dtype: str, op=None):
    if op is not None:
        return op.tolerance(result_dtype)
    return DEFAULT_TOL.get(result_dtype, (0.0, 0.0))


def compare(actual, expected, op=None, check_values=True, check_strides=False, exact=False, path="out"):
    """Differences between a kindle result and a reference (torch result or NumPy array); [] if
    none. Tensors: shape, dtype (by name), values within the op's tolerance; sequences: length
    and items; Python scalars: type family and value."""
    errs = []
    if is_tensor(expected) or isinstance(expected, np.ndarray):
        if not isinstance(actual, kindle.Tensor):
            return [f"{path}: expected a Tensor, got {type(actual).__name__}"]
        eshape = tuple(expected.shape)
        if tuple(actual.shape) != eshape:
            return [f"{path}: shape {tuple(actual.shape)} != {eshape}"]
        ad, ed = dtype_name(actual.dtype), dtype_name(expected.dtype)
        if is_tensor(expected) and ad != ed:
            errs.append(f"{path}: dtype {ad} != {ed}")
        if check_strides and is_tensor(expected) and expected.numel() > 0:  # empty: strides moot
            if tuple(actual.stride()) != tuple(expected.stride()):
                errs.append(f"{path}: stride {tuple(actual.stride())} != {tuple(expected.stride())}")
            elif actual.storage_offset() != expected.storage_offset():
                errs.append(f"{path}: storage_offset {actual.storage_offset()} != {expected.storage_offset()}")
        if check_values and not errs:
            rtol, atol = (0.0, 0.0) if exact else tolerance(ed if is_tensor(expected) else ad, op)
            m = values_mismatch(to_numpy(actual), to_numpy(expected), rtol, atol)
            if m:
                errs.append(f"{path}: {m}")
        return errs
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)):
            return [f"{path}: expected a sequence, got {type(actual).__name__}"]
        if len(actual) != len(expected):
            return [f"{path}: {len(actual)} items != {len(expected)}"]
        for i, (a, e) in enumerate(zip(actual, expected)):
            errs += compare(a, e, op, check_values, check_strides, exact, f"{path}[{i}]")
        return errs
    if isinstance(expected, (bool, int, float)):
        if type(actual) is not type(expected):
            errs.append(f"{path}: type {type(actual).__name__} != {type(expected).__name__}")
        elif isinstance(expected, float) and not (actual == expected or
                                                  (np.isnan(actual) and np.isnan(expected))):
            if not np.isclose(actual, expected, rtol=1e-6, atol=1e-7):
                errs.append(f"{path}: {actual!r} != {expected!r}")
        elif not isinstance(expected, float) and actual != expected:
            errs.append(f"{path}: {actual!r} != {expected!r}")
        return errs
    if actual != expected:
        errs.append(f"{path}: {actual!r} != {expected!r}")
    return errs


def report(failures, limit=12):
    """Assertion message for a list of (sample, message) failures."""
    lines = [f"{len(failures)} failing sample(s):"]
    for s, msg in failures[:limit]:
        lines.append(f"  {s!r}: {msg}")
    if len(failures) > limit:
        lines.append(f"  ... and {len(failures) - limit} more")
    return "\n".join(lines)
