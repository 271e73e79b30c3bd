"""Hand-written tests of reverse-mode autograd (kindle.autograd, mirroring torch.autograd):
tensor attributes (requires_grad, is_leaf, grad, grad_fn), backward / autograd.grad and their
arguments, hooks, grad modes, broadcasting and dtype promotion, views and in-place ops, the
version counter, higher-order gradients, custom Functions, gradcheck, anomaly mode, error
messages, memory use over many steps, freeing of the graph, and threads.

Tests that compare with PyTorch take the `torch` fixture (skipped where torch is absent); the
rest check kindle against hand-computed values and run without torch. The op-database test
(test_ops.py) covers the gradient of every op; the cases here are a few hand-picked ones."""
import gc
import os
import re
import threading
import weakref

import numpy as np
import pytest

import kindle
import kindle.autograd as autograd
from kindle.autograd import Function, once_differentiable


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


# ---------------------------------------------------------------------------------------------
# helpers


def np_of(t):
    """A kindle or torch tensor (or None) as a NumPy array."""
    if t is None:
        return None
    return np.asarray(t.detach().numpy())


def assert_close(actual, expected, rtol=1e-6, atol=1e-8, what="value"):
    a, e = np_of(actual) if not isinstance(actual, np.ndarray) else actual, \
        np_of(expected) if not isinstance(expected, np.ndarray) else expected
    assert a is not None, f"{what}: kindle gave None, expected {e!r}"
    assert e is not None, f"{what}: kindle gave {a!r}, expected None"
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=what, equal_nan=True)


def rand(*shape, seed=0, dtype=np.float64, low=None):
    r = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    if low is not None:
        r = np.abs(r) + low
    return r


def leaf(lib, a, requires_grad=True):
    return lib.tensor(a.copy(), requires_grad=requires_grad)


def run_both(torch, fn, arrays, seed=1, rtol=1e-6, atol=1e-8, check_output=True):
    """fn(lib, *leaves) in kindle and torch; backward of a weighted sum of the floating outputs
    with the same weights; compares the outputs and every input gradient."""
    res = {}
    for lib in (kindle, torch):
        ins = [leaf(lib, a) if a.dtype.kind == "f" else lib.tensor(a) for a in arrays]
        out = fn(lib, *ins)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        outs = [o for o in outs if o.is_floating_point()]
        loss = None
        for i, o in enumerate(outs):
            w = lib.tensor(rand(*tuple(o.shape), seed=seed + i).astype(np_of(o).dtype))
            term = (o * w).sum()
            loss = term if loss is None else loss + term
        loss.backward()
        res[lib] = (outs, [t.grad if t.is_floating_point() else None for t in ins])
    (ko, kg), (to, tg) = res[kindle], res[torch]
    assert len(ko) == len(to)
    if check_output:
        for i, (k, t) in enumerate(zip(ko, to)):
            assert_close(k, t, rtol, atol, what=f"output {i}")
    for i, (k, t) in enumerate(zip(kg, tg)):
        if t is None and k is None:
            continue
        assert_close(k, t, rtol, atol, what=f"grad of input {i}")
        assert str(k.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], f"grad {i} dtype {k.dtype} vs {t.dtype}"


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------------------------------------
# tensor attributes


def test_requires_grad_factory_argument():
    for t in (kindle.randn(3, requires_grad=True), kindle.zeros(2, 3, requires_grad=True),
              kindle.ones(4, requires_grad=True), kindle.tensor([1.0, 2.0], requires_grad=True),
              kindle.full((2,), 3.0, requires_grad=True), kindle.empty(2, requires_grad=True),
              kindle.rand(2, 2, requires_grad=True), kindle.arange(0.0, 3.0, requires_grad=True)):
        assert t.requires_grad is True
        assert t.is_leaf is True
        assert t.grad is None
        assert t.grad_fn is None
    for t in (kindle.randn(3), kindle.zeros(2), kindle.tensor([1.0])):
        assert t.requires_grad is False
        assert t.is_leaf is True


def test_requires_grad_():
    x = kindle.randn(3)
    r = x.requires_grad_()
    assert r is x
    assert x.requires_grad and x.is_leaf
    x.requires_grad_(False)
    assert not x.requires_grad
    x.requires_grad_(True)
    y = x * 2
    assert y.requires_grad and not y.is_leaf
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)


def test_is_leaf_grad_and_grad_fn():
    x = kindle.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = kindle.tensor([4.0, 5.0, 6.0])
    y = x * c
    assert x.is_leaf and c.is_leaf and not y.is_leaf
    assert y.requires_grad and not c.requires_grad
    assert y.grad_fn.name() == "MulBackward0"
    assert "MulBackward0" in repr(y.grad_fn)
    assert (c * 2).grad_fn is None and (c * 2).is_leaf
    z = y.sum()
    assert z.grad_fn.name() == "SumBackward0"
    z.backward()
    assert_close(x.grad, np.array([4.0, 5.0, 6.0]))
    assert c.grad is None
    assert x.grad.requires_grad is False
    assert x.grad.grad_fn is None


def test_next_functions():
    x = kindle.randn(3, requires_grad=True)
    w = kindle.randn(3, requires_grad=True)
    c = kindle.randn(3)
    y = x * w + c
    add = y.grad_fn
    assert add.name() == "AddBackward0"
    nf = add.next_functions
    assert isinstance(nf, tuple) and len(nf) == 2
    mul, nr = nf[0]
    assert mul.name() == "MulBackward0" and nr == 0
    assert nf[1][0] is None  # c does not require grad
    accs = mul.next_functions
    assert [f.name() for f, _ in accs] == ["AccumulateGrad", "AccumulateGrad"]
    assert accs[0][0].next_functions == ()
    # The same node is the same Python object while it is referenced.
    assert y.grad_fn is y.grad_fn
    # Multi-output ops: outputs have distinct output numbers of one node.
    a, b = kindle.randn(4, requires_grad=True).split(2)
    s = a + b
    (na, ia), (nb, ib) = s.grad_fn.next_functions
    assert na.name() == nb.name() == "SplitBackward0"
    assert (ia, ib) == (0, 1)
    assert a.output_nr == 0 and b.output_nr == 1


def test_grad_fn_names_match_torch(torch):
    exprs = ["a * b2", "a + b2", "a - b2", "a / 2", "a.exp()", "a.sum()", "a.mean()", "a @ m", "a.view(6)",
             "a[0]", "a[1:]", "a.transpose(0, 1)", "a.t()", "a.unsqueeze(0)", "a.expand(4, 2, 3)", "a.clone()",
             "lib.cat([a, a])", "lib.stack([a, a])", "a.relu()", "a.tanh()", "a.sigmoid()", "a.softmax(1)",
             "a.log_softmax(1)", "a.pow(2)", "a.neg()", "a.abs()", "a.permute(1, 0)", "a.sort(1)[0]",
             "lib.where(a > 0, a, b2)"]
    bad = []
    for e in exprs:
        names = []
        for lib in (kindle, torch):
            env = {"lib": lib, "a": lib.randn(2, 3, requires_grad=True), "b2": lib.randn(2, 3, requires_grad=True),
                   "m": lib.randn(3, 4, requires_grad=True)}
            names.append(eval(e, env).grad_fn.name())
        if names[0] != names[1]:
            bad.append(f"{e}: kindle {names[0]}, torch {names[1]}")
    assert not bad, "grad_fn names differ from torch: " + "; ".join(bad)


# ---------------------------------------------------------------------------------------------
# backward and autograd.grad


def test_backward_with_gradient_argument():
    x = kindle.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y.backward(kindle.tensor([1.0, 0.5, 2.0]))
    assert_close(x.grad, np.array([2.0, 2.0, 12.0]))
    # positional gradient and the module-level function
    x.grad = None
    autograd.backward([x * 3], [kindle.ones(3)])
    assert_close(x.grad, np.full(3, 3.0))


def test_backward_retain_graph_and_create_graph():
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    g1 = np_of(x.grad).copy()
    y.backward()  # second time allowed with retain_graph=True before
    assert_close(x.grad, 2 * g1)
    x.grad = None
    y = (x ** 3).sum()
    y.backward(create_graph=True)
    assert x.grad.requires_grad, "create_graph=True: the gradient must carry a graph"
    g = x.grad
    x.grad = None
    g.sum().backward()
    assert_close(x.grad, 6 * np.array([1.0, 2.0]))


