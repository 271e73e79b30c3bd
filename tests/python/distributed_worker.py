"""One rank of a multi-process test (tests/python/test_distributed.py starts several). Usage:
python distributed_worker.py SCENARIO. The rank, world size and master come from torchrun's
environment variables. A scenario raises (non-zero exit) when a check fails."""
import os
import sys
import time

import numpy as np

import kindle
import kindle.distributed as dist
import kindle.nn as nn

RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))

DTYPES = [kindle.bool, kindle.uint8, kindle.int8, kindle.int16, kindle.int32, kindle.int64, kindle.float16,
          kindle.bfloat16, kindle.float32, kindle.float64, kindle.complex64, kindle.complex128]


def data(rank, dtype, n=7):
    """What rank `rank` contributes: small values, so sums and products are exact in every dtype."""
    rng = np.random.default_rng(100 + rank)
    if dtype == kindle.bool:
        return rng.integers(0, 2, n).astype(bool)
    v = rng.integers(1, 4, n).astype(np.float64)
    if dtype in (kindle.complex64, kindle.complex128):
        v = v + 1j * rng.integers(-2, 3, n)
    return v


def as_tensor(a, dtype):
    t = kindle.from_numpy(np.array(a, copy=True, dtype=np.complex128 if np.iscomplexobj(a) else
                                     (bool if a.dtype == bool else np.float64)))
    return t.to(dtype)


def to_np(t):
    if t.dtype in (kindle.float16, kindle.bfloat16):
        t = t.to(kindle.float64)
    return t.numpy()


def check(got, want, what):
    got = to_np(got) if isinstance(got, kindle.Tensor) else np.asarray(got)
    if not np.allclose(got.astype(np.complex128), np.asarray(want).astype(np.complex128), rtol=1e-2, atol=1e-3):
        raise AssertionError(f"rank {RANK}: {what}: got {got}, expected {want}")


