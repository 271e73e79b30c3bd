"""kindle.testing, kindle.random, kindle.utils.checkpoint, kindle.autograd.profiler,
kindle.utils.data.distributed and kindle.hub, against PyTorch where it is importable (each test
that needs torch skips itself without it; the others always run).

assert_close's messages are compared with torch's word for word (module names aside).
Random streams differ from PyTorch's, so shuffles and make_tensor values are checked for their
properties, not their numbers.
"""
import math
import os
import sys
import textwrap
import warnings

import numpy as np
import pytest

import kindle
import kindle.hub
import kindle.random
import kindle.testing
from kindle.autograd.profiler import record_function
from kindle.utils.checkpoint import checkpoint, checkpoint_sequential
from kindle.utils.data.distributed import DistributedSampler


def _torch():
    return pytest.importorskip("torch")


def _outcome(fn):
    """'PASS' or 'ExceptionType: message', with the module name normalised."""
    try:
        fn()
        return "PASS"
    except Exception as e:  # noqa: BLE001  (the outcome is what we compare)
        return f"{type(e).__name__}: {e}".replace("torch.", "T.").replace("kindle.", "T.")


# ---------------------------------------------------------------------------------------------
# kindle.testing.assert_close

# Each case is an expression over T (kindle or torch), `tc` (T.testing.assert_close) and np.
_CLOSE_CASES = [
    # tensors: the mismatch report, tolerances per dtype, exact integers and bool
    "tc(T.tensor([1., 2., 3., 4.]), T.tensor([1., 2., 3., 4.001]))",
    "tc(T.tensor([1., 2., 3., 4.]), T.tensor([1., 2., 3., 4.00001]))",
    "tc(T.tensor([[1., 2.], [3., 4.]]), T.tensor([[1., 2.], [3., 5.]]))",
    "tc(T.tensor([1, 2, 3]), T.tensor([1, 2, 4]))",
    "tc(T.tensor([100, 2]), T.tensor([1, 2]))",
    "tc(T.tensor([1, 2], dtype=T.uint8), T.tensor([3, 2], dtype=T.uint8))",
    "tc(T.tensor([True, False]), T.tensor([True, True]))",
    "tc(T.tensor([1., 2.], dtype=T.float16), T.tensor([1., 2.01], dtype=T.float16))",
    "tc(T.tensor([1., 2.], dtype=T.float16), T.tensor([1., 2.001], dtype=T.float16))",
    "tc(T.tensor([1., 2.], dtype=T.bfloat16), T.tensor([1., 2.01], dtype=T.bfloat16))",
    "tc(T.tensor([1., 2.], dtype=T.bfloat16), T.tensor([1., 2.1], dtype=T.bfloat16))",
    "tc(T.tensor([1., 2.], dtype=T.float64), T.tensor([1., 2.0000001], dtype=T.float64))",
    "tc(T.tensor([1., 2.], dtype=T.float64), T.tensor([1., 2.000001], dtype=T.float64))",
    "tc(T.tensor([1e10, 1.]), T.tensor([1e10 + 1e5, 1.]))",
    "tc(T.tensor([1., 1.]), T.tensor([0., 0.]))",
    "tc(T.tensor([3., 1.]), T.tensor([1., 3.]))",
    "tc(T.tensor([1., 2., 3.]), T.tensor([1.1, 2.2, 3.0]))",
    "tc(T.tensor([[0., 2.], [1., 3.]]), T.tensor([[1e-10, 2.], [2., 3.]]))",
    "tc(T.zeros(0), T.zeros(0))",
    # NaN and infinities
    "tc(T.tensor([1., float('nan')]), T.tensor([1., 2.]))",
    "tc(T.tensor([5., float('nan')]), T.tensor([1., float('nan')]))",
    "tc(T.tensor([1., float('nan')]), T.tensor([1., float('nan')]), equal_nan=True)",
    "tc(T.tensor([1., float('inf')]), T.tensor([1., float('inf')]))",
    "tc(T.tensor([1., float('inf')]), T.tensor([1., float('-inf')]))",
    # 0-d tensors report as scalars
    "tc(T.tensor(1.), T.tensor(2.))",
    "tc(T.tensor(1.0), T.tensor(1.1))",
    "tc(T.tensor(1), T.tensor(2))",
    "tc(T.tensor(True), T.tensor(False))",
    "tc(T.tensor(1., dtype=T.float16), T.tensor(1.1, dtype=T.float16))",
    "tc(T.tensor(float('nan')), T.tensor(float('nan')))",
    # explicit tolerances
    "tc(T.tensor([1., 2.]), T.tensor([1., 2.5]), rtol=0, atol=0)",
    "tc(T.tensor([1., 2.]), T.tensor([1., 2.5]), rtol=0.1, atol=0)",
    "tc(T.tensor([1., 2.]), T.tensor([1., 2.5]), rtol=0.3, atol=0.)",
    "tc(T.tensor([1., 2.]), T.tensor([1., 2.5]), rtol=1e-3)",
    "tc(T.tensor([1., 2.]), T.tensor([1., 2.5]), atol=1e-3)",
    # attributes
    "tc(T.tensor([1., 2.]), T.tensor([1., 2., 3.]))",
    "tc(T.zeros(2, 3), T.zeros(3, 2))",
    "tc(T.tensor([1., 2.]), T.tensor([1., 2.]).double())",
    "tc(T.tensor([1, 2], dtype=T.int32), T.tensor([1, 2]))",
    "tc(T.tensor([1, 2]), T.tensor([1., 2.]), check_dtype=False)",
    "tc(T.tensor([1, 2]), T.tensor([1., 2.5]), check_dtype=False)",
    "tc(T.tensor([1., 2.], dtype=T.float16), T.tensor([1., 2.01]), check_dtype=False)",
    "tc(T.tensor([1., 2.], dtype=T.float64), T.tensor([1., 2.01]), check_dtype=False)",
    "tc(T.ones(2, 3), T.ones(2, 3).t().contiguous().t(), check_stride=True)",
    "tc(T.ones(2, 3), T.ones(2, 3).t().contiguous().t())",
    # Python numbers and NumPy
    "tc(1.0, 1.1)",
    "tc(1, 2)",
    "tc(1, 0)",
    "tc(1.0, 0.0)",
    "tc(1, 1.0)",
    "tc(1, 2.0, check_dtype=False)",
    "tc(1 + 1j, 1 + 2j)",
    "tc(float('inf'), float('-inf'))",
    "tc(float('nan'), float('nan'))",
    "tc(float('nan'), float('nan'), equal_nan=True)",
    "tc(1.0, 2.0, rtol=0, atol=0)",
    "tc(True, False)",
    "tc(np.float32(1.), np.float32(1.1))",
    "tc(np.int64(1), 1)",
    "tc(np.array([1., 2.]), np.array([1., 2.5]))",
    "tc(np.array([1, 2]), np.array([1, 3]))",
    "tc(np.array([True]), np.array([False]))",
    "tc(None, None)",
    # unsupported pairs
    "tc(T.tensor([1., 2.]), [1., 2.])",
    "tc(np.array([1., 2.]), T.tensor([1., 2.]))",
    "tc(1, T.tensor(1))",
    "tc('a', 'a')",
    "tc({1, 2}, {1, 2})",
    "tc(T.nn.Parameter(T.ones(2)), T.ones(2))",
    "tc(T.nn.Parameter(T.ones(2)), T.ones(2), allow_subclasses=False)",
    # containers
    "tc((1, 2), [1, 2])",
    "tc([T.ones(2), T.ones(2)], [T.ones(2), T.ones(2) + 1])",
    "tc([[T.ones(2)]], [[T.ones(2) + 1]])",
    "tc({'k': [T.ones(2), {'j': T.ones(2)}]}, {'k': [T.ones(2), {'j': T.ones(2) + 1}]})",
    "tc({'b': T.ones(2) + 1, 'a': T.ones(2) + 2}, {'b': T.ones(2), 'a': T.ones(2)})",
    "tc({'x': 1}, {'y': 1})",
    "tc({'a': 1}, {'b': 1, 'a': 1})",
    "tc([T.ones(2)], [T.ones(2), T.ones(2)])",
    "tc([T.ones(2) + 1, [T.ones(2)]], [T.ones(2), [T.ones(2), T.ones(2)]])",
    "tc([T.ones(2) + 1, 'x'], [T.ones(2), 'x'])",
    "tc([T.ones(2), T.ones(2)], [T.ones(2), T.ones(2, 1)])",
    "tc([1, 2.0], [1, 2.5])",
    # msg
    "tc(T.ones(2), T.ones(2) + 1, msg='custom')",
    "tc([T.ones(2) + 1], [T.ones(2)], msg=lambda m: '<' + m + '>')",
    "tc([1, 2.0], [1, 2.5], msg='m')",
]


