"""fx.Proxy: the value a traced function sees instead of a tensor. Every operation on it is
recorded as a Node in the tracer's graph instead of being computed."""
import dis
import inspect
import operator

__all__ = ["Proxy", "Attribute", "TraceError", "ParameterProxy"]


class TraceError(ValueError):
    pass


class Proxy:
    """Stands for the value of `node` while a function is traced.

    Arithmetic and comparison operators record call_function nodes (operator.add, ...),
    `proxy.name` records a getattr node (or, when called, a call_method node) and indexing
    records operator.getitem. A Proxy has no concrete value, so it cannot decide control flow
    (`if proxy:` raises TraceError), be iterated except by unpacking (`a, b = proxy`), or
    report its len().
    """

    def __init__(self, node, tracer=None):
        if tracer is None:
            from ._symbolic_trace import Tracer
            tracer = Tracer()  # a bare proxy (made by hand around a node) records into its node's graph
            tracer.graph = node.graph
        self.tracer = tracer
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            # copy, pickle, numpy and friends probe for special methods: those are not recorded
            raise AttributeError(k)
        return Attribute(self, k)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __setitem__(self, key, value):
        # In-place indexing is recorded as operator.setitem (a side effect dead-code elimination keeps).
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})

    def __iter__(self):
        # `a, b = proxy` compiles to UNPACK_SEQUENCE n right where iter() is called: the count is
        # known from the caller's bytecode, so unpacking records n getitem nodes.
        frame = inspect.currentframe().f_back
        try:
            for inst in dis.get_instructions(frame.f_code):
                if inst.offset == frame.f_lasti:
                    if inst.opname == "UNPACK_SEQUENCE":
                        return (self[i] for i in range(inst.argval))
                    break
        finally:
            del frame
        return self.tracer.iter(self)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    def keys(self):
        return self.tracer.keys(self)

    def __hash__(self):
        return id(self)

    def __deepcopy__(self, memo):
        raise TraceError("a Proxy cannot be copied during symbolic tracing")


class Attribute(Proxy):
    """`proxy.attr`: becomes a call_method node when called, a getattr node when used as a value."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A get_attr proxy for a parameter; shape and size() are answered from the real tensor when
    the tracer's param_shapes_constant is set."""

    def __init__(self, tracer, node, name, param):
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    @property
    def shape(self):
        return self.param.shape

    def size(self, dim=None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self):
        return self.param.dim()

    @property
    def ndim(self):
        return self.param.ndim

    def numel(self):
        return self.param.numel()


_BINARY = ["add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift", "and_", "or_", "xor",
           "matmul"]
_COMPARE = ["eq", "ne", "lt", "gt", "le", "ge"]
_UNARY = ["neg", "pos", "invert", "abs"]


def _install_magic_methods():
    def make(fn, reflected):
        if reflected:
            def impl(self, other):
                return self.tracer.create_proxy("call_function", fn, (other, self), {})
        else:
            def impl(self, *others):
                return self.tracer.create_proxy("call_function", fn, (self,) + others, {})
        return impl

    for name in _BINARY + _COMPARE + _UNARY + ["getitem"]:
        fn = getattr(operator, name)
        dunder = name.rstrip("_")
        setattr(Proxy, f"__{dunder}__", make(fn, False))
        if name in _BINARY:
            setattr(Proxy, f"__r{dunder}__", make(fn, True))


_install_magic_methods()
Proxy.__hash__ = lambda self: id(self)  # __eq__ is recorded, so identity is the hash


def _find_proxy_tracer(args, kwargs):
    """The tracer of the first Proxy inside args/kwargs (nested in lists, tuples, dicts), or None."""
    stack = [args, kwargs]
    while stack:
        a = stack.pop()
        if isinstance(a, Proxy):
            return a.tracer
        if isinstance(a, (tuple, list)):
            stack.extend(a)
        elif isinstance(a, dict):
            stack.extend(a.values())
        elif isinstance(a, slice):
            stack.extend((a.start, a.stop, a.step))
    return None
