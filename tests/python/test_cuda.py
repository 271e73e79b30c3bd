"""The CUDA backend: tensors on cuda, the op database on cuda against cpu, autograd and optimizer
steps on cuda, the caching allocator's counters, streams and events.

On a machine without a GPU (CI) only the first tests run: they check that CUDA is reported absent
and that asking for it raises. scripts/gpu_check.sh runs the rest on a GPU machine, where
KINDLE_CUDA_REPORT names a file that receives the op database's coverage (JSON lines)."""
import json
import os
import sys

import numpy as np
import pytest

import kindle

sys.path.insert(0, os.path.dirname(__file__))
from opdb import OPS, TArg, leaves  # noqa: E402

HAS_GPU = kindle.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA device")


# ---- without a GPU


@pytest.mark.skipif(HAS_GPU, reason="a CUDA device is present")
def test_cuda_absent_is_reported_and_refused():
    assert kindle.cuda.device_count() == 0
    assert kindle.cuda.memory_allocated() == 0 and kindle.cuda.memory_reserved() == 0
    assert kindle.cuda.memory_stats() == {}
    x = kindle.ones(2)
    assert not x.is_cuda and x.is_cpu
    # as torch: a CPU-only build answers with AssertionError, a CUDA build without a GPU RuntimeError
    refused = RuntimeError if kindle._C._cuda_is_built() else AssertionError
    for make in (x.cuda, lambda: x.to("cuda"), lambda: kindle.zeros(2, device="cuda"),
                 lambda: kindle.tensor([1.0], device="cuda"), lambda: kindle.nn.Linear(2, 2).cuda(),
                 lambda: kindle.randn(2, device="cuda:1"), lambda: kindle.empty(2, device="cuda"),
                 lambda: x.to("cuda", non_blocking=True)):
        with pytest.raises(refused, match="CUDA"):
            make()
    with pytest.raises((RuntimeError, AssertionError)):
        kindle.cuda.synchronize()
    with pytest.raises(RuntimeError):
        kindle.cuda.Event()
    assert issubclass(kindle.cuda.OutOfMemoryError, RuntimeError)


def test_cpu_device_spellings_do_not_copy():
    x = kindle.arange(4.0)
    assert x.to("cpu") is x
    assert x.cpu() is x
    assert x.to(kindle.device("cpu")) is x


# ---- on a GPU


def _close(a, b, what):
    """a (cuda result, moved to the host) against b (cpu result)."""
    if isinstance(b, (tuple, list)):
        assert isinstance(a, (tuple, list)) and len(a) == len(b), what
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{what}[{i}]")
        return
    if not isinstance(b, kindle.Tensor):
        if isinstance(a, kindle.Tensor):
            a = a.item()
        if isinstance(b, float) and isinstance(a, float) and (np.isnan(b) and np.isnan(a)):
            return
        assert a == pytest.approx(b, rel=1e-4, abs=1e-5), what
        return
    assert isinstance(a, kindle.Tensor), f"{what}: cuda gave {type(a).__name__}"
    assert a.device.type == b.device.type == "cpu" or a.dtype == b.dtype, what
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} on cuda, {b.dtype} on cpu"
    assert tuple(a.shape) == tuple(b.shape), f"{what}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
    if a.is_complex():
        a, b = kindle.view_as_real(a), kindle.view_as_real(b)
    if a.dtype == kindle.bfloat16 or a.dtype == kindle.float16:
        rtol, atol = (2e-2, 2e-2) if a.dtype == kindle.bfloat16 else (2e-3, 1e-3)
        a, b = a.float(), b.float()
    elif a.dtype == kindle.float32:
        rtol, atol = 1e-4, 1e-5
    elif a.dtype == kindle.float64:
        rtol, atol = 1e-10, 1e-12
    else:
        rtol, atol = 0, 0
    x, y = a.detach().numpy(), b.detach().numpy()
    np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _shapes(x):
    if isinstance(x, kindle.Tensor):
        return (str(x.dtype), tuple(x.shape))
    if isinstance(x, (tuple, list)):
        return tuple(_shapes(y) for y in x)
    return x


class _OnCuda:
    """kindle, except that the tensors the op database makes are created on cuda."""

    __name__ = "kindle"

    def tensor(self, data, *args, **kwargs):
        return kindle.tensor(data, *args, **kwargs).cuda()

    def __getattr__(self, name):
        return getattr(kindle, name)


_ON_CUDA = _OnCuda()


def _to_host(x, on_cuda=True):
    """The result on the host; tensors computed from cuda inputs must come back on cuda."""
    if isinstance(x, kindle.Tensor):
        if on_cuda:
            assert x.device.type == "cuda", f"result on {x.device}, expected cuda"
        return x.cpu()
    if isinstance(x, (tuple, list)):
        return tuple(_to_host(y, on_cuda) for y in x) if hasattr(x, "_fields") else type(x)(_to_host(y, on_cuda) for y in x)
    return x