def scenario_collectives():
    dist.init_process_group("gloo", timeout=__import__("datetime").timedelta(seconds=60))
    assert dist.is_initialized() and dist.get_rank() == RANK and dist.get_world_size() == WORLD
    assert dist.get_backend() == "gloo"
    ops = {"SUM": dist.ReduceOp.SUM, "PRODUCT": dist.ReduceOp.PRODUCT, "MIN": dist.ReduceOp.MIN,
           "MAX": dist.ReduceOp.MAX, "AVG": dist.ReduceOp.AVG, "BAND": dist.ReduceOp.BAND,
           "BOR": dist.ReduceOp.BOR, "BXOR": dist.ReduceOp.BXOR}
    for dtype in DTYPES:
        floating = dtype.is_floating_point or dtype.is_complex
        all_data = [data(r, dtype) for r in range(WORLD)]
        for name, op in ops.items():
            if name == "AVG" and not floating or name in ("BAND", "BOR", "BXOR") and floating:
                continue
            if name in ("MIN", "MAX") and dtype.is_complex:
                continue
            stack = np.stack(all_data)
            if dtype == kindle.bool:
                want = {"SUM": stack.any(0), "PRODUCT": stack.all(0), "MIN": stack.all(0), "MAX": stack.any(0),
                        "BAND": stack.all(0), "BOR": stack.any(0), "BXOR": np.logical_xor.reduce(stack, 0)}[name]
            elif name in ("BAND", "BOR", "BXOR"):
                ints = stack.astype(np.int64)
                f = {"BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}[name]
                want = f.reduce(ints, 0)
            else:
                want = {"SUM": stack.sum(0), "PRODUCT": stack.prod(0), "MIN": stack.min(0), "MAX": stack.max(0),
                        "AVG": stack.mean(0)}[name]
            t = as_tensor(all_data[RANK], dtype)
            dist.all_reduce(t, op=op)
            check(t, want, f"all_reduce {name} {dtype}")
            # reduce: only dst's result is defined
            t = as_tensor(all_data[RANK], dtype)
            dist.reduce(t, dst=WORLD - 1, op=op)
            if RANK == WORLD - 1:
                check(t, want, f"reduce {name} {dtype}")
        # broadcast, all_gather, gather, scatter, all_to_all
        t = as_tensor(all_data[RANK], dtype)
        dist.broadcast(t, src=1)
        check(t, all_data[1], f"broadcast {dtype}")
        outs = [kindle.zeros(7, dtype=dtype) for _ in range(WORLD)]
        dist.all_gather(outs, as_tensor(all_data[RANK], dtype))
        for r in range(WORLD):
            check(outs[r], all_data[r], f"all_gather {dtype}")
        big = kindle.zeros(WORLD * 7, dtype=dtype)
        dist.all_gather_into_tensor(big, as_tensor(all_data[RANK], dtype))
        check(big, np.concatenate(all_data), f"all_gather_into_tensor {dtype}")
        gl = [kindle.zeros(7, dtype=dtype) for _ in range(WORLD)] if RANK == 0 else None
        dist.gather(as_tensor(all_data[RANK], dtype), gl, dst=0)
        if RANK == 0:
            for r in range(WORLD):
                check(gl[r], all_data[r], f"gather {dtype}")
        out = kindle.zeros(7, dtype=dtype)
        sl = [as_tensor(all_data[r], dtype) for r in range(WORLD)] if RANK == 0 else None
        dist.scatter(out, sl, src=0)
        check(out, all_data[RANK], f"scatter {dtype}")
        # all_to_all: rank r sends block [r, d] to rank d
        ins = [as_tensor(np.full(2, RANK * 10 + d) % 2 if dtype == kindle.bool else np.full(2, RANK * 10 + d), dtype)
               for d in range(WORLD)]
        outs = [kindle.zeros(2, dtype=dtype) for _ in range(WORLD)]
        dist.all_to_all(outs, ins)
        for s in range(WORLD):
            want = np.full(2, s * 10 + RANK)
            check(outs[s], want % 2 if dtype == kindle.bool else want, f"all_to_all {dtype}")
        if floating and not dtype.is_complex:
            ins = [as_tensor(data(r, dtype, 7 * WORLD), dtype) for r in range(WORLD)]
            out = kindle.zeros(7, dtype=dtype)
            dist.reduce_scatter(out, list(ins[RANK].chunk(WORLD)), op=dist.ReduceOp.SUM)
            total = sum(data(r, dtype, 7 * WORLD) for r in range(WORLD))
            check(out, total[RANK * 7:(RANK + 1) * 7], f"reduce_scatter {dtype}")
            out = kindle.zeros(7, dtype=dtype)
            dist.reduce_scatter_tensor(out, ins[RANK], op=dist.ReduceOp.AVG)
            check(out, total[RANK * 7:(RANK + 1) * 7] / WORLD, f"reduce_scatter_tensor AVG {dtype}")

    # all_to_all_single with uneven splits: rank r sends d+1 rows to rank d
    inp = kindle.cat([kindle.full((d + 1, 2), float(RANK * 10 + d)) for d in range(WORLD)])
    out = kindle.zeros((RANK + 1) * WORLD, 2)
    dist.all_to_all_single(out, inp, output_split_sizes=[RANK + 1] * WORLD,
                           input_split_sizes=[d + 1 for d in range(WORLD)])
    want = np.concatenate([np.full((RANK + 1, 2), s * 10 + RANK) for s in range(WORLD)])
    check(out, want, "all_to_all_single uneven")

    # Non-contiguous tensors are reduced in place.
    m = kindle.arange(12, dtype=kindle.float32).reshape(3, 4) * (RANK + 1)
    col = m.t()
    dist.all_reduce(col)
    check(m, np.arange(12).reshape(3, 4) * sum(r + 1 for r in range(WORLD)), "all_reduce non-contiguous")

    # async_op: a Work per collective, completed by wait()
    works = [dist.all_reduce(kindle.ones(1000) * RANK, async_op=True) for _ in range(5)]
    for w in works:
        assert w.wait() and w.is_completed() and w.is_success()

    # point to point: a ring
    nxt, prv = (RANK + 1) % WORLD, (RANK - 1) % WORLD
    buf = kindle.zeros(5)
    rw = dist.irecv(buf, src=prv)
    sw = dist.isend(kindle.full((5,), float(RANK)), dst=nxt)
    rw.wait()
    sw.wait()
    check(buf, np.full(5, prv), "isend/irecv ring")
    if RANK == 0:
        for _ in range(WORLD - 1):
            t = kindle.zeros(1)
            src = dist.recv(t)
            check(t, [src * 100], "recv from any rank")
    else:
        dist.send(kindle.tensor([RANK * 100.0]), dst=0)
    # (a tag of its own: rank 0 may still be receiving from any rank above)
    ops_ = [dist.P2POp(dist.isend, kindle.full((3,), float(RANK)), nxt, tag=1),
            dist.P2POp(dist.irecv, buf3 := kindle.zeros(3), prv, tag=1)]
    for w in dist.batch_isend_irecv(ops_):
        w.wait()
    check(buf3, np.full(3, prv), "batch_isend_irecv")

    # objects
    objs = [None] * WORLD
    dist.all_gather_object(objs, {"rank": RANK, "msg": "x" * RANK})
    assert objs == [{"rank": r, "msg": "x" * r} for r in range(WORLD)], objs
    lst = [RANK, "a", {"k": 1}] if RANK == 0 else [None, None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [0, "a", {"k": 1}], lst
    got = [None] * WORLD if RANK == 0 else None
    dist.gather_object(("g", RANK), got, dst=0)
    if RANK == 0:
        assert got == [("g", r) for r in range(WORLD)], got
    out = [None]
    dist.scatter_object_list(out, [f"s{r}" for r in range(WORLD)] if RANK == 0 else None, src=0)
    assert out == [f"s{RANK}"], out

    # subgroups: ranks 0 and 1 only (every rank calls new_group)
    sub = dist.new_group([0, 1])
    t = kindle.ones(3) * (RANK + 1)
    if RANK in (0, 1):
        assert dist.get_world_size(sub) == 2 and dist.get_rank(sub) == RANK
        dist.all_reduce(t, group=sub)
        check(t, np.full(3, 3.0), "all_reduce in a subgroup")
        dist.broadcast(t2 := kindle.full((2,), float(RANK)), src=1, group=sub)
        check(t2, np.full(2, 1.0), "broadcast in a subgroup (src is a global rank)")
    else:
        assert sub is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(sub) == -1
        assert dist.all_reduce(t, group=sub) is None

    # bad input: clear errors, raised before anything is sent
    for bad, exc in [(lambda: dist.all_reduce(kindle.ones(2, dtype=kindle.int32), op=dist.ReduceOp.AVG), ValueError),
                     (lambda: dist.all_gather([kindle.zeros(2)], kindle.zeros(2)), ValueError),
                     (lambda: dist.broadcast(kindle.zeros(2), src=WORLD), ValueError),
                     (lambda: dist.all_reduce([1, 2]), TypeError)]:
        try:
            bad()
        except exc as e:
            assert str(e), "empty message"
        else:
            raise AssertionError(f"expected {exc.__name__}")
    dist.barrier()
    dist.monitored_barrier(timeout=__import__("datetime").timedelta(seconds=30), wait_all_ranks=True)
    dist.destroy_process_group()
    assert not dist.is_initialized()


def _mlp():
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 3))


