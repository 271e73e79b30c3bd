"""kindle.autograd.functional and kindle.func against torch: values, shapes and structures of
the results, create_graph and strict mode, error messages, and the classic programs (per-sample
gradients, Hessian-vector products, a jvp, model ensembling)."""
import warnings

import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)
X3 = rng.standard_normal(3)
Y23 = rng.standard_normal((2, 3))


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [z for e in r for z in _flat(e)]
    if isinstance(r, dict):
        return [z for k in sorted(r) for z in _flat(r[k])]
    return [r]


def _same(a, b, atol=1e-10):
    fa, fb = _flat(a), _flat(b)
    assert len(fa) == len(fb)
    for p, q in zip(fa, fb):
        assert tuple(p.shape) == tuple(q.shape)
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), atol=atol)


def _both(fn):
    return fn(kindle, kindle.autograd.functional), fn(torch, torch.autograd.functional)


def two_outputs(lib):
    return lambda a, b: ((a.exp() * b).sum(0), (a * a).sum() + b.sin().sum())


def cubic(lib):
    return lambda a: (a ** 3).sum() + a[0] * a[1]


@pytest.mark.parametrize("case", [
    lambda L, AF: AF.vjp(two_outputs(L), (L.tensor(X3), L.tensor(Y23)), (L.tensor(X3), L.tensor(2.0, dtype=L.float64))),
    lambda L, AF: AF.vjp(lambda a: a.sin().sum(), L.tensor(X3)),
    lambda L, AF: AF.jvp(two_outputs(L), (L.tensor(X3), L.tensor(Y23)), (L.tensor(X3), L.tensor(Y23))),
    lambda L, AF: AF.jvp(lambda a: a * 3, L.tensor([2.0], dtype=L.float64)),
    lambda L, AF: AF.jacobian(two_outputs(L), (L.tensor(X3), L.tensor(Y23))),
    lambda L, AF: AF.jacobian(lambda a: a.exp() * 2, L.tensor(X3)),
    lambda L, AF: AF.jacobian(lambda a: a.exp() * 2, L.tensor(X3), vectorize=True),
    lambda L, AF: AF.jacobian(lambda a: a.exp(), L.tensor(X3), vectorize=True, strategy="forward-mode"),
    lambda L, AF: AF.jacobian(lambda a, b: a * 0 + 1, (L.tensor(X3), L.tensor(X3))),
    lambda L, AF: AF.hessian(cubic(L), L.tensor(X3)),
    lambda L, AF: AF.hessian(lambda a, b: (a * b).sum() * a.sum(), (L.tensor(X3), L.tensor(Y23[0]))),
    lambda L, AF: AF.vhp(cubic(L), L.tensor(X3), L.tensor(Y23[0])),
    lambda L, AF: AF.hvp(cubic(L), L.tensor(X3), L.tensor(Y23[0])),
    lambda L, AF: AF.vjp(lambda a: a.sin(), L.tensor(X3, requires_grad=True), L.tensor(Y23[0]), create_graph=True),
])
def test_autograd_functional_matches_torch(case):
    _same(*_both(case))


def test_create_graph_allows_higher_derivatives():
    for lib in (kindle, torch):
        x = lib.tensor(X3, requires_grad=True)
        _, g = lib.autograd.functional.vjp(lambda a: (a ** 3).sum(), x, create_graph=True)
        assert g.requires_grad
        g.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 6 * X3)
        _, g = lib.autograd.functional.vjp(lambda a: (a ** 3).sum(), lib.tensor(X3))
        assert not g.requires_grad


@pytest.mark.parametrize("case", [
    lambda L, AF: AF.vjp(lambda a: a * 2, L.tensor(X3)),
    lambda L, AF: AF.jvp(lambda a: a, L.tensor(X3)),
    lambda L, AF: AF.jacobian(lambda a: L.ones(2, dtype=L.float64), L.tensor(X3), strict=True),
    lambda L, AF: AF.vjp(lambda a, b: a.sum(), (L.tensor(X3), L.tensor(X3)), strict=True),
    lambda L, AF: AF.hessian(lambda a: a, L.tensor(X3)),
    lambda L, AF: AF.hessian(lambda a: (a * 2).sum(), L.tensor(X3), strict=True),
    lambda L, AF: AF.vhp(lambda a: a, L.tensor(X3), L.tensor(X3)),
    lambda L, AF: AF.jvp(lambda a: a, L.tensor(X3), L.tensor(Y23)),
    lambda L, AF: AF.jacobian(lambda a: a, L.tensor(X3), strategy="forward-mode"),
    lambda L, AF: AF.jacobian(lambda a: a, L.tensor(X3), strategy="sideways"),
    lambda L, AF: AF.jacobian(lambda a: a, L.tensor(X3), strict=True, vectorize=True),
    lambda L, AF: AF.vjp(lambda a: a, [1, 2]),
])
def test_autograd_functional_errors_match_torch(case):
    outcomes = []
    for lib, AF in ((kindle, kindle.autograd.functional), (torch, torch.autograd.functional)):
        try:
            case(lib, AF)
            outcomes.append(None)
        except Exception as e:  # noqa: BLE001
            # (torch's "isonly" typo aside: spaces are not compared)
            outcomes.append((type(e), str(e).replace("torch.Size", "Size").replace("kindle.Size", "Size").replace(" ", "")))
    assert outcomes[0] is not None and outcomes[0] == outcomes[1]


