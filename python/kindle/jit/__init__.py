"""kindle.jit: torch.jit's entry points, without TorchScript.

Kindle has no TorchScript compiler. What it offers instead:
- The markers model code uses (`unused`, `ignore`, `export`, `_overload_method`, `Final`,
  `annotate`, `Attribute`, `is_scripting()`) behave as in eager PyTorch: the code runs as
  plain Python and is_scripting() is always False.
- trace(module_or_fn, example_inputs) records the operations of one call into an fx graph
  (see _trace.py) and returns a TracedModule that replays them, with .graph, .code and .save().
- script(module) captures forward with kindle.fx.symbolic_trace and returns a
  RecursiveScriptModule (a GraphModule) sharing the module's parameters; Python control flow
  that does not depend on tensor values is resolved at that moment (including `self.training`
  tests in your own modules; Kindle's nn modules stay calls and keep following train/eval).
  A forward that cannot be captured (control flow on tensor values, iteration over a tensor)
  raises NotImplementedError saying so. script(function) returns a ScriptFunction that runs the
  function eagerly (its graph is captured on demand, for .graph/.code/save). script(class)
  returns the class.
- save/load write and read Kindle's own format (data only, see _serialization.py), not
  TorchScript archives.
"""
import builtins
import functools
import typing

from ..fx._symbolic_trace import symbolic_trace
from ..fx.graph_module import GraphModule
from ..nn.modules.module import Module
from ._serialization import load, save
from ._trace import TracerWarning, is_tracing, trace

__all__ = ["script", "trace", "save", "load", "is_scripting", "is_tracing", "Final", "unused", "ignore", "export",
           "annotate", "Attribute", "ScriptModule", "ScriptFunction", "RecursiveScriptModule", "TracedModule",
           "TracerWarning", "fork", "wait", "Future", "freeze", "optimize_for_inference", "script_if_tracing",
           "interface", "isinstance", "optimized_execution", "set_fusion_strategy", "script_method",
           "trace_module", "CompilationUnit", "Error", "enable_onednn_fusion", "onednn_fusion_enabled"]

Final = typing.Final
Error = RuntimeError


def is_scripting():
    """Always False: Kindle runs code as Python (the `if not torch.jit.is_scripting():` branch)."""
    return False


# ---- markers: they only label functions, as torch.jit's do in eager mode

class FunctionModifiers:
    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"
    DEFAULT = "default (compile if called from a exported function / forward)"
    COPY_TO_SCRIPT_WRAPPER = "if this method is not scripted, copy the python method onto the scripted model"
    _DROP = "_drop (function is fully ignored, declaration can be unscriptable)"


def _mark(fn, modifier):
    if builtins.isinstance(fn, property):
        for f in (fn.fget, fn.fset, fn.fdel):
            if f is not None:
                f._torchscript_modifier = modifier
        return fn
    fn._torchscript_modifier = modifier
    return fn


def export(fn):
    return _mark(fn, FunctionModifiers.EXPORT)


def unused(fn):
    return _mark(fn, FunctionModifiers.UNUSED)


def ignore(drop=False, **kwargs):
    """@ignore and @ignore(drop=True): the function stays plain Python."""
    if callable(drop):
        return _mark(drop, FunctionModifiers.IGNORE)
    if not builtins.isinstance(drop, bool):
        raise RuntimeError(f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}")
    modifier = FunctionModifiers._DROP if drop else FunctionModifiers.IGNORE
    return lambda fn: _mark(fn, modifier)


def _overload(func):
    return func


def _overload_method(func):
    return func


def script_method(fn):
    return fn


def script_if_tracing(fn):
    return fn


def interface(obj):
    return obj


def annotate(the_type, the_value):
    """Returns the_value: the type only guides TorchScript's compiler."""
    return the_value


def Attribute(value, type=None):  # noqa: A002,N802  (torch's name)
    return value


def isinstance(obj, target_type):  # noqa: A001  (torch.jit.isinstance)
    """isinstance that understands typing containers (List[int], Dict[str, Tensor], Optional[X])."""
    origin = typing.get_origin(target_type)
    if origin is None:
        return target_type is typing.Any or builtins.isinstance(obj, target_type)
    args = typing.get_args(target_type)
    if origin is typing.Union:
        return any(isinstance(obj, a) for a in args)
    if not builtins.isinstance(obj, origin):
        return False
    if origin in (list, set, frozenset):
        return all(isinstance(x, args[0]) for x in obj) if args else True
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return all(isinstance(x, args[0]) for x in obj)
        return len(obj) == len(args) and all(isinstance(x, a) for x, a in zip(obj, args))
    if origin is dict:
        return all(isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items()) if args else True
    return True


# ---- futures: fork runs the function at once

class Future:
    def __init__(self, value=None):
        self._value = value

    def wait(self):
        return self._value

    def value(self):
        return self._value

    def done(self):
        return True

    def then(self, callback):
        return Future(callback(self))


def fork(func, *args, **kwargs):
    return Future(func(*args, **kwargs))


def wait(future):
    return future.wait()


# ---- compiled modules and functions