def _cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(4 * 4 * 4, 3))


def _batches(kind, steps, batch):
    g = kindle.Generator().manual_seed(7)
    shape = (batch, 10) if kind == "mlp" else (batch, 1, 8, 8)
    return [(kindle.randn(shape, generator=g), kindle.randint(0, 3, (batch,), generator=g)) for _ in range(steps)]


def scenario_ddp():
    from kindle.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo")
    report = {}
    for kind in ("mlp", "cnn"):
        for opts in ({}, {"gradient_as_bucket_view": True, "bucket_cap_mb": 0.001}):
            kindle.manual_seed(RANK)  # replicas start different: DDP broadcasts rank 0's weights
            model = _mlp() if kind == "mlp" else _cnn()
            kindle.manual_seed(0)
            ref = _mlp() if kind == "mlp" else _cnn()
            if RANK == 0:
                model.load_state_dict(ref.state_dict())
            ddp = DDP(model, broadcast_buffers=False, **opts)
            assert all(k.startswith("module.") for k in ddp.state_dict())
            opt = kindle.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
            ref_opt = kindle.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
            per = 4
            for x, y in _batches(kind, 20, per * WORLD):
                opt.zero_grad()
                nn.functional.cross_entropy(ddp(x[RANK * per:(RANK + 1) * per]),
                                            y[RANK * per:(RANK + 1) * per]).backward()
                opt.step()
                ref_opt.zero_grad()
                if kind == "cnn":
                    # BatchNorm statistics are per replica: the reference runs each shard separately
                    # and averages the losses (what DDP computes without SyncBatchNorm).
                    loss = sum(nn.functional.cross_entropy(ref(x[r * per:(r + 1) * per]), y[r * per:(r + 1) * per])
                               for r in range(WORLD)) / WORLD
                else:
                    loss = nn.functional.cross_entropy(ref(x), y)
                loss.backward()
                ref_opt.step()
            diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), ref.parameters()))
            report[(kind, tuple(opts))] = diff
            # float32 summation order differs (sum of shard means vs one mean): 1e-5 after 20 steps
            assert diff < 1e-5, f"rank {RANK}: DDP {kind} {opts} differs from single-process training by {diff}"

    # no_sync accumulation equals the large batch
    kindle.manual_seed(0)
    model, ref = _mlp(), _mlp()
    ref.load_state_dict(model.state_dict())
    ddp = DDP(model)
    (x1, y1), (x2, y2) = _batches("mlp", 2, 4 * WORLD)
    with ddp.no_sync():
        nn.functional.cross_entropy(ddp(x1[RANK * 4:(RANK + 1) * 4]), y1[RANK * 4:(RANK + 1) * 4]).backward()
    nn.functional.cross_entropy(ddp(x2[RANK * 4:(RANK + 1) * 4]), y2[RANK * 4:(RANK + 1) * 4]).backward()
    (nn.functional.cross_entropy(ref(x1), y1) + nn.functional.cross_entropy(ref(x2), y2)).backward()
    diff = max((a.grad - b.grad).abs().max().item() for a, b in zip(model.parameters(), ref.parameters()))
    assert diff < 1e-6, f"no_sync accumulation differs from the large batch by {diff}"

    # unused parameters: an error without find_unused_parameters, averaged with it
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x, use_b):
            return self.b(x) if use_b else self.a(x)

    kindle.manual_seed(0)
    m = DDP(Branchy(), find_unused_parameters=True)
    m(kindle.ones(2, 4), RANK == 0).sum().backward()  # rank 0 uses b, the others a
    if WORLD > 1:
        assert m.module.b.weight.grad is not None and m.module.a.weight.grad is not None
        check(m.module.b.weight.grad, np.full((4, 4), 2.0 / WORLD), "unused parameter: b's gradient averaged")
    m2 = DDP(Branchy())
    try:
        m2(kindle.ones(2, 4), False).sum().backward()
    except RuntimeError as e:
        assert "find_unused_parameters" in str(e)
    else:
        raise AssertionError("an unused parameter without find_unused_parameters must raise")
    dist.destroy_process_group()


