"""ExportedProgram: a lifted graph, the state it reads, and how to call it (torch.export's
class of that name), and .module(), which turns it back into a callable module."""
import copy
import dataclasses
from collections import namedtuple

from ..fx.graph import _CodeGen
from ..fx.graph_module import GraphModule
from ..nn.modules.module import Module
from ..utils import _pytree as pytree
from ._shapes import InputChecker, TensorMeta
from .dynamic_shapes import _Symbol
from .graph_signature import ConstantArgument, InputKind

__all__ = ["ExportedProgram", "ModuleCallEntry", "ModuleCallSignature"]

CallSpec = namedtuple("CallSpec", ["in_spec", "out_spec"])


@dataclasses.dataclass
class ModuleCallSignature:
    inputs: list
    outputs: list
    in_spec: object
    out_spec: object
    forward_arg_names: list = None

    def replace_all_uses_with(self, original_node, new_node):
        for arg in list(self.inputs) + list(self.outputs):
            if getattr(arg, "name", None) == original_node.name:
                arg.name = new_node.name


@dataclasses.dataclass
class ModuleCallEntry:
    fqn: str
    signature: ModuleCallSignature = None


class ExportedProgram:
    """What export() returns: graph_module runs the graph on [*parameters, *buffers, *constants,
    *flattened user inputs] (graph_signature says which is which), state_dict and constants
    hold those tensors, range_constraints the ranges of dynamic sizes. Call .module() to get a
    module that takes the original inputs."""

    def __init__(self, root, graph, graph_signature, state_dict, range_constraints, module_call_graph,
                 example_inputs=None, constants=None, *, verifiers=None):
        self._graph_module = GraphModule(root if isinstance(root, (Module, dict)) else {}, graph, "GraphModule")
        if isinstance(root, GraphModule):
            self._graph_module.meta.update(root.meta)
        self._graph_signature = graph_signature
        self._state_dict = state_dict
        self._range_constraints = range_constraints
        if module_call_graph is None:
            raise AssertionError("module_call_graph must not be None")
        self._module_call_graph = module_call_graph
        self._example_inputs = example_inputs
        self._constants = constants or {}
        self._verifiers = list(verifiers or [])
        self.validate()

    # ---- torch's accessors

    @property
    def graph_module(self):
        return self._graph_module

    @property
    def graph(self):
        return self._graph_module.graph

    @property
    def graph_signature(self):
        return self._graph_signature

    @property
    def state_dict(self):
        return self._state_dict

    @property
    def constants(self):
        return self._constants

    tensor_constants = constants

    @property
    def range_constraints(self):
        return self._range_constraints

    @property
    def module_call_graph(self):
        return self._module_call_graph

    @property
    def example_inputs(self):
        return self._example_inputs

    @example_inputs.setter
    def example_inputs(self, value):
        if value is not None and not (isinstance(value, tuple) and len(value) == 2
                                      and isinstance(value[0], tuple) and isinstance(value[1], dict)):
            raise ValueError("Example inputs should be a tuple containing example arguments (as a tuple), and "
                             "example kwargs (as a dictionary).")
        self._example_inputs = value

    @property
    def call_spec(self):
        sig = self._module_call_graph[0].signature if self._module_call_graph else None
        return CallSpec(None, None) if sig is None else CallSpec(sig.in_spec, sig.out_spec)

    @property
    def verifier(self):
        return self._verifiers[0] if self._verifiers else None

    @property
    def verifiers(self):
        return self._verifiers

    @property
    def dialect(self):
        return "ATEN"

    def parameters(self):
        for _, p in self.named_parameters():
            yield p

    def named_parameters(self):
        for name in self._graph_signature.parameters:
            yield name, self._state_dict[name]

    def buffers(self):
        for _, b in self.named_buffers():
            yield b

    def named_buffers(self):
        non_persistent = set(self._graph_signature.non_persistent_buffers)
        for name in self._graph_signature.buffers:
            yield name, (self._constants if name in non_persistent else self._state_dict)[name]

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use `exported_program.module()` "
                           "instead.")

    def __str__(self):
        code = _readable(self.graph).replace("\n", "\n    ")
        sig = str(self._graph_signature).replace("\n", "\n    ")
        return (f"ExportedProgram:\n    {code}\nGraph signature: {sig}\n"
                f"Range constraints: {self._range_constraints}\n")

    __repr__ = object.__repr__

    # ---- transformations

    def module(self, check_guards=True):
        """A GraphModule taking the original (args, kwargs): its parameters and buffers are
        this program's (shared, under their original names), inputs are checked against the
        exported shapes, outputs rebuilt in the original structure. As in torch, train() and
        eval() raise: the graph was recorded in one mode."""
        return _unlift(self, _ExportedModule, check_guards)

    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops=False):
        """A new program with the calls in decomp_table (default: default_decompositions())
        replaced by what their decompositions do; an empty table only copies."""
        from ._decompositions import run_decompositions
        return run_decompositions(self, decomp_table)

    def validate(self):
        """Checks that the graph and the signature agree and that the state they name exists."""
        self.graph.lint()
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        specs = self._graph_signature.input_specs
        if len(placeholders) != len(specs):
            raise ValueError(f"ExportedProgram: the graph has {len(placeholders)} inputs but the signature describes "
                             f"{len(specs)}")
        for node, spec in zip(placeholders, specs):
            if spec.arg.name != node.name:
                raise ValueError(f"ExportedProgram: input '{node.name}' is described as '{spec.arg.name}'")
            if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR) and \
                    spec.target not in self._state_dict and spec.target not in self._constants:
                raise ValueError(f"ExportedProgram: '{spec.target}' ({spec.kind.name}) is neither in state_dict nor in "
                                 "constants")
        outputs = next(n for n in self.graph.nodes if n.op == "output").args[0]
        if not isinstance(outputs, (tuple, list)) or len(outputs) != len(self._graph_signature.output_specs):
            raise ValueError("ExportedProgram: the graph's outputs and the signature's output specs differ")
        for v in self._verifiers:
            v().check(self)

    _validate = validate


