"""kindle.library (torch.library): user-defined operators in Python.

`custom_op("mylib::name", mutates_args=())` turns a function into an operator callable as
itself and as `kindle.ops.mylib.name`; `register_autograd` gives it a backward (torch's
`setup_context(ctx, inputs, output)` / `backward(ctx, *grads)` pair, run through
kindle.autograd.Function), `register_fake` its shape function (used when the inputs are on the
meta device), `register_kernel` a per-device implementation. The older `Library(ns, "DEF")` /
`define` / `impl` API registers into the same table. `infer_schema` reads a schema off type hints
and `opcheck` checks an operator's registrations (kindle/_library_checks.py)."""
import inspect

from . import _C
from ._library_checks import OpCheckError, infer_schema, opcheck  # noqa: F401

__all__ = ["custom_op", "CustomOpDef", "register_autograd", "register_fake", "register_kernel", "impl_abstract",
           "Library", "define", "impl", "get_ctx", "infer_schema", "opcheck"]

_REGISTRY = {}  # "ns::name" -> the callable kindle.ops.ns.name runs


def _split(qualname):
    if not isinstance(qualname, str) or qualname.count("::") != 1:
        raise ValueError(f"Expected there to be a namespace in {qualname!r}, i.e. The operator name should look "
                         f"something like ns::foo")
    ns, name = qualname.split("::")
    if not ns.isidentifier() or not name.split(".")[0].isidentifier():
        raise ValueError(f"invalid operator name {qualname!r}")
    return ns, name.split(".")[0]


def _tensors(values):
    for v in values:
        if isinstance(v, _C.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _tensors(v)


class CustomOpDef:
    """A custom operator (what custom_op returns)."""

    def __init__(self, namespace, name, fn, mutates_args, device_types=None, schema=None):
        self._namespace, self._name = namespace, name
        self._init_fn = fn
        self._signature = inspect.signature(fn)
        self._kernels = {}      # device type -> implementation; None: every device
        for dt in _device_list(device_types):
            self._kernels[dt] = fn
        self._fake = None
        self._backward = self._setup_context = None
        self._mutates = mutates_args
        self._schema = schema
        self._function = None
        self.__name__ = name
        self.__doc__ = fn.__doc__
        _REGISTRY[f"{namespace}::{name}"] = self

    def __repr__(self):
        return f"<CustomOpDef({self._namespace}::{self._name})>"

    # ---- registrations
    def register_kernel(self, device_types, fn=None):
        def inner(f):
            for dt in _device_list(device_types):
                self._kernels[dt] = f
            return f
        return inner if fn is None else inner(fn)

    def register_fake(self, fn):
        self._fake = fn
        return fn

    def register_autograd(self, backward, *, setup_context=None):
        if not callable(backward):
            raise TypeError(f"register_autograd: backward must be callable, got {type(backward).__name__}")
        self._backward, self._setup_context = backward, setup_context
        self._function = None
        return backward

    def register_torch_dispatch(self, *args, **kwargs):  # noqa: ARG002
        raise NotImplementedError("register_torch_dispatch: Kindle has no __torch_dispatch__ subclasses")

    def register_vmap(self, func=None):
        raise NotImplementedError(f"register_vmap: Kindle's vmap runs {self._namespace}::{self._name} per example "
                                  "(no custom batching rules yet)")

    # ---- calls
    def _kernel_for(self, bound):
        devices = {t.device.type for t in _tensors(bound.arguments.values())}
        if "meta" in devices:
            if self._fake is None:
                raise RuntimeError(f"{self._namespace}::{self._name}: There was no fake impl registered for this "
                                   "custom op (needed for meta tensors); use register_fake")
            return self._fake
        for dt in sorted(devices):
            if dt in self._kernels:
                return self._kernels[dt]
        if None in self._kernels:
            return self._kernels[None]
        raise NotImplementedError(f"{self._namespace}::{self._name}: no kernel registered for device type(s) "
                                  f"{sorted(devices)}")

    def __call__(self, *args, **kwargs):
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        kernel = self._kernel_for(bound)
        needs_grad = _C.is_grad_enabled() and any(t.requires_grad for t in _tensors(bound.arguments.values()))
        if self._backward is None or not needs_grad or kernel is self._fake:
            return kernel(*bound.args, **bound.kwargs)
        return self._autograd_function().apply(kernel, bound, *bound.arguments.values())

    def _autograd_function(self):
        if self._function is None:
            from .autograd import Function, no_grad
            op = self
            names = list(self._signature.parameters)

            class _CustomOpFunction(Function):
                @staticmethod
                def forward(ctx, kernel, bound, *values):
                    with no_grad():
                        out = kernel(*bound.args, **bound.kwargs)
                    if op._setup_context is not None:
                        op._setup_context(ctx, tuple(values), out)
                    return out

                @staticmethod
                def backward(ctx, *grads):
                    got = op._backward(ctx, *grads)
                    got = got if isinstance(got, tuple) else (got,)
                    if len(got) != len(names):
                        raise RuntimeError(f"{op._namespace}::{op._name}: the backward returned {len(got)} "
                                           f"gradients, expected {len(names)} (one per input, None for "
                                           "non-tensors)")
                    return (None, None) + got

            self._function = _CustomOpFunction
        return self._function


def _device_list(device_types):
    if device_types is None:
        return [None]
    if isinstance(device_types, str):
        return [device_types]
    return list(device_types)


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None):
    """Makes fn an operator `name` ("ns::op"); mutates_args names the arguments fn writes to
    (or "unknown")."""
    if mutates_args != "unknown" and not isinstance(mutates_args, (str, tuple, list, set, frozenset)):
        raise TypeError(f"mutates_args must be a tuple of argument names or 'unknown', got {mutates_args!r}")
    ns, op_name = _split(name)

    def inner(f):
        return CustomOpDef(ns, op_name, f, mutates_args, device_types, schema)
    return inner if fn is None else inner(fn)


