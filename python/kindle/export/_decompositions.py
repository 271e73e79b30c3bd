"""run_decompositions(): the graph replayed through the export tracer, with some calls
replaced by what a decomposition function does with them.

torch decomposes ATen ops into its core ATen set; Kindle's graphs hold Kindle calls, so
default_decompositions() maps a few composite nn.functional calls to the simpler Kindle ops
that compute them, and Tensor method calls with a same-named kindle function become that
function. A decomposition is called with the traced values of the call's arguments; whatever
Kindle operations it performs are recorded in the node's place (returning NotImplemented keeps
the original call). The replay runs on the program's example inputs.
"""
from .. import _C
from ..autograd.grad_mode import no_grad
from ..fx.graph_module import GraphModule
from ..fx.node import map_arg
from ..nn.modules.module import Module
from ..utils import _pytree as pytree
from ._export import _output_specs, _lift
from ._shapes import TensorMeta
from ._trace import ExportTracer, is_impure
from .dynamic_shapes import _Symbol
from .graph_signature import ExportGraphSignature, InputKind, InputSpec

__all__ = ["CustomDecompTable", "default_decompositions", "run_decompositions"]


class CustomDecompTable(dict):
    """The decomposition table: {kindle function: decomposition}."""

    def copy(self):
        return CustomDecompTable(self)

    def materialize(self):
        return dict(self)


def _linear(input, weight, bias=None):  # noqa: A002
    out = input.matmul(weight.t())
    return out if bias is None else out + bias


def _silu(input, inplace=False):  # noqa: A002
    import kindle
    return NotImplemented if inplace else input * kindle.sigmoid(input)


def _relu6(input, inplace=False):  # noqa: A002
    return NotImplemented if inplace else input.clamp(0, 6)


def _hardsigmoid(input, inplace=False):  # noqa: A002
    return NotImplemented if inplace else (input + 3).clamp(0, 6) / 6


def _hardswish(input, inplace=False):  # noqa: A002
    return NotImplemented if inplace else input * ((input + 3).clamp(0, 6) / 6)


def _mish(input, inplace=False):  # noqa: A002
    import kindle
    import kindle.nn.functional as F
    return NotImplemented if inplace else input * kindle.tanh(F.softplus(input))


def _dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return NotImplemented if training or inplace else input


# Tensor methods whose kindle function of the same name takes (tensor, *same arguments).
_METHODS = ("relu", "sigmoid", "tanh", "exp", "log", "abs", "neg", "sqrt", "rsqrt", "sin", "cos", "softmax",
            "log_softmax", "flatten", "transpose", "matmul", "mm", "bmm", "add", "sub", "mul", "div", "sum", "mean",
            "amax", "amin", "clamp", "pow", "unsqueeze", "squeeze", "t", "erf", "reciprocal", "square")


def default_decompositions():
    """The table run_decompositions() uses when given none."""
    import kindle
    import kindle.nn.functional as F
    table = CustomDecompTable({F.linear: _linear, F.silu: _silu, F.relu6: _relu6, F.hardsigmoid: _hardsigmoid,
                               F.hardswish: _hardswish, F.mish: _mish, F.dropout: _dropout})
    for name in _METHODS:
        fn = getattr(kindle, name, None)
        if callable(fn) and not isinstance(fn, type):
            table[f"Tensor.{name}"] = fn
    return table


class _Replay(Module):
    """Runs the program's graph node by node under the tracer, applying the table."""

    def __init__(self, graph, table, tracer):
        super().__init__()
        self._graph, self._table, self._tracer = graph, table, tracer

    def forward(self, *flat):
        env, it, tracer = {}, iter(flat), self._tracer
        for n in self._graph.nodes:
            if n.op == "placeholder":
                env[n] = next(it)
                continue
            args, kwargs = map_arg(n.args, env.__getitem__), map_arg(n.kwargs, env.__getitem__)
            if n.op == "output":
                return tuple(args[0])
            result = NotImplemented
            if n.op == "call_function" and n.target in self._table:
                result = self._table[n.target](*args, **kwargs)
            elif n.op == "call_method" and f"Tensor.{n.target}" in self._table:
                result = tracer.create_proxy("call_function", self._table[f"Tensor.{n.target}"], args, kwargs)
            if result is NotImplemented:
                result = tracer.create_proxy(n.op, n.target, args, kwargs)
            env[n] = result
        return ()


class _Slot:
    def __init__(self, name):
        self.name = self.pretty = name


def _example_values(ep, placeholders):
    """Values for every placeholder: the program's state, then its example inputs (or, without
    them, zeros of the recorded shapes)."""
    values, user = [], []
    for node, spec in zip(placeholders, ep.graph_signature.input_specs):
        if spec.kind == InputKind.USER_INPUT:
            user.append((node, spec))
        else:
            values.append(ep.state_dict[spec.target] if spec.target in ep.state_dict else ep.constants[spec.target])
    if ep.example_inputs is not None:
        return values + [v.detach().clone() if isinstance(v, _C.Tensor) else v
                         for v in pytree.tree_leaves(ep.example_inputs)]
    import kindle
    lows = {str(k): max(v.lower, 2) for k, v in ep.range_constraints.items()}
    for node, spec in user:
        meta = node.meta.get("val")
        if not isinstance(meta, TensorMeta):
            values.append(getattr(spec.arg, "value", None))
            continue
        shape = [s.eval(lows.get(s.root, 2)) if isinstance(s, _Symbol) else s for s in meta.shape]
        values.append(kindle.zeros(shape, dtype=meta.dtype))
    return values


def run_decompositions(ep, decomp_table=None):
    from .exported_program import ExportedProgram
    table = default_decompositions() if decomp_table is None else dict(decomp_table)
    if isinstance(table, CustomDecompTable):
        table = table.materialize()
    graph = ep.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    values = _example_values(ep, placeholders)
    slots = [_Slot(n.name) for n in placeholders]
    has_guards = any(n.op == "call_function" and getattr(n.target, "__name__", "") == "_assert" for n in graph.nodes)
    tracer = ExportTracer(guard_sizes=has_guards)
    replay = _Replay(graph, table, tracer)
    fns = [f for f in table.values() if callable(f) and hasattr(f, "__globals__")]
    with no_grad():
        new_graph, _ = tracer.run(replay, slots, values, lambda flat: (tuple(flat), {}), extra_fns=fns)
    new_graph.eliminate_dead_code(is_impure_node=is_impure)
    for old, new in zip(placeholders, (n for n in new_graph.nodes if n.op == "placeholder")):
        new.meta = dict(old.meta)
    specs = [InputSpec(s.kind, type(s.arg)(**vars(s.arg)), s.target, s.persistent)
             for s in ep.graph_signature.input_specs]
    constants = dict(ep.constants)
    if any(n.op == "get_attr" for n in new_graph.nodes):  # tensors a decomposition made
        n_state = sum(1 for s in specs if s.kind != InputKind.USER_INPUT)
        before = list(new_graph.nodes)[n_state]  # placeholders come first: the first user input, or the body
        extra, _, new_constants = _lift(new_graph, Module(), tracer, before=before)
        specs[n_state:n_state] = extra
        constants.update(new_constants)
    signature = ExportGraphSignature(specs, _output_specs(new_graph))
    return ExportedProgram(GraphModule({}, new_graph, "GraphModule"), new_graph, signature, dict(ep.state_dict),
                           dict(ep.range_constraints), ep.module_call_graph, ep.example_inputs, constants)

