"""Differential fuzzer: random short programs run step by step on torch and on kindle.

A program is data: a list of steps ``(kind, name, args, kwargs)`` whose arguments may hold
``Ref(i)`` (the value of step i), ``DT(name)`` (a dtype, ``lib.<name>``) and ``Lit(data, dtype)``
(a small tensor literal, ``lib.tensor(data, dtype=...)``). ``execute(lib, step, env)`` runs one
step with ``lib`` = torch or kindle; ``render(program)`` writes the same program as Python code.

``generate(seed)`` builds a program of 5-10 ops, using torch to learn shapes and dtypes so that
most steps are valid (a few erroring steps are kept on purpose). ``run_pair(program)`` runs it on
both libraries in lockstep and compares every step: raise/no-raise, exception kind, shape, dtype,
strides of views, values (dtype-aware tolerance, NaN == NaN). Each disagreement becomes a
``Finding`` with a minimal reproducer. Values that are undefined (float -> int casts of NaN/inf/
out-of-range values) are compared only for raise/no-raise; argmax-like indices are compared by the
values they point at (ties). A program stops at its first disagreement (what follows mostly
repeats it). Compatible exception kinds (torch RuntimeError, kindle a subclass) are recorded as
``note:`` findings, not disagreements; deliberate differences are listed, with reasons, in ALLOW.

``run_batches`` (used by the test and scripts/fuzz_long.py) runs ``worker_main`` in subprocesses,
so that a segfault, abort or hang in kindle becomes a Finding with the program that caused it.
"""
from __future__ import annotations

import json
import math
import os
import pickle
import random
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Ref:
    i: int


@dataclass(frozen=True)
class DT:
    name: str


@dataclass(frozen=True)
class Lit:
    data: object
    dtype: str


@dataclass
class Finding:
    cls: str
    op: str
    detail: str
    code: str = ""


# Deliberate differences from torch, never reported: (class, op or tuple of ops or "*", substring of
# detail or "", reason). Kindle bugs do not go here: the test stays strict until they are fixed.
# Most entries are torch inconsistencies, where its result depends on a size or a fast path;
# Kindle gives the one answer torch gives in the general case.
_MM = ("bmm", "matmul", "mm", "mv", "addmm", "einsum", "F.linear")
ALLOW = [
    ("kindle raises, torch not", _MM, "to have the same dtype",
     "torch skips its dtype check when an operand is empty (and einsum when a product needs no bmm); "
     "Kindle refuses mixed dtypes in every case, as torch does for nonempty operands"),
    ("kindle raises, torch not", _MM, "not implemented for 'Bool'",
     "torch multiplies bool matrices only when an operand is empty (nothing to compute); Kindle "
     "refuses bool as torch does for nonempty operands"),
    ("torch raises, kindle not", "addmm", "can't be cast to the desired output type",
     "torch's path for an empty inner dimension computes beta * self in float and refuses to cast "
     "it back to an integer self; its general path (and Kindle) accepts a float beta with integers"),
    ("exception type differs", "*", "OverflowError: int too big to convert",
     "a Python int beyond 64 bits: torch's argument parser raises OverflowError, Kindle's bindings "
     "find no overload and raise TypeError; both refuse it"),
    ("torch raises, kindle not", ("round", "round_"), "not implemented for",
     "torch's round(int_tensor, decimals=0) raises when decimals is passed explicitly but returns the "
     "input without it; Kindle treats decimals=0 the same either way"),
    ("kindle raises, torch not", "masked_fill_", "more than one element of the written-to tensor",
     "torch does not check masked_fill_'s target for internal overlap (an expanded tensor), so the "
     "result depends on the write order; Kindle refuses it as it does for every in-place op"),
    ("torch raises, kindle not", "*", "overflow",
     "an empty tensor whose other dims multiply past 2**63 (unfold of a huge empty tensor): torch "
     "refuses to compute its strides or numel; Kindle's tensor has no element and its strides are "
     "never read"),
    ("kindle raises, torch not", "take_along_dim", "out of bounds",
     "along a dim torch 2.13 wraps every index modulo the size (take_along_dim(x, [[100]], 1) reads "
     "column 100 % n) while its dim=None form and gather raise; Kindle accepts [-n, n) and raises "
     "past it instead of answering silently"),
    ("shape differs", "nonzero", "",
     "a count of exact zeros in a bfloat16 result that torch rounds in a different order upstream "
     "(log_softmax: torch rounds log-sum-exp to bfloat16 before subtracting, so x - lse is exactly 0 "
     "where Kindle gives -0.0033, the correctly rounded value)"),
    # Non-finite values and the float range's end, where torch's rounding order differs from Kindle's.
    ("value differs", "F.conv2d", "",
     "NaN or infinite inputs or weights: torch's kernels skip padded taps (finite where Kindle's "
     "0 * inf is NaN) and spread a non-finite value into outputs it does not touch (NaN where "
     "Kindle, summing only the window, is finite); finite values agree"),
    ("value differs", "F.interpolate", "",
     "non-finite inputs: torch's two-tap formula gives NaN where a tap of weight exactly 0 meets an "
     "infinity and ignores taps past the edge; Kindle's separable weights differ at those points only "
     "(finite inputs agree, and the NaN/inf positions are covered by test_robustness)"),
    ("value differs", "F.gelu", "",
     "at the end of the float range and at infinity Kindle's gelu is exact (gelu(x) = x there); torch "
     "overflows the intermediate x * (1 + erf) to inf, and gives NaN for gelu(inf)"),
    ("value differs", ("prod", "std", "var", "sum", "addmm", "matmul", "fmod", "fmod_", "remainder", "remainder_",
                       "F.layer_norm"), "",
     "values within a factor of a few of the float32 range: Kindle accumulates in float64 (or keeps "
     "the mean exact) where torch overflows an intermediate to inf/NaN or leaves a rounding residual "
     "that a huge weight magnifies; finite results that torch rounds differently"),
    ("kindle raises, torch not", "full", "without overflow",
     "torch checks the fill value against float16/bfloat16 only when the tensor has more than one "
     "element; Kindle checks it always"),
    ("exception type differs", "index_select", "INDICES element is out of DATA bounds",
     "torch's fast path for the last dim of a 2-D tensor raises RuntimeError for an index out of range; "
     "its other paths, and Kindle always, raise IndexError"),
    ("kindle raises, torch not", "einsum", "to have the same dtype",
     "torch's einsum promotes operands of different dtypes when the contraction is a plain product "
     "(every summed index of size 1, or an empty operand) and refuses them when it goes through bmm; "
     "Kindle refuses them in every case, as torch does for the general one"),
]

