"""The op database: for every op of csrc/ops/ops.yaml that is a function or a Tensor method, its
sample inputs, the dtypes PyTorch supports it for, its kwargs variants, its in-place variant and
its tolerances. The generic tests in test_ops.py / test_ops_consistency.py are parametrized over it.

Samples are built in NumPy (seeded) and turned into tensors with `lib.tensor(...)` for either
library (kindle or torch), so both get identical inputs. A tensor argument is a `TArg`: exact
values plus the view ops (transpose, slice with steps, expand, permute) that make it
non-contiguous; both libraries apply the same view ops themselves.

Adding an op: one `OpInfo(...)` line, usually through a helper (`unary`, `binary`, `reduction`).

torch.nn.functional ops (`functional=True`, in opdb_nn.py): called as `lib.nn.functional.<name>`
for both libraries (kindle.nn.functional mirrors torch.nn.functional's names and signatures); their
key in OP_DB and their test id is `nn.functional.<name>`; `op_names` lists the `variants: nn` ops of
ops.yaml the entry covers (F.unfold covers im2col, F.max_pool1d max_pool2d_with_indices, ...); an
in-place variant is the same function with `inplace=True` (`inplace="inplace"`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

# ---------------------------------------------------------------------------------------------
# dtypes

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int8", "int16", "int32", "int64", "uint8")
ALL = FLOATS + INTS + ("bool",)
NUMERIC = FLOATS + INTS          # everything but bool
INT_BOOL = INTS + ("bool",)
F32_64 = ("float32", "float64")
SIGNED = FLOATS + ("int8", "int16", "int32", "int64")
COMPLEX = ("complex64", "complex128")

_NP = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": np.float32,
       "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8,
       "bool": np.bool_, "complex64": np.complex64, "complex128": np.complex128}

# (rtol, atol) by result dtype, as torch.testing.assert_close; integers and bool compare exactly.
DEFAULT_TOL = {"float64": (1e-7, 1e-7), "float32": (1.3e-6, 1e-5), "float16": (1e-3, 1e-5),
               "bfloat16": (1.6e-2, 1e-5), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}

LARGE = (131, 263)  # 34453 elements: above the 32768 OpenMP grain, odd sizes for SIMD tails


def dtype_name(dt) -> str:
    """'float32' for kindle.float32, torch.float32 or a NumPy dtype."""
    s = str(dt)
    return s.rsplit(".", 1)[-1]


def np_dtype(name: str):
    return _NP[name]


def to_bf16(a: np.ndarray) -> np.ndarray:
    """Round float32 values toward zero to bfloat16-representable ones (exact in bfloat16)."""
    a = np.array(a, dtype=np.float32, order="C")  # a copy; keeps 0-d arrays 0-d
    return (a.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)


def cast_values(a, dtype: str) -> np.ndarray:
    """Exact values of `a` in `dtype`, as a NumPy array (float32 carrying bfloat16)."""
    a = np.asarray(a)
    if dtype == "bfloat16":
        return to_bf16(a.astype(np.float32))
    if dtype == "bool":
        return a.astype(np.bool_)
    return a.astype(_NP[dtype])


# ---------------------------------------------------------------------------------------------
# tensor specs

@dataclass(frozen=True)
class Dt:
    """A dtype argument (e.g. sum(dtype=...)): becomes lib.<name> when the sample is built."""
    name: str


def _np_view(a, v):
    kind = v[0]
    if kind == "T":
        return np.swapaxes(a, v[1], v[2])
    if kind == "slice":
        return a[v[1]]
    if kind == "expand":
        return np.broadcast_to(a, v[1])
    if kind == "permute":
        return np.transpose(a, v[1])
    raise ValueError(kind)


def _lib_view(t, v):
    kind = v[0]
    if kind == "T":
        return t.transpose(v[1], v[2])
    if kind == "slice":
        return t[v[1]]
    if kind == "expand":
        return t.expand(*v[1])
    if kind == "permute":
        return t.permute(*v[1])
    raise ValueError(kind)


@dataclass
class TArg:
    """A tensor argument: exact values `data` (contiguous) in `dtype`, then view ops."""
    data: np.ndarray
    dtype: str
    views: tuple = ()
    nograd: bool = False   # a constant for the autograd tests (running stats, targets torch
                           # does not differentiate)

    def numpy(self) -> np.ndarray:
        a = self.data
        for v in self.views:
            a = _np_view(a, v)
        return a

    @property
    def shape(self):
        return self.numpy().shape

    def make(self, lib):
        return self.viewed(self.base(lib))

    def base(self, lib):
        """The contiguous tensor the views start from (the leaf, for autograd tests)."""
        t = lib.tensor(self.data)
        return t.to(lib.bfloat16) if self.dtype == "bfloat16" else t

    def viewed(self, t):
        """`t` (this argument's base, on any device) with the view ops applied."""
        for v in self.views:
            t = _lib_view(t, v)
        return t

    def contiguous(self) -> "TArg":
        return TArg(np.array(self.numpy(), order="C"), self.dtype, nograd=self.nograd)

    def __repr__(self):
        vs = "".join(f".{v[0]}{v[1:]}" for v in self.views)
        return f"T{tuple(self.data.shape)}:{self.dtype}{vs}"


def _map_args(x, f):
    if isinstance(x, (TArg, Dt)):
        return f(x)
    if isinstance(x, tuple):
        return tuple(_map_args(y, f) for y in x)
    if isinstance(x, list):
        return [_map_args(y, f) for y in x]
    if isinstance(x, dict):
        return {k: _map_args(v, f) for k, v in x.items()}
    return x


def materialize(x, lib, contiguous=False):
    """Turn TArg/Dt leaves of a nested structure into lib tensors/dtypes."""
    def f(leaf):
        if isinstance(leaf, Dt):
            return getattr(lib, leaf.name)
        return (leaf.contiguous() if contiguous else leaf).make(lib)
    return _map_args(x, f)


def leaves(x):
    out = []
    _map_args(x, lambda leaf: out.append(leaf) or leaf)
    return out


@dataclass
class Sample:
    input: Any                 # TArg, a list of TArgs (cat, stack), or None (call fn(*args))
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    @property
    def noncontiguous(self) -> bool:
        return any(isinstance(t, TArg) and t.views for t in leaves((self.input, self.args, self.kwargs)))

    @property
    def expanded(self) -> bool:
        return isinstance(self.input, TArg) and any(v[0] == "expand" for v in self.input.views)

    def __repr__(self):
        parts = [] if self.input is None else [repr(self.input)]
        parts += [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return "(" + ", ".join(parts) + ")"


# ---------------------------------------------------------------------------------------------
# value generation

def values(shape, dtype, rng, low=None, high=None, nonzero=False, integer=False):
    shape = tuple(shape)
    if dtype == "bool":
        return np.ones(shape, np.bool_) if nonzero else np.asarray(rng.random(shape) < 0.5)
    if dtype in INTS:
        info = np.iinfo(_NP[dtype])
        lo = -9 if low is None else math.ceil(low)
        hi = 9 if high is None else math.floor(high)
        lo, hi = max(lo, info.min, 0 if dtype == "uint8" else info.min), min(hi, info.max)
        hi = max(hi, lo)  # a float range without an integer in it (0.02..0.98): the nearest one
        a = np.asarray(rng.integers(lo, hi + 1, size=shape))
        if nonzero:
            a[a == 0] = hi if hi != 0 else lo
        return a.astype(_NP[dtype])
    lo = -3.0 if low is None else low
    hi = 3.0 if high is None else high
    if dtype in COMPLEX:  # both parts in the range (the imaginary part never exactly zero)
        re = values(shape, "float64", rng, low, high, nonzero, integer)
        im = values(shape, "float64", rng, low, high, True, integer)
        return np.asarray(re + 1j * im).astype(_NP[dtype])
    a = np.asarray(rng.uniform(lo, hi, size=shape))
    if integer:
        a = np.asarray(np.round(a))
    if nonzero:
        a[np.abs(a) < 0.25] = 1.0 if hi > 0.25 else -1.0
    return cast_values(a, dtype)


EXTREMAL = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5,
            3.5, 100.0, -100.0]
FINITE_EXTREMAL = [v for v in EXTREMAL if not math.isinf(v)]   # torch: gelu(inf) is nan
NO_NAN_EXTREMAL = EXTREMAL[1:]                                  # signbit(nan) depends on the payload
# The gradient at NaN of a piecewise activation (elu, selu, celu, hardswish) is NaN in torch's
# vectorized loop and finite in its scalar tail, so it changes with the position, the length and
# the machine's vector width (AVX2 vs AVX-512): not a reference to compare against.
PIECEWISE_EXTREMAL = NO_NAN_EXTREMAL


def layout_of(shape, layout):
    """Base shape and view ops giving a tensor of `shape` in `layout`:
    C contiguous, T last two dims transposed, S every dim sliced [1::2], E expanded from size 1,
    P dims permuted (reversed)."""
    shape, n = tuple(shape), len(shape)
    if layout == "C" or n == 0:
        return shape, ()
    if layout in ("T", "P") and n < 2 or layout == "P" and n == 2:
        layout = "S" if n < 2 else "T"
    if layout == "T":
        return shape[:-2] + (shape[-1], shape[-2]), (("T", n - 2, n - 1),)
    if layout == "S":
        return tuple(2 * s + 1 for s in shape), (("slice", (slice(1, None, 2),) * n),)
    if layout == "E":
        base = list(shape)
        for i, s in enumerate(shape):
            if s != 1:
                base[i] = 1
                break
        return tuple(base), (("expand", shape),)
    if layout == "P":
        perm = tuple(range(n))[::-1]
        return shape[::-1], (("permute", perm),)
    raise ValueError(layout)


class G:
    """Sample builder for one op and dtype: g.t(shape, layout) makes a tensor arg of the op's
    dtype within the op's domain; g.S(input, *args, **kwargs) makes a Sample."""

    def __init__(self, op: "OpInfo", dtype: str, rng):
        self.op, self.dtype, self.rng = op, dtype, rng

    def t(self, shape=(3, 4), layout="C", dtype=None, low=None, high=None, nonzero=False,
          integer=False, data=None, nograd=False):
        dtype = dtype or self.dtype
        base, views = layout_of(shape, layout)
        if data is not None:
            arr = cast_values(np.asarray(data), dtype)
            if arr.shape != base:
                arr = arr.reshape(base)
        else:
            lo = self.op.domain[0] if low is None else low
            hi = self.op.domain[1] if high is None else high
            arr = values(base, dtype, self.rng, lo, hi, nonzero=nonzero, integer=integer)
        return TArg(arr, dtype, views, nograd)

    def other(self, shape=(3, 4), layout="C", dtype=None):
        """A second operand within the op's domain for its second argument."""
        lo, hi = self.op.other_domain or self.op.domain
        return self.t(shape, layout, dtype=dtype, low=lo, high=hi, nonzero=self.op.other_nonzero)

    def idx(self, data, layout="C", dtype="int64"):
        """An index tensor with the logical values `data` (layout C or S)."""
        data = np.asarray(data, dtype=np.int64)
        base, views = layout_of(data.shape, layout)
        arr = np.zeros(base, np.int64)
        view = arr
        for v in views:
            view = _np_view(view, v)
        view[...] = data
        return TArg(arr.astype(_NP[dtype]), dtype, views)

    def expanded_idx(self, row, shape):
        """An index tensor expanded (stride 0) from `row` to `shape`."""
        row = np.asarray(row, dtype=np.int64)
        return TArg(row, "int64", (("expand", tuple(shape)),))

    def rand_idx(self, shape, high, dtype="int64", low=0):
        return TArg(self.rng.integers(low, high, size=shape).astype(_NP[dtype]), dtype)

    def mask(self, shape=(3, 4), layout="C"):
        return self.t(shape, layout, dtype="bool")

    def S(self, input, *args, **kwargs):
        return Sample(input, args, kwargs)


# ---------------------------------------------------------------------------------------------
# OpInfo

@dataclass
class OpInfo:
    name: str
    samples: Callable[[G], Sequence[Sample]]
    dtypes: tuple = ALL
    function: bool = True              # kindle.name exists (and torch.name)
    method: bool = True                # Tensor.name exists
    inplace: str | None = None         # name of the in-place variant
    inplace_method: bool = True        # Tensor.<inplace> exists
    inplace_function: bool = False     # kindle.<inplace> exists as a function
    ref: Callable | None = None        # NumPy reference on the logical values (optional)
    tol: dict = field(default_factory=dict)   # result dtype -> (rtol, atol)
    domain: tuple = (None, None)       # value range of the first tensor argument
    other_domain: tuple | None = None  # value range of the second one
    other_nonzero: bool = False
    errors: Callable[[G], Sequence[Sample]] | None = None   # inputs torch rejects
    view: bool = False                 # the result is a view: strides and offset must match torch
    compare_values: bool = True        # False for empty/empty_like (shape and dtype only)
    layout_sensitive: bool = False     # result legitimately depends on strides (view, as_strided)
    kind: str = "other"
    functional: bool = False           # lib.nn.functional.name (kindle and torch); inplace="inplace"
                                       # means the same function with inplace=True
    op_names: tuple | None = None      # functional: the `variants: nn` ops of ops.yaml it covers
    mutates: tuple = ()                # positions (in args) / names (in kwargs) of tensor arguments
                                       # the op updates in place (running stats): compared with torch
    dtypes_gap: tuple = ()             # functional: dtypes torch supports and kindle does not (yet);
                                       # kindle must raise there (test_dtype_support_matches_torch)
    grad_tol: dict = field(default_factory=dict)  # result dtype -> (rtol, atol) for gradients where the
                                       # gradient itself is ill-conditioned (normalising a few values)
    torch_grad_wrong: Callable[[Sample], bool] | None = None  # samples where torch's own gradient
                                       # is wrong: not compared with torch (gradcheck still checks kindle's)

    @property
    def qualname(self) -> str:
        """The key in OP_DB and the test id: nn.functional.<name> for a functional op."""
        return f"nn.functional.{self.name}" if self.functional else self.name

    @property
    def covers(self) -> tuple:
        """The ops.yaml ops this entry covers."""
        if self.op_names is not None:
            return tuple(self.op_names)
        return (self.name,)

    @property
    def inplace_only(self) -> bool:
        return self.name.endswith("_")

    def tolerance(self, result_dtype: str):
        if result_dtype in self.tol:
            return self.tol[result_dtype]
        return DEFAULT_TOL.get(result_dtype, (0.0, 0.0))

    def get_samples(self, dtype: str, seed: int = 0):
        rng = np.random.default_rng(_seed(self.qualname, dtype, seed))
        return list(self.samples(G(self, dtype, rng)))

    def get_errors(self, dtype: str = "float32"):
        if self.errors is None:
            return []
        return list(self.errors(G(self, dtype, np.random.default_rng(_seed(self.qualname, dtype, 7)))))

    def call(self, lib, sample: Sample, variant="function", contiguous=False, full=False):
        """Run the op on `sample` with `lib`. variant: function, method, inplace, inplace_function.
        Returns (result, input), or with full=True (result, input, args, kwargs) as materialized."""
        inp = materialize(sample.input, lib, contiguous)
        args = materialize(sample.args, lib, contiguous)
        kwargs = materialize(sample.kwargs, lib, contiguous)
        res = self.invoke(lib, variant, inp, args, kwargs)
        return (res, inp, args, kwargs) if full else (res, inp)

    def fn(self, lib):
        """The op's function in `lib`: lib.nn.functional.name for a functional op."""
        if self.functional:
            fn = getattr(lib.nn.functional, self.name, None)
            if fn is None:
                raise AttributeError(f"module {lib.__name__}.nn.functional has no attribute {self.name!r}")
            return fn
        return lib_function(lib, self.name)

    def invoke(self, lib, variant, inp, args, kwargs):
        """Call the op on materialized arguments (inp None: fn(*args, **kwargs))."""
        if variant == "function":
            fn = self.fn(lib)
            return fn(*args, **kwargs) if inp is None else fn(inp, *args, **kwargs)
        if self.functional:
            if variant == "inplace":
                return self.fn(lib)(inp, *args, **{**kwargs, "inplace": True})
            raise ValueError(f"{self.qualname} has no {variant} variant")
        if variant == "method":
            return getattr(inp, self.name)(*args, **kwargs)
        if variant == "inplace":
            return getattr(inp, self.inplace)(*args, **kwargs)
        if variant == "inplace_function":
            return lib_function(lib, self.inplace)(inp, *args, **kwargs)
        raise ValueError(variant)

    def mutated(self, args, kwargs):
        """The materialized tensor arguments the op updates in place (`mutates`), by label."""
        out = {}
        for m in self.mutates:
            t = args[m] if isinstance(m, int) and m < len(args) else kwargs.get(m) if isinstance(m, str) else None
            if t is not None:
                out[f"args[{m}]" if isinstance(m, int) else m] = t
        return out

    @property
    def variants(self):
        """The variants this op has, as `call` names them."""
        out = (["function"] if self.function else []) + (["method"] if self.method else [])
        if self.inplace:
            out += (["inplace"] if self.inplace_method else []) + (["inplace_function"] if self.inplace_function else [])
        return out


def lib_function(lib, name):
    """lib.name; for torch, the nn functional (torch._C._nn.gelu, ...) or the Tensor method where
    torch has no such top-level function (kindle.silu, kindle.copy_, kindle.sgn_)."""
    if name.startswith("special_"):  # torch.special.<name>; kindle.special.<name>
        return getattr(lib.special, name[len("special_"):])
    fn = getattr(lib, name, None)
    if fn is None and lib.__name__ == "torch":
        fn = getattr(lib._C._nn, name, None)
        if fn is None:
            def fn(x, *args, **kwargs):
                return getattr(x, name)(*args, **kwargs)
    if fn is None:
        raise AttributeError(f"module {lib.__name__!r} has no attribute {name!r}")
    return fn


def _seed(name, dtype, seed):
    h = 0
    for ch in f"{name}/{dtype}/{seed}":
        h = (h * 131 + ord(ch)) % (2 ** 32)
    return h


# ---------------------------------------------------------------------------------------------
# standard sample sets

UNARY_CASES = [((), "C"), ((0,), "C"), ((5,), "C"), ((3, 4), "C"), ((2, 0, 3), "C"),
               ((2, 3, 4), "C"), ((4, 5), "T"), ((3, 4), "S"), ((7,), "S"), ((3, 4), "E"),
               ((2, 3, 4), "P"), (LARGE, "C"), (LARGE, "T")]


def unary_samples(*kwargs_variants, extremal=EXTREMAL, args=(), kwargs_dtypes=ALL):
    """Standard unary samples; each kwargs variant (a dict, or a tuple of positional args) is
    run on a 2-D and a non-contiguous input."""
    def gen(g):
        out = [g.S(g.t(shape, layout), *args) for shape, layout in UNARY_CASES]
        if extremal and g.dtype in FLOATS:
            out.append(g.S(g.t((len(extremal),), data=extremal), *args))
        for kv in kwargs_variants if g.dtype in kwargs_dtypes else ():
            a, k = (kv, {}) if isinstance(kv, tuple) else ((), kv)
            out.append(g.S(g.t((3, 4)), *a, **k))
            out.append(g.S(g.t((4, 5), "T"), *a, **k))
            if extremal and g.dtype in FLOATS:
                out.append(g.S(g.t((len(extremal),), data=extremal), *a, **k))
        return out
    return gen


BINARY_CASES = [((3, 4), "C", (3, 4), "C"), ((), "C", (), "C"), ((0,), "C", (0,), "C"),
                ((3, 1), "C", (1, 4), "C"), ((2, 3, 4), "C", (4,), "C"), ((5,), "C", (), "C"),
                ((), "C", (5,), "C"), ((0, 3), "C", (1, 3), "C"), ((2, 1, 4), "C", (3, 1), "C"),
                ((4, 5), "T", (4, 5), "C"), ((3, 4), "C", (3, 4), "S"), ((3, 4), "E", (3, 4), "T"),
                ((2, 3, 4), "P", (2, 3, 4), "S"), (LARGE, "C", LARGE, "C"),
                (LARGE, "T", (LARGE[1],), "C")]


def binary_samples(*kwargs_variants, scalars=(2, -1.5, True), mixed=True, kwargs_dtypes=ALL):
    """Standard binary samples: same-dtype pairs (broadcast, 0-d, empty, non-contiguous, large),
    Python-number operands, and every other dtype as a full tensor and as a 0-d tensor
    (type promotion)."""
    def gen(g):
        out = [g.S(g.t(sa, la), g.other(sb, lb)) for sa, la, sb, lb in BINARY_CASES]
        for s in scalars:
            if g.op.other_nonzero and s == 0:
                continue
            out.append(g.S(g.t((3, 4)), s))
        if mixed:
            for od in ALL:
                if od != g.dtype and not (g.dtype in COMPLEX and od in ("float16", "bfloat16")):
                    out.append(g.S(g.t((3, 4)), g.other((3, 4), dtype=od)))
                    out.append(g.S(g.t((3, 4)), g.other((), dtype=od)))
                    out.append(g.S(g.t(()), g.other((2, 3), dtype=od)))
        for kv in kwargs_variants if g.dtype in kwargs_dtypes else ():
            out.append(g.S(g.t((3, 4)), g.other((3, 4)), **kv))
            out.append(g.S(g.t((4, 5), "T"), g.other((5,)), **kv))
        return out
    return gen


REDUCE_CASES = [((), "C", None), ((), "C", 0), ((5,), "C", 0), ((0,), "C", None), ((3, 4), "C", None),
                ((3, 4), "C", 0), ((3, 4), "C", -1), ((2, 3, 4), "C", (0, 2)), ((2, 3, 4), "C", 1),
                ((0, 3), "C", 0), ((0, 3), "C", 1), ((2, 3, 4), "C", (-1,)), ((4, 5), "T", 0),
                ((4, 5), "T", 1), ((3, 4), "S", None), ((2, 3, 4), "P", (1, 2)), ((3, 4), "E", 0),
                ((3, 4), "E", 1), ((2, 3, 4), "C", None), (LARGE, "C", 1), (LARGE, "C", 0),
                (LARGE, "T", None), (LARGE, "T", 1)]


def reduce_samples(style="dims", keepdim=True, kwargs_variants=(), large=True, positional=False,
                   extremal=True, empty=True):
    """Standard reduction samples. style: 'dims' (int or tuple dim, None for all), 'dim' (one int
    or None), 'dim_req' (one int, required), 'dims_req' (int or tuple, required)."""
    def gen(g):
        out = []
        for shape, layout, dim in REDUCE_CASES:
            if not large and LARGE in (shape,):
                continue
            if not empty and 0 in shape:
                continue
            if style in ("dim", "dim_req") and isinstance(dim, tuple):
                dim = dim[0]
            if style in ("dim_req", "dims_req") and dim is None:
                continue
            x = g.t(shape, layout)
            if dim is None:
                out.append(g.S(x))
                continue
            if positional:
                out.append(g.S(x, dim))
            else:
                out.append(g.S(x, dim=dim))
            if keepdim and style not in ("dim_req",):
                out.append(g.S(g.t(shape, layout), dim=dim, keepdim=True))
        if extremal and g.dtype in FLOATS:
            out.append(g.S(g.t((2, 7), data=EXTREMAL), **({} if style in ("dims", "dim") else {"dim": 1})))
            out.append(g.S(g.t((7, 2), data=EXTREMAL), dim=0))
        for kv in kwargs_variants:
            d = {} if style in ("dims", "dim") else {"dim": 1}
            out.append(g.S(g.t((3, 4)), **{**d, **kv}))
            out.append(g.S(g.t((2, 3, 4), "P"), **{"dim": 1, **kv}))
        return out
    return gen


# ---------------------------------------------------------------------------------------------
# error samples (inputs torch rejects; kindle must raise the same exception type)

def binary_errors(g):
    return [g.S(g.t((3,)), g.other((4,))), g.S(g.t((2, 3)), g.other((3, 2))),
            g.S(g.t((2, 3, 4)), g.other((2, 4)))]


def reduce_errors(g, style="dims"):
    out = [g.S(g.t((3, 4)), dim=2), g.S(g.t((3, 4)), dim=-3), g.S(g.t(()), dim=1)]
    if style in ("dims", "dims_req"):
        out.append(g.S(g.t((3, 4)), dim=(0, 0)))
    return out


def _dims_errors(g):
    return reduce_errors(g, "dims")


def _dim_errors(g):
    return reduce_errors(g, "dim")


# ---------------------------------------------------------------------------------------------
# helpers for one-line entries

def unary(name, dtypes=ALL, inplace=True, inplace_function=None, ref=None, domain=(None, None),
          kwargs=(), method=True, extremal=EXTREMAL, tol=None, args=(), kwargs_dtypes=ALL):
    return OpInfo(name, unary_samples(*kwargs, extremal=extremal, args=args, kwargs_dtypes=kwargs_dtypes), dtypes,
                  method=method, inplace=(name + "_") if inplace else None, inplace_method=method,
                  inplace_function=inplace if inplace_function is None else inplace_function,
                  ref=ref, domain=domain, tol=tol or {}, kind="unary")


def binary(name, dtypes=ALL, inplace=True, ref=None, domain=(None, None), other_domain=None,
           other_nonzero=False, kwargs=(), scalars=(2, -1.5, True), tol=None, method=True, kwargs_dtypes=ALL,
           **kw):
    return OpInfo(name, binary_samples(*kwargs, scalars=scalars, kwargs_dtypes=kwargs_dtypes), dtypes, method=method,
                  inplace=(name + "_") if inplace else None, ref=ref, domain=domain,
                  other_domain=other_domain, other_nonzero=other_nonzero, tol=tol or {},
                  kind="binary", errors=binary_errors, **kw)


RED_TOL = {"float32": (1e-5, 1e-4), "float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2),
           "float64": (1e-7, 1e-7), "complex64": (1e-5, 1e-4), "complex128": (1e-7, 1e-7)}


def reduction(name, dtypes=ALL, style="dims", keepdim=True, kwargs=(), tol=None, large=True,
              domain=(None, None), method=True, positional=False, extremal=True, ref=None,
              empty=True, function=True):
    return OpInfo(name, reduce_samples(style, keepdim, kwargs, large, positional, extremal, empty),
                  dtypes, function=function, method=method, tol={**RED_TOL, **(tol or {})},
                  domain=domain, kind="reduction", ref=ref,
                  errors=(lambda g: reduce_errors(g, style)))


def op(name, samples, dtypes=ALL, **kw):
    return OpInfo(name, samples, dtypes, **kw)


# ---------------------------------------------------------------------------------------------
# sample generators for the ops that need their own

def _ternary_pointwise(extra_kwargs=()):
    """self, tensor1, tensor2 (addcmul/addcdiv/lerp/where): broadcast, non-contiguous, scalars."""
    def gen(g):
        o = g.other
        out = [g.S(g.t((3, 4)), o((3, 4)), o((3, 4))), g.S(g.t(()), o(()), o(())),
               g.S(g.t((0, 4)), o((0, 4)), o((1, 4))), g.S(g.t((3, 1)), o((1, 4)), o((4,))),
               g.S(g.t((4, 5), "T"), o((4, 5), "S"), o((4, 5), "E")),
               g.S(g.t((2, 3, 4), "P"), o((3, 4), "T"), o(())), g.S(g.t(LARGE), o(LARGE), o((LARGE[1],)))]
        for kv in extra_kwargs:
            out.append(g.S(g.t((3, 4)), o((3, 4)), o((3, 4)), **kv))
        for od in ("float64", "int64", "float16"):
            out.append(g.S(g.t((3, 4)), o((3, 4), dtype=od), o((3, 4))))
        return out
    return gen


def _with_tensor_bounds(o):
    """clamp/clip: the scalar-bound samples plus tensor bounds (broadcast, one-sided, mixed
    dtypes, min > max)."""
    scalar_bounds = o.samples

    def gen(g):
        out = list(scalar_bounds(g))
        if g.dtype != "bool":  # torch has no kernel for bool tensor bounds
            lo = lambda shape, layout="C", dtype=None: g.t(shape, layout, dtype=dtype, low=-2, high=0)  # noqa: E731
            hi = lambda shape, layout="C", dtype=None: g.t(shape, layout, dtype=dtype, low=0, high=2)  # noqa: E731
            out += [g.S(g.t((3, 4)), lo((3, 4)), hi((3, 4))), g.S(g.t((3, 4)), min=lo((4,))),
                    g.S(g.t((3, 4)), max=hi((3, 1))), g.S(g.t((4, 5), "T"), lo(()), hi((4, 5), "S")),
                    g.S(g.t((3, 4)), hi((3, 4)), lo((3, 4))), g.S(g.t((3, 4)), None, hi((3, 4), dtype="float64")),
                    g.S(g.t(()), lo((2, 3)), hi(())), g.S(g.t((0, 3)), lo((3,)))]
        return out
    o.samples = gen
    return o


def _where_samples(g):
    m, o = g.mask, g.other
    out = [g.S(None, m((3, 4)), g.t((3, 4)), o((3, 4))), g.S(None, m(()), g.t(()), o(())),
           g.S(None, m((3, 1)), g.t((1, 4)), o((4,))), g.S(None, m((0, 4)), g.t((0, 4)), o((4,))),
           g.S(None, m((4, 5), "T"), g.t((4, 5), "S"), o((4, 5), "E")),
           g.S(None, m(LARGE), g.t(LARGE, "T"), o(LARGE)),
           g.S(None, m((3, 4)), g.t((3, 4)), 0.5), g.S(None, m((3, 4)), 2, g.t((3, 4))),
           g.S(None, m((3, 4)), g.t((3, 4)), o((3, 4), dtype="float64")),
           g.S(None, m((3, 4)), g.t((3, 4)), o((), dtype="int64"))]
    # where(condition) alone: nonzero(condition, as_tuple=True)
    out += [g.S(None, m((3, 4))), g.S(None, m(())), g.S(None, m((2, 0))), g.S(None, m((4, 5), "T")),
            g.S(None, g.t((2, 3, 4), low=-1, high=1, integer=True))]
    return out


def _lerp_samples(g):
    o = g.other
    out = _ternary_pointwise()(g)[:7]
    out += [g.S(g.t((3, 4)), o((3, 4)), 0.25), g.S(g.t((4, 5), "T"), o((5,)), 1.5)]
    return out


def _isclose_samples(g):
    out = [g.S(g.t((3, 4)), g.t((3, 4))), g.S(g.t((0,)), g.t((0,)))]
    x = g.t((3, 4))
    out.append(g.S(x, x))
    out.append(g.S(x, TArg(x.data.copy(), x.dtype), rtol=0.1, atol=0.5))
    out.append(g.S(g.t((3, 1)), g.t((1, 4)), atol=2.0))
    out.append(g.S(g.t((4, 5), "T"), g.t((4, 5), "S")))
    if g.dtype in FLOATS:
        e = g.t((len(EXTREMAL),), data=EXTREMAL)
        out.append(g.S(e, TArg(e.data.copy(), e.dtype)))
        out.append(g.S(e, TArg(e.data.copy(), e.dtype), equal_nan=True))
    return out


def _equal_samples(g):
    x = g.t((3, 4))
    return [g.S(x, TArg(x.data.copy(), x.dtype)), g.S(g.t((3, 4)), g.t((3, 4))),
            g.S(g.t((3, 4)), g.t((4, 3))), g.S(g.t(()), g.t(())), g.S(g.t((0,)), g.t((0,))),
            g.S(g.t((4, 5), "T"), TArg(np.ascontiguousarray(g.t((4, 5), "T").numpy()), g.dtype)),
            g.S(x, TArg(x.data.astype(np.float64), "float64"))]


# -- creation

def _creation_samples(name):
    def gen(g):
        d = Dt(g.dtype)
        if name in ("zeros", "ones", "empty"):
            return [g.S(None, (2, 3), dtype=d), g.S(None, 2, 3, dtype=d), g.S(None, [4], dtype=d),
                    g.S(None, (), dtype=d), g.S(None, (0, 3), dtype=d), g.S(None, 5, dtype=d)]
        if name == "full":
            v = True if g.dtype == "bool" else (3 if g.dtype in INTS else 2.5)
            return [g.S(None, (2, 3), v, dtype=d), g.S(None, (), v, dtype=d), g.S(None, (0,), v, dtype=d)]
        if name == "empty_strided":
            return [g.S(None, (2, 3), (1, 2), dtype=d), g.S(None, (2, 3), (3, 1), dtype=d),
                    g.S(None, (0,), (1,), dtype=d)]
        if name == "arange":
            if g.dtype in FLOATS:
                return [g.S(None, 5, dtype=d), g.S(None, 1, 10, 3, dtype=d), g.S(None, 0.5, 2.5, 0.25, dtype=d),
                        g.S(None, 3, -2, -0.5, dtype=d), g.S(None, 0, dtype=d), g.S(None, 2, 2, dtype=d)]
            return [g.S(None, 5, dtype=d), g.S(None, 1, 10, 3, dtype=d), g.S(None, 6, -3, -2, dtype=d),
                    g.S(None, 0, dtype=d)]
        if name == "linspace":
            if g.dtype == "uint8":  # torch wraps negative values modulo 256 mid-computation
                return [g.S(None, 0, 10, 5, dtype=d), g.S(None, 10, 0, 6, dtype=d), g.S(None, 3, 3, 1, dtype=d)]
            return [g.S(None, 0, 10, 5, dtype=d), g.S(None, -1, 1, 7, dtype=d), g.S(None, 3, 3, 1, dtype=d),
                    g.S(None, 0, 1, 0, dtype=d), g.S(None, 10, 0, 6, dtype=d)]
        if name == "logspace":
            if g.dtype not in FLOATS:  # torch rounds fractional powers oddly for integer dtypes
                return [g.S(None, 0, 2, 3, dtype=d), g.S(None, 0, 3, 4, 2.0, dtype=d), g.S(None, 1, 1, 1, dtype=d)]
            return [g.S(None, 0, 2, 3, dtype=d), g.S(None, -1, 1, 5, dtype=d),
                    g.S(None, 0, 3, 4, 2.0, dtype=d), g.S(None, 1, 1, 1, dtype=d)]
        if name == "eye":
            return [g.S(None, 3, dtype=d), g.S(None, 2, 4, dtype=d), g.S(None, 4, 2, dtype=d),
                    g.S(None, 0, dtype=d)]
        raise ValueError(name)
    return gen


def _creation_default_dtype_samples(g):
    return [g.S(None, (2, 3)), g.S(None, 2, 3), g.S(None, ())]


def _like_samples(name):
    def gen(g):
        extra = (((True if g.dtype == "bool" else 3),) if name == "full_like" else ())
        out = [g.S(g.t((2, 3)), *extra), g.S(g.t(()), *extra), g.S(g.t((0, 3)), *extra),
               g.S(g.t((4, 5), "T"), *extra), g.S(g.t((2, 3)), *extra, dtype=Dt("float64")),
               g.S(g.t((2, 3)), *extra, dtype=Dt("int32"))]
        return out
    return gen


# -- copies

def _copy_samples(g):
    o = g.t
    return [g.S(o((3, 4)), o((3, 4))), g.S(o((3, 4)), o((4,))), g.S(o(()), o(())),
            g.S(o((4, 5), "T"), o((4, 5), "S")), g.S(o((3, 4), "S"), o((1, 4))),
            g.S(o((0, 3)), o((3,))), g.S(o(LARGE, "T"), o(LARGE)),
            g.S(o((3, 4)), o((3, 4), dtype="float64")), g.S(o((3, 4)), o((3, 4), dtype="int32")),
            g.S(o((3, 4)), o((3, 4), dtype="bool")), g.S(o((3, 4)), o((3, 4), dtype="bfloat16")),
            g.S(o((3, 4)), o((3, 4), dtype="float16")), g.S(o((3, 4)), o((3, 4), dtype="uint8"))]


def _fill_samples(g):
    v = True if g.dtype == "bool" else (3 if g.dtype in INTS else 2.5)
    return [g.S(g.t((3, 4)), v), g.S(g.t(()), v), g.S(g.t((0,)), v), g.S(g.t((4, 5), "T"), v),
            g.S(g.t((3, 4), "S"), 1), g.S(g.t((3, 4), "E"), v), g.S(g.t((3, 4)), g.t((), dtype="float64")),
            g.S(g.t(LARGE), v)]


def _plain_samples(g):
    return [g.S(g.t(s, l)) for s, l in UNARY_CASES]


# -- complex numbers

def _view_as_complex_samples(g):
    t = g.t
    rows_skipped = TArg(values((6, 2), g.dtype, g.rng), g.dtype, (("slice", (slice(0, None, 2),)),))
    return [g.S(t((3, 2))), g.S(t((2, 3, 2))), g.S(t((2,))), g.S(t(LARGE[:1] + (2,))), g.S(rows_skipped)]


def _view_as_complex_errors(g):
    return [g.S(g.t((3, 3))), g.S(g.t((2, 4), "T")), g.S(g.t(()))]


def _parts_samples(g):
    return [g.S(g.t(sa, la), g.t(sb, lb)) for sa, la, sb, lb in BINARY_CASES]


def _polar_samples(g):
    return [g.S(g.t(sa, la, low=0, high=3), g.t(sb, lb)) for sa, la, sb, lb in BINARY_CASES]


def _fft_c2c_samples(g):
    t = g.t
    return [g.S(t((4, 5)), [1], 0, True), g.S(t((3, 4, 5)), [0, 2], 2, False), g.S(t((4, 6), "T"), [0, 1], 1, True),
            g.S(t((2, 3, 4), "P"), [2, 0], 0, False), g.S(t((5,), "S"), [0], 2, True), g.S(t((3, 4)), [], 0, True),
            g.S(t((64, 33)), [0, 1], 1, True)]


def _fft_r2c_samples(g):
    t = g.t
    return [g.S(t((4, 6)), [1], 0, True), g.S(t((3, 5)), [0, 1], 2, False), g.S(t((4, 5), "T"), [0], 1, True),
            g.S(t((2, 3, 5), "P"), [2, 0], 0, True), g.S(t((7,), "S"), [0], 0, False), g.S(t((3, 4, 6)), [1, 2], 1, False),
            g.S(t((64, 33)), [0, 1], 2, True)]


def _fft_c2r_samples(g):
    t = g.t
    return [g.S(t((4, 4)), [1], 2, 6), g.S(t((4, 4)), [1], 0, 7), g.S(t((3, 4)), [0, 1], 0, 7),
            g.S(t((4, 3), "T"), [1, 0], 1, 4), g.S(t((2, 3, 3), "P"), [0, 2], 2, 5), g.S(t((5,), "S"), [0], 1, 8)]


# -- shape ops

def _view_samples(g):
    t = g.t
    return [g.S(t((2, 3, 4)), 6, 4), g.S(t((2, 3, 4)), (6, 4)), g.S(t((2, 3, 4)), [-1]),
            g.S(t((2, 3, 4)), 4, -1, 2), g.S(t(()), 1), g.S(t((1,)), ()), g.S(t(()), -1),
            g.S(t((0, 3)), 3, 0), g.S(t((0, 3)), -1, 3), g.S(t((6, 4), "T"), 2, 2, 6),
            g.S(t((2, 3, 4), "P"), 4, 3, 2), g.S(t((3, 4), "E"), 3, 2, 2), g.S(t((3, 4), "S"), 3, 4)]


def _view_errors(g):
    t = g.t
    return [g.S(t((2, 3)), 4), g.S(t((2, 3)), -1, -1), g.S(t((0, 3)), -1, 0), g.S(t((4, 5), "T"), -1),
            g.S(t((2, 3)), -2, 3)]


def _tuple_args(samples):
    """Samples with the size given as separate ints (x.view(2, 3)) turned into one tuple
    argument: torch's functions (torch.reshape, torch.permute, ...) accept only that form."""
    out = []
    for s in samples:
        if s.args and all(isinstance(a, int) for a in s.args):
            s = Sample(s.input, (tuple(s.args),), s.kwargs)
        out.append(s)
    return out


def _reshape_samples(g):
    return _tuple_args(_view_samples(g) + [g.S(g.t((4, 5), "T"), -1), g.S(g.t((3, 4), "S"), 2, 6),
                                           g.S(g.t((3, 4), "E"), 12), g.S(g.t(LARGE, "T"), -1)])


def _view_as_samples(g):
    t = g.t
    return [g.S(t((2, 3, 4)), t((6, 4))), g.S(t(()), t((1, 1))), g.S(t((0, 3)), t((3, 0))),
            g.S(t((6, 4), "T"), t((6, 2, 2)))]


def _reshape_as_samples(g):
    t = g.t
    return _view_as_samples(g) + [g.S(t((4, 5), "T"), t((20,)))]


def _flatten_samples(g):
    t = g.t
    return [g.S(t((2, 3, 4))), g.S(t((2, 3, 4)), 1), g.S(t((2, 3, 4)), 0, 1), g.S(t((2, 3, 4)), 1, -1),
            g.S(t(())), g.S(t((2, 0, 4)), 1, 2), g.S(t((2, 3, 4), "P"), 1, 2), g.S(t((2, 3, 4), "P")),
            g.S(t((4, 5), "T"), 0, 1), g.S(t((5,))), g.S(t((2, 3, 4)), start_dim=1, end_dim=2)]


def _unflatten_samples(g):
    t = g.t
    return [g.S(t((2, 12)), 1, (3, 4)), g.S(t((2, 12)), -1, (3, -1)), g.S(t((12,)), 0, (2, 2, 3)),
            g.S(t((4, 6), "T"), 0, (2, 3)), g.S(t((0, 6)), 1, (2, 3)), g.S(t((6,)), 0, (6,))]


def _squeeze_samples(g):
    t = g.t
    return [g.S(t((1, 3, 1))), g.S(t((1, 3, 1)), 0), g.S(t((1, 3, 1)), (0, 2)), g.S(t((1, 3, 1)), 1),
            g.S(t((1, 3, 1)), -1), g.S(t(())), g.S(t(()), 0), g.S(t((1,))), g.S(t((1, 0, 1))),
            g.S(t((3, 1), "T")), g.S(t((1, 3, 1), "S"), 2), g.S(t((1, 3, 1)), dim=[0, 1])]


def _unsqueeze_samples(g):
    t = g.t
    return [g.S(t((3, 4)), 0), g.S(t((3, 4)), 1), g.S(t((3, 4)), 2), g.S(t((3, 4)), -1),
            g.S(t((3, 4)), -3), g.S(t(()), 0), g.S(t(()), -1), g.S(t((0,)), 1), g.S(t((4, 5), "T"), 1),
            g.S(t((3, 4), "S"), 2), g.S(t((3, 4), "E"), 0)]


def _dim_errors_for(*args_list):
    def gen(g):
        return [g.S(g.t((3, 4)), *a) for a in args_list]
    return gen


def _permute_samples(g):
    t = g.t
    return _tuple_args([g.S(t((2, 3, 4)), (2, 0, 1)), g.S(t((2, 3, 4)), 1, 0, 2), g.S(t((2, 3, 4)), [-1, 0, 1]),
            g.S(t(()), ()), g.S(t((3, 4)), (1, 0)), g.S(t((2, 0, 4)), (1, 2, 0)),
            g.S(t((2, 3, 4), "P"), (0, 2, 1)), g.S(t((4, 5), "T"), 1, 0), g.S(t((3, 4), "S"), 1, 0)])


def _transpose_samples(g):
    t = g.t
    return [g.S(t((2, 3, 4)), 0, 2), g.S(t((2, 3, 4)), -1, 0), g.S(t((3, 4)), 0, 1), g.S(t((3, 4)), 1, 1),
            g.S(t(()), 0, 0), g.S(t(()), -1, 0), g.S(t((5,)), 0, -1), g.S(t((0, 3)), 0, 1),
            g.S(t((4, 5), "T"), 0, 1), g.S(t((2, 3, 4), "P"), 0, 1), g.S(t((3, 4), "E"), 0, 1)]


def _t_samples(g):
    t = g.t
    return [g.S(t((3, 4))), g.S(t((5,))), g.S(t(())), g.S(t((0, 3))), g.S(t((4, 5), "T")), g.S(t((3, 4), "S"))]


def _adjoint_samples(g):
    t = g.t
    return [g.S(t((3, 4))), g.S(t((2, 3, 4))), g.S(t((0, 3))), g.S(t((4, 5), "T")), g.S(t((2, 3, 4), "P"))]


def _movedim_samples(g):
    t = g.t
    return [g.S(t((2, 3, 4)), 0, 2), g.S(t((2, 3, 4)), -1, 0), g.S(t((2, 3, 4)), (0, 1), (2, 0)),
            g.S(t((2, 3, 4)), [2], [0]), g.S(t(()), 0, 0), g.S(t((2, 3, 4), "P"), 0, 1),
            g.S(t((4, 5), "T"), 1, 0)]


def _expand_samples(g):
    t = g.t
    return [g.S(t((3, 1)), 3, 4), g.S(t((3, 1)), (3, 4)), g.S(t((3, 1)), -1, 4), g.S(t((3, 1)), 2, 3, 4),
            g.S(t(()), 2, 3), g.S(t(()), ()), g.S(t((1,)), 0), g.S(t((3, 1)), 2, -1, 0),
            g.S(t((1, 4), "T"), 3, 4, 2), g.S(t((3, 4), "S"), 2, 3, 4), g.S(t((3, 4), "E"), 2, 3, 4)]


def _expand_errors(g):
    t = g.t
    return [g.S(t((3, 2)), 3, 4), g.S(t((3, 1)), 4), g.S(t((3, 1)), -1, -1, 4)]


def _expand_as_samples(g):
    t = g.t
    return [g.S(t((3, 1)), t((3, 4))), g.S(t(()), t((2, 3))), g.S(t((1, 4), "T"), t((3, 4, 2))),
            g.S(t((4,)), t((2, 3, 4), "P"))]


def _broadcast_to_samples(g):
    t = g.t
    return [g.S(t((3, 1)), (3, 4)), g.S(t((3, 1)), (2, 3, 4)), g.S(t(()), (2, 3)), g.S(t((3, 1)), (-1, 4)),
            g.S(t((1,)), (0,)), g.S(t((1, 4), "T"), (3, 4, 2)), g.S(t((3, 4), "S"), (2, 3, 4))]


def _broadcast_tensors_samples(g):
    t = g.t
    return [g.S(None, t((3, 1)), t((1, 4))), g.S(None, t(()), t((2, 3)), t((3,))), g.S(None, t((3, 4))),
            g.S(None, t((0, 1)), t((3,))), g.S(None, t((4, 5), "T"), t((5,), "S")),
            g.S(None, t((3, 1)), t((1, 4), dtype="int64"))]


def _as_strided_samples(g):
    t = g.t
    return [g.S(t((3, 4)), (2, 2), (1, 2)), g.S(t((3, 4)), (2, 2), (1, 2), 1), g.S(t((12,)), (3, 3), (1, 1)),
            g.S(t((3, 4)), (), ()), g.S(t((3, 4)), (0, 3), (1, 1)), g.S(t((3, 4)), (4, 3), (1, 4))]


def _select_samples(g):
    t = g.t
    return [g.S(t((3, 4)), 0, 1), g.S(t((3, 4)), 1, -1), g.S(t((2, 3, 4)), -1, 2), g.S(t((5,)), 0, 4),
            g.S(t((4, 5), "T"), 1, 2), g.S(t((2, 3, 4), "P"), 0, 3), g.S(t((3, 4), "E"), 0, 2),
            g.S(t((3, 0)), 0, 1)]


def _select_errors(g):
    t = g.t
    return [g.S(t((3, 4)), 0, 3), g.S(t((3, 4)), 1, -5), g.S(t((3, 4)), 2, 0), g.S(t(()), 0, 0)]


def _narrow_samples(g):
    t = g.t
    return [g.S(t((3, 4)), 0, 1, 2), g.S(t((3, 4)), 1, -3, 2), g.S(t((3, 4)), 1, 0, 0), g.S(t((3, 4)), 1, 4, 0),
            g.S(t((4, 5), "T"), 0, 1, 3), g.S(t((2, 3, 4), "P"), 2, 0, 1), g.S(t((3, 4), "S"), -1, 1, 3)]


def _narrow_errors(g):
    t = g.t
    return [g.S(t((3, 4)), 0, 2, 2), g.S(t((3, 4)), 2, 0, 1), g.S(t((3, 4)), 0, 0, -1)]


def _split_samples(g):
    t = g.t
    return [g.S(t((5, 4)), 2), g.S(t((5, 4)), 2, 1), g.S(t((5, 4)), [1, 4]), g.S(t((5, 4)), (3, 1), 1),
            g.S(t((5, 4)), 5), g.S(t((5, 4)), 10), g.S(t((0, 4)), 2), g.S(t((4, 5), "T"), 2, 1),
            g.S(t((2, 3, 4), "P"), [1, 1], 2), g.S(t((5, 4)), [5, 0]), g.S(t((5, 4)), 2, dim=-1)]


def _split_with_sizes_samples(g):
    t = g.t
    return [g.S(t((5, 4)), [1, 4]), g.S(t((5, 4)), [3, 1], 1), g.S(t((5, 4)), [5]), g.S(t((5, 4)), [2, 0, 3]),
            g.S(t((4, 5), "T"), [2, 3], -1)]


def _chunk_samples(g):
    t = g.t
    return [g.S(t((6, 4)), 3), g.S(t((5, 4)), 2), g.S(t((5, 4)), 3, 1), g.S(t((5, 4)), 10),
            g.S(t((6, 4)), 4), g.S(t((0, 4)), 2), g.S(t((4, 5), "T"), 2, -1), g.S(t((5,)), 1)]


def _unbind_samples(g):
    t = g.t
    return [g.S(t((3, 4))), g.S(t((3, 4)), 1), g.S(t((2, 3, 4)), -1), g.S(t((0, 3))), g.S(t((3, 0)), 1),
            g.S(t((4, 5), "T")), g.S(t((2, 3, 4), "P"), 1)]


def _cat_samples(g):
    t = g.t
    return [g.S([t((2, 3)), t((4, 3))]), g.S([t((2, 3)), t((2, 1))], 1), g.S([t((2, 3)), t((2, 2))], -1),
            g.S([t((2, 3))]), g.S([t((2, 3)), t((0, 3))]), g.S([t((2, 3)), t((0,))]),
            g.S([t((4, 5), "T"), t((2, 5), "S"), t((1, 5), "E")]), g.S([t((2, 3, 4), "P"), t((1, 3, 4))], 0),
            g.S([t((2, 3)), t((2, 3), dtype="float64")]), g.S([t((2, 3)), t((1, 3), dtype="int64")]),
            g.S([t((2, 3)), t((1, 3), dtype="bool")]), g.S([t((0,)), t((0,))]),
            g.S([t(LARGE), t((LARGE[0], 7))], 1), g.S((t((2, 3)), t((2, 3))), dim=1)]


def _cat_errors(g):
    t = g.t
    return [g.S([t((2, 3)), t((2, 4))]), g.S([t((2, 3)), t((2, 3))], 2), g.S([]), g.S([t(()), t(())]),
            g.S([t((2, 3)), t((3,))])]


def _stack_samples(g):
    t = g.t
    return [g.S([t((2, 3)), t((2, 3))]), g.S([t((2, 3)), t((2, 3))], 1), g.S([t((2, 3)), t((2, 3))], -1),
            g.S([t((2, 3)), t((2, 3))], 2), g.S([t(()), t(())]), g.S([t((0, 3)), t((0, 3))], 1),
            g.S([t((4, 5), "T"), t((4, 5), "S"), t((4, 5), "E")], 1),
            g.S([t((2, 3)), t((2, 3), dtype="float64")])]


def _stack_errors(g):
    t = g.t
    return [g.S([t((2, 3)), t((3, 2))]), g.S([t((2, 3)), t((2, 3))], 3), g.S([])]


def _hvstack_samples(g):
    t = g.t
    return [g.S([t((2, 3)), t((2, 3))]), g.S([t((3,)), t((3,))]), g.S([t(()), t(())]),
            g.S([t((2, 3, 4)), t((2, 3, 4))]), g.S([t((4, 5), "T"), t((4, 5), "S")]),
            g.S([t((2, 3)), t((2, 3), dtype="int64")])]


def _repeat_samples(g):
    t = g.t
    return [g.S(t((2, 3)), 2, 1), g.S(t((2, 3)), (2, 1, 2)), g.S(t(()), 3), g.S(t(()), (2, 2)),
            g.S(t((2, 3)), 0, 2), g.S(t((4, 5), "T"), 1, 2), g.S(t((3,)), [2, 2]), g.S(t((3, 4), "E"), 2, 1)]


def _tile_samples(g):
    t = g.t
    return [g.S(t((2, 3)), (2, 1)), g.S(t((2, 3)), (2,)), g.S(t((2, 3)), (2, 1, 2)), g.S(t(()), (3,)),
            g.S(t((4, 5), "T"), (1, 2)), g.S(t((2, 3)), (0, 1))]


def _flip_samples(g):
    t = g.t
    return [g.S(t((3, 4)), (0,)), g.S(t((3, 4)), [0, 1]), g.S(t((2, 3, 4)), (-1, 0)), g.S(t(()), ()),
            g.S(t((3, 4)), (1,)), g.S(t((0, 3)), (0,)), g.S(t((4, 5), "T"), (0,)), g.S(t((3, 4), "S"), (1,)),
            g.S(t(LARGE, "T"), (0, 1))]


def _flipx_samples(g):
    t = g.t
    return [g.S(t((3, 4))), g.S(t((2, 3, 4))), g.S(t((4, 5), "T")), g.S(t((0, 2)))]


def _flipud_samples(g):
    return _flipx_samples(g) + [g.S(g.t((5,)))]


def _roll_samples(g):
    t = g.t
    return [g.S(t((3, 4)), 1), g.S(t((3, 4)), -5), g.S(t((3, 4)), 1, 0), g.S(t((3, 4)), (1, 2), (0, 1)),
            g.S(t((3, 4)), [3], [-1]), g.S(t(()), 1), g.S(t((0, 3)), 1, 1), g.S(t((4, 5), "T"), 2, 1),
            g.S(t((2, 3, 4), "P"), (1, -1), (2, 0))]


def _tri_samples(g):
    t = g.t
    return [g.S(t((4, 5))), g.S(t((4, 5)), 1), g.S(t((4, 5)), -2), g.S(t((2, 3, 4)), 0),
            g.S(t((4, 5), "T"), 1), g.S(t((2, 3, 4), "P")), g.S(t((0, 3))), g.S(t((3, 4)), diagonal=10),
            g.S(t((3, 4)), -10)]


def _tri_errors(g):
    return [g.S(g.t((3,))), g.S(g.t(()))]


def _diag_samples(g):
    t = g.t
    return [g.S(t((4,))), g.S(t((4,)), 1), g.S(t((4,)), -2), g.S(t((3, 4))), g.S(t((3, 4)), 1),
            g.S(t((3, 4)), -2), g.S(t((3, 4)), 5), g.S(t((4, 5), "T")), g.S(t((0,))), g.S(t((7,), "S"))]


def _diagonal_samples(g):
    t = g.t
    return [g.S(t((3, 4))), g.S(t((3, 4)), 1), g.S(t((3, 4)), -1), g.S(t((2, 3, 4)), 0, 1, 2),
            g.S(t((2, 3, 4)), 1, -1, 0), g.S(t((4, 5), "T")), g.S(t((2, 3, 4), "P"), 0, 0, 2),
            g.S(t((3, 4)), 10), g.S(t((3, 4)), offset=1, dim1=1, dim2=0)]


def _diag_embed_samples(g):
    t = g.t
    return [g.S(t((3,))), g.S(t((2, 3))), g.S(t((2, 3)), 1), g.S(t((2, 3)), -1, 0, 2),
            g.S(t((4, 5), "T")), g.S(t((0,)))]


def _unfold_samples(g):
    t = g.t
    return [g.S(t((10,)), 0, 3, 2), g.S(t((3, 8)), 1, 2, 3), g.S(t((3, 8)), 0, 3, 1), g.S(t((4, 5), "T"), 1, 2, 2),
            g.S(t(()), 0, 1, 1), g.S(t((5,)), 0, 5, 1), g.S(t((5,)), 0, 0, 1)]


def _unfold_errors(g):
    return [g.S(g.t((5,)), 0, 6, 1), g.S(g.t((5,)), 0, 2, 0), g.S(g.t((5,)), 1, 2, 1)]


# -- reductions with their own samples

def _count_nonzero_samples(g):
    t = g.t
    out = [g.S(t(s, l)) for s, l in UNARY_CASES]
    out += [g.S(t((3, 4)), 0), g.S(t((3, 4)), dim=-1), g.S(t((2, 3, 4)), (0, 2)), g.S(t((4, 5), "T"), 1),
            g.S(t((0, 3)), 1), g.S(t(LARGE, "T"), 0)]
    return out


def _unique_values(g, shape, dim=-1, layout="C"):
    """Values unique along `dim` (so sort/topk indices are defined); for bool, `dim` has size <= 2."""
    shape = tuple(shape)
    ranks = np.argsort(g.rng.random(shape), axis=dim) if shape else np.zeros((), np.int64)
    n = shape[dim] if shape else 1
    if g.dtype == "bool":
        vals = ranks % 2 == 1
    elif g.dtype == "uint8":
        vals = ranks
    elif g.dtype in INTS:
        vals = ranks - n // 2
    else:
        vals = (ranks - n // 2) * 0.5
    vals = cast_values(vals, g.dtype)
    base, views = layout_of(shape, layout)
    base_arr = np.zeros(base, vals.dtype)
    v = base_arr
    for vw in views:
        v = _np_view(v, vw)
    v[...] = vals
    return TArg(base_arr, g.dtype, views)


def _sort_samples(g):
    u = lambda shape, dim=-1, layout="C": _unique_values(g, shape, dim, layout)  # noqa: E731
    small = g.dtype == "bool"
    out = [g.S(u((2,) if small else (5,))), g.S(u(())), g.S(u((0,))), g.S(u((3, 2) if small else (3, 4))),
           g.S(u((2, 3) if small else (3, 4), 0), 0), g.S(u((2, 2) if small else (3, 4)), descending=True),
           g.S(u((2, 2, 3) if small else (2, 3, 4), 1), 1, True),
           g.S(u((2, 2) if small else (4, 5), -1, "T")), g.S(u((2, 2) if small else (4, 5), 0, "T"), 0),
           g.S(u((3, 2) if small else (2, 3, 4), -1, "P"))]
    # ties: stable sorting defines the indices
    t = g.t((4, 9), low=-2, high=2, integer=True)
    out += [g.S(t, stable=True), g.S(t, dim=0, stable=True), g.S(t, descending=True, stable=True)]
    if g.dtype in FLOATS:
        out.append(g.S(g.t((len(EXTREMAL) - 1,), data=[v for v in EXTREMAL if not (v == 0 and math.copysign(1, v) < 0)]), stable=True))
    if g.dtype not in ("bool", "int8", "uint8"):
        out.append(g.S(u((5, 300))))
    return out


def _topk_samples(g):
    u = lambda shape, dim=-1, layout="C": _unique_values(g, shape, dim, layout)  # noqa: E731
    if g.dtype == "bool":
        return [g.S(u((2,)), 1), g.S(u((3, 2)), 2), g.S(u((3, 2)), 1, largest=False), g.S(u((2, 3), 0), 2, 0)]
    out = [g.S(u((5,)), 2), g.S(u((5,)), 0), g.S(u((5,)), 5), g.S(u(()), 1), g.S(u((3, 4)), 2),
           g.S(u((3, 4), 0), 2, 0), g.S(u((3, 4)), 3, largest=False), g.S(u((4, 5), -1, "T"), 2),
           g.S(u((4, 5), 0, "T"), 3, 0, False), g.S(u((2, 3, 4), 1, "P"), 2, 1)]
    if g.dtype not in ("int8", "uint8"):
        out.append(g.S(u((5, 300)), 7))
    return out


def _topk_errors(g):
    return [g.S(g.t((5,)), 6), g.S(g.t((5,)), -1), g.S(g.t((3, 4)), 2, 2)]


def _maxmin_samples(g):
    """max/min: the full reduction, the dim overload (values, indices) and the binary overload."""
    out = [g.S(g.t(s, l)) for s, l in UNARY_CASES if 0 not in s]
    if g.dtype in FLOATS:
        out.append(g.S(g.t((len(EXTREMAL),), data=EXTREMAL)))
        out.append(g.S(g.t((2, 7), data=EXTREMAL), 1))
    for shape, layout, dim in REDUCE_CASES:
        if dim is None or isinstance(dim, tuple) or 0 in shape[dim:dim + 1] or shape == ():
            continue
        out.append(g.S(g.t(shape, layout), dim))
        out.append(g.S(g.t(shape, layout), dim, True))
    out += [g.S(g.t(()), 0), g.S(g.t(()), dim=0, keepdim=True), g.S(g.t((0, 3)), 1)]
    # ties: the index of the first maximal value (documented)
    out.append(g.S(g.t((5, 6), low=-1, high=1, integer=True), 1))
    out.append(g.S(g.t((6, 5), low=-1, high=1, integer=True), 0))
    out += [g.S(g.t((3, 4)), g.t((3, 4))), g.S(g.t((3, 1)), g.t((4,))), g.S(g.t((4, 5), "T"), g.t((4, 5), "S"))]
    return out


def _maxmin_errors(g):
    return [g.S(g.t((0,))), g.S(g.t((3, 4)), 2), g.S(g.t((0, 3)), 0), g.S(g.t((3,)), g.t((4,)))]


def _aminmax_samples(g):
    out = [g.S(g.t(s, l)) for s, l in UNARY_CASES if 0 not in s]
    for shape, layout, dim in REDUCE_CASES:
        if dim is None or isinstance(dim, tuple) or 0 in shape[dim:dim + 1] or shape == ():
            continue
        out.append(g.S(g.t(shape, layout), dim=dim))
        out.append(g.S(g.t(shape, layout), dim=dim, keepdim=True))
    if g.dtype in FLOATS:
        out.append(g.S(g.t((2, 7), data=EXTREMAL), dim=1))
    out.append(g.S(g.t((0, 3)), dim=1))
    return out


def _arg_samples(g):
    out = [g.S(g.t(s, l)) for s, l in UNARY_CASES if 0 not in s]
    for shape, layout, dim in REDUCE_CASES:
        if dim is None or isinstance(dim, tuple) or 0 in shape[dim:dim + 1] or shape == ():
            continue
        out.append(g.S(g.t(shape, layout), dim))
        out.append(g.S(g.t(shape, layout), dim, True))
    out += [g.S(g.t(()), 0), g.S(g.t((3, 4)), keepdim=True), g.S(g.t((0, 3)), 1)]
    out.append(g.S(g.t((5, 6), low=-1, high=1, integer=True), 1))
    out.append(g.S(g.t((5, 6), low=-1, high=1, integer=True)))
    if g.dtype in FLOATS:
        out.append(g.S(g.t((2, 7), data=EXTREMAL), 1))
    return out


def _var_samples(g, extremal=True):
    out = reduce_samples("dims", True, (), True, False, extremal)(g)
    out += [g.S(g.t((3, 4)), 1, False), g.S(g.t((3, 4)), 0, True, True), g.S(g.t((3, 4)), unbiased=False),
            g.S(g.t((3, 4)), dim=1, correction=0), g.S(g.t((3, 4)), dim=1, correction=2),
            g.S(g.t((4, 5), "T"), dim=0, correction=0, keepdim=True), g.S(g.t((1, 4)), dim=0),
            g.S(g.t((3, 4)), dim=(0, 1), unbiased=False), g.S(g.t((3, 4)), correction=1.5)]
    return out


def _norm_samples(g):
    t = g.t
    out = [g.S(t(s, l)) for s, l in UNARY_CASES]
    for p in (1, 2, 3, 0, float("inf"), -float("inf"), 0.5):
        out += [g.S(t((3, 4)), p), g.S(t((2, 3, 4), "P"), p, 1), g.S(t((4, 5), "T"), p, (0, 1), True)]
    out += [g.S(t((3, 4)), dim=1), g.S(t((3, 4)), 2, -1, keepdim=True), g.S(t(LARGE, "T"), 2, 1),
            g.S(t((0, 3)), 2, 1), g.S(t((3, 4)), 2, 1, dtype=Dt("float64"))]
    if g.dtype in FLOATS:
        out.append(g.S(t((2, 7), data=EXTREMAL), 2, 1))
    # the Frobenius and nuclear norms by name
    out += [g.S(t((3, 4)), "fro"), g.S(t((2, 3, 4)), "fro", (1, 2)), g.S(t((4, 5), "T"), p="fro", dim=(0, 1), keepdim=True),
            g.S(t((3, 4)), "nuc"), g.S(t((2, 3, 4)), "nuc", (1, 2)), g.S(t((4, 5), "T"), p="nuc", dim=(0, 1), keepdim=True)]
    return out


def _softmax_samples(g):
    t = g.t
    out = [g.S(t((3, 4)), 1), g.S(t((3, 4)), 0), g.S(t((3, 4)), -1), g.S(t(()), 0), g.S(t((0, 3)), 1),
           g.S(t((2, 3, 4)), 1), g.S(t((4, 5), "T"), 1), g.S(t((4, 5), "T"), 0), g.S(t((2, 3, 4), "P"), 2),
           g.S(t((3, 4), "E"), 0), g.S(t(LARGE), 1), g.S(t(LARGE, "T"), 0), g.S(t((3, 4), low=-80, high=80), 1),
           g.S(t((3, 4)), dim=1), g.S(t((3, 4)), 1, Dt("float64")), g.S(t((3, 4)), 1, dtype=Dt("float32"))]
    if g.dtype in FLOATS:
        out.append(g.S(t((2, 7), data=EXTREMAL), 1))
        out.append(g.S(t((2, 7), data=[float("-inf")] * 7 + [0.0] * 7), 1))
    return out


def _cum_samples(g):
    t = g.t
    out = [g.S(t((5,)), 0), g.S(t((3, 4)), 1), g.S(t((3, 4)), 0), g.S(t((3, 4)), -1), g.S(t(()), 0),
           g.S(t((0, 3)), 1), g.S(t((0, 3)), 0), g.S(t((2, 3, 4)), 1), g.S(t((4, 5), "T"), 1),
           g.S(t((4, 5), "T"), 0), g.S(t((2, 3, 4), "P"), 2), g.S(t((3, 4), "E"), 0), g.S(t((3, 4), "S"), 1),
           g.S(t((3, 4)), dim=1), g.S(t((3, 4)), 1, dtype=Dt("float64")), g.S(t((3, 4)), 1, dtype=Dt("int64"))]
    if g.op.name == "cumsum":
        out += [g.S(t(LARGE), 1), g.S(t(LARGE, "T"), 0)]
    else:
        out += [g.S(t((7, 40), low=0.5, high=1.5), 1)]
    if g.dtype in FLOATS:
        out.append(g.S(t((2, 7), data=EXTREMAL), 1))
    return out


def _logsumexp_samples(g):
    out = reduce_samples("dims_req", True)(g)
    out += [g.S(g.t((3, 4), low=-100, high=100), 1), g.S(g.t((2, 3, 4)), (0, 1)), g.S(g.t((3, 4)), [1], True)]
    if g.dtype in FLOATS:
        out.append(g.S(g.t((2, 7), data=[float("-inf")] * 7 + EXTREMAL[:7]), 1))
    return out


def _unique_samples(g):
    t = lambda shape, layout="C": g.t(shape, layout, low=-3, high=3, integer=True)  # noqa: E731
    return [g.S(t((10,))), g.S(t((3, 4))), g.S(t(())), g.S(t((0,))), g.S(t((4, 5), "T")),
            g.S(t((3, 4)), return_inverse=True), g.S(t((3, 4)), return_counts=True),
            g.S(t((3, 4), "S"), True, True, True), g.S(t((5, 3)), dim=0), g.S(t((3, 5)), dim=1, return_counts=True),
            g.S(t(LARGE))]


def _bincount_samples(g):
    i = lambda n, hi=6: g.t((n,), low=0, high=hi)  # noqa: E731
    return [g.S(i(10)), g.S(i(10), minlength=10), g.S(i(0)), g.S(i(0), minlength=3),
            g.S(i(10), g.t((10,), dtype="float64")), g.S(i(10), g.t((10,), dtype="float32"), 3),
            g.S(i(10), weights=g.t((10,), dtype="int64")), g.S(g.t((21,), "S", low=0, high=6)),
            g.S(i(5000, 100))]


def _bincount_errors(g):
    return [g.S(g.t((3, 4), low=0)), g.S(g.t((5,), low=0), g.t((4,), dtype="float32")),
            g.S(g.t((5,), data=[1, -1, 2, 0, 0]) if g.dtype not in ("uint8", "bool") else g.t((3, 2), low=0)),
            g.S(g.t((5,), low=0), minlength=-1)]


# -- indexing

def _index_select_samples(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), 0, i([2, 0, 2])), g.S(t((3, 4)), 1, i([3, 1])), g.S(t((3, 4)), -1, i([0])),
            g.S(t((3, 4)), 0, i([], )), g.S(t(()), 0, i([0])), g.S(t(()), 0, i(0)),
            g.S(t((4, 5), "T"), 1, i([4, 0, 1])), g.S(t((2, 3, 4), "P"), 2, i([1, 1, 0], "S")),
            g.S(t((3, 4)), 0, i([2, 1], dtype="int32")), g.S(t((3, 4), "E"), 1, i([0, 3])),
            g.S(t(LARGE), 1, g.rand_idx((100,), LARGE[1])), g.S(t((0, 4)), 1, i([1, 2]))]


