"""save()/load() for ExportedPrograms, in Kindle's format.

The file is a kindle.save file holding data only, as kindle.jit.save writes: the graph as a
list of nodes, the signature, the state and constants (one table of tensors), the input and
output TreeSpecs as pytree's JSON, the dynamic sizes and the example inputs. Loading goes
through kindle.load(weights_only=True) and kindle.jit's decoder, which only builds calls to
Kindle's own operations, math, operator and a few builtins (a file asking for anything else is
refused with a ValueError), so loading a file never runs code it contains.
"""
import base64
import os
import sys

from .. import _C
from ..fx._symbolic_trace import _OP_NAMESPACES
from ..fx.graph_module import GraphModule
from ..fx.node import _qualified_name
from ..jit._serialization import _Decoder, _Encoder, _allowed_callable
from ..nn.parameter import Parameter
from ..utils import _pytree as pytree
from ._shapes import TensorMeta
from .dynamic_shapes import ValueRanges, _Symbol, int_oo
from .graph_signature import (ConstantArgument, CustomObjArgument, ExportGraphSignature, InputKind, InputSpec,
                              OutputKind, OutputSpec, SymBoolArgument, SymFloatArgument, SymIntArgument,
                              TensorArgument, TokenArgument)

_FORMAT = "kindle.export"
_VERSION = 1
_ARGS = {c.__name__: c for c in (TensorArgument, SymIntArgument, SymFloatArgument, SymBoolArgument,
                                  ConstantArgument, TokenArgument)}


class _ExportDecoder(_Decoder):
    """kindle.jit's decoder (which refuses anything but Kindle's own operations), with errors
    naming this loader."""

    def fail(self, what):
        raise ValueError(f"kindle.export.load: {self.name}: {what}")


def _callable_name(fn):
    """The name the decoder will accept for a call_function target: fx's qualified name (the
    public name for a function defined in a private module, kindle._assert), else the public
    namespace that holds the function."""
    qualified = _qualified_name(fn)
    if _allowed_callable(qualified) is fn:
        return qualified
    name = getattr(fn, "__name__", None)
    for ns in _OP_NAMESPACES:
        mod = sys.modules.get(ns)
        if name and mod is not None and getattr(mod, name, None) is fn and _allowed_callable(f"{ns}.{name}") is fn:
            return f"{ns}.{name}"
    raise TypeError(f"kindle.export.save: the graph calls {qualified}, which a saved program may not call (only "
                    "Kindle ops, math, operator and a few builtins: the file holds no code)")


def _shape_out(shape):
    return [["sym", s.root, s.coeff, s.offset] if isinstance(s, _Symbol) else int(s) for s in shape]


def _shape_in(entries, fail):
    out = []
    for s in entries:
        if isinstance(s, int) and not isinstance(s, bool):
            out.append(s)
        elif isinstance(s, list) and len(s) == 4 and s[0] == "sym" and isinstance(s[1], str) and \
                s[1].isidentifier() and all(type(x) is int for x in s[2:]):
            out.append(_Symbol(s[1], s[2], s[3]))
        else:
            fail(f"malformed shape entry {s!r}")
    return out


def _spec_out(spec):
    return None if spec is None else pytree.treespec_dumps(spec)


def _spec_in(text, fail):
    if text is None:
        return None
    try:
        return pytree.treespec_loads(text)
    except Exception as e:  # JSON or an unregistered type: the file is not one we can use
        fail(f"unreadable TreeSpec ({type(e).__name__}: {e})")


def _arg_out(enc, arg):
    if isinstance(arg, ConstantArgument):
        return ["ConstantArgument", arg.name, enc.value(arg.value, f"constant {arg.name}")]
    if isinstance(arg, CustomObjArgument):
        raise TypeError("kindle.export.save: custom objects cannot be saved")
    return [type(arg).__name__, arg.name]


def _arg_in(dec, e):
    if not isinstance(e, list) or not e or e[0] not in _ARGS or not isinstance(e[1], str):
        dec.fail(f"malformed argument {e!r}")
    if e[0] == "ConstantArgument":
        value = dec.value(e[2])
        if not (value is None or isinstance(value, (bool, int, float, str))):
            dec.fail("a constant argument must be None, a bool, an int, a float or a str")
        return ConstantArgument(e[1], value)
    return _ARGS[e[0]](e[1])