# Open Kindle bugs that the fixed-seed run of test_fuzz_differential still finds: (program index,
# class, op). These are bugs, not deliberate differences; the test fails on any disagreement not
# listed here and on any listed one that has been fixed, so this set only ever shrinks.
KNOWN_OPEN = set()

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int64", "int32", "int16", "int8", "uint8"]
DTYPES = FLOATS + INTS + ["bool"]
NP_DTYPE = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": np.float32,
            "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8,
            "bool": np.bool_}
SPECIAL = [math.nan, math.inf, -math.inf, -0.0, 1e4, 7e4, 1e30, -1e30, 1e-30, 3e38]
SCALARS = [0, 1, -1, 2, 3, 0.5, -2.5, True, False, 1e300, -1e300, 1e10, 2**31, 2**62, 2**63 - 1,
           -2**63, 2**64, 255, 256, -129, math.nan, math.inf, 1e-3]
BIG_EMPTY = [(0, 2**40), (2**40, 0), (2, 0, 2**40)]  # any non-empty result of these cannot be allocated
UNARY = ["abs", "neg", "exp", "log", "sqrt", "sin", "tanh", "sigmoid", "floor", "ceil", "round", "trunc",
         "sign", "reciprocal", "rsqrt", "log1p", "expm1", "erf", "bitwise_not", "logical_not", "isnan",
         "isfinite", "square", "frac", "exp2", "nan_to_num", "clamp", "relu"]
NO_INPLACE = {"isnan", "isfinite"}
BINARY = ["add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum",
          "atan2", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
          "bitwise_and", "bitwise_or", "bitwise_xor", "copysign"]
COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}
CASTS = {"to", "int", "long", "short", "char", "byte", "half", "float", "double", "bool", "bfloat16"}
# Ops whose output holds indices (element 1 of a (values, indices) pair for max/min with dim).
INDEX_OPS = {"argmax", "argmin", "max", "min"}
VIEW_OPS = {"view", "reshape", "transpose", "permute", "expand", "narrow", "select", "unsqueeze",
            "squeeze", "t", "unfold", "as_strided", "movedim", "flatten", "diagonal"}
ACCUM_OPS = {"sum", "mean", "prod", "var", "std", "cumsum", "logsumexp", "matmul", "mm", "bmm", "mv",
             "dot", "addmm", "einsum", "conv2d", "layer_norm", "softmax", "log_softmax",
             "cross_entropy", "interpolate", "outer"}
TOL = {"float64": (1e-7, 1e-9), "float32": (1e-4, 1e-5), "float16": (4e-3, 1e-3), "bfloat16": (2e-2, 1e-2)}
LOW_PREC_ACCUM = (5e-2, 5e-2)
MAX_NUMEL = 4096
NOTE = "note: "  # Finding classes that are not disagreements (lenient matches, recorded only)
MEMORY_LIMIT = 12 << 30  # bytes of address space per worker process


# ----------------------------------------------------------------------------------- execution
def _resolve(lib, a, env):
    if isinstance(a, Ref):
        v = env[a.i]
        if isinstance(v, _Failed):
            raise _Skip()
        return v
    if isinstance(a, DT):
        return getattr(lib, a.name)
    if isinstance(a, Lit):
        return lib.tensor(a.data, dtype=getattr(lib, a.dtype))
    if isinstance(a, tuple):
        return tuple(_resolve(lib, x, env) for x in a)
    if isinstance(a, list):
        return [_resolve(lib, x, env) for x in a]
    if isinstance(a, dict):
        return {k: _resolve(lib, v, env) for k, v in a.items()}
    return a


