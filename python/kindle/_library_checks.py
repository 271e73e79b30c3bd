"""torch.library.infer_schema and torch.library.opcheck for Kindle's custom operators.

infer_schema reads an operator's schema string off a function's type hints, as torch's does
(the same types, defaults and mutation markers; compared with torch's output in the tests).
opcheck runs a custom operator on sample inputs and checks what its registrations promise:
that it mutates only the arguments it declares (test_schema), that gradients reach its inputs
only through a registered backward (test_autograd_registration), that its fake (meta) kernel
gives the real outputs' shapes and dtypes (test_faketensor), and that a compiled call gives the
eager results (test_aot_dispatch_dynamic: Kindle's compile runs the op as written, but the check
requires the fake impl that torch.compile traces with, so that an op that passes here compiles there)."""
import collections.abc
import inspect
import types
import typing

from . import _C
from .utils._pytree import tree_leaves, tree_map

_UNKNOWN = "unknown"
_NONE = type(None)


def _base_types():
    from . import device, dtype
    from .types import Number
    return {_C.Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool", str: "str", dtype: "ScalarType",
            device: "Device", Number: "Scalar"}


def _is_union(ann):
    return typing.get_origin(ann) in (typing.Union, types.UnionType)


def _is_sequence(ann):
    return typing.get_origin(ann) in (list, collections.abc.Sequence, typing.Sequence, typing.List)


def _scalar(ann, bases):
    """A base type's schema name (Number as the union int | float | bool), or None."""
    if _is_union(ann) and set(typing.get_args(ann)) == {int, float, bool}:
        return "Scalar"
    try:
        return bases.get(ann)
    except TypeError:  # unhashable annotation
        return None


def _param_type(ann, bases):
    """The schema type of a parameter annotation, or None where torch supports no such type."""
    optional = False
    if _is_union(ann) and _NONE in typing.get_args(ann):
        rest = tuple(a for a in typing.get_args(ann) if a is not _NONE)
        if set(rest) == {int, float, bool}:
            return "Scalar?"
        if len(rest) != 1:
            return None
        optional, ann = True, rest[0]
    name = _scalar(ann, bases)
    if name is not None:
        return name + "?" if optional else name
    if _is_sequence(ann) and len(typing.get_args(ann)) == 1:
        (item,) = typing.get_args(ann)
        if _is_union(item) and set(typing.get_args(item)) == {_C.Tensor, _NONE} and not optional:
            return "Tensor?[]"
        item_name = _scalar(item, bases)
        if item_name in ("Tensor", "SymInt", "float", "bool", "Scalar") and not (optional and item_name == "Tensor"):
            return item_name + "[]" + ("?" if optional else "")
    return None


def _return_type(ann, bases):
    if ann is None or ann is _NONE:
        return "()"
    if typing.get_origin(ann) in (tuple, typing.Tuple):
        items = [_return_type(a, bases) for a in typing.get_args(ann)]
        return None if None in items or "()" in items else "(" + ", ".join(items) + ")"
    name = _scalar(ann, bases)
    if name in ("Tensor", "SymInt", "float", "bool", "Scalar"):
        return name
    if _is_sequence(ann) and typing.get_args(ann) == (_C.Tensor,):
        return "Tensor[]"
    return None


def _default_repr(value):
    from . import device, dtype
    if value is None or isinstance(value, (bool, int, float)):
        return str(value)
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dtype):
        return str(value).replace("torch.", "").replace("kindle.", "")
    if isinstance(value, device):
        return f'"{value}"'
    return None