def _index_select_errors(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), 0, i([3])), g.S(t((3, 4)), 2, i([0])), g.S(t((3, 4)), 0, i([[0, 1]])),
            g.S(t((3, 4)), 0, TArg(np.array([0.0, 1.0], np.float32), "float32")), g.S(t((3, 4)), 0, i([-1]))]


def _gather_samples(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), 1, i([[0, 1], [3, 3], [2, 0]])), g.S(t((3, 4)), 0, i([[0, 1, 2, 0], [2, 2, 2, 2]])),
            g.S(t((3, 4)), -1, i([[0], [1], [2]])), g.S(t(()), 0, i(0)), g.S(t((3, 4)), 0, i(np.zeros((0, 4)))),
            g.S(t((4, 5), "T"), 1, i([[0, 4], [3, 3], [1, 2], [0, 0], [4, 4]])),
            g.S(t((2, 3, 4), "P"), 2, g.expanded_idx([[[1]]], (4, 3, 1))), g.S(t((3, 4)), 1, i([[0, 1], [3, 3]]), ),
            g.S(t(LARGE), 1, TArg(g.rng.integers(0, LARGE[1], LARGE).astype(np.int64), "int64"))]


def _gather_errors(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), 1, i([[0, 4]])), g.S(t((3, 4)), 1, i([0, 1])), g.S(t((3, 4)), 2, i([[0]])),
            g.S(t((3, 4)), 1, i([[0.0]], dtype="float32")), g.S(t((3, 4)), 1, i(np.zeros((4, 1))))]


