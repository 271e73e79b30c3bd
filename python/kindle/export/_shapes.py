"""From the dynamic_shapes argument to one shape per flattened input, and the checks an
exported module runs on every call (torch's "Guard failed: ..." assertions).

A shape entry is an int (that size only) or a _Symbol: a root symbol 's0' standing for one
dynamic dimension, or a derived form '2*s0 + 1'. Each root remembers which Dim (or hint) made
it, its range and its example value; _probe.py narrows or removes roots afterwards.
"""
from .. import _C
from ..utils._pytree import GetAttrKey, MappingKey, SequenceKey
from .dynamic_shapes import (ConstraintViolationError, Dim, UserError, _DerivedDim, _DimHint, _DimHintType,
                             _StaticDim, _Symbol, int_oo, ValueRanges)


class _Root:
    """One dynamic dimension: kind is 'named' (a Dim), 'auto' or 'dynamic' (the hints)."""

    def __init__(self, kind, name, lo, hi, given_lo=None):
        self.kind = kind
        self.name = name
        self.lo = lo
        self.hi = hi
        self.given_lo = lo if given_lo is None else given_lo  # what the example must respect
        self.uses = []  # (leaf index, dim, coeff, offset)
        self.example = None
        self.symbol = None


class InputLeaf:
    """One flattened user input: the forward parameter it belongs to, the key path inside that
    parameter's value, and the names used for it (placeholder name, path in messages)."""

    def __init__(self, arg, subpath, value):
        self.arg = arg
        self.subpath = subpath
        self.value = value
        self.pretty = arg + "".join(str(k) for k in subpath)
        parts = [arg] + [str(getattr(k, "idx", getattr(k, "key", getattr(k, "name", "")))) for k in subpath]
        self.name = "_".join(parts)


def _mismatch(where, value, spec):
    return UserError(f"Detected mismatch between the structure of `inputs` and `dynamic_shapes`: `inputs{where}` is a "
                     f"{type(value)}, but `dynamic_shapes{where}` is {spec!r}")


def _spec_at(dynamic_shapes, arg_names, leaf, root_value):
    """The part of dynamic_shapes that describes leaf (None: all static)."""
    if isinstance(dynamic_shapes, dict):
        spec = dynamic_shapes.get(leaf.arg)
    else:
        spec = dynamic_shapes[arg_names.index(leaf.arg)]
    where, value = f"['{leaf.arg}']", root_value
    for key in leaf.subpath:
        if spec is None:
            return None
        if isinstance(key, SequenceKey):
            if not isinstance(spec, (list, tuple)) or key.idx >= len(spec):
                raise _mismatch(where, value, spec)
            spec = spec[key.idx]
        elif isinstance(key, MappingKey):
            if not isinstance(spec, dict):
                raise _mismatch(where, value, spec)
            spec = spec.get(key.key)
        elif isinstance(key, GetAttrKey):
            spec = spec.get(key.name) if isinstance(spec, dict) else getattr(spec, key.name, None)
        value = key.get(value)
        where += str(key)
    return spec


def _dim_entries(spec, leaf):
    """(dim, entry) for the dimensions spec marks dynamic; static entries are checked here."""
    t = leaf.value
    if spec is None:
        return []
    if isinstance(spec, dict):
        items = list(spec.items())
        for d, _ in items:
            if not isinstance(d, int) or not 0 <= d < t.dim():
                raise UserError(f"Dimension {d} of {leaf.pretty} in `dynamic_shapes` is out of range for a tensor of "
                                f"shape {tuple(t.shape)}")
    elif isinstance(spec, (list, tuple)):
        if len(spec) != t.dim():
            raise UserError(f"Expected dynamic shape spec {spec} at inputs['{leaf.arg}'] to have the same length as "
                            f"the actual tensor shape {tuple(t.shape)} (expected {t.dim()}, but got {len(spec)} "
                            "instead)")
        items = list(enumerate(spec))
    else:
        raise UserError(f"Unexpected dynamic_shape {spec} of Type {type(spec)} at inputs['{leaf.arg}']")
    out = []
    for d, entry in items:
        if entry is None or (isinstance(entry, _DimHint) and entry.type is _DimHintType.STATIC):
            continue
        if isinstance(entry, (int, _StaticDim)) and not isinstance(entry, bool):
            value = entry if isinstance(entry, int) else entry.value
            if value != t.shape[d]:
                raise UserError(f"Static shape constraint of {value} does not match input size of {t.shape[d]}, for "
                                f"{leaf.pretty}.size()[{d}]")
            continue
        if not isinstance(entry, (Dim, _DimHint)):
            raise UserError(f"Unexpected dimension mapped to index {d} in input tensor shape {spec} specified at "
                            f"inputs['{leaf.arg}'] (expected None, an int, a Dim, Dim.AUTO, Dim.STATIC, or "
                            f"Dim.DYNAMIC, but got {entry!r} instead)")
        out.append((d, entry))
    return out


