"""Dynamic dimensions for kindle.export: Dim, its hints (AUTO, DYNAMIC, STATIC), dims(),
ShapesCollection and AdditionalInputs, with torch.export.dynamic_shapes' names and checks.

Kindle has no symbolic shape engine. A dynamic dimension becomes a named symbol (s0, s1, ...)
with a value range; export then records the graph from the example inputs (sizes read with
x.size()/x.shape stay graph values, so the graph is not tied to the example's sizes) and probes
it at other sizes in the range to find where the code specialised a size (see _probe.py).
Derived dimensions are the increasing linear forms torch allows (2*d, d + 1), kept as
coefficient and offset so they can be checked and saved without code.
"""
import dataclasses
import inspect
from enum import Enum, auto

from .. import _C
from ..utils import _pytree as pytree

__all__ = ["Constraint", "Dim", "ShapesCollection", "AdditionalInputs", "dims", "UserError",
           "ConstraintViolationError", "GuardOnDataDependentSymNode", "int_oo", "ValueRanges"]


class UserError(RuntimeError):
    """A problem with what was passed to export (torch._dynamo.exc.UserError)."""


class ConstraintViolationError(RuntimeError):
    """An example input outside the range its Dim allows."""


class GuardOnDataDependentSymNode(RuntimeError):
    """Python control flow that depends on tensor values, which an exported graph cannot hold."""


class _IntInfinity:
    """torch's int_oo: the unbounded end of a size range."""

    def __repr__(self):
        return "int_oo"

    __str__ = __repr__

    def __eq__(self, other):
        return other is self

    def __hash__(self):
        return hash("int_oo")

    def __lt__(self, other):
        return False

    def __le__(self, other):
        return other is self

    def __gt__(self, other):
        return other is not self

    def __ge__(self, other):
        return True

    def __add__(self, other):
        return self

    __radd__ = __mul__ = __rmul__ = __sub__ = __add__


int_oo = _IntInfinity()


class ValueRanges:
    """A closed size range, printed as torch prints its ranges (VR[2, 10])."""

    def __init__(self, lower, upper):
        self.lower = lower
        self.upper = upper

    def __repr__(self):
        return f"VR[{self.lower}, {self.upper}]"

    def __eq__(self, other):
        return isinstance(other, ValueRanges) and (self.lower, self.upper) == (other.lower, other.upper)

    def __hash__(self):
        return hash((self.lower, self.upper))


class _Symbol(str):
    """A dynamic size in exported shapes: a root ('s0') or coeff * root + offset ('2*s0 + 1').
    It is its own text, so it prints, compares and hashes like torch's sympy symbols do."""

    def __new__(cls, root, coeff=1, offset=0):
        self = super().__new__(cls, _linear_text(root, coeff, offset))
        self.root = str(root)
        self.coeff = coeff
        self.offset = offset
        return self

    def __repr__(self):
        return str.__str__(self)

    def __reduce__(self):
        return (_Symbol, (self.root, self.coeff, self.offset))

    def eval(self, root_value):
        return self.coeff * root_value + self.offset


def _linear_text(name, coeff, offset):
    text = name if coeff == 1 else f"{coeff}*{name}"
    if offset > 0:
        text += f" + {offset}"
    elif offset < 0:
        text += f" - {-offset}"
    return text


class _DimHintType(Enum):
    AUTO = auto()
    STATIC = auto()
    DYNAMIC = auto()


