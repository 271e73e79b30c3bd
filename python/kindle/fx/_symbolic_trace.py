"""fx.Tracer and symbolic_trace: run a module's forward on Proxies and record what it does.

Note [Recording calls to kindle functions]
PyTorch records `torch.flatten(proxy)` or `F.relu(proxy)` through __torch_function__, which
Kindle does not have yet. Instead, for the duration of one trace, the Tracer replaces the
public functions of Kindle's op namespaces (kindle, kindle._C, kindle._C._nn,
kindle.nn.functional, and linalg/special/fft when present) and those of `math` by recorders,
as well as every alias of one of them that the traced code can reach directly: globals of the
traced function and of the modules' forward methods (`from kindle import flatten`), their
closure cells, and module attributes (`self.act = F.gelu`). A recorder looks for a Proxy in
its arguments: if it finds one, it adds a call_function node whose target is the *original*
function; otherwise it calls the original, so code that runs meanwhile on real tensors
(other threads included) is unaffected. fx.wrap() uses the same mechanism: the named global
of the module that called wrap() is patched. nn.Module.__call__ and __getattr__ are patched
too (submodule calls and parameter reads), for the tracing thread only. Everything is
restored when the trace ends, even if it fails. Tensor methods need nothing of the kind:
`proxy.view(...)` reaches Proxy.__getattr__. Not seen: a Kindle function reached another way
(a helper module's own `from kindle import relu`, a dict of functions), and Tensor methods
called on a real tensor with a Proxy argument (`real.mul(proxy)`; `real * proxy` works, since
Tensor's operators return NotImplemented and Python asks the Proxy).
"""
import builtins
import functools
import inspect
import math
import sys
import threading

from .. import _C
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .graph import Graph
from .graph_module import GraphModule
from .node import Node
from .proxy import Attribute, ParameterProxy, Proxy, TraceError, _find_proxy_tracer

__all__ = ["Tracer", "symbolic_trace", "wrap", "is_fx_tracing"]

# Kindle namespaces whose functions are recorded (see the Note). Submodules that do not exist
# yet are skipped.
_OP_NAMESPACES = ("kindle", "kindle._C", "kindle._C._nn", "kindle.nn.functional", "kindle.linalg",
                  "kindle.special", "kindle.fft")

# Functions of those namespaces that inspect their argument's Python type or manage global
# state: a Proxy passed to them is not a recorded op (torch.is_tensor(proxy) is False).
_NOT_RECORDED = {"is_tensor", "is_storage", "is_grad_enabled", "is_inference_mode_enabled", "typename",
                 "manual_seed", "seed", "save", "load", "install_as_torch", "uninstall_as_torch", "compile",
                 "set_grad_enabled", "get_default_dtype", "set_default_dtype", "set_printoptions"}

# Private functions of those namespaces that are recorded nevertheless: torch.fx records
# torch._assert(proxy, msg) (it dispatches through __torch_function__), so graphs keep the check.
_RECORDED_PRIVATE = {"_assert"}

# (globals dict, name) pairs registered by wrap().
_wrapped_globals = []
_tracing_depth = 0


def is_fx_tracing():
    """True while a Tracer is running traced code (torch.fx._symbolic_trace.is_fx_tracing)."""
    return _tracing_depth > 0


def wrap(fn_or_name):
    """Marks a module-level function as a leaf of symbolic tracing: called with a Proxy it is
    recorded as one call_function node instead of being traced through. Call it at module scope,
    with the function or its name (`fx.wrap('len')` records builtins.len)."""
    if callable(fn_or_name):
        name = fn_or_name.__name__
    elif isinstance(fn_or_name, str):
        name = fn_or_name
    else:
        raise TypeError("wrap must be called with a function or the name of a function")
    frame = inspect.currentframe().f_back
    try:
        if frame.f_code.co_name != "<module>":
            raise NotImplementedError("wrap must be called at the top level of a module")
        _wrapped_globals.append((frame.f_globals, name))
    finally:
        del frame
    return fn_or_name


