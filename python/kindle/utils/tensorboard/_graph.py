"""SummaryWriter.add_graph: a model's dataflow as TensorBoard's GraphDef.

The model is traced once with kindle.jit.trace's recorder (the example inputs run for real),
remembering which module each operation ran in. Every recorded operation becomes a node named
by its module scope, as torch's graphs are: "Net/Linear[fc1]/linear_1", with the op
("aten::linear", "aten::add", ...), its inputs and its output's shape; model inputs and
outputs are "IO Node"s, and a leaf module's parameters are prim::GetAttr nodes inside its scope.
"""
import re
import warnings

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from ... import _C
from ...autograd.grad_mode import no_grad
from ...fx.node import Node, map_aggregate
from ...jit._trace import TracerWarning, _ConcreteTracer
from ...nn.modules.module import Module

# module classes whose op name is not their lower-cased class name
_MODULE_OPS = {"BatchNorm1d": "batch_norm", "BatchNorm2d": "batch_norm", "BatchNorm3d": "batch_norm",
               "LayerNorm": "layer_norm", "GroupNorm": "group_norm", "Embedding": "embedding",
               "MultiheadAttention": "multi_head_attention_forward", "MaxPool2d": "max_pool2d",
               "AvgPool2d": "avg_pool2d", "AdaptiveAvgPool2d": "adaptive_avg_pool2d", "Dropout": "dropout",
               "CrossEntropyLoss": "cross_entropy_loss", "Flatten": "flatten", "Identity": "identity"}


class _ScopedTracer(_ConcreteTracer):
    """jit.trace's recorder, which also notes each node's module scope and value."""

    def __init__(self):
        super().__init__()
        self.scope = []

    def call_module(self, m, forward, args, kwargs):
        path = self.path_of_module(m)
        self.scope.append(f"{type(m).__name__}[{path.rsplit('.', 1)[-1]}]")
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.scope.pop()

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr, proxy_factory_fn)
        proxy.node.meta["scope"] = "/".join(self.scope)
        proxy.node.meta["value"] = proxy.value
        return proxy


def _shapes(value):
    shapes = []
    map_aggregate(value, lambda v: shapes.append(v.shape) if isinstance(v, _C.Tensor) else None)
    return AttrValue(list=AttrValue.ListValue(shape=[
        TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(s)) for s in shape]) for shape in shapes]))


def _op_name(node, root):
    if node.op == "call_module":
        cls = type(root.get_submodule(node.target)).__name__
        return "aten::" + _MODULE_OPS.get(cls, cls.lower())
    if node.op == "call_method":
        return "aten::" + node.target
    name = getattr(node.target, "__name__", str(node.target))
    return "aten::" + {"getitem": "__getitem__"}.get(name, re.sub(r"^_+", "", name))


def build_graph(model, example_inputs, verbose=False, use_strict_trace=True):
    """(GraphDef, RunMetadata) of model run on example_inputs (a tensor or a tuple of them)."""
    if not isinstance(model, Module):
        raise TypeError(f"add_graph: model should be an nn.Module, got {type(model).__name__}")
    if example_inputs is None:
        raise ValueError("add_graph: give input_to_model (a tensor or a tuple of tensors) to trace the model with")
    if isinstance(example_inputs, list):
        example_inputs = tuple(example_inputs)
    elif not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    tracer = _ScopedTracer()
    with warnings.catch_warnings(), no_grad():
        if not use_strict_trace:
            warnings.simplefilter("ignore", TracerWarning)
        graph = tracer.trace(model, (example_inputs, {}))
    graph.eliminate_dead_code()

    root = type(model).__name__
    names, nodes = {}, []  # fx node -> GraphDef node name; the GraphDef's nodes

    def scoped(node, leaf):
        parts = [root] + ([node.meta["scope"]] if node.meta.get("scope") else []) + [leaf]
        return "/".join(parts)

    def inputs_of(node):
        found = []
        map_aggregate((node.args, node.kwargs), lambda a: found.append(names[a]) if isinstance(a, Node) else None)
        return found

    for node in graph.nodes:
        value = node.meta.get("value")
        if node.op == "placeholder":
            names[node] = f"input/{node.target}"
            nodes.append(NodeDef(name=names[node], op="IO Node", attr={"_output_shapes": _shapes(value)}))
        elif node.op == "output":
            results = []
            map_aggregate(node.args, lambda a: results.append(a) if isinstance(a, Node) else None)
            for i, r in enumerate(results):
                nodes.append(NodeDef(name=f"output/output.{i + 1}", op="IO Node", input=[names[r]],
                                     attr={"_output_shapes": _shapes(r.meta.get("value"))}))
        elif node.op == "get_attr":
            names[node] = scoped(node, node.target.replace(".", "/"))
            nodes.append(NodeDef(name=names[node], op="prim::GetAttr", attr={"_output_shapes": _shapes(value)}))
        else:
            inputs = inputs_of(node)
            if node.op == "call_module":  # a leaf module: its parameters and buffers inside its scope
                mod = model.get_submodule(node.target)
                for pname, p in [*mod.named_parameters(recurse=False), *mod.named_buffers(recurse=False)]:
                    pnode = scoped(node, f"{pname}/{pname}")
                    nodes.append(NodeDef(name=pnode, op="prim::GetAttr", attr={"_output_shapes": _shapes(p)}))
                    inputs.append(pnode)
            names[node] = scoped(node, node.name)
            nodes.append(NodeDef(name=names[node], op=_op_name(node, model), input=inputs,
                                 attr={"_output_shapes": _shapes(value)}))
    if verbose:
        print(graph)
    stats = RunMetadata(step_stats=StepStats(dev_stats=[DeviceStepStats(device="/device:CPU:0")]))
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), stats