def _resolve(annotation, fn):
    """String annotations name Tensor, dtype, device, types and typing's generics, as torch assumes."""
    if not isinstance(annotation, str):
        return annotation
    from . import device, dtype
    from . import types as kindle_types
    scope = {"Tensor": _C.Tensor, "device": device, "dtype": dtype, "types": kindle_types, "Optional": typing.Optional,
             "List": typing.List, "Sequence": typing.Sequence, "Union": typing.Union, "Tuple": typing.Tuple}
    scope.update(getattr(fn, "__globals__", {}))
    try:
        return eval(annotation, scope)  # noqa: S307  (the user's own annotation, as torch evaluates it)
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"infer_schema(func): Unsupported type annotation {annotation}. It is not a type.") from e


def infer_schema(prototype_function, /, *, mutates_args, op_name=None):
    """The operator schema of `prototype_function`'s type hints: "(Tensor x, float y) -> Tensor"
    (prefixed by `op_name` when given). `mutates_args` names the arguments the operator writes to
    (marked `Tensor(a<i>!)`), or is "unknown" (every tensor argument)."""
    sig = inspect.signature(prototype_function)

    def error(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    if isinstance(mutates_args, str) and mutates_args != _UNKNOWN:
        raise ValueError("mutates_args must either be a sequence of the names of the arguments that are mutated "
                         "or the string 'unknown'. ")
    bases = _base_types()
    params, seen, kw_only = [], set(), False
    for idx, (name, p) in enumerate(sig.parameters.items()):
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            error("We do not support positional-only args, varargs, or varkwargs.")
        if p.annotation is inspect.Parameter.empty:
            error(f"Parameter {name} must have a type annotation.")
        schema_type = _param_type(_resolve(p.annotation, prototype_function), bases)
        if schema_type is None:
            error(f"Parameter {name} has unsupported type {p.annotation}.")
        mutated = (mutates_args == _UNKNOWN and schema_type.startswith("Tensor")) or \
            (mutates_args != _UNKNOWN and name in mutates_args)
        if mutated:
            if not schema_type.startswith("Tensor"):
                error(f"Parameter {name} is in mutable_args but only Tensors or collections of Tensors can be "
                      "mutated")
            schema_type = f"Tensor(a{idx}!){schema_type[len('Tensor'):]}"
        seen.add(name)
        if p.kind == p.KEYWORD_ONLY and not kw_only:
            params.append("*")
            kw_only = True
        if p.default is inspect.Parameter.empty:
            params.append(f"{schema_type} {name}")
        else:
            text = _default_repr(p.default)
            if text is None:
                error(f"Parameter {name} has an unsupported default value type {type(p.default)}.")
            params.append(f"{schema_type} {name}={text}")
    if mutates_args != _UNKNOWN:
        missing = set(mutates_args) - seen
        if missing:
            error(f"{missing} in mutates_args were not found in the custom op's signature. mutates_args should "
                  "contain the names of all args that the custom op mutates, or just the string 'unknown' if you "
                  "don't know.")
    if sig.return_annotation is inspect.Signature.empty:
        error("No return type annotation was provided. Please add one.")
    ret = _return_type(_resolve(sig.return_annotation, prototype_function), bases)
    if ret is None:
        error(f"Return has unsupported type {sig.return_annotation}.")
    schema = f"({', '.join(params)}) -> {ret}"
    return f"{op_name}{schema}" if op_name is not None else schema


# ---- opcheck

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


class OpCheckError(Exception):
    """What opcheck raises when a check fails (torch.testing._internal.optests.OpCheckError)."""


def _tensor_leaves(value):
    return [leaf for leaf in tree_leaves(value) if isinstance(leaf, _C.Tensor)]


def _map_tensors(value, fn):
    return tree_map(lambda leaf: fn(leaf) if isinstance(leaf, _C.Tensor) else leaf, value)


def _clone(value):
    def one(t):
        c = t.detach().clone()
        return c.requires_grad_(t.requires_grad) if t.is_floating_point() or t.is_complex() else c
    return _map_tensors(value, one)


def _same(a, b):
    """Equal values and NaNs in the same places (a mutation check, not a tolerance check)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(_C.equal(a.isnan(), b.isnan())) and bool(_C.equal(a.nan_to_num(0.0), b.nan_to_num(0.0)))
    return bool(_C.equal(a, b))


class _OpView:
    """What opcheck needs of an operator: its name, argument names, declared mutations, kernels."""

    def __init__(self, op):
        from . import library
        if isinstance(op, str) or not isinstance(op, (library.CustomOpDef, library._DefinedOp)):
            found = library._REGISTRY.get(op) if isinstance(op, str) else None
            if found is None:
                raise ValueError(f"opcheck(op, ...): op must be a custom operator (kindle.library.custom_op, or an "
                                 f"operator from Library.define), got {op!r}")
            op = found
        self.op = op
        if isinstance(op, library.CustomOpDef):
            self.name = f"{op._namespace}::{op._name}"
            self.arg_names = list(op._signature.parameters)
            self.mutates = op._mutates
            self.has_autograd = op._backward is not None
            self.has_fake = op._fake is not None
        else:
            self.name = f"{op._ns}::{op._name}"
            params = op._schema[op._schema.index("(") + 1:op._schema.rindex("->")].rstrip().rstrip(")")
            decls = [p.strip() for p in params.split(",") if p.strip() and p.strip() != "*"]
            self.arg_names = [d.split()[-1].split("=")[0] for d in decls]
            self.mutates = [d.split()[-1].split("=")[0] for d in decls if "!" in d.split()[0]]
            self.has_autograd = any(k in op._kernels for k in ("Autograd", "CompositeImplicitAutograd"))
            self.has_fake = "Meta" in op._kernels

    def named_args(self, args, kwargs):
        named = dict(zip(self.arg_names, args))
        named.update(kwargs)
        return named

    def declared_mutable(self, name):
        return self.mutates == _UNKNOWN or name in self.mutates


def _check_schema(view, args, kwargs, rtol, atol):  # noqa: ARG001
    from .autograd import no_grad
    args, kwargs = _clone(args), _clone(kwargs)
    before = {n: _clone(v) for n, v in view.named_args(args, kwargs).items()}
    with no_grad():
        out = view.op(*args, **kwargs)
    for name, value in view.named_args(args, kwargs).items():
        for now, then in zip(_tensor_leaves(value), _tensor_leaves(before[name])):
            if not view.declared_mutable(name) and not _same(now, then):
                raise OpCheckError(f"{view.name}: the operator mutated its argument '{name}', which its schema does "
                                   "not declare mutable (add it to mutates_args, or write to a copy)")
    inputs = {t.untyped_storage().data_ptr() for t in _tensor_leaves((args, kwargs)) if t.numel()}
    for t in _tensor_leaves(out):
        if t.numel() and t.untyped_storage().data_ptr() in inputs:
            raise OpCheckError(f"{view.name}: an output aliases an input; a custom operator must return new "
                               "tensors (return a clone)")


def _check_autograd_registration(view, args, kwargs, rtol, atol):  # noqa: ARG001
    leaves = [t for t in _tensor_leaves((args, kwargs)) if t.requires_grad]
    if not leaves:
        return
    if not view.has_autograd:
        raise OpCheckError(f"{view.name}: its inputs require grad but it has no autograd formula registered; use "
                           "register_autograd (or run it under no_grad)")
    args, kwargs = _clone(args), _clone(kwargs)
    outs = [t for t in _tensor_leaves(view.op(*args, **kwargs)) if t.requires_grad]
    if not outs:
        raise OpCheckError(f"{view.name}: it has an autograd formula and inputs that require grad, but no output "
                           "requires grad")
    total = sum((o.float().sum() if not o.is_complex() else o.abs().sum()) for o in outs)
    total.backward()


def _check_faketensor(view, args, kwargs, rtol, atol):  # noqa: ARG001
    from .autograd import no_grad
    if not view.has_fake:
        raise OpCheckError(f"{view.name}: There was no fake impl registered for it (register_fake: its output "
                           "shapes and dtypes from its inputs')")
    with no_grad():
        real = view.op(*_clone(args), **_clone(kwargs))
        fake = view.op(*_map_tensors(args, lambda t: t.detach().to("meta")),
                       **_map_tensors(kwargs, lambda t: t.detach().to("meta")))
    real_t, fake_t = list(_tensor_leaves(real)), list(_tensor_leaves(fake))
    if len(real_t) != len(fake_t):
        raise OpCheckError(f"{view.name}: the fake impl returned {len(fake_t)} tensors, the kernel {len(real_t)}")
    for i, (r, f) in enumerate(zip(real_t, fake_t)):
        if tuple(r.shape) != tuple(f.shape) or r.dtype != f.dtype:
            raise OpCheckError(f"{view.name}: output {i}: the fake impl gives {tuple(f.shape)} {f.dtype}, the "
                               f"kernel {tuple(r.shape)} {r.dtype}")
        if f.device.type != "meta":
            raise OpCheckError(f"{view.name}: output {i} of the fake impl is on {f.device}, not meta")


def _check_aot_dispatch_dynamic(view, args, kwargs, rtol, atol):
    from . import compile as kindle_compile
    from .testing import assert_close
    if not view.has_fake:  # (Kindle's compile runs eagerly; torch.compile traces with the fake impl)
        raise OpCheckError(f"{view.name}: There was no fake impl registered for it, which compiling a program "
                           "that calls it needs (register_fake)")
    eager_args, eager_kwargs = _clone(args), _clone(kwargs)
    compiled_args, compiled_kwargs = _clone(args), _clone(kwargs)
    eager = view.op(*eager_args, **eager_kwargs)
    compiled = kindle_compile(lambda *a, **k: view.op(*a, **k), dynamic=True)(*compiled_args, **compiled_kwargs)
    assert_close(compiled, eager, rtol=rtol, atol=atol, equal_nan=True)
    if view.has_autograd:
        pairs = [(e, c) for e, c in zip(_tensor_leaves((eager_args, eager_kwargs)),
                                          _tensor_leaves((compiled_args, compiled_kwargs))) if e.requires_grad]
        outs = [(e, c) for e, c in zip(_tensor_leaves(eager), _tensor_leaves(compiled)) if e.requires_grad]
        if pairs and outs:
            sum(e.float().sum() for e, _ in outs).backward()
            sum(c.float().sum() for _, c in outs).backward()
            for e, c in pairs:
                assert_close(c.grad, e.grad, rtol=rtol, atol=atol, equal_nan=True)


_CHECKS = {"test_schema": _check_schema, "test_autograd_registration": _check_autograd_registration,
           "test_faketensor": _check_faketensor, "test_aot_dispatch_dynamic": _check_aot_dispatch_dynamic}


def opcheck(op, args, kwargs=None, *, test_utils=DEFAULT_TEST_UTILS, raise_exception=True, rtol=None, atol=None):
    """Checks a custom operator's registrations on sample inputs (torch.library.opcheck): returns
    {test name: "SUCCESS" or the exception}, or raises OpCheckError at the first failure when
    raise_exception is True."""
    if (rtol is None) != (atol is None):
        raise ValueError("opcheck(op, ...): if you specify one of rtol/atol, you must specify both")
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    unknown = set(test_utils) - set(_CHECKS)
    if unknown:
        raise ValueError(f"opcheck(op, ..., test_utils={test_utils}), expected test_utils to be subset of "
                         f"{tuple(_CHECKS)} but it was not")
    view = _OpView(op)
    args, kwargs = tuple(args), dict(kwargs or {})
    results = {}
    for name in test_utils:
        try:
            _CHECKS[name](view, args, kwargs, rtol, atol)
            results[name] = "SUCCESS"
        except Exception as e:  # noqa: BLE001  (reported per test, or raised below)
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {e}") from e
            results[name] = e
    return results
