"""kindle.amp (torch.amp): autocast's state and decorators, and GradScaler's algorithm, against
torch 2.13's CPU build where torch is installed."""
import warnings

import numpy as np
import pytest

import kindle
import kindle.cpu.amp
import kindle.cuda.amp
import kindle.nn as nn


def torch_or_skip():
    return pytest.importorskip("torch")


def caught(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        result = fn()
    return result, [(x.category, str(x.message)) for x in w]


def test_names_exist_where_torch_has_them():
    assert kindle.autocast is kindle.amp.autocast
    for name in ["is_autocast_enabled", "get_autocast_dtype", "set_autocast_enabled", "set_autocast_dtype",
                 "is_autocast_cache_enabled", "clear_autocast_cache", "get_autocast_cpu_dtype"]:
        assert callable(getattr(kindle, name)), name
    assert issubclass(kindle.cpu.amp.autocast, kindle.amp.autocast)
    assert issubclass(kindle.cuda.amp.GradScaler, kindle.amp.GradScaler)


def test_cpu_autocast_state_nesting_and_decorator():
    assert kindle.is_autocast_enabled("cpu") is False
    assert kindle.get_autocast_dtype("cpu") == kindle.bfloat16
    assert kindle.get_autocast_dtype("cuda") == kindle.float16
    with kindle.autocast("cpu", dtype=kindle.float16) as ac:
        assert isinstance(ac, kindle.autocast)
        assert kindle.is_autocast_enabled("cpu") and kindle.get_autocast_dtype("cpu") == kindle.float16
        with kindle.autocast("cpu", enabled=False):
            assert not kindle.is_autocast_enabled("cpu")
            assert (kindle.ones(2, 3) @ kindle.ones(3, 2)).dtype == kindle.float32
        assert kindle.is_autocast_enabled("cpu")
        assert (kindle.ones(2, 3) @ kindle.ones(3, 2)).dtype == kindle.float16  # the lower-precision list
    assert kindle.is_autocast_enabled("cpu") is False and kindle.get_autocast_dtype("cpu") == kindle.bfloat16

    @kindle.autocast("cpu")
    def inside(n):
        return kindle.is_autocast_enabled("cpu") if n == 0 else inside(n - 1)  # recursion re-enters
    assert inside(3) is True and kindle.is_autocast_enabled("cpu") is False

    with pytest.raises(TypeError, match="requires a callable"):
        kindle.autocast("cpu")(3)


def test_autocast_warnings_and_errors_as_torch():
    torch = torch_or_skip()
    for make in [lambda m: m.autocast("cuda"), lambda m: m.autocast("cpu", dtype=m.float32),
                 lambda m: m.cuda.amp.autocast(), lambda m: m.cpu.amp.autocast()]:
        ours, our_warnings = caught(lambda: make(kindle))
        theirs, their_warnings = caught(lambda: make(torch))
        assert ours._enabled == theirs._enabled
        assert [c for c, _ in our_warnings] == [c for c, _ in their_warnings]
        assert [m.replace("kindle.", "torch.") for _, m in our_warnings] == [m for _, m in their_warnings]
    for bad in [1, "foo"]:
        with pytest.raises(Exception) as ours:
            kindle.autocast(bad)
        with pytest.raises(Exception) as theirs:
            torch.autocast(bad)
        assert type(ours.value) is type(theirs.value)
    for d in ["cpu", "cuda", "mps", "xla"]:
        assert kindle.amp.is_autocast_available(d) == torch.amp.is_autocast_available(d)
        assert str(kindle.get_autocast_dtype(d)).split(".")[1] == str(torch.get_autocast_dtype(d)).split(".")[1]


def test_custom_fwd_and_bwd_follow_the_autocast_state():
    seen = {}

    class Square(kindle.autograd.Function):
        @staticmethod
        @kindle.amp.custom_fwd(device_type="cpu", cast_inputs=kindle.float64)
        def forward(ctx, x):
            seen["fwd"] = (x.dtype, kindle.is_autocast_enabled("cpu"))
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @kindle.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["bwd"] = kindle.is_autocast_enabled("cpu")
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = kindle.ones(3, requires_grad=True)
    Square.apply(x).sum().backward()
    assert seen == {"fwd": (kindle.float32, False), "bwd": False}  # outside autocast: untouched
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with kindle.autocast("cpu"):
            y = Square.apply(x)
    # float64 is never an autocast target dtype in torch's _cast: float32 inputs are cast to it
    assert seen["fwd"] == (kindle.float64, False) and y.dtype == kindle.float64
    with pytest.raises(ValueError, match="device_type"):
        kindle.amp.custom_fwd(device_type=3)


def test_disabled_scalers_without_cuda_as_torch():
    torch = torch_or_skip()
    for make in [lambda m: m.amp.GradScaler(), lambda m: m.amp.GradScaler("cuda"), lambda m: m.cuda.amp.GradScaler(),
                 lambda m: m.amp.GradScaler("cpu", enabled=False)]:
        ours, our_warnings = caught(lambda: make(kindle))
        theirs, their_warnings = caught(lambda: make(torch))
        assert ours.is_enabled() is theirs.is_enabled() is False
        assert our_warnings == their_warnings
        assert ours.state_dict() == theirs.state_dict() == {}
        assert ours.get_scale() == theirs.get_scale() == 1.0
    scaler = kindle.amp.GradScaler("cpu", enabled=False)
    loss = kindle.ones(())
    assert scaler.scale(loss) is loss
    model = nn.Linear(2, 1)
    opt = kindle.optim.SGD(model.parameters(), lr=1.0)
    model(kindle.ones(1, 2)).sum().backward()
    before = model.weight.detach().clone()
    assert scaler.step(opt) is None and not kindle.equal(model.weight, before)  # opt.step() ran
    scaler.update()
    scaler.load_state_dict({})


def _train(m, grads_per_step, **kw):
    """A GradScaler('cpu') on one parameter whose (unscaled) gradient is given per step: returns
    the parameter, the scale and the growth tracker after each step."""
    p = m.nn.Parameter(m.zeros(2))
    opt = m.optim.SGD([p], lr=0.5)
    scaler = m.amp.GradScaler("cpu", **kw)
    out = []
    for g in grads_per_step:
        opt.zero_grad()
        loss = (p * m.tensor(g, dtype=m.float32)).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        out.append((p.detach().numpy().tolist(), scaler.get_scale(), scaler._get_growth_tracker()))
    return out, scaler


def test_cpu_grad_scaler_matches_torch():
    torch = torch_or_skip()
    inf, nan = float("inf"), float("nan")
    steps = [[1.0, 2.0], [1.0, inf], [0.5, 0.25], [3.0, 1.0], [nan, 1.0], [1.0, 1.0], [1.0, 1.0], [2.0, 1.0]]
    for kw in [{}, {"init_scale": 8.0, "growth_interval": 2, "growth_factor": 3.0, "backoff_factor": 0.25},
               {"init_scale": 2.0 ** 127, "growth_interval": 1}]:  # growth that would overflow float32
        ours, our_scaler = _train(kindle, steps, **kw)
        theirs, their_scaler = _train(torch, steps, **kw)
        assert ours == theirs, kw
        assert our_scaler.state_dict() == their_scaler.state_dict()


def test_cpu_grad_scaler_unscale_and_errors():
    scaler = kindle.amp.GradScaler("cpu", init_scale=4.0)
    assert scaler.is_enabled() and scaler.get_scale() == 4.0
    p = nn.Parameter(kindle.ones(3))
    opt = kindle.optim.SGD([p], lr=0.1)
    with pytest.raises(AssertionError, match="_scale is None"):
        scaler.step(opt)
    scaler.scale((p * 3).sum()).backward()
    np.testing.assert_array_equal(p.grad.numpy(), [12.0, 12.0, 12.0])
    scaler.unscale_(opt)
    np.testing.assert_array_equal(p.grad.numpy(), [3.0, 3.0, 3.0])
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure"):
        scaler.step(opt, closure=lambda: 0)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="after step"):
        scaler.unscale_(opt)
    scaler.update()
    scaler.update(new_scale=2.0)
    assert scaler.get_scale() == 2.0
    scaler.update(kindle.tensor([5.0]))
    assert scaler.get_scale() == 5.0
    with pytest.raises(AssertionError, match="new_scale"):
        scaler.update(kindle.ones(2))
    state = scaler.state_dict()
    other = kindle.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.state_dict() == state
    with pytest.raises(RuntimeError, match="empty"):
        other.load_state_dict({})
    with pytest.raises(AssertionError, match="growth factor"):
        kindle.amp.GradScaler("cpu", growth_factor=1.0)
    assert scaler.scale([kindle.ones(1), (kindle.ones(1) * 2,)])[1][0].item() == 10.0
    with pytest.raises(ValueError, match="Tensor or an iterable"):
        scaler.scale([3])
    half = nn.Parameter(kindle.ones(2, dtype=kindle.float16))
    half_opt = kindle.optim.SGD([half], lr=0.1)
    scaler.scale(half.float().sum()).backward()
    with pytest.raises(ValueError, match="FP16"):
        scaler.unscale_(half_opt)


