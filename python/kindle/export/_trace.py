"""The tracer behind kindle.export: kindle.jit's concrete tracer, run through every module.

jit.trace keeps Kindle's nn modules as call_module nodes (so train()/eval() still switch
them); export instead records what their forward does (F.linear, F.batch_norm with the
training flag of the moment, ...), as torch.export does, so that parameters and buffers
appear as plain tensor reads that can be lifted to graph inputs.

Python looking at a traced value is handled as torch.export does, within what a concrete
tracer can know (see Note [Specialisation while exporting]).
"""
import inspect
import operator

from .. import _C, compiler
from ..fx import _symbolic_trace as _st
from ..fx.graph import _INFIX, Graph
from ..fx.node import Node
from ..fx.proxy import Attribute
from ..jit._trace import _ConcreteProxy, _ConcreteTracer, _value
from ..utils import _pytree as pytree
from ._shapes import TensorMeta
from .dynamic_shapes import GuardOnDataDependentSymNode

__all__ = ["ExportTracer", "record_meta", "is_impure"]

# Note [Specialisation while exporting]
# When Python turns a traced value into a plain one (`if`, int(), range(), len(), iteration),
# the graph can only keep the branch or count the example took. What that value was computed
# from decides what happens, tracked per node in meta["export_flags"]:
# - tensor data (the tensor itself, .item(), .tolist(), torch.equal): torch.export refuses
#   this (GuardOnDataDependentSymNode), and so does Kindle;
# - sizes (x.size(), x.shape, numel(), and arithmetic on them; the number of pieces split()
#   makes): when the export has dynamic dimensions, an assertion node (kindle._assert) is
#   added, so the graph fails loudly on sizes for which it would be wrong, and _probe.py runs
#   the graph at other sizes to report specialised Dims at export time, as torch does;
# - anything else (dtype, device, dim(), Python constants) is static: nothing to record.
_SIZE_READS = {"size", "shape", "numel", "nelement", "stride"}
_DATA_READS = {"item", "tolist", "equal", "allclose", "is_nonzero", "is_same_size"}
_SPLITS = {"split", "chunk", "unbind", "tensor_split", "split_with_sizes", "hsplit", "vsplit", "dsplit"}


def _op_name(node):
    if node.op == "call_method":
        return node.target
    if node.op == "call_function":
        if node.target is getattr and len(node.args) == 2:
            return node.args[1]
        return getattr(node.target, "__name__", "")
    return ""


def _is_tensor_node(n):
    return isinstance(n.meta.get("val"), TensorMeta)


def _contains_tensor(v):
    return isinstance(v, (tuple, list)) and any(isinstance(x, _C.Tensor) for x in v)


def record_meta(node, value):
    """Fills node.meta['val'] and meta['export_flags'] (see the Note) from its example value."""
    if isinstance(value, _C.Tensor):
        node.meta["val"] = TensorMeta(value.shape, value.dtype, value.device, value.requires_grad)
        node.meta["export_flags"] = frozenset()
        return
    if isinstance(value, (bool, int, float)) or (isinstance(value, tuple) and all(type(x) is int for x in value)):
        node.meta["val"] = value
    flags = set()
    has_tensor_input = False
    for inp in node.all_input_nodes:
        if _is_tensor_node(inp):
            has_tensor_input = True
        else:
            flags |= inp.meta.get("export_flags", frozenset())
    name = _op_name(node)
    if has_tensor_input and name in _SIZE_READS:
        flags.add("size")
    elif has_tensor_input and name in _DATA_READS:
        flags.add("data")
    elif _contains_tensor(value) and name in _SPLITS:
        flags.add("size")
    node.meta["export_flags"] = frozenset(flags)


class _ExportProxy(_ConcreteProxy):
    """A concrete proxy whose conversions to Python values go through the tracer's checks."""

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return _ExportAttribute(self, k)

    def __bool__(self):
        return self.tracer.specialize(self, bool)

    def __int__(self):
        return self.tracer.specialize(self, int)

    def __float__(self):
        return self.tracer.specialize(self, float)

    def __index__(self):
        return self.tracer.specialize(self, operator.index)

    def __len__(self):
        return self.tracer.length(self)

    def __iter__(self):
        v = self.value
        if isinstance(v, dict):
            return iter(v)
        return (self[i] for i in range(len(self)))


