"""SummaryWriter.add_onnx_graph: an ONNX model file as TensorBoard's GraphDef.

Reading the file needs the `onnx` package; without it this raises ModuleNotFoundError, as
torch's does. The graph's inputs and outputs become "Variable" nodes with their dtype and
shape, every operation a node named by its first output, typed by its op, with its
attributes printed into a "parameters" string (torch's layout).
"""
from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

__all__ = ["load_onnx_graph", "parse"]


def load_onnx_graph(fname):
    import onnx  # torch imports it here too: a ModuleNotFoundError names the missing package
    return parse(onnx.load(fname).graph)


def parse(graph):
    """GraphDef of an onnx GraphProto."""
    nodes = []
    for value in [*graph.input, *graph.output]:
        tensor_type = value.type.tensor_type
        shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d.dim_value) for d in tensor_type.shape.dim])
        nodes.append(NodeDef(name=value.name, op="Variable",
                             attr={"dtype": AttrValue(type=tensor_type.elem_type), "shape": AttrValue(shape=shape)}))
    for node in graph.node:
        params = ", ".join(" = ".join(str(field[1]) for field in a.ListFields()) for a in node.attribute)
        nodes.append(NodeDef(name=node.output[0], op=node.op_type, input=node.input,
                             attr={"parameters": AttrValue(s=params.encode("utf8"))}))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