def scenario_syncbn():
    """SyncBatchNorm under DDP equals BatchNorm on the concatenated batch in one process."""
    from kindle.nn.parallel import DistributedDataParallel as DDP
    import kindle.distributed.nn.functional as dfn
    dist.init_process_group("gloo")
    kindle.manual_seed(0)
    ref = _cnn()
    model = nn.SyncBatchNorm.convert_sync_batchnorm(_cnn())
    model.load_state_dict(ref.state_dict())
    ddp = DDP(model)
    opt = kindle.optim.SGD(ddp.parameters(), lr=0.1)
    ref_opt = kindle.optim.SGD(ref.parameters(), lr=0.1)
    per = 3
    for x, y in _batches("cnn", 10, per * WORLD):
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(x[RANK * per:(RANK + 1) * per]), y[RANK * per:(RANK + 1) * per]).backward()
        opt.step()
        ref_opt.zero_grad()
        nn.functional.cross_entropy(ref(x), y).backward()
        ref_opt.step()
    for (name, a), b in zip(model.state_dict().items(), ref.state_dict().values()):
        if a.dtype.is_floating_point:
            d = (a - b).abs().max().item()
            assert d < 1e-5, f"rank {RANK}: SyncBatchNorm training differs from one process in {name} by {d}"
    # differentiable all_gather: the gradient is that of the sum of every rank's loss
    x = kindle.full((2,), float(RANK + 1), requires_grad=True)
    outs = dfn.all_gather(x)
    check(kindle.stack(outs).detach(), [[r + 1.0] * 2 for r in range(WORLD)], "nn.functional.all_gather")
    sum(((i + 1) * o).sum() for i, o in enumerate(outs)).backward()
    check(x.grad, np.full(2, WORLD * (RANK + 1.0)), "nn.functional.all_gather backward")
    y = dfn.all_reduce(x * 1.0)
    y.sum().backward()
    dist.destroy_process_group()