class Retry(Exception):
    """A step generator could not make a fitting step; try another."""


class _Skip(Exception):
    """A step depends on a value that raised on both sides."""


class _Failed:
    def __init__(self, exc):
        self.exc = exc


def make_input(lib, arr, dtype):
    # Built exactly as render_step writes it (NumPy gives empty arrays all-zero strides).
    t = lib.from_numpy(np.zeros(arr.shape, arr.dtype) if arr.size == 0 else arr.copy())
    return t.to(lib.bfloat16) if dtype == "bfloat16" else t


def execute(lib, step, env):
    kind, name, args, kwargs = step
    if kind == "input":
        return make_input(lib, args[0], name)
    args, kwargs = _resolve(lib, args, env), _resolve(lib, kwargs, env)
    if kind == "torch":
        return getattr(lib, name)(*args, **kwargs)
    if kind == "F":
        return getattr(lib.nn.functional, name)(*args, **kwargs)
    if kind == "method":
        return getattr(args[0], name)(*args[1:], **kwargs)
    if kind == "getitem":
        return args[0][args[1]]
    if kind == "setitem":
        args[0][args[1]] = args[2]
        return args[0]
    raise ValueError(kind)


# ----------------------------------------------------------------------------------- rendering
def _r(a, in_index=False):
    if isinstance(a, Ref):
        return f"v{a.i}"
    if isinstance(a, DT):
        return f"lib.{a.name}"
    if isinstance(a, Lit):
        return f"lib.tensor({a.data!r}, dtype=lib.{a.dtype})"
    if isinstance(a, slice) and in_index:
        s = lambda x: "" if x is None else repr(x)  # noqa: E731
        return f"{s(a.start)}:{s(a.stop)}" + ("" if a.step is None else f":{a.step}")
    if a is Ellipsis:
        return "..."
    if isinstance(a, tuple):
        if in_index:
            return ", ".join(_r(x, True) for x in a) + ("," if len(a) == 1 else "") if a else "()"
        return "(" + ", ".join(_r(x) for x in a) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, list):
        return "[" + ", ".join(_r(x) for x in a) + "]"
    return repr(a)


def render_step(i, step):
    kind, name, args, kwargs = step
    if kind == "input":
        arr = args[0]
        src = f"lib.from_numpy(np.zeros({arr.shape!r}, dtype='{arr.dtype}'))" if arr.size == 0 else \
            f"lib.from_numpy(np.array({arr.tolist()!r}, dtype='{arr.dtype}').reshape({arr.shape!r}))"
        return f"v{i} = {src}" + (".to(lib.bfloat16)" if name == "bfloat16" else "")
    a = [_r(x) for x in args] + [f"{k}={_r(v)}" for k, v in kwargs.items()]
    if kind == "torch":
        return f"v{i} = lib.{name}({', '.join(a)})"
    if kind == "F":
        return f"v{i} = lib.nn.functional.{name}({', '.join(a)})"
    if kind == "method":
        return f"v{i} = {a[0]}.{name}({', '.join(a[1:])})"
    if kind == "getitem":
        return f"v{i} = {a[0]}[{_r(args[1], True)}]"
    return f"{a[0]}[{_r(args[1], True)}] = {a[2]}; v{i} = {a[0]}"


def render(program, last=None):
    """Python code that runs `program` on torch and kindle and prints the last value of each."""
    last = len(program) - 1 if last is None else last
    body = "\n".join("    " + render_step(i, s) for i, s in enumerate(program) if s is not None)
    return ("import numpy as np, torch, kindle\nnan, inf = float('nan'), float('inf')\n\n"
            f"def program(lib):\n{body}\n    return v{last}\n\n"
            "for lib in (torch, kindle):\n    try:\n        print(lib.__name__, program(lib))\n"
            "    except Exception as e:\n        print(lib.__name__, 'raises', type(e).__name__, e)\n")