# ---- .module()

def _flatten_like(tree, spec):
    """tree's leaves in spec's order; dict keys may come in another order, as torch's
    tree_flatten_spec allows. None when the structure differs."""
    def reorder(t, s):
        if s.is_leaf():
            return t
        if s.type in (dict, pytree.OrderedDict) and isinstance(t, dict) and set(t) == set(s.context):
            return type(t)((k, reorder(t[k], c)) for k, c in zip(s.context, s.children_specs))
        if s.type in (tuple, list) and type(t) is s.type and len(t) == s.num_children:
            return s.type(reorder(x, c) for x, c in zip(t, s.children_specs))
        return t
    leaves, got = pytree.tree_flatten(reorder(tree, spec))
    return (leaves, got) if got == spec else (None, got)


class _ExportedModule(GraphModule):
    """ep.module()'s class: forward(*args, **kwargs) binds the call to the exported calling
    convention, flattens and checks the inputs, runs the graph and rebuilds the outputs."""

    def recompile(self):
        code = super().recompile()
        cls = type(self)
        cls._flat_forward = cls.forward
        cls.forward = _forward
        return code

    def train(self, mode=True):
        raise NotImplementedError("Calling train() is not supported yet.")

    def eval(self):
        raise NotImplementedError("Calling eval() is not supported yet.")

    def _bind(self, args, kwargs):
        names, n_args = self._forward_arg_names, self._n_args
        keys = names[n_args:]
        if len(args) == n_args and set(kwargs) == set(keys):
            return tuple(args), {k: kwargs[k] for k in keys}
        # arguments passed by keyword that were positional at export time, or the reverse
        given = dict(zip(names, args))
        ok = len(args) <= len(names)
        for k, v in kwargs.items():
            ok = ok and k in names and k not in given
            given[k] = v
        if not ok or len(given) != len(names):
            if len(args) == n_args:
                raise ValueError(f"Ran into a kwarg keyword mismatch: Got the following keywords {list(kwargs)} but "
                                 f"expected {keys}")
            self._spec_mismatch(pytree.tree_structure((tuple(args), kwargs)))
        return tuple(given[n] for n in names[:n_args]), {k: given[k] for k in keys}

    def _spec_mismatch(self, got):
        raise ValueError(f"Trying to flatten user inputs with exported input tree spec: \n{self._in_spec}\nbut "
                         f"actually got inputs with tree spec of: \n{got}.\nPlease check that the inputs have the "
                         "same number and type of args and kwargs as the ones you used when tracing.")

    def _flat_inputs(self, args, kwargs):
        args, kwargs = self._bind(args, kwargs)
        flat, got = _flatten_like((args, kwargs), self._in_spec)
        if flat is None:
            self._spec_mismatch(got)
        if self._checker is not None:
            self._checker(flat)
        return flat

    def _check_inputs(self, args, kwargs):
        self._flat_inputs(args, kwargs)