def scenario_hooks():
    """Communication hooks: allreduce_hook is DDP's own averaging; fp16_compress_hook is within half precision."""
    from kindle.distributed.algorithms.ddp_comm_hooks import default_hooks
    from kindle.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo")
    for hook, tol in ((default_hooks.allreduce_hook, 1e-5), (default_hooks.fp16_compress_hook, 2e-3),
                      (default_hooks.bf16_compress_hook, 2e-2)):
        kindle.manual_seed(0)
        model, ref = _mlp(), _mlp()
        ref.load_state_dict(model.state_dict())
        ddp = DDP(model, bucket_cap_mb=0.002)
        ddp.register_comm_hook(None, hook)
        opt = kindle.optim.SGD(ddp.parameters(), lr=0.1)
        ref_opt = kindle.optim.SGD(ref.parameters(), lr=0.1)
        for x, y in _batches("mlp", 5, 4 * WORLD):
            opt.zero_grad()
            nn.functional.cross_entropy(ddp(x[RANK * 4:(RANK + 1) * 4]), y[RANK * 4:(RANK + 1) * 4]).backward()
            opt.step()
            ref_opt.zero_grad()
            nn.functional.cross_entropy(ref(x), y).backward()
            ref_opt.step()
        diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), ref.parameters()))
        assert diff < tol, f"rank {RANK}: {hook.__name__} differs from single-process training by {diff}"
    dist.destroy_process_group()


def scenario_join():
    """Uneven inputs: rank r has 3 + r batches; join() lets the others finish; gradients stay divided
    by the world size, so each step equals the sum over the active ranks' shard losses / WORLD."""
    from kindle.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo")
    kindle.manual_seed(0)
    model, ref = _mlp(), _mlp()
    ref.load_state_dict(model.state_dict())
    ddp = DDP(model)
    opt = kindle.optim.SGD(ddp.parameters(), lr=0.1)
    ref_opt = kindle.optim.SGD(ref.parameters(), lr=0.1)
    steps = 3 + WORLD - 1
    data = _batches("mlp", steps, 4 * WORLD)
    with ddp.join():
        for i in range(3 + RANK):
            x, y = data[i]
            opt.zero_grad()
            nn.functional.cross_entropy(ddp(x[RANK * 4:(RANK + 1) * 4]), y[RANK * 4:(RANK + 1) * 4]).backward()
            opt.step()
    for i, (x, y) in enumerate(data):
        if i >= 3 + RANK:
            break  # this rank's optimizer stopped stepping after its own data ran out
        ref_opt.zero_grad()
        active = [r for r in range(WORLD) if i < 3 + r]
        (sum(nn.functional.cross_entropy(ref(x[r * 4:(r + 1) * 4]), y[r * 4:(r + 1) * 4]) for r in active)
         / WORLD).backward()
        ref_opt.step()
    diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), ref.parameters()))
    assert diff < 1e-5, f"rank {RANK}: join training differs from the reference by {diff}"
    # throw_on_early_termination: every rank raises when the first runs out
    raised = False
    try:
        with ddp.join(throw_on_early_termination=True):
            for i in range(1 + RANK):
                x, y = data[0]
                nn.functional.cross_entropy(ddp(x[:4]), y[:4]).backward()
    except RuntimeError as e:
        raised = "exhausted inputs" in str(e)
    assert raised, f"rank {RANK}: throw_on_early_termination must raise on every rank"
    dist.destroy_process_group()