@gpu
@pytest.mark.parametrize("op", [o for o in OPS], ids=lambda o: o.qualname)
def test_opdb_on_cuda_matches_cpu(op):
    """Every sample of every dtype: cuda against cpu. No kernel for a dtype is a NotImplementedError
    that names cuda; anything else that cpu accepts must give cpu's answer."""
    ran = no_kernel = 0
    failures = []
    for dtype in op.dtypes:
        for s in op.get_samples(dtype):
            try:
                ref = op.call(kindle, s, "function" if op.function else op.variants[0])
            except Exception as e:  # noqa: BLE001
                ref, ref_err = None, e
            else:
                ref_err = None
            try:
                has_tensors = any(isinstance(t, TArg) for t in leaves((s.input, s.args, s.kwargs)))
                got = _to_host(op.call(_ON_CUDA, s, "function" if op.function else op.variants[0]), has_tensors)
                err = None
            except NotImplementedError as e:
                if ref_err is None:
                    no_kernel += 1
                    continue
                got, err = None, e
            except Exception as e:  # noqa: BLE001
                got, err = None, e
            if ref_err is not None:
                if err is None:
                    failures.append(f"{dtype} {s}: cpu raised {type(ref_err).__name__}, cuda returned a result")
                continue
            if err is not None:
                failures.append(f"{dtype} {s}: cuda raised {type(err).__name__}: {str(err)[:160]}")
                continue
            if not op.compare_values:  # empty, empty_like: only the result's metadata is defined
                got, ref = _shapes(got), _shapes(ref)
            try:
                _close(got, ref, f"{op.qualname} {dtype} {s}")
                ran += 1
            except AssertionError as e:
                failures.append(str(e)[:400])
    report = os.environ.get("KINDLE_CUDA_REPORT")
    if report:  # one line per op (pytest-xdist workers append to the same file)
        with open(report, "a") as f:
            f.write(json.dumps({"op": op.qualname, "matched": ran, "no_cuda_kernel": no_kernel,
                                "failed": len(failures)}) + "\n")
    assert not failures, "\n".join(failures[:8])


@gpu
def test_round_trip_every_dtype_and_layout():
    for dt in (kindle.float32, kindle.float64, kindle.float16, kindle.bfloat16, kindle.int64, kindle.int32,
               kindle.int16, kindle.int8, kindle.uint8, kindle.bool):
        x = (kindle.arange(24).reshape(2, 3, 4) % 5).to(dt)
        y = x.cuda()
        assert y.is_cuda and y.device == kindle.device("cuda", 0) and str(y.device) == "cuda:0"
        assert y.dtype == dt
        assert kindle.equal(y.cpu(), x)
        t = x.transpose(0, 2)[1:, ::2]  # non-contiguous source and destination
        assert kindle.equal(t.cuda().cpu(), t)
        z = kindle.empty(4, 3, 2, dtype=dt, device="cuda").transpose(0, 2)  # a strided destination
        z.copy_(x.to("cuda"))
        assert kindle.equal(z.cpu(), x)
        z.copy_(x)  # from the host, into the strided destination
        assert kindle.equal(z.cpu(), x)
    assert kindle.tensor(3.5).cuda().item() == 3.5
    assert "device='cuda:0'" in repr(kindle.ones(2, device="cuda"))
    assert kindle.ones(2, 2, device="cuda").tolist() == [[1.0, 1.0], [1.0, 1.0]]
    with pytest.raises(TypeError, match="cpu"):
        kindle.ones(2, device="cuda").numpy()


@gpu
def test_mixed_devices_raise_and_cpu_scalars_join():
    a = kindle.ones(3, device="cuda")
    with pytest.raises(RuntimeError, match="same device"):
        a + kindle.ones(3)
    b = a + kindle.tensor(2.0)  # a 0-d cpu tensor joins a cuda computation, as in torch
    assert b.is_cuda and b.cpu().tolist() == [3.0, 3.0, 3.0]
    assert (a * 2.5).cpu().tolist() == [2.5, 2.5, 2.5]


@gpu
def test_mlp_training_on_cuda_matches_cpu():
    kindle.manual_seed(0)
    model = kindle.nn.Sequential(kindle.nn.Linear(20, 64), kindle.nn.ReLU(), kindle.nn.Linear(64, 64),
                                 kindle.nn.Tanh(), kindle.nn.Linear(64, 1))
    import copy
    gmodel = copy.deepcopy(model).cuda()
    assert all(p.is_cuda for p in gmodel.parameters())
    x, y = kindle.randn(128, 20), kindle.randn(128, 1)
    gx, gy = x.cuda(), y.cuda()
    for opt_cls, kw in ((kindle.optim.SGD, {"lr": 0.05, "momentum": 0.9}), (kindle.optim.Adam, {"lr": 1e-3}),
                        (kindle.optim.RMSprop, {"lr": 1e-3, "momentum": 0.5, "centered": True}),
                        (kindle.optim.Adagrad, {"lr": 1e-2, "lr_decay": 0.1, "weight_decay": 0.01})):
        opt, gopt = opt_cls(model.parameters(), **kw), opt_cls(gmodel.parameters(), **kw)
        for _ in range(5):
            for m, o, xx, yy in ((model, opt, x, y), (gmodel, gopt, gx, gy)):
                o.zero_grad()
                loss = ((m(xx) - yy) ** 2).mean()
                loss.backward()
                o.step()
        for p, gp in zip(model.parameters(), gmodel.parameters()):
            assert gp.is_cuda
            np.testing.assert_allclose(gp.detach().cpu().numpy(), p.detach().numpy(), rtol=1e-3, atol=1e-4)