# ----------------------------------------------------------------------------------- generation
class Gen:
    """Builds one program; runs each candidate step on torch to know shapes and dtypes."""

    def __init__(self, seed):
        import torch
        self.torch = torch
        self.r = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.program, self.env = [], []
        self.errors = 0

    # --- values
    def shape(self, ndim=None, maxn=48):
        r = self.r
        ndim = r.choice([0, 1, 1, 2, 2, 2, 3, 3, 4]) if ndim is None else ndim
        while True:
            s = tuple(r.choice([0, 1, 1, 2, 2, 3, 3, 4, 5]) if r.random() > 0.04 else 0 for _ in range(ndim))
            if math.prod(s) <= maxn:
                return s

    def array(self, shape, dtype):
        n = self.np
        if dtype == "bool":
            return n.random(shape) < 0.5
        if dtype in INTS:
            info = np.iinfo(NP_DTYPE[dtype])
            lo = 0 if dtype == "uint8" else -5
            a = n.integers(lo, 8, size=shape).astype(NP_DTYPE[dtype])
            if a.size and self.r.random() < 0.15:
                a.flat[n.integers(0, a.size)] = self.r.choice([info.min, info.max])
            return a
        a = (n.standard_normal(shape) * 2).astype(NP_DTYPE[dtype])
        if a.size and self.r.random() < 0.15:
            with np.errstate(over="ignore"):
                a.flat[n.integers(0, a.size)] = self.r.choice(SPECIAL)
        return np.asarray(a)

    def dtype(self, floats=False):
        r = self.r
        if floats or r.random() < 0.45:
            return r.choice(["float32", "float32", "float64", "float16", "bfloat16"])
        return r.choice(DTYPES)

    def scalar(self):
        r = self.r
        return r.choice(SCALARS) if r.random() < 0.4 else r.choice([0, 1, 2, -3, 0.5, 1.5, -0.25, True])

    def input(self, shape=None, dtype=None, noncontig=None):
        shape = self.shape() if shape is None else tuple(shape)
        if math.prod(shape) > MAX_NUMEL:
            raise Retry()
        dtype = dtype or self.dtype()
        noncontig = (self.r.random() < 0.25 and len(shape) >= 1) if noncontig is None else noncontig
        if not noncontig:
            return self._add(("input", dtype, (self.array(shape, dtype),), {}), force=True)
        if self.r.random() < 0.5 and len(shape) >= 2:  # transposed storage
            a = self._add(("input", dtype, (self.array(shape[::-1], dtype),), {}), force=True)
            perm = tuple(range(len(shape)))[::-1]
            return self._add(("method", "permute", (Ref(a), perm), {}), force=True)
        big = (shape[0] * 2,) + shape[1:]  # every other row
        a = self._add(("input", dtype, (self.array(big, dtype),), {}), force=True)
        return self._add(("getitem", "getitem", (Ref(a), slice(None, None, 2)), {}), force=True)

    def tensor(self, pred=lambda t: True):
        T = self.torch.Tensor
        cands = [i for i, v in enumerate(self.env) if isinstance(v, T) and pred(v)]
        if cands and self.r.random() < 0.85:
            return self.r.choice(cands[-4:])
        return None

    def t(self, i):
        return self.env[i]

    # --- steps
    def _add(self, step, force=False):
        """Run `step` on torch; keep it if it works (or, rarely, if it raises). Returns its index."""
        try:
            v = execute(self.torch, step, self.env)
        except _Skip:
            return None
        except Exception as e:  # noqa: BLE001
            msg = str(e)
            if "memory" in msg or "allocate" in msg or (self.errors >= 2 and not force):
                return None
            if not force and self.r.random() > 0.3:
                return None
            self.errors += 1
            v = _Failed(e)
        else:
            vals = v if isinstance(v, (tuple, list)) else [v]
            if any(isinstance(x, self.torch.Tensor) and x.numel() > MAX_NUMEL for x in vals):
                return None
        self.program.append(step)
        self.env.append(v)
        return len(self.program) - 1


def generate(seed, nops=None):
    """A program of 5-10 ops (inputs not counted) from `seed`."""
    import fuzz_ops
    g = Gen(seed)
    target = nops or g.r.randint(5, 10)
    ops = 0
    for _ in range(target * 8):
        if ops >= target:
            break
        gen = g.r.choices(fuzz_ops.GENERATORS, weights=fuzz_ops.WEIGHTS)[0]
        try:
            step = gen(g)
        except Exception:  # noqa: BLE001  (Retry, or a generator's own probing on torch failed)
            continue
        if step is not None and g._add(step) is not None:
            ops += 1
    return g.program


# ----------------------------------------------------------------------------------- comparison
_KINDS = (NotImplementedError, IndexError, ValueError, TypeError, RuntimeError)


def exc_kind(e):
    return next((k for k in _KINDS if isinstance(e, k)), type(e))


def dname(dtype):
    return str(dtype).split(".")[-1]


def _is_tensor(v):
    return type(v).__name__ == "Tensor" or type(v).__name__ == "Parameter"


def to_np(v):
    v = v.detach()
    if dname(v.dtype) == "bfloat16":
        v = v.float()
    return np.asarray(v.numpy())


def op_name(step):
    kind, name, args, _ = step
    if kind in ("getitem", "setitem"):
        idx = args[1] if isinstance(args[1], tuple) else (args[1],)
        parts = sorted({"mask" if isinstance(a, Lit) and a.dtype == "bool" else "tensor" if isinstance(a, (Lit, Ref))
                        else type(a).__name__ for a in idx})
        return f"{kind}[{','.join(parts)}]"
    return ("F." if kind == "F" else "") + name


def _refs(a, out):
    if isinstance(a, Ref):
        out.append(a.i)
    elif isinstance(a, (tuple, list)):
        for x in a:
            _refs(x, out)
    elif isinstance(a, dict):
        for x in a.values():
            _refs(x, out)
    return out