@pytest.mark.parametrize("case", _CLOSE_CASES)
def test_assert_close_matches_torch(case):
    torch = _torch()
    results = []
    for T in (torch, kindle):
        results.append(_outcome(lambda: eval(case, {"T": T, "tc": T.testing.assert_close, "np": np})))
    assert results[1] == results[0]


def test_assert_close_message_structure():
    with pytest.raises(AssertionError) as info:
        kindle.testing.assert_close(kindle.tensor([1., 2., 3., 4.]), kindle.tensor([1., 2., 3., 5.]))
    assert str(info.value) == ("Tensor-likes are not close!\n\n"
                               "Mismatched elements: 1 / 4 (25.0%)\n"
                               "Greatest absolute difference: 1.0 at index (3,) (up to 1e-05 allowed)\n"
                               "Greatest relative difference: 0.20000000298023224 at index (3,) "
                               "(up to 1.3e-06 allowed)")


@pytest.mark.parametrize("dtype,rtol,atol", [("float16", 1e-3, 1e-5), ("bfloat16", 1.6e-2, 1e-5),
                                             ("float32", 1.3e-6, 1e-5), ("float64", 1e-7, 1e-7)])
def test_assert_close_default_tolerances(dtype, rtol, atol):
    dt = getattr(kindle, dtype)
    expected = kindle.tensor([0.0, 1000.0], dtype=kindle.float64)
    inside = expected + kindle.tensor([atol * 0.5, 1000.0 * rtol * 0.5], dtype=kindle.float64)
    outside = expected + kindle.tensor([atol * 4, 1000.0 * rtol * 4], dtype=kindle.float64)
    kindle.testing.assert_close(inside.to(dt), expected.to(dt))
    with pytest.raises(AssertionError, match=f"up to {rtol} allowed"):
        kindle.testing.assert_close(outside.to(dt), expected.to(dt))