class _ExportAttribute(Attribute, _ExportProxy):
    @property
    def value(self):
        return getattr(self.root.value, self.attr)


class ExportTracer(_ConcreteTracer):
    """Records a module's forward on example inputs (placeholders named by the caller), with
    every module traced through and tensors that are not module state kept as constants."""

    # `v += 1` stays `v = v + 1` here: an in-place write into a user input would need torch.export's
    # input-mutation outputs, which kindle.export does not produce.
    _records_inplace_operators = False

    def __init__(self, guard_sizes=False, pretty_names=None):
        super().__init__()
        self.guard_sizes = guard_sizes
        self.constants = {}  # lifted_tensor_<i> -> tensor made during tracing (torch.ones(3) in forward)
        self.pretty_names = dict(pretty_names or {})
        self._module_stack = {}

    def is_leaf_module(self, m, module_qualified_name):
        return False

    def call_module(self, m, forward, args, kwargs):
        try:
            path = self.path_of_module(m)
        except NameError:  # a module that is not a submodule (made in forward): its tensors are constants
            return forward(*args, **kwargs)
        if path == "":
            return forward(*args, **kwargs)
        self._module_stack[path] = (path, f"{type(m).__module__}.{type(m).__qualname__}")
        try:
            return forward(*args, **kwargs)
        finally:
            self._module_stack.pop(path, None)

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        if self._module_stack:
            node.meta["nn_module_stack"] = dict(self._module_stack)
        return node

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        value = self._run(kind, target, _value(args), _value(kwargs))
        node = self.create_node(kind, target, self.create_arg(args), self.create_arg(kwargs), name, type_expr)
        record_meta(node, value)
        return _ExportProxy(node, self, value)

    def _run(self, kind, target, args, kwargs):
        if kind == "get_attr" and target in self.constants:
            return self.constants[target]
        return super()._run(kind, target, args, kwargs)

    def create_arg(self, a):
        if isinstance(a, _C.Tensor) and id(a) not in self.tensor_attrs:
            name = f"lifted_tensor_{len(self.constants)}"
            self.constants[name] = a  # kept alive, so its id is not reused while tracing
            self.tensor_attrs[id(a)] = name
        return super().create_arg(a)

    # ---- Python looking at traced values (Note [Specialisation while exporting])

    def specialize(self, proxy, convert):
        value, node = proxy.value, proxy.node
        if isinstance(value, _C.Tensor) or "data" in node.meta.get("export_flags", ()):
            raise GuardOnDataDependentSymNode(
                f"Could not guard on data-dependent expression {self.render(node)} (Python took a "
                f"{convert.__name__}() of a value computed from tensor data). An exported graph cannot hold Python "
                "control flow on tensor values: express it with tensor operations (kindle.where, masks) instead.")
        result = convert(value)
        if self.guard_sizes and "size" in node.meta.get("export_flags", ()):
            self.guard(node, result, is_bool=convert is bool)
        return result

    def length(self, proxy):
        value, n = proxy.value, len(proxy.value)
        if self.guard_sizes:
            if isinstance(value, _C.Tensor):
                size = self.create_node("call_method", "size", (proxy.node, 0), {})
                record_meta(size, n)
                self.guard(size, n)
            elif _contains_tensor(value) and "size" in proxy.node.meta.get("export_flags", ()):
                length = self.create_node("call_function", len, (proxy.node,), {})
                record_meta(length, n)
                self.guard(length, n)
        return n

    def guard(self, node, result, is_bool=False):
        import kindle
        if is_bool:
            cond = node if result else self.create_node("call_function", operator.not_, (node,), {})
            expr = self.render(node) if result else f"not ({self.render(node)})"
        else:
            cond = self.create_node("call_function", operator.eq, (node, result), {})
            expr = f"{self.render(node)} == {result!r}"
        self.create_node("call_function", kindle._assert,
                         (cond, f"Runtime assertion failed for expression {expr} on node '{node.name}'"), {})

    def render(self, node, depth=0):
        """A readable expression for a node, for error messages: x.size(0) > 2."""
        def r(a):
            return self.render(a, depth + 1) if isinstance(a, Node) else repr(a)
        if depth > 8:
            return node.name
        if node.op == "placeholder":
            return self.pretty_names.get(node.name, node.name)
        args = node.args
        if node.op == "call_method" and args:
            return f"{r(args[0])}.{node.target}({', '.join(r(a) for a in args[1:])})"
        if node.op == "call_function":
            if node.target is getattr and len(args) == 2:
                return f"{r(args[0])}.{args[1]}"
            fmt = _INFIX.get(node.target) if not node.kwargs else None
            if fmt is not None and fmt.count("{}") == len(args):
                return fmt.format(*(r(a) for a in args))
            return f"{getattr(node.target, '__name__', node.target)}({', '.join(r(a) for a in args)})"
        return node.name

    # ---- the trace

    def run(self, mod, leaves, values, rebuild, extra_fns=()):
        """Calls mod(*args, **kwargs), where (args, kwargs) = rebuild(flat), flat holding one
        placeholder proxy per tensor input (values are the example tensors) and the constant
        inputs themselves. Returns the graph (its output a flat tuple) and the output TreeSpec."""
        self.root = mod
        self.graph = Graph(tracer_cls=type(self))
        self.submodule_paths = {}
        for name, m in mod.named_modules():
            self.submodule_paths.setdefault(id(m), name)
        self._collect_tensor_attrs(mod)
        modules = list(mod.modules())
        fns = [getattr(type(m), "forward", None) for m in modules] + list(extra_fns)
        patcher = _st._Patcher()
        # kindle.compiler.is_exporting() and is_compiling() answer True while forward runs here,
        # as torch's do under torch.export
        exporting = compiler._compiling(exporting=True)
        exporting.__enter__()
        _st._tracing_depth += 1
        try:
            self._patch(patcher, [f for f in fns if f is not None], modules)
            flat = []
            for leaf, value in zip(leaves, values):
                if isinstance(value, _C.Tensor):
                    self._example[leaf.name] = value
                    proxy = self.create_proxy("placeholder", leaf.name, (), {})
                    self.pretty_names[proxy.node.name] = leaf.pretty
                    flat.append(proxy)
                else:  # a constant input: a placeholder keeps the calling convention, the value is used
                    node = self.create_node("placeholder", leaf.name, (), {})
                    node.meta["val"] = value
                    flat.append(value)
            args, kwargs = rebuild(flat)
            result = mod(*args, **kwargs)
            out_leaves, out_spec = pytree.tree_flatten(result)
            outputs = tuple(self.create_arg(x) for x in out_leaves)
            self.create_node("output", "output", (outputs,), {})
        finally:
            _st._tracing_depth -= 1
            patcher.restore()
            exporting.__exit__(None, None, None)
            self.submodule_paths = None
        return self.graph, out_spec


def _true():
    return True


def is_impure(node):
    """What dead-code elimination must keep: kindle's notion, plus assertions and in-place
    calls made through functions (F.relu_(x), F.relu(x, inplace=True)) whose result is unused."""
    import kindle
    if node.is_impure() or (node.op == "call_function" and node.target is kindle._assert):
        return True
    if node.op == "call_function":
        name = getattr(node.target, "__name__", "")
        return (name.endswith("_") and not name.endswith("__")) or _inplace_argument(node) is True
    return False


def _inplace_argument(node):
    if "inplace" in node.kwargs:
        return node.kwargs["inplace"]
    try:  # F.relu(x, True): the flag passed by position
        return inspect.signature(node.target).bind_partial(*node.args, **node.kwargs).arguments.get("inplace")
    except (TypeError, ValueError):  # no Python signature (a C++ function), or not this call's
        return None