@gpu
def test_matmul_dtypes_and_batches():
    for dt, tol in ((kindle.float32, 1e-4), (kindle.float64, 1e-10), (kindle.float16, 2e-2), (kindle.bfloat16, 5e-2)):
        a, b = kindle.randn(3, 37, 19).to(dt), kindle.randn(3, 19, 23).to(dt)
        for x, y in ((a, b), (a.transpose(1, 2).contiguous().transpose(1, 2), b), (a[0], b[0]), (a, b[0])):
            got = (x.cuda() @ y.cuda()).cpu().float()
            ref = (x.double() @ y.double()).float()
            np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=tol, atol=tol * 5)
    with pytest.raises(NotImplementedError):
        kindle.ones(2, 2, dtype=kindle.int64, device="cuda") @ kindle.ones(2, 2, dtype=kindle.int64, device="cuda")


@gpu
def test_allocator_counters_reuse_and_empty_cache():
    kindle.cuda.synchronize()
    kindle.cuda.empty_cache()
    base = kindle.cuda.memory_allocated()
    x = kindle.empty(1 << 20, device="cuda")  # 4 MiB
    assert kindle.cuda.memory_allocated() - base == 4 << 20
    assert kindle.cuda.memory_reserved() >= kindle.cuda.memory_allocated()
    reserved = kindle.cuda.memory_reserved()
    ptr = x.data_ptr()
    del x
    assert kindle.cuda.memory_allocated() == base
    y = kindle.empty(1 << 20, device="cuda")
    assert y.data_ptr() == ptr  # the cached block came back
    assert kindle.cuda.memory_reserved() == reserved
    assert kindle.cuda.max_memory_allocated() >= base + (4 << 20)
    del y
    kindle.cuda.empty_cache()
    assert kindle.cuda.memory_reserved() < reserved
    kindle.cuda.reset_peak_memory_stats()
    assert kindle.cuda.max_memory_allocated() == kindle.cuda.memory_allocated()
    stats = kindle.cuda.memory_stats()
    assert "allocated_bytes.all.current" in stats and "num_ooms" in stats
    assert "Reserved memory" in kindle.cuda.memory_summary()


@gpu
def test_out_of_memory_is_an_error_that_says_what_is_held():
    keep = kindle.empty(1 << 28, device="cuda")  # 1 GiB
    total = kindle.cuda.get_device_properties(0).total_memory
    with pytest.raises(kindle.cuda.OutOfMemoryError, match="out of memory. Tried to allocate") as e:
        kindle.empty(total // 4 * 5, dtype=kindle.uint8, device="cuda")
    assert "Largest live allocations: 1.00 GiB" in str(e.value)
    assert kindle.cuda.memory_stats()["num_ooms"] >= 1
    del keep
    z = kindle.ones(10, device="cuda")  # the device still works
    assert z.sum().item() == 10


@gpu
def test_streams_and_events():
    s = kindle.cuda.Stream()
    start, end = kindle.cuda.Event(enable_timing=True), kindle.cuda.Event(enable_timing=True)
    a = kindle.randn(2048, 2048, device="cuda")
    kindle.cuda.synchronize()
    with kindle.cuda.stream(s):
        assert kindle.cuda.current_stream() == s
        start.record()
        b = a @ a
        end.record()
    assert kindle.cuda.current_stream() != s
    end.synchronize()
    assert start.elapsed_time(end) > 0
    s.synchronize()
    assert s.query()
    b.record_stream(kindle.cuda.current_stream())
    ref = (a.cpu().double() @ a.cpu().double()).float()
    np.testing.assert_allclose(b.cpu().numpy(), ref.numpy(), rtol=1e-3, atol=1e-2)


@gpu
def test_ops_without_cuda_kernel_name_the_device():
    x = kindle.randn(4, 4, device="cuda")
    with pytest.raises(NotImplementedError, match="cuda"):
        kindle.cumsum(x, 0)


@gpu
def test_device_properties():
    p = kindle.cuda.get_device_properties(0)
    assert p.total_memory > 0 and p.major >= 7
    assert kindle.cuda.get_device_name(0) == p.name
    assert kindle.cuda.device_count() >= 1 and kindle.cuda.current_device() == 0
