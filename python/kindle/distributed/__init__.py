"""kindle.distributed: torch.distributed's API over Kindle's process groups (C++, Gloo engine).

Processes meet through a store (env://, tcp://, file://), form the default group with
init_process_group, and run collectives on CPU tensors. Every collective is issued to the
group's worker thread in order; async_op=True returns a Work to wait on. A failed or timed-out
collective raises DistBackendError naming the ranks that exited or never arrived."""
import atexit
import datetime
import io
import os
import pickle
from urllib.parse import parse_qs, urlparse

import numpy as np

import kindle

from .._C import _distributed as _d

DistError = _d.DistError
DistBackendError = _d.DistBackendError
DistStoreError = _d.DistStoreError
DistNetworkError = DistBackendError
Store = _d.Store
TCPStore = _d.TCPStore
FileStore = _d.FileStore
PrefixStore = _d.PrefixStore
ProcessGroup = _d.ProcessGroup

__all__ = [
    "is_available", "init_process_group", "destroy_process_group", "is_initialized", "get_rank", "get_world_size",
    "get_backend", "new_group", "barrier", "monitored_barrier", "all_reduce", "broadcast", "reduce", "all_gather",
    "all_gather_into_tensor", "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
    "all_to_all_single", "send", "recv", "isend", "irecv", "batch_isend_irecv", "P2POp", "all_gather_object",
    "broadcast_object_list", "gather_object", "scatter_object_list", "ReduceOp", "Backend", "GroupMember", "group",
    "Work", "Store", "TCPStore", "FileStore", "PrefixStore", "HashStore", "DistError", "DistBackendError",
    "DistStoreError", "get_process_group_ranks", "get_global_rank", "get_group_rank",
]

default_pg_timeout = datetime.timedelta(minutes=30)


def is_available():
    """Whether this Kindle has a distributed backend (built with Gloo)."""
    return bool(_d.gloo_available())


def is_gloo_available():
    return is_available()


def is_nccl_available():
    return False


def is_mpi_available():
    return False


def is_ucc_available():
    return False


def is_torchelastic_launched():
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


class _ReduceOpValue:
    __slots__ = ("name", "value")

    def __init__(self, name, value):
        self.name, self.value = name, value

    def __repr__(self):
        return f"<RedOpType.{self.name}: {self.value}>"

    def __eq__(self, other):
        return isinstance(other, _ReduceOpValue) and other.value == self.value

    def __hash__(self):
        return hash(self.value)

    def __reduce__(self):
        return (getattr, (ReduceOp, self.name))


class ReduceOp:
    """The reductions of all_reduce, reduce and reduce_scatter (ReduceOp.SUM and the like)."""
    SUM = _ReduceOpValue("SUM", 0)
    AVG = _ReduceOpValue("AVG", 1)
    PRODUCT = _ReduceOpValue("PRODUCT", 2)
    MIN = _ReduceOpValue("MIN", 3)
    MAX = _ReduceOpValue("MAX", 4)
    BAND = _ReduceOpValue("BAND", 5)
    BOR = _ReduceOpValue("BOR", 6)
    BXOR = _ReduceOpValue("BXOR", 7)
    PREMUL_SUM = None
    RedOpType = None


ReduceOp.RedOpType = ReduceOp
reduce_op = ReduceOp


def _op_value(op):
    if isinstance(op, _ReduceOpValue):
        return op.value
    raise TypeError(f"Invalid op {op!r}: expected a kindle.distributed.ReduceOp (ReduceOp.SUM, ReduceOp.AVG, ...)")