def test_gradient_accumulates_across_backward_calls():
    x = kindle.tensor([1.0, -2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert_close(x.grad, np.array([3.0 + 2.0, 3.0 - 4.0]))
    x.grad.zero_()
    (x * 5).sum().backward()
    assert_close(x.grad, np.array([5.0, 5.0]))
    x.grad = None
    (x * 7).sum().backward()
    assert_close(x.grad, np.array([7.0, 7.0]))


def test_grad_assignment_checks():
    x = kindle.randn(3, requires_grad=True)
    x.grad = kindle.ones(3)
    assert_close(x.grad, np.ones(3))
    with pytest.raises(RuntimeError):
        x.grad = kindle.ones(4)
    x.grad = None
    assert x.grad is None


def test_backward_inputs_accumulates_only_into_those():
    a = kindle.tensor([1.0, 2.0], requires_grad=True)
    b = kindle.tensor([3.0, 4.0], requires_grad=True)
    h = a * b
    h.retain_grad()
    loss = (h * a).sum()
    loss.backward(inputs=[a], retain_graph=True)
    assert_close(a.grad, 2 * np.array([1.0, 2.0]) * np.array([3.0, 4.0]))
    assert b.grad is None
    # h lies on the path to a: its retain_grad hook runs, as in torch
    assert_close(h.grad, np.array([1.0, 2.0]))
    loss.backward(inputs=[b])
    assert_close(b.grad, np.array([1.0, 4.0]))
    assert_close(a.grad, np.array([6.0, 16.0]))  # unchanged
    with pytest.raises(RuntimeError):
        (a * 2).sum().backward(inputs=[])


def test_backward_inputs_nonleaf_gets_grad():
    # a non-leaf in inputs gets its .grad (as in torch), and nothing flows past it
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    m = x * 2
    (m * m).sum().backward(inputs=[m])
    assert x.grad is None
    assert_close(m.grad, np.array([4.0, 8.0]))


def test_backward_inputs_nonleaf_matches_torch(torch):
    out = {}
    for lib in (kindle, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        m = x.exp()
        (m * m * x).sum().backward(inputs=[m, x])
        out[lib] = (m.grad, x.grad)
    assert_close(out[kindle][0], out[torch][0], what="m.grad")
    assert_close(out[kindle][1], out[torch][1], what="x.grad")


def test_autograd_grad_basic():
    x = kindle.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = kindle.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = (x * w).sum()
    gx, gw = autograd.grad(y, [x, w], retain_graph=True)
    assert_close(gx, np_of(w))
    assert_close(gw, np_of(x))
    assert x.grad is None and w.grad is None, "autograd.grad must not touch .grad"
    r = autograd.grad(y, x)
    assert isinstance(r, tuple) and len(r) == 1
    assert_close(r[0], np_of(w))
    assert not r[0].requires_grad


def test_autograd_grad_grad_outputs_and_multiple_outputs():
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    y1 = x * 2
    y2 = x * x
    (g,) = autograd.grad([y1, y2], [x], grad_outputs=[kindle.tensor([1.0, 1.0]), kindle.tensor([0.5, 3.0])])
    assert_close(g, np.array([2 + 0.5 * 2, 2 + 3.0 * 4]))
    (g,) = autograd.grad(x * 3, x, grad_outputs=kindle.tensor([1.0, -1.0]))
    assert_close(g, np.array([3.0, -3.0]))


def test_autograd_grad_allow_unused():
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    u = kindle.tensor([5.0], requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="allow_unused"):
        autograd.grad(y, [x, u], retain_graph=True)
    gx, gu = autograd.grad(y, [x, u], allow_unused=True, retain_graph=True)
    assert_close(gx, np.array([2.0, 2.0]))
    assert gu is None
    gx, gu = autograd.grad(y, [x, u], materialize_grads=True)
    assert_close(gu, np.zeros(1))


def test_autograd_grad_create_graph():
    x = kindle.tensor([0.5, -1.5], requires_grad=True)
    y = (x ** 3).sum()
    (g,) = autograd.grad(y, x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    assert_close(g, 3 * np.array([0.5, -1.5]) ** 2)
    (gg,) = autograd.grad(g.sum(), x)
    assert_close(gg, 6 * np.array([0.5, -1.5]))


def test_autograd_grad_of_nonleaf_input():
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    y = (h * h).sum()
    (gh,) = autograd.grad(y, h)
    assert_close(gh, 2 * np.array([3.0, 6.0]))


def test_autograd_grad_wrt_intermediate_and_leaf(torch):
    out = {}
    for lib in (kindle, torch):
        x = lib.tensor([0.5, 1.5], requires_grad=True)
        h = x.sin()
        loss = (h * h * x).sum()
        out[lib] = lib.autograd.grad(loss, [h, x])
    assert_close(out[kindle][0], out[torch][0], what="grad h")
    assert_close(out[kindle][1], out[torch][1], what="grad x")


def test_autograd_grad_wrt_intermediate_does_not_run_its_node():
    # The gradient of h is known when it reaches h: h's own grad_fn must not run. Running it
    # would use (and free) its saved tensors.
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    h = x.exp()
    (g,) = autograd.grad((h * 2).sum(), h)
    assert_close(g, np.array([2.0, 2.0]))
    h.sum().backward()  # ExpBackward0 was not run, so its saved output was not freed
    assert_close(x.grad, np.exp([1.0, 2.0]), rtol=1e-6)
    # ... nor check its saved tensors' versions
    a = x * 1
    s = a.sin()
    a.add_(1)
    (g,) = autograd.grad((s * 3).sum(), s)
    assert_close(g, np.array([3.0, 3.0]))


# ---------------------------------------------------------------------------------------------
# detach, retain_grad, hooks


def test_detach_shares_memory_and_cuts_graph():
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    d[0] = 10.0
    assert y[0].item() == 10.0, "detach() must share storage"
    z = (y.detach() * x).sum()
    z.backward()
    assert_close(x.grad, np.array([10.0, 4.0]))


def test_detach_():
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    r = y.detach_()
    assert r is y
    assert not y.requires_grad and y.is_leaf and y.grad_fn is None


def test_retain_grad():
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    z = x * 4
    y.retain_grad()
    assert y.retains_grad and not z.retains_grad
    (y * z).sum().backward()
    assert_close(y.grad, np.array([4.0, 8.0]))
    assert z.grad is None
    x.retain_grad()  # no-op on a leaf
    assert not x.retains_grad


def test_retain_grad_accumulates():
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    loss = (y * y).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert_close(y.grad, 2 * 2 * np.array([3.0, 6.0]))


def test_hook_on_leaf_replaces_gradient_and_remove():
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    seen = []

    def hook(g):
        seen.append(np_of(g).copy())
        return g * 10

    h = x.register_hook(hook)
    (x * 2).sum().backward()
    assert_close(x.grad, np.array([20.0, 20.0]))
    assert len(seen) == 1
    assert_close(seen[0], np.array([2.0, 2.0]))
    h.remove()
    x.grad = None
    (x * 2).sum().backward()
    assert_close(x.grad, np.array([2.0, 2.0]))
    assert len(seen) == 1


def test_hook_on_nonleaf():
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(np_of(g).copy()))  # returns None: keeps the gradient
    h = y.register_hook(lambda g: g * 0.5)
    (y * y).sum().backward(retain_graph=True)
    assert_close(seen[0], np.array([4.0, 8.0]))
    assert_close(x.grad, np.array([4.0, 8.0]))  # 2 * (0.5 * 2y)
    h.remove()
    x.grad = None
    (y * 3).sum().backward()
    assert_close(x.grad, np.array([6.0, 6.0]))


def test_hooks_run_in_registration_order():
    x = kindle.tensor([1.0], requires_grad=True)
    y = x * 1
    y.register_hook(lambda g: g + 1)
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert_close(x.grad, np.array([20.0]))


def test_hooks_apply_to_autograd_grad_results():
    # torch: tensor hooks of the differentiated inputs run and shape what autograd.grad returns
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (gx,) = autograd.grad((x * 2).sum(), x)
    assert_close(gx, np.array([20.0, 20.0]), what="leaf input")
    h = x * 1
    h.register_hook(lambda g: g * 10)
    (gh,) = autograd.grad((h * 2).sum(), h)
    assert_close(gh, np.array([20.0, 20.0]), what="non-leaf input")


def test_retain_grad_sees_hooked_gradient_matches_torch(torch):
    out = {}
    for lib in (kindle, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: g * 3)  # registered after retain_grad
        (y * y).sum().backward()
        out[lib] = (y.grad, x.grad)
    assert_close(out[kindle][0], out[torch][0], what="y.grad")
    assert_close(out[kindle][1], out[torch][1], what="x.grad")


def test_node_hooks():
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    calls = []
    y.grad_fn.register_prehook(lambda go: calls.append(("pre", np_of(go[0]).copy())))
    y.grad_fn.register_hook(lambda gi, go: calls.append(("post", np_of(gi[0]).copy())))
    y.sum().backward()
    assert [c[0] for c in calls] == ["pre", "post"]
    assert_close(calls[0][1], np.ones(2))
    assert_close(calls[1][1], np.full(2, 3.0))


# ---------------------------------------------------------------------------------------------
# grad modes


def test_no_grad_context_and_decorator():
    x = kindle.randn(3, requires_grad=True)
    assert kindle.is_grad_enabled()
    with kindle.no_grad():
        assert not kindle.is_grad_enabled()
        y = x * 2
        assert not y.requires_grad and y.grad_fn is None
    assert kindle.is_grad_enabled()

    @kindle.no_grad()
    def f(t):
        return t * 2, kindle.is_grad_enabled()

    y, mode = f(x)
    assert not mode and not y.requires_grad
    assert kindle.is_grad_enabled()


def test_bare_decorators():
    @kindle.no_grad
    def f():
        return kindle.is_grad_enabled()

    @kindle.enable_grad
    def g():
        return kindle.is_grad_enabled()

    @kindle.inference_mode
    def h():
        return kindle.is_grad_enabled(), kindle.is_inference_mode_enabled()

    assert f() is False
    with kindle.no_grad():
        assert g() is True
    assert h() == (False, True)
    assert kindle.is_grad_enabled() and not kindle.is_inference_mode_enabled()


def test_no_grad_decorator_on_generator():
    @kindle.no_grad()
    def gen():
        for _ in range(2):
            yield kindle.is_grad_enabled()

    assert list(gen()) == [False, False]
    assert kindle.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = kindle.randn(2, requires_grad=True)
    with kindle.no_grad():
        with kindle.enable_grad():
            assert kindle.is_grad_enabled()
            y = x * 2
        assert not kindle.is_grad_enabled()
    assert y.requires_grad

    @kindle.enable_grad()
    def f():
        return x * 2

    with kindle.no_grad():
        assert f().requires_grad


def test_set_grad_enabled_function_context_decorator():
    x = kindle.randn(2, requires_grad=True)
    try:
        kindle.set_grad_enabled(False)
        assert not kindle.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        kindle.set_grad_enabled(True)
    assert kindle.is_grad_enabled()
    with kindle.set_grad_enabled(False):
        assert not kindle.is_grad_enabled()
        with kindle.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not kindle.is_grad_enabled()
    assert kindle.is_grad_enabled()

    @kindle.set_grad_enabled(False)
    def f():
        return kindle.is_grad_enabled()

    assert kindle.is_grad_enabled(), "applying the decorator must not change the mode"
    assert f() is False
    assert kindle.is_grad_enabled()


def test_inference_mode():
    x = kindle.randn(2, requires_grad=True)
    assert not kindle.is_inference_mode_enabled()
    with kindle.inference_mode():
        assert kindle.is_inference_mode_enabled()
        assert not kindle.is_grad_enabled()
        y = x * 2
        assert not y.requires_grad
    assert not kindle.is_inference_mode_enabled() and kindle.is_grad_enabled()
    with kindle.inference_mode(False):
        assert kindle.is_grad_enabled()
        assert (x * 2).requires_grad

    @kindle.inference_mode()
    def f():
        return (x * 2).requires_grad, kindle.is_inference_mode_enabled()

    assert f() == (False, True)


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with kindle.no_grad():
            raise ValueError("boom")
    assert kindle.is_grad_enabled()


def test_grad_mode_is_per_thread():
    x = kindle.randn(3, requires_grad=True)
    result = {}

    def worker():
        result["enabled"] = kindle.is_grad_enabled()
        result["requires_grad"] = (x * 2).requires_grad
        with kindle.no_grad():
            result["inner"] = kindle.is_grad_enabled()

    with kindle.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not kindle.is_grad_enabled(), "the thread's no_grad must not leak into this one"
    assert result == {"enabled": True, "requires_grad": True, "inner": False}
    # and a thread's mode change does not affect the main thread
    t = threading.Thread(target=lambda: kindle.set_grad_enabled(False))
    t.start()
    t.join()
    assert kindle.is_grad_enabled()


def test_backward_inside_no_grad():
    # backward works inside no_grad (the mode only affects recording of new ops)
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with kindle.no_grad():
        y.backward()
    assert_close(x.grad, np.array([2.0, 4.0]))


# ---------------------------------------------------------------------------------------------
# broadcasting and dtypes


def test_broadcast_gradients_reduced_to_input_shapes():
    a = kindle.tensor(rand(3, 1), requires_grad=True)
    b = kindle.tensor(rand(1, 4, seed=1), requires_grad=True)
    c = kindle.tensor(rand(4, seed=2), requires_grad=True)
    s = kindle.tensor(2.0, requires_grad=True)
    y = (a * b + c) * s
    y.sum().backward()
    assert tuple(a.grad.shape) == (3, 1)
    assert tuple(b.grad.shape) == (1, 4)
    assert tuple(c.grad.shape) == (4,)
    assert tuple(s.grad.shape) == ()
    an, bn, cn = rand(3, 1), rand(1, 4, seed=1), rand(4, seed=2)
    assert_close(a.grad, 2.0 * bn.sum() * np.ones((3, 1)))
    assert_close(b.grad, 2.0 * an.sum() * np.ones((1, 4)))
    assert_close(c.grad, np.full(4, 6.0))
    assert_close(s.grad, np.array((an * bn + cn).sum()))


def test_broadcast_vs_torch(torch):
    run_both(torch, lambda lib, a, b, c: (a * b - c) / (c.abs() + 1),
             [rand(2, 3, 1), rand(3, 4, seed=1), rand(4, seed=2)])
    run_both(torch, lambda lib, a, b: lib.maximum(a, b) + lib.atan2(a, b),
             [rand(5, 1, 3), rand(2, 1, seed=1)])


def test_dtype_promotion_gradients():
    a = kindle.tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    b = kindle.tensor(np.array([3.0, 4.0], dtype=np.float64), requires_grad=True)
    y = a * b
    assert y.dtype == kindle.float64
    y.sum().backward()
    assert a.grad.dtype == kindle.float32
    assert b.grad.dtype == kindle.float64
    assert_close(a.grad, np.array([3.0, 4.0], dtype=np.float32))
    assert_close(b.grad, np.array([1.0, 2.0]))
    # integer tensor times float leaf
    i = kindle.tensor([2, 3])
    c = kindle.tensor([1.0, 1.0], requires_grad=True)
    (i * c).sum().backward()
    assert c.grad.dtype == kindle.float32
    assert_close(c.grad, np.array([2.0, 3.0], dtype=np.float32))


def test_dtype_cast_gradient(torch):
    run_both(torch, lambda lib, a, b: a.to(lib.float64) * b + a.double().sum(),
             [rand(3, dtype=np.float32), rand(3, seed=1)], rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# views and in-place ops


def _views_inplace_case(torch, body, shape=(3, 4)):
    out = {}
    for lib in (kindle, torch):
        x = leaf(lib, rand(*shape))
        res = body(lib, x)
        out[lib] = (res, x.grad)
    kr, tr = out[kindle][0], out[torch][0]
    assert_close(kr, tr, what="result")
    assert_close(out[kindle][1], out[torch][1], what="x.grad")


def test_inplace_on_view_of_nonleaf(torch):
    def body(lib, x):
        y = x * 1
        y[0].mul_(2)
        y.sum().backward()
        return y

    _views_inplace_case(torch, body)


def test_inplace_on_view_of_nonleaf_with_other_input(torch):
    def body(lib, x):
        w = lib.tensor(np.arange(4.0), requires_grad=True)
        y = x.sin()  # saves x, not y: y may be modified
        y[1].mul_(w)
        y[:, 2].add_(y[:, 0] * 3)
        loss = (y * y).sum()
        loss.backward()
        return lib.cat([y.reshape(-1), w.grad])

    _views_inplace_case(torch, body)


def test_inplace_on_transposed_view_and_view_of_view(torch):
    def body(lib, x):
        y = x.sin()
        v = y.t()[1:3]
        v.pow_(2)
        y.view(-1)[::5].neg_()
        (y * lib.arange(12.0).view(3, 4)).sum().backward()
        return y

    _views_inplace_case(torch, body)


def test_view_used_after_inplace_on_base(torch):
    def body(lib, x):
        y = x * 2
        v = y[1]
        y.mul_(3)
        (v * v).sum().backward()
        return v

    _views_inplace_case(torch, body)


def test_inplace_on_nonleaf_chain(torch):
    def body(lib, x):
        y = x * 1
        c = lib.arange(12.0, dtype=lib.float64).view(3, 4)
        y.add_(2).mul_(c).sigmoid_()
        y.sum().backward()
        return y

    _views_inplace_case(torch, body)


def test_inplace_with_grad_into_tensor_not_requiring_grad(torch):
    out = {}
    for lib in (kindle, torch):
        b = leaf(lib, rand(4))
        y = lib.zeros(3, 4, dtype=lib.float64)
        y.add_(b)
        z = lib.zeros(3, 4, dtype=lib.float64)
        z[1].add_(b * 2)
        assert y.requires_grad and z.requires_grad and not y.is_leaf
        (y.sum() + (z * z).sum()).backward()
        out[lib] = b.grad
    assert_close(out[kindle], out[torch])


def test_inplace_on_view_created_in_no_grad_raises():
    # torch: "A view was created in no_grad mode and is being modified inplace with grad mode
    # enabled" -- otherwise the leaf is silently changed or the gradient is silently wrong.
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    with kindle.no_grad():
        v = x[0:1]
    with pytest.raises(RuntimeError):
        v.mul_(2)
    y = x * 1
    with kindle.no_grad():
        w = y[0:1]
    with pytest.raises(RuntimeError):
        w.mul_(2)


def test_base_grad_fn_after_inplace_on_view():
    x = kindle.randn(3, 4, requires_grad=True)
    y = x * 1
    y[0].mul_(2)
    assert y.grad_fn.name() == "CopySlices"
    assert y._version == 1


def test_slice_assignment_builds_tensor():
    x = kindle.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = kindle.zeros(3, 4)
    out[:, 1] = x * 2
    assert out.requires_grad and not out.is_leaf
    out[0, 3] = x[2] * x[2]
    out.sum().backward()
    assert_close(x.grad, np.array([2.0, 2.0, 2.0 + 6.0]))
    assert_close(out.detach()[:, 1], np.array([2.0, 4.0, 6.0]))


def test_slice_assignment_vs_torch(torch):
    def body(lib, x):
        out = lib.zeros(4, 5, dtype=lib.float64)
        out[1:3] = x[:2, :5] * 2
        out[:, 0] = x[:, 1].exp()
        out[3, 2:4] = 7.0
        (out * out).sum().backward()
        return out

    _views_inplace_case(torch, body, shape=(4, 6))


def test_setitem_tensor_index_and_index_put(torch):
    def body(lib, x):
        out = lib.zeros(5, 4, dtype=lib.float64)
        idx = lib.tensor([0, 3, 4])
        out[idx] = x[:3] * 2
        mask = lib.tensor([True, False, True, False])
        out[:, mask] = out[:, mask] * 3
        out.index_put_((lib.tensor([1, 1]), lib.tensor([0, 2])), x[0, :2] * 5, accumulate=True)
        out.sum().backward()
        return out

    _views_inplace_case(torch, body)


def test_index_put(torch):
    run_both(torch, lambda lib, a, v: lib.index_put(a * 1, (lib.tensor([0, 2]),), v),
             [rand(3, 4), rand(2, 4, seed=1)])
    run_both(torch, lambda lib, a, v: (a * 1).index_put_((lib.tensor([2, 0]), lib.tensor([1, 3])), v * 2),
             [rand(3, 4), rand(2, seed=1)])


def test_index_put_accumulate(torch):
    # accumulate=True adds into self: self's gradient passes through everywhere
    run_both(torch, lambda lib, a, v: lib.index_put(a * 1, (lib.tensor([0, 2]),), v, accumulate=True),
             [rand(3, 4), rand(2, 4, seed=1)])
    run_both(torch, lambda lib, a, v: (a * 1).index_put((lib.tensor([0, 0]), lib.tensor([1, 1])), v, accumulate=True),
             [rand(3, 4), rand(2, seed=1)])
    run_both(torch, lambda lib, a, v: (a * 1).index_put_((lib.tensor([1, 2]),), v.exp(), accumulate=True),
             [rand(3, 4), rand(4, seed=1)])


def test_inplace_on_leaf_requiring_grad_raises():
    x = kindle.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.mul_(2)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0] = 5.0
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[1].zero_()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[:2].mul_(3)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.view(3).exp_()
    # allowed under no_grad (optimizer updates)
    v0 = np_of(x).copy()
    with kindle.no_grad():
        x.add_(1)
        x[0] = 0.0
    assert x.is_leaf and x.requires_grad
    assert_close(x.detach()[1:], v0[1:] + 1)


# ---------------------------------------------------------------------------------------------
# version counter


def test_modified_output_after_save_raises():
    x = kindle.randn(2, 3, requires_grad=True)
    y = x.exp()
    assert y._version == 0
    y.add_(1)
    assert y._version == 1
    with pytest.raises(RuntimeError) as ei:
        y.sum().backward()
    msg = str(ei.value)
    assert "modified by an inplace operation" in msg
    assert "ExpBackward0" in msg
    assert re.search(r"[\[(]2, 3[\])]", msg), msg
    assert "version 1" in msg and "version 0" in msg


def test_modified_input_after_save_raises():
    x = kindle.randn(4, requires_grad=True)
    y = x * 1
    z = y.sin()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="SinBackward0"):
        z.sum().backward()
    # an op that does not save its input is unaffected
    a = kindle.randn(4, requires_grad=True)
    b = a * 1
    c = b + 1
    b.mul_(2)
    c.sum().backward()
    assert_close(a.grad, np.ones(4))


def test_modified_via_view_raises():
    x = kindle.randn(4, requires_grad=True)
    y = x.tanh()
    y[0].zero_()  # y is saved by TanhBackward0
    with pytest.raises(RuntimeError, match="TanhBackward0"):
        y.sum().backward()


# ---------------------------------------------------------------------------------------------
# higher-order gradients


def test_hessian_vector_product(torch):
    a_np = rand(4, 4)
    a_np = a_np + a_np.T
    x_np, v_np = rand(4, seed=1), rand(4, seed=2)
    out = {}
    for lib in (kindle, torch):
        x = leaf(lib, x_np)
        A = lib.tensor(a_np)
        v = lib.tensor(v_np)
        f = (x @ A @ x) * 0.5 + (x.sin() * x.exp()).sum() + (x ** 4).sum()
        (g,) = lib.autograd.grad(f, x, create_graph=True)
        (hv,) = lib.autograd.grad((g * v).sum(), x)
        out[lib] = (g, hv)
    assert_close(out[kindle][0], out[torch][0], what="gradient")
    assert_close(out[kindle][1], out[torch][1], what="Hessian-vector product")


@pytest.mark.parametrize("name", ["tanh", "softmax", "log_softmax", "matmul", "sigmoid", "div", "norm"])
def test_double_backward_vs_torch(torch, name):
    fns = {
        "tanh": lambda lib, a, b: a.tanh() * b,
        "softmax": lambda lib, a, b: a.softmax(1) * b,
        "log_softmax": lambda lib, a, b: a.log_softmax(0) * b,
        "matmul": lambda lib, a, b: a @ b.t() @ a,
        "sigmoid": lambda lib, a, b: a.sigmoid() * b.exp(),
        "div": lambda lib, a, b: a / (b * b + 1),
        "norm": lambda lib, a, b: a.norm(dim=1, keepdim=True) * b,
    }
    fn = fns[name]
    res = {}
    for lib in (kindle, torch):
        a = leaf(lib, rand(3, 3))
        b = leaf(lib, rand(3, 3, seed=1))
        y = fn(lib, a, b)
        w = lib.tensor(rand(*tuple(y.shape), seed=2))
        ga, gb = lib.autograd.grad((y * w).sum(), [a, b], create_graph=True)
        loss = (ga * ga).sum() + (gb.sin()).sum()
        loss.backward()
        res[lib] = (ga, gb, a.grad, b.grad)
    for i, what in enumerate(["first grad a", "first grad b", "second grad a", "second grad b"]):
        assert_close(res[kindle][i], res[torch][i], rtol=1e-6, atol=1e-8, what=what)


@pytest.mark.parametrize("case", ["view_add_", "mul_", "sin_", "sin_mul_", "div_", "view_mul_",
                                  "view_after_base_mul_"])
def test_double_backward_through_inplace(torch, case):
    # an in-place op that saves its input's old value must keep that value's history for
    # create_graph=True
    def body(lib, x):
        if case == "view_add_":  # saves nothing: CopySlices alone
            y = x * 1
            y[1:].add_(x[:3] ** 2)
            return (y ** 3).sum()
        if case == "mul_":
            y = x * 1
            y.mul_(x)
            return y.sum()
        if case == "sin_":
            y = x * 2
            y.sin_()
            return y.sum()
        if case == "sin_mul_":
            y = x.sin()
            y.mul_(x)
            return y.sum()
        if case == "div_":
            y = x * x
            y.div_(x + 2)
            return y.sum()
        if case == "view_mul_":
            y = x * 1
            y[1:].mul_(x[:3])
            return (y * y).sum()
        y = x * 1
        v = y[1:3]
        y.mul_(x)
        return (v ** 3).sum()

    out = {}
    for lib in (kindle, torch):
        x = lib.tensor([1.0, 2.0, 3.0, 0.5], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(body(lib, x), x, create_graph=True)
        g.sum().backward()
        out[lib] = (g, x.grad)
    assert_close(out[kindle][0], out[torch][0], what="first derivative")
    assert_close(out[kindle][1], out[torch][1], what="second derivative")


def _mlp_params(lib, seed=0, d_in=5, d_h=8, d_out=3):
    return [leaf(lib, rand(d_in, d_h, seed=seed) * 0.5), leaf(lib, rand(d_h, seed=seed + 1) * 0.1),
            leaf(lib, rand(d_h, d_out, seed=seed + 2) * 0.5), leaf(lib, rand(d_out, seed=seed + 3) * 0.1)]


def _mlp(x, params):
    w1, b1, w2, b2 = params
    return (x @ w1 + b1).tanh() @ w2 + b2


def test_gradient_penalty_mlp(torch):
    x_np = rand(6, 5, seed=10)
    res = {}
    for lib in (kindle, torch):
        params = _mlp_params(lib)
        x = leaf(lib, x_np)
        out = _mlp(x, params)
        (gx,) = lib.autograd.grad(out.sum(), x, create_graph=True)
        penalty = ((gx.norm(2, dim=1) - 1) ** 2).mean()
        loss = out.pow(2).mean() + 10 * penalty
        loss.backward()
        res[lib] = [gx, penalty] + [p.grad for p in params] + [x.grad]
    for i, (k, t) in enumerate(zip(res[kindle], res[torch])):
        assert_close(k, t, rtol=1e-6, atol=1e-9, what=f"item {i}")


def test_gradient_penalty_relu_mlp(torch):
    # relu's second derivative is zero: the penalty still reaches the weights through w1/w2.
    x_np = rand(4, 5, seed=11)
    res = {}
    for lib in (kindle, torch):
        w1, b1, w2, b2 = _mlp_params(lib, seed=3)
        x = leaf(lib, x_np)
        out = (x @ w1 + b1).relu() @ w2 + b2
        (gx,) = lib.autograd.grad(out.sum(), x, create_graph=True)
        (gx.pow(2).sum()).backward()
        res[lib] = [w1.grad, b1.grad, w2.grad, x.grad]
    for i, (k, t) in enumerate(zip(res[kindle], res[torch])):
        # an undefined gradient (None) and torch's all-zero one mean the same here
        k = np.zeros(tuple(t.shape)) if k is None and t is not None else k
        t = np.zeros(tuple(k.shape)) if t is None and k is not None else t
        assert_close(k, t, rtol=1e-6, atol=1e-9, what=f"item {i}")


def test_triple_backward():
    x = kindle.tensor([0.3, -0.7], requires_grad=True)
    y = (x ** 4).sum()
    (g1,) = autograd.grad(y, x, create_graph=True)
    (g2,) = autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = autograd.grad(g2.sum(), x)
    assert_close(g1, 4 * np_of(x) ** 3)
    assert_close(g2, 12 * np_of(x) ** 2)
    assert_close(g3, 24 * np_of(x))


@pytest.mark.parametrize("name", ["tanh", "mul", "matmul", "softmax", "log_softmax", "exp_sum", "pow"])
def test_gradgradcheck(name):
    fns = {
        "tanh": (lambda a: a.tanh(), [rand(3)]),
        "mul": (lambda a, b: a * b * a, [rand(2, 2), rand(2, 2, seed=1)]),
        "matmul": (lambda a, b: a @ b, [rand(2, 3), rand(3, 2, seed=1)]),
        "softmax": (lambda a: a.softmax(0), [rand(3)]),
        "log_softmax": (lambda a: a.log_softmax(1), [rand(2, 3)]),
        "exp_sum": (lambda a: (a.exp() * a).sum(0), [rand(2, 2)]),
        "pow": (lambda a: a.pow(3) / (a * a + 1), [rand(3)]),
    }
    fn, arrays = fns[name]
    ins = tuple(kindle.tensor(a, requires_grad=True) for a in arrays)
    assert autograd.gradcheck(fn, ins)
    assert autograd.gradgradcheck(fn, ins)


def test_gradgradcheck_detects_wrong_double_backward():
    class BadSquare(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x.detach()  # first derivative right, second derivative lost

    x = kindle.tensor(rand(3), requires_grad=True)
    assert autograd.gradcheck(BadSquare.apply, (x,))
    with pytest.raises(autograd.GradcheckError):
        autograd.gradgradcheck(BadSquare.apply, (x,))


# ---------------------------------------------------------------------------------------------
# gradients of selected ops vs torch


def test_gather_scatter(torch):
    idx = np.array([[0, 2, 1], [1, 1, 0]])
    run_both(torch, lambda lib, a, i: a.gather(1, i), [rand(2, 4), idx])
    run_both(torch, lambda lib, a, s, i: a.scatter(1, i, s), [rand(2, 4), rand(2, 3, seed=1), np.array([[0, 2, 3], [1, 0, 2]])])
    run_both(torch, lambda lib, a, s, i: a.scatter_add(1, i, s), [rand(2, 4), rand(2, 3, seed=1), idx])
    run_both(torch, lambda lib, a, i: lib.take_along_dim(a, i, 0), [rand(3, 3), np.array([[2, 0, 1]])])
    run_both(torch, lambda lib, a, i: a.index_select(0, i), [rand(3, 2), np.array([2, 2, 0])])


def test_sort_topk_max_with_indices(torch):
    a = rand(3, 5)
    run_both(torch, lambda lib, x: x.sort(1, descending=True), [a])
    run_both(torch, lambda lib, x: x.topk(2, dim=1), [a])
    run_both(torch, lambda lib, x: x.topk(2, dim=0, largest=False), [a])
    run_both(torch, lambda lib, x: x.max(1), [a])
    run_both(torch, lambda lib, x: x.min(0, keepdim=True), [a])
    run_both(torch, lambda lib, x: x.max(), [a])
    run_both(torch, lambda lib, x: x.amax(1), [a])


def test_max_with_ties(torch):
    a = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 0.0]])
    run_both(torch, lambda lib, x: x.max(), [a])
    run_both(torch, lambda lib, x: x.amax(1), [a])
    run_both(torch, lambda lib, x: x.amin(0), [a])
    run_both(torch, lambda lib, x: lib.maximum(x, x.flip(1)), [a])
    # max(dim) sends the whole gradient to the returned index
    x = kindle.tensor(a, requires_grad=True)
    v, i = x.max(1)
    v.sum().backward()
    g = np_of(x.grad)
    assert g.sum() == 2.0 and g[0, int(i[0])] == 1.0 and g[1, int(i[1])] == 1.0


def test_cat_stack_split_unbind(torch):
    run_both(torch, lambda lib, a, b: lib.cat([a, b * 2, a], dim=1), [rand(2, 3), rand(2, 1, seed=1)])
    run_both(torch, lambda lib, a, b: lib.stack([a, b], dim=1), [rand(2, 3), rand(2, 3, seed=1)])
    run_both(torch, lambda lib, a: a.split(2, dim=1), [rand(3, 5)])
    run_both(torch, lambda lib, a: a.split([1, 4], dim=1)[1], [rand(3, 5)])
    run_both(torch, lambda lib, a: a.unbind(0)[1:], [rand(3, 2)])
    run_both(torch, lambda lib, a: a.chunk(3, 0), [rand(7, 2)])
    # only some outputs used: the unused ones contribute nothing
    run_both(torch, lambda lib, a: a.unbind(1)[0] * 3, [rand(2, 3)])


def test_matmul_family(torch):
    cases = [
        (lambda lib, a, b: a @ b, [rand(2, 3), rand(3, 4, seed=1)]),
        (lambda lib, a, b: a @ b, [rand(3), rand(3, 4, seed=1)]),
        (lambda lib, a, b: a @ b, [rand(2, 3), rand(3, seed=1)]),
        (lambda lib, a, b: a @ b, [rand(3), rand(3, seed=1)]),
        (lambda lib, a, b: a @ b, [rand(2, 2, 3), rand(3, 4, seed=1)]),
        (lambda lib, a, b: a @ b, [rand(3), rand(2, 3, 4, seed=1)]),
        (lambda lib, a, b: a @ b, [rand(2, 1, 2, 3), rand(3, 3, 2, seed=1)]),
        (lambda lib, a, b: lib.mm(a, b.t()), [rand(2, 3), rand(4, 3, seed=1)]),
        (lambda lib, a, b: lib.bmm(a, b), [rand(2, 2, 3), rand(2, 3, 2, seed=1)]),
        (lambda lib, a, b: lib.mv(a, b), [rand(2, 3), rand(3, seed=1)]),
        (lambda lib, a, b: lib.dot(a, b), [rand(3), rand(3, seed=1)]),
        (lambda lib, a, b: lib.outer(a, b), [rand(3), rand(2, seed=1)]),
        (lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=2.0), [rand(4), rand(2, 3, seed=1), rand(3, 4, seed=2)]),
        (lambda lib, c, a, b: lib.baddbmm(c, a, b), [rand(2, 2, 2), rand(2, 2, 3, seed=1), rand(2, 3, 2, seed=2)]),
        (lambda lib, a, b: lib.einsum("bij,jk->bik", a, b), [rand(2, 2, 3), rand(3, 2, seed=1)]),
    ]
    for fn, arrays in cases:
        run_both(torch, fn, arrays)


