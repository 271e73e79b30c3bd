"""kindle.jit.save / kindle.jit.load: a traced or scripted module in Kindle's checkpoint format.

The file is an ordinary kindle.save file (safetensors with a JSON description) holding data
only: the graph as a list of nodes, the module tree as class names, plain attributes and
references into one table of tensors (so tied weights stay tied), and the extra files. No
code is stored and nothing is unpickled. Loading rebuilds the modules and the graph, then
generates `forward` from the graph, accepting only:
- modules whose class is one of Kindle's own nn modules (kindle.nn.*);
- call_function targets among Kindle's op namespaces, `math`, a set of `operator`
  functions and a few builtins;
- call_method names that are public Tensor methods (or a few of dict's and tuple's);
- attribute names without a leading underscore in getattr nodes and module paths.
A file that asks for anything else is refused with a ValueError, so loading a file can only
build what Kindle's own operations compute. Files written by torch.jit.save (TorchScript
archives) are not readable; this format is Kindle's own.
"""
import base64
import builtins
import importlib
import keyword
import math
import operator
import sys

from .. import _C
from ..fx._symbolic_trace import _NOT_RECORDED, _OP_NAMESPACES
from ..fx.graph import Graph
from ..fx.node import Node, _qualified_name
from ..nn.modules.module import Module
from ..nn.parameter import Parameter

__all__ = ["save", "load"]

_FORMAT = "kindle.jit"
_VERSION = 1

_MODULE_INTERNALS = {"training", "_parameters", "_buffers", "_non_persistent_buffers_set", "_modules",
                     "_backward_pre_hooks", "_backward_hooks", "_forward_hooks", "_forward_hooks_with_kwargs",
                     "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
                     "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                     "_load_state_dict_post_hooks"}
_GRAPH_MODULE_STATE = {"_graph", "_code", "meta"}
_HOOK_DICTS = ("_backward_pre_hooks", "_backward_hooks", "_forward_hooks", "_forward_pre_hooks",
               "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks")

_BUILTINS = {"getattr", "len", "abs", "min", "max", "int", "float", "bool", "complex", "tuple", "list", "dict",
             "range", "slice", "round", "sum", "any", "all", "divmod", "pow", "zip", "enumerate", "reversed",
             "sorted", "isinstance"}
_OPERATORS = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift", "and_",
              "or_", "xor", "neg", "pos", "invert", "abs", "not_", "truth", "eq", "ne", "lt", "le", "gt", "ge",
              "getitem", "setitem", "contains", "index", "concat", "is_", "is_not", "iadd", "isub", "imul",
              "itruediv", "ifloordiv", "imod", "ipow", "imatmul", "iand", "ior", "ixor", "ilshift", "irshift"}
_OTHER_METHODS = {"items", "keys", "values", "get", "index", "count"}
_STATEFUL_PREFIXES = ("set_", "use_", "manual_seed", "seed", "save", "load", "install", "uninstall", "compile")
_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")


def _allowed_callable(qualified):
    """The function a saved call_function target or attribute names, if it is allowed; else None."""
    if not isinstance(qualified, str):
        return None
    head, _, name = qualified.rpartition(".")
    head = head or "builtins"
    if not name.isidentifier() or name.startswith("_") and not (head == "kindle" and name == "_assert"):
        return None
    if head == "builtins":
        return getattr(builtins, name) if name in _BUILTINS else None
    if head == "operator":
        return getattr(operator, name) if name in _OPERATORS else None
    if head == "math":
        fn = getattr(math, name, None)
        return fn if callable(fn) else None
    if head in _OP_NAMESPACES and name not in _NOT_RECORDED:
        mod = sys.modules.get(head) or importlib.import_module(head)
        fn = getattr(mod, name, None)
        if fn is None or not callable(fn):
            return None
        if isinstance(fn, type):
            import kindle
            return fn if fn in (kindle.Size, kindle.device) else None
        if name.startswith(_STATEFUL_PREFIXES) or (getattr(fn, "__module__", "") or "").startswith(
                ("kindle.serialization", "kindle.hub", "kindle.utils", "kindle.multiprocessing")):
            return None  # file I/O and global state are not operations a graph may perform
        return fn
    return None


def _allowed_module_class(qualified):
    if not isinstance(qualified, str) or "<" in qualified:
        return None
    mod_name, _, cls_name = qualified.rpartition(".")
    if not (mod_name == "kindle.nn" or mod_name.startswith("kindle.nn.")):
        return None
    try:
        cls = getattr(importlib.import_module(mod_name), cls_name)
    except (ImportError, AttributeError):
        return None
    return cls if isinstance(cls, type) and issubclass(cls, Module) else None


