"""kindle.utils._pytree (torch.utils._pytree): nested containers flattened into a list of leaves
and a TreeSpec that rebuilds them. Libraries written for torch (and kindle.func, checkpointing)
use it to walk arguments and results.

Nodes are tuples, lists, dicts, OrderedDicts, defaultdicts, deques, namedtuples and anything
registered with register_pytree_node / register_dataclass; everything else (None included, as in
torch 2.13) is a leaf. Keys of dicts keep insertion order."""
import collections
import dataclasses
import json
from collections import OrderedDict, defaultdict, deque
from typing import Any, Callable, NamedTuple

__all__ = [
    "PyTree", "Context", "FlattenFunc", "UnflattenFunc", "TreeSpec", "LeafSpec", "SequenceKey", "MappingKey",
    "GetAttrKey", "KeyPath", "register_pytree_node", "register_dataclass", "register_constant", "tree_flatten",
    "tree_flatten_with_path", "tree_unflatten", "tree_iter", "tree_leaves", "tree_leaves_with_path",
    "tree_structure", "tree_map", "tree_map_", "tree_map_only", "tree_map_only_", "tree_map_with_path", "tree_all",
    "tree_any", "tree_all_only", "tree_any_only", "tree_is_leaf", "treespec_dumps", "treespec_loads",
    "treespec_pprint", "treespec_leaf", "treespec_tuple", "treespec_dict", "keystr", "key_get", "is_namedtuple",
    "is_namedtuple_class", "is_namedtuple_instance", "is_structseq", "is_structseq_class", "is_structseq_instance",
    "map_only", "arg_tree_leaves", "NodeDef", "SUPPORTED_NODES", "BUILTIN_TYPES",
]

PyTree = Any
Context = Any
FlattenFunc = Callable
UnflattenFunc = Callable
KeyPath = tuple


class NodeDef(NamedTuple):
    type: type
    flatten_fn: Callable
    unflatten_fn: Callable
    flatten_with_keys_fn: Any = None