def test_assert_close_integers_are_exact():
    kindle.testing.assert_close(kindle.tensor([5, 7]), kindle.tensor([5, 7]))
    with pytest.raises(AssertionError, match="Tensor-likes are not equal!"):
        kindle.testing.assert_close(kindle.tensor([5, 7]), kindle.tensor([5, 8]))
    kindle.testing.assert_close(kindle.tensor([5, 7]), kindle.tensor([5, 8]), rtol=0.2, atol=0)


def test_assert_close_ignores_requires_grad():
    a = kindle.ones(3, requires_grad=True)
    kindle.testing.assert_close(a * 1, kindle.ones(3))


# ---------------------------------------------------------------------------------------------
# kindle.testing.make_tensor

_RANGES = {"bool": (0, 1), "uint8": (0, 9), "int8": (-9, 9), "int16": (-9, 9), "int32": (-9, 9),
           "int64": (-9, 9), "float16": (-9, 9), "bfloat16": (-9, 9), "float32": (-9, 9), "float64": (-9, 9)}


@pytest.mark.parametrize("dtype", list(_RANGES))
def test_make_tensor_default_ranges(dtype):
    dt = getattr(kindle, dtype)
    t = kindle.testing.make_tensor(4000, dtype=dt, device="cpu")
    assert t.dtype == dt and t.shape == (4000,) and t.is_contiguous() and not t.requires_grad
    lo, hi = _RANGES[dtype]
    values = t.double()
    assert values.min().item() >= lo
    if dt.is_floating_point:
        assert values.max().item() < hi  # [low, high)
        assert values.min().item() < -8 and values.max().item() > 8
    else:
        assert values.max().item() <= hi
        assert values.min().item() == lo and values.max().item() == hi  # every value drawn