def step_refs(step):
    return sorted(set(_refs(step[2], []) + _refs(step[3], [])))


def _tol(dtype, op):
    rtol, atol = TOL.get(dtype, (0.0, 0.0))
    if op in ACCUM_OPS and dtype in ("float16", "bfloat16"):
        return LOW_PREC_ACCUM
    if op in ACCUM_OPS and dtype == "float32":
        return rtol, 1e-4
    return rtol, atol


def values_differ(a, e, rtol, atol):
    """None if close (NaN == NaN, inf == inf), else a short description."""
    if a.size == 0:
        return None
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        bad = ~((a64 == e64) | (np.isnan(a64) & np.isnan(e64)))
        if rtol or atol:
            bad &= ~np.isclose(a64, e64, rtol=rtol, atol=atol)
    if not bad.any():
        return None
    i = tuple(int(j) for j in np.argwhere(bad)[0])
    return f"{int(bad.sum())}/{bad.size} differ, e.g. at {i}: torch {float(e64[i])!r} kindle {float(a64[i])!r}"


def _bitwise_equal(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))) and np.array_equal(np.signbit(a), np.signbit(b)))
    return bool(np.array_equal(a, b))


def _undefined_cast(step, out_dtype, snaps):
    """Float -> integer conversion of NaN/inf/out-of-range values (undefined: compare no values)."""
    if out_dtype not in INTS:
        return False
    name = step[1]
    if not (name in CASTS or name in ("setitem", "scatter", "scatter_", "sum", "prod", "cumsum", "mean", "full")
            or "dtype" in step[3]):
        return False
    info = np.iinfo(NP_DTYPE[out_dtype])
    for s in snaps.values():
        if s is not None and s.dtype.kind == "f" and s.size:
            with np.errstate(invalid="ignore"):
                if not np.all(np.isfinite(s)) or s.min() < info.min or s.max() > info.max + 1:
                    return True
    return False


def _self_overlapping(t):
    """Whether two elements of tensor t share memory (an unfold with step < size, an expand)."""
    if not _is_tensor(t) or t.numel() < 2 or t.numel() > 1_000_000:
        return False
    offsets = np.zeros((), dtype=np.int64)
    for size, stride in zip(t.shape, t.stride()):
        offsets = offsets[..., None] + np.arange(size, dtype=np.int64) * stride
    return len(np.unique(offsets)) < t.numel()


def _storage(v):
    try:
        return v.untyped_storage().data_ptr() if _is_tensor(v) else None
    except Exception:  # noqa: BLE001
        return None


def _describe(v):
    if _is_tensor(v):
        return f"Tensor(shape={tuple(v.shape)}, dtype={dname(v.dtype)})"
    if isinstance(v, (tuple, list)):
        return type(v).__name__ + "(" + ", ".join(_describe(x) for x in v) + ")"
    return repr(v)[:80]


def _exc(e):
    return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"