def _take_along_dim_samples(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), i([[0, 1], [3, 3], [2, 0]]), 1), g.S(t((3, 4)), i([[0, 1, 2, 0]]), 0),
            g.S(t((3, 4)), i([5, 0, 11])), g.S(t((3, 4)), i([[1], [0], [2]]), dim=-1),
            g.S(t((4, 5), "T"), i([[0], [4], [1], [2]]), 1), g.S(t((2, 3, 4)), i(np.zeros((1, 3, 2))), 2),
            g.S(t(()), i(0)), g.S(t((3, 4)), i([[3, 0], [1, 1]], dtype="int32"), 1)]


def _scatter_samples(g):
    t, i = g.t, g.idx
    perm = lambda r, c, hi: np.stack([g.rng.permutation(hi)[:c] for _ in range(r)])  # noqa: E731
    return [g.S(t((3, 4)), 1, i(perm(3, 2, 4)), t((3, 2))), g.S(t((3, 4)), 0, i(g.rng.integers(0, 3, (1, 4))), t((1, 4))),
            g.S(t((3, 4)), 1, i(perm(2, 3, 4)), t((3, 4))), g.S(t(()), 0, i(0), t(())),
            g.S(t((4, 5), "T"), 0, i(perm(5, 4, 4).T.copy()), t((4, 5), "S")),
            g.S(t((3, 4)), -1, i(np.zeros((3, 0))), t((3, 2))), g.S(t((3, 4)), 1, i(perm(3, 2, 4)), 1.5),
            g.S(t((3, 4), "S"), 1, i(perm(3, 1, 4)), t((3, 1))),
            g.S(t((3, 4)), 1, i(perm(3, 2, 4), dtype="int32"), t((3, 2))), g.S(t((3, 4), "T"), 0, i([[2, 0]]), value=1)]