def _mlp(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(6, 5), lib.nn.Tanh(), lib.nn.Linear(5, 3))


def test_per_sample_gradients_match_torch_func():
    km, tm = _mlp(kindle), _mlp(torch)
    tm.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in km.state_dict().items()})
    x = rng.standard_normal((4, 6)).astype(np.float32)
    y = rng.integers(0, 3, 4)

    def per_sample(lib, m):
        params = {k: v.detach() for k, v in m.named_parameters()}

        def loss(p, xi, yi):
            out = lib.func.functional_call(m, p, (xi.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, yi.unsqueeze(0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, lib.tensor(x), lib.tensor(y))
    gk, gt = per_sample(kindle, km), per_sample(torch, tm)
    assert set(gk) == set(gt)
    for k in gk:
        assert tuple(gk[k].shape) == (4,) + tuple(km.state_dict()[k].shape)
        np.testing.assert_allclose(gk[k].numpy(), gt[k].numpy(), atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ops with a batching rule run once for the batch, silently
        kindle.vmap(lambda a: a * 2)(kindle.ones(3, 2))
    with pytest.warns(UserWarning, match="no batching rule for histc"):
        kindle.vmap(lambda a: kindle.histc(a, 4))(kindle.ones(3, 2))


@pytest.mark.parametrize("case", [
    lambda L: L.func.hessian(lambda x: (x.sin() * x.sum()).sum())(L.tensor(X3)),
    lambda L: L.func.grad(L.func.grad(lambda x: x ** 3))(L.tensor(2.0, dtype=L.float64)),
    lambda L: L.func.grad(lambda a, b: (a * b.exp()).sum(), argnums=(0, 1))(L.tensor(X3), L.tensor(X3)),
    lambda L: L.func.grad_and_value(lambda d: (d["a"] * d["b"]).sum())({"a": L.tensor(X3), "b": L.tensor(X3)}),
    lambda L: L.func.grad(lambda x: ((x ** 2).sum(), x.mean()), has_aux=True)(L.tensor(X3)),
    lambda L: L.func.jvp(lambda x: x.exp() * 2, (L.tensor(X3),), (L.tensor(X3),)),
    lambda L: L.func.vjp(lambda a, b: a * b.sin(), L.tensor(X3), L.tensor(X3))[1](L.ones(3, dtype=L.float64)),
    lambda L: L.func.jacrev(lambda a, b: (a * b, a.sum()), argnums=(0, 1))(L.tensor(X3), L.tensor(X3)),
    lambda L: L.func.jacfwd(lambda a: a.sin() * a[0])(L.tensor(X3)),
    lambda L: L.func.jacrev(L.func.jacrev(lambda a: (a ** 3).sum()))(L.tensor(X3)),
    # forward mode: nested (the inner jvp by double backward), mixed with reverse, with aux,
    # several arguments and a pytree, linearize
    lambda L: L.func.jacfwd(L.func.jacfwd(lambda a: (a ** 3).sum() * a))(L.tensor(X3)),
    lambda L: L.func.jacrev(L.func.jacfwd(lambda a: a.tanh() * a.sum()))(L.tensor(X3)),
    lambda L: L.func.jacfwd(lambda a, b: (a @ b, b.sum(0)), argnums=(0, 1))(L.tensor(X3), L.tensor(Y23).t()),
    lambda L: L.func.jvp(lambda a, b: ((a * b).sum(), a.exp()), (L.tensor(X3), L.tensor(X3)),
                         (L.ones(3, dtype=L.float64), L.tensor(X3)), has_aux=True),
    lambda L: L.func.jvp(lambda d: d["w"].sin() * d["x"], ({"w": L.tensor(X3), "x": L.tensor(X3)},),
                         ({"w": L.ones(3, dtype=L.float64), "x": L.tensor(X3)},)),
    lambda L: L.func.linearize(lambda a: a.exp().cumsum(0), L.tensor(X3))[1](L.tensor(X3)),
])
def test_func_transforms_match_torch(case):
    _same(case(kindle), case(torch))


def test_func_errors():
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        kindle.func.grad(lambda x: x * 2)(kindle.ones(3))
    with pytest.raises(RuntimeError, match="only 1 positional inputs"):
        kindle.func.grad(lambda x: x.sum(), argnums=1)(kindle.ones(3))
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        kindle.func.vmap(lambda a, b: a + b)(kindle.ones(3), kindle.ones(4))
    g = kindle.func.grad(lambda x: (x ** 2).sum())(kindle.ones(3))
    assert not g.requires_grad  # the outermost transform returns plain tensors


def test_model_ensembling_with_stack_module_state():
    models = [_mlp(kindle) for _ in range(3)]
    for i, m in enumerate(models):
        with kindle.no_grad():
            for p in m.parameters():
                p.add_(0.1 * i)
    params, buffers = kindle.func.stack_module_state(models)
    assert params["0.weight"].shape == (3, 5, 6) and params["0.weight"].requires_grad
    base = _mlp(kindle)
    x = kindle.tensor(rng.standard_normal((4, 6)).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = kindle.func.vmap(lambda p, b, xx: kindle.func.functional_call(base, (p, b), (xx,)),
                               in_dims=(0, 0, None))(params, buffers, x)
    assert out.shape == (3, 4, 3)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), atol=1e-6)


def _small_net(lib):
    lib.manual_seed(3)
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 4)).double()