class Backend(str):
    """Backend names: Backend("GLOO") == "gloo"."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    backend_list = ["gloo", "nccl", "ucc", "mpi"]
    default_device_backend_map = {"cpu": "gloo", "cuda": "nccl"}

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {type(name).__name__}")
        return str.__new__(cls, name.lower())


class _NonMember:
    def __repr__(self):
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    WORLD = None  # the default group, once initialized
    NON_GROUP_MEMBER = _NonMember()


class group:  # noqa: N801  (torch's name)
    WORLD = None


class HashStore(TCPStore):
    """A store inside this process (torch.distributed.HashStore): a TCPStore served on a free
    loopback port that only this process uses."""

    def __init__(self):
        super().__init__("127.0.0.1", 0, None, True)


class _State:
    def __init__(self):
        self.default_pg = None
        self.store = None
        self.backend = None
        self.ranks = {}  # group -> its members' global ranks
        self.group_count = 0
        self.timeout = default_pg_timeout


_state = _State()


def _seconds(timeout):
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _debug_detail():
    level = os.environ.get("TORCH_DISTRIBUTED_DEBUG", os.environ.get("KINDLE_DISTRIBUTED_DEBUG", "OFF"))
    return level.upper() == "DETAIL"


def _require_init():
    if _state.default_pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")


def _check_backend(backend):
    if backend is None:
        return "gloo"
    name = str(backend).lower()
    # "cpu:gloo,cuda:nccl": the CPU part decides here (Kindle has no CUDA backend yet).
    if ":" in name:
        parts = dict(p.split(":", 1) for p in name.split(",") if ":" in p)
        name = parts.get("cpu", "gloo")
    if name == "gloo":
        if not is_available():
            raise RuntimeError("Distributed package doesn't have Gloo built in: this Kindle was built without Gloo "
                               "(apt install libgloo-dev, then rebuild Kindle)")
        return name
    if name in ("nccl", "ucc", "mpi", "xccl"):
        raise RuntimeError(f"Distributed package doesn't have {name.upper()} built in: Kindle's only backend is "
                           "'gloo' (CPU); use backend='gloo'")
    raise ValueError(f"Invalid backend: '{backend}' (Kindle supports 'gloo')")


def _env(name, what):
    v = os.environ.get(name)
    if v is None or v == "":
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable {name} "
                         f"expected, but not set ({what})")
    return v


def _make_store(init_method, rank, world_size, timeout_s):
    url = urlparse(init_method)
    query = {k: v[-1] for k, v in parse_qs(url.query).items()}
    if "rank" in query and rank == -1:
        rank = int(query["rank"])
    if "world_size" in query and world_size == -1:
        world_size = int(query["world_size"])
    if url.scheme == "env":
        if rank == -1:
            rank = int(_env("RANK", "this process's rank"))
        if world_size == -1:
            world_size = int(_env("WORLD_SIZE", "the number of processes"))
        host = _env("MASTER_ADDR", "the address of rank 0")
        port = int(_env("MASTER_PORT", "a free port on rank 0"))
    elif url.scheme == "tcp":
        if rank == -1 or world_size == -1:
            raise ValueError("init_process_group: tcp:// rendezvous needs rank and world_size "
                             f"(got rank={rank}, world_size={world_size})")
        host, port = url.hostname, url.port
        if host is None or port is None:
            raise ValueError(f"init_process_group: tcp:// init_method needs host:port, got {init_method!r}")
    elif url.scheme == "file":
        if world_size == -1:
            raise ValueError("init_process_group: file:// rendezvous needs world_size")
        if rank == -1:
            raise ValueError("init_process_group: file:// rendezvous needs rank")
        path = url.path if not url.netloc else url.netloc + url.path
        return FileStore(path, world_size, timeout_s), rank, world_size
    else:
        raise ValueError(f"init_process_group: unknown init_method {init_method!r} (expected env://, tcp:// or "
                         "file://)")
    _check_rank(rank, world_size)
    # Under the launcher the store is its own (a worker that dies does not take the store along).
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    # The group's arrival check (not the store) waits for the others, so that it names the missing.
    store = TCPStore(host, port, world_size, rank == 0 and not agent, timeout_s, False)
    return store, rank, world_size


def _check_rank(rank, world_size):
    if world_size <= 0:
        raise ValueError(f"init_process_group: world_size must be positive, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"init_process_group: rank {rank} is not in [0, {world_size - 1}] (world_size "
                         f"{world_size})")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Joins this process to the default process group (every rank calls it)."""
    if _state.default_pg is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = _check_backend(backend)
    timeout_s = _seconds(timeout)
    if store is not None:
        if init_method is not None:
            raise ValueError("Cannot specify both init_method and store.")
        if rank < 0 or world_size <= 0:
            raise ValueError("init_process_group: with store=, rank and world_size must be given")
        _check_rank(rank, world_size)
    else:
        store, rank, world_size = _make_store(init_method or "env://", rank, world_size, timeout_s)
    store._register_rank(rank)
    pg = _d.new_gloo_group(store, rank, world_size, timeout_s, _debug_detail(), "default", list(range(world_size)))
    _state.default_pg, _state.store, _state.backend, _state.timeout = pg, store, name, timeout_s
    _state.ranks = {pg: list(range(world_size))}
    GroupMember.WORLD = group.WORLD = pg