def test_where_clamp(torch):
    a = np.array([[-2.0, -1.0, -0.5], [0.0, 0.5, 1.0]])
    run_both(torch, lambda lib, x, y: lib.where(x > 0, x * 2, y), [a, rand(3, seed=1)])
    run_both(torch, lambda lib, x, y: lib.where(x > 0, x, y.exp()), [a, rand(2, 1, seed=1)])
    # boundary values: torch passes the gradient where min <= x <= max
    run_both(torch, lambda lib, x: x.clamp(-1.0, 0.5), [a])
    run_both(torch, lambda lib, x: x.clamp(min=0.0), [a])
    run_both(torch, lambda lib, x: x.clamp(max=-0.5), [a])


def test_softmax_log_softmax(torch):
    run_both(torch, lambda lib, x: x.softmax(1), [rand(3, 4)])
    run_both(torch, lambda lib, x: x.softmax(0), [rand(3, 4)])
    run_both(torch, lambda lib, x: x.log_softmax(-1), [rand(2, 3, 4)])
    run_both(torch, lambda lib, x: lib.log_softmax(x * 50, 1), [rand(3, 4)])
    run_both(torch, lambda lib, x: x.logsumexp(1), [rand(3, 4)])


def test_norm(torch):
    a = rand(3, 4)
    run_both(torch, lambda lib, x: x.norm(), [a])
    run_both(torch, lambda lib, x: x.norm(dim=1), [a])
    run_both(torch, lambda lib, x: x.norm(p=1, dim=0), [a])
    run_both(torch, lambda lib, x: x.norm(p=3, dim=1, keepdim=True), [a])
    run_both(torch, lambda lib, x: x.norm(p=float("inf"), dim=1), [a])
    # a zero row: torch defines the gradient of the 2-norm at 0 as 0
    z = a.copy()
    z[1] = 0.0
    run_both(torch, lambda lib, x: x.norm(dim=1), [z])