def save(ep, f, *, extra_files=None, opset_version=None, pickle_protocol=2):
    """Saves ep to f (a path or a binary file object); see the module docstring for the format."""
    import kindle
    from .exported_program import ExportedProgram
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"The 'ep' parameter must be an instance of 'ExportedProgram', got '{type(ep).__name__}' "
                        "instead.")
    enc = _Encoder()
    nodes, meta = [], {}
    for n in ep.graph.nodes:
        target = ["fn", _callable_name(n.target)] if n.op == "call_function" else n.target
        nodes.append([n.name, n.op, target, enc.value(n.args, f"node '{n.name}'"),
                      enc.value(n.kwargs, f"node '{n.name}'")])
        val = n.meta.get("val")
        if isinstance(val, TensorMeta):
            meta[n.name] = ["tensor", enc.value(val.dtype, n.name), _shape_out(val.shape), bool(val.requires_grad)]
        elif isinstance(val, _Symbol):
            meta[n.name] = ["symint", _shape_out([val])]
        elif val is None or isinstance(val, (bool, int, float, str)):
            meta[n.name] = ["value", enc.value(val, n.name)]
    sig = ep.graph_signature
    call_graph = []
    for entry in ep.module_call_graph:
        s = entry.signature
        call_graph.append([entry.fqn, None if s is None else
                           [_spec_out(s.in_spec), _spec_out(s.out_spec), list(s.forward_arg_names or [])]])
    example = None
    if ep.example_inputs is not None:
        leaves, spec = pytree.tree_flatten(ep.example_inputs)
        try:
            example = [pytree.treespec_dumps(spec), [enc.value(x, "example inputs") for x in leaves]]
        except (TypeError, NotImplementedError):
            example = None  # inputs of a type pytree cannot name: the program works without them
    extra = {str(k): v if isinstance(v, str) else {"base64": base64.b64encode(bytes(v)).decode("ascii")}
             for k, v in (extra_files or {}).items()}
    payload = {
        "format": _FORMAT,
        "version": _VERSION,
        "graph": nodes,
        "meta": meta,
        "input_specs": [[s.kind.name, _arg_out(enc, s.arg), s.target, s.persistent] for s in sig.input_specs],
        "output_specs": [[s.kind.name, _arg_out(enc, s.arg), s.target] for s in sig.output_specs],
        "state_dict": [[k, enc.tensor(v), isinstance(v, Parameter), bool(v.requires_grad)]
                       for k, v in ep.state_dict.items()],
        "constants": [[k, enc.tensor(v)] for k, v in ep.constants.items() if isinstance(v, _C.Tensor)],
        "range_constraints": [[k.root, k.coeff, k.offset, v.lower, None if v.upper is int_oo else v.upper]
                              for k, v in ep.range_constraints.items()],
        "module_call_graph": call_graph,
        "example_inputs": example,
        "tensors": enc.tensors,
        "extra_files": extra,
        "opset_version": dict(opset_version or {}),
    }
    kindle.save(payload, os.fspath(f) if isinstance(f, os.PathLike) else f)


