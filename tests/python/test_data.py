"""kindle.utils.data: datasets, samplers, collation and the DataLoader (single- and
multi-process), against torch.utils.data where torch is importable.

Random orders are not compared with PyTorch (different generators); the properties are
(permutations, reproducibility under a seed, weights respected). The multi-process tests are
few and small: each starts two worker processes.
"""
import collections
import gc
import math
import os
import random
import signal
import time
import warnings

import numpy as np
import pytest

import kindle
from kindle.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,
                               IterableDataset, RandomSampler, SequentialSampler, StackDataset,
                               Subset, SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                               default_collate, default_convert, get_worker_info, random_split)

Point = collections.namedtuple("Point", ["x", "y"])


def _dtype_name(dt):
    return str(dt).split(".")[-1]


def assert_same_structure(k, t):
    """k (kindle objects) matches t (torch objects): tensor dtypes, shapes and values, container
    types, keys and order, and leaves."""
    import torch
    if isinstance(t, torch.Tensor):
        assert isinstance(k, kindle.Tensor), f"expected a tensor, got {type(k)}"
        assert _dtype_name(k.dtype) == _dtype_name(t.dtype)
        assert tuple(k.shape) == tuple(t.shape)
        np.testing.assert_array_equal(k.numpy(), t.numpy())
    elif isinstance(t, dict):
        assert type(k) is type(t) and list(k) == list(t)
        for key in t:
            assert_same_structure(k[key], t[key])
    elif isinstance(t, (list, tuple)):
        assert type(k) is type(t) and len(k) == len(t)
        for a, b in zip(k, t):
            assert_same_structure(a, b)
    else:
        assert type(k) is type(t) and k == t


def _to_torch(obj):
    """The same sample with kindle tensors replaced by torch tensors."""
    import torch
    if isinstance(obj, kindle.Tensor):
        return torch.from_numpy(obj.numpy().copy())
    if isinstance(obj, dict):
        return type(obj)((k, _to_torch(v)) for k, v in obj.items())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_torch(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_torch(v) for v in obj)
    return obj


# ----------------------------------------------------------------------------- datasets
def test_tensor_dataset_and_errors():
    x, y = kindle.arange(12.).reshape(6, 2), kindle.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    a, b = ds[4]
    assert a.tolist() == [8.0, 9.0] and b.item() == 4
    with pytest.raises(AssertionError, match="Size mismatch"):
        TensorDataset(x, kindle.arange(5))