SUPPORTED_NODES = {}
_LEAF_TYPES = set()          # types found to be leaves (neither registered nor namedtuples)
_SERIALIZED_NAME = {}        # type -> name written by treespec_dumps
_SERIALIZED_TYPE = {}        # name -> type
_DUMPABLE = {}               # type -> (to_dumpable_context, from_dumpable_context)
CONSTANT_NODES = set()


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
                         from_dumpable_context=None, flatten_with_keys_fn=None):
    """Makes instances of cls nodes: flatten_fn(obj) -> (children, context) and
    unflatten_fn(children, context) -> obj."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    if (to_dumpable_context is None) != (from_dumpable_context is None):
        raise ValueError("Both to_dumpable_context and from_dumpable_context must be None or registered.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
    _LEAF_TYPES.discard(cls)
    name = serialized_type_name or f"{cls.__module__}.{cls.__qualname__}"
    _SERIALIZED_NAME[cls] = name
    _SERIALIZED_TYPE[name] = cls
    if to_dumpable_context is not None:
        _DUMPABLE[cls] = (to_dumpable_context, from_dumpable_context)


def register_dataclass(cls, *, field_names=None, drop_field_names=None, serialized_type_name=None):
    """A dataclass whose fields (all but drop_field_names) are children."""
    if field_names is None:
        if not dataclasses.is_dataclass(cls):
            raise ValueError(f"register_dataclass: {cls} is not a dataclass; pass field_names")
        field_names = [f.name for f in dataclasses.fields(cls) if f.init and f.name not in (drop_field_names or ())]
    names = list(field_names)

    def flatten(obj):
        return [getattr(obj, n) for n in names], names

    def unflatten(values, context):
        return cls(**dict(zip(context, values)))

    def flatten_with_keys(obj):
        return [(GetAttrKey(n), getattr(obj, n)) for n in names], names

    register_pytree_node(cls, flatten, unflatten, serialized_type_name=serialized_type_name,
                         flatten_with_keys_fn=flatten_with_keys)


def register_constant(cls):
    """Instances of cls are part of the spec (compared by ==), with no leaves."""
    def flatten(obj):
        return [], _Constant(obj)

    def unflatten(_, context):
        return context.value

    register_pytree_node(cls, flatten, unflatten, flatten_with_keys_fn=lambda obj: ([], _Constant(obj)))
    CONSTANT_NODES.add(cls)


def is_constant_class(cls):
    return cls in CONSTANT_NODES


class _Constant:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _Constant) and self.value == other.value

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return f"ConstantNode(value={self.value!r})"


# ---- key paths

@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self):
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def keystr(kp):
    return "".join(str(k) for k in kp)


def key_get(obj, kp):
    for k in kp:
        obj = k.get(obj)
    return obj


# ---- namedtuples and structseqs (Kindle's return types are namedtuples)

def is_namedtuple_class(cls):
    return isinstance(cls, type) and issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


def is_namedtuple(obj):
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_namedtuple_instance(obj):
    return is_namedtuple_class(type(obj))


def is_structseq_class(cls):
    return (isinstance(cls, type) and issubclass(cls, tuple) and isinstance(getattr(cls, "n_fields", None), int)
            and isinstance(getattr(cls, "n_sequence_fields", None), int))


def is_structseq(obj):
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))


def is_structseq_instance(obj):
    return is_structseq_class(type(obj))


def _seq_keys(children):
    return [(SequenceKey(i), c) for i, c in enumerate(children)]


register_pytree_node(tuple, lambda t: (list(t), None), lambda v, c: tuple(v), serialized_type_name="builtins.tuple",
                     flatten_with_keys_fn=lambda t: (_seq_keys(t), None))
register_pytree_node(list, lambda t: (list(t), None), lambda v, c: list(v), serialized_type_name="builtins.list",
                     flatten_with_keys_fn=lambda t: (_seq_keys(t), None))
register_pytree_node(dict, lambda d: (list(d.values()), list(d.keys())), lambda v, c: dict(zip(c, v)),
                     serialized_type_name="builtins.dict",
                     to_dumpable_context=lambda c: json.dumps(c), from_dumpable_context=lambda s: json.loads(s),
                     flatten_with_keys_fn=lambda d: ([(MappingKey(k), v) for k, v in d.items()], list(d.keys())))
register_pytree_node(OrderedDict, lambda d: (list(d.values()), list(d.keys())), lambda v, c: OrderedDict(zip(c, v)),
                     serialized_type_name="collections.OrderedDict",
                     flatten_with_keys_fn=lambda d: ([(MappingKey(k), v) for k, v in d.items()], list(d.keys())))
register_pytree_node(defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d.keys())]),
                     lambda v, c: defaultdict(c[0], zip(c[1], v)), serialized_type_name="collections.defaultdict",
                     flatten_with_keys_fn=lambda d: ([(MappingKey(k), v) for k, v in d.items()],
                                                     [d.default_factory, list(d.keys())]))
register_pytree_node(deque, lambda d: (list(d), d.maxlen), lambda v, c: deque(v, maxlen=c),
                     serialized_type_name="collections.deque", flatten_with_keys_fn=lambda d: (_seq_keys(d), d.maxlen))
BUILTIN_TYPES = {tuple, list, dict, OrderedDict, defaultdict, deque, collections.namedtuple}
STANDARD_DICT_TYPES = {dict, OrderedDict, defaultdict}


def _namedtuple_flatten(t):
    return list(t), type(t)


def _namedtuple_unflatten(values, context):
    return context(*values)


def _namedtuple_flatten_with_keys(t):
    return [(GetAttrKey(f), v) for f, v in zip(t._fields, t)], type(t)


_NAMEDTUPLE = NodeDef(collections.namedtuple, _namedtuple_flatten, _namedtuple_unflatten,
                      _namedtuple_flatten_with_keys)
_SERIALIZED_NAME[collections.namedtuple] = "collections.namedtuple"
_SERIALIZED_TYPE["collections.namedtuple"] = collections.namedtuple


def _node_of(obj):
    """The NodeDef for obj, or None for a leaf. Exact types, as torch (a subclass of list is a leaf
    unless registered), except that any namedtuple is a node."""
    cls = type(obj)
    node = SUPPORTED_NODES.get(cls)
    if node is not None:
        return node
    if cls in _LEAF_TYPES:
        return None
    if is_namedtuple_class(cls) or is_structseq_class(cls):
        return _NAMEDTUPLE
    _LEAF_TYPES.add(cls)
    return None


def tree_is_leaf(tree, is_leaf=None):
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_of(tree) is None


# ---- TreeSpec

class TreeSpec:
    """The structure of a pytree: its node type, the node's context (dict keys, namedtuple class)
    and one spec per child. A leaf is TreeSpec(None, None, [])."""

    def __init__(self, type, context, children_specs):  # noqa: A002
        self.type = type
        self.context = context
        self._children = list(children_specs)
        self.num_nodes = 1 + sum(c.num_nodes for c in self._children)
        self.num_leaves = 1 if type is None else sum(c.num_leaves for c in self._children)
        self.num_children = len(self._children)

    @property
    def children_specs(self):
        return self._children

    def children(self):
        return list(self._children)

    def child(self, index):
        return self._children[index]

    def is_leaf(self):
        return self.type is None

    def _node(self):
        if self.type is collections.namedtuple:
            return _NAMEDTUPLE
        node = SUPPORTED_NODES.get(self.type)
        if node is None:
            raise ValueError(f"{self.type} is not a registered pytree node")
        return node

    def unflatten(self, leaves):
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to "
                             f"a pytree that holds {self.num_leaves} items ({self}).")
        it = iter(leaves)

        def build(spec):
            if spec.is_leaf():
                return next(it)
            return spec._node().unflatten_fn([build(c) for c in spec._children], spec.context)
        return build(self)

    def flatten_up_to(self, tree):
        """The subtrees of tree at this spec's leaves; tree must have this spec's structure above them."""
        out = []

        def walk(spec, node):
            if spec.is_leaf():
                out.append(node)
                return
            nd = _node_of(node)
            node_type = collections.namedtuple if nd is _NAMEDTUPLE else type(node)
            if node_type is not spec.type:
                raise ValueError(f"Node type mismatch; expected {_type_name(spec.type)}, but got "
                                 f"{_type_name(node_type)}.")
            children, context = nd.flatten_fn(node)
            if len(children) != spec.num_children:
                raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got {len(children)}.")
            if context != spec.context:
                if spec.type in STANDARD_DICT_TYPES:
                    raise ValueError(f"Node keys mismatch; expected {spec.context}, but got {context}.")
                raise ValueError(f"Node context mismatch for custom node type {spec.type}.")
            for c, s in zip(children, spec._children):
                walk(s, c)
        walk(self, tree)
        return out

    def __eq__(self, other):
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return (self.type is other.type and self.context == other.context and self._children == other._children)

    def __hash__(self):
        ctx = self.context
        try:
            hash(ctx)
        except TypeError:
            ctx = repr(ctx)
        return hash((self.type, ctx, tuple(self._children)))

    def __repr__(self, indent=0):
        if self.is_leaf():
            return "*"
        name = "namedtuple" if self.type is collections.namedtuple else self.type.__name__
        head = f"TreeSpec({name}, {self.context!r}, ["
        parts = [c.__repr__(indent + 2) for c in self._children]
        if not parts:
            return head + "])"
        sep = ",\n" + " " * (indent + 2)
        return head + parts[0] + "".join(sep + p for p in parts[1:]) + "])"


def LeafSpec():  # noqa: N802  (torch's name; a leaf is a TreeSpec with no type)
    return TreeSpec(None, None, [])


def treespec_leaf():
    return LeafSpec()


def treespec_tuple(iterable=()):
    return TreeSpec(tuple, None, list(iterable))


def treespec_dict(mapping=(), **kwargs):
    d = dict(mapping, **kwargs)
    return TreeSpec(dict, list(d.keys()), list(d.values()))


def _type_name(t):
    return "namedtuple" if t is collections.namedtuple else getattr(t, "__name__", str(t))


# ---- flatten / unflatten / map

def _flatten(tree, is_leaf, leaves):
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return LeafSpec()
    node = _node_of(tree)
    if node is None:
        leaves.append(tree)
        return LeafSpec()
    children, context = node.flatten_fn(tree)
    return TreeSpec(node.type, context, [_flatten(c, is_leaf, leaves) for c in children])


def tree_flatten(tree, is_leaf=None):
    leaves = []
    spec = _flatten(tree, is_leaf, leaves)
    return leaves, spec


def tree_unflatten(leaves, treespec):
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_iter(tree, is_leaf=None):
    if is_leaf is not None and is_leaf(tree):
        yield tree
        return
    node = _node_of(tree)
    if node is None:
        yield tree
        return
    for c in node.flatten_fn(tree)[0]:
        yield from tree_iter(c, is_leaf)


def tree_leaves(tree, is_leaf=None):
    return list(tree_iter(tree, is_leaf))


def arg_tree_leaves(*args, **kwargs):
    return tree_leaves((args, kwargs))


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """func applied to the leaves of tree (and to the matching subtrees of rests, which must have
    tree's structure down to its leaves)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(*xs) for xs in zip(leaves, *others))


def tree_map_(func, tree, *rests, is_leaf=None):
    """tree_map for func's side effects; returns tree."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    collections.deque(map(func, leaves, *others), maxlen=0)
    return tree


def _type_pred(type_or_types_or_pred):
    if isinstance(type_or_types_or_pred, (type, tuple)):
        types = type_or_types_or_pred
        return lambda x: isinstance(x, types)
    if callable(type_or_types_or_pred):
        return type_or_types_or_pred
    raise TypeError(f"Argument must be a type, a tuple of types, or a callable, but got {type_or_types_or_pred}")


def map_only(type_or_types_or_pred):
    """Decorator: func applies to leaves that pass the type check; others are returned unchanged."""
    pred = _type_pred(type_or_types_or_pred)

    def wrapper(func):
        def wrapped(x):
            return func(x) if pred(x) else x
        wrapped.__wrapped__ = func
        return wrapped
    return wrapper


def tree_map_only(type_or_types_or_pred, func, tree, is_leaf=None):
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, func, tree, is_leaf=None):
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred, tree, is_leaf=None):
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types, pred, tree, is_leaf=None):
    check = _type_pred(type_or_types)
    return all(pred(x) for x in tree_iter(tree, is_leaf) if check(x))


def tree_any_only(type_or_types, pred, tree, is_leaf=None):
    check = _type_pred(type_or_types)
    return any(pred(x) for x in tree_iter(tree, is_leaf) if check(x))


# ---- key paths

def _flatten_with_path(tree, is_leaf, path, out):
    if is_leaf is not None and is_leaf(tree):
        out.append((path, tree))
        return LeafSpec()
    node = _node_of(tree)
    if node is None:
        out.append((path, tree))
        return LeafSpec()
    if node.flatten_with_keys_fn is None:
        raise ValueError(f"Did not find a flatten_with_keys_fn for type: {type(tree)}. Please pass a "
                         f"flatten_with_keys_fn argument to register_pytree_node.")
    keyed, context = node.flatten_with_keys_fn(tree)
    return TreeSpec(node.type, context, [_flatten_with_path(c, is_leaf, path + (k,), out) for k, c in keyed])


def tree_flatten_with_path(tree, is_leaf=None):
    out = []
    spec = _flatten_with_path(tree, is_leaf, (), out)
    return out, spec


def tree_leaves_with_path(tree, is_leaf=None):
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func, tree, *rests, is_leaf=None):
    keyed, spec = tree_flatten_with_path(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(kp, x, *xs) for (kp, x), *xs in zip(keyed, *others))


# ---- serialisation of specs (JSON, as torch's protocol 1)

DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL = 1


def _spec_to_json(spec):
    if spec.is_leaf():
        return {"type": None, "context": None, "children_spec": []}
    name = _SERIALIZED_NAME.get(spec.type)
    if name is None:
        raise NotImplementedError(f"Serializing {spec.type} in pytree is not registered.")
    if spec.type is collections.namedtuple:
        ctx = json.dumps({"name": spec.context.__name__, "fields": list(spec.context._fields)})
    elif spec.type in _DUMPABLE:
        ctx = _DUMPABLE[spec.type][0](spec.context)
    else:
        try:
            ctx = json.dumps(spec.context)
        except TypeError as e:
            raise TypeError(f"Unable to serialize context {spec.context!r} of {spec.type}: register "
                            f"to_dumpable_context") from e
    return {"type": name, "context": ctx, "children_spec": [_spec_to_json(c) for c in spec._children]}


def _spec_from_json(d):
    if d["type"] is None:
        return LeafSpec()
    t = _SERIALIZED_TYPE.get(d["type"])
    if t is None:
        raise NotImplementedError(f"Deserializing {d['type']} in pytree is not registered.")
    if t is collections.namedtuple:
        info = json.loads(d["context"])
        ctx = collections.namedtuple(info["name"], info["fields"])
    elif t in _DUMPABLE:
        ctx = _DUMPABLE[t][1](d["context"])
    else:
        ctx = json.loads(d["context"])
    return TreeSpec(t, ctx, [_spec_from_json(c) for c in d["children_spec"]])


def treespec_dumps(treespec, protocol=None):
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"treespec_dumps(treespec, protocol): Expected `treespec` to be instance of TreeSpec but "
                        f"got item of type {type(treespec)}.")
    protocol = DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL if protocol is None else protocol
    if protocol != 1:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [1]")
    return json.dumps([protocol, _spec_to_json(treespec)])


def treespec_loads(serialized):
    protocol, body = json.loads(serialized)
    if protocol != 1:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [1]")
    return _spec_from_json(body)


def treespec_pprint(treespec):
    dummy = tree_unflatten([_Star()] * treespec.num_leaves, treespec)
    return repr(dummy)


class _Star:
    def __repr__(self):
        return "*"