@pytest.mark.parametrize("dtype", ["bool", "int32", "float32"])
def test_make_tensor_noncontiguous_exclude_zero(dtype):
    dt = getattr(kindle, dtype)
    t = kindle.testing.make_tensor((3, 4), dtype=dt, device="cpu", noncontiguous=True, exclude_zero=True)
    assert t.shape == (3, 4) and not t.is_contiguous() and t.stride() == (8, 2)
    assert (t == 0).sum().item() == 0
    assert kindle.testing.make_tensor(1, dtype=dt, device="cpu", noncontiguous=True).is_contiguous()


def test_make_tensor_shapes_bounds_and_grad():
    mk = kindle.testing.make_tensor
    assert mk(2, 3, dtype=kindle.float32, device="cpu").shape == (2, 3)
    assert mk((2, 3), dtype=kindle.float32, device="cpu").shape == (2, 3)
    assert mk([2, 3], dtype=kindle.float32, device="cpu").shape == (2, 3)
    assert mk((), dtype=kindle.float32, device="cpu").shape == ()
    assert mk((50,), dtype=kindle.int64, device="cpu", low=2.5, high=3.1).tolist() == [3] * 50
    t = mk((100,), dtype=kindle.uint8, device="cpu", low=-300, high=300)
    assert t.min().item() >= 0
    assert bool(mk((8,), dtype=kindle.float32, device="cpu", low=-1e39, high=1e39).isfinite().all())
    g = mk((2,), dtype=kindle.float64, device="cpu", requires_grad=True)
    assert g.requires_grad and g.is_leaf


@pytest.mark.parametrize("kwargs", [dict(dtype="float32", low=5, high=4), dict(dtype="int64", low=float("nan")),
                                    dict(dtype="int64", requires_grad=True), dict(dtype="uint8", low=300, high=400),
                                    dict(dtype="float32", noncontiguous=True, memory_format=1)])
def test_make_tensor_errors_match_torch(kwargs):
    torch = _torch()
    results = []
    for T in (torch, kindle):
        kw = dict(kwargs, dtype=getattr(T, kwargs["dtype"]), device="cpu")
        results.append(_outcome(lambda: T.testing.make_tensor((2, 3), **kw)))
    assert results[0] != "PASS" and results[1] == results[0]


# ---------------------------------------------------------------------------------------------
# kindle.random

def test_rng_state_round_trip():
    kindle.random.manual_seed(1234)
    kindle.rand(7)
    state = kindle.random.get_rng_state()
    assert state.dtype == kindle.uint8 and state.dim() == 1
    a, b = kindle.rand(5), kindle.randn(3)
    kindle.rand(11)  # move on, then come back
    kindle.random.set_rng_state(state)
    assert kindle.equal(kindle.rand(5), a) and kindle.equal(kindle.randn(3), b)
    assert kindle.equal(kindle.random.get_rng_state(), kindle.random.get_rng_state())


def test_rng_state_is_a_copy():
    state = kindle.random.get_rng_state()
    kindle.rand(3)
    after = kindle.random.get_rng_state()
    assert not kindle.equal(state, after)
    kindle.random.set_rng_state(state)
    assert kindle.equal(kindle.random.get_rng_state(), state)


def test_seed_functions():
    g = kindle.random.manual_seed(42)
    assert isinstance(g, kindle.Generator)
    assert kindle.random.initial_seed() == 42
    x = kindle.rand(3)
    kindle.random.manual_seed(42)
    assert kindle.equal(kindle.rand(3), x)
    s = kindle.random.seed()
    assert isinstance(s, int) and kindle.random.initial_seed() == s


def test_set_rng_state_rejects_bad_states():
    with pytest.raises(TypeError):
        kindle.random.set_rng_state([1, 2])
    with pytest.raises(TypeError):
        kindle.random.set_rng_state(kindle.zeros(16))
    with pytest.raises(RuntimeError, match="size"):
        kindle.random.set_rng_state(kindle.zeros(3, dtype=kindle.uint8))