class _Pair:
    """State of one lockstep run: environments of both libraries, taint, findings."""

    def __init__(self, program):
        import kindle
        import torch
        self.torch, self.kindle, self.program = torch, kindle, program
        self.tenv, self.kenv = [None] * len(program), [None] * len(program)
        self.tainted_storage, self.tainted = set(), set()
        self.findings = []
        self.same_strides = False  # the current step's input has the same strides on both sides

    def is_tainted(self, i):
        return i in self.tainted or _storage(self.tenv[i]) in self.tainted_storage

    def taint(self, i):
        self.tainted.add(i)
        if _storage(self.tenv[i]) is not None:
            self.tainted_storage.add(_storage(self.tenv[i]))

    def compare(self, t, k, op, path=""):
        """(class, detail) of the first difference between a torch and a kindle value, or None."""
        if _is_tensor(t):
            if not _is_tensor(k):
                return "type differs", f"{path}torch {_describe(t)} kindle {_describe(k)}"
            if tuple(t.shape) != tuple(k.shape):
                return "shape differs", f"{path}torch {tuple(t.shape)} kindle {tuple(k.shape)}"
            if dname(t.dtype) != dname(k.dtype):
                return "dtype differs", f"{path}torch {dname(t.dtype)} kindle {dname(k.dtype)}"
            ts, ks = (tuple(t.stride()), t.storage_offset()), (tuple(k.stride()), k.storage_offset())
            if op in VIEW_OPS and t.numel() > 1 and self.same_strides and ts != ks:
                return "stride differs", f"{path}torch strides, offset {ts} kindle {ks}"
            return None
        if isinstance(t, (tuple, list)):
            if not isinstance(k, (tuple, list)) or len(k) != len(t):
                return "type differs", f"{path}torch {_describe(t)} kindle {_describe(k)}"
            for j, (a, b) in enumerate(zip(t, k)):
                d = self.compare(a, b, op, f"{path}[{j}] ")
                if d:
                    return d
            return None
        if type(t) is not type(k):
            return "type differs", f"{path}torch {t!r} kindle {k!r}"
        return None

    def values(self, t, k, dtype_op):
        """Value difference between tensors (or scalars) t and k, or None."""
        if _is_tensor(t):
            if t.numel() == 0:
                return None
            return values_differ(to_np(k), to_np(t), *_tol(dname(t.dtype), dtype_op))
        if isinstance(t, (tuple, list)):
            return next((d for d in (self.values(a, b, dtype_op) for a, b in zip(t, k)) if d), None)
        if isinstance(t, float):
            return values_differ(np.array([k]), np.array([t]), *_tol("float32", dtype_op))
        return None if t == k else f"torch {t!r} kindle {k!r}"

    def index_values(self, step, t, k, snaps):
        """argmax-like: indices may differ where values tie; compare the values they select."""
        x = snaps.get(step[2][0].i)
        ti, ki = to_np(t), to_np(k)
        if np.array_equal(ti, ki):
            return None, True
        if x is None:
            return f"indices torch {ti.tolist()} kindle {ki.tolist()}", False
        dim = step[2][1] if len(step[2]) > 1 else step[3].get("dim")
        try:
            if dim is None or x.ndim == 0:
                tv, kv = x.reshape(-1)[ti.astype(np.int64)], x.reshape(-1)[ki.astype(np.int64)]
            else:
                if not step[3].get("keepdim", False):
                    ti, ki = np.expand_dims(ti, dim), np.expand_dims(ki, dim)
                tv, kv = np.take_along_axis(x, ti, dim), np.take_along_axis(x, ki, dim)
        except IndexError:
            return f"index out of range: kindle {ki.tolist()}", False
        return values_differ(kv, tv, 0, 0), False

    def step(self, i, step):
        """Run step i on both libraries; record a finding if they disagree."""
        op = op_name(step)
        refs = step_refs(step)
        # An in-place op with another input on the written storage (x.add_(x[:, :1])), or whose
        # target overlaps itself (an unfold view): torch reads while writing, so its result
        # depends on its loop order; Kindle reads a copy. Recorded as a note, not compared.
        target = self.tenv[refs[0]] if refs else None
        aliased = (step[0] == "setitem" or step[1].endswith("_")) and _is_tensor(target) and (
            _self_overlapping(target) or any(
            _is_tensor(self.tenv[r]) and _storage(self.tenv[r]) == _storage(target) and
            (tuple(self.tenv[r].shape), self.tenv[r].stride(), self.tenv[r].storage_offset()) !=
            (tuple(target.shape), target.stride(), target.storage_offset()) for r in refs[1:]))
        snaps, exact = {}, True
        for j in refs:
            tv, kv = self.tenv[j], self.kenv[j]
            if _is_tensor(tv) and _is_tensor(kv):
                try:
                    snaps[j] = to_np(tv).copy()
                    exact &= _bitwise_equal(snaps[j], to_np(kv))
                except Exception:  # noqa: BLE001
                    snaps[j], exact = None, False
        outs = []
        for lib, env in ((self.torch, self.tenv), (self.kindle, self.kenv)):
            try:
                outs.append((execute(lib, step, env), None))
            except _Skip:
                outs.append((None, "skip"))
            except Exception as e:  # noqa: BLE001
                outs.append((None, e))
        (t, te), (k, ke) = outs
        if te == "skip" or ke == "skip":
            self.tenv[i] = self.kenv[i] = _Failed(None)
            return
        if te is not None or ke is not None:
            if te is not None and refs and (step[0] == "setitem" or step[1].endswith("_")):
                self.taint(refs[0])  # torch may have written part of the target before raising
            self.tenv[i] = t if te is None else _Failed(te)
            self.kenv[i] = k if ke is None else _Failed(ke)
            if te is None or ke is None:
                self.tenv[i] = self.kenv[i] = _Failed(te or ke)
                if te is None:
                    return self.add("kindle raises, torch not", op, f"kindle {_exc(ke)}; torch {_describe(t)}",
                                    i, snaps)
                return self.add("torch raises, kindle not", op, f"torch {_exc(te)}; kindle {_describe(k)}", i, snaps)
            tk, kk = exc_kind(te), exc_kind(ke)
            if tk is kk:
                return
            if (tk is RuntimeError and isinstance(ke, RuntimeError)) or \
                    (tk is NotImplementedError and kk is RuntimeError):
                # compatible kinds: recorded as a note, not a disagreement
                detail = f"torch {_exc(te)}; kindle {_exc(ke)}"
                self.findings.append(Finding(NOTE + "exception kind compatible", op, detail))
                return
            return self.add("exception type differs", op, f"torch {_exc(te)}; kindle {_exc(ke)}", i, snaps)
        self.tenv[i], self.kenv[i] = t, k
        if aliased:
            self.taint(i)
            self.taint(refs[0])
            self.findings.append(Finding(NOTE + "in-place op reads its own output", op, ""))
            return
        src = (self.tenv[refs[0]], self.kenv[refs[0]]) if refs else (None, None)
        self.same_strides = bool(refs) and all(map(_is_tensor, src)) and \
            (tuple(src[0].stride()), src[0].storage_offset()) == (tuple(src[1].stride()), src[1].storage_offset())
        d = self.compare(t, k, step[1])
        if d:
            self.tenv[i] = self.kenv[i] = _Failed(None)
            return self.add(d[0], op, d[1], i, snaps)
        if any(self.is_tainted(j) for j in refs) or (_is_tensor(t) and _undefined_cast(step, dname(t.dtype), snaps)):
            return self.taint(i)
        if step[1] in INDEX_OPS and (step[1].startswith("arg") or isinstance(t, tuple)):
            if not exact:  # inputs drifted: which index wins is moot
                return self.taint(i)
            if isinstance(t, tuple):
                d = self.values(t[0], k[0], step[1])
                if d:
                    return self.add("value differs", op, "values: " + d, i, snaps)
                t, k = t[1], k[1]
            d, same = self.index_values(step, t, k, snaps)
            if not same:
                self.taint(i)
            return self.add("value differs", op, d, i, snaps) if d else None
        try:
            d = self.values(t, k, step[1])
        except Exception as e:  # noqa: BLE001  (a result that cannot be read back)
            return self.add("kindle raises, torch not", op + " (reading the result)", _exc(e), i, snaps)
        if d is None:
            return
        if exact or not self.top:
            return self.add("value differs", op, d, i, snaps)
        self.taint(i)  # inputs already differed slightly: report only if the step alone disagrees
        iso = self.isolate(i, snaps)
        if iso is not None:
            f = next((f for f in run_pair(iso, top=False) if f.cls == "value differs"), None)
            if f:
                self.findings.append(Finding("value differs", op, f.detail, render(iso)))

    top = True  # a top-level run: minimise reproducers, re-check drifted values in isolation

    def isolate(self, i, snaps):
        """Step i alone, with inputs made from torch's values just before it."""
        step = self.program[i]
        refs = step_refs(step)
        if any(snaps.get(j) is None for j in refs):
            return None
        prog = [None] * len(self.program)
        for j in refs:
            prog[j] = ("input", dname(self.tenv[j].dtype), (snaps[j],), {})
        prog[i] = step
        return prog[:i + 1]

    def add(self, cls, op, detail, i, snaps):
        code = self.reproducer(cls, i, snaps) if self.top else ""
        self.findings.append(Finding(cls, op, detail, code))

    def reproducer(self, cls, i, snaps):
        for prog in (self.isolate(i, snaps), dependency_slice(self.program, i, self.tenv), self.program[:i + 1]):
            if prog is not None and any(f.cls == cls for f in run_pair(prog, top=False, final=False)):
                return render(prog)
        return render(self.program[:i + 1])

    def final_sweep(self):
        """Values can change after their step (in-place ops on aliases): compare everything again."""
        for i, (t, k) in enumerate(zip(self.tenv, self.kenv)):
            if _is_tensor(t) and _is_tensor(k) and not self.is_tainted(i) and t.shape == k.shape:
                d = self.values(t, k, self.program[i][1])
                if d:
                    self.findings.append(Finding("value differs", f"final state ({op_name(self.program[i])})",
                                                 f"v{i}: {d}", render(self.program, last=i)))
                    return


