"""fx.GraphModule: an nn.Module whose forward is Python source generated from a Graph."""
import copy
import itertools
import linecache

from .. import _C
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .graph import Graph

__all__ = ["GraphModule"]

_source_keys = itertools.count()


def _exec_forward(src, globals_):
    """Compiles generated source under a unique file name kept in linecache, so tracebacks
    through the generated forward show its lines."""
    key = f"<eval_with_key>.{next(_source_keys)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    g = dict(globals_)
    g["__builtins__"] = __builtins__
    exec(compile(src, key, "exec"), g)
    return g["forward"]


def _copy_attr(from_module, to_module, target):
    """Makes to_module.<target> refer to from_module.<target>, creating empty Modules for the
    intermediate path; tensors that are neither parameters nor buffers become buffers."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return  # already shared
        if t is None:
            t = Module()
            t.training = getattr(f, "training", True)
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, _C.Tensor) and not isinstance(orig, Parameter):
        persistent = field not in getattr(from_module, "_non_persistent_buffers_set", ())
        to_module.register_buffer(field, orig, persistent=persistent)
    else:
        setattr(to_module, field, orig)


def _assign_attr(obj, to_module, target):
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(obj, _C.Tensor) and not isinstance(obj, Parameter):
        to_module.register_buffer(field, obj)
    else:
        setattr(to_module, field, obj)


class GraphModule(Module):
    """A Module built from a Graph: it holds the submodules, parameters and tensors the graph's
    call_module and get_attr nodes name (shared with `root`, not copied), and its forward is
    the graph's generated code. After editing `graph`, call recompile().

    Each instance gets its own class (named after the traced module) so that forward can live
    on the class, as torch.fx does.
    """

    def __new__(cls, *args, **kwargs):
        if cls.__dict__.get("_fx_instance_class"):
            return super().__new__(cls)
        impl = type(cls.__name__, (cls,), {"_fx_instance_class": True, "__module__": cls.__module__})
        return super().__new__(impl)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        type(self).__name__ = class_name
        type(self).__qualname__ = class_name
        if isinstance(root, Module):
            self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target was not "
                                           "provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        meta = getattr(root, "meta", None) if isinstance(root, Module) else None
        self.meta = dict(meta) if isinstance(meta, dict) else {}
        self.graph = graph

    @property
    def graph(self):
        return self._graph

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise TypeError(f"Expected a Graph instance, but got {type(g)}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self):
        """Regenerates forward from self.graph; returns the PythonCode."""
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        type(self).forward = _exec_forward(python_code.src, python_code.globals)
        return python_code

    # ---- submodule editing

    def add_submodule(self, target, m):
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                mod.add_module(item, sub)
            elif not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target):
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, field) or not isinstance(getattr(mod, field), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self):
        used = set()
        for node in self._graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                for i in range(1, len(atoms) + 1):
                    used.add(".".join(atoms[:i]))
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    # ---- copying and printing

    def _fresh_instance(self):
        """An uninitialised instance of a new per-instance class (recompile must not reach self's)."""
        base = type(self).__mro__[1]
        res = base.__new__(base)
        type(res).__name__ = type(res).__qualname__ = type(self).__name__
        return res

    def __deepcopy__(self, memo):
        res = self._fresh_instance()
        memo[id(self)] = res
        state = copy.deepcopy({k: v for k, v in self.__dict__.items() if k != "_graph"}, memo)
        res.__dict__.update(state)
        res._graph = copy.deepcopy(self._graph, memo)
        res._graph.owning_module = res
        res.recompile()
        return res

    def __copy__(self):
        res = self._fresh_instance()
        res.__dict__ = self.__dict__.copy()
        type(res).forward = type(self).forward
        return res

    def __reduce__(self):
        raise TypeError("cannot pickle a GraphModule: its forward is generated code; save it with "
                        "kindle.jit.save(kindle.jit.script(module), f) or save its state_dict()")

    def print_readable(self, print_output=True):
        lines = self._code.strip().splitlines()
        out = f"class {type(self).__name__}(kindle.nn.Module):\n" + "\n".join("    " + line if line else line
                                                                              for line in lines)
        if print_output:
            print(out)
        return out

    def __str__(self):
        return "\n".join([super().__repr__(), self._code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])
