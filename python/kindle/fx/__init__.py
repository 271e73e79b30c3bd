"""kindle.fx: symbolic tracing and graph rewriting with torch.fx's API.

symbolic_trace(module) runs forward on Proxies and records each operation as a Node of a
Graph; the GraphModule it returns holds the module's submodules and parameters and runs
Python code generated from the graph, which can be printed (gm.code, gm.graph), edited
(graph.inserting_after, node.replace_all_uses_with, graph.erase_node, then gm.recompile())
and rerun. How calls to kindle functions are recorded without __torch_function__ is explained
in Note [Recording calls to kindle functions] (_symbolic_trace.py).
"""
from ._symbolic_trace import Tracer, symbolic_trace, wrap
from .graph import Graph, PythonCode
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Attribute, Proxy, TraceError

__all__ = ["symbolic_trace", "Tracer", "Graph", "GraphModule", "Node", "Proxy", "Attribute", "TraceError", "wrap",
           "Interpreter", "Transformer", "PythonCode", "map_arg"]