def is_initialized():
    return _state.default_pg is not None


def _resolve(group_):
    _require_init()
    return _state.default_pg if group_ is None else group_


def _member(group_):
    return group_ is not GroupMember.NON_GROUP_MEMBER


def destroy_process_group(group=None):  # noqa: A002
    """Stops the group's worker (after what was issued); without a group, all of them and the store."""
    if group is None or group is _state.default_pg:
        for pg in list(_state.ranks):
            pg.shutdown()
        _state.__init__()
        GroupMember.WORLD = globals()["group"].WORLD = None
        return
    if _member(group):
        group.shutdown()
        _state.ranks.pop(group, None)


atexit.register(lambda: destroy_process_group() if _state.default_pg is not None else None)


def get_rank(group=None):  # noqa: A002
    g = _resolve(group)
    if not _member(g):
        return -1
    return g.rank()


def get_world_size(group=None):  # noqa: A002
    g = _resolve(group)
    if not _member(g):
        return -1
    return g.size()


def get_backend(group=None):  # noqa: A002
    _resolve(group)
    return Backend(_state.backend)


def get_process_group_ranks(group):  # noqa: A002
    return list(_state.ranks[_resolve(group)])


def get_global_rank(group, group_rank):  # noqa: A002
    return get_process_group_ranks(group)[group_rank]


def get_group_rank(group, global_rank):  # noqa: A002
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def get_node_local_rank(fallback_rank=None):
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment (start the program with kindle.distributed.run)")


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None):
    """A group of some of the ranks. Every rank of the world calls it, members or not (as torch)."""
    _require_init()
    world = _state.default_pg.size()
    ranks = sorted(range(world) if ranks is None else set(int(r) for r in ranks))
    for r in ranks:
        if not 0 <= r < world:
            raise ValueError(f"new_group: rank {r} is not a rank of the world (size {world})")
    _check_backend(backend)
    _state.group_count += 1
    me = _state.default_pg.rank()
    if me not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    name = f"group_{_state.group_count}"
    timeout_s = _seconds(timeout) if timeout is not None else _state.timeout
    pg = _d.new_gloo_group(_state.store, ranks.index(me), len(ranks), timeout_s, _debug_detail(), name, ranks)
    _state.ranks[pg] = ranks
    return pg


def _group_rank(g, global_rank, what):
    ranks = _state.ranks[g]
    if global_rank not in ranks:
        raise ValueError(f"{what} rank {global_rank} is not part of the group (its ranks are {ranks})")
    return ranks.index(global_rank)


class Work:
    """An issued collective (torch.distributed.Work): wait() blocks and raises its error."""

    def __init__(self, work, result=None):
        self._work = work
        self._result = [] if result is None else result

    def wait(self, timeout=None):
        t = None if timeout is None else _seconds(timeout)
        return self._work.wait(t)

    def is_completed(self):
        return self._work.is_completed()

    def is_success(self):
        return self._work.is_success()

    def exception(self):
        return self._work.exception()

    def source_rank(self):
        return self._work._source_rank()

    def result(self):
        return self._result

    def get_future(self):
        """A kindle.futures.Future whose value is result() once the collective is done."""
        from ..futures import Future
        return Future._of_work(self, self._result)


def _issue(work, async_op, result=None):
    w = Work(work, result)
    if async_op:
        return w
    w.wait()
    return None


def _check_tensor(t, op, what="tensor"):
    if not isinstance(t, kindle.Tensor):
        raise TypeError(f"{op}: {what} must be a kindle.Tensor, got {type(t).__name__}")


def _check_list(ts, op, what):
    if not isinstance(ts, (list, tuple)):
        raise TypeError(f"{op}: {what} must be a list of tensors, got {type(ts).__name__}")
    for t in ts:
        _check_tensor(t, op, f"an element of {what}")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    _check_tensor(tensor, "all_reduce")
    g = _resolve(group)
    if not _member(g):
        return None
    return _issue(g.all_reduce(tensor, _op_value(op)), async_op, [tensor])


