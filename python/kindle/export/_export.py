"""export(): trace, lift module state to graph inputs, settle dynamic dimensions, and package
the result as an ExportedProgram."""
import inspect

from .. import _C
from ..autograd.grad_mode import no_grad
from ..fx.graph_module import GraphModule
from ..nn.modules.module import Module
from ..utils import _pytree as pytree
from ._shapes import InputLeaf, TensorMeta, plan, range_constraints
from ._trace import ExportTracer, is_impure, record_meta
from .dynamic_shapes import AdditionalInputs, ShapesCollection, UserError
from .graph_signature import (ConstantArgument, ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec,
                              SymBoolArgument, SymFloatArgument, SymIntArgument, TensorArgument)


def _check_export_args(mod, args):
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got {type(mod)}.")
    from ..jit import ScriptModule
    if isinstance(mod, ScriptModule):
        raise ValueError("Exporting a ScriptModule is not supported. Maybe try converting your ScriptModule to an "
                         "ExportedProgram using `TS2EPConverter(mod, args, kwargs).convert()` instead.")
    if not isinstance(args, tuple):
        raise UserError(f"Expecting `args` to be a tuple of example positional inputs, got {type(args)}")


def _arg_of(path, params):
    """The forward parameter a flattened input belongs to, and its key path inside it."""
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var_pos = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
    var_kw = next((p.name for p in params if p.kind == p.VAR_KEYWORD), None)
    side, key, rest = path[0].idx, path[1], tuple(path[2:])
    if side == 0:
        if key.idx < len(positional):
            return positional[key.idx], rest
        return var_pos or "args", (pytree.SequenceKey(key.idx - len(positional)),) + rest
    if any(p.name == key.key and p.kind != p.VAR_KEYWORD for p in params):
        return key.key, rest
    return var_kw or "kwargs", (pytree.MappingKey(key.key),) + rest


def forward_arg_names(params, args, kwargs):
    """Names of the example's positional arguments, then its keyword arguments (torch's
    ModuleCallSignature.forward_arg_names)."""
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var_pos = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "args")
    names = [positional[i] if i < len(positional) else f"{var_pos}_{i - len(positional)}" for i in range(len(args))]
    return names + list(kwargs)


class _StateGuard:
    """Export must leave the module as it found it: buffers updated in place while tracing
    (batch norm statistics, counters) are restored, and so is the random generator state
    (dropout in training mode draws while tracing)."""

    def __init__(self, mod):
        import kindle
        self._kindle = kindle
        self.mod = mod

    def __enter__(self):
        self.buffers = [(m, dict(m._buffers)) for m in self.mod.modules()]
        with no_grad():
            self.values = [(b, b.clone()) for _, bufs in self.buffers for b in bufs.values() if b is not None]
        self.rng = self._kindle.get_rng_state()
        return self

    def __exit__(self, *exc):
        for m, bufs in self.buffers:
            m._buffers.clear()
            m._buffers.update(bufs)
        with no_grad():
            for b, saved in self.values:
                b.copy_(saved)
        self._kindle.set_rng_state(self.rng)
        return False


def _lift(graph, mod, tracer, before=None):
    """Parameters, buffers and constant tensors become placeholders in front of the user
    inputs (torch's order), and the specs saying what each is."""
    first = before if before is not None else next(iter(graph.nodes))
    get_attrs = [n for n in graph.nodes if n.op == "get_attr"]
    by_target, specs, state_dict, constants = {}, [], {}, {}

    def add(prefix, target, value, kind, persistent=None):
        node = graph.placeholder(prefix + target.replace(".", "_"))
        record_meta(node, value)
        by_target[target] = node
        specs.append(InputSpec(kind, TensorArgument(node.name), target, persistent))

    with graph.inserting_before(first):
        for fqn, p in mod.named_parameters(remove_duplicate=False):  # tied weights: one input per name, as torch
            add("p_", fqn, p, InputKind.PARAMETER)
            state_dict[fqn] = p
        for fqn, b in mod.named_buffers(remove_duplicate=False):
            owner, _, name = fqn.rpartition(".")
            persistent = name not in mod.get_submodule(owner)._non_persistent_buffers_set
            add("b_", fqn, b, InputKind.BUFFER, persistent)
            (state_dict if persistent else constants)[fqn] = b
        for n in get_attrs:
            if n.target in by_target:
                continue
            value = tracer.constants.get(n.target)
            if value is None:
                value = mod
                for atom in n.target.split("."):
                    value = getattr(value, atom)
            if not isinstance(value, _C.Tensor):
                raise UserError(f"export: the traced code uses {n.target} (a {type(value).__name__}) as a value; "
                                "only tensors can be graph constants")
            add("c_", n.target, value, InputKind.CONSTANT_TENSOR)
            constants[n.target] = value
    for n in get_attrs:
        n.replace_all_uses_with(by_target[n.target])
        graph.erase_node(n)
    return specs, state_dict, constants