def _scatter_add_samples(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), 1, i([[0, 0], [3, 1], [2, 2]]), t((3, 2))),
            g.S(t((3, 4)), 0, i([[0, 1, 2, 0], [0, 0, 0, 0]]), t((2, 4))), g.S(t(()), 0, i(0), t(())),
            g.S(t((4, 5), "T"), 1, i(np.ones((4, 5))), t((4, 5), "T")),
            g.S(t((3, 4)), 1, i(np.zeros((3, 0))), t((3, 2))),
            g.S(t(LARGE), 1, TArg(g.rng.integers(0, LARGE[1], LARGE).astype(np.int64), "int64"), t(LARGE))]


def _scatter_errors(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), 1, i([[0, 4]]), t((3, 2))), g.S(t((3, 4)), 2, i([[0]]), t((3, 2))),
            g.S(t((3, 4)), 1, i([[0, 1, 2, 3, 0]]), t((1, 2))),
            g.S(t((3, 4)), 1, i([[0]]), t((1, 1), dtype="float64" if g.dtype != "float64" else "float32"))]


def _index_add_samples(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), 0, i([0, 2, 0]), t((3, 4))), g.S(t((3, 4)), 1, i([3, 1]), t((3, 2))),
            g.S(t((3, 4)), 0, i([1]), t((1, 4)), alpha=2), g.S(t(()), 0, i([0]), t(())),
            g.S(t((4, 5), "T"), 1, i([0, 4, 4]), t((4, 3), "T")), g.S(t((3, 4)), 0, i([]), t((0, 4))),
            g.S(t((3, 4)), 0, i([2, 0], dtype="int32"), t((2, 4)))]