def _check_top_level(dynamic_shapes, arg_names):
    if isinstance(dynamic_shapes, dict):
        unknown = [k for k in dynamic_shapes if k not in arg_names]
        if unknown:
            raise UserError(f"When `dynamic_shapes` is specified as a dict, its top-level keys must be the arg names "
                            f"{arg_names} of `inputs`, but here they are {list(dynamic_shapes)}. Alternatively, you "
                            "could also ignore arg names entirely and specify `dynamic_shapes` as a list/tuple "
                            "matching `inputs`.")
    elif isinstance(dynamic_shapes, (list, tuple)):
        if len(dynamic_shapes) != len(arg_names):
            raise UserError(f"When `dynamic_shapes` is specified as a list/tuple, its length must match the number of "
                            f"`inputs` ({len(arg_names)}: {arg_names}), but here it is {len(dynamic_shapes)}")
    else:
        raise UserError(f"Unexpected dynamic_shapes {dynamic_shapes!r} of type {type(dynamic_shapes)}: expected a "
                        "dict keyed by argument names or a tuple/list matching the inputs")


def specialized_error(root, value):
    return UserError(
        f"Constraints violated ({root.name})! For more information, run with TORCH_LOGS=\"+dynamic\".\n"
        f"  - You marked {root.name} as dynamic but your code specialized it to be a constant ({value}). If you're "
        "using mark_dynamic, either remove it or use maybe_mark_dynamic. If you're using Dim.DYNAMIC, replace it with "
        f"either Dim.STATIC or Dim.AUTO.\nSuggested fixes:\n  {root.name} = {value}")


def plan(leaves, arg_names, combined, dynamic_shapes):
    """Returns (shapes, roots): shapes[i] is None for a non-tensor input, else its list of
    int / _Symbol entries."""
    shapes = [list(leaf.value.shape) if isinstance(leaf.value, _C.Tensor) else None for leaf in leaves]
    if dynamic_shapes is None:
        return shapes, []
    _check_top_level(dynamic_shapes, arg_names)
    roots, named = [], {}
    for i, leaf in enumerate(leaves):
        spec = _spec_at(dynamic_shapes, arg_names, leaf, combined[leaf.arg])
        if not isinstance(leaf.value, _C.Tensor):
            continue  # a non-tensor input is specialised to its example value, whatever spec says
        for d, entry in _dim_entries(spec, leaf):
            if isinstance(entry, _DimHint):
                kind = "auto" if entry.type is _DimHintType.AUTO else "dynamic"
                root = _Root(kind, f"{leaf.pretty}.size()[{d}]", 2 if entry.min is None else entry.min,
                             int_oo if entry.max is None else entry.max, entry.min or 0)
                roots.append(root)
                root.uses.append((i, d, 1, 0))
                continue
            base, coeff, offset = (entry.root, entry.coeff, entry.offset) if isinstance(entry, _DerivedDim) \
                else (entry, 1, 0)
            root = named.get(base.__name__)
            if root is None:
                root = named[base.__name__] = _Root("named", base.__name__, base.min, base.max)
                roots.append(root)
            elif (root.lo, root.hi) != (base.min, base.max):
                raise UserError(f"Found different definitions {Dim._readable(base.__name__, root.lo, root.hi)} and "
                                f"{base!r} for the same symbolic dimension {base.__name__}!")
            root.uses.append((i, d, coeff, offset))
    kept = []
    for root in roots:
        _example_of(root, leaves, shapes)
        if root.example < 2:  # torch specialises sizes 0 and 1
            if root.kind == "auto":
                continue
            if root.kind == "dynamic":
                raise ValueError("Found the following conflicts between user-specified ranges and inferred ranges "
                                 "from model tracing:\n- Received user-specified dim hint Dim.DYNAMIC(min=None, "
                                 f"max=None), but export 0/1 specialized due to hint of {root.example} for dimension "
                                 f"inputs{_torch_path(root.name)}.")
            raise specialized_error(root, root.example)
        root.symbol = _Symbol(f"s{len(kept)}")
        kept.append(root)
        for i, d, coeff, offset in root.uses:
            shapes[i][d] = _Symbol(root.symbol, coeff, offset)
    return shapes, kept


def _torch_path(size_name):
    """x.size()[0] -> ['x'].shape[0], as torch names a dimension in this message."""
    head, _, dim = size_name.partition(".size()")
    arg, sep, rest = head.partition("[")
    return f"['{arg}']{sep}{rest}.shape{dim}"