def test_fork_rng():
    kindle.random.manual_seed(7)
    expected = kindle.rand(4)
    kindle.random.manual_seed(7)
    with kindle.random.fork_rng():
        kindle.rand(100)
        kindle.random.manual_seed(99)
        kindle.rand(2)
    assert kindle.equal(kindle.rand(4), expected)
    assert kindle.random.initial_seed() == 7
    kindle.random.manual_seed(7)
    with kindle.random.fork_rng(devices=[], enabled=False):
        kindle.rand(1)
    assert not kindle.equal(kindle.rand(4), expected)
    kindle.random.manual_seed(7)
    with pytest.raises(ValueError):
        with kindle.random.fork_rng():
            kindle.rand(5)
            raise ValueError
    assert kindle.equal(kindle.rand(4), expected)


# ---------------------------------------------------------------------------------------------
# kindle.utils.checkpoint

def _mlp():
    kindle.manual_seed(0)
    nn = kindle.nn
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 32), nn.Tanh(),
                         nn.Dropout(0.3), nn.Linear(32, 4))


def _gradients(model, run):
    """Output, input and parameter gradients of run(model, x), and the next random number."""
    for p in model.parameters():
        p.grad = None
    kindle.manual_seed(5)
    x = kindle.randn(6, 8).requires_grad_()
    kindle.manual_seed(123)
    out = run(model, x)
    out.pow(2).sum().backward()
    following = kindle.rand(3)
    return [out, x.grad] + [p.grad for p in model.parameters()], following


_RUNS = {
    "checkpoint": lambda m, x, r: checkpoint(m, x, use_reentrant=r),
    "partial": lambda m, x, r: m[4:](checkpoint(lambda h: m[:4](h), x, use_reentrant=r)),
    "sequential": lambda m, x, r: checkpoint_sequential(m, 3, x, use_reentrant=r),
    "sequential_list": lambda m, x, r: checkpoint_sequential(list(m.children()), 2, x, use_reentrant=r),
}


@pytest.mark.parametrize("use_reentrant", [True, False])
@pytest.mark.parametrize("how", list(_RUNS))
def test_checkpoint_gradients_equal_plain(how, use_reentrant):
    model = _mlp()
    model.train()
    ref, ref_next = _gradients(model, lambda m, x: m(x))
    got, got_next = _gradients(model, lambda m, x: _RUNS[how](m, x, use_reentrant))
    for r, g in zip(ref, got):
        assert g is not None and kindle.equal(r, g)
    assert kindle.equal(ref_next, got_next)  # the recomputation leaves the stream alone


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_without_rng_preservation_redraws_dropout(use_reentrant):
    model = _mlp()
    ref, _ = _gradients(model, lambda m, x: m(x))
    got, _ = _gradients(model, lambda m, x: checkpoint(m, x, use_reentrant=use_reentrant,
                                                       preserve_rng_state=False))
    assert kindle.equal(ref[0], got[0])
    assert not kindle.equal(ref[1], got[1])  # backward saw other dropout masks