def dependency_slice(program, i, tenv=None):
    """Steps that step i depends on: through references, and in-place steps on shared storage."""
    keep = {i}
    storages = set()
    for j in range(i, -1, -1):
        s = program[j]
        if s is None:
            continue
        mutates = s[0] == "setitem" or s[1].endswith("_")
        if j in keep or (mutates and tenv is not None and _storage(tenv[j]) in storages):
            keep.add(j)
            keep.update(step_refs(s))
            if tenv is not None and _storage(tenv[j]) is not None:
                storages.add(_storage(tenv[j]))
    return [s if j in keep else None for j, s in enumerate(program[:i + 1])]


def run_pair(program, top=True, final=True):
    """Run `program` on torch and kindle in lockstep; the list of Findings."""
    p = _Pair(program)
    p.top = top
    for i, step in enumerate(program):
        if step is None:
            continue
        p.step(i, step)
        if any(not f.cls.startswith(NOTE) for f in p.findings):  # what follows would mostly repeat it
            break
    if final and all(f.cls.startswith(NOTE) for f in p.findings):
        p.final_sweep()
    p.findings = [f for f in p.findings if not allowed(f)]
    return p.findings


def allowed(f):
    return any(f.cls == c and (f.op == o or (isinstance(o, tuple) and f.op in o) or o == "*") and s in f.detail
               for c, o, s, _ in ALLOW)


# ----------------------------------------------------------------------------------- batches
def program_seed(seed, i):
    return seed * 1_000_003 + i