def _is_attr_path(target):
    return isinstance(target, str) and target != "" and all(
        (a.isidentifier() and not a.startswith("__") and not keyword.iskeyword(a)) or a.isdigit()
        for a in target.split("."))


class _Encoder:
    def __init__(self, called=()):
        self.tensors = {}
        self._keys = {}
        self.called = set(called)  # module paths the graph calls: their class and attributes matter

    def tensor(self, t):
        key = self._keys.get(id(t))
        if key is None:
            key = str(len(self.tensors))
            self._keys[id(t)] = key
            self.tensors[key] = t
        return ["tensor", key]

    def value(self, v, where):
        import kindle
        if isinstance(v, Node):
            return ["node", v.name]
        if v is None or isinstance(v, (bool, int, float, str)):
            return ["c", v]
        if v is Ellipsis:
            return ["ellipsis"]
        if isinstance(v, complex):
            return ["complex", v.real, v.imag]
        if isinstance(v, _C.Tensor):
            return self.tensor(v)
        if isinstance(v, kindle.Size):
            return ["size", [int(x) for x in v]]
        if isinstance(v, tuple) and not hasattr(v, "_fields"):
            return ["tuple", [self.value(x, where) for x in v]]
        if isinstance(v, list):
            return ["list", [self.value(x, where) for x in v]]
        if isinstance(v, dict):
            return ["dict", [[self.value(k, where), self.value(x, where)] for k, x in v.items()]]
        if isinstance(v, slice):
            return ["slice", self.value(v.start, where), self.value(v.stop, where), self.value(v.step, where)]
        if isinstance(v, range):
            return ["range", v.start, v.stop, v.step]
        if isinstance(v, kindle.dtype):
            return ["dtype", v]
        if isinstance(v, kindle.device):
            return ["device", str(v)]
        for name, obj in vars(kindle).items():  # memory_format, layout and other named constants
            if obj is v and not callable(v) and not name.startswith("_"):
                return ["kindle", name]
        if callable(v):
            qualified = _qualified_name(v)
            if _allowed_callable(qualified) is v:
                return ["fn", qualified]
            raise TypeError(f"kindle.jit.save: {where} refers to {qualified}, which a saved module may not call "
                            "(only Kindle ops, math, operator and a few builtins can be stored: the file holds no "
                            "code)")
        raise TypeError(f"kindle.jit.save: cannot store a {type(v).__name__} at {where}")

    def module(self, m, path):
        if path not in self.called:
            # Only a container here: the graph reads its tensors and calls its descendants, so
            # when its class or attributes cannot be stored it is saved as a plain Module.
            try:
                return self._module(m, path)
            except TypeError:
                return self._module(m, path, plain=True)
        return self._module(m, path)

    def _module(self, m, path, plain=False):
        cls = Module if plain else type(m)
        qualified = f"{cls.__module__}.{cls.__qualname__}"
        if _allowed_module_class(qualified) is not cls:
            raise TypeError(f"kindle.jit.save: submodule '{path}' is a {qualified}; only Kindle's nn modules can be "
                            "saved, since the file holds no code (trace through it, or make it a non-leaf module)")
        for hooks in _HOOK_DICTS:
            if getattr(m, hooks, None):
                raise TypeError(f"kindle.jit.save: submodule '{path}' has hooks ({hooks}), which cannot be saved")
        where = path or "the root module"
        attrs = []
        for k, v in m.__dict__.items():
            if plain or k in _MODULE_INTERNALS or k in _GRAPH_MODULE_STATE:
                continue
            attrs.append([k, self.value(v, f"{where}.{k}")])
        return {
            "class": qualified,
            "training": m.training,
            "parameters": [[k, None if p is None else self.tensor(p)] for k, p in m._parameters.items()],
            "buffers": [[k, None if b is None else self.tensor(b)] for k, b in m._buffers.items()],
            "non_persistent": sorted(m._non_persistent_buffers_set),
            "modules": [[k, None if s is None else self.module(s, f"{path}.{k}" if path else k)]
                        for k, s in m._modules.items()],
            "attrs": attrs,
        }

    def graph(self, graph):
        nodes = []
        for n in graph.nodes:
            target = ["fn", _qualified_name(n.target)] if n.op == "call_function" else n.target
            if n.op == "call_function" and _allowed_callable(target[1]) is not n.target:
                raise TypeError(f"kindle.jit.save: node '{n.name}' calls {target[1]}, which a saved module may not "
                                "call (only Kindle ops, math, operator and a few builtins: the file holds no code)")
            nodes.append([n.name, n.op, target, self.value(n.args, f"node '{n.name}'"),
                          self.value(n.kwargs, f"node '{n.name}'")])
        return nodes