def _forward(self, *args, **kwargs):
    flat = self._flat_inputs(args, kwargs)
    out = type(self)._flat_forward(self, *flat)
    return pytree.tree_unflatten(list(out), self._out_spec)


def _unlift(ep, cls, check_guards=True):
    """The program with its state read from attributes (under the original names) again."""
    graph = copy.deepcopy(ep.graph)
    root, hidden = {}, []
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    user = []
    for node, spec in zip(placeholders, ep.graph_signature.input_specs):
        if spec.kind == InputKind.USER_INPUT:
            user.append((node, spec))
            continue
        value = ep.state_dict[spec.target] if spec.target in ep.state_dict else ep.constants[spec.target]
        with graph.inserting_before(node):
            attr = graph.get_attr(spec.target)
        attr.meta = dict(node.meta)
        node.replace_all_uses_with(attr)
        graph.erase_node(node)
        root[spec.target] = value
        if spec.kind == InputKind.CONSTANT_TENSOR or spec.persistent is False:
            hidden.append(spec.target)
    m = cls(root, graph, "GraphModule" if cls is _ExportedModule else cls.__name__)
    for target in hidden:  # constants and non-persistent buffers stay out of state_dict, as in torch
        owner, _, name = target.rpartition(".")
        m.get_submodule(owner)._non_persistent_buffers_set.add(name)
    for entry in ep.module_call_graph[1:]:  # the original's submodule names, also those without state
        if entry.fqn and not _has_path(m, entry.fqn):
            _ensure_path(m, entry.fqn)
    sig = ep.module_call_graph[0].signature
    m._in_spec, m._out_spec = sig.in_spec, sig.out_spec
    m._n_args = sig.in_spec.children_specs[0].num_children
    m._forward_arg_names = list(sig.forward_arg_names or [])
    expected, pretty = [], _pretty_paths(sig)
    for node, spec in user:
        meta = node.meta.get("val")
        expected.append(("const", spec.arg.value) if isinstance(spec.arg, ConstantArgument) else
                        ("tensor", list(meta.shape) if isinstance(meta, TensorMeta) else []))
    m._checker = InputChecker(expected, pretty, ep.range_constraints) if check_guards else None
    return m


def _pretty_paths(sig):
    """'x', "d['a']": how messages name each flattened input."""
    names = list(sig.forward_arg_names or [])
    n_args = sig.in_spec.children_specs[0].num_children
    dummy = sig.in_spec.unflatten(range(sig.in_spec.num_leaves))
    out = []
    for path, _ in pytree.tree_flatten_with_path(dummy)[0]:
        side, key = path[0].idx, path[1]
        if side == 1:
            head = key.key
        else:
            head = names[key.idx] if key.idx < min(n_args, len(names)) else f"args[{key.idx}]"
        out.append(head + pytree.keystr(path[2:]))
    return out


def _has_path(m, fqn):
    try:
        m.get_submodule(fqn)
        return True
    except AttributeError:
        return False


def _ensure_path(m, fqn):
    for atom in fqn.split("."):
        sub = m._modules.get(atom)
        if sub is None:
            if hasattr(m, atom):
                return
            sub = Module()
            m.add_module(atom, sub)
        m = sub


# ---- printing

def _readable(graph):
    """The graph as torch prints an ExportedProgram: a forward with dtype[shape] annotations."""
    gen = _CodeGen(graph, "self")
    params, body = [], []
    for n in graph.nodes:
        meta = n.meta.get("val")
        note = f': "{meta.type_str()}"' if isinstance(meta, TensorMeta) else \
            f': "Sym({meta})"' if isinstance(meta, _Symbol) else ""
        if n.op == "placeholder":
            params.append(n.name + note)
        elif n.op == "output":
            body.append(gen.statement(n))
        else:
            stmt = gen.statement(n)
            body.append(n.name + note + stmt[len(n.name):])
    lines = ["class GraphModule(torch.nn.Module):", f"    def forward(self, {', '.join(params)}):"]
    lines += ["        " + line for line in body]
    return "\n".join(lines) + "\n        "
