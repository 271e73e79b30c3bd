"""torch.autograd.graph from Kindle: saved-tensor hooks (saved_tensors_hooks, save_on_cpu,
disable_saved_tensors_hooks, grad_fn._saved_* / _raw_saved_*), gradient edges and multi-grad
hooks. Each behaviour is checked against torch where it is importable."""
import gc
import weakref

import pytest

import kindle
from kindle.autograd.graph import (GradientEdge, disable_saved_tensors_hooks, get_gradient_edge,
                                   register_multi_grad_hook, save_on_cpu, saved_tensors_hooks)

try:
    import torch
except ImportError:  # the torch comparisons skip themselves
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not importable")
LIBS = ["kindle"] + (["torch"] if torch is not None else [])


def lib(name):
    return kindle if name == "kindle" else torch


# ---- saved_tensors_hooks ----

@pytest.mark.parametrize("name", LIBS)
def test_pack_sees_every_saved_tensor_and_unpack_feeds_backward(name):
    L = lib(name)
    a = L.tensor([0.5, 1.0, 2.0], requires_grad=True)
    b = L.tensor([3.0, -1.0, 0.25], requires_grad=True)
    packed, unpacked = [], []

    def pack(x):
        packed.append(x.detach().clone())
        return len(packed) - 1

    def unpack(i):
        unpacked.append(i)
        return packed[i]

    with saved_tensors_hooks(pack, unpack) if name == "kindle" else L.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (a * b).exp().sum()
    assert len(packed) == 3  # a and b for mul, the result for exp
    y.backward()
    assert sorted(unpacked) == [0, 1, 2]
    expected = (a * b).exp().detach()
    assert L.allclose(a.grad, expected * b.detach())
    assert L.allclose(b.grad, expected * a.detach())


def test_hooks_equal_torch_on_a_small_network():
    if torch is None:
        pytest.skip("torch not importable")
    import numpy as np
    rng = np.random.default_rng(0)
    x, w1, w2 = (rng.standard_normal(s).astype(np.float32) for s in [(4, 5), (5, 6), (6, 3)])
    grads = {}
    for name, L, hooks in [("kindle", kindle, saved_tensors_hooks), ("torch", torch,
                                                                     torch.autograd.graph.saved_tensors_hooks)]:
        ts = [L.tensor(v, requires_grad=True) for v in (x, w1, w2)]
        calls = [0, 0]

        def pack(t):
            calls[0] += 1
            return t * 2  # a different tensor: unpack must undo it

        def unpack(t):
            calls[1] += 1
            return t / 2

        with hooks(pack, unpack):
            out = (L.tanh(ts[0] @ ts[1]) @ ts[2]).softmax(-1).log().sum()
        out.backward()
        grads[name] = ([t.grad.numpy() for t in ts], calls)
    for gk, gt in zip(grads["kindle"][0], grads["torch"][0]):
        np.testing.assert_allclose(gk, gt, rtol=1e-5, atol=1e-6)
    assert grads["kindle"][1][0] == grads["kindle"][1][1] > 0


@pytest.mark.parametrize("name", LIBS)
def test_hooks_run_with_grad_mode_off_and_nest_innermost_first(name):
    L = lib(name)
    hooks = saved_tensors_hooks if name == "kindle" else L.autograd.graph.saved_tensors_hooks
    seen = []
    a = L.ones(3, requires_grad=True)

    def outer_pack(x):
        seen.append(("outer", L.is_grad_enabled()))
        return x

    def inner_pack(x):
        seen.append(("inner", L.is_grad_enabled()))
        return x

    with hooks(outer_pack, lambda x: x):
        with hooks(inner_pack, lambda x: x):
            y = a.sin()
        z = a.cos()
    (y.sum() + z.sum()).backward()
    assert seen == [("inner", False), ("outer", False)]


@pytest.mark.parametrize("name", LIBS)
def test_unpack_must_return_a_tensor(name):
    L = lib(name)
    hooks = saved_tensors_hooks if name == "kindle" else L.autograd.graph.saved_tensors_hooks
    a = L.ones(3, requires_grad=True)
    with hooks(lambda x: 1, lambda x: 5):
        y = a.exp()
    with pytest.raises(TypeError, match="unpack_hook"):
        y.sum().backward()


@pytest.mark.parametrize("name", LIBS)
def test_pack_must_not_modify_its_input(name):
    L = lib(name)
    hooks = saved_tensors_hooks if name == "kindle" else L.autograd.graph.saved_tensors_hooks
    a = L.ones(3, requires_grad=True).clone()
    with hooks(lambda x: x.mul_(2), lambda x: x):
        with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
            a.exp()