def _autocast_outputs(lib, op, sample, dtype):
    from opdb import _map_args, Dt

    def make(leaf):
        if isinstance(leaf, Dt):
            return getattr(lib, leaf.name)
        t = lib.tensor(leaf.data)
        for v in leaf.views:
            from opdb import _lib_view
            t = _lib_view(t, v)
        return t
    inp = _map_args(sample.input, make)
    args, kwargs = _map_args(sample.args, make), _map_args(sample.kwargs, make)
    with lib.autocast("cpu", dtype=dtype):
        out = op.invoke(lib, "function" if op.function else "method", inp, args, kwargs)
    flat = out if isinstance(out, (tuple, list)) else [out]
    return [str(o.dtype).rsplit(".", 1)[-1] for o in flat if isinstance(o, (kindle.Tensor, type(lib.ones(1))))]


def _autocast_ops():
    from opdb import OPS
    return [o for o in OPS if o.kind != "creation" and "float32" in o.dtypes]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_autocast_output_dtypes_match_torch(dtype):
    """Every op of the database on its float32 samples inside autocast(cpu, dtype): the outputs'
    dtypes are torch's (the lower-precision list in `dtype`, the float32 list in float32, the
    others in their inputs' dtype), wherever torch runs the sample."""
    torch = torch_or_skip()
    import warnings
    failures = []
    checked = 0
    for op in _autocast_ops():
        for s in op.get_samples("float32")[:3]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    want = _autocast_outputs(torch, op, s, getattr(torch, dtype))
                except Exception:  # noqa: BLE001  (torch refuses the sample in lower precision)
                    continue
                try:
                    got = _autocast_outputs(kindle, op, s, getattr(kindle, dtype))
                except Exception as e:  # noqa: BLE001
                    failures.append(f"{op.qualname} {s}: kindle raised {type(e).__name__}: {str(e)[:100]}")
                    continue
            checked += 1
            if got != want:
                failures.append(f"{op.qualname} {s}: {got}, torch {want}")
    assert checked > 500
    assert not failures, "\n".join(failures[:30]) + f"\n({len(failures)} failures)"


