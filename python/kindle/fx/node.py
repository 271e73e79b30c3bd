"""fx.Node: one operation in a Graph, with torch.fx's six opcodes and use-def bookkeeping."""
import builtins
import inspect
import operator
import types

__all__ = ["Node", "map_arg", "map_aggregate"]

_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output", "root")

# call_function targets with effects beyond their result: dead-code elimination keeps them.
# (torch.fx's _side_effectful_functions holds operator.setitem and torch._assert; the in-place
# operators are here because `x += y` on a view writes through to its base. kindle._assert is
# added by _side_effectful_kindle(), since kindle is not importable while this module loads.)
_SIDE_EFFECTFUL = {operator.setitem, operator.delitem, operator.iadd, operator.isub, operator.imul,
                   operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow, operator.iand,
                   operator.ior, operator.ixor, operator.ilshift, operator.irshift, operator.imatmul,
                   builtins.print}

# Functions that advance the random number generator: dropping an unused call would change every
# random number drawn after it (torch's _RANDOM_FUNCTIONS, kept by torch.fx's DCE by default).
_RANDOM_NAMES = ("rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal",
                 "poisson", "bernoulli", "multinomial")
_kindle_sets = None


def _side_effectful_kindle():
    """(kindle functions with side effects, kindle's random functions), resolved on first use."""
    global _kindle_sets
    if _kindle_sets is None:
        import kindle

        def original(fn):  # the function itself, should a trace be patching the namespace now
            return getattr(fn, "_fx_recorder_of", None) or fn
        effects = {original(kindle._assert)}
        random = {original(getattr(kindle, n)) for n in _RANDOM_NAMES if hasattr(kindle, n)}
        _kindle_sets = (effects, random)
    return _kindle_sets


def _is_inplace_name(name):
    """relu_, add_, zeros_: Kindle's (and torch's) naming of a call that writes its first argument."""
    return isinstance(name, str) and name.endswith("_") and not name.endswith("__") and name.strip("_") != ""


# dunder methods that mutate their receiver, recorded as call_method by hand-built graphs
_MUTATING_DUNDERS = {"__setitem__", "__delitem__"} | {f"__i{op}__" for op in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift", "matmul")}


def _inplace_flag(target, args, kwargs):
    """The value of a call's `inplace` argument (F.relu(x, inplace=True) or F.relu(x, True)), or None."""
    if "inplace" in kwargs:
        return kwargs["inplace"]
    try:
        sig = inspect.signature(target)
        if "inplace" not in sig.parameters:
            return None
        return sig.bind_partial(*args, **kwargs).arguments.get("inplace")
    except (TypeError, ValueError):  # no Python signature (a C++ function), or not this call's
        return None


def map_aggregate(a, fn):
    """Applies fn to every leaf of a nested tuple/list/dict/slice structure, keeping its shape."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(x, fn) for x in a)
        return type(a)(*t) if hasattr(a, "_fields") else t
    if isinstance(a, list):
        return [map_aggregate(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """Applies fn to every Node inside a nested argument structure."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _qualified_name(obj):
    """The importable name of a call_function target: 'kindle.flatten',
    'kindle.nn.functional.relu', 'operator.add', and a builtin's bare name ('getattr')."""
    name = getattr(obj, "__name__", None)
    if name is not None and getattr(builtins, name, None) is obj:
        return name
    module = getattr(obj, "__module__", None)
    if module == "_operator":
        module = "operator"
    if isinstance(obj, types.MethodType) or module is None:
        return repr(obj)
    qualname = getattr(obj, "__qualname__", name)
    if module.startswith("kindle._C"):
        import kindle  # the ops are re-exported at the top level
        if getattr(kindle, name, None) is obj:
            return "kindle." + name
    elif module.startswith("kindle.") and name is not None and any(p.startswith("_") for p in module.split(".")):
        # Defined in a private module (kindle._torch_api._assert, kindle._functions.atleast_1d):
        # the public name it is re-exported under, as torch prints torch._assert, so graphs read
        # like torch's and kindle.jit.save can store the call.
        public = _public_name(obj, module, name)
        if public is not None:
            return public
    return f"{module}.{qualname}"


def _public_name(obj, module, name):
    """'<namespace>.<name>' for the closest public namespace above `module` that holds obj."""
    import sys
    parts = module.split(".")
    while parts:
        parts.pop()
        if parts and parts[-1].startswith("_"):
            continue
        ns = ".".join(parts)
        found = getattr(sys.modules.get(ns), name, None)
        if found is obj or getattr(found, "_fx_recorder_of", None) is obj:  # (a trace may be patching ns)
            return f"{ns}.{name}"
    return None


def _format_arg(a, prefix="%"):
    """An argument as the graph printout shows it: %name for a node, Python syntax otherwise."""
    if isinstance(a, Node):
        return prefix + a.name
    if isinstance(a, tuple):
        items = ", ".join(_format_arg(x, prefix) for x in a)
        return f"({items},)" if len(a) == 1 else f"({items})"
    if isinstance(a, list):
        return "[" + ", ".join(_format_arg(x, prefix) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v, prefix)}" for k, v in a.items()) + "}"
    if isinstance(a, slice):
        return f"slice({_format_arg(a.start, prefix)}, {_format_arg(a.stop, prefix)}, {_format_arg(a.step, prefix)})"
    return str(a)