def all_reduce_coalesced(tensors, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    _check_list(tensors, "all_reduce_coalesced", "tensors")
    g = _resolve(group)
    if not _member(g):
        return None
    return _issue(g.all_reduce_coalesced(list(tensors), _op_value(op)), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):  # noqa: A002
    _check_tensor(tensor, "broadcast")
    g = _resolve(group)
    if not _member(g):
        return None
    root = group_src if group_src is not None else _group_rank(g, 0 if src is None else src, "broadcast: src")
    return _issue(g.broadcast(tensor, root), async_op, [tensor])


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):  # noqa: A002
    _check_tensor(tensor, "reduce")
    g = _resolve(group)
    if not _member(g):
        return None
    root = group_dst if group_dst is not None else _group_rank(g, 0 if dst is None else dst, "reduce: dst")
    return _issue(g.reduce(tensor, root, _op_value(op)), async_op, [tensor])


def all_gather(tensor_list, tensor, group=None, async_op=False):  # noqa: A002
    _check_list(tensor_list, "all_gather", "tensor_list")
    _check_tensor(tensor, "all_gather")
    g = _resolve(group)
    if not _member(g):
        return None
    return _issue(g.all_gather(list(tensor_list), tensor), async_op, [list(tensor_list)])


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):  # noqa: A002
    _check_tensor(output_tensor, "all_gather_into_tensor", "output_tensor")
    _check_tensor(input_tensor, "all_gather_into_tensor", "input_tensor")
    g = _resolve(group)
    if not _member(g):
        return None
    return _issue(g.all_gather_into_tensor(output_tensor, input_tensor), async_op, [output_tensor])


_all_gather_base = all_gather_into_tensor


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):  # noqa: A002
    _check_tensor(tensor, "gather")
    g = _resolve(group)
    if not _member(g):
        return None
    root = group_dst if group_dst is not None else _group_rank(g, 0 if dst is None else dst, "gather: dst")
    outs = list(gather_list) if (gather_list is not None and g.rank() == root) else []
    if gather_list is not None and g.rank() != root and len(gather_list):
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    return _issue(g.gather(outs, tensor, root), async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):  # noqa: A002
    _check_tensor(tensor, "scatter")
    g = _resolve(group)
    if not _member(g):
        return None
    root = group_src if group_src is not None else _group_rank(g, 0 if src is None else src, "scatter: src")
    if g.rank() == root:
        if scatter_list is None:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        ins = list(scatter_list)
    else:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
        ins = []
    return _issue(g.scatter(tensor, ins, root), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    _check_tensor(output, "reduce_scatter", "output")
    _check_list(input_list, "reduce_scatter", "input_list")
    g = _resolve(group)
    if not _member(g):
        return None
    return _issue(g.reduce_scatter(output, list(input_list), _op_value(op)), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    _check_tensor(output, "reduce_scatter_tensor", "output")
    _check_tensor(input, "reduce_scatter_tensor", "input")
    g = _resolve(group)
    if not _member(g):
        return None
    return _issue(g.reduce_scatter_tensor(output, input, _op_value(op)), async_op, [output])


_reduce_scatter_base = reduce_scatter_tensor


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):  # noqa: A002
    _check_list(output_tensor_list, "all_to_all", "output_tensor_list")
    _check_list(input_tensor_list, "all_to_all", "input_tensor_list")
    g = _resolve(group)
    if not _member(g):
        return None
    return _issue(g.all_to_all(list(output_tensor_list), list(input_tensor_list)), async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,  # noqa: A002
                      async_op=False):
    _check_tensor(output, "all_to_all_single", "output")
    _check_tensor(input, "all_to_all_single", "input")
    g = _resolve(group)
    if not _member(g):
        return None
    return _issue(g.all_to_all_single(output, input, list(output_split_sizes or []), list(input_split_sizes or [])),
                  async_op)


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):  # noqa: A002
    _check_tensor(tensor, "isend")
    g = _resolve(group)
    if not _member(g):
        return None
    peer = group_dst if group_dst is not None else _group_rank(g, dst, "isend: dst")
    return Work(g.send(tensor, peer, tag))


def irecv(tensor, src=None, group=None, tag=0, group_src=None):  # noqa: A002
    _check_tensor(tensor, "irecv")
    g = _resolve(group)
    if not _member(g):
        return None
    if group_src is not None:
        peer = group_src
    else:
        peer = -1 if src is None else _group_rank(g, src, "irecv: src")
    return Work(g.recv(tensor, peer, tag))