def save(m, f, _extra_files=None):
    """Saves a module made by kindle.jit.script or kindle.jit.trace to f (a path or a binary file)."""
    import kindle
    from . import ScriptFunction, _graph_module_of
    gm = _graph_module_of(m)
    if gm is None:
        raise TypeError(f"kindle.jit.save: expected a ScriptModule or ScriptFunction (from kindle.jit.script or "
                        f"kindle.jit.trace), got {type(m).__name__}")
    enc = _Encoder(n.target for n in gm.graph.nodes if n.op == "call_module")
    # The root is stored as a plain Module holding what the graph refers to.
    root = enc.module(Module(), "")
    root["training"] = gm.training
    root["parameters"] = [[k, None if p is None else enc.tensor(p)] for k, p in gm._parameters.items()]
    root["buffers"] = [[k, None if b is None else enc.tensor(b)] for k, b in gm._buffers.items()]
    root["non_persistent"] = sorted(gm._non_persistent_buffers_set)
    root["modules"] = [[k, None if s is None else enc.module(s, k)] for k, s in gm._modules.items()]
    extra = {}
    for name, content in (_extra_files or {}).items():
        extra[str(name)] = content if isinstance(content, str) else \
            {"base64": base64.b64encode(bytes(content)).decode("ascii")}
    payload = {
        "format": _FORMAT,
        "version": _VERSION,
        "kind": "function" if isinstance(m, ScriptFunction) else "module",
        "class_name": type(gm).__name__,
        "graph": enc.graph(gm.graph),
        "root": root,
        "tensors": enc.tensors,
        "extra_files": extra,
    }
    kindle.save(payload, f)


class _Decoder:
    def __init__(self, tensors, name):
        self.tensors = tensors
        self.name = name
        self.nodes = {}

    def fail(self, what):
        raise ValueError(f"kindle.jit.load: {self.name}: {what}")

    def value(self, e):
        import kindle
        if not isinstance(e, (list, tuple)) or not e or not isinstance(e[0], str):
            self.fail(f"malformed value {e!r}")
        tag = e[0]
        if tag == "c" and len(e) == 2 and (e[1] is None or isinstance(e[1], (bool, int, float, str))):
            return e[1]
        if tag == "node" and len(e) == 2:
            if e[1] not in self.nodes:
                self.fail(f"a node uses '{e[1]}' before it is defined")
            return self.nodes[e[1]]
        if tag == "tensor" and len(e) == 2:
            if e[1] not in self.tensors:
                self.fail(f"missing tensor {e[1]!r}")
            return self.tensors[e[1]]
        if tag == "ellipsis":
            return Ellipsis
        if tag == "complex" and len(e) == 3:
            return complex(float(e[1]), float(e[2]))
        if tag == "size" and len(e) == 2:
            return kindle.Size(int(x) for x in e[1])
        if tag in ("tuple", "list") and len(e) == 2 and isinstance(e[1], (list, tuple)):
            items = [self.value(x) for x in e[1]]
            return tuple(items) if tag == "tuple" else items
        if tag == "dict" and len(e) == 2:
            out = {}
            for kv in e[1]:
                key = self.value(kv[0])
                if not isinstance(key, (str, int, float, bool, type(None))):
                    self.fail("a dict key must be a constant")
                out[key] = self.value(kv[1])
            return out
        if tag == "slice" and len(e) == 4:
            return slice(self.value(e[1]), self.value(e[2]), self.value(e[3]))
        if tag == "range" and len(e) == 4:
            return range(int(e[1]), int(e[2]), int(e[3]))
        if tag == "dtype" and len(e) == 2 and isinstance(e[1], kindle.dtype):
            return e[1]
        if tag == "device" and len(e) == 2 and isinstance(e[1], str):
            return kindle.device(e[1])
        if tag == "kindle" and len(e) == 2 and isinstance(e[1], str) and not e[1].startswith("_"):
            obj = getattr(kindle, e[1], None)
            if obj is not None and not callable(obj):
                return obj
        if tag == "fn" and len(e) == 2:
            fn = _allowed_callable(e[1])
            if fn is None:
                self.fail(f"refuses to call {e[1]!r}")
            return fn
        self.fail(f"malformed value {e!r}")

    def module(self, d, path):
        if not isinstance(d, dict):
            self.fail(f"malformed module at '{path}'")
        cls = _allowed_module_class(d.get("class"))
        if cls is None:
            self.fail(f"refuses module class {d.get('class')!r} at '{path or 'root'}' (only kindle.nn modules)")
        m = cls.__new__(cls)
        Module.__init__(m)
        m.training = bool(d.get("training", True))
        for k, ref in d.get("parameters", []):
            t = None if ref is None else self.value(ref)
            if t is not None and not isinstance(t, Parameter):
                t = Parameter(t, requires_grad=t.requires_grad)
            m._parameters[self.attr_name(k, path)] = t
        for k, ref in d.get("buffers", []):
            m._buffers[self.attr_name(k, path)] = None if ref is None else self.value(ref)
        m._non_persistent_buffers_set.update(self.attr_name(k, path) for k in d.get("non_persistent", []))
        for k, sub in d.get("modules", []):
            k = self.attr_name(k, path)
            m._modules[k] = None if sub is None else self.module(sub, f"{path}.{k}" if path else k)
        for k, v in d.get("attrs", []):
            k = self.attr_name(k, path)
            existing = getattr(cls, k, None)
            if callable(existing) or isinstance(existing, property):
                self.fail(f"attribute '{k}' of '{path}' would replace a method of {cls.__name__}")
            object.__setattr__(m, k, self.value(v))
        return m

    def attr_name(self, k, path):
        if not isinstance(k, str) or not (k.isidentifier() or k.isdigit()) or k.startswith("__"):
            self.fail(f"bad attribute name {k!r} at '{path}'")
        return k

    def graph(self, nodes):
        import kindle
        g = Graph()
        for entry in nodes:
            if not isinstance(entry, (list, tuple)) or len(entry) != 5:
                self.fail("malformed node")
            name, op, target, args, kwargs = entry
            if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name in self.nodes:
                self.fail(f"bad node name {name!r}")
            if op not in _OPS:
                self.fail(f"unknown node kind {op!r}")
            if op == "call_function":
                target = self.value(target)
            elif op in ("get_attr", "call_module"):
                if not _is_attr_path(target):
                    self.fail(f"bad attribute path {target!r}")
            elif op == "call_method":
                if not (isinstance(target, str) and target.isidentifier() and not target.startswith("_")
                        and (hasattr(kindle.Tensor, target) or target in _OTHER_METHODS)):
                    self.fail(f"refuses method {target!r}")
            elif op == "placeholder":
                if not (isinstance(target, str) and target.lstrip("*").isidentifier()):
                    self.fail(f"bad placeholder {target!r}")
            args, kwargs = self.value(args), self.value(kwargs)
            if not isinstance(args, tuple) or not isinstance(kwargs, dict) or \
                    not all(isinstance(k, str) and k.isidentifier() for k in kwargs):
                self.fail(f"malformed arguments of node {name!r}")
            if target is getattr and not (len(args) == 2 and isinstance(args[1], str) and not args[1].startswith("_")):
                self.fail(f"node {name!r}: getattr may only read public attributes")
            self.nodes[name] = g.create_node(op, target, args, kwargs, name=name)
        if not any(n.op == "output" for n in g.nodes):
            self.fail("the graph has no output")
        return g