def load(f, *, extra_files=None, expected_opset_version=None):
    """Loads a program written by kindle.export.save (Kindle's format, never code). Every extra
    file stored is put into extra_files, as torch does. expected_opset_version is accepted for
    torch's signature; Kindle's graphs name Kindle functions, which have no opset versions."""
    import kindle
    from .exported_program import ExportedProgram, ModuleCallEntry, ModuleCallSignature
    if isinstance(f, os.PathLike):
        f = os.fspath(f)
    payload = kindle.load(f, weights_only=True)
    name = f if isinstance(f, str) else getattr(f, "name", "the file")
    if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
        raise RuntimeError(f"kindle.export.load: {name} is not a kindle.export.save file (archives written by "
                           "torch.export.save cannot be read by Kindle)")
    if payload.get("version") != _VERSION:
        raise RuntimeError(f"kindle.export.load: {name} has format version {payload.get('version')}; this Kindle "
                           f"reads version {_VERSION}")
    tensors = payload.get("tensors") or {}
    if not isinstance(tensors, dict) or not all(isinstance(t, _C.Tensor) for t in tensors.values()):
        raise ValueError(f"kindle.export.load: {name}: malformed tensor table")
    dec = _ExportDecoder(tensors, name)

    def kind_of(enum, e):
        if not isinstance(e, str) or e not in enum.__members__:
            dec.fail(f"unknown kind {e!r}")
        return enum[e]

    def text(e):
        if e is not None and not isinstance(e, str):
            dec.fail(f"expected a name, got {e!r}")
        return e

    def tensor(ref):
        t = dec.value(ref)
        if not isinstance(t, _C.Tensor):
            dec.fail(f"expected a tensor, got {type(t).__name__}")
        return t

    try:
        graph = dec.graph(payload.get("graph") or [])
        _load_meta(dec, graph, payload.get("meta") or {})
        inputs = [InputSpec(kind_of(InputKind, k), _arg_in(dec, a), text(t), p if p is None else bool(p))
                  for k, a, t, p in payload.get("input_specs") or []]
        outputs = [OutputSpec(kind_of(OutputKind, k), _arg_in(dec, a), text(t))
                   for k, a, t in payload.get("output_specs") or []]
        state_dict, params = {}, {}
        for key, ref, is_param, requires_grad in payload.get("state_dict") or []:
            t = tensor(ref)
            if is_param:  # one Parameter per stored tensor, so tied weights stay tied
                if id(t) not in params:
                    params[id(t)] = Parameter(t, requires_grad=bool(requires_grad))
                t = params[id(t)]
            state_dict[text(key)] = t
        constants = {text(k): tensor(ref) for k, ref in payload.get("constants") or []}
        ranges = {}
        for root, coeff, offset, lo, hi in payload.get("range_constraints") or []:
            if not isinstance(root, str) or not all(type(x) is int for x in (coeff, offset, lo)) or \
                    not (hi is None or type(hi) is int):
                dec.fail("malformed range constraint")
            ranges[_Symbol(root, coeff, offset)] = ValueRanges(lo, int_oo if hi is None else hi)
        call_graph = []
        for fqn, s in payload.get("module_call_graph") or []:
            sig = None if s is None else ModuleCallSignature([], [], _spec_in(s[0], dec.fail), _spec_in(s[1], dec.fail),
                                                             [text(x) for x in s[2]])
            call_graph.append(ModuleCallEntry(text(fqn), sig))
        example = payload.get("example_inputs")
        if example is not None:
            example = _spec_in(example[0], dec.fail).unflatten([dec.value(x) for x in example[1]])
    except (TypeError, ValueError, AttributeError, IndexError, KeyError) as e:
        if isinstance(e, ValueError) and str(e).startswith("kindle.export.load"):
            raise
        raise ValueError(f"kindle.export.load: {name}: malformed program ({e})") from e
    if not call_graph or call_graph[0].signature is None or call_graph[0].signature.in_spec is None:
        dec.fail("the program has no calling convention")
    if extra_files is not None:
        for k, v in (payload.get("extra_files") or {}).items():
            if not isinstance(v, (str, dict)):
                dec.fail(f"malformed extra file {k!r}")
            if isinstance(v, dict):
                raw = base64.b64decode(v.get("base64", ""))
                try:
                    v = raw.decode("utf-8")
                except UnicodeDecodeError:
                    v = raw
            extra_files[k] = v
    gm = GraphModule({}, graph, "GraphModule")
    return ExportedProgram(gm, graph, ExportGraphSignature(inputs, outputs), state_dict, ranges, call_graph,
                           example, constants)


def _load_meta(dec, graph, meta):
    if not isinstance(meta, dict):
        dec.fail("malformed node metadata")
    import kindle
    for n in graph.nodes:
        e = meta.get(n.name)
        if e is None:
            continue
        if isinstance(e, list) and len(e) == 4 and e[0] == "tensor" and isinstance(e[2], list):
            dtype = dec.value(e[1])
            if not isinstance(dtype, kindle.dtype):
                dec.fail(f"node {n.name}: malformed dtype")
            n.meta["val"] = TensorMeta(_shape_in(e[2], dec.fail), dtype, None, bool(e[3]))
        elif isinstance(e, list) and len(e) == 2 and e[0] == "symint" and isinstance(e[1], list):
            n.meta["val"] = _shape_in(e[1], dec.fail)[0]
        elif isinstance(e, list) and len(e) == 2 and e[0] == "value":
            n.meta["val"] = dec.value(e[1])
        else:
            dec.fail(f"node {n.name}: malformed metadata")