class _Patcher:
    """Replaces dict entries, attributes and closure cells, and puts back exactly what was there."""

    _MISSING = object()

    def __init__(self):
        self._undo = []  # (kind, target, name, old value)
        self._done = set()

    def _first(self, target, name):
        key = (id(target), name)
        if key in self._done:
            return False
        self._done.add(key)
        return True

    def set_item(self, d, name, value):
        if self._first(d, name):
            self._undo.append(("item", d, name, d.get(name, self._MISSING)))
            d[name] = value

    def set_attr(self, obj, name, value):
        if self._first(obj, name):
            self._undo.append(("attr", obj, name, obj.__dict__.get(name, self._MISSING)))
            setattr(obj, name, value)

    def set_cell(self, cell, value):
        if self._first(cell, None):
            self._undo.append(("cell", cell, None, cell.cell_contents))
            cell.cell_contents = value

    def restore(self):
        for kind, target, name, old in reversed(self._undo):
            if kind == "cell":
                target.cell_contents = old
            elif kind == "item":
                if old is self._MISSING:
                    target.pop(name, None)
                else:
                    target[name] = old
            elif old is self._MISSING:
                delattr(target, name)
            else:
                setattr(target, name, old)
        self._undo.clear()
        self._done.clear()


# Random factories called without a traced argument (kindle.rand(2, 3) in a forward): torch.fx
# runs them once and keeps the draw as a constant; torch.jit.trace records them, so that every
# call of the traced module draws anew. A tracer that records them (kindle.jit.trace's) is
# pushed here while it traces.
_RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "randperm", "normal", "bernoulli", "poisson",
                               "multinomial"})
factory_tracers = []


def _make_recorder(orig):
    """A stand-in for orig that records a call_function node when a Proxy is among its arguments."""
    random_factory = getattr(orig, "__name__", None) in _RANDOM_FACTORIES

    def recorder(*args, **kwargs):
        tracer = _find_proxy_tracer(args, kwargs)
        if tracer is None and random_factory and factory_tracers:
            tracer = factory_tracers[-1]
        if tracer is None or tracer._suspended:
            return orig(*args, **kwargs)
        return tracer.create_proxy("call_function", orig, args, kwargs)
    try:
        functools.update_wrapper(recorder, orig)
    except (AttributeError, TypeError):
        pass
    recorder._fx_recorder_of = orig
    return recorder


def _recordable(name, value, private=()):
    if (name.startswith("_") and name not in private) or name in _NOT_RECORDED or not callable(value) \
            or isinstance(value, type):
        return False
    return not getattr(value, "_fx_recorder_of", None)