def _output_specs(graph):
    out = []
    for x in next(n for n in graph.nodes if n.op == "output").args[0]:
        if not hasattr(x, "op"):
            out.append(OutputSpec(OutputKind.USER_OUTPUT, ConstantArgument("", x), None))
            continue
        val = x.meta.get("val")
        arg = TensorArgument if isinstance(val, TensorMeta) or val is None else \
            SymBoolArgument if isinstance(val, bool) else SymFloatArgument if isinstance(val, float) else \
            SymIntArgument if isinstance(val, int) else TensorArgument
        out.append(OutputSpec(OutputKind.USER_OUTPUT, arg(x.name), None))
    return out


def remove_guards(graph):
    import kindle
    for n in list(graph.nodes):
        if n.op == "call_function" and n.target is kindle._assert:
            graph.erase_node(n)
    graph.eliminate_dead_code(is_impure_node=is_impure)


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False, preserve_module_call_signature=(),
           prefer_deferred_runtime_asserts_over_guards=False):
    """Records mod's forward on the example args/kwargs as an ExportedProgram (see the package
    docstring for what Kindle does differently from torch.export)."""
    from ._probe import probe
    from .exported_program import ExportedProgram, ModuleCallEntry, ModuleCallSignature
    _check_export_args(mod, args)
    kwargs = dict(kwargs or {})
    if isinstance(dynamic_shapes, (ShapesCollection, AdditionalInputs)):
        dynamic_shapes = dynamic_shapes.dynamic_shapes(mod, args, kwargs)
    params = list(inspect.signature(mod.forward).parameters.values())
    try:
        combined = dict(inspect.signature(mod.forward).bind(*args, **kwargs).arguments)
    except TypeError as e:
        raise UserError(f"export: the example inputs do not match {type(mod).__name__}.forward's signature: {e}") from e
    flat_with_path, in_spec = pytree.tree_flatten_with_path((args, kwargs))
    leaves = [InputLeaf(*_arg_of(path, params), value) for path, value in flat_with_path]
    shapes, roots = plan(leaves, list(combined), combined, dynamic_shapes)

    with no_grad():
        values = [v.detach().clone() if isinstance(v, _C.Tensor) else v for _, v in flat_with_path]
    tracer = ExportTracer(guard_sizes=bool(roots))
    with _StateGuard(mod), no_grad():
        graph, out_spec = tracer.run(mod, leaves, values, in_spec.unflatten)
    graph.eliminate_dead_code(is_impure_node=is_impure)
    specs, state_dict, constants = _lift(graph, mod, tracer)
    user_nodes = [n for n in graph.nodes if n.op == "placeholder"][len(specs):]
    for leaf, node in zip(leaves, user_nodes):
        is_tensor = isinstance(leaf.value, _C.Tensor)
        arg = TensorArgument(node.name) if is_tensor else ConstantArgument(node.name, leaf.value)
        specs.append(InputSpec(InputKind.USER_INPUT, arg, None))
    signature = ExportGraphSignature(specs, _output_specs(graph))

    if roots:
        with _StateGuard(mod):
            probe(graph, signature, state_dict, constants, leaves, shapes, roots)
        if not roots:
            remove_guards(graph)
    for node, shape, leaf in zip(user_nodes, shapes, leaves):
        if shape is not None:
            node.meta["val"] = TensorMeta(shape, leaf.value.dtype, leaf.value.device, leaf.value.requires_grad)

    called = []
    for n in graph.nodes:
        for fqn, _ in n.meta.get("nn_module_stack", {}).values():
            if fqn not in called:
                called.append(fqn)
    preserved = set(preserve_module_call_signature)
    call_graph = [ModuleCallEntry("", ModuleCallSignature([], [], in_spec, out_spec,
                                                          forward_arg_names(params, args, kwargs)))]
    call_graph += [ModuleCallEntry(fqn, ModuleCallSignature([], [], None, None) if fqn in preserved else None)
                   for fqn in called]
    gm = GraphModule({}, graph, "GraphModule")
    return ExportedProgram(gm, graph, signature, state_dict, range_constraints(roots), call_graph,
                           (args, kwargs), constants)