def test_concat_subset_stack_chain():
    a, b = list(range(3)), list(range(10, 14))

    class L(Dataset):
        def __init__(self, items):
            self.items = items

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            return self.items[i]

    cat = L(a) + L(b)
    assert isinstance(cat, ConcatDataset) and len(cat) == 7
    assert [cat[i] for i in range(7)] == a + b and cat[-1] == 13 and cat.cumulative_sizes == [3, 7]
    with pytest.raises(ValueError, match="absolute value of index"):
        cat[-8]
    with pytest.raises(AssertionError, match="empty iterable"):
        ConcatDataset([])

    sub = Subset(cat, [6, 0, 3])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [13, 0, 10]
    assert sub.__getitems__([2, 0]) == [10, 13]

    st = StackDataset(L(a), L(b[:3]))
    assert st[1] == (1, 11) and st.__getitems__([0, 2]) == [(0, 10), (2, 12)]
    sd = StackDataset(p=L(a), q=L(b[:3]))
    assert sd[2] == {"p": 2, "q": 12}
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset(L(a), L(b))
    with pytest.raises(ValueError, match="At least one dataset"):
        StackDataset()

    class It(IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

    chain = It(2) + It(3)
    assert isinstance(chain, ChainDataset) and list(chain) == [0, 1, 0, 1, 2]
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([It(2)])
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset"):
        Dataset()[0]


def test_subset_overriding_getitem_only_is_rejected():
    class MySubset(Subset):
        def __getitem__(self, idx):
            return 0

    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        MySubset(list(range(3)), [0])


def test_random_split_lengths_fractions_and_generator():
    parts = random_split(range(10), [3, 7], generator=kindle.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    again = random_split(range(10), [3, 7], generator=kindle.Generator().manual_seed(1))
    assert again[0].indices == parts[0].indices
    # Fractions: floor, then the remainder one by one from the first split (PyTorch's rule).
    assert [len(p) for p in random_split(range(10), [0.25, 0.25, 0.5])] == [3, 2, 5]
    kindle.manual_seed(5)
    a = random_split(range(8), [0.5, 0.5])[0].indices
    kindle.manual_seed(5)
    assert random_split(range(8), [0.5, 0.5])[0].indices == a
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(range(10), [1.5, -0.5])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [0.9, 0.1])


def test_random_split_lengths_match_torch():
    torch = pytest.importorskip("torch")
    for n, fracs in [(10, [0.3, 0.3, 0.4]), (7, [0.5, 0.5]), (11, [0.1, 0.2, 0.7])]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = [len(p) for p in random_split(range(n), fracs)]
            theirs = [len(p) for p in torch.utils.data.random_split(range(n), fracs)]
        assert ours == theirs


# ----------------------------------------------------------------------------- samplers
def test_sequential_and_random_sampler():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    perm = list(RandomSampler(range(20)))
    assert sorted(perm) == list(range(20))
    g = kindle.Generator().manual_seed(3)
    first = list(RandomSampler(range(20), generator=g))
    g.manual_seed(3)
    assert list(RandomSampler(range(20), generator=g)) == first
    # num_samples beyond the length without replacement: whole permutations, then a part.
    long = list(RandomSampler(range(4), num_samples=10))
    assert len(long) == 10
    assert sorted(long[:4]) == [0, 1, 2, 3] and sorted(long[4:8]) == [0, 1, 2, 3]
    rep = list(RandomSampler(range(3), replacement=True, num_samples=70))
    assert len(rep) == 70 and set(rep) <= {0, 1, 2}
    assert len(RandomSampler(range(3), replacement=True, num_samples=70)) == 70
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler([])


def test_global_seed_reproduces_random_sampler():
    kindle.manual_seed(11)
    a = list(RandomSampler(range(30)))
    kindle.manual_seed(11)
    assert list(RandomSampler(range(30))) == a


def test_subset_and_weighted_random_sampler():
    idx = [10, 20, 30, 40]
    got = list(SubsetRandomSampler(idx, generator=kindle.Generator().manual_seed(0)))
    assert sorted(got) == idx and len(SubsetRandomSampler(idx)) == 4

    w = WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200)
    draws = list(w)
    assert len(draws) == 200 == len(w) and set(draws) <= {1, 3} and draws.count(3) > draws.count(1)
    assert w.weights.dtype == kindle.float64
    no_rep = list(WeightedRandomSampler([1.0, 2.0, 3.0, 4.0], 4, replacement=False))
    assert sorted(no_rep) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        WeightedRandomSampler([1.0], True)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        WeightedRandomSampler([1.0], 1, replacement=None)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given "
                                         r"weights have shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 1)


def test_batch_sampler_matches_torch():
    torch = pytest.importorskip("torch")
    for n, bs, drop in [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False), (0, 2, False)]:
        ours = BatchSampler(SequentialSampler(range(n)), bs, drop)
        theirs = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(n)),
                                               bs, drop)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    for bad in [0, -1, True, 2.0]:
        with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
            BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, 0)


# ----------------------------------------------------------------------------- collation
def _collate_cases():
    k = kindle
    return [
        [k.tensor([1.0, 2.0]), k.tensor([3.0, 4.0])],
        [k.arange(6).reshape(2, 3), k.arange(6, 12).reshape(2, 3)],
        [k.tensor(1.5, dtype=k.float64), k.tensor(2.5, dtype=k.float64)],
        [1, 2, 3],
        [1.5, 2.0],
        [True, False],
        ["a", "bc"],
        [b"x", b"y"],
        [np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)],
        [np.float32(1.0), np.float32(2.0)],
        [np.int16(3), np.int16(4)],
        [np.bool_(True), np.bool_(False)],
        [np.float64(0.5), np.float64(1.5)],
        [(1, 2.0, "a"), (3, 4.0, "b")],
        [[k.ones(2), 1], [k.zeros(2), 2]],
        [{"x": k.ones(3), "y": 1, "z": {"w": 2.0}}, {"x": k.zeros(3), "y": 2, "z": {"w": 3.0}}],
        [collections.OrderedDict(b=1, a=2), collections.OrderedDict(b=3, a=4)],
        [Point(1, k.ones(1)), Point(2, k.zeros(1))],
        [{"img": np.zeros((2, 2), dtype=np.uint8), "label": 3},
         {"img": np.ones((2, 2), dtype=np.uint8), "label": 4}],
    ]