class Tracer:
    """Turns a module's (or function's) forward into a Graph by running it on Proxies.

    Subclass and override is_leaf_module() to decide which submodules stay one call_module
    node (by default Kindle's own nn modules, except containers such as Sequential), or
    create_proxy()/call_module()/getattr() to watch or change what is recorded.
    """

    # kindle._assert(proxy, msg) becomes a call_function node (as torch._assert does in
    # torch.fx). kindle.jit.trace sets this False: torch.jit.trace evaluates the condition on the
    # example (a TracerWarning) and records no assertion.
    _records_assert = True

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant=False):
        self._autowrap_modules = tuple(autowrap_modules)
        self._autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        # torch.fx leaves buffer reads unrecorded (False) and relies on __torch_function__ when a
        # real buffer meets a Proxy (`self.mask[:, :T]`); Kindle has no such dispatch, so buffers
        # read from a module's attributes become get_attr proxies.
        self.proxy_buffer_attributes = True
        self._suspended = False
        self.graph = None
        self.root = None
        self.tensor_attrs = {}
        self.submodule_paths = None

    # ---- policy

    def is_leaf_module(self, m, module_qualified_name):
        from ..nn.modules.container import ModuleDict, ModuleList, Sequential
        mod = type(m).__module__ or ""
        return mod.startswith("kindle.nn") and not isinstance(m, (Sequential, ModuleList, ModuleDict))

    def path_of_module(self, mod):
        if self.submodule_paths is not None:
            path = self.submodule_paths.get(id(mod))
            if path is not None:
                return path
        for name, m in self.root.named_modules():
            if m is mod:
                return name
        raise NameError("module is not installed as a submodule")

    # ---- recording

    def proxy(self, node):
        return Proxy(node, self)

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """Turns a value into what a node stores: proxies become their nodes, parameters and
        tensors of the root become get_attr nodes, containers are converted recursively."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, tuple):
            t = tuple(self.create_arg(x) for x in a)
            return type(a)(*t) if hasattr(a, "_fields") else t
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            return {self.create_arg(k): self.create_arg(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, Module):
            return self.create_node("get_attr", self.path_of_module(a), (), {})
        if isinstance(a, _C.Tensor):
            path = self.tensor_attrs.get(id(a))
            if path is None:
                if isinstance(a, Parameter):
                    raise NameError("parameter is not a member of this module")
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                path = f"_tensor_constant{i}"
                setattr(self.root, path, a)
                self.tensor_attrs[id(a)] = path
            return self.create_node("get_attr", path, (), {})
        if a is None or a is Ellipsis or isinstance(a, (bool, int, float, complex, str, bytes)):
            return a
        import kindle
        if isinstance(a, (kindle.dtype, kindle.device)) or callable(a):
            return a
        if (type(a).__module__ or "").startswith("kindle"):
            return a  # memory_format, layout and similar enum-like values
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj):
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
                         "or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a "
                         "more detailed explanation of what types of control flow can be traced, and check out the "
                         "Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj):
        return Attribute(obj, "keys")()

    def call_module(self, m, forward, args, kwargs):
        """A submodule call: one call_module node for a leaf, its forward traced through otherwise."""
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """A module attribute read during tracing: parameters (and buffers, with
        proxy_buffer_attributes) become get_attr proxies, anything else is returned as is."""
        if isinstance(attr_val, Parameter) or (self.proxy_buffer_attributes and isinstance(attr_val, _C.Tensor)):
            path = self.tensor_attrs.get(id(attr_val))
            if path is None:
                return attr_val
            if path not in parameter_proxy_cache:
                factory = None
                if self.param_shapes_constant and isinstance(attr_val, Parameter):
                    factory = lambda node: ParameterProxy(self, node, path, attr_val)  # noqa: E731
                parameter_proxy_cache[path] = self.create_proxy("get_attr", path, (), {}, proxy_factory_fn=factory)
            return parameter_proxy_cache[path]
        return attr_val

    # ---- the trace

    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        """Placeholders for the traced function's parameters (self excluded); a parameter named
        in concrete_args keeps its placeholder, with that value as default, and the value itself is
        passed to the function."""
        sig = inspect.signature(root_fn)
        params = list(sig.parameters.values())
        if is_module:
            params = params[1:]
        concrete_args = dict(concrete_args or {})
        args = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                if p.name in concrete_args:
                    continue
                raise NotImplementedError(f"symbolic_trace: {root_fn.__qualname__} takes *{p.name}; tracing a "
                                          "variadic signature is not supported, give its value in concrete_args")
            if p.name in concrete_args:
                value = concrete_args.pop(p.name)
                self.create_node("placeholder", p.name, (value,), {})
                args.append((p, value))
                continue
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            args.append((p, self.create_proxy("placeholder", p.name, default, {})))
        if concrete_args:
            raise TypeError(f"symbolic_trace: concrete_args names {sorted(concrete_args)}, which "
                            f"{root_fn.__qualname__} does not take")
        pos, kw = [], {}
        for p, v in args:
            if p.kind == p.KEYWORD_ONLY:
                kw[p.name] = v
            else:
                pos.append(v)
        return pos, kw

    def _collect_tensor_attrs(self, root):
        self.tensor_attrs = {}
        for name, p in root.named_parameters(remove_duplicate=False):
            self.tensor_attrs.setdefault(id(p), name)
        for name, b in root.named_buffers(remove_duplicate=False):
            self.tensor_attrs.setdefault(id(b), name)
        for prefix, m in root.named_modules():
            for k, v in vars(m).items():  # plain tensor attributes, as torch.fx finds them
                if isinstance(v, _C.Tensor):
                    self.tensor_attrs.setdefault(id(v), f"{prefix}.{k}" if prefix else k)

    def _patch(self, patcher, fns, modules):
        """Installs the recorders of the Note, and the module call/getattr hooks. fns are the
        traced function and the modules' forwards: their globals and closure cells are searched for
        aliases of recorded functions, as are the modules' attributes (`self.act = F.relu`)."""
        recorders = {}  # id(original) -> its recorder: one per function, however many aliases

        def recorder_for(fn):
            rec = recorders.get(id(fn))
            if rec is None:
                rec = recorders[id(fn)] = _make_recorder(fn)
            return rec

        namespaces = [sys.modules[n] for n in _OP_NAMESPACES if n in sys.modules] + list(self._autowrap_modules)
        private = _RECORDED_PRIVATE if self._records_assert else ()
        for mod in namespaces:
            for name, value in list(vars(mod).items()):
                if _recordable(name, value, private if mod.__name__ == "kindle" else ()):
                    patcher.set_attr(mod, name, recorder_for(value))
        for fn in self._autowrap_functions:
            recorder_for(fn)
        for g, name in _wrapped_globals:
            orig = g.get(name, getattr(builtins, name, None))
            if orig is not None and not getattr(orig, "_fx_recorder_of", None):
                patcher.set_item(g, name, recorder_for(orig))
        # aliases of recorded functions in the traced code: globals (`from kindle import flatten`),
        # closure cells (a function captured by a nested def) and module attributes
        seen_globals = set()
        for fn in fns:
            g = getattr(fn, "__globals__", None)
            if g is not None and id(g) not in seen_globals:
                seen_globals.add(id(g))
                for name, value in list(g.items()):
                    rec = recorders.get(id(value))
                    if rec is not None:
                        patcher.set_item(g, name, rec)
            for cell in getattr(fn, "__closure__", None) or ():
                try:
                    rec = recorders.get(id(cell.cell_contents))
                except ValueError:  # an empty cell
                    continue
                if rec is not None:
                    patcher.set_cell(cell, rec)
        for m in modules:
            for name, value in list(vars(m).items()):
                rec = recorders.get(id(value))
                if rec is not None:
                    patcher.set_item(m.__dict__, name, rec)

        orig_call = Module.__call__
        orig_getattr = Module.__getattr__
        tracer = self
        parameter_proxy_cache = {}

        # Module.__call__/__getattr__ are patched for the whole process: calls from other threads
        # are not part of this trace.
        thread = threading.get_ident()

        def module_call_wrapper(mod, *args, **kwargs):
            if tracer._suspended or threading.get_ident() != thread:
                return orig_call(mod, *args, **kwargs)
            return tracer.call_module(mod, lambda *a, **k: orig_call(mod, *a, **k), args, kwargs)

        def module_getattr_wrapper(mod, attr):
            value = orig_getattr(mod, attr)
            if tracer._suspended or threading.get_ident() != thread:
                return value
            return tracer.getattr(attr, value, parameter_proxy_cache)

        patcher.set_attr(Module, "__call__", module_call_wrapper)
        patcher.set_attr(Module, "__getattr__", module_getattr_wrapper)
        self._orig_module_call = orig_call

    def trace(self, root, concrete_args=None):
        """Records root's forward (root a Module) or root itself (a function) into a new Graph."""
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            is_module = True
        elif callable(root):
            self.root = Module()
            fn = root
            is_module = False
        else:
            raise TypeError(f"symbolic_trace expects a Module or a function, got {type(root).__name__}")
        self.graph = Graph(tracer_cls=type(self))
        self.submodule_paths = {}
        for name, m in self.root.named_modules():
            self.submodule_paths.setdefault(id(m), name)
        self._collect_tensor_attrs(self.root)

        modules = list(self.root.modules())
        fns = [fn] + [getattr(type(m), "forward", None) for m in modules]

        global _tracing_depth
        patcher = _Patcher()
        _tracing_depth += 1
        try:
            self._patch(patcher, [f for f in fns if f is not None], modules)
            args, kwargs = self.create_args_for_root(fn, is_module, concrete_args)
            result = fn(self.root, *args, **kwargs) if is_module else fn(*args, **kwargs)
            self.create_node("output", "output", (self.create_arg(result),), {})
        finally:
            _tracing_depth -= 1
            patcher.restore()
            self.submodule_paths = None
        return self.graph


def symbolic_trace(root, concrete_args=None):
    """Traces root (a Module or a function) with Proxies and returns a GraphModule whose
    forward is generated Python code running the recorded graph. Kindle's nn modules stay
    single call_module nodes; concrete_args fixes some arguments to values (their branches are
    taken once, at trace time)."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