def _op(op):
    if isinstance(op, CustomOpDef):
        return op
    ns, name = _split(op)
    found = _REGISTRY.get(f"{ns}::{name}")
    if not isinstance(found, CustomOpDef):
        raise ValueError(f"{op}: not a custom operator defined with kindle.library (custom_op or define)")
    return found


def register_fake(op, fn=None, /, *, lib=None, _stacklevel=1):  # noqa: ARG001
    def inner(f):
        return _op(op).register_fake(f)
    return inner if fn is None else inner(fn)


impl_abstract = register_fake


def register_autograd(op, backward, /, *, setup_context=None, lib=None):  # noqa: ARG001
    return _op(op).register_autograd(backward, setup_context=setup_context)


def register_kernel(op, device_types, fn=None, /, *, lib=None):  # noqa: ARG001
    return _op(op).register_kernel(device_types, fn)


def get_ctx():
    raise RuntimeError("get_ctx() is only meaningful inside a fake (meta) implementation under torch.compile; "
                       "Kindle runs fake implementations eagerly on meta tensors")


# ---- the Library / define / impl API


class Library:
    """Library(ns, "DEF" | "IMPL" | "FRAGMENT"): defines operators of ns and their kernels."""

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._defined = []

    def define(self, schema, alias_analysis="", *, tags=()):  # noqa: ARG002
        """Declares `name(args) -> ret`; the kernel comes from impl."""
        name = schema.split("(")[0].strip().split(".")[0]
        qualname = f"{self.ns}::{name}"
        if qualname in _REGISTRY:
            raise RuntimeError(f"Tried to register an operator ({qualname}) with the same name and overload name "
                               "multiple times.")
        op = _DefinedOp(self.ns, name, schema)
        _REGISTRY[qualname] = op
        self._defined.append(qualname)
        return name

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):  # noqa: ARG002
        name = op_name if isinstance(op_name, str) else op_name.__name__
        name = name.split("::")[-1].split(".")[0]
        qualname = f"{self.ns}::{name}"
        op = _REGISTRY.get(qualname)
        if op is None:
            raise RuntimeError(f"{qualname}: define the operator before giving it a kernel")
        op.set_kernel(dispatch_key or self.dispatch_key, fn)

    def _destroy(self):
        for q in self._defined:
            _REGISTRY.pop(q, None)
        self._defined = []


class _DefinedOp:
    """An operator from Library.define: its kernels by dispatch key."""

    def __init__(self, ns, name, schema):
        self._ns, self._name, self._schema = ns, name, schema
        self._kernels = {}

    def set_kernel(self, key, fn):
        self._kernels[key or "CompositeImplicitAutograd"] = fn

    def __call__(self, *args, **kwargs):
        devices = {t.device.type for t in _tensors(list(args) + list(kwargs.values()))}
        keys = (["Meta"] if "meta" in devices else []) + ["CPU", "CompositeExplicitAutograd",
                                                          "CompositeImplicitAutograd", "Autograd"]
        for key in keys:
            if key in self._kernels:
                return self._kernels[key](*args, **kwargs)
        raise NotImplementedError(f"{self._ns}::{self._name}: no kernel registered (schema {self._schema})")


def define(qualname, schema, *, lib=None, tags=()):  # noqa: ARG001
    ns, name = _split(qualname)
    (lib or Library(ns, "FRAGMENT")).define(name + schema, tags=tags)


def impl(qualname, types, func=None, *, lib=None):
    ns, name = _split(qualname)
    keys = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta", "default": "CompositeExplicitAutograd"}

    def inner(f):
        found = _REGISTRY.get(f"{ns}::{name}")
        if isinstance(found, CustomOpDef):
            found.register_kernel(types, f)
        elif found is None:
            raise RuntimeError(f"{qualname}: define the operator before giving it a kernel")
        else:
            for t in ([types] if isinstance(types, str) else list(types)):
                found.set_kernel(keys.get(t, t), f)
        return f
    return inner if func is None else inner(func)