def test_default_collate_matches_torch():
    torch = pytest.importorskip("torch")
    for batch in _collate_cases():
        ours = default_collate(batch)
        theirs = torch.utils.data.default_collate(_to_torch(batch))
        assert_same_structure(ours, theirs)


def test_default_convert_matches_torch():
    torch = pytest.importorskip("torch")
    cases = [np.array([1, 2]), np.float32(2.5), np.int64(3), 7, "s", Point(np.array(0), 1),
             [np.array([1.5]), 2], (np.array([1]), "x"), {"a": np.array([[1, 2]], dtype=np.uint8)},
             np.array(["a", "b"])]
    for case in cases:
        ours = default_convert(case)
        theirs = torch.utils.data.default_convert(case)
        if isinstance(case, np.ndarray) and case.dtype.kind == "U":
            assert ours is case and theirs is case  # strings stay arrays
            continue
        assert_same_structure(ours, theirs)


def test_default_collate_errors():
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(RuntimeError, match="stack"):
        default_collate([kindle.ones(2), kindle.ones(3)])


# ----------------------------------------------------------------------------- DataLoader
class Squares(Dataset):
    """Sample i: a dict with a float32 tensor, an int and a string."""

    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": kindle.full((2, 3), float(i)), "i": i, "name": f"s{i}"}


