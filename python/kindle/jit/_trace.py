"""kindle.jit.trace: record the operations one call with example inputs performs.

Built on the fx tracer, with one difference: every Proxy also carries the real value its
operation produced on the example inputs (each recorded operation is executed as it is
recorded). Python control flow therefore works as in torch.jit.trace: `if x.sum() > 0:`
takes the branch the example takes and the trace keeps only that branch (with a
TracerWarning when a tensor's value decided it). Kindle's own nn modules stay call_module
nodes, so `.train()`/`.eval()` on the result still switch dropout and batch norm.
"""
import inspect
import operator
import warnings

from .. import _C
from ..autograd.grad_mode import no_grad
from ..fx._symbolic_trace import Tracer, factory_tracers
from ..fx.node import map_aggregate
from ..fx.proxy import Attribute, Proxy
from ..nn.modules.module import Module

__all__ = ["trace", "is_tracing", "TracerWarning"]

_tracing_depth = 0


class TracerWarning(Warning):
    """Warns that a trace depends on a value it cannot record (it is baked in as a constant)."""


def is_tracing():
    """True while kindle.jit.trace is running the traced code."""
    return _tracing_depth > 0


def _value(a):
    return map_aggregate(a, lambda x: x.value if isinstance(x, _ConcreteProxy) else x)


def _warn_constant(kind, value):
    if isinstance(value, _C.Tensor):
        warnings.warn(f"Converting a tensor to a Python {kind} might cause the trace to be incorrect. We can't "
                      "record the data flow of Python values, so this value will be treated as a constant in the "
                      "future. This means that the trace might not generalize to other inputs!", TracerWarning,
                      stacklevel=3)


class _ConcreteProxy(Proxy):
    """A Proxy with the value the example inputs gave it: Python may inspect it."""

    def __init__(self, node, tracer, value):
        super().__init__(node, tracer)
        self.value = value

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return _ConcreteAttribute(self, k)

    def __bool__(self):
        _warn_constant("boolean", self.value)
        return bool(self.value)

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        v = self.value
        if isinstance(v, dict):
            return iter(v)
        return (self[i] for i in range(len(v)))

    def __contains__(self, item):
        return _value(item) in self.value

    def __int__(self):
        _warn_constant("integer", self.value)
        return int(self.value)

    def __float__(self):
        _warn_constant("float", self.value)
        return float(self.value)

    def __index__(self):
        _warn_constant("index", self.value)
        return self.value.__index__()

    def keys(self):
        return self.value.keys()


def _install_inplace_operators():
    """`v += 1` on a traced value: recorded as operator.iadd (a side effect dead-code elimination
    keeps), not as `v = v + 1`. For a tensor they differ: when v is a view (v = y[0]), += writes
    into y, which torch.jit.trace records as aten::add_. A tracer that prefers the rebinding
    (kindle.export) sets _records_inplace_operators False and Python falls back to __add__."""
    names = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
             "rshift")

    def make(fn):
        def impl(self, other):
            if not self.tracer._records_inplace_operators:
                return NotImplemented
            return self.tracer.create_proxy("call_function", fn, (self, other), {})
        return impl

    for name in names:
        setattr(_ConcreteProxy, f"__i{name}__", make(getattr(operator, f"i{name}")))


_install_inplace_operators()


class _ConcreteAttribute(Attribute, _ConcreteProxy):
    @property
    def value(self):
        return getattr(self.root.value, self.attr)