def _index_add_errors(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), 0, i([3]), t((1, 4))), g.S(t((3, 4)), 0, i([0, 1]), t((3, 4))),
            g.S(t((3, 4)), 2, i([0]), t((1, 4))), g.S(t((3, 4)), 0, i([0]), t((1, 3)))]


def _index_fill_samples(g):
    t, i = g.t, g.idx
    v = True if g.dtype == "bool" else (5 if g.dtype in INTS else -2.5)
    return [g.S(t((3, 4)), 0, i([0, 2]), v), g.S(t((3, 4)), 1, i([3, 3, 1]), v), g.S(t((3, 4)), -1, i([]), v),
            g.S(t((4, 5), "T"), 1, i([0]), v), g.S(t((3, 4)), 0, i([1]), g.t((), dtype=g.dtype)),
            g.S(t(()), 0, i([0]), v)]


def _index_copy_samples(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), 0, i([2, 0]), t((2, 4))), g.S(t((3, 4)), 1, i([3, 1, 0]), t((3, 3))),
            g.S(t((4, 5), "T"), 1, i([4]), t((4, 1))), g.S(t((3, 4)), 0, i([]), t((0, 4))),
            g.S(t(()), 0, i([0]), t(()))]


def _masked_fill_samples(g):
    t, m = g.t, g.mask
    v = True if g.dtype == "bool" else (5 if g.dtype in INTS else -2.5)
    return [g.S(t((3, 4)), m((3, 4)), v), g.S(t((3, 4)), m((4,)), v), g.S(t((3, 4)), m(()), v),
            g.S(t(()), m(()), v), g.S(t((0, 4)), m((0, 4)), v), g.S(t((4, 5), "T"), m((4, 5), "S"), v),
            g.S(t((3, 4)), m((3, 4)), g.t((), dtype=g.dtype)), g.S(t((3, 4)), m((3, 4)), 1),
            g.S(t((3, 4)), m((3, 4)), g.t((), dtype="float64")), g.S(t(LARGE, "T"), m(LARGE), v)]


def _masked_fill_errors(g):
    t, m = g.t, g.mask
    return [g.S(t((3, 4)), m((4, 3)), 1), g.S(t((3, 4)), t((3, 4), dtype="int64"), 1),
            g.S(t((3, 4)), m((3, 4)), t((2,)))]


def _masked_select_samples(g):
    t, m = g.t, g.mask
    return [g.S(t((3, 4)), m((3, 4))), g.S(t((3, 4)), m((4,))), g.S(t((4,)), m((3, 4))), g.S(t(()), m(())),
            g.S(t((0, 4)), m((0, 4))), g.S(t((4, 5), "T"), m((4, 5), "S")), g.S(t(LARGE), m(LARGE, "T"))]


def _masked_scatter_samples(g):
    t, m = g.t, g.mask
    return [g.S(t((3, 4)), m((3, 4)), t((3, 4))), g.S(t((3, 4)), m((4,)), t((20,))), g.S(t(()), m(()), t((1,))),
            g.S(t((4, 5), "T"), m((4, 5)), t((4, 5), "T"))]


def _nonzero_samples(g):
    out = [g.S(g.t(s, l, low=-1, high=1, integer=True)) for s, l in UNARY_CASES]
    if g.dtype in FLOATS:
        out.append(g.S(g.t((len(EXTREMAL),), data=EXTREMAL)))
    if g.op.name == "nonzero":
        out += [g.S(g.t(s, l, low=-1, high=1, integer=True), as_tuple=True) for s, l in UNARY_CASES[:6]]
        out.append(g.S(g.t((4, 5), "T", low=-1, high=1, integer=True), as_tuple=False))
    return out