class Node:
    """One operation: `op` is placeholder, get_attr, call_function, call_method, call_module or
    output; `target` is what it calls (a callable for call_function, a name otherwise). `users`
    maps every node that reads this one's value to None (an ordered set)."""

    def __init__(self, graph, name, op, target, args, kwargs, type_expr=None):
        if op not in _OPS:
            raise ValueError(f"Node: unknown opcode '{op}'; expected one of {_OPS[:-1]}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type {type(target)} "
                             "but a Callable is expected")
        if op in ("placeholder", "get_attr", "call_method", "call_module", "output") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type {type(target)} "
                             "but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = type_expr
        self.meta = {}
        self.users = {}
        self._input_nodes = {}
        self._args = ()
        self._kwargs = {}
        self._prev = self._next = self
        self._erased = False
        self._update_args_kwargs(args, kwargs)

    # ---- arguments and uses

    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self):
        return list(self._input_nodes)

    def _update_args_kwargs(self, args, kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = tuple(args)
        self._kwargs = dict(kwargs)

        def register(n):
            if n.graph is not self.graph:
                raise RuntimeError(f"Node '{self.name}' takes node '{n.name}' from another graph")
            self._input_nodes.setdefault(n)
            n.users.setdefault(self)
            return n

        map_arg(self._args, register)
        map_arg(self._kwargs, register)

    def update_arg(self, idx, arg):
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key, arg):
        self.kwargs = {**self._kwargs, key: arg}

    def replace_input_with(self, old_input, new_input):
        swap = lambda n: new_input if n is old_input else n  # noqa: E731
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *, propagate_meta=False):
        """Makes every user (for which delete_user_cb returns True) read replace_with instead of this
        node; returns the users changed."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        changed = []
        for user in list(self.users):  # replace_with itself included, as in torch.fx
            if not delete_user_cb(user):
                continue
            user.replace_input_with(self, replace_with)
            changed.append(user)
        return changed

    # ---- position in the graph

    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def _unlink(self):
        self._prev._next, self._next._prev = self._next, self._prev
        # the node keeps its own _next so a loop over graph.nodes survives erasing it

    def prepend(self, x):
        """Moves node x to just before this node."""
        if x is self:
            return
        if x.graph is not self.graph:
            raise RuntimeError("Node.prepend: the node belongs to another graph")
        x._unlink()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x

    def append(self, x):
        """Moves node x to just after this node."""
        self._next.prepend(x)

    def is_impure(self, impure_random=True):
        """Whether dead-code elimination must keep this node although nothing reads its value.

        torch.fx's rule (placeholders, outputs, operator.setitem, asserts, random functions,
        modules marked _is_impure), widened to every in-place call, since Kindle's graphs hold
        Python-level calls where torch's hold aten ops with mutable schemas, and kindle.jit.trace
        must replay what the eager code wrote (as torch.jit.trace records aten::relu_): functions
        and methods named with a trailing underscore (kindle.relu_, x.add_, init.zeros_), calls
        with inplace=True or an out= tensor, in-place operators and setitem, and modules built
        with inplace=True (nn.ReLU(inplace=True))."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            target = self.target
            if getattr(target, "_fx_impure", False):
                return True
            effects, random = _side_effectful_kindle()
            try:
                if target in _SIDE_EFFECTFUL or target in effects or (impure_random and target in random):
                    return True
            except TypeError:  # an unhashable callable object: none of those
                pass
            if _is_inplace_name(getattr(target, "__name__", None)):
                return True
            if self.kwargs.get("out") is not None:
                return True
            return _inplace_flag(target, self.args, self.kwargs) is True
        if self.op == "call_method":
            # An in-place tensor method (add_, copy_) writes through its first argument.
            return _is_inplace_name(self.target) or self.target in _MUTATING_DUNDERS
        if self.op == "call_module":
            owner = self.graph.owning_module
            if owner is not None:
                try:
                    mod = owner.get_submodule(self.target)
                except AttributeError:
                    return False
                return bool(getattr(mod, "_is_impure", False)) or getattr(mod, "inplace", False) is True
        return False

    # ---- printing

    def _pretty_target(self):
        if self.op != "call_function":
            return self.target
        name = _qualified_name(self.target)
        return name if "." in name else "builtins." + name

    def format_node(self, placeholder_names=None, maybe_return_typename=None):
        if self.op == "output":
            return f"return {_format_arg(self.args[0], prefix='')}"
        head = f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={self._pretty_target()}]"
        if self.op == "placeholder":
            return head + (f"(default={self.args[0]})" if self.args else "")
        if self.op == "get_attr":
            return head
        return head + f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})"

    @property
    def stack_trace(self):
        return self.meta.get("stack_trace")

    def __repr__(self):
        return self.name