def _same_weights(km, tm):
    km.load_state_dict({k: kindle.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def test_neural_ode_jvp_and_network_hvp_match_torch():
    """Two classic forward-mode programs: the sensitivity of an Euler-integrated neural ODE's final
    state to its initial state (jvp through 20 steps), and a Hessian-vector product of a small
    network's loss with respect to its parameters (jvp of grad: forward over reverse)."""
    tm, km = _small_net(torch), _small_net(kindle)
    _same_weights(km, tm)
    rng = np.random.default_rng(5)
    x0, v = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))

    def ode(lib, m):
        def flow(x):
            for _ in range(20):
                x = x + 0.05 * m(x)
            return x
        return lib.func.jvp(flow, (lib.tensor(x0),), (lib.tensor(v),))

    (kx, kt), (tx, tt) = ode(kindle, km), ode(torch, tm)
    np.testing.assert_allclose(kx.numpy(), tx.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(kt.numpy(), tt.detach().numpy(), rtol=1e-9, atol=1e-12)

    def hvp(lib, m):
        params = {k: p.detach() for k, p in m.named_parameters()}
        direction = {k: lib.tensor(np.random.default_rng(7).standard_normal(tuple(p.shape))) for k, p in params.items()}
        xb = lib.tensor(x0)

        def loss(p):
            return (lib.func.functional_call(m, p, (xb,)) ** 2).mean()
        return lib.func.jvp(lib.func.grad(loss), (params,), (direction,))[1]

    kh, th = hvp(kindle, km), hvp(torch, tm)
    for k in th:
        np.testing.assert_allclose(kh[k].numpy(), th[k].detach().numpy(), rtol=1e-9, atol=1e-12)


def test_jacrev_batches_its_rows_and_falls_back_only_where_vmap_cannot():
    # Rows come from one vmapped pass (no per-output warning); chunk_size gives the same result;
    # a function with data-dependent control flow still works, one backward per output, warned.
    w = rng.standard_normal((7, 5))

    def f(lib):
        W = lib.tensor(w)
        return lambda x: (W @ x.tanh()).sin() * x.sum()

    def branchy(lib):
        return lambda x: x.exp() if float(x.sum()) > 0 else x.cos()

    x = rng.standard_normal(5)
    want = torch.func.jacrev(f(torch))(torch.tensor(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = kindle.func.jacrev(f(kindle))(kindle.tensor(x))
    _same(got, want, 1e-12)
    _same(kindle.func.jacrev(f(kindle), chunk_size=3)(kindle.tensor(x)), want, 1e-12)
    with pytest.warns(UserWarning, match="one backward pass per output element"):
        got = kindle.func.jacrev(branchy(kindle))(kindle.tensor(x))
    _same(got, torch.func.jacrev(branchy(torch))(torch.tensor(x)), 1e-12)
    with pytest.raises(ValueError, match="chunk_size"):
        kindle.func.jacrev(f(kindle), chunk_size=0)


def test_vjp_fn_inside_a_vmap_opened_after_its_vjp():
    # The graph was recorded outside the vmap: each cotangent gets its own backward (it used to
    # return zeros), as torch.func computes it.
    w = rng.standard_normal((3, 4))
    x = rng.standard_normal(4)
    cts = rng.standard_normal((5, 3))

    def run(lib):
        W = lib.tensor(w)
        _, vjp_fn = lib.func.vjp(lambda v: (W @ v).tanh() * 2, lib.tensor(x))
        return lib.func.vmap(vjp_fn)(lib.tensor(cts))

    with pytest.warns(UserWarning, match="one backward pass per example"):
        got = run(kindle)
    _same(got, run(torch), 1e-12)


def test_rrelu_under_vmap():
    x = rng.standard_normal((4, 6))
    # eval mode is deterministic (leaky_relu with the mean slope): any randomness mode batches it
    got = kindle.func.vmap(lambda v: kindle.nn.functional.rrelu(v, 0.1, 0.3))(kindle.tensor(x))
    _same(got, torch.nn.functional.rrelu(torch.tensor(x), 0.1, 0.3), 1e-12)
    # training draws per element: one draw shared by a batched input cannot be had from the op
    with pytest.raises(NotImplementedError, match="randomness='same'"):
        kindle.func.vmap(lambda v: kindle.nn.functional.rrelu(v, 0.1, 0.3, training=True),
                         randomness="same")(kindle.tensor(x))
