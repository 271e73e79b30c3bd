"""fx.Interpreter runs a GraphModule node by node (override a method to change what one kind
of node does); fx.Transformer reruns it on Proxies to build a new, edited GraphModule."""
import inspect

from .graph import Graph
from .graph_module import GraphModule
from .node import map_aggregate, map_arg
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Executes module.graph on concrete values. run(*args) returns what the graph's output
    returns; each node goes through run_node, which dispatches on its opcode to placeholder,
    get_attr, call_function, call_method, call_module or output."""

    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.graph = graph if graph is not None else module.graph
        self.submodules = dict(module.named_modules())
        self.env = {}
        self.garbage_collect_values = garbage_collect_values
        self.user_to_last_uses = {}
        if garbage_collect_values:
            seen = set()
            for node in reversed(self.graph.nodes):
                for inp in node.all_input_nodes:
                    if inp not in seen:
                        seen.add(inp)
                        self.user_to_last_uses.setdefault(node, []).append(inp)

    def run(self, *args, initial_env=None, enable_io_processing=True):
        self.env = dict(initial_env or {})
        self.args_iter = iter(args)
        output = None
        for node in self.graph.nodes:
            if node in self.env:
                continue  # supplied by initial_env
            self.env[node] = self.run_node(node)
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, ()):
                    self.env.pop(dead, None)
            if node.op == "output":
                output = self.env[node]
        return output

    def run_node(self, n):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def placeholder(self, target, args, kwargs):
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed in!")

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    def fetch_attr(self, target):
        obj = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target.split('.')[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        def load(node):
            if node not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {node}! Run Graph.lint() to diagnose "
                                   "such issues")
            return self.env[node]
        return map_arg(args, load)


class Transformer(Interpreter):
    """Reruns the graph on Proxies of a fresh Graph; override call_function etc. to emit
    different nodes, then transform() returns the new GraphModule."""

    def __init__(self, module):
        super().__init__(module, garbage_collect_values=False)
        from ._symbolic_trace import Tracer
        self.new_graph = Graph()
        self.tracer = Tracer()
        self.tracer.graph = self.new_graph
        self.tracer.root = module
        self.tracer._collect_tensor_attrs(module)

    def placeholder(self, target, args, kwargs):
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def transform(self):
        result = super().run()
        if result is not None:
            self.new_graph.output(map_aggregate(result, lambda x: x.node if isinstance(x, Proxy) else x))
        return GraphModule(self.module, self.new_graph, type(self.module).__name__)
