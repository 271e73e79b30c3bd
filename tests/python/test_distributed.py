"""kindle.distributed: collectives, DDP, ZeRO, failures, the launcher and spawn, with 2 and 3
processes on this machine. Each multi-process check runs tests/python/distributed_worker.py once
per rank (see its scenarios); a scenario that finds a wrong value exits non-zero."""
import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

import kindle
import kindle.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="Kindle built without Gloo")

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "distributed_worker.py")
PYPATH = os.pathsep.join([os.path.dirname(os.path.dirname(kindle.__file__)), os.environ.get("PYTHONPATH", "")])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env_for(rank, world, port, **extra):
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
               PYTHONPATH=PYPATH, OMP_NUM_THREADS="1")
    env.update(extra)
    return env


def run_ranks(scenario, world, timeout=180, **extra):
    port = free_port()
    procs = [subprocess.Popen([sys.executable, WORKER, scenario], env=env_for(r, world, port, **extra),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(world)]
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise AssertionError(f"{scenario}: a rank hung (no collective may hang)")
        outs.append((p.returncode, out))
    return outs


def assert_all_passed(outs, scenario):
    for rank, (code, out) in enumerate(outs):
        assert code == 0, f"{scenario}: rank {rank} exited with {code}:\n{out}"


@pytest.mark.parametrize("world", [2, 3])
def test_collectives_every_dtype_against_numpy(world):
    assert_all_passed(run_ranks("collectives", world), "collectives")


@pytest.mark.parametrize("world", [2, 3])
def test_ddp_matches_single_process_training(world):
    assert_all_passed(run_ranks("ddp", world), "ddp")


@pytest.mark.parametrize("world", [2, 3])
def test_sync_batch_norm_and_differentiable_collectives(world):
    assert_all_passed(run_ranks("syncbn", world), "syncbn")


def test_communication_hooks():
    assert_all_passed(run_ranks("hooks", 2), "hooks")


@pytest.mark.parametrize("world", [2, 3])
def test_join_with_uneven_inputs(world):
    assert_all_passed(run_ranks("join", world), "join")


def test_zero_redundancy_optimizer_matches_adam():
    assert_all_passed(run_ranks("zero", 2), "zero")


def test_a_killed_rank_makes_the_survivors_raise():
    t0 = time.time()
    outs = run_ranks("dies", 3)
    assert time.time() - t0 < 60
    assert outs[1][0] == 7
    for rank in (0, 2):
        code, out = outs[rank]
        assert code == 0, out
        assert "Ranks that exited" in out and "1" in out, out


def test_a_rank_that_never_reaches_a_collective_is_named_within_the_timeout():
    outs = run_ranks("stalls", 3)
    for rank in (0, 1):
        code, out = outs[rank]
        assert code == 0, out
        assert "did not reach this all_reduce" in out and "[2]" in out, out


def test_a_rank_that_never_joins_is_named():
    outs = run_ranks("never_joins", 3)
    for code, out in outs:
        assert code == 0, out


def test_debug_mode_detects_mismatched_shapes():
    outs = run_ranks("mismatch", 2, TORCH_DISTRIBUTED_DEBUG="DETAIL")
    for code, out in outs:
        assert code == 0 and "Detected mismatch" in out, out


TORCHRUN_SCRIPT = """
import os
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

def main():
    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert int(os.environ["LOCAL_RANK"]) == rank and world == 2
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
    sampler = DistributedSampler(data, shuffle=True, seed=1)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    w = model.module[0].weight.detach().clone()
    gathered = [torch.zeros_like(w) for _ in range(world)]
    dist.all_gather(gathered, w)
    assert torch.equal(gathered[0], gathered[1]), "replicas diverged"
    if rank == 0:
        print("TRAINED", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
"""


def test_launcher_runs_an_unmodified_torchrun_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TORCHRUN_SCRIPT)
    r = subprocess.run([sys.executable, "-m", "kindle.distributed.run", "--standalone", "--nproc-per-node", "2",
                        "-m", "kindle.run", str(script)], env=dict(os.environ, PYTHONPATH=PYPATH),
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "TRAINED" in r.stdout


def test_launcher_stops_the_job_when_a_worker_fails(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(textwrap.dedent("""
        import os, sys, time
        from kindle.distributed.elastic.multiprocessing.errors import record
        @record
        def main():
            if os.environ["RANK"] == "1":
                raise ValueError("boom on rank 1")
            time.sleep(60)
        main()
    """))
    t0 = time.time()
    r = subprocess.run([sys.executable, "-m", "kindle.distributed.run", "--standalone", "--nproc-per-node", "2",
                        str(script)], env=dict(os.environ, PYTHONPATH=PYPATH), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1, r.stderr
    assert time.time() - t0 < 30, "the launcher must stop the other workers"
    assert "worker rank 1" in r.stderr and "boom on rank 1" in r.stderr, r.stderr


def _spawned(rank, path, world):
    import kindle
    import kindle.distributed as dist
    dist.init_process_group("gloo", init_method="file://" + path, rank=rank, world_size=world)
    t = kindle.ones(3) * (rank + 1)
    dist.all_reduce(t)
    assert t.tolist() == [3.0, 3.0, 3.0], t
    dist.destroy_process_group()


def _spawned_fails(rank):
    if rank == 1:
        raise KeyError("spawned failure")


def test_spawn_with_file_rendezvous(tmp_path):
    import kindle.multiprocessing as mp
    path = str(tmp_path / "rendezvous")
    sys.path.insert(0, HERE)
    try:
        mp.spawn(_spawned, args=(path, 2), nprocs=2)
        with pytest.raises(mp.ProcessRaisedException, match="spawned failure"):
            mp.spawn(_spawned_fails, nprocs=2)
    finally:
        sys.path.remove(HERE)
    assert not os.path.exists(path), "the file store must be removed by its last user"


def test_single_process_api_and_errors(tmp_path):
    with pytest.raises(ValueError, match="not been initialized"):
        dist.get_rank()
    with pytest.raises(RuntimeError, match="NCCL"):
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    with pytest.raises(ValueError, match="MASTER_ADDR"):
        env = {k: os.environ.pop(k) for k in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE") if k in os.environ}
        try:
            dist.init_process_group("gloo", rank=0, world_size=1)
        finally:
            os.environ.update(env)
    store = dist.HashStore()
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        with pytest.raises(ValueError, match="twice"):
            dist.init_process_group("gloo", store=store, rank=0, world_size=1)
        assert dist.get_rank() == 0 and dist.get_world_size() == 1 and dist.is_initialized()
        t = kindle.arange(4.0)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
        w = dist.all_reduce(t, async_op=True)
        assert w.wait() and w.is_completed()
        # store API
        store.set("k", "v")
        assert store.get("k") == b"v" and store.add("n", 2) == 2 and store.add("n", 3) == 5
        assert store.check(["k"]) and not store.check(["absent"])
        assert store.compare_set("k", "v", "w") == b"w"
        assert store.delete_key("k") and not store.check(["k"])
        with pytest.raises(dist.DistStoreError, match="absent"):
            store.wait(["absent"], 0.1)
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()
    fs = dist.FileStore(str(tmp_path / "fs"), 1)
    fs.set("a", b"\x00\x01")
    assert fs.get("a") == b"\x00\x01"
    assert dist.PrefixStore("p", fs).add("x", 1) == 1 and fs.get("p/x") == b"1"


def test_sync_batch_norm_is_batch_norm_without_a_group():
    kindle.manual_seed(0)
    x = kindle.randn(6, 3, 4)
    sync, plain = kindle.nn.SyncBatchNorm(3), kindle.nn.BatchNorm1d(3)
    assert kindle.allclose(sync(x), plain(x)) and kindle.allclose(sync.running_var, plain.running_var)
    with pytest.raises(ValueError, match="at least 2D"):
        sync(kindle.ones(3))


def test_post_accumulate_grad_hook_and_queue_callback():
    p = kindle.ones(3, requires_grad=True)
    seen = []
    h = p.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
    (p * 2).sum().backward()
    (p * 3).sum().backward()
    assert [s.tolist() for s in seen] == [[2.0] * 3, [5.0] * 3]
    h.remove()
    (p * 1).sum().backward()
    assert len(seen) == 2
    order = []

    def hook(g):
        kindle._C._queue_callback(lambda: order.append("callback"))
        order.append("hook")

    q = kindle.ones(2, requires_grad=True)
    q.register_hook(hook)
    (q * q).sum().backward()
    assert order == ["hook", "callback"]
    with pytest.raises(RuntimeError, match="during the backward pass"):
        kindle._C._queue_callback(lambda: None)


def test_launcher_with_two_nodes_on_one_machine(tmp_path):
    # --nnodes 2: one launcher per "node" (both on loopback here); node 0's serves the store.
    script = tmp_path / "two_nodes.py"
    script.write_text(textwrap.dedent("""
        import os
        import kindle, kindle.distributed as dist
        dist.init_process_group("gloo")
        assert dist.get_world_size() == 4 and int(os.environ["LOCAL_WORLD_SIZE"]) == 2
        assert dist.get_rank() == int(os.environ["GROUP_RANK"]) * 2 + int(os.environ["LOCAL_RANK"])
        t = kindle.ones(2) * dist.get_rank()
        dist.all_reduce(t)
        assert t.tolist() == [6.0, 6.0], t
        dist.destroy_process_group()
    """))
    port = free_port()
    launchers = [subprocess.Popen([sys.executable, "-m", "kindle.distributed.run", "--nnodes", "2", "--node-rank",
                                   str(n), "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port",
                                   str(port), str(script)], env=dict(os.environ, PYTHONPATH=PYPATH),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for n in (0, 1)]
    for p in launchers:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0, out