def _index_put_samples(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), (i([0, 2]),), t((2, 4))), g.S(t((3, 4)), (i([0, 2]), i([1, 3])), t((2,))),
            g.S(t((3, 4)), (i([0, 2]), i([1, 3])), t(())), g.S(t((3, 4)), (g.mask((3, 4)),), t(())),
            g.S(t((3, 4)), (i([0, 0, 1]), i([1, 1, 2])), t((3,)), True),
            g.S(t((3, 4)), (i([[0], [2]]), i([1, 3])), t((2, 2))),
            g.S(t((4, 5), "T"), (i([3, 1]),), t((5,))), g.S(t((3, 4)), (i([-1]),), t((1, 4)), accumulate=True),
            g.S(t((3, 4)), (i([]),), t((0, 4)))]


def _index_put_errors(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), (i([3]),), t((1, 4))), g.S(t((3, 4)), (i([0, 1]),), t((3, 4))),
            g.S(t((3, 4)), (i([0]), i([0]), i([0])), t(()))]


def _take_samples(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), i([0, 5, 11])), g.S(t((3, 4)), i([[0, -1], [2, 2]])), g.S(t(()), i([0, 0])),
            g.S(t((3, 4)), i([])), g.S(t((4, 5), "T"), i([1, 2, 19])), g.S(t((3, 4), "S"), i(0)),
            g.S(t((3, 4), "E"), g.expanded_idx([5], (3,)))]


def _take_errors(g):
    return [g.S(g.t((3, 4)), g.idx([12])), g.S(g.t((3, 4)), g.idx([-13])),
            g.S(g.t((3, 4)), g.idx([0], dtype="int32"))]


# -- matrix products

# accumulating ops (scatter_add, index_add, index_put(accumulate=True)) round after each add in
# float16/bfloat16; a different order moves results by an ulp of the partial sums (|sum| < 16)
ACC_TOL = {"float16": (1e-3, 1e-2), "bfloat16": (1.6e-2, 7e-2)}