@dataclasses.dataclass
class _DimHint:
    """Dim.AUTO / Dim.DYNAMIC / Dim.STATIC, optionally bounded: Dim.DYNAMIC(min=2, max=64)."""

    type: _DimHintType
    min: object = None
    max: object = None
    _factory: object = True

    @staticmethod
    def AUTO():  # noqa: N802  (torch's name)
        return _DimHint(_DimHintType.AUTO)

    @staticmethod
    def DYNAMIC():  # noqa: N802
        return _DimHint(_DimHintType.DYNAMIC)

    @staticmethod
    def STATIC():  # noqa: N802
        return _DimHint(_DimHintType.STATIC)

    def __call__(self, min=None, max=None):  # noqa: A002
        if not self._factory:
            raise TypeError(f"'{type(self)}' object is not callable")
        if min is not None and min < 0:
            raise AssertionError(f"min must be non-negative, got {min}")
        if max is not None and max < 0:
            raise AssertionError(f"max must be non-negative, got {max}")
        if min is not None and max is not None and min > max:
            raise AssertionError(f"min must be <= max, got min={min}, max={max}")
        return _DimHint(self.type, min=min, max=max, _factory=False)

    def __repr__(self):
        parts = [self.type.name] + [f"{k}={v}" for k, v in (("min", self.min), ("max", self.max)) if v is not None]
        return f"DimHint({', '.join(parts)})"


class Dim:
    """A named dynamic dimension: Dim("batch", min=1, max=64). The same Dim object (or name)
    used for several inputs means those sizes are equal; 2 * dim, dim + 1 and dim - 1 derive
    dimensions from it."""

    AUTO = _DimHint.AUTO()
    DYNAMIC = _DimHint.DYNAMIC()
    STATIC = _DimHint.STATIC()

    def __init__(self, name, *, min=None, max=None):  # noqa: A002
        lo = 0 if min is None else min
        hi = int_oo if max is None else max
        if not hi > lo:
            raise AssertionError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        if not name.isidentifier():
            raise AssertionError(f"Dim name must be a valid identifier, got {name}")
        self.__name__ = name
        self.min = lo
        self.max = hi

    def _derive(self, coeff, offset):
        return _DerivedDim(self, coeff, offset)

    def __add__(self, other):
        if type(other) is not int:
            raise NotImplementedError(f"Attempted to add {other} to {self.__name__}, where an integer was expected. "
                                      "(Only increasing linear operations with integer coefficients are supported.)")
        return self._derive(1, other)

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        if type(other) is not int:
            raise NotImplementedError(f"Attempted to subtract {other} from {self.__name__}, where an integer was "
                                      "expected. (Only increasing linear operations with integer coefficients are "
                                      "supported.)")
        return self._derive(1, -other)

    def __rsub__(self, other):
        raise NotImplementedError(f"Attempted to negate {self.__name__}. (Only increasing linear operations with "
                                  "integer coefficients are supported.)")

    def __mul__(self, other):
        if type(other) is not int or other <= 0:
            raise NotImplementedError(f"Attempted to multiply {other} with {self.__name__}, where a positive integer "
                                      "was expected. (Only increasing linear operations with integer coefficients "
                                      "are supported.)")
        return self._derive(other, 0)

    def __rmul__(self, other):
        return self * other

    @staticmethod
    def _readable(name, lo, hi):
        lo = None if lo == 2 else lo
        hi = None if hi is int_oo else hi
        bounds = [f"{k}={v}" for k, v in (("min", lo), ("max", hi)) if v is not None]
        return f"Dim({', '.join([repr(name)] + bounds)})"

    def __repr__(self):
        return Dim._readable(self.__name__, self.min, self.max)


class _StaticDim(Dim):
    """A dimension fixed to one value (torch builds these internally)."""

    def __init__(self, value):
        self.__name__ = str(value)
        self.value = value

    @property
    def min(self):
        return self.value

    @property
    def max(self):
        return self.value


class _DerivedDim(Dim):
    """coeff * root + offset, with coeff a positive int (an increasing function of root)."""

    def __init__(self, root, coeff, offset):
        self.root = root
        self.coeff = coeff
        self.offset = offset
        self.__name__ = _linear_text(root.__name__, coeff, offset)

    def _value(self, root_value):
        return root_value if root_value is int_oo else self.coeff * root_value + self.offset

    @property
    def min(self):
        value = self._value(self.root.min)
        if value < 0:
            raise AssertionError(f"Expected derived min value of {self.__name__} to be >= 0. Please specify an "
                                 f"appropriate min value for {self.root.__name__} (currently {self.root.min}).")
        return value

    @property
    def max(self):
        return self._value(self.root.max)

    def _derive(self, coeff, offset):
        return _DerivedDim(self.root, self.coeff * coeff, self.offset * coeff + offset)

    def __repr__(self):
        return self.__name__