def send(tensor, dst=None, group=None, tag=0, group_dst=None):  # noqa: A002
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        w.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):  # noqa: A002
    """Receives into tensor; returns the sender's rank (of the world; -1 for a non-member)."""
    w = irecv(tensor, src, group, tag, group_src)
    if w is None:
        return -1
    w.wait()
    g = _resolve(group)
    return _state.ranks[g][w.source_rank()]


class P2POp:
    """One point-to-point operation for batch_isend_irecv: P2POp(dist.isend, tensor, peer)."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, group_peer


def batch_isend_irecv(p2p_op_list):
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type ``torch.distributed.P2POp``.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works


def barrier(group=None, async_op=False, device_ids=None):  # noqa: A002
    g = _resolve(group)
    if not _member(g):
        return None
    return _issue(g.barrier(), async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):  # noqa: A002
    """A barrier whose failure names the ranks that did not arrive (rank 0 checks in the others)."""
    g = _resolve(group)
    if not _member(g):
        return None
    g.monitored_barrier(None if timeout is None else _seconds(timeout), wait_all_ranks)
    return None


# ---- object collectives: pickled into uint8 tensors -------------------------------------------
def _to_tensor(obj):
    buf = io.BytesIO()
    pickle.Pickler(buf).dump(obj)
    data = np.frombuffer(buf.getbuffer(), dtype=np.uint8).copy()
    return kindle.from_numpy(data), len(data)


def _from_tensor(t, n):
    return pickle.loads(bytes(t[:n].numpy().tobytes()))


def all_gather_object(object_list, obj, group=None):  # noqa: A002
    g = _resolve(group)
    if not _member(g):
        return None
    t, n = _to_tensor(obj)
    sizes = [kindle.zeros(1, dtype=kindle.int64) for _ in range(g.size())]
    all_gather(sizes, kindle.tensor([n], dtype=kindle.int64), group=g)
    m = max(int(s.item()) for s in sizes)
    padded = kindle.zeros(m, dtype=kindle.uint8)
    padded[:n] = t
    outs = [kindle.zeros(m, dtype=kindle.uint8) for _ in range(g.size())]
    all_gather(outs, padded, group=g)
    for i, (o, s) in enumerate(zip(outs, sizes)):
        object_list[i] = _from_tensor(o, int(s.item()))
    return None


def gather_object(obj, object_gather_list=None, dst=0, group=None, group_dst=None):  # noqa: A002
    g = _resolve(group)
    if not _member(g):
        return None
    gathered = [None] * g.size()
    all_gather_object(gathered, obj, group=g)
    root = group_dst if group_dst is not None else _group_rank(g, dst, "gather_object: dst")
    if g.rank() == root:
        if object_gather_list is None:
            raise ValueError("Argument ``object_gather_list`` must be specified on destination rank.")
        for i, o in enumerate(gathered):
            object_gather_list[i] = o
    return None


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):  # noqa: A002
    g = _resolve(group)
    if not _member(g):
        return None
    root = group_src if group_src is not None else _group_rank(g, 0 if src is None else src, "broadcast: src")
    if g.rank() == root:
        t, n = _to_tensor(list(object_list))
        size = kindle.tensor([n], dtype=kindle.int64)
    else:
        size = kindle.zeros(1, dtype=kindle.int64)
    broadcast(size, group=g, group_src=root)
    n = int(size.item())
    buf = t.clone() if g.rank() == root else kindle.zeros(n, dtype=kindle.uint8)
    broadcast(buf, group=g, group_src=root)
    if g.rank() != root:
        objs = _from_tensor(buf, n)
        for i in range(len(object_list)):
            object_list[i] = objs[i]
    return None


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,  # noqa: A002
                        group_src=None):
    g = _resolve(group)
    if not _member(g):
        return None
    root = group_src if group_src is not None else _group_rank(g, 0 if src is None else src, "scatter: src")
    holder = [list(scatter_object_input_list) if g.rank() == root else None]
    broadcast_object_list(holder, group=g, group_src=root)
    scatter_object_output_list[0] = holder[0][g.rank()]
    return None


from . import optim  # noqa: E402,F401
from .elastic import multiprocessing as _elastic_mp  # noqa: E402,F401
