"""fx.Graph: a doubly linked list of Nodes, with torch.fx's construction, editing and printing
API, and the code generator that turns a graph back into a Python `forward`."""
import builtins
import copy
import inspect
import keyword
import math
import operator
import re
import sys

from .node import Node, _format_arg, _qualified_name, map_arg

__all__ = ["Graph", "PythonCode"]

# Names no node may take: keywords, builtins, and the globals the generated code relies on.
_RESERVED = set(keyword.kwlist) | set(dir(builtins)) | {"self", "kindle", "operator", "math", "inf", "nan",
                                                         "device", "NoneType"}

# operator functions that the generated code writes as Python syntax.
_INFIX = {
    operator.add: "{} + {}", operator.sub: "{} - {}", operator.mul: "{} * {}", operator.truediv: "{} / {}",
    operator.floordiv: "{} // {}", operator.mod: "{} % {}", operator.pow: "{} ** {}",
    operator.matmul: "{} @ {}", operator.lshift: "{} << {}", operator.rshift: "{} >> {}",
    operator.and_: "{} & {}", operator.or_: "{} | {}", operator.xor: "{} ^ {}",
    operator.eq: "{} == {}", operator.ne: "{} != {}", operator.lt: "{} < {}", operator.le: "{} <= {}",
    operator.gt: "{} > {}", operator.ge: "{} >= {}", operator.getitem: "{}[{}]",
    operator.neg: "-{}", operator.pos: "+{}", operator.invert: "~{}",
}


class _NodeList:
    """graph.nodes: iterates the linked list; erasing the current node during a loop is safe."""

    def __init__(self, graph, reverse=False):
        self._graph = graph
        self._reverse = reverse

    def __len__(self):
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        cur = root._prev if self._reverse else root._next
        while cur is not root:
            nxt = cur._prev if self._reverse else cur._next
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return iter(_NodeList(self._graph, not self._reverse))

    def __repr__(self):
        return f"[{', '.join(n.name for n in self)}]"


class _InsertPoint:
    """Sets where create_node inserts; as a context manager it restores the previous point."""

    def __init__(self, graph, insert):
        self._graph = graph
        self._previous = graph._insert
        graph._insert = insert

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._graph._insert = self._previous


class PythonCode:
    """Graph.python_code's result: the source of `forward` and the globals it runs with."""

    def __init__(self, src, globals_):
        self.src = src
        self.globals = globals_


def _snake_case(s):
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", s).lower()