class Range(IterableDataset):
    """start..end-1, split between the workers by get_worker_info (PyTorch's docs example)."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = int(math.ceil((self.end - self.start) / info.num_workers))
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per, self.end)))


def test_dataloader_batches_and_len_match_torch():
    torch = pytest.importorskip("torch")
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    ours_ds = TensorDataset(kindle.from_numpy(x), kindle.arange(10))
    theirs_ds = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.arange(10))
    configs = [dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None),
               dict(batch_size=10), dict(batch_size=4, sampler=[9, 1, 5, 2, 0]),
               dict(batch_sampler=[[0, 1], [5], [9, 8, 7]])]
    for cfg in configs:
        ours = DataLoader(ours_ds, **cfg)
        theirs = torch.utils.data.DataLoader(theirs_ds, **cfg)
        assert len(ours) == len(theirs)
        assert_same_structure(list(ours), list(theirs))


def test_dataloader_iterable_dataset_single_process():
    torch = pytest.importorskip("torch")

    class TRange(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3, 10))

        def __len__(self):
            return 7

    for cfg in [dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None)]:
        ours, theirs = DataLoader(Range(3, 10), **cfg), torch.utils.data.DataLoader(TRange(), **cfg)
        assert_same_structure(list(ours), list(theirs))
    with pytest.raises(TypeError):
        len(DataLoader(Range(0, 3)))  # no __len__


def test_dataloader_argument_errors_match_torch():
    torch = pytest.importorskip("torch")
    tds = torch.utils.data.TensorDataset(torch.arange(4))
    kds = TensorDataset(kindle.arange(4))

    class TIt(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter([])

    bad = [
        (dict(num_workers=-1), False),
        (dict(timeout=-1), False),
        (dict(prefetch_factor=2), False),
        (dict(num_workers=1, prefetch_factor=-1), False),
        (dict(persistent_workers=True), False),
        (dict(shuffle=True, sampler=[0, 1]), False),
        (dict(batch_sampler=[[0]], batch_size=2), False),
        (dict(batch_sampler=[[0]], shuffle=True), False),
        (dict(batch_sampler=[[0]], drop_last=True), False),
        (dict(batch_size=None, drop_last=True), False),
        (dict(multiprocessing_context="fork"), False),
        (dict(num_workers=1, multiprocessing_context="nonsense"), False),
        (dict(shuffle=True), True),
    ]
    for kwargs, iterable in bad:
        with pytest.raises(ValueError) as theirs:
            torch.utils.data.DataLoader(TIt() if iterable else tds, **kwargs)
        with pytest.raises(ValueError) as ours:
            DataLoader(Range(0, 1) if iterable else kds, **kwargs)
        assert str(ours.value) == str(theirs.value), kwargs
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Range(0, 1), sampler=[0])
    with pytest.raises(ValueError, match="expected unspecified batch_sampler option"):
        DataLoader(Range(0, 1), batch_sampler=[[0]])
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid context"):
        DataLoader(kds, num_workers=1, multiprocessing_context=3)
    loader = DataLoader(kds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after "
                                         "DataLoader is initialized"):
        loader.batch_size = 3


def test_dataloader_shuffle_reproducible_and_complete():
    ds = TensorDataset(kindle.arange(50))
    order = lambda loader: [i for b in loader for i in b[0].tolist()]  # noqa: E731
    g = kindle.Generator()
    g.manual_seed(123)
    a = order(DataLoader(ds, batch_size=7, shuffle=True, generator=g))
    g.manual_seed(123)
    assert order(DataLoader(ds, batch_size=7, shuffle=True, generator=g)) == a
    assert sorted(a) == list(range(50)) and a != list(range(50))
    kindle.manual_seed(7)
    b = order(DataLoader(ds, batch_size=7, shuffle=True))
    kindle.manual_seed(7)
    assert order(DataLoader(ds, batch_size=7, shuffle=True)) == b
    loader = DataLoader(ds, batch_size=50, shuffle=True)
    assert order(loader) != order(loader)  # a new order each epoch


def test_dataloader_custom_collate_and_worker_info_in_main():
    assert get_worker_info() is None
    loader = DataLoader(Squares(4), batch_size=2, collate_fn=lambda b: [s["i"] for s in b])
    assert list(loader) == [[0, 1], [2, 3]]
    unbatched = list(DataLoader(Squares(2), batch_size=None))
    assert unbatched[1]["i"] == 1 and isinstance(unbatched[1]["x"], kindle.Tensor)


# ----------------------------------------------------------------------------- workers
def _flat(batches):
    return [(b["x"].tolist(), b["i"].tolist(), b["name"]) for b in batches]


def test_workers_give_the_same_batches_in_order():
    ds = Squares(11)
    ref = _flat(DataLoader(ds, batch_size=3))
    got = _flat(DataLoader(ds, batch_size=3, num_workers=2))
    assert got == ref
    # Shuffled with the same seed: the same order with or without workers.
    g = kindle.Generator()
    g.manual_seed(4)
    ref = _flat(DataLoader(ds, batch_size=3, shuffle=True, generator=g))
    g.manual_seed(4)
    assert _flat(DataLoader(ds, batch_size=3, shuffle=True, generator=g, num_workers=2)) == ref
    loader = DataLoader(ds, batch_size=4, num_workers=2, pin_memory=True, prefetch_factor=1)
    assert len(loader) == 3 and [b["i"].tolist() for b in loader][-1] == [8, 9, 10]
    unordered = DataLoader(ds, batch_size=3, num_workers=2, in_order=False)
    assert sorted(_flat(unordered)) == sorted(_flat(DataLoader(ds, batch_size=3)))


def test_workers_shut_down_when_exhausted_or_deleted():
    it = iter(DataLoader(Squares(6), batch_size=2, num_workers=2))
    list(it)
    assert [w.exitcode for w in it._workers] == [0, 0]  # exited by themselves, not killed
    it = iter(DataLoader(Squares(20), batch_size=2, num_workers=2))
    next(it)
    workers = list(it._workers)
    del it  # mid-epoch
    assert [w.exitcode for w in workers] == [0, 0]
    # Deleted inside a reference cycle: the collector finalizes the queues first, and the
    # workers must still stop promptly (through the done event).
    it = iter(DataLoader(Squares(20), batch_size=2, num_workers=2))
    next(it)
    it.cycle = it
    workers = list(it._workers)
    start = time.monotonic()
    del it
    gc.collect()
    assert [w.exitcode for w in workers] == [0, 0] and time.monotonic() - start < 3


class RaiseAt(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError("sample 5 is corrupt")
        return i


def test_worker_exception_is_reraised_with_its_traceback():
    loader = DataLoader(RaiseAt(), batch_size=2, num_workers=2)
    seen = []
    with pytest.raises(ValueError) as info:
        for b in loader:
            seen.append(b.tolist())
    msg = str(info.value)
    assert seen == [[0, 1], [2, 3]]
    assert msg.startswith("Caught ValueError in DataLoader worker process 0.\nOriginal Traceback")
    assert "sample 5 is corrupt" in msg and "__getitem__" in msg


class KillSelf(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


def test_killed_worker_raises_instead_of_hanging():
    start = time.monotonic()
    with pytest.raises(RuntimeError,
                       match=r"DataLoader worker \(pid \d+\) is killed by signal: Killed"):
        list(DataLoader(KillSelf(), batch_size=2, num_workers=2))
    assert time.monotonic() - start < 5


class KillAfterSending(Dataset):
    """Returns a tensor batch, then the worker dies before the main process fetches the batch's
    shared memory from it."""
    def __len__(self):
        return 4

    def __getitem__(self, i):
        import threading
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
        return kindle.full((1000,), float(i))


def test_worker_killed_after_sending_says_killed():
    it = iter(DataLoader(KillAfterSending(), batch_size=2, num_workers=1))
    time.sleep(1.5)  # the batch waits in the queue; its worker is dead by now
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) is killed by signal: Killed"):
        list(it)


class Sleepy(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(1)
        return i


def test_timeout():
    start = time.monotonic()
    it = iter(DataLoader(Sleepy(), batch_size=1, num_workers=1, timeout=0.2))
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.2 seconds"):
        next(it)
    assert time.monotonic() - start < 1
    it._shutdown_workers()


def test_iterable_dataset_with_workers_is_sharded():
    loader = DataLoader(Range(3, 14), batch_size=2, num_workers=2)
    batches = [b.tolist() for b in loader]
    # Each worker yields its own shard; batches alternate between the workers.
    assert sorted(v for b in batches for v in b) == list(range(3, 14))
    assert batches[:2] == [[3, 4], [9, 10]]

    class Unsharded(IterableDataset):
        def __iter__(self):
            return iter(range(3))

    # Without sharding each worker yields the whole dataset (as in PyTorch).
    dup = DataLoader(Unsharded(), batch_size=None, num_workers=2)
    assert sorted(int(v) for v in dup) == [0, 0, 1, 1, 2, 2]


class WhoAmI(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return {"id": info.id, "n": info.num_workers, "seed": info.seed,
                "initial": kindle.initial_seed(), "py": random.random(),
                "k": kindle.rand(1).item(), "np": float(np.random.rand()), "pid": os.getpid(),
                "init": os.environ.get("H3_INIT")}


def _init_fn(worker_id):
    os.environ["H3_INIT"] = f"w{worker_id}"


def test_worker_seeds_info_init_fn_and_persistent_workers():
    g = kindle.Generator().manual_seed(99)
    loader = DataLoader(WhoAmI(), batch_size=None, num_workers=2, worker_init_fn=_init_fn,
                        generator=g, persistent_workers=True)
    first = list(loader)
    by_worker = {s["id"]: s for s in first}
    assert set(by_worker) == {0, 1} and all(s["n"] == 2 for s in first)
    assert by_worker[1]["seed"] == by_worker[0]["seed"] + 1
    assert all(s["initial"] == s["seed"] for s in first)  # kindle.manual_seed(base_seed + id)
    for key in ("py", "k", "np"):  # Python, Kindle and NumPy streams all differ per worker
        assert by_worker[0][key] != by_worker[1][key], key
    assert [s["init"] for s in first] == ["w0", "w1", "w0", "w1"]
    second = list(loader)  # persistent: the same processes
    assert {s["pid"] for s in second} == {s["pid"] for s in first}
    g.manual_seed(99)  # the base seed comes from the loader's generator
    again = list(DataLoader(WhoAmI(), batch_size=None, num_workers=2, generator=g))
    assert [s["seed"] for s in again] == [s["seed"] for s in first]
    assert [s["k"] for s in again] == [s["k"] for s in first]
    loader._iterator._shutdown_workers()


def test_worker_numpy_seed_matches_torch():
    pytest.importorskip("torch")
    from torch.utils.data._utils.worker import _generate_state as torch_state

    from kindle.utils.data._utils.worker import _generate_state
    rng = random.Random(0)
    for _ in range(50):
        base, wid = rng.getrandbits(63), rng.randrange(64)
        assert _generate_state(base, wid) == torch_state(base, wid)


class Unpicklable(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return lambda: i


def test_unpicklable_batch_is_an_error_not_a_hang():
    with pytest.raises(Exception, match="in DataLoader worker process"):
        list(DataLoader(Unpicklable(), batch_size=None, num_workers=1, timeout=10,
                        collate_fn=lambda x: x))


def test_worker_batches_come_through_shared_memory():
    # The batch the main process receives is mapped from the worker's shared memory.
    b = next(iter(DataLoader(Squares(4), batch_size=2, num_workers=1)))
    assert b["x"].is_shared()
    assert b["x"].tolist() == [[[0.0] * 3] * 2, [[1.0] * 3] * 2]
    b["x"].add_(1)  # and is an ordinary writable tensor
    assert b["x"].sum().item() == 18.0