MM_TOL = {"float32": (1e-5, 1e-5), "float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2)}


def _mm_samples(g):
    t = g.t
    return [g.S(t((3, 4)), t((4, 5))), g.S(t((1, 1)), t((1, 1))), g.S(t((0, 4)), t((4, 5))),
            g.S(t((3, 0)), t((0, 5))), g.S(t((3, 4)), t((4, 0))), g.S(t((4, 3), "T"), t((4, 5))),
            g.S(t((3, 4)), t((5, 4), "T")), g.S(t((3, 4), "S"), t((4, 5), "S")), g.S(t((3, 4), "E"), t((4, 5), "E")),
            g.S(t((33, 65)), t((65, 17))), g.S(t((65, 33), "T"), t((17, 65), "T"))]


def _mm_errors(g):
    t = g.t
    return [g.S(t((3, 4)), t((5, 4))), g.S(t((3,)), t((3, 4))), g.S(t((2, 3, 4)), t((4, 5))),
            g.S(t((3, 4)), t((4, 5), dtype="float64" if g.dtype != "float64" else "float32"))]


def _bmm_samples(g):
    t = g.t
    return [g.S(t((2, 3, 4)), t((2, 4, 5))), g.S(t((0, 3, 4)), t((0, 4, 5))), g.S(t((2, 0, 4)), t((2, 4, 5))),
            g.S(t((2, 3, 0)), t((2, 0, 5))), g.S(t((2, 4, 3), "T"), t((2, 4, 5))),
            g.S(t((4, 3, 2), "P"), t((2, 4, 5), "S")), g.S(t((3, 9, 17)), t((3, 17, 5)))]


def _bmm_errors(g):
    t = g.t
    return [g.S(t((2, 3, 4)), t((3, 4, 5))), g.S(t((2, 3, 4)), t((2, 5, 5))), g.S(t((3, 4)), t((4, 5)))]


def _matmul_samples(g):
    t = g.t
    return [g.S(t((4,)), t((4,))), g.S(t((3, 4)), t((4,))), g.S(t((4,)), t((4, 5))), g.S(t((3, 4)), t((4, 5))),
            g.S(t((2, 3, 4)), t((4, 5))), g.S(t((3, 4)), t((2, 4, 5))), g.S(t((2, 1, 3, 4)), t((3, 4, 5))),
            g.S(t((2, 3, 4)), t((4,))), g.S(t((4,)), t((2, 4, 5))), g.S(t((0, 4)), t((4,))),
            g.S(t((0,)), t((0,))), g.S(t((2, 3, 0)), t((0, 5))), g.S(t((4, 3), "T"), t((2, 4, 5), "P")),
            g.S(t((2, 3, 4), "S"), t((4, 5), "E")), g.S(t((2, 3, 4), "E"), t((4,), "S")),
            g.S(t((9, 33)), t((33, 17)))]


def _matmul_errors(g):
    t = g.t
    return [g.S(t((3, 4)), t((3,))), g.S(t(()), t((3,))), g.S(t((2, 3, 4)), t((3, 4, 5))),
            g.S(t((4,)), t((5,)))]


def _addmm_samples(g):
    t = g.t
    return [g.S(t((3, 5)), t((3, 4)), t((4, 5))), g.S(t((5,)), t((3, 4)), t((4, 5))), g.S(t(()), t((3, 4)), t((4, 5))),
            g.S(t((3, 1)), t((3, 4)), t((4, 5)), beta=0.5, alpha=2), g.S(t((3, 5)), t((3, 0)), t((0, 5)), beta=2),
            g.S(t((5, 3), "T"), t((4, 3), "T"), t((4, 5), "S")), g.S(t((3, 5)), t((3, 4)), t((4, 5)), beta=0),
            g.S(t((0, 5)), t((0, 4)), t((4, 5)))]


def _baddbmm_samples(g):
    t = g.t
    return [g.S(t((2, 3, 5)), t((2, 3, 4)), t((2, 4, 5))), g.S(t((5,)), t((2, 3, 4)), t((2, 4, 5))),
            g.S(t((2, 3, 5)), t((2, 3, 4)), t((2, 4, 5)), beta=0.5, alpha=-1),
            g.S(t((2, 5, 3), "T"), t((2, 4, 3), "T"), t((2, 4, 5), "S")),
            g.S(t((2, 3, 5)), t((2, 3, 0)), t((2, 0, 5)))]


def _addmv_samples(g):
    t = g.t
    return [g.S(t((3,)), t((3, 4)), t((4,))), g.S(t(()), t((3, 4)), t((4,))), g.S(t((1,)), t((3, 4)), t((4,)), beta=2, alpha=0.5),
            g.S(t((3,), "S"), t((4, 3), "T"), t((4,), "S")), g.S(t((3,)), t((3, 0)), t((0,))),
            g.S(t((0,)), t((0, 4)), t((4,)))]


def _dot_samples(g):
    t = g.t
    return [g.S(t((4,)), t((4,))), g.S(t((0,)), t((0,))), g.S(t((1,)), t((1,))), g.S(t((5,), "S"), t((5,), "S")),
            g.S(t((5,), "E"), t((5,))), g.S(t((1000,)), t((1000,)))]


def _dot_errors(g):
    t = g.t
    return [g.S(t((4,)), t((5,))), g.S(t((2, 2)), t((4,))), g.S(t(()), t(()))]


def _inner_samples(g):
    t = g.t
    return [g.S(t((4,)), t((4,))), g.S(t((3, 4)), t((4,))), g.S(t((3, 4)), t((2, 4))), g.S(t(()), t((3, 4))),
            g.S(t((2, 3, 4)), t((5, 4))), g.S(t((4, 3), "T"), t((2, 3), "S")), g.S(t((0, 4)), t((4,)))]


def _mv_samples(g):
    t = g.t
    return [g.S(t((3, 4)), t((4,))), g.S(t((0, 4)), t((4,))), g.S(t((3, 0)), t((0,))), g.S(t((4, 3), "T"), t((4,), "S")),
            g.S(t((3, 4), "E"), t((4,), "E")), g.S(t((33, 65)), t((65,)))]


def _outer_samples(g):
    t = g.t
    return [g.S(t((3,)), t((4,))), g.S(t((0,)), t((4,))), g.S(t((1,)), t((1,))), g.S(t((3,), "S"), t((4,), "E"))]


def _einsum_samples(g):
    t = g.t
    return [g.S(None, "ij,jk->ik", t((3, 4)), t((4, 5))), g.S(None, "ij->ji", t((3, 4))),
            g.S(None, "ii->i", t((4, 4))), g.S(None, "ii", t((4, 4))), g.S(None, "i,j->ij", t((3,)), t((4,))),
            g.S(None, "bij,bjk->bik", t((2, 3, 4)), t((2, 4, 5))), g.S(None, "...ij->...ji", t((2, 3, 4))),
            g.S(None, "ij->", t((3, 4))), g.S(None, "ij,ij->i", t((3, 4)), t((3, 4))),
            g.S(None, "i,i->", t((4,)), t((4,))), g.S(None, "ij,jk,kl->il", t((2, 3)), t((3, 4)), t((4, 2))),
            g.S(None, "ij,jk->ik", [t((3, 4)), t((4, 5))]), g.S(None, "ij,jk", t((4, 3), "T"), t((4, 5), "S")),
            g.S(None, "i j , j k -> i k", t((3, 4)), t((4, 5))), g.S(None, "ij,j->i", t((3, 4)), t((4,), "E"))]


def _einsum_errors(g):
    t = g.t
    return [g.S(None, "ij,jk->ik", t((3, 4)), t((5, 5))), g.S(None, "ij->ji", t((3, 4)), t((3, 4))),
            g.S(None, "ijk->ij", t((3, 4)))]


def _kron_samples(g):
    t = g.t
    return [g.S(t((2, 3)), t((3, 2))), g.S(t((2,)), t((3,))), g.S(t((2, 3)), t((2,))), g.S(t(()), t((2, 3))),
            g.S(t((2, 2, 2)), t((2, 3))), g.S(t((3, 2), "E"), t((2, 1), "E")), g.S(t((0, 2)), t((2, 2)))]  # torch rejects transposed


def _trace_samples(g):
    t = g.t
    return [g.S(t((3, 4))), g.S(t((4, 3))), g.S(t((3, 3))), g.S(t((0, 3))), g.S(t((4, 5), "T")),
            g.S(t((3, 4), "S")), g.S(t((100, 100)))]


def _trace_errors(g):
    return [g.S(g.t((3,))), g.S(g.t((2, 3, 4))), g.S(g.t(()))]


def _polygamma_samples(g):
    t = g.t
    out = [g.S(n, t(shape, layout)) for n in (0, 1, 2, 3) for shape, layout in (((3, 4), "C"), ((4, 5), "T"), ((), "C"), ((0,), "C"))]
    if g.dtype in FLOATS:
        out += [g.S(n, t((len(POLYGAMMA_EXTREMAL),), data=POLYGAMMA_EXTREMAL)) for n in (1, 2)]
        out += [g.S(n, t((6,), data=[-0.5, -1.5, -2.3, -3.7, 0.3, 4.1])) for n in (0, 1, 3)]
    return out



def special_unary(name, dtypes=None, domain=(None, None)):
    """torch.special.<name>: a function only; F32F64 where torch has no float16/bfloat16 kernel."""
    return OpInfo("special_" + name, unary_samples(), dtypes or ALL, method=False, domain=domain,
                  tol=TOL_SPECIAL, kind="unary")


# ---------------------------------------------------------------------------------------------
# the database

POS = (0.05, 5.0)      # domain of log, sqrt, ...
UNIT = (-0.95, 0.95)   # asin, acos, atanh, erfinv
TOL_TRANSC = {"float16": (2e-3, 1e-4), "bfloat16": (1.6e-2, 1e-3)}
# special functions: torch evaluates float32 in float32 (a few ulp), kindle in double rounded once
TOL_SPECIAL = {"float32": (1e-5, 1e-5), **TOL_TRANSC}
F32F64 = ("float32", "float64") + INTS + ("bool",)   # torch has no float16/bfloat16 kernel
# Not the poles at negative integers, nor +-inf: there Kindle returns the limits (inf at a pole,
# 0 at +inf) and torch's float32 reflection formula returns rounding artifacts (trigamma(-1) =
# 1.3e15) or NaN.
POLYGAMMA_EXTREMAL = [float("nan"), 0.0, -0.0, 1.0, 0.5, -0.5, 2.5, -2.5, 3.5, 100.0]

_div_kw = ({"rounding_mode": "trunc"}, {"rounding_mode": "floor"}, {"rounding_mode": None})

OPS: list[OpInfo] = [
    # ---- elementwise unary
    unary("sqrt", ALL + COMPLEX, ref=np.sqrt, domain=POS),
    unary("rsqrt", ALL + COMPLEX, ref=lambda a: 1 / np.sqrt(a), domain=POS),
    unary("exp", ALL + COMPLEX, ref=np.exp, tol=TOL_TRANSC),
    unary("exp2", ALL + COMPLEX, ref=np.exp2, tol=TOL_TRANSC),
    unary("log", ALL + COMPLEX, ref=np.log, domain=POS),
    unary("log2", ALL + COMPLEX, ref=np.log2, domain=POS),
    unary("log10", ALL + COMPLEX, ref=np.log10, domain=POS),
    unary("log1p", ALL + COMPLEX, ref=np.log1p, domain=(-0.9, 5)),
    unary("expm1", ALL + COMPLEX, ref=np.expm1, tol=TOL_TRANSC),
    unary("sin", ALL + COMPLEX, ref=np.sin),
    unary("cos", ALL + COMPLEX, ref=np.cos),
    unary("tan", ALL + COMPLEX, ref=np.tan, domain=(-1.4, 1.4), tol=TOL_TRANSC),
    unary("asin", ALL + COMPLEX, ref=np.arcsin, domain=UNIT),
    unary("acos", ALL + COMPLEX, ref=np.arccos, domain=UNIT),
    unary("atan", ALL + COMPLEX, ref=np.arctan),
    unary("asinh", ALL + COMPLEX, ref=np.arcsinh),
    unary("acosh", ALL + COMPLEX, ref=np.arccosh, domain=(1.05, 5)),
    unary("atanh", ALL + COMPLEX, ref=np.arctanh, domain=UNIT),
    unary("sinh", ALL + COMPLEX, ref=np.sinh, tol=TOL_TRANSC),
    unary("cosh", ALL + COMPLEX, ref=np.cosh, tol=TOL_TRANSC),
    unary("tanh", ALL + COMPLEX, ref=np.tanh),
    unary("sigmoid", ALL + COMPLEX, ref=lambda a: 1 / (1 + np.exp(-a))),
    unary("erf"),
    unary("erfinv", domain=UNIT, tol={"float32": (1e-5, 1e-5), **TOL_TRANSC}),
    unary("reciprocal", ALL + COMPLEX, ref=np.reciprocal, domain=POS),
    unary("frac", FLOATS, ref=lambda a: a - np.trunc(a)),
    unary("neg", NUMERIC + COMPLEX, ref=np.negative),
    unary("abs", NUMERIC + COMPLEX, ref=np.abs),
    unary("sign", ref=lambda a: np.where(np.isnan(a), 0, np.sign(a))),  # torch: sign(nan) = 0
    unary("sgn", ALL + COMPLEX, ref=lambda a: np.where(np.isnan(a), 0, np.sign(a))),
    unary("floor", NUMERIC, ref=np.floor),
    unary("ceil", NUMERIC, ref=np.ceil),
    unary("trunc", NUMERIC, ref=np.trunc),
    unary("square", ALL + COMPLEX, ref=np.square),
    unary("relu", NUMERIC, ref=lambda a: np.maximum(a, 0)),
    unary("silu", FLOATS, method=False, ref=lambda a: a / (1 + np.exp(-a))),
    unary("isnan", ALL + COMPLEX, inplace=False, ref=np.isnan),
    unary("isinf", ALL + COMPLEX, inplace=False, ref=np.isinf),
    unary("isfinite", ALL + COMPLEX, inplace=False, ref=np.isfinite),
    unary("conj", ALL + COMPLEX, inplace=False),
    unary("conj_physical", ALL + COMPLEX, inplace=False),
    unary("resolve_conj", ALL + COMPLEX, inplace=False),
    unary("resolve_neg", ALL + COMPLEX, inplace=False),
    unary("angle", ALL + COMPLEX, inplace=False, extremal=NO_NAN_EXTREMAL),
    op("real", _plain_samples, ALL + COMPLEX, method=False, view=True),
    op("imag", _plain_samples, COMPLEX, method=False, view=True),
    op("view_as_real", _plain_samples, COMPLEX, method=False, view=True),
    op("view_as_complex", _view_as_complex_samples, F32_64, method=False, view=True, errors=_view_as_complex_errors,
       dtypes_gap=("float16",)),  # complex32: not in Kindle
    op("complex", _parts_samples, F32_64, method=False, errors=binary_errors, dtypes_gap=("float16",)),
    op("polar", _polar_samples, F32_64, method=False, errors=binary_errors),
    op("_fft_c2c", _fft_c2c_samples, COMPLEX, method=False),
    op("_fft_r2c", _fft_r2c_samples, F32_64, method=False),
    op("_fft_c2r", _fft_c2r_samples, COMPLEX, method=False),
    unary("signbit", inplace=False, ref=np.signbit, extremal=NO_NAN_EXTREMAL),
    unary("logical_not", ALL + COMPLEX, inplace_function=False, ref=np.logical_not),
    unary("bitwise_not", INT_BOOL, inplace_function=False),
    unary("round", NUMERIC, ref=np.round, kwargs=({"decimals": 2}, {"decimals": -1}, {"decimals": 0}),
          kwargs_dtypes=FLOATS),  # torch has no integer kernel for round(decimals=)
    unary("gelu", FLOATS, method=False, inplace=False, extremal=FINITE_EXTREMAL, kwargs=({"approximate": "tanh"}, {"approximate": "none"})),
    unary("softplus", FLOATS, method=False, inplace=False, kwargs=((2, 5), {"beta": 0.5, "threshold": 1})),
    unary("nan_to_num", kwargs=({"nan": 1.0, "posinf": 2.0, "neginf": -2.0}, {"nan": 0.5}, (1.5,))),
    _with_tensor_bounds(unary("clamp", kwargs=({"min": -1, "max": 1}, {"max": 0.5}, (0, 2), {"min": 2, "max": 1},
                                               {"min": -1.5}), args=(-1, 1))),
    _with_tensor_bounds(unary("clip", kwargs=({"min": -1, "max": 1}, {"max": 0.5}, (0, 2)), args=(-1, 1))),
    unary("clamp_min", inplace=True, inplace_function=False, args=(0.5,), kwargs=((1,),)),
    unary("clamp_max", inplace=True, inplace_function=False, args=(0.5,), kwargs=((1,),)),
    unary("leaky_relu", FLOATS, method=False, inplace=False, kwargs=((0.2,), {"negative_slope": 2})),
    unary("hardtanh", SIGNED, method=False, inplace_function=True, kwargs=((-0.5, 0.5), {"min_val": 0, "max_val": 2})),
    unary("elu", FLOATS, method=False, inplace=False, extremal=PIECEWISE_EXTREMAL, kwargs=((0.5,), {"alpha": 2, "scale": 1.5, "input_scale": 0.5})),
    unary("threshold", SIGNED, method=False, inplace=False, args=(0.5, -1.0), kwargs=((1, 3),)),

    # ---- elementwise binary
    binary("add", ALL + COMPLEX, inplace=True, ref=np.add, kwargs=({"alpha": 2},)),
    binary("sub", NUMERIC + COMPLEX, ref=np.subtract, kwargs=({"alpha": 2},)),
    binary("subtract", NUMERIC + COMPLEX, ref=np.subtract, kwargs=({"alpha": -1},)),
    binary("mul", ALL + COMPLEX, ref=np.multiply),
    binary("multiply", ALL + COMPLEX, ref=np.multiply),
    binary("div", ALL + COMPLEX, other_nonzero=True, kwargs=_div_kw, kwargs_dtypes=NUMERIC),  # no bool rounding kernels in torch
    binary("divide", inplace=True, other_nonzero=True, kwargs=_div_kw, kwargs_dtypes=NUMERIC),
    binary("true_divide", ALL + COMPLEX, other_nonzero=True, ref=np.true_divide),
    binary("floor_divide", NUMERIC, other_nonzero=True),
    binary("atan2", ref=np.arctan2, scalars=()),
    binary("maximum", inplace=False, ref=np.maximum, scalars=()),
    binary("minimum", inplace=False, ref=np.minimum, scalars=()),
    binary("fmax", inplace=False, ref=np.fmax, scalars=()),
    binary("fmin", inplace=False, ref=np.fmin, scalars=()),
    binary("fmod", NUMERIC, other_nonzero=True, ref=np.fmod),
    binary("remainder", NUMERIC, other_nonzero=True),
    binary("pow", NUMERIC + COMPLEX, domain=(0.25, 3), other_domain=(-2, 3), scalars=(2, -1, 0.5, 0)),
    binary("eq", ALL + COMPLEX, ref=np.equal, domain=(-2, 2), other_domain=(-2, 2)),
    binary("ne", ALL + COMPLEX, ref=np.not_equal, domain=(-2, 2), other_domain=(-2, 2)),
    binary("lt", ref=np.less, domain=(-2, 2), other_domain=(-2, 2)),
    binary("le", ref=np.less_equal, domain=(-2, 2), other_domain=(-2, 2)),
    binary("gt", ref=np.greater, domain=(-2, 2), other_domain=(-2, 2)),
    binary("ge", ref=np.greater_equal, domain=(-2, 2), other_domain=(-2, 2)),
    binary("greater", inplace=True, ref=np.greater, domain=(-2, 2), other_domain=(-2, 2)),
    binary("greater_equal", inplace=True, ref=np.greater_equal, domain=(-2, 2), other_domain=(-2, 2)),
    binary("less", inplace=True, ref=np.less, domain=(-2, 2), other_domain=(-2, 2)),
    binary("less_equal", inplace=True, ref=np.less_equal, domain=(-2, 2), other_domain=(-2, 2)),
    binary("not_equal", inplace=True, ref=np.not_equal, domain=(-2, 2), other_domain=(-2, 2)),
    binary("logical_and", ALL + COMPLEX, ref=np.logical_and, domain=(-1, 1), other_domain=(-1, 1), scalars=()),
    binary("logical_or", ALL + COMPLEX, ref=np.logical_or, domain=(-1, 1), other_domain=(-1, 1), scalars=()),
    binary("logical_xor", ALL + COMPLEX, ref=np.logical_xor, domain=(-1, 1), other_domain=(-1, 1), scalars=()),
    binary("bitwise_and", INT_BOOL, ref=np.bitwise_and, domain=(-100, 100), other_domain=(-100, 100), scalars=(6, True)),
    binary("bitwise_or", INT_BOOL, ref=np.bitwise_or, domain=(-100, 100), other_domain=(-100, 100), scalars=(6, True)),
    binary("bitwise_xor", INT_BOOL, ref=np.bitwise_xor, domain=(-100, 100), other_domain=(-100, 100), scalars=(6, True)),
    binary("bitwise_left_shift", INTS, domain=(-20, 20), other_domain=(0, 5), scalars=(3,)),
    binary("bitwise_right_shift", INTS, domain=(-100, 100), other_domain=(0, 5), scalars=(3,)),
    binary("hypot", FLOATS, ref=np.hypot, scalars=()),
    binary("copysign", ref=np.copysign),
    binary("xlogy", other_domain=(0.1, 5)),

    # ---- kindle.special, and its top-level names (lgamma, digamma, polygamma, erfc, i0, igamma)
    unary("erfc", tol=TOL_TRANSC),
    unary("lgamma", domain=(-4.7, 6), tol=TOL_SPECIAL, inplace_function=False),
    # random values away from the poles (torch's float32 trigamma, the gradient, loses digits within
    # 1e-4 of them: sin(pi x) in float32); the extremal values include -0.5 and -2.5
    unary("digamma", domain=(0.05, 6), tol=TOL_SPECIAL, inplace_function=False, extremal=POLYGAMMA_EXTREMAL),
    OpInfo("polygamma", _polygamma_samples, method=False, domain=(0.2, 5), tol=TOL_SPECIAL, kind="unary",
           errors=lambda g: [g.S(-1, g.t((3,)))]),
    OpInfo("polygamma_", lambda g: [g.S(g.t((3, 4)), n) for n in (0, 1, 2)] + [g.S(g.t((4, 5), "T"), 3)],
           FLOATS, function=False, domain=(0.2, 5), tol=TOL_SPECIAL, kind="unary"),
    unary("i0", tol=TOL_SPECIAL),
    special_unary("i0e"),
    special_unary("i1"),
    special_unary("i1e"),
    special_unary("erfcx", F32F64),
    special_unary("ndtri", F32F64, domain=(0.001, 0.999)),
    special_unary("log_ndtr", F32F64, domain=(-12, 6)),
    special_unary("entr", domain=(-0.5, 3)),
    *(special_unary(n, F32F64) for n in (
        "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
        "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
        "spherical_bessel_j0")),
    # torch's float64 airy_ai is off by up to 3e-6 for x < 0 (kindle agrees with SciPy to 1e-15:
    # test_special.py)
    OpInfo("special_airy_ai", unary_samples(), F32F64, method=False, tol={"float64": (1e-5, 5e-6), **TOL_SPECIAL},
           kind="unary"),
    OpInfo("special_zeta", binary_samples(), F32F64, method=False, domain=(1.1, 6), other_domain=(0.2, 5),
           tol=TOL_SPECIAL, kind="binary", errors=binary_errors),
    OpInfo("special_xlog1py", binary_samples(), method=False, other_domain=(-0.9, 5), tol=TOL_SPECIAL,
           kind="binary", errors=binary_errors),
    binary("igamma", FLOATS, domain=(0.1, 6), scalars=(), tol=TOL_SPECIAL),
    binary("igammac", FLOATS, domain=(0.1, 6), scalars=(), tol=TOL_SPECIAL),
    # torch runs the recurrences in float32, kindle in double: torch's float32 values are a few
    # hundred ulp off where terms cancel (H_11(1.4) = 121.628 in torch, 121.630 exactly)
    *(OpInfo("special_" + n, binary_samples(scalars=(3, 0, 7)), F32F64, method=False, domain=(-1.5, 1.5),
             other_domain=(0, 12), tol={"float32": (1e-3, 1e-3)}, kind="binary", errors=binary_errors)
      for n in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")),
    op("where", _where_samples, function=True, method=False, kind="ternary"),
    op("lerp", _lerp_samples, FLOATS, inplace="lerp_", kind="ternary"),
    op("addcmul", _ternary_pointwise(({"value": 2},)), NUMERIC, inplace="addcmul_", kind="ternary"),
    op("addcdiv", _ternary_pointwise(({"value": 0.5},)), FLOATS, inplace="addcdiv_", other_nonzero=True, kind="ternary"),
    op("equal", _equal_samples),
    op("allclose", _isclose_samples),
    op("isclose", _isclose_samples),

    # ---- creation (deterministic ones)
    op("zeros", _creation_samples("zeros"), method=False, kind="creation"),
    op("ones", _creation_samples("ones"), method=False, kind="creation"),
    op("empty", _creation_samples("empty"), method=False, compare_values=False, kind="creation"),
    op("full", _creation_samples("full"), method=False, kind="creation"),
    op("empty_strided", _creation_samples("empty_strided"), method=False, compare_values=False, view=True, kind="creation"),
    op("arange", _creation_samples("arange"), NUMERIC, method=False, kind="creation"),
    op("linspace", _creation_samples("linspace"), NUMERIC + COMPLEX, method=False, kind="creation"),
    op("logspace", _creation_samples("logspace"), NUMERIC + COMPLEX, method=False, kind="creation"),
    op("eye", _creation_samples("eye"), method=False, kind="creation"),
    op("zeros_like", _like_samples("zeros_like"), method=False),
    op("ones_like", _like_samples("ones_like"), method=False),
    op("full_like", _like_samples("full_like"), method=False),
    op("empty_like", _like_samples("empty_like"), method=False, compare_values=False),

    # ---- copies and conversions
    op("copy_", _copy_samples),
    op("fill_", _fill_samples),
    op("zero_", _plain_samples),
    op("clone", _plain_samples),
    op("contiguous", _plain_samples, function=False),
    op("detach", _plain_samples, view=True),

    # ---- views and shape
    op("view", _view_samples, function=False, view=True, errors=_view_errors, layout_sensitive=True),
    op("reshape", _reshape_samples, errors=lambda g: [s for s in _tuple_args(_view_errors(g)) if not s.noncontiguous]),
    op("view_as", _view_as_samples, function=False, view=True, layout_sensitive=True),
    op("reshape_as", _reshape_as_samples, function=False),
    op("flatten", _flatten_samples, errors=_dim_errors_for((2,), (1, 0), (0, 3))),
    op("unflatten", _unflatten_samples, errors=lambda g: [g.S(g.t((2, 12)), 1, (5, -1)), g.S(g.t((2, 12)), 2, (3, 4)),
                                                          g.S(g.t((2, 12)), 1, (-1, -1))]),
    op("squeeze", _squeeze_samples, inplace="squeeze_", view=True, errors=_dim_errors_for((2,), ((0, 5),))),
    op("unsqueeze", _unsqueeze_samples, inplace="unsqueeze_", view=True, errors=_dim_errors_for((3,), (-4,))),
    op("permute", _permute_samples, view=True,
       errors=_dim_errors_for(((0,),), ((0, 0),), ((0, 2),), ((1, 0, 2),))),
    op("transpose", _transpose_samples, inplace="transpose_", view=True, errors=_dim_errors_for((0, 2), (-3, 0))),
    op("swapaxes", _transpose_samples, inplace="swapaxes_", view=True),
    op("swapdims", _transpose_samples, inplace="swapdims_", view=True),
    op("t", _t_samples, inplace="t_", view=True, errors=lambda g: [g.S(g.t((2, 3, 4)))]),
    op("adjoint", _adjoint_samples, view=True),
    op("movedim", _movedim_samples, view=True,
       errors=_dim_errors_for((0, 2), ((0, 1), (0,)), ((0, 0), (0, 1)))),
    op("moveaxis", _movedim_samples, view=True),
    op("expand", _expand_samples, function=False, view=True, errors=_expand_errors),
    op("expand_as", _expand_as_samples, function=False, view=True),
    op("broadcast_to", _broadcast_to_samples, view=True, errors=lambda g: _tuple_args(_expand_errors(g))),
    op("broadcast_tensors", _broadcast_tensors_samples, method=False, view=True,
       errors=lambda g: [g.S(None, g.t((3,)), g.t((4,)))]),
    op("as_strided", _as_strided_samples, view=True, layout_sensitive=True),
    op("select", _select_samples, view=True, errors=_select_errors),
    op("narrow", _narrow_samples, view=True, errors=_narrow_errors),
    op("split", _split_samples, view=True, errors=lambda g: [g.S(g.t((5, 4)), [1, 2]), g.S(g.t((5, 4)), 0),
                                                            g.S(g.t((5, 4)), 2, 2)]),
    op("split_with_sizes", _split_with_sizes_samples, view=True,
       errors=lambda g: [g.S(g.t((5, 4)), [1, 2]), g.S(g.t((5, 4)), [6, -1])]),
    op("chunk", _chunk_samples, view=True, errors=lambda g: [g.S(g.t((5, 4)), 0), g.S(g.t((5, 4)), 2, 2)]),
    op("unbind", _unbind_samples, view=True, errors=lambda g: [g.S(g.t((3, 4)), 2), g.S(g.t(()))]),
    op("cat", _cat_samples, method=False, errors=_cat_errors),
    op("concat", _cat_samples, method=False, errors=_cat_errors),
    op("concatenate", _cat_samples, method=False, errors=_cat_errors),
    op("stack", _stack_samples, method=False, errors=_stack_errors),
    op("hstack", _hvstack_samples, method=False),
    op("vstack", _hvstack_samples, method=False),
    op("repeat", _repeat_samples, function=False, errors=lambda g: [g.S(g.t((2, 3)), 2), g.S(g.t((2, 3)), -1, 1)]),
    op("tile", _tile_samples),
    op("flip", _flip_samples, errors=_dim_errors_for(((2,),), ((0, 0),))),
    op("fliplr", _flipx_samples, errors=lambda g: [g.S(g.t((3,)))]),
    op("flipud", _flipud_samples, errors=lambda g: [g.S(g.t(()))]),
    op("roll", _roll_samples, errors=_dim_errors_for((1, 2), ((1, 2), (0,)))),
    op("tril", _tri_samples, inplace="tril_", errors=_tri_errors),
    op("triu", _tri_samples, inplace="triu_", errors=_tri_errors),
    op("diag", _diag_samples, errors=lambda g: [g.S(g.t((2, 3, 4))), g.S(g.t(()))]),
    op("diagonal", _diagonal_samples, view=True, errors=_dim_errors_for((0, 0, 0), (0, 0, 2))),
    op("diag_embed", _diag_embed_samples, errors=_dim_errors_for((0, 0, 0), (0, 0, 3))),
    op("unfold", _unfold_samples, function=False, view=True, errors=_unfold_errors),

    # ---- reductions
    reduction("sum", ALL + COMPLEX, kwargs=({"dtype": Dt("float64")}, {"dtype": Dt("int64")})),
    reduction("nansum", kwargs=({"dtype": Dt("float64")},)),
    reduction("mean", FLOATS + COMPLEX, kwargs=({"dtype": Dt("float64")},)),
    reduction("prod", ALL + COMPLEX, style="dim", large=False, domain=(-1.5, 1.5), positional=True,
              kwargs=({"dtype": Dt("float64")}, {"dtype": Dt("int64")})),
    reduction("amax"),
    reduction("amin"),
    op("max", _maxmin_samples, errors=_maxmin_errors, kind="reduction"),
    op("min", _maxmin_samples, errors=_maxmin_errors, kind="reduction"),
    op("aminmax", _aminmax_samples, errors=_dim_errors, kind="reduction"),
    op("argmax", _arg_samples, NUMERIC, errors=_dim_errors, kind="reduction"),
    op("argmin", _arg_samples, NUMERIC, errors=_dim_errors, kind="reduction"),
    op("var", _var_samples, FLOATS, tol=RED_TOL, errors=_dims_errors, kind="reduction"),
    op("std", _var_samples, FLOATS, tol=RED_TOL, errors=_dims_errors, kind="reduction"),
    # torch's var_mean gives mean nan (not inf) when a value is inf: no extremal samples
    op("var_mean", lambda g: _var_samples(g, False), FLOATS, method=False, tol=RED_TOL, errors=_dims_errors, kind="reduction"),
    op("std_mean", lambda g: _var_samples(g, False), FLOATS, method=False, tol=RED_TOL, errors=_dims_errors, kind="reduction"),
    op("norm", _norm_samples, FLOATS, tol=RED_TOL, kind="reduction"),
    op("logsumexp", _logsumexp_samples, ALL + COMPLEX, tol=RED_TOL, errors=_dims_errors, kind="reduction"),
    op("softmax", _softmax_samples, FLOATS, tol=RED_TOL, kind="reduction",
       errors=lambda g: [g.S(g.t((3, 4)), 2), g.S(g.t((3, 4)), -3)]),
    op("log_softmax", _softmax_samples, FLOATS, tol=RED_TOL, kind="reduction",
       errors=lambda g: [g.S(g.t((3, 4)), 2)]),
    op("cumsum", _cum_samples, inplace="cumsum_", tol=RED_TOL, kind="reduction", errors=lambda g: [g.S(g.t((3, 4)), 2)]),
    # complex64: products of 40 numbers compared part by part, where a real or imaginary part is a
    # cancellation 20x smaller than the magnitude (both libraries are within 5e-7 of complex128
    # relative to the magnitude)
    op("cumprod", _cum_samples, ALL + COMPLEX, inplace="cumprod_", tol={**RED_TOL, "complex64": (1e-4, 1e-4)}, kind="reduction",
       errors=lambda g: [g.S(g.t((3, 4)), 2)]),
    reduction("all"),
    reduction("any"),
    op("count_nonzero", _count_nonzero_samples, kind="reduction", errors=_dim_errors_for((2,), ((0, 0),))),
    op("sort", _sort_samples, kind="reduction", errors=_dim_errors_for((2,), (-3,))),
    op("argsort", _sort_samples, kind="reduction", errors=_dim_errors_for((2,))),
    op("topk", _topk_samples, NUMERIC, kind="reduction", errors=_topk_errors),
    op("unique", _unique_samples, kind="reduction"),
    op("bincount", _bincount_samples, INTS, errors=_bincount_errors),

    # ---- indexing
    op("index_select", _index_select_samples, errors=_index_select_errors, kind="index"),
    op("gather", _gather_samples, errors=_gather_errors, kind="index"),
    op("take_along_dim", _take_along_dim_samples, kind="index",
       errors=lambda g: [g.S(g.t((3, 4)), g.idx([[0]], dtype="float32"), 1), g.S(g.t((3, 4)), g.idx([[0]]), 2)]),
    op("scatter", _scatter_samples, inplace="scatter_", errors=_scatter_errors, kind="index"),
    op("scatter_add", _scatter_add_samples, inplace="scatter_add_", tol=ACC_TOL, errors=_scatter_errors, kind="index"),
    op("index_add", _index_add_samples, inplace="index_add_", tol=ACC_TOL, errors=_index_add_errors, kind="index"),
    op("index_fill_", _index_fill_samples, function=False, kind="index",
       errors=lambda g: [g.S(g.t((3, 4)), 0, g.idx([3]), 1), g.S(g.t((3, 4)), 2, g.idx([0]), 1)]),
    op("index_copy_", _index_copy_samples, function=False, kind="index", errors=_index_add_errors),
    op("masked_fill", _masked_fill_samples, inplace="masked_fill_", errors=_masked_fill_errors, kind="index"),
    op("masked_select", _masked_select_samples, kind="index",
       errors=lambda g: [g.S(g.t((3, 4)), g.mask((4, 3))), g.S(g.t((3, 4)), g.t((3, 4), dtype="int64"))]),
    op("masked_scatter_", _masked_scatter_samples, function=False, kind="index",
       errors=lambda g: [g.S(g.t((3, 4)), g.mask((4, 3)), g.t((12,)))]),
    op("nonzero", _nonzero_samples, kind="index"),
    op("argwhere", _nonzero_samples, kind="index"),
    op("index_put", _index_put_samples, inplace="index_put_", inplace_function=True, tol=ACC_TOL, errors=_index_put_errors,
       kind="index"),
    op("take", _take_samples, errors=_take_errors, kind="index"),

    # ---- matrix products
    op("mm", _mm_samples, NUMERIC + COMPLEX, tol=MM_TOL, errors=_mm_errors, domain=(-1, 1), kind="matmul"),
    op("bmm", _bmm_samples, NUMERIC + COMPLEX, tol=MM_TOL, errors=_bmm_errors, domain=(-1, 1), kind="matmul"),
    op("matmul", _matmul_samples, NUMERIC + COMPLEX, tol=MM_TOL, errors=_matmul_errors, domain=(-1, 1), kind="matmul"),
    op("addmm", _addmm_samples, NUMERIC, tol=MM_TOL, inplace="addmm_", domain=(-1, 1), kind="matmul",
       errors=lambda g: [g.S(g.t((3, 6)), g.t((3, 4)), g.t((4, 5))), g.S(g.t((3, 5)), g.t((3, 4)), g.t((3, 5)))]),
    op("baddbmm", _baddbmm_samples, NUMERIC, tol=MM_TOL, domain=(-1, 1), kind="matmul",
       errors=lambda g: [g.S(g.t((2, 3, 5)), g.t((2, 3, 4)), g.t((3, 4, 5)))]),
    op("addmv", _addmv_samples, NUMERIC, tol=MM_TOL, domain=(-1, 1), kind="matmul",
       errors=lambda g: [g.S(g.t((3,)), g.t((3, 4)), g.t((5,)))]),
    op("dot", _dot_samples, NUMERIC + COMPLEX, tol=MM_TOL, errors=_dot_errors, domain=(-1, 1), kind="matmul"),
    op("vdot", _dot_samples, NUMERIC + COMPLEX, tol=MM_TOL, errors=_dot_errors, domain=(-1, 1), kind="matmul"),
    op("inner", _inner_samples, NUMERIC, tol=MM_TOL, domain=(-1, 1), kind="matmul",
       errors=lambda g: [g.S(g.t((3, 4)), g.t((3,)))]),
    op("mv", _mv_samples, NUMERIC, tol=MM_TOL, domain=(-1, 1), kind="matmul",
       errors=lambda g: [g.S(g.t((3, 4)), g.t((3,))), g.S(g.t((4,)), g.t((4,)))]),
    op("outer", _outer_samples, tol=MM_TOL, kind="matmul", errors=lambda g: [g.S(g.t((3, 4)), g.t((4,)))]),
    op("ger", _outer_samples, tol=MM_TOL, kind="matmul"),
    op("einsum", _einsum_samples, NUMERIC, tol=MM_TOL, method=False, domain=(-1, 1), errors=_einsum_errors, kind="matmul"),
    op("kron", _kron_samples, tol=MM_TOL, kind="matmul"),
    op("trace", _trace_samples, NUMERIC, tol=MM_TOL, errors=_trace_errors, domain=(-1, 1), kind="matmul"),
]

# torch.nn.functional ops (opdb_nn.py imports the helpers above from this module)
from opdb_nn import NN_OPS  # noqa: E402

OPS += NN_OPS

from opdb_composite import COMPOSITE_OPS  # noqa: E402
from opdb_numpy import NUMPY_STYLE_OPS  # noqa: E402
from opdb_nn_composed import NN_COMPOSED_OPS  # noqa: E402

OPS += COMPOSITE_OPS
OPS += NUMPY_STYLE_OPS
OPS += NN_COMPOSED_OPS

OP_DB = {o.qualname: o for o in OPS}
assert len(OP_DB) == len(OPS), "duplicate op names"

# Ops of ops.yaml without a database entry, with the reason. test_opdb_covers_op_table checks
# that every function/method op of the table is in OP_DB or here.
NOT_IN_DB = {
    # takes a Python callable; test_nn_layers.py compares it (and its default) with torch
    "triplet_margin_with_distance_loss": "callable argument",
    # nn.CrossMapLRN2d's op (torch.nn.functional has no form of it): test_torch_names.py compares the
    # module with torch's
    "cross_map_lrn2d": "module only",
    # random: no torch reference for the values; test_tensor_api.py checks shapes, ranges and seeding
    "rand": "random", "randn": "random", "randint": "random", "randperm": "random", "rand_like": "random",
    "randn_like": "random", "randint_like": "random", "bernoulli": "random", "bernoulli_": "random",
    "multinomial": "random", "normal_": "random", "uniform_": "random", "random_": "random",
    "exponential_": "random", "normal": "random",
    # private / covered through their public wrapper or the in-place entry of their op
    "_unique2": "behind unique",
    "_gradient_along": "behind gradient (kindle.gradient, a Python function over it)",
    "_histogram": "behind histogram (kindle.histogram: range=, the result tuple)",
    "_unique_consecutive": "behind unique_consecutive (kindle.unique_consecutive: the optional outputs)",
    # kindle.compile's fused convolution + clamp (inference only, no gradient): test_compile_fusion.py
    # checks it bit for bit against conv2d then clamp on every convolution path
    "_conv2d_clamp": "test_compile_fusion.py",
    "_cat_batch_norm_clamp": "test_compile_fusion.py",
    # uninitialised memory after growth: test_composite_numpy.py checks shapes, strides and kept values
    "resize_": "test_composite_numpy.py",
    # `variants: nn` kernels without a torch.nn.functional name (behind nn.RNN / LSTM / GRU and the
    # cells): test_nn_recurrent.py compares them with torch.nn's modules
    "rnn": "test_nn_recurrent.py", "lstm_cell": "test_nn_recurrent.py", "gru_cell": "test_nn_recurrent.py",
    "rnn_tanh_cell": "test_nn_recurrent.py", "rnn_relu_cell": "test_nn_recurrent.py",
    # packed sequences (behind torch.nn.utils.rnn and the recurrent modules): test_nn_rnn_modules.py
    # compares packing, padding and the modules on packed batches with torch
    "_pack_padded_sequence": "test_nn_rnn_modules.py", "_pad_packed_sequence": "test_nn_rnn_modules.py",
    "pad_sequence": "test_nn_rnn_modules.py", "rnn_packed": "test_nn_rnn_modules.py",
    # composites that moved into the core: random draws (compared with torch's for a seed in
    # test_torch_names.py / test_nn_layers.py), the CTC loss (test_nn_layers.py), and the adaptive
    # log-softmax behind nn.AdaptiveLogSoftmaxWithLoss (test_nn_adaptive.py)
    "gumbel_softmax": "random", "feature_alpha_dropout": "random", "fractional_max_pool2d": "random samples",
    "fractional_max_pool3d": "random samples", "ctc_loss": "test_nn_layers.py",
    "adaptive_log_softmax_with_loss": "test_nn_adaptive.py", "adaptive_log_softmax_log_prob": "test_nn_adaptive.py",
    "adaptive_log_softmax_predict": "test_nn_adaptive.py",
    # a Python function over other F ops (nn.MultiheadAttention's body): test_nn_transformer.py
    # compares outputs, weights and gradients with torch for every mask and projection layout
    "multi_head_attention_forward": "test_nn_transformer.py",
    # kindle.linalg's factorisations: inputs must be positive-definite, triangular or invertible
    # and the decompositions' signs are arbitrary, so test_linalg.py compares them with torch
    # (values or sign-free invariants, gradcheck and gradients, errors)
    **{n: "test_linalg.py" for n in ("linalg_cholesky_ex", "linalg_lu_factor_ex", "_linalg_solve", "linalg_slogdet",
                                      "linalg_det", "linalg_eigh", "_linalg_eigvalsh", "linalg_eig", "_linalg_eigvals", "linalg_ldl_factor_ex", "linalg_ldl_solve", "linalg_svd", "_linalg_svdvals",
                                      "linalg_qr", "linalg_solve_triangular")},
}

# in-place variants of the table that are exercised through OpInfo.inplace
INPLACE_NAMES = {o.inplace for o in OPS if o.inplace and not o.functional}


def ops_with(kind=None, pred=None):
    return [o for o in OPS if (kind is None or o.kind == kind) and (pred is None or pred(o))]


def op_dtype_params(ops=None, dtypes=None):
    """[(op, dtype)] pairs for pytest parametrization."""
    out = []
    for o in ops if ops is not None else OPS:
        for d in o.dtypes:
            if dtypes is None or d in dtypes:
                out.append((o, d))
    return out