def scenario_zero():
    from kindle.distributed.optim import ZeroRedundancyOptimizer
    dist.init_process_group("gloo")
    kindle.manual_seed(0)
    model, ref = _mlp(), _mlp()
    ref.load_state_dict(model.state_dict())
    zero = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=kindle.optim.Adam, lr=0.01)
    adam = kindle.optim.Adam(ref.parameters(), lr=0.01)
    owned = sum(len(g["params"]) for g in zero.optim.param_groups)
    assert owned < len(list(model.parameters())), "each rank must own only part of the parameters"
    for x, y in _batches("mlp", 5, 8):
        for m, o in ((model, zero), (ref, adam)):
            o.zero_grad()
            nn.functional.cross_entropy(m(x), y).backward()
            o.step()
    diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), ref.parameters()))
    assert diff < 1e-6, f"ZeroRedundancyOptimizer differs from Adam by {diff}"
    zero.consolidate_state_dict(to=0)
    if RANK == 0:
        sd = zero.state_dict()
        assert len(sd["state"]) == len(list(model.parameters()))
        assert int(sd["state"][0]["step"]) == 5
    dist.destroy_process_group()


def scenario_dies():
    import datetime
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    dist.all_reduce(kindle.ones(4))
    if RANK == 1:
        os._exit(7)
    t0 = time.time()
    try:
        for _ in range(100):
            dist.all_reduce(kindle.ones(1 << 16))
            time.sleep(0.01)
    except dist.DistBackendError as e:
        took = time.time() - t0
        assert "rank" in str(e) and "1" in str(e.args[0].split("exited")[-1]), e
        print(f"rank {RANK} raised after {took:.2f}s: {e}")
        assert took < 20, took
        if RANK == 0:
            # rank 0 hosts the store: the other survivor may still be asking it which ranks exited
            # (on a loaded machine it can notice the failure seconds later than rank 0 does)
            time.sleep(5)
        return
    raise AssertionError("the survivors must raise when a rank dies")


def scenario_stalls():
    import datetime
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=3))
    if RANK == WORLD - 1:
        time.sleep(8)  # never reaches the collective in time
        os._exit(0)
    t0 = time.time()
    try:
        dist.all_reduce(kindle.ones(4))
    except dist.DistBackendError as e:
        took = time.time() - t0
        msg = str(e)
        assert f"did not reach this all_reduce" in msg and f"[{WORLD - 1}]" in msg, msg
        assert took < 3 + 4, took
        print(f"rank {RANK} raised after {took:.2f}s: {msg}")
        time.sleep(1)  # rank 0 hosts the store: the others are still reading it
        os._exit(0)
    raise AssertionError("expected a timeout")


def scenario_never_joins():
    import datetime
    if RANK == WORLD - 1:
        return  # never calls init_process_group
    t0 = time.time()
    try:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=3))
    except (dist.DistError, RuntimeError) as e:
        assert f"[{WORLD - 1}]" in str(e) and "did not join" in str(e), str(e)
        assert time.time() - t0 < 10
        print(f"rank {RANK}: {e}")
        time.sleep(1)  # rank 0 hosts the store: the others are still reading it
        os._exit(0)
    raise AssertionError("expected the missing rank to be named")


def scenario_mismatch():
    dist.init_process_group("gloo")  # TORCH_DISTRIBUTED_DEBUG=DETAIL is set by the test
    try:
        dist.all_reduce(kindle.ones(4 + RANK))
    except dist.DistBackendError as e:
        assert "mismatch" in str(e) and "[4]" in str(e) and "[5]" in str(e), str(e)
        print(f"rank {RANK}: {e}")
        os._exit(0)
    raise AssertionError("mismatched shapes must be detected")


if __name__ == "__main__":
    globals()["scenario_" + sys.argv[1]]()
    print(f"rank {RANK}: {sys.argv[1]} passed")