class Graph:
    """The nodes of one traced function, in execution order. Build one with placeholder(),
    get_attr(), call_function(), call_method(), call_module() and output(), or get one from
    kindle.fx.symbolic_trace; GraphModule turns it into runnable code."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._insert = self._root.prepend
        self._used_names = set()
        self._base_count = {}
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras

    @property
    def nodes(self):
        return _NodeList(self)

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    def find_nodes(self, *, op, target=None, sort=True):
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ---- names

    def _create_name(self, candidate):
        candidate = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate)
        if not candidate or candidate[0].isdigit():
            candidate = "_" + candidate
        if candidate not in self._used_names and candidate not in _RESERVED:
            self._used_names.add(candidate)
            return candidate
        m = re.fullmatch(r"(.*)_(\d+)", candidate)
        base = m.group(1) if m else candidate
        n = self._base_count.get(base, 0) + 1
        while f"{base}_{n}" in self._used_names:
            n += 1
        self._base_count[base] = n
        name = f"{base}_{n}"
        self._used_names.add(name)
        return name

    def _target_to_name(self, op, target):
        if op in ("call_module", "get_attr", "call_method", "placeholder"):
            return target.lstrip("*")
        if op == "output":
            return "output"
        return _snake_case(getattr(target, "__name__", None) or type(target).__name__)

    # ---- building

    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """Makes a node and inserts it at the current insertion point (the end by default)."""
        args = () if args is None else tuple(args)
        kwargs = {} if kwargs is None else dict(kwargs)
        name = self._create_name(name if name is not None else self._target_to_name(op, target))
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def inserting_before(self, n=None):
        """New nodes go just before n (n=None: at the start of the graph)."""
        if n is None:
            return self.inserting_after(self._root)
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n=None):
        """New nodes go just after n, each one right after n as torch.fx does (so two nodes made
        in one block end up in reverse order); n=None: at the end of the graph."""
        if n is None:
            return self.inserting_before(self._root)
        return _InsertPoint(self, n.append)

    def erase_node(self, to_erase):
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} users in "
                               f"the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._unlink()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})  # drop its uses of its inputs

    def node_copy(self, node, arg_transform=lambda x: x):
        """Copies a node of another graph into this one; arg_transform maps its input nodes."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        name = node.name if node.name not in self._used_names else None
        result = self.create_node(node.op, node.target, args, kwargs, name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g, val_map, return_output_node=False):
        """Copies every node of g but its output into this graph; returns what g's output returns,
        expressed in this graph's nodes."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo):
        g = Graph(tracer_cls=self._tracer_cls)
        memo[id(self)] = g
        out = g.graph_copy(self, {}, return_output_node=True)
        if out is not None:
            g.output(out[0], type_expr=out[1].type)
        return g

    # ---- checking and cleaning

    def lint(self):
        """Checks the graph's invariants: unique names, inputs defined before use, bookkeeping in
        step, call_module/get_attr targets present in the owning module."""
        seen, names = set(), set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            names.add(node.name)
            for arg in node.all_input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to this Graph, but was "
                                       "used as an argument! If you are copying nodes from another graph, make sure "
                                       "to use ``arg_transform`` on node_copy() to remap values")
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it has been defined! "
                                       "Please check that Nodes in the graph are topologically ordered")
                if node not in arg.users:
                    raise RuntimeError(f"Node '{node}' reads '{arg}' but is not among its users")
            seen.add(node)
        mod = self._owning_module
        if mod is None:
            return
        for node in self.nodes:
            if node.op not in ("get_attr", "call_module"):
                continue
            atoms, obj = node.target.split("."), mod
            for i, atom in enumerate(atoms):
                if not hasattr(obj, atom):
                    raise RuntimeError(f"Node {node} target {node.target} references nonexistent attribute "
                                       f"{atom} of {'.'.join(atoms[:i]) or 'the root module'}")
                obj = getattr(obj, atom)
            if node.op == "call_module" and not callable(obj):
                raise RuntimeError(f"Node {node} target {node.target} {atoms[-1]} of {mod} is not a Module")

    def eliminate_dead_code(self, is_impure_node=None):
        """Erases nodes whose value nobody reads and that have no side effect; returns whether
        anything changed."""
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not impure(node):
                self.erase_node(node)
                changed = True
        return changed

    # ---- printing

    def __str__(self):
        lines = ["graph():"]
        lines += ["    " + n.format_node() for n in self.nodes]
        return "\n".join(lines)

    __repr__ = __str__

    def print_tabular(self):
        """Prints the nodes as a table (opcode, name, target, args, kwargs)."""
        rows = [[n.op, n.name, str(n._pretty_target()), _format_arg(n.args, ""), _format_arg(n.kwargs, "")]
                for n in self.nodes]
        header = ["opcode", "name", "target", "args", "kwargs"]
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(5)]
        fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
        print("\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]))

    # ---- code generation

    def python_code(self, root_module, *, verbose=None):
        """The Python source of `def forward(<root_module>, ...)` that runs this graph, and its
        globals."""
        return _CodeGen(self, root_module).generate()


def _resolve_dotted(qualified):
    """The object a dotted name reaches through already-imported modules, or None."""
    parts = qualified.split(".")
    for i in range(len(parts), 0, -1):
        mod = sys.modules.get(".".join(parts[:i]))
        if mod is None:
            continue
        obj = mod
        try:
            for p in parts[i:]:
                obj = getattr(obj, p)
        except AttributeError:
            return None
        return obj
    return None


class _CodeGen:
    """Writes one statement per node; a value is set to None after its last use, as torch.fx
    does, so intermediate tensors are freed as early as in eager code."""

    def __init__(self, graph, root_module):
        self.graph = graph
        self.root = root_module
        self.globals = {}
        self.used = {n.name for n in graph.nodes} | {root_module}

    def add_global(self, hint, obj):
        for name, value in self.globals.items():
            if value is obj:
                return name
        name = re.sub(r"[^0-9a-zA-Z_]+", "_", hint) or "_global"
        if name[0].isdigit() or keyword.iskeyword(name):
            name = "_" + name
        base, i = name, 0
        while name in self.used or (name in self.globals and self.globals[name] is not obj) or \
                (hasattr(builtins, name) and getattr(builtins, name) is not obj):
            i += 1
            name = f"{base}_{i}"
        self.globals[name] = obj
        self.used.add(name)
        return name

    def callable_expr(self, fn):
        name = getattr(fn, "__name__", None)
        if name is not None and getattr(builtins, name, None) is fn:
            return name
        qualified = _qualified_name(fn)
        top = qualified.split(".")[0]
        if top in ("kindle", "operator", "math") and _resolve_dotted(qualified) is fn:
            return self.add_global(top, sys.modules[top]) + qualified[len(top):]
        module = getattr(fn, "__module__", None)
        return self.add_global(f"{module}_{name}" if module and name else name or "_callable", fn)

    def expr(self, a):
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple):
            items = [self.expr(x) for x in a]
            if hasattr(a, "_fields"):  # a namedtuple: rebuild the type
                return f"{self.add_global(type(a).__name__, type(a))}({', '.join(items)})"
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if isinstance(a, list):
            return "[" + ", ".join(self.expr(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{self.expr(k)}: {self.expr(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.expr(a.start)}, {self.expr(a.stop)}, {self.expr(a.step)})"
        if a is None or a is Ellipsis or isinstance(a, (bool, int, str, bytes)):
            return repr(a)
        if isinstance(a, float):
            if math.isnan(a):
                return self.add_global("nan", math.nan)
            if math.isinf(a):
                return ("-" if a < 0 else "") + self.add_global("inf", math.inf)
            return repr(a)
        if isinstance(a, complex):
            return f"complex({self.expr(a.real)}, {self.expr(a.imag)})"
        if isinstance(a, range):
            return f"range({a.start}, {a.stop}, {a.step})"
        import kindle
        if isinstance(a, kindle.dtype):
            return self.add_global("kindle", kindle) + "." + str(a).split(".")[-1]
        if isinstance(a, kindle.device):
            return f"{self.add_global('device', kindle.device)}({str(a)!r})"
        if callable(a):
            return self.callable_expr(a)
        return self.add_global(_snake_case(type(a).__name__), a)

    def attr_path(self, target):
        out = self.root
        for atom in target.split("."):
            out = f"{out}.{atom}" if atom.isidentifier() and not keyword.iskeyword(atom) \
                else f'getattr({out}, "{atom}")'
        return out

    def call_args(self, args, kwargs):
        parts = [self.expr(a) for a in args] + [f"{k} = {self.expr(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def statement(self, node):
        op, target, args, kwargs = node.op, node.target, node.args, node.kwargs
        if op == "placeholder":
            return None
        if op == "get_attr":
            return f"{node.name} = {self.attr_path(target)}"
        if op == "call_module":
            return f"{node.name} = {self.attr_path(target)}({self.call_args(args, kwargs)})"
        if op == "call_method":
            return f"{node.name} = {self.expr(args[0])}.{target}({self.call_args(args[1:], kwargs)})"
        if op == "call_function":
            fmt = _INFIX.get(target) if isinstance(target, type(operator.add)) else None
            if fmt is not None and not kwargs and fmt.count("{}") == len(args):
                return f"{node.name} = {fmt.format(*(self.expr(a) for a in args))}"
            if target is getattr and len(args) == 2 and not kwargs and isinstance(args[1], str) \
                    and args[1].isidentifier() and not keyword.iskeyword(args[1]):
                return f"{node.name} = {self.expr(args[0])}.{args[1]}"
            return f"{node.name} = {self.callable_expr(target)}({self.call_args(args, kwargs)})"
        if op == "output":
            return f"return {self.expr(args[0])}"
        raise RuntimeError(f"python_code: node {node} has unknown opcode {op}")

    def generate(self):
        nodes = list(self.graph.nodes)
        last_use = {}
        for node in nodes:
            for inp in node.all_input_nodes:
                last_use[inp] = node
        params, body, param_names = [], [], set()
        node_names = {n.name for n in nodes}
        for node in nodes:
            if node.op == "placeholder":
                # The parameter keeps the traced function's name (target), as torch.fx's code
                # does, so keyword calls work: a node renamed because its name shadows a builtin
                # (`input` -> input_1) is bound from it first (`input_1 = input`).
                raw = node.target.lstrip("*")
                if not raw.isidentifier() or keyword.iskeyword(raw) or raw in param_names or raw == self.root or \
                        (raw != node.name and raw in node_names):
                    raw = node.name  # not usable as a parameter: the node's own name
                p = node.target[:len(node.target) - len(node.target.lstrip("*"))] + raw
                param_names.add(raw)
                self.used.add(raw)
                if node.args:
                    p += f" = {self.expr(node.args[0])}"
                params.append(p)
                if raw != node.name:
                    body.append(f"{node.name} = {raw}")
                continue
            stmt = self.statement(node)
            if node.op != "output":
                dead = [inp.name for inp in node.all_input_nodes if last_use.get(inp) is node]
                if not node.users:
                    dead.append(node.name)
                if dead:
                    stmt += ";  " + " = ".join(dead) + " = None"
            body.append(stmt)
        if not body:
            body.append("pass")
        src = f"\n\n\ndef forward({', '.join([self.root] + params)}):\n"
        src += "".join("    " + line + "\n" for line in body) + "    "
        return PythonCode(src, dict(self.globals))