def test_var_std(torch):
    a = rand(3, 5)
    run_both(torch, lambda lib, x: x.var(), [a])
    run_both(torch, lambda lib, x: x.var(1), [a])
    run_both(torch, lambda lib, x: x.var(0, unbiased=False), [a])
    run_both(torch, lambda lib, x: x.var(1, keepdim=True, correction=0), [a])
    run_both(torch, lambda lib, x: x.std(), [a])
    run_both(torch, lambda lib, x: x.std(1), [a])
    run_both(torch, lambda lib, x: x.std(0, unbiased=False, keepdim=True), [a])
    run_both(torch, lambda lib, x: lib.var_mean(x, 1), [a])
    run_both(torch, lambda lib, x: lib.std_mean(x, 0), [a])


def test_reductions_and_elementwise(torch):
    run_both(torch, lambda lib, x: x.mean(1) + x.sum(0).sum() + x.prod(1), [rand(2, 3)])
    run_both(torch, lambda lib, x: x.cumsum(1) * x.cumprod(0), [rand(2, 3)])
    run_both(torch, lambda lib, x: x.abs().sqrt().log() + x.relu() + x.sigmoid(), [rand(2, 3)])
    run_both(torch, lambda lib, x, y: lib.lerp(x, y, 0.3) + x.pow(y.abs()), [rand(4, low=0.5), rand(4, seed=1)])


