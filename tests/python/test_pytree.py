"""kindle.utils._pytree against torch.utils._pytree: the same leaves, specs (repr, equality, JSON),
key paths, maps and error types for the same trees."""
import collections
import dataclasses

import pytest

import kindle
from kindle.utils import _pytree as kp

torch = pytest.importorskip("torch")
tp = torch.utils._pytree

Point = collections.namedtuple("Point", "x y")


def trees():
    return [
        1, None, "s", [], (), {}, [1, 2, (3, 4)], {"b": 1, "a": [2, None]}, (Point(1, [2, 3]), 4),
        collections.OrderedDict(z=1, y=(2,)), collections.defaultdict(list, k=[1, 2]), collections.deque([1, 2], 3),
        {"x": {"y": {"z": [1, (2, {"w": 3})]}}}, [[[]]], ((),),
    ]


@pytest.mark.parametrize("i", range(len(trees())))
def test_flatten_matches_torch(i):
    tree = trees()[i]
    kl, ks = kp.tree_flatten(tree)
    tl, ts = tp.tree_flatten(tree)
    assert kl == tl
    assert repr(ks) == repr(ts)
    assert (ks.num_leaves, ks.num_nodes, ks.num_children) == (ts.num_leaves, ts.num_nodes, ts.num_children)
    assert ks.is_leaf() == ts.is_leaf()
    rebuilt = kp.tree_unflatten(kl, ks)
    assert rebuilt == tree and type(rebuilt) is type(tree)
    assert [(kp.keystr(p), v) for p, v in kp.tree_leaves_with_path(tree)] == \
        [(tp.keystr(p), v) for p, v in tp.tree_leaves_with_path(tree)]
    if not isinstance(tree, collections.defaultdict) and not (isinstance(tree, tuple) and tree and
                                                             isinstance(tree[0], Point)):
        assert kp.treespec_dumps(ks) == tp.treespec_dumps(ts)
        assert kp.treespec_loads(kp.treespec_dumps(ks)) == ks
    assert kp.tree_map(lambda v: (v, 0), tree) == tp.tree_map(lambda v: (v, 0), tree)


def test_spec_equality_hash_and_maps():
    a, b = kp.tree_structure([1, {"k": 2}]), kp.tree_structure([3, {"k": 4}])
    assert a == b and hash(a) == hash(b)
    assert a != kp.tree_structure([1, {"j": 2}])
    assert kp.tree_map(lambda x, y: x + y, [1, (2, 3)], [10, (20, 30)]) == [11, (22, 33)]
    assert kp.tree_map(lambda x, y: (x, y), [1, 2], [[5, 6], {"a": 7}]) == [(1, [5, 6]), (2, {"a": 7})]
    assert kp.tree_map_only(int, lambda x: x * 10, [1, "a", 2.0]) == [10, "a", 2.0]
    assert kp.tree_all(lambda x: x > 0, (1, [2])) and not kp.tree_any(lambda x: x > 5, (1, [2]))
    assert kp.tree_any_only(str, lambda s: s == "a", [1, "a"])
    seen = []
    assert kp.tree_map_(seen.append, {"a": 1, "b": [2]}) == {"a": 1, "b": [2]} and seen == [1, 2]
    assert kp.tree_leaves((1, [2, 3]), is_leaf=lambda x: isinstance(x, list)) == [1, [2, 3]]
    assert kp.treespec_pprint(kp.tree_structure([1, (2,)])) == tp.treespec_pprint(tp.tree_structure([1, (2,)]))
    t = kindle.ones(2)
    out = kp.tree_map_only(kindle.Tensor, lambda x: x * 2, {"w": t, "n": 3})
    assert out["n"] == 3 and out["w"].tolist() == [2.0, 2.0]


@pytest.mark.parametrize("make", [
    lambda m: m.tree_map(lambda a, b: a, [1, 2], [3]),
    lambda m: m.tree_map(lambda a, b: a, {"a": 1}, {"b": 1}),
    lambda m: m.tree_map(lambda a, b: a, [1], (1,)),
    lambda m: m.tree_unflatten([1], m.tree_structure([1, 2])),
    lambda m: m.tree_unflatten([1], [1]),
])
def test_errors_match_torch(make):
    with pytest.raises(Exception) as kt:
        make(kp)
    with pytest.raises(Exception) as tt:
        make(tp)
    assert type(kt.value) is type(tt.value)


def test_registered_nodes_and_dataclasses():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    kp.register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda v, c: Pair(*v),
                            flatten_with_keys_fn=lambda p: ([(kp.GetAttrKey("a"), p.a), (kp.GetAttrKey("b"), p.b)],
                                                            None))
    leaves, spec = kp.tree_flatten([Pair(1, (2, 3))])
    assert leaves == [1, 2, 3]
    back = kp.tree_unflatten([4, 5, 6], spec)[0]
    assert (back.a, back.b) == (4, (5, 6))
    assert [kp.keystr(p) for p, _ in kp.tree_leaves_with_path([Pair(1, 2)])] == ["[0].a", "[0].b"]
    with pytest.raises(ValueError, match="already registered"):
        kp.register_pytree_node(Pair, lambda p: ([], None), lambda v, c: Pair(0, 0))

    @dataclasses.dataclass
    class Batch:
        x: object
        y: object

    kp.register_dataclass(Batch)
    assert kp.tree_leaves(Batch(1, [2])) == [1, 2]
    assert kp.tree_map(lambda v: v + 1, Batch(1, [2])) == Batch(2, [3])
    assert kp.key_get(Batch(1, [2, 9]), kp.tree_leaves_with_path(Batch(1, [2, 9]))[2][0]) == 9


def test_func_uses_pytrees_of_namedtuples():
    def f(p):
        return Point(p.x * p.y, p.x + p.y)

    x, y = kindle.tensor(2.0), kindle.tensor(3.0)
    jac = kindle.func.jacrev(f)(Point(x, y))
    assert isinstance(jac, Point) and isinstance(jac.x, Point)
    assert [float(jac.x.x), float(jac.x.y), float(jac.y.x), float(jac.y.y)] == [3.0, 2.0, 1.0, 1.0]