def test_training_under_autocast_tracks_float32():
    """An MLP trained 60 steps in float32 and under autocast(bfloat16) with a GradScaler: the
    matmuls run in bfloat16, the loss in float32, and the loss curves stay together."""
    def train(mixed):
        kindle.manual_seed(0)
        model = kindle.nn.Sequential(kindle.nn.Linear(16, 64), kindle.nn.ReLU(), kindle.nn.Linear(64, 4))
        opt = kindle.optim.SGD(model.parameters(), lr=0.1)
        scaler = kindle.amp.GradScaler("cpu", enabled=mixed)
        g = kindle.Generator().manual_seed(1)
        x = kindle.randn(128, 16, generator=g)
        y = (x[:, :4] * 2).argmax(1)
        losses = []
        for _ in range(60):
            opt.zero_grad()
            with kindle.autocast("cpu", dtype=kindle.bfloat16, enabled=mixed):
                out = model(x)
                loss = kindle.nn.functional.cross_entropy(out, y)
            assert out.dtype == (kindle.bfloat16 if mixed else kindle.float32) and loss.dtype == kindle.float32
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(float(loss))
        assert all(p.grad.dtype == kindle.float32 for p in model.parameters())
        return losses
    full, mixed = train(False), train(True)
    assert mixed[-1] < 0.5 * mixed[0]
    for a, b in zip(full, mixed):
        assert abs(a - b) < 0.05 * max(a, 0.1)