# ---------------------------------------------------------------------------------------------
# custom Functions


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


def test_function_forward_backward_and_saved_tensors():
    x = kindle.tensor([0.0, 1.0, -1.0], requires_grad=True)
    y = Exp.apply(x)
    assert y.requires_grad and not y.is_leaf
    assert "Exp" in y.grad_fn.name()
    assert_close(y, np.exp(np_of(x)))
    (y * 2).sum().backward()
    assert_close(x.grad, 2 * np.exp(np_of(x)))


def test_function_double_backward_through_saved_output(torch):
    out = {}
    for lib, base in ((kindle, Function), (torch, torch.autograd.Function)):
        class MyExp(base):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y

        x = leaf(lib, rand(3))
        (g,) = lib.autograd.grad(MyExp.apply(x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        out[lib] = (g, gg)
    assert_close(out[kindle][0], out[torch][0])
    assert_close(out[kindle][1], out[torch][1])


def test_function_needs_input_grad_and_non_tensor_args():
    seen = {}

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, factor, w, flag):
            ctx.factor = factor
            ctx.flag = flag
            ctx.save_for_backward(x, w)
            return x * w * factor

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            seen["needs"] = ctx.needs_input_grad
            gx = g * w * ctx.factor if ctx.needs_input_grad[0] else None
            gw = g * x * ctx.factor if ctx.needs_input_grad[2] else None
            return gx, None, gw, None

    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    w = kindle.tensor([3.0, 4.0])
    Scale.apply(x, 2.5, w, "flag").sum().backward()
    assert seen["needs"] == (True, False, False, False)
    assert_close(x.grad, np.array([7.5, 10.0]))
    w.requires_grad_()
    x.grad = None
    Scale.apply(x, 2.0, w, None).sum().backward()
    assert seen["needs"] == (True, False, True, False)
    assert_close(w.grad, np.array([2.0, 4.0]))


def test_function_multiple_outputs_and_mark_non_differentiable():
    class SortWithIdx(Function):
        @staticmethod
        def forward(ctx, x):
            v, i = x.sort()
            ctx.mark_non_differentiable(i)
            ctx.save_for_backward(i)
            ctx.n = x.shape[0]
            return v, i

        @staticmethod
        def backward(ctx, gv, gi):
            (i,) = ctx.saved_tensors
            return kindle.zeros(ctx.n, dtype=gv.dtype).scatter(0, i, gv)

    x = kindle.tensor([3.0, 1.0, 2.0], requires_grad=True)
    v, i = SortWithIdx.apply(x)
    assert v.requires_grad
    assert not i.requires_grad
    (v * kindle.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert_close(x.grad, np.array([3.0, 1.0, 2.0]))

    class TwoOut(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            z = x.clone()
            ctx.mark_non_differentiable(z)
            return y, z

        @staticmethod
        def backward(ctx, gy, gz):
            return gy * 2

    x.grad = None
    y, z = TwoOut.apply(x)
    assert y.requires_grad and not z.requires_grad
    y.sum().backward()
    assert_close(x.grad, np.full(3, 2.0))


def test_function_unused_output_grad_is_zeros():
    class Split2(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            assert ga is not None and gb is not None, "materialized grads expected"
            return ga * 2 + gb * 3

    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    a, b = Split2.apply(x)
    a.sum().backward()
    assert_close(x.grad, np.full(2, 2.0))


def test_function_set_materialize_grads():
    class TwoOut(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            assert ga is None, "set_materialize_grads(False): the unused output's gradient is None"
            return gb * 3

    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    a, b = TwoOut.apply(x)
    b.sum().backward()
    assert_close(x.grad, np.full(2, 3.0))


def test_function_save_for_backward_rejects_non_tensors():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(TypeError):
        F.apply(kindle.randn(2, requires_grad=True))


def test_function_reentrant_backward():
    # checkpoint-style: backward recomputes the forward with grad enabled and runs backward
    class Checkpoint(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin() * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with kindle.enable_grad():
                xd = x.detach().requires_grad_()
                y = xd.sin() * xd
            autograd.backward(y, g)
            return xd.grad

    xn = np.array([1.0, 2.0])
    x = kindle.tensor(xn, requires_grad=True)
    Checkpoint.apply(x).exp().sum().backward()
    y = np.sin(xn) * xn
    assert_close(x.grad, np.exp(y) * (np.cos(xn) * xn + np.sin(xn)))


def test_function_mark_dirty():
    class AddOneInplace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 1

    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    v = y._version
    z = AddOneInplace.apply(y)
    assert z is y or z.data_ptr() == y.data_ptr()
    assert y._version > v
    assert y.grad_fn.name().startswith("AddOneInplace")
    assert_close(y, np.array([4.0, 7.0]))
    (z * z).sum().backward()
    assert_close(x.grad, 3 * 2 * np.array([4.0, 7.0]))
    # on a leaf that requires grad it raises, as any in-place op does
    with pytest.raises(RuntimeError, match="leaf"):
        AddOneInplace.apply(kindle.tensor([1.0], requires_grad=True))


def test_function_mark_dirty_on_view(torch):
    out = {}
    for lib, base in ((kindle, Function), (torch, torch.autograd.Function)):
        class MulInplace(base):
            @staticmethod
            def forward(ctx, x):
                x.mul_(3)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 3

        x = leaf(lib, rand(3, 2))
        y = x * 1
        MulInplace.apply(y[1])
        (y * y).sum().backward()
        out[lib] = (y, x.grad)
    assert_close(out[kindle][0], out[torch][0])
    assert_close(out[kindle][1], out[torch][1])


def test_function_returning_input_unchanged():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    y = Identity.apply(x)
    assert not y.is_leaf
    y.sum().backward()
    assert_close(x.grad, np.full(2, 5.0))
    assert x.is_leaf and x.grad_fn is None


def test_function_wrong_number_of_gradients():
    class TooFew(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, g * 3

    x = kindle.tensor([1.0], requires_grad=True)
    y = kindle.tensor([2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="TooFew") as ei:
        TooFew.apply(x, y).sum().backward()
    assert "incorrect number of gradients" in str(ei.value)
    with pytest.raises(RuntimeError, match="TooMany") as ei:
        TooMany.apply(x).sum().backward()
    assert "incorrect number of gradients" in str(ei.value)


def test_function_wrong_gradient_shape_raises():
    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return kindle.ones(5)

    x = kindle.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="BadShape"):
        BadShape.apply(x).sum().backward()


def test_once_differentiable():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not kindle.is_grad_enabled()
            return g * 3 * x * x

    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    Cube.apply(x).sum().backward()
    assert_close(x.grad, np.array([3.0, 12.0]))
    # first-order gradient through create_graph works ...
    y = Cube.apply(x)
    (g,) = autograd.grad((y * y).sum(), x, create_graph=True)
    assert_close(g, 2 * np.array([1.0, 8.0]) * 3 * np.array([1.0, 4.0]))
    # ... differentiating it again raises
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()


def test_function_instance_call_and_missing_backward():
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    x = kindle.randn(2, requires_grad=True)
    y = NoBackward.apply(x)
    with pytest.raises(NotImplementedError):
        y.sum().backward()


def test_function_in_no_grad_records_nothing():
    x = kindle.randn(2, requires_grad=True)
    with kindle.no_grad():
        y = Exp.apply(x)
    assert not y.requires_grad and y.grad_fn is None


def test_function_vs_torch_in_larger_graph(torch):
    out = {}
    for lib, base in ((kindle, Function), (torch, torch.autograd.Function)):
        class MulAdd(base):
            @staticmethod
            def forward(ctx, a, b, alpha):
                ctx.save_for_backward(a, b)
                ctx.alpha = alpha
                return a * b + alpha, a - b

            @staticmethod
            def backward(ctx, g1, g2):
                a, b = ctx.saved_tensors
                return g1 * b + g2, g1 * a - g2, None

        a = leaf(lib, rand(2, 3))
        b = leaf(lib, rand(2, 3, seed=1))
        p, q = MulAdd.apply(a.tanh(), b, 0.5)
        ((p * q).sum() + p.exp().sum()).backward()
        out[lib] = (a.grad, b.grad)
    assert_close(out[kindle][0], out[torch][0])
    assert_close(out[kindle][1], out[torch][1])


# ---------------------------------------------------------------------------------------------
# gradcheck


def test_gradcheck_passes_on_correct_functions():
    a = kindle.tensor(rand(2, 3), requires_grad=True)
    b = kindle.tensor(rand(3, 2, seed=1), requires_grad=True)
    assert autograd.gradcheck(lambda x, y: (x @ y).tanh(), (a, b))
    assert autograd.gradcheck(lambda x: (x.softmax(1), x.sum()), (a,))
    assert autograd.gradcheck(Exp.apply, (kindle.tensor(rand(4), requires_grad=True),))
    # non-tensor and non-differentiable arguments
    assert autograd.gradcheck(lambda x, k: x.pow(k), (a, 3))
    assert autograd.gradcheck(lambda x, i: x.gather(1, i), (a, kindle.tensor([[0, 2], [1, 1]])))


class WrongExp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * 1.1  # wrong


def test_gradcheck_raises_on_wrong_backward():
    x = kindle.tensor(rand(3), requires_grad=True)
    with pytest.raises(autograd.GradcheckError) as ei:
        autograd.gradcheck(WrongExp.apply, (x,))
    assert isinstance(ei.value, RuntimeError)
    msg = str(ei.value)
    assert "Jacobian mismatch" in msg and "numerical" in msg and "analytical" in msg
    assert autograd.gradcheck(WrongExp.apply, (x,), raise_exception=False) is False


def test_gradcheck_requires_an_input_requiring_grad():
    with pytest.raises(ValueError):
        autograd.gradcheck(lambda x: x * 2, (kindle.randn(2, dtype=kindle.float64),))


# ---------------------------------------------------------------------------------------------
# anomaly detection


class NanBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


def _forward_that_makes_nan_grad(x):
    return NanBackward.apply(x)


def test_anomaly_detection_names_node_and_forward_stack():
    x = kindle.randn(3, requires_grad=True)
    with autograd.detect_anomaly():
        assert autograd.is_anomaly_enabled()
        y = _forward_that_makes_nan_grad(x)
        with pytest.raises(RuntimeError) as ei:
            (y * 3).sum().backward()
    assert not autograd.is_anomaly_enabled()
    msg = str(ei.value)
    assert "NanBackward" in msg
    assert "nan" in msg.lower()
    assert "_forward_that_makes_nan_grad" in msg, msg
    assert "test_anomaly_detection_names_node_and_forward_stack" in msg, msg


def test_anomaly_detection_off_does_not_raise():
    x = kindle.randn(3, requires_grad=True)
    _forward_that_makes_nan_grad(x).sum().backward()
    assert np.isnan(np_of(x.grad)).all()
    with autograd.detect_anomaly(check_nan=False):
        x.grad = None
        _forward_that_makes_nan_grad(x).sum().backward()
    assert np.isnan(np_of(x.grad)).all()


def test_anomaly_nan_in_builtin_op_backward():
    x = kindle.tensor([0.0, 1.0], requires_grad=True)
    with autograd.detect_anomaly():
        y = x.sqrt() * 0  # sqrt'(0) = inf, inf * 0 = nan at element 0
        with pytest.raises(RuntimeError, match="SqrtBackward0"):
            y.sum().backward()


def test_set_detect_anomaly_context():
    assert not autograd.is_anomaly_enabled()
    with autograd.set_detect_anomaly(True):
        assert autograd.is_anomaly_enabled()
        x = kindle.randn(2, requires_grad=True)
        y = NanBackward.apply(x)
        with pytest.raises(RuntimeError, match="NanBackward"):
            y.sum().backward()
        with autograd.set_detect_anomaly(False):
            assert not autograd.is_anomaly_enabled()
        assert autograd.is_anomaly_enabled()
    assert not autograd.is_anomaly_enabled()


# ---------------------------------------------------------------------------------------------
# errors


def test_error_backward_non_scalar_without_gradient():
    x = kindle.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        autograd.grad(x * 2, x)
    # a one-element tensor is accepted, as in torch (numel() == 1)
    y = kindle.randn(1, requires_grad=True)
    (y * 2).backward()
    assert_close(y.grad, np.array([2.0], dtype=np.float32))


def test_error_backward_twice():
    x = kindle.randn(3, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    z = (x.sin() * 2).sum()
    autograd.grad(z, x)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        autograd.grad(z, x)
    # custom Function saved tensors are freed too
    w = Exp.apply(x).sum()
    w.backward()
    with pytest.raises(RuntimeError, match="second time"):
        w.backward()


def test_retain_graph_allows_second_backward():
    x = kindle.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    for _ in range(3):
        y.backward(retain_graph=True)
    expected = 3 * (np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0])))
    assert_close(x.grad, expected, rtol=1e-6)


def test_error_grad_of_tensor_not_requiring_grad():
    x = kindle.randn(3)
    w = kindle.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        (x * 2).sum().backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad((w * x).sum(), x)
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad(x.sum(), w)


def test_error_wrong_shaped_gradient():
    x = kindle.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(kindle.ones(4))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        autograd.grad(x * 2, x, grad_outputs=kindle.ones(2, 3))


def test_error_hook_returning_wrong_shape():
    x = kindle.randn(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: kindle.ones(4))
    with pytest.raises(RuntimeError, match="hook"):
        y.sum().backward()
    x2 = kindle.randn(3, requires_grad=True)
    x2.register_hook(lambda g: kindle.ones(2, 3))
    with pytest.raises(RuntimeError, match="hook"):
        (x2 * 2).sum().backward()
    x3 = kindle.randn(3, requires_grad=True)
    x3.register_hook(lambda g: "not a tensor")
    with pytest.raises((RuntimeError, TypeError)):
        (x3 * 2).sum().backward()


def test_error_requires_grad_on_int_tensor():
    with pytest.raises(RuntimeError, match="floating point"):
        kindle.tensor([1, 2, 3], requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        kindle.tensor([1, 2, 3]).requires_grad_()
    with pytest.raises(RuntimeError, match="floating point"):
        kindle.zeros(3, dtype=kindle.int64, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        kindle.tensor([True]).requires_grad_()


def test_error_register_hook_without_requires_grad():
    with pytest.raises(RuntimeError, match="doesn't require"):
        kindle.randn(2).register_hook(lambda g: g)


def test_error_retain_grad_without_requires_grad():
    with pytest.raises(RuntimeError):
        kindle.randn(2).retain_grad()


# ---------------------------------------------------------------------------------------------
# memory and graph lifetime


def _train_step(x, target, params, lr=0.01):
    w1, b1, w2, b2 = params
    h = (x @ w1 + b1).relu()
    out = h @ w2 + b2
    loss = ((out - target) ** 2).mean()
    loss.backward()
    with kindle.no_grad():
        for p in params:
            p.sub_(p.grad * lr)
            p.grad = None
    return loss


def test_memory_flat_over_training_steps():
    kindle.manual_seed(0)
    params = [(kindle.randn(64, 128) * 0.1).requires_grad_(), kindle.zeros(128, requires_grad=True),
              (kindle.randn(128, 10) * 0.1).requires_grad_(), kindle.zeros(10, requires_grad=True)]
    x = kindle.randn(32, 64)
    target = kindle.randn(32, 10)
    first = None
    for step in range(1, 1001):
        loss = _train_step(x, target, params)
        if step == 1:
            first = loss.item()
        if step == 200:
            gc.collect()
            rss200 = rss_bytes()
    gc.collect()
    rss1000 = rss_bytes()
    assert loss.item() < first, "training must make progress"
    growth = rss1000 - rss200
    assert growth < 5 * 2 ** 20, f"resident memory grew {growth / 2 ** 20:.1f} MB between steps 200 and 1000"


def test_memory_flat_with_hooks_capturing_tensors():
    def step():
        x = kindle.randn(64, 64, requires_grad=True)
        h = x * 3
        y = h.sin()
        y.register_hook(lambda g: g * x)
        y.register_hook(lambda g: g + h)
        y.retain_grad()
        (y * y).sum().backward()
        return x.grad

    for _ in range(200):
        step()
    gc.collect()
    before = rss_bytes()
    for _ in range(1000):
        step()
    gc.collect()
    growth = rss_bytes() - before
    assert growth < 5 * 2 ** 20, f"resident memory grew {growth / 2 ** 20:.1f} MB over 1000 hooked steps"


def test_memory_flat_with_leaf_hook_capturing_its_leaf():
    # e.g. weight decay as a hook: p.register_hook(lambda g: g + wd * p). The cycle
    # p -> hook -> p runs through the library; torch's garbage collector breaks it.
    def step():
        p = kindle.randn(64, 64, requires_grad=True)
        p.register_hook(lambda g: g + 0.1 * p.detach())
        (p * 2).sum().backward()

    # Each step's cycle waits for the cyclic collector, so the heap first grows to hold the
    # garbage between collections: warm up past that before measuring.
    for _ in range(500):
        step()
    # The resident size also moves by a few MB as malloc's arenas (one per OpenMP thread) grow and
    # trim; a leak grows it in every window, so the smallest growth of three windows is measured.
    growths = []
    for _ in range(3):
        gc.collect()
        before = rss_bytes()
        for _ in range(500):
            step()
        gc.collect()
        growths.append(rss_bytes() - before)
    assert min(growths) < 5 * 2 ** 20, f"resident memory grew {[round(g / 2 ** 20, 1) for g in growths]} MB per 500 steps"


def test_memory_flat_with_create_graph():
    w = kindle.randn(32, 32, requires_grad=True)

    def step():
        x = kindle.randn(16, 32, requires_grad=True)
        out = (x @ w).tanh()
        (gx,) = autograd.grad(out.sum(), x, create_graph=True)
        (gx.pow(2).sum()).backward()
        w.grad = None

    for _ in range(100):
        step()
    gc.collect()
    before = rss_bytes()
    for _ in range(500):
        step()
    gc.collect()
    growth = rss_bytes() - before
    assert growth < 5 * 2 ** 20, f"resident memory grew {growth / 2 ** 20:.1f} MB over 500 double-backward steps"


class _Sentinel:
    pass


def test_grad_fn_is_weak_referenceable():
    x = kindle.randn(3, requires_grad=True)
    y = x * 2
    fn = y.grad_fn
    r = weakref.ref(fn)
    assert r() is fn
    assert y.grad_fn is fn
    acc = y.grad_fn.next_functions[0][0]  # nodes of any kind
    assert weakref.ref(acc)() is acc
    p = weakref.proxy(fn)
    assert p.name() == "MulBackward0"


def test_graph_freed_after_backward_and_del():
    x = kindle.randn(3, requires_grad=True)
    h = x.exp()
    y = (h * 2).sum()
    sentinels = []
    for node in (h.grad_fn, y.grad_fn, y.grad_fn.next_functions[0][0]):
        s = _Sentinel()
        node.register_hook(lambda gi, go, s=s: None)
        sentinels.append(weakref.ref(s))
        del s
    node = None
    gc.collect()
    assert all(r() is not None for r in sentinels), "nodes died while the graph is referenced"
    y.backward()
    del y, h
    gc.collect()
    alive = [i for i, r in enumerate(sentinels) if r() is not None]
    assert not alive, f"graph nodes {alive} still alive after backward and del"


def test_graph_freed_without_backward():
    x = kindle.randn(3, requires_grad=True)
    y = (x.exp() * x).sin()
    s = _Sentinel()
    y.grad_fn.register_hook(lambda gi, go, s=s: None)
    r = weakref.ref(s)
    del s
    del y
    gc.collect()
    assert r() is None


def test_custom_function_ctx_freed():
    x = kindle.randn(3, requires_grad=True)
    holder = {}

    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            s = _Sentinel()
            ctx.sentinel = s
            holder["ref"] = weakref.ref(s)
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = Keep.apply(x)
    gc.collect()
    assert holder["ref"]() is not None
    y.sum().backward()
    del y
    gc.collect()
    assert holder["ref"]() is None, "autograd.Function ctx (and its node) leaked"


def test_saved_output_does_not_keep_graph_alive():
    # exp saves its output: no reference cycle output -> node -> output may keep it alive
    x = kindle.randn(3, requires_grad=True)
    y = x.exp()
    s = _Sentinel()
    y.grad_fn.register_hook(lambda gi, go, s=s: None)
    r = weakref.ref(s)
    del s, y
    gc.collect()
    assert r() is None


def test_leaf_and_accumulator_freed():
    x = kindle.randn(3, requires_grad=True)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    s = _Sentinel()
    acc.register_hook(lambda gi, go, s=s: None)
    r = weakref.ref(s)
    del s, acc
    y.sum().backward()
    del x, y
    gc.collect()
    assert r() is None, "AccumulateGrad of a dead leaf is still alive"


# ---------------------------------------------------------------------------------------------
# threads


def _thread_work(seed):
    rng = np.random.default_rng(seed)
    w = kindle.tensor(rng.standard_normal((16, 8)), requires_grad=True)
    x = kindle.tensor(rng.standard_normal((4, 16)), requires_grad=True)
    out = (x @ w).tanh()
    loss = (out * out).sum() + out.softmax(1).log().sum()
    loss.backward()
    return np_of(w.grad).copy(), np_of(x.grad).copy()


def test_threads_independent_graphs():
    expected = {s: _thread_work(s) for s in (1, 2)}
    errors = []
    barrier = threading.Barrier(2)

    def run(seed):
        try:
            barrier.wait()
            for _ in range(50):
                gw, gx = _thread_work(seed)
                np.testing.assert_array_equal(gw, expected[seed][0])
                np.testing.assert_array_equal(gx, expected[seed][1])
        except Exception as e:  # noqa: BLE001
            errors.append(f"seed {seed}: {e!r}")

    ts = [threading.Thread(target=run, args=(s,)) for s in (1, 2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[:2]


def test_threads_shared_leaf_accumulates():
    # backward from two threads into the same leaf: every contribution lands
    w = kindle.zeros(8, requires_grad=True)
    n = 50

    def run():
        for _ in range(n):
            (w * 1.0 + 0).sum().backward()

    ts = [threading.Thread(target=run) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert_close(w.grad, np.full(8, 2.0 * n, dtype=np.float32))


def test_pow_with_a_python_number_exponent_keeps_float64_digits():
    """The exponent 0.4 is a wrapped float64 number: d/dx x^0.4 = 0.4 x^-0.6 to float64 precision
    (computing `exponent - 1` in the default dtype lost eight digits)."""
    v = np.array([1.3, 2.7, 0.4])
    for exponent in (0.4, -1.7, 1 / 3):
        x = kindle.tensor(v, requires_grad=True)
        (x ** exponent).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), exponent * v ** (exponent - 1), rtol=1e-15, atol=0)


def test_grad_with_batched_grad_outputs_matches_torch():
    """is_grads_batched: one vector-Jacobian product per row of the grad_outputs (a Jacobian from
    the identity), unused inputs None, the shape checked."""
    torch = pytest.importorskip("torch")
    xv = np.random.default_rng(5).standard_normal(4)
    got = {}
    for lib in (kindle, torch):
        x = lib.tensor(xv, requires_grad=True)
        w = lib.tensor(xv[::-1].copy(), requires_grad=True)
        unused = lib.tensor(xv, requires_grad=True)
        y = x.sin() * w + x.pow(2).sum()
        basis = lib.eye(4, dtype=lib.float64)
        jx, jw, ju = lib.autograd.grad(y, (x, w, unused), grad_outputs=basis, is_grads_batched=True,
                                       allow_unused=True, retain_graph=True)
        assert ju is None
        (h,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        (hh,) = lib.autograd.grad(h, x, grad_outputs=basis, is_grads_batched=True)  # a Hessian, row by row
        got[lib] = (jx.detach().numpy(), jw.detach().numpy(), hh.detach().numpy())
        with pytest.raises(RuntimeError, match="shape"):
            lib.autograd.grad(y, x, grad_outputs=lib.ones(4, dtype=lib.float64), is_grads_batched=True)
    for k, t in zip(got[kindle], got[torch]):
        np.testing.assert_allclose(k, t, rtol=1e-12, atol=1e-12)