def fuzz_one(seed, i):
    """Findings of program i of the run with `seed` (in this process)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_pair(generate(program_seed(seed, i)))


_HERE = os.path.dirname(os.path.abspath(__file__))
_BOOT = f"import sys; sys.path.insert(0, {_HERE!r}); import fuzz_programs as f; f.worker_main(sys.argv[1:])"


def worker_main(argv):
    """`--run SEED START COUNT`: one JSON line per program; `--probe FILE`: run a pickled program."""
    import importlib
    import resource
    import time
    # Runaway allocations fail fast instead of swamping the machine (in both libraries). Not
    # under AddressSanitizer, whose shadow memory needs terabytes of address space.
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    for attempt in range(10):  # the installed package may be in the middle of being replaced
        try:
            importlib.import_module("kindle")
            break
        except ImportError:
            if attempt == 9:
                raise
            sys.modules.pop("kindle", None)
            sys.modules.pop("kindle._C", None)
            time.sleep(3)
    if argv[0] == "--probe":
        with open(argv[1], "rb") as fh:
            run_pair(pickle.load(fh), top=False)
        return
    if argv[0] == "--generate":  # generation alone (it runs torch, which can crash too)
        generate(program_seed(int(argv[1]), int(argv[2])))
        return
    seed, start, count = map(int, argv[1:4])
    for i in range(start, start + count):
        findings = fuzz_one(seed, i)
        print(json.dumps({"i": i, "findings": [asdict(f) for f in findings]}), flush=True)
    print(json.dumps({"done": True}), flush=True)


def _subprocess(args, timeout):
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", PYTHONWARNINGS="ignore")
    try:
        p = subprocess.run([sys.executable, "-c", _BOOT, *args], capture_output=True, text=True,
                           timeout=timeout, env=env)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return "timeout", out, ""


def _crash_class(rc):
    if rc == "timeout":
        return "hang (timeout)"
    return f"crash (signal {-rc})" if rc < 0 else f"crash (exit {rc})"


def _probe(program, timeout=120):
    """Exit status of a subprocess running `program`: 0, a crash status, or 'timeout'."""
    with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as fh:
        pickle.dump(program, fh)
    try:
        return _subprocess(["--probe", fh.name], timeout)[0]
    finally:
        os.unlink(fh.name)


def crash_finding(seed, i, rc, timeout=120):
    """Finding for program i that crashed: the first crashing step and its dependency slice."""
    # The generator runs candidate steps on torch; torch itself can crash there (SIGFPE in
    # torch 2.13), which is not a kindle finding. Generate in a subprocess first.
    grc = _subprocess(["--generate", str(seed), str(i)], timeout)[0]
    if grc != 0:
        return Finding(NOTE + "torch crashes while generating", f"program {i}",
                       f"seed {seed}: generation alone exits with {grc}")
    program = generate(program_seed(seed, i))
    if _probe(program, timeout) == 0:
        return Finding(_crash_class(rc) + ", only after earlier programs", f"program {i}", "",
                       render(program))
    lo, hi = 0, len(program) - 1  # smallest prefix that crashes
    while lo < hi:
        mid = (lo + hi) // 2
        if _probe(program[:mid + 1], timeout) != 0:
            hi = mid
        else:
            lo = mid + 1
    sliced = dependency_slice(program, lo)
    prog = sliced if _probe(sliced, timeout) != 0 else program[:lo + 1]
    return Finding(_crash_class(rc), op_name(program[lo]), f"program {i} of seed {seed}, step {lo}", render(prog))


def run_batches(seed, n, start=0, jobs=1, batch=200, timeout=600, on_result=None):
    """Fuzz programs [start, start+n) in subprocess batches (`jobs` at a time); a crash or hang
    becomes a Finding and the batch resumes after the program that crashed. Returns the list of
    (program index, Finding); `on_result(i, findings)` is called for every program."""
    from concurrent.futures import ThreadPoolExecutor
    results = []

    def one(a, count):
        found = []
        while count > 0:
            rc, out, err = _subprocess(["--run", str(seed), str(a), str(count)], timeout)
            done, last = False, a - 1
            for line in out.splitlines():
                if not line.startswith("{"):
                    continue
                rec = json.loads(line)
                if rec.get("done"):
                    done = True
                    continue
                last = rec["i"]
                fs = [Finding(**f) for f in rec["findings"]]
                found += [(last, f) for f in fs]
                if on_result:
                    on_result(last, fs)
            if done and rc == 0:
                break
            bad = last + 1
            f = crash_finding(seed, bad, rc)
            if rc != "timeout" and rc > 0 and "Traceback" in err:
                f = Finding("harness error", f"program {bad}", err.strip().splitlines()[-1][:300], f.code)
            found.append((bad, f))
            if on_result:
                on_result(bad, [f])
            count -= bad + 1 - a
            a = bad + 1
        return found

    chunks = [(a, min(batch, start + n - a)) for a in range(start, start + n, batch)]
    with ThreadPoolExecutor(max(1, jobs)) as ex:
        for found in ex.map(lambda c: one(*c), chunks):
            results += found
    return results