def load(f, map_location=None, _extra_files=None):
    """Loads a module saved by kindle.jit.save (Kindle's format; see the module docstring)."""
    import kindle
    from . import RecursiveScriptModule, ScriptFunction, _adopt_tree
    payload = kindle.load(f, map_location=map_location, weights_only=True)
    name = f if isinstance(f, str) else getattr(f, "name", "the file")
    if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
        raise RuntimeError(f"kindle.jit.load: {name} is not a kindle.jit.save file (TorchScript archives written by "
                           "torch.jit.save cannot be read by Kindle; load a state_dict instead)")
    if payload.get("version") != _VERSION:
        raise RuntimeError(f"kindle.jit.load: {name} has format version {payload.get('version')}; this Kindle reads "
                           f"version {_VERSION}")
    tensors = payload.get("tensors") or {}
    if not isinstance(tensors, dict) or not all(isinstance(t, _C.Tensor) for t in tensors.values()):
        raise ValueError(f"kindle.jit.load: {name}: malformed tensor table")
    dec = _Decoder(tensors, name)
    root = dec.module(payload.get("root"), "")
    graph = dec.graph(payload.get("graph") or [])
    class_name = payload.get("class_name", "GraphModule")
    if not isinstance(class_name, str) or not class_name.isidentifier():
        class_name = "GraphModule"
    module = _adopt_tree(RecursiveScriptModule(root, graph, class_name), root)
    if _extra_files is not None:
        stored = payload.get("extra_files") or {}
        for key in list(_extra_files):
            v = stored.get(key, "")
            _extra_files[key] = base64.b64decode(v["base64"]) if isinstance(v, dict) else v
    if payload.get("kind") == "function":
        return ScriptFunction(module, name=class_name)
    return module