class ScriptModule(Module):
    """Base of every module kindle.jit returns (and of old-style `class M(torch.jit.ScriptModule)`
    modules, which run as ordinary modules)."""

    def save(self, f, _extra_files=None):
        save(self, f, _extra_files)

    def define(self, src):
        raise NotImplementedError("ScriptModule.define: TorchScript source cannot be compiled by Kindle")


class RecursiveScriptModule(GraphModule, ScriptModule):
    """What script() and load() return: a GraphModule (forward runs the captured graph)."""

    @property
    def original_name(self):
        return type(self).__name__

    @property
    def inlined_graph(self):
        return self.graph

    def save(self, f, _extra_files=None):
        save(self, f, _extra_files)


class TracedModule(RecursiveScriptModule):
    """What trace() returns."""


TopLevelTracedModule = TracedModule


class ScriptFunction:
    """script(function): runs the function itself (eagerly); .graph, .code and save() capture it
    with kindle.fx on first use."""

    def __init__(self, fn, name=None):
        self._fn = fn
        self._graph_module = fn if builtins.isinstance(fn, GraphModule) else None
        self.name = name or getattr(fn, "__name__", "fn")
        if not builtins.isinstance(fn, GraphModule):
            functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def _captured(self):
        if self._graph_module is None:
            self._graph_module = _capture(self._fn, f"function {self.name}")
        return self._graph_module

    @property
    def graph(self):
        return self._captured().graph

    @property
    def code(self):
        return self._captured().code

    def save(self, f, _extra_files=None):
        save(self, f, _extra_files)


def _capture(obj, what):
    try:
        traced = symbolic_trace(obj)
    except Exception as e:  # any failure to capture: the honest answer is that we cannot compile it
        raise NotImplementedError(
            f"kindle.jit.script: TorchScript compilation is not implemented in Kindle, and kindle.fx could not "
            f"capture {what} as a graph ({type(e).__name__}: {e}). Run it eagerly (drop the script call), or use "
            f"kindle.jit.trace with example inputs, which follows Python control flow.") from e
    if not builtins.isinstance(obj, Module):
        return RecursiveScriptModule(traced, traced.graph, type(traced).__name__)
    return _adopt_tree(RecursiveScriptModule(obj, traced.graph, type(traced).__name__), obj)


def _adopt_tree(sm, root):
    """Gives a compiled module root's whole tree of submodules, parameters and buffers (shared,
    not copied), so its state_dict has the same keys as root's, as a TorchScript module's does;
    the graph only calls the leaves."""
    for attr in ("_modules", "_parameters", "_buffers"):
        mine = getattr(sm, attr)
        merged = dict(getattr(root, attr))
        merged.update((k, v) for k, v in mine.items() if k not in merged)
        mine.clear()
        mine.update(merged)
    sm._non_persistent_buffers_set.update(root._non_persistent_buffers_set)
    return sm


def _graph_module_of(m):
    if builtins.isinstance(m, RecursiveScriptModule):
        return m
    if builtins.isinstance(m, ScriptFunction):
        return m._captured()
    if builtins.isinstance(m, ScriptModule):
        return _capture(m, f"{type(m).__name__}.forward")
    return None


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """See the module docstring: modules are captured with kindle.fx (NotImplementedError when
    that is impossible), functions are returned wrapped and run eagerly, classes unchanged."""
    if builtins.isinstance(obj, (RecursiveScriptModule, ScriptFunction)):
        return obj
    if builtins.isinstance(obj, Module):
        return _capture(obj, f"{type(obj).__name__}.forward")
    if builtins.isinstance(obj, type):
        return obj  # a TorchScript class: an ordinary Python class here
    if callable(obj):
        return ScriptFunction(obj)
    raise RuntimeError(f"kindle.jit.script: cannot script an object of type {type(obj).__name__}")


def trace_module(mod, inputs, **kwargs):
    """trace_module(mod, {'forward': example_inputs}): only forward can be traced."""
    if set(inputs) != {"forward"}:
        raise NotImplementedError("kindle.jit.trace_module: only the forward method can be traced")
    return trace(mod, inputs["forward"], **kwargs)


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    if not builtins.isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script or "
                           "torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call .eval() "
                           "on your module before freezing.")
    return mod


def optimize_for_inference(mod, other_methods=None):
    return freeze(mod.eval() if mod.training else mod)


class optimized_execution:  # noqa: N801  (torch's name)
    def __init__(self, should_optimize):
        self.should_optimize = should_optimize

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_fusion_strategy = [("STATIC", 2), ("DYNAMIC", 10)]


def set_fusion_strategy(strategy):
    global _fusion_strategy
    old, _fusion_strategy = _fusion_strategy, list(strategy)
    return old


_onednn_fusion = False


def enable_onednn_fusion(enabled):
    global _onednn_fusion
    _onednn_fusion = bool(enabled)


def onednn_fusion_enabled():
    return _onednn_fusion


class CompilationUnit:
    def __init__(self, lang=None, _frames_up=0):
        if lang is not None:
            raise NotImplementedError("kindle.jit.CompilationUnit: TorchScript source cannot be compiled by Kindle")