def test_checkpoint_use_reentrant_warning():
    model = _mlp()
    x = kindle.randn(2, 8, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        checkpoint(model, x)
        checkpoint_sequential(model, 2, x)
        checkpoint(model, x, use_reentrant=True)
        checkpoint(model, x, use_reentrant=False)
    assert [type(i.message) for i in w] == [UserWarning, UserWarning]
    assert all(i.filename == __file__ for i in w)
    assert "use_reentrant parameter should be passed explicitly" in str(w[0].message)


def test_checkpoint_use_reentrant_warning_matches_torch():
    torch = _torch()
    messages = []
    for T in (torch, kindle):
        lin = T.nn.Linear(2, 2)
        x = T.ones(1, 2, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            T.utils.checkpoint.checkpoint(lin, x)
            T.utils.checkpoint.checkpoint_sequential([lin, lin], 2, x)
            T.utils.checkpoint.checkpoint(lin, T.ones(1, 2), use_reentrant=True)
        messages.append([str(i.message) for i in w])
    assert messages[1] == messages[0]


def test_checkpoint_argument_errors_match_torch():
    torch = _torch()
    cases = ["ck.checkpoint(f, x, use_reentrant=True, foo=1)",
             "ck.checkpoint(f, x, use_reentrant=True, debug=True)",
             "ck.checkpoint_sequential([f], 1, x, use_reentrant=True, foo=1)"]
    for case in cases:
        results = []
        for T in (torch, kindle):
            env = {"ck": T.utils.checkpoint, "f": (lambda t: t * 2), "x": T.ones(2, requires_grad=True)}
            results.append(_outcome(lambda: eval(case, env)))
        assert results[1] == results[0], case


def test_checkpoint_non_reentrant_kwargs_and_containers():
    def f(inputs, *, w):
        return {"s": inputs["a"] * w + inputs["b"], "t": (inputs["a"] - inputs["b"], 3)}

    a = kindle.randn(3, requires_grad=True)
    b = kindle.randn(3, requires_grad=True)
    r = checkpoint(f, {"a": a, "b": b}, w=kindle.tensor(2.0), use_reentrant=False)
    assert isinstance(r, dict) and r["t"][1] == 3 and r["s"].requires_grad
    (r["s"].sum() + r["t"][0].sum()).backward()
    assert kindle.equal(a.grad, kindle.full((3,), 3.0)) and kindle.equal(b.grad, kindle.zeros(3))


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_parameters_only(use_reentrant):
    model = _mlp().eval()
    x = kindle.randn(4, 8)  # no input requires grad
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = checkpoint(model, x, use_reentrant=use_reentrant)
    if use_reentrant:  # PyTorch's behaviour: nothing to differentiate, with a warning
        assert not out.requires_grad and "None of the inputs have requires_grad=True" in str(w[0].message)
        return
    assert out.requires_grad and not w
    out.sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    model(x).sum().backward()
    assert all(kindle.equal(g, p.grad) for g, p in zip(grads, model.parameters()))


def test_checkpoint_under_no_grad_and_non_differentiable_outputs():
    model = _mlp()
    with kindle.no_grad():
        assert not checkpoint(model, kindle.randn(2, 8), use_reentrant=False).requires_grad
    for use_reentrant in (True, False):
        x = kindle.randn(3, requires_grad=True)
        y, idx, z = checkpoint(lambda t: (t, t.argmax(), t * 2), x, use_reentrant=use_reentrant)
        assert idx.dtype == kindle.int64 and not idx.requires_grad
        (y.sum() + z.sum()).backward()
        assert kindle.equal(x.grad, kindle.full((3,), 3.0))


def test_checkpoint_determinism_check():
    calls = []

    def f(x):
        calls.append(1)
        return x[: len(calls)].exp()  # exp saves its result, whose shape differs when recomputed

    x = kindle.randn(4, requires_grad=True)
    out = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match="different metadata"):
        out.sum().backward()
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(f, x, use_reentrant=False, determinism_check="bogus")


def test_checkpoint_context_fn():
    entered = []

    class Ctx:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            entered.append(self.name)

        def __exit__(self, *exc):
            return False

    x = kindle.randn(3, requires_grad=True)
    out = checkpoint(lambda t: t.sin(), x, use_reentrant=False, context_fn=lambda: (Ctx("fwd"), Ctx("re")))
    out.sum().backward()
    assert entered == ["fwd", "re"]
    assert kindle.allclose(x.grad, x.detach().cos())


# ---------------------------------------------------------------------------------------------
# kindle.autograd.profiler.record_function

def test_record_function():
    with record_function("block") as r:
        y = kindle.ones(2) + 1
    assert r.name == "block" and r.args is None and kindle.equal(y, kindle.full((2,), 2.0))
    with record_function("with_args", "a=1") as r:
        pass
    assert r.args == "a=1"

    @record_function("decorated")
    def f(a, b=2):
        return a + b

    assert f(1) == 3 and f(1, b=5) == 6
    fut = object()
    assert record_function("x")._call_end_callbacks_on_future(fut) is fut
    with pytest.raises(KeyError):
        with record_function("raises"):
            raise KeyError
    assert kindle.autograd.profiler.record_function is record_function


# ---------------------------------------------------------------------------------------------
# kindle.utils.data.distributed.DistributedSampler

def _sampler_cases():
    for n in (1, 2, 5, 7, 10, 13):
        for replicas in (1, 2, 3, 4, 8):
            for drop_last in (False, True):
                yield n, replicas, drop_last


def test_distributed_sampler_matches_torch_without_shuffle():
    _torch()
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    for n, replicas, drop_last in _sampler_cases():
        data = list(range(n))
        for rank in range(replicas):
            ours = DistributedSampler(data, num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
            theirs = TorchSampler(data, num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
            assert list(ours) == list(theirs), (n, replicas, rank, drop_last)
            assert len(ours) == len(theirs) and ours.total_size == theirs.total_size


def test_distributed_sampler_padding_without_torch():
    data = list(range(5))
    shares = [list(DistributedSampler(data, num_replicas=3, rank=r, shuffle=False)) for r in range(3)]
    assert shares == [[0, 3], [1, 4], [2, 0]]
    shares = [list(DistributedSampler(data, num_replicas=3, rank=r, shuffle=False, drop_last=True))
              for r in range(3)]
    assert shares == [[0], [1], [2]]
    shares = [list(DistributedSampler([0, 1], num_replicas=5, rank=r, shuffle=False)) for r in range(5)]
    assert shares == [[0], [1], [0], [1], [0]]


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (12, 4, False), (3, 5, False)])
def test_distributed_sampler_shuffle(n, replicas, drop_last):
    data = list(range(n))

    def epoch(e, seed=0):
        shares = []
        for r in range(replicas):
            s = DistributedSampler(data, num_replicas=replicas, rank=r, shuffle=True, seed=seed, drop_last=drop_last)
            s.set_epoch(e)
            shares.append(list(s))
            assert len(shares[-1]) == len(s)
        return shares

    shares = epoch(0)
    flat = [i for share in shares for i in share]
    if drop_last:
        assert len(set(flat)) == len(flat) == (n // replicas) * replicas  # disjoint
    else:
        assert set(flat) == set(data) and len(flat) == math.ceil(n / replicas) * replicas
    assert epoch(0) == shares  # the same on every replica and every call
    assert epoch(1) != shares or n < 4
    assert epoch(0, seed=1) != shares or n < 4


def test_distributed_sampler_errors():
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(4), num_replicas=3, rank=3)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(range(4), num_replicas=3, rank=-1)
    # Without num_replicas/rank, the default process group decides (as torch): none is initialized.
    expected = ((ValueError, "Default process group has not been initialized") if kindle.distributed.is_available()
                else (RuntimeError, "Requires distributed package to be available"))
    with pytest.raises(expected[0], match=expected[1]):
        DistributedSampler(range(4))
    with pytest.raises(expected[0], match=expected[1]):
        DistributedSampler(range(4), num_replicas=2)


def test_distributed_sampler_with_dataloader():
    ds = kindle.utils.data.TensorDataset(kindle.arange(10))
    sampler = DistributedSampler(ds, num_replicas=2, rank=1, shuffle=False)
    loader = kindle.utils.data.DataLoader(ds, batch_size=2, sampler=sampler)
    assert [b[0].tolist() for b in loader] == [[1, 3], [5, 7], [9]]


# ---------------------------------------------------------------------------------------------
# kindle.hub

_HUBCONF = '''
dependencies = ["torch", "numpy"]

import helper_module_for_hub_test as helper


def tiny_model(width=2, *, scale=1.0):
    """A linear layer, scaled."""
    import kindle
    m = kindle.nn.Linear(width, width)
    m.scale = scale
    return m


def echo(*args, **kwargs):
    return helper.tag, args, kwargs


_private = 1
not_callable = 3
'''


@pytest.fixture
def hub_repo(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(textwrap.dedent(_HUBCONF))
    (repo / "helper_module_for_hub_test.py").write_text("tag = 'from-repo'\n")
    monkeypatch.setattr(kindle.hub, "_hub_dir", None)
    monkeypatch.delitem(sys.modules, "helper_module_for_hub_test", raising=False)
    yield repo
    sys.modules.pop("helper_module_for_hub_test", None)


def test_hub_load_local(hub_repo):
    m = kindle.hub.load(str(hub_repo), "tiny_model", 3, source="local", scale=0.5)
    assert isinstance(m, kindle.nn.Linear) and m.weight.shape == (3, 3) and m.scale == 0.5
    assert kindle.hub.load(str(hub_repo), "echo", 1, 2, source="local", trust_repo=True, k="v") == \
        ("from-repo", (1, 2), {"k": "v"})
    assert str(hub_repo) not in sys.path
    # a directory with a hubconf.py loads whatever the source (PyTorch would fail to parse it)
    assert kindle.hub.load(str(hub_repo), "echo", verbose=False)[0] == "from-repo"


def test_hub_list_and_help(hub_repo):
    assert kindle.hub.list(str(hub_repo)) == ["echo", "tiny_model"]
    assert kindle.hub.help(str(hub_repo), "tiny_model") == "A linear layer, scaled."


def test_hub_errors(hub_repo, tmp_path):
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        kindle.hub.load(str(hub_repo), "nope", source="local")
    with pytest.raises(RuntimeError, match="Cannot find callable not_callable in hubconf"):
        kindle.hub.load(str(hub_repo), "not_callable", source="local")
    with pytest.raises(ValueError, match='Unknown source: "foo". Allowed values: "github" | "local".'):
        kindle.hub.load(str(hub_repo), "echo", source="foo")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError):
        kindle.hub.load(str(empty), "echo", source="local")
    with open(hub_repo / "hubconf.py", "a") as f:
        f.write("dependencies = ['torch', 'no_such_package_xyz', 'nor_this_one']\n")
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_package_xyz, nor_this_one"):
        kindle.hub.load(str(hub_repo), "echo", source="local")


def test_hub_github_is_offline(hub_repo, tmp_path):
    kindle.hub.set_dir(str(tmp_path / "hubcache"))
    assert kindle.hub.get_dir() == str(tmp_path / "hubcache")
    with pytest.raises(RuntimeError, match="only loads local directories"):
        kindle.hub.load("pytorch/vision", "resnet18")
    with pytest.raises(RuntimeError, match="only loads local directories"):
        kindle.hub.list("pytorch/vision:v0.10.0")
    # a repo torch.hub already downloaded loads from the cache, as torch.hub does offline
    os.makedirs(tmp_path / "hubcache")
    os.rename(hub_repo, tmp_path / "hubcache" / "someone_models_main")
    assert kindle.hub.load("someone/models", "echo", 7, verbose=False) == ("from-repo", (7,), {})
    with pytest.raises(RuntimeError, match="only loads local directories"):
        kindle.hub.load("someone/models", "echo", force_reload=True)


def test_hub_dirs_and_state_dict_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(kindle.hub, "_hub_dir", None)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    assert kindle.hub.get_dir() == os.path.join(str(tmp_path / "th"), "hub")
    kindle.hub.set_dir(tmp_path / "h")
    assert kindle.hub.get_dir() == str(tmp_path / "h")
    url = "https://example.com/weights/tiny-1234.pt"
    with pytest.raises(RuntimeError, match="cannot download"):
        kindle.hub.load_state_dict_from_url(url)
    os.makedirs(tmp_path / "h" / "checkpoints")
    kindle.save({"w": kindle.arange(3)}, str(tmp_path / "h" / "checkpoints" / "tiny-1234.pt"))
    sd = kindle.hub.load_state_dict_from_url(url)
    assert kindle.equal(sd["w"], kindle.arange(3))


def test_hub_matches_torch_local(hub_repo):
    torch = _torch()
    theirs = torch.hub.load(str(hub_repo), "echo", 1, source="local", k=2)
    sys.modules.pop("helper_module_for_hub_test", None)
    ours = kindle.hub.load(str(hub_repo), "echo", 1, source="local", k=2)
    assert ours == theirs