@pytest.mark.parametrize("name", LIBS)
def test_double_backward_through_hooked_saved_inputs(name):
    L = lib(name)
    hooks = saved_tensors_hooks if name == "kindle" else L.autograd.graph.saved_tensors_hooks
    a = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with hooks(lambda x: x.detach().clone(), lambda x: x):
        y = (a * a * a).sum()
    (g,) = L.autograd.grad(y, a, create_graph=True)
    assert L.allclose(g.detach(), 3 * a.detach() ** 2)
    g.sum().backward()
    assert L.allclose(a.grad, 6 * a.detach())


@pytest.mark.parametrize("name", LIBS)
def test_custom_function_saved_tensors_go_through_the_hooks(name):
    L = lib(name)
    hooks = saved_tensors_hooks if name == "kindle" else L.autograd.graph.saved_tensors_hooks
    calls = []

    class Square(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    a = L.tensor([1.0, -2.0], requires_grad=True)
    with hooks(lambda x: calls.append("pack") or x, lambda x: calls.append("unpack") or x):
        y = Square.apply(a)
    y.sum().backward()
    assert calls == ["pack", "unpack"]
    assert L.allclose(a.grad, 2 * a.detach())


def test_identity_hooks_still_catch_an_in_place_change():
    a = kindle.ones(3, requires_grad=True).clone()
    with saved_tensors_hooks(lambda x: x, lambda x: x):
        y = a.sin()
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_a_copying_pack_frees_the_original_and_gives_the_value_at_save_time():
    a = kindle.tensor([0.1, 0.2, 0.3], requires_grad=True)
    store = []

    def pack(x):
        store.append(x.detach().clone())
        return len(store) - 1

    with saved_tensors_hooks(pack, lambda i: store[i]):
        h = a * 3
        y = h.sin()
    del h
    gc.collect()
    y.sum().backward()
    assert kindle.allclose(a.grad, 3 * kindle.cos(3 * a.detach()))


def test_hooks_are_per_thread_and_balanced():
    import threading
    calls = []
    a = kindle.ones(2, requires_grad=True)
    with saved_tensors_hooks(lambda x: calls.append(1) or x, lambda x: x):
        t = threading.Thread(target=lambda: a.exp())
        t.start()
        t.join()
    assert calls == []
    with pytest.raises(RuntimeError):
        kindle._C._pop_saved_tensors_hooks()


@pytest.mark.parametrize("name", LIBS)
def test_disable_saved_tensors_hooks(name):
    L = lib(name)
    hooks = saved_tensors_hooks if name == "kindle" else L.autograd.graph.saved_tensors_hooks
    disable = disable_saved_tensors_hooks if name == "kindle" else L.autograd.graph.disable_saved_tensors_hooks
    with disable("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with hooks(lambda x: x, lambda x: x):
                pass
        with disable("nested"):
            pass
        with pytest.raises(RuntimeError, match="no hooks here"):
            with hooks(lambda x: x, lambda x: x):
                pass
    with hooks(lambda x: x, lambda x: x):  # enabled again
        with pytest.raises(RuntimeError, match="installed"):
            with disable("installed"):
                pass


@pytest.mark.parametrize("name", LIBS)
def test_save_on_cpu_gives_the_same_gradients(name):
    L = lib(name)
    soc = save_on_cpu if name == "kindle" else L.autograd.graph.save_on_cpu
    a = L.linspace(-1, 1, 6, requires_grad=True)
    with soc():
        y = (a.sigmoid() * a).sum()
    y.backward()
    s = a.detach().sigmoid()
    assert L.allclose(a.grad, s + a.detach() * s * (1 - s))


@pytest.mark.parametrize("name", LIBS)
def test_saved_attributes_of_a_node(name):
    L = lib(name)
    a = L.tensor([1.0, 2.0], requires_grad=True)
    b = L.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    assert L.equal(y.grad_fn._saved_self, a) and L.equal(y.grad_fn._saved_other, b)
    z = a.exp()
    r = z.grad_fn._saved_result
    assert L.equal(r, z) and r.grad_fn is not None
    with pytest.raises(AttributeError):
        z.grad_fn._saved_nothing
    c = L.cat([a, b])
    assert c.grad_fn is not None
    z.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.grad_fn._saved_result


@pytest.mark.parametrize("name", LIBS)
def test_raw_saved_register_hooks(name):
    L = lib(name)
    a = L.tensor([1.0, 2.0], requires_grad=True)
    y = a.pow(3)
    calls = []
    y.grad_fn._raw_saved_self.register_hooks(lambda x: calls.append("p") or x * 10,
                                             lambda x: calls.append("u") or x / 10)
    assert calls == ["p"]
    with pytest.raises(RuntimeError, match="already been set"):
        y.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: x)
    with pytest.raises(TypeError):
        y.grad_fn._raw_saved_self.register_hooks(1, lambda x: x)
    y.sum().backward()
    assert calls == ["p", "u"]
    assert L.allclose(a.grad, 3 * a.detach() ** 2)


@pytest.mark.parametrize("name", LIBS)
def test_accumulate_grad_variable(name):
    L = lib(name)
    a = L.ones(2, requires_grad=True)
    acc = (a * 2).grad_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad"
    assert acc.variable is a or L.equal(acc.variable, a)


# ---- gradient edges ----

@pytest.mark.parametrize("name", LIBS)
def test_grad_with_respect_to_a_gradient_edge(name):
    L = lib(name)
    G = L.autograd.graph
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 2
    edge = G.get_gradient_edge(h)
    leaf_edge = G.get_gradient_edge(x)
    assert isinstance(edge, G.GradientEdge) and edge.output_nr == 0
    out = (h ** 2).sum()
    gh, gx = L.autograd.grad(out, (edge, leaf_edge), retain_graph=True)
    assert L.allclose(gh, 2 * h.detach()) and L.allclose(gx, 8 * x.detach())
    (single,) = L.autograd.grad(out, edge, retain_graph=True)
    assert L.allclose(single, gh)
    # an edge as the output: the gradient flowing into h's node
    (gx2,) = L.autograd.grad(edge, x, grad_outputs=L.ones(3))
    assert L.allclose(gx2, L.full((3,), 2.0))
    with pytest.raises(RuntimeError, match="does not require"):
        G.get_gradient_edge(L.ones(2))


def test_kindle_gradient_edge_type():
    x = kindle.ones(2, requires_grad=True)
    e = get_gradient_edge(x * 1)
    assert isinstance(e, GradientEdge) and type(e.node).__name__ == "MulBackward0"


# ---- multi-grad hooks ----

@pytest.mark.parametrize("name", LIBS)
def test_multi_grad_hook_all(name):
    L = lib(name)
    a = L.rand(2, 3, requires_grad=True)
    b = L.rand(2, 3, requires_grad=True)
    c = a * b
    d = a * b
    seen = []
    reg = register_multi_grad_hook if name == "kindle" else L.autograd.graph.register_multi_grad_hook
    handle = reg((a, b, c, d), lambda grads: seen.append([g is not None for g in grads]))
    c.sum().backward(retain_graph=True)
    assert seen == [[True, True, True, False]]
    c.sum().backward(inputs=(a,), retain_graph=True)
    assert seen[-1] == [True, False, True, False]
    if name == "kindle":  # torch refuses leaves here under autograd.grad ("not supported")
        L.autograd.grad(d.sum(), (b,), retain_graph=True)
        assert seen[-1] == [False, True, False, True]
    handle.remove()
    c.sum().backward(retain_graph=True)
    assert len(seen) == (3 if name == "kindle" else 2)


@pytest.mark.parametrize("name", LIBS)
def test_multi_grad_hook_any(name):
    L = lib(name)
    a = L.ones(2, requires_grad=True)
    b = L.ones(2, requires_grad=True)
    seen = []
    reg = register_multi_grad_hook if name == "kindle" else L.autograd.graph.register_multi_grad_hook
    reg((a, b), lambda g: seen.append(g.clone()), mode="any")
    (a * 2 + b * 3).sum().backward()
    assert len(seen) == 1
    (a * 2 + b * 3).sum().backward()
    assert len(seen) == 2
    with pytest.raises(ValueError):
        reg((a, b), lambda g: None, mode="some")


@pytest.mark.parametrize("name", LIBS)
def test_hooks_of_autograd_grad_inputs_run_once(name):
    L = lib(name)
    x = L.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    calls = []
    h.register_hook(lambda g: calls.append("h") or g * 10)
    x.register_hook(lambda g: calls.append("x") or g + 1)
    out = (h * h).sum()
    (gh,) = L.autograd.grad(out, h, retain_graph=True)
    assert L.allclose(gh, 10 * 2 * h.detach()) and calls == ["h"]
    (gx,) = L.autograd.grad(out, x, retain_graph=True)
    assert L.allclose(gx, 3 * 10 * 2 * h.detach() + 1) and calls == ["h", "h", "x"]
    _, gx = L.autograd.grad(out, (h, x))
    assert L.allclose(gx, 3 * 10 * 2 * h.detach() + 1) and calls == ["h", "h", "x", "h", "x"]


# ---- the non-reentrant checkpoint, built on saved-tensor hooks ----

def _mlp(L, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    ws = [L.tensor(rng.standard_normal((6, 6)).astype(np.float32) / 3, requires_grad=True) for _ in range(3)]
    x = L.tensor(rng.standard_normal((5, 6)).astype(np.float32), requires_grad=True)
    return x, ws


def _segment(L, ws):
    def f(h, scale=1.0):
        for w in ws:
            h = L.tanh(h @ w) * scale
        return h
    return f


@pytest.mark.parametrize("name", LIBS)
def test_non_reentrant_checkpoint_with_autograd_grad_and_double_backward(name):
    L = lib(name)
    ckpt = kindle.utils.checkpoint.checkpoint if name == "kindle" else torch.utils.checkpoint.checkpoint
    x, ws = _mlp(L)
    out = ckpt(_segment(L, ws), x, scale=0.5, use_reentrant=False).pow(2).sum()
    ref = _segment(L, ws)(x, scale=0.5).pow(2).sum()
    g = L.autograd.grad(out, [x] + ws, create_graph=True)
    r = L.autograd.grad(ref, [x] + ws, create_graph=True)
    for a, b in zip(g, r):
        assert L.allclose(a, b, atol=1e-6)
    assert all(w.grad is None for w in ws)  # autograd.grad leaves .grad alone
    (gg,) = L.autograd.grad(sum(t.sum() for t in g), x)
    (rr,) = L.autograd.grad(sum(t.sum() for t in r), x)
    assert L.allclose(gg, rr, atol=1e-5)


def test_non_reentrant_checkpoint_equals_torch_and_recomputes_once_per_pass():
    if torch is None:
        pytest.skip("torch not importable")
    results = {}
    for name, L, ckpt in [("kindle", kindle, kindle.utils.checkpoint.checkpoint),
                          ("torch", torch, torch.utils.checkpoint.checkpoint)]:
        x, ws = _mlp(L, seed=1)
        runs = []

        def f(h, ws=ws, L=L, runs=runs):
            runs.append(1)
            return _segment(L, ws)(h)

        y = ckpt(f, x, use_reentrant=False)
        (y * y).sum().backward(retain_graph=True)
        assert len(runs) == 2  # the forward and one recomputation
        (y * y).sum().backward()
        assert len(runs) == 3  # a second pass recomputes again
        results[name] = [t.grad.numpy() for t in [x] + ws]
    for a, b in zip(results["kindle"], results["torch"]):
        import numpy as np
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_non_reentrant_checkpoint_keeps_only_holders():
    # The segment's intermediate results are freed after the forward: live memory grows by the
    # output alone, where without checkpointing exp's result (saved by exp and cos) stays too.
    def f(h):
        return h.sin().exp().cos()

    def live_after(run):
        x = kindle.randn(512, 512, requires_grad=True)  # 1 MiB per tensor: the allocator counts it
        before = kindle.cpu.memory_stats()["allocated_bytes"]
        y = run(x)
        grown = kindle.cpu.memory_stats()["allocated_bytes"] - before
        y.sum().backward()
        assert kindle.allclose(x.grad, -kindle.sin(x.sin().exp()) * x.sin().exp() * x.cos(), atol=1e-5)
        return grown

    mib = 512 * 512 * 4
    plain = live_after(f)
    ckpt = live_after(lambda x: kindle.utils.checkpoint.checkpoint(f, x, use_reentrant=False))
    assert plain >= 2 * mib and ckpt <= 1.5 * mib, (plain, ckpt)


def test_hooks_left_installed_at_thread_and_process_exit_are_harmless():
    import subprocess
    import sys
    code = ("import threading, kindle\n"
            "from kindle.autograd.graph import saved_tensors_hooks\n"
            "saved_tensors_hooks(lambda x: x, lambda x: x).__enter__()\n"
            "a = kindle.ones(2, requires_grad=True)\n"
            "y = a.exp()\n"
            "def f():\n"
            "    saved_tensors_hooks(lambda x: x, lambda x: x).__enter__()\n"
            "    (a * a).sum()\n"
            "t = threading.Thread(target=f); t.start(); t.join()\n"
            "print('done')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "done", r.stderr