def dims(*names, min=None, max=None):  # noqa: A002
    """Several Dims with the same bounds: batch, seq = dims("batch", "seq", max=512)."""
    return tuple(Dim(name, min=min, max=max) for name in names)


Constraint = Dim  # torch's alias for what a dynamic_shapes entry may hold


def _combine_args(m, args, kwargs):
    """args and kwargs as one dict keyed by forward's parameter names, in signature order."""
    forward = m.forward if hasattr(m, "forward") else m
    bound = inspect.signature(forward).bind(*args, **(kwargs or {}))
    return dict(bound.arguments)


class ShapesCollection:
    """Builds dynamic_shapes from tensors: shapes[x] = {0: batch}; export(m, args,
    dynamic_shapes=shapes) (or shapes.dynamic_shapes(m, args)) finds each tensor in args."""

    def __init__(self):
        self._shapes = {}

    def __setitem__(self, t, shape):
        if not isinstance(t, _C.Tensor):
            raise AssertionError(f"Cannot assign shape to non-tensor or non-_IntWrapper type {type(t)}")
        if id(t) in self._shapes and self._shapes[id(t)] != shape:
            raise AssertionError(f"Shapes assigned to input do not match: expected {self._shapes[id(t)]}, got {shape}")
        self._shapes[id(t)] = shape

    def __getitem__(self, t):
        return self._shapes.setdefault(id(t), {})

    def __len__(self):
        return len(self._shapes)

    def dynamic_shapes(self, m, args, kwargs=None):
        found = set()

        def find(path, t):
            if id(t) in self._shapes:
                found.add(id(t))
                return self._shapes[id(t)]
            return None

        out = pytree.tree_map_with_path(find, _combine_args(m, args, kwargs))
        if any(k not in found for k in self._shapes):
            raise ValueError("Some tensors that were assigned shapes were not found in args. Maybe such tensors were "
                             "copied when passing them as args? Maybe such tensors are contained in classes that were "
                             "not registered with pytree?")
        return out


class AdditionalInputs:
    """Infers dynamic_shapes from more example inputs: a size that differs between them is
    Dim.DYNAMIC, one that does not is static."""

    def __init__(self):
        self._examples = []

    def add(self, args, kwargs=None):
        if type(args) is not tuple:
            raise AssertionError(f"Representative args {args} must be a tuple")
        if kwargs is not None and type(kwargs) is not dict:
            raise AssertionError(f"Representative kwargs {kwargs} must be None or a dict")
        self._examples.append((args, kwargs))

    def dynamic_shapes(self, m, args, kwargs=None):
        def shapes_of(a, k):
            return pytree.tree_map(lambda t: tuple(t.shape) if isinstance(t, _C.Tensor) else t, _combine_args(m, a, k))

        base = shapes_of(args, kwargs)
        others = [shapes_of(a, k) for a, k in self._examples]

        def mark(v, *rest):
            if any(type(v) is not type(r) for r in rest):
                raise ValueError(f"The following inputs were found to have differing types, so they cannot be marked "
                                 f"as dynamic: {(v,) + rest}.")
            if isinstance(v, int) and not isinstance(v, bool):
                return None if all(r == v for r in rest) else Dim.DYNAMIC
            if any(r != v for r in rest):
                raise ValueError(f"The following inputs were found to have differing values, but they cannot be "
                                 f"marked as dynamic: {(v,) + rest}.")
            return None

        return pytree.tree_map(mark, base, *others, is_leaf=lambda x: type(x) is int)

    def verify(self, ep):
        module = ep.module()
        for args, kwargs in self._examples:
            module._check_inputs(args, kwargs or {})