def _example_of(root, leaves, shapes):
    direct = [(i, d) for i, d, c, o in root.uses if (c, o) == (1, 0)]
    first = direct[0] if direct else None
    if first is not None:
        value = shapes[first[0]][first[1]]
    else:
        i, d, c, o = root.uses[0]
        value, rem = divmod(shapes[i][d] - o, c)
        if rem:
            raise UserError(f"Expected input {leaves[i].pretty}.size()[{d}] = {shapes[i][d]} to be of the form "
                            f"{_linear_text_of(root.name, c, o)}, where {root.name} is an integer")
    for i, d, c, o in root.uses:
        if c * value + o != shapes[i][d]:
            ref = f"{leaves[first[0]].pretty}.size()[{first[1]}]" if first else root.name
            raise UserError(f"Expected input {leaves[i].pretty}.size()[{d}] = {shapes[i][d]} to be equal to "
                            f"{_linear_text_of(ref, c, o)}, where {ref} = {value}")
    if not root.given_lo <= value <= root.hi:
        raise ConstraintViolationError(f"{value} not in range [{root.lo}, {root.hi}]")
    root.example = value


def _linear_text_of(ref, coeff, offset):
    text = ref if coeff == 1 else f"{coeff} * {ref}"
    return text + (f" + {offset}" if offset > 0 else f" - {-offset}" if offset < 0 else "")


def make_static(root, roots, shapes):
    """Dim.AUTO found specialised: its sizes become the example's."""
    roots.remove(root)
    for i, d, c, o in root.uses:
        shapes[i][d] = c * root.example + o


def range_constraints(roots):
    out = {}
    for root in roots:
        out[root.symbol] = ValueRanges(root.lo, root.hi)
        for _, _, c, o in root.uses:
            if (c, o) != (1, 0):
                out.setdefault(_Symbol(root.symbol, c, o), ValueRanges(max(c * root.lo + o, 0), c * root.hi + o))
    return out


class InputChecker:
    """Checks one call's flattened inputs: expected[i] is ('tensor', shape entries) or
    ('const', value); ranges maps root symbols to ValueRanges."""

    def __init__(self, expected, pretty, ranges):
        self.expected = expected
        self.pretty = pretty
        self.ranges = {str(k): v for k, v in ranges.items()}

    def __call__(self, flat):
        bound, derived = {}, []
        for where, value, (kind, exp) in zip(self.pretty, flat, self.expected):
            if kind == "const":
                if isinstance(value, _C.Tensor) or not (value is exp or value == exp):
                    raise AssertionError(f"Guard failed: {where} == {exp!r}")
                continue
            if not isinstance(value, _C.Tensor):
                raise RuntimeError(f"Expected input at {where} to be a tensor, but got {type(value)}")
            if value.dim() != len(exp):
                raise AssertionError(f"Guard failed: {where}.dim() == {len(exp)}")
            for d, (size, s) in enumerate(zip(value.shape, exp)):
                at = f"{where}.size()[{d}]"
                if not isinstance(s, _Symbol):
                    if size != s:
                        raise AssertionError(f"Guard failed: {at} == {s}")
                elif (s.coeff, s.offset) == (1, 0):
                    self._bind(bound, s.root, size, at)
                else:
                    derived.append((s, size, at))
        for s, size, at in derived:
            if s.root in bound:
                root_value, root_at = bound[s.root]
                if size != s.eval(root_value):
                    raise AssertionError(f"Guard failed: {at} == {_linear_text_of(root_at, s.coeff, s.offset)}")
                continue
            root_value, rem = divmod(size - s.offset, s.coeff)
            if rem:
                raise AssertionError(f"Guard failed: ({at} - {s.offset}) % {s.coeff} == 0")
            self._bind(bound, s.root, root_value, f"({at} - {s.offset}) // {s.coeff}")

    def _bind(self, bound, root, size, at):
        if root in bound:
            if size != bound[root][0]:
                raise AssertionError(f"Guard failed: {at} == {bound[root][1]}")
            return
        vr = self.ranges.get(root)
        if vr is not None:
            if vr.lower > 2 and size < vr.lower:  # as torch: 0/1 are not rejected below the default bound 2
                raise AssertionError(f"Guard failed: {at} >= {vr.lower}")
            if vr.upper is not int_oo and size > vr.upper:
                raise AssertionError(f"Guard failed: {at} <= {vr.upper}")
        bound[root] = (size, at)


_DTYPE_ABBR = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int64": "i64",
               "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "b8", "complex64": "c64",
               "complex128": "c128"}


class TensorMeta:
    """node.meta['val'] for a tensor: what torch's fake tensors tell code that reads graph
    metadata (shape, with _Symbols for dynamic sizes, dtype, device)."""

    __slots__ = ("shape", "dtype", "device", "requires_grad")

    def __init__(self, shape, dtype, device=None, requires_grad=False):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device
        self.requires_grad = requires_grad

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return len(self.shape)

    @property
    def ndim(self):
        return len(self.shape)

    def type_str(self):
        name = str(self.dtype).split(".")[-1]
        return f"{_DTYPE_ABBR.get(name, name)}[{', '.join(str(s) for s in self.shape)}]"

    def __repr__(self):
        return f"TensorMeta({self.type_str()})"
