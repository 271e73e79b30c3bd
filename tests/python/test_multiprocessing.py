"""kindle.multiprocessing: the standard multiprocessing API, and tensors that cross processes
through shared memory (a write on one side is seen on the other), views and requires_grad
included. Few child processes, each short-lived."""
import multiprocessing as std_mp
import pickle

import pytest

import kindle
import kindle.multiprocessing as kmp
from kindle.multiprocessing.reductions import dumps


def test_reexports_the_multiprocessing_api():
    for name in ["Process", "Queue", "SimpleQueue", "Pipe", "Pool", "Event", "Lock",
                 "get_context", "get_start_method", "get_all_start_methods", "cpu_count",
                 "current_process"]:
        assert hasattr(kmp, name), name
    assert kmp.get_context("fork").get_start_method() == "fork"
    assert kindle.multiprocessing is kmp
    assert kmp.get_all_sharing_strategies() == {"file_descriptor"}
    kmp.set_sharing_strategy("file_descriptor")
    assert kmp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(ValueError, match="file_system"):
        kmp.set_sharing_strategy("file_system")


def test_api_matches_torch_multiprocessing():
    torch = pytest.importorskip("torch")
    missing = [n for n in ["set_sharing_strategy", "get_sharing_strategy",
                           "get_all_sharing_strategies", *std_mp.__all__]
               if hasattr(torch.multiprocessing, n) and not hasattr(kmp, n)]
    assert missing == []


def test_round_trip_shares_storage_in_one_process():
    a, b = kmp.Pipe()
    base = kindle.arange(20.).reshape(4, 5)
    view = base[1:, ::2]
    a.send(view)
    got = b.recv()
    assert base.is_shared() and got.is_shared()
    assert tuple(got.shape) == (3, 3) and got.stride() == (5, 2) and got.storage_offset() == 5
    assert got.tolist() == view.tolist()
    got.mul_(-1)  # the same memory: the write shows through the original base
    assert base[1, 0].item() == -5.0 and base[1, 1].item() == 6.0 and base[0, 0].item() == 0.0
    for t in [kindle.zeros(0, 3), kindle.tensor(3.5, dtype=kindle.float64),
              kindle.tensor([True, False]), kindle.ones(2, 2, dtype=kindle.bfloat16)]:
        a.send(t)
        r = b.recv()
        assert r.dtype == t.dtype and tuple(r.shape) == tuple(t.shape)
        assert r.float().tolist() == t.float().tolist()
    a.close()
    b.close()


def test_requires_grad_and_parameters_cross():
    a, b = kmp.Pipe()
    leaf = kindle.ones(3, requires_grad=True)
    a.send(leaf)
    got = b.recv()
    assert got.requires_grad and got.is_leaf and got.grad_fn is None
    param = kindle.nn.Parameter(kindle.zeros(2))
    a.send(param)
    got = b.recv()
    assert type(got) is kindle.nn.Parameter and got.requires_grad
    buf = kindle.nn.Buffer(kindle.ones(2), persistent=False)
    a.send(buf)
    got = b.recv()
    assert type(got) is kindle.nn.Buffer and got.persistent is False and got.is_shared()
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        a.send(leaf * 2)
    a.send((leaf * 2).detach())  # detach() is the way to send the data
    assert b.recv().tolist() == [2.0, 2.0, 2.0]


def test_plain_pickle_is_not_affected():
    # Only multiprocessing's pickler shares memory: pickle.dumps still copies the data.
    t = kindle.ones(3)
    u = pickle.loads(pickle.dumps(t))
    u.add_(1)
    assert t.tolist() == [1.0, 1.0, 1.0] and not t.is_shared()
    assert isinstance(dumps(t), bytes) and t.is_shared()


def _child_writes(inbox, outbox):
    items = inbox.get()
    view, leaf = items["view"], items["leaf"]
    view.add_(1)  # seen by the parent: shared memory, not a copy
    made = kindle.arange(6.).reshape(2, 3).t()  # a tensor made here, sent back non-contiguous
    outbox.put({"meta": (tuple(view.shape), view.stride(), view.storage_offset(),
                         view.is_shared(), leaf.requires_grad, leaf.is_leaf),
                "made": made})
    inbox.get()  # stay alive until the parent has mapped `made` (its descriptor comes from here)


def test_child_write_is_seen_by_parent_through_a_queue():
    ctx = kmp.get_context("fork")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_child_writes, args=(inbox, outbox))
    p.start()
    try:
        base = kindle.zeros(4, 5)
        inbox.put({"view": base[1:, ::2], "leaf": kindle.ones(2, requires_grad=True)})
        reply = outbox.get(timeout=20)
        made = reply["made"]
        inbox.put("done")
    finally:
        p.join(timeout=20)
    assert p.exitcode == 0
    assert reply["meta"] == ((3, 3), (5, 2), 5, True, True, True)
    expected = [[0.0] * 5] + [[1.0, 0.0, 1.0, 0.0, 1.0]] * 3
    assert base.tolist() == expected
    assert made.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]] and made.stride() == (1, 3)
    made.add_(1)  # still an ordinary, writable tensor after its sender exited
    assert made.sum().item() == 21.0


def _spawned_child(t, outbox):
    t.fill_(7.0)
    outbox.put(t.sum().item())


def test_tensor_as_argument_of_a_spawned_process():
    # Spawn pickles the arguments: the descriptor travels with the new process.
    ctx = kmp.get_context("spawn")
    outbox = ctx.Queue()
    t = kindle.zeros(3)
    p = ctx.Process(target=_spawned_child, args=(t, outbox))
    p.start()
    try:
        assert outbox.get(timeout=60) == 21.0
    finally:
        p.join(timeout=20)
    assert p.exitcode == 0 and t.tolist() == [7.0, 7.0, 7.0]