class _ConcreteTracer(Tracer):
    _records_assert = False  # the condition is evaluated on the example, as in torch.jit.trace
    _records_inplace_operators = True

    def __init__(self):
        super().__init__()
        self.proxy_buffer_attributes = True
        self._example = {}

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        value = self._run(kind, target, _value(args), _value(kwargs))
        node = self.create_node(kind, target, self.create_arg(args), self.create_arg(kwargs), name, type_expr)
        return _ConcreteProxy(node, self, value)

    def _run(self, kind, target, args, kwargs):
        if kind == "placeholder":
            return self._example[target]
        self._suspended = True  # the real computation must not record anything
        try:
            if kind == "get_attr":
                obj = self.root
                for atom in target.split("."):
                    obj = getattr(obj, atom)
                return obj
            if kind == "call_function":
                return target(*args, **kwargs)
            if kind == "call_method":
                return getattr(args[0], target)(*args[1:], **kwargs)
            if kind == "call_module":
                return self._orig_module_call(self.root.get_submodule(target), *args, **kwargs)
        finally:
            self._suspended = False
        raise RuntimeError(f"jit.trace: unexpected node kind {kind}")

    def to_bool(self, obj):
        return bool(obj.value)

    def iter(self, obj):
        return iter(obj.value)

    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        example_args, example_kwargs = concrete_args
        params = list(inspect.signature(root_fn).parameters.values())[1 if is_module else 0:]
        pos, kw = [], {}
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(example_args) > len(positional):
            raise TypeError(f"jit.trace: {root_fn.__qualname__} takes {len(positional)} positional arguments but "
                            f"{len(example_args)} example inputs were given")
        for p, value in zip(positional, example_args):
            self._example[p.name] = value
            pos.append(self.create_proxy("placeholder", p.name, (), {}))
        for name, value in example_kwargs.items():
            if name not in inspect.signature(root_fn).parameters:
                raise TypeError(f"jit.trace: {root_fn.__qualname__} has no parameter '{name}'")
            self._example[name] = value
            kw[name] = self.create_proxy("placeholder", name, (), {})
        return pos, kw


def _flat_tensors(x):
    out = []
    map_aggregate(x, lambda v: out.append(v) if isinstance(v, _C.Tensor) else None)
    return out


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """Runs func (a Module or a function) once on example_inputs and returns a TracedModule that
    replays the recorded operations: callable like func, with .graph, .code and .save(f).

    Only the path the example inputs took is recorded (as in torch.jit.trace); the traced
    module accepts the example inputs' parameters, the others keep their defaults. With
    check_trace, an eval-mode module or a function is rerun through the trace and a
    TracerWarning is issued if the results differ.
    """
    from . import TracedModule, _adopt_tree
    global _tracing_depth
    if isinstance(example_inputs, _C.Tensor):
        example_inputs = (example_inputs,)
    elif example_inputs is None:
        example_inputs = ()
    elif isinstance(example_inputs, list):
        example_inputs = tuple(example_inputs)
    elif not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    example_kwarg_inputs = dict(example_kwarg_inputs or {})
    if not example_inputs and not example_kwarg_inputs:
        raise RuntimeError("jit.trace: give example_inputs (a tensor or a tuple of them) or example_kwarg_inputs")

    tracer = _ConcreteTracer()
    _tracing_depth += 1
    factory_tracers.append(tracer)  # kindle.rand(2, 3) is recorded, not baked in (as torch.jit.trace)
    try:
        with warnings.catch_warnings():
            if not strict:
                warnings.simplefilter("ignore", TracerWarning)
            graph = tracer.trace(func, (example_inputs, example_kwarg_inputs))
    finally:
        factory_tracers.pop()
        _tracing_depth -= 1
    # Values only Python looked at (branch conditions) are not part of the trace; in-place calls
    # whose result is unused are (Node.is_impure), and module calls are judged by the module
    # itself (nn.ReLU(inplace=True)), hence the owner.
    graph.owning_module = tracer.root
    graph.eliminate_dead_code()
    name = type(func).__name__ if isinstance(func, Module) else getattr(func, "__name__", "traced")
    traced = TracedModule(tracer.root, graph, name)
    if isinstance(func, Module):
        _adopt_tree(traced, func)

    if check_trace and not (isinstance(func, Module) and func.training):
        with no_grad():
            expected = func(*example_inputs, **example_kwarg_inputs)
            got = traced(*example_inputs, **example_kwarg_inputs)
        for i, (a, b) in enumerate(zip(_flat_tensors(expected), _flat_tensors(got))):
            tol = check_tolerance
            if a.shape != b.shape or not _C.allclose(a.double(), b.double(), rtol=tol, atol=tol):
                warnings.warn(f"Output nr {i + 1}. of the traced function does not match the corresponding output "
                              "of the Python function.", TracerWarning, stacklevel=2)
    return traced
