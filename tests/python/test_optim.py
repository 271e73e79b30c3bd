"""kindle.optim against torch.optim.

- every optimizer, over several option combinations: a small two-layer model with the same
  initial weights in kindle and torch, 100 steps of the same loss (real autograd), parameters
  equal within float32 tolerance; LBFGS in float64 (its line search amplifies the last-bit
  differences of float32 autograd) and for a few float32 steps;
- state_dict: torch's layout (integer ids, the same state keys, step as a 0-d float32 tensor),
  a round trip (save after 10 steps, load into a fresh optimizer, continue == uninterrupted),
  and a torch state_dict loaded into kindle continuing as torch continues;
- the Optimizer API: param groups and add_param_group's checks, zero_grad, step(closure),
  parameters without grad, step hooks, the constructors' ValueErrors with torch's messages.
"""
import warnings

import numpy as np
import pytest

import kindle
from kindle import optim

RNG = np.random.default_rng(0)
W0 = RNG.standard_normal((8, 5)).astype(np.float32)
B0 = RNG.standard_normal(8).astype(np.float32)
V0 = RNG.standard_normal((3, 8)).astype(np.float32)
X = RNG.standard_normal((16, 5)).astype(np.float32)
Y = RNG.standard_normal((16, 3)).astype(np.float32)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _model(lib, dtype=np.float32, init=None, sign=1.0):
    """Parameters [W, b, V] and a loss: mean((tanh(x W^T + b) V^T - y)^2), times `sign` (-1 for
    the maximize=True runs, so that they climb a bounded objective)."""
    init = init if init is not None else (W0, B0, V0)
    params = [lib.tensor(np.array(a, dtype=dtype), requires_grad=True) for a in init]
    x, y = lib.tensor(X.astype(dtype)), lib.tensor(Y.astype(dtype))

    def loss():
        w, b, v = params
        h = (x @ w.t() + b).tanh()
        return ((h @ v.t() - y) ** 2).mean() * sign

    return params, loss


def _train(opt, loss, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss().backward()
        opt.step()


def _values(params):
    return [np.array(p.detach().numpy()) for p in params]


def _assert_close(actual, expected, rtol=1e-4, atol=1e-5):
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.01, "momentum": 0.5, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "maximize": True, "decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.5}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "weight_decay": 0.01}),
    ("RMSprop", {"lr": 0.003, "centered": True, "alpha": 0.9}),
    ("RMSprop", {"lr": 0.003, "centered": True, "momentum": 0.5, "maximize": True}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1,
                 "weight_decay": 0.01}),
    ("Adagrad", {"lr": 0.05, "maximize": True, "eps": 1e-6}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.01, "momentum_decay": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
]


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_matches_torch_over_100_steps(torch, name, kwargs):
    results = []
    for lib, mod in ((kindle, optim), (torch, torch.optim)):
        params, loss = _model(lib, sign=-1.0 if kwargs.get("maximize") else 1.0)
        opt = getattr(mod, name)(params, **kwargs)
        _train(opt, loss, 100)
        results.append(_values(params))
    # The parameters moved (a test that cannot fail on a no-op step).
    assert not np.allclose(results[1][0], W0, atol=1e-3)
    _assert_close(*results)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax",
                                  "NAdam", "RAdam"])
def test_two_param_groups_match_torch(torch, name):
    results = []
    for lib, mod in ((kindle, optim), (torch, torch.optim)):
        params, loss = _model(lib)
        extra = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {}
        opt = getattr(mod, name)([{"params": params[:2]},
                                  {"params": params[2:], "lr": 0.003, "weight_decay": 0.1}],
                                 lr=0.01, **extra)
        _train(opt, loss, 30)
        results.append(_values(params))
    _assert_close(*results)


LBFGS_CONFIGS = [
    {"lr": 1, "history_size": 5, "max_iter": 10},
    {"lr": 1, "line_search_fn": "strong_wolfe"},
    {"lr": 0.5, "line_search_fn": "strong_wolfe", "history_size": 3, "max_iter": 7},
    {"lr": 0.8, "tolerance_grad": 1e-3, "tolerance_change": 1e-4},
]


def _run_lbfgs(lib, mod, kwargs, dtype, steps):
    params, loss = _model(lib, dtype)
    opt = mod.LBFGS(params, **kwargs)

    def closure():
        opt.zero_grad()
        value = loss()
        value.backward()
        return value

    losses = [float(opt.step(closure).detach()) for _ in range(steps)]
    state = opt.state[params[0]]
    return _values(params), losses, state["func_evals"], state["n_iter"]


@pytest.mark.parametrize("kwargs", LBFGS_CONFIGS)
def test_lbfgs_matches_torch_float64(torch, kwargs):
    k = _run_lbfgs(kindle, optim, kwargs, np.float64, 5)
    t = _run_lbfgs(torch, torch.optim, kwargs, np.float64, 5)
    assert k[2:] == t[2:]  # the same number of evaluations and iterations
    # 1e-8: MKL's float64 products differ in the last bits between its AVX2 and AVX-512 kernels,
    # which torch and kindle may pick differently on one machine
    np.testing.assert_allclose(k[1], t[1], rtol=1e-8)
    _assert_close(k[0], t[0], rtol=1e-7, atol=1e-10)
    assert t[1][-1] < t[1][0]


def test_lbfgs_matches_torch_float32(torch):
    kwargs = {"lr": 1, "max_iter": 4, "history_size": 4}
    k = _run_lbfgs(kindle, optim, kwargs, np.float32, 2)
    t = _run_lbfgs(torch, torch.optim, kwargs, np.float32, 2)
    assert k[2:] == t[2:]
    _assert_close(k[0], t[0])


def test_lbfgs_errors():
    params, _ = _model(kindle)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{"params": params[:1]}, {"params": params[1:]}])
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.LBFGS(params, lr=-1)
    opt = optim.LBFGS(params, line_search_fn="wolfe")

    def closure():
        opt.zero_grad()
        value = (params[0] ** 2).sum()
        value.backward()
        return value

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
    assert opt.param_groups[0]["max_eval"] == 25  # max_iter * 5 // 4


# ----------------------------------------------------------------------------- state_dict
def _clone_state_dict(sd):
    """What torch.save/torch.load would give: the same structure, tensors copied."""
    def copy(v):
        if isinstance(v, kindle.Tensor):
            return v.clone()
        if isinstance(v, dict):
            return {k: copy(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(copy(x) for x in v)
        return v
    return copy(sd)


ROUND_TRIP = [("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.01, "amsgrad": True}),
              ("AdamW", {"lr": 0.01}), ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}),
              ("Adagrad", {"lr": 0.1, "lr_decay": 0.01}), ("Adamax", {"lr": 0.01}),
              ("NAdam", {"lr": 0.01}), ("RAdam", {"lr": 0.01})]


@pytest.mark.parametrize("name,kwargs", ROUND_TRIP, ids=[n for n, _ in ROUND_TRIP])
def test_state_dict_round_trip(name, kwargs):
    params, loss = _model(kindle)
    opt = getattr(optim, name)(params, **kwargs)
    _train(opt, loss, 20)
    uninterrupted = _values(params)

    params, loss = _model(kindle)
    opt = getattr(optim, name)(params, **kwargs)
    _train(opt, loss, 10)
    saved_params, saved = _values(params), _clone_state_dict(opt.state_dict())
    del opt
    params, loss = _model(kindle, init=saved_params)
    fresh = getattr(optim, name)(params, **kwargs)
    fresh.load_state_dict(saved)
    assert all(p in fresh.state for p in params)
    _train(fresh, loss, 10)
    for a, b in zip(_values(params), uninterrupted):
        np.testing.assert_array_equal(a, b)


def test_lbfgs_state_dict_round_trip():
    def closure_for(opt, loss):
        def closure():
            opt.zero_grad()
            value = loss()
            value.backward()
            return value
        return closure

    params, loss = _model(kindle, np.float64)
    opt = optim.LBFGS(params, max_iter=3, history_size=4)
    for _ in range(4):
        opt.step(closure_for(opt, loss))
    uninterrupted = _values(params)

    params, loss = _model(kindle, np.float64)
    opt = optim.LBFGS(params, max_iter=3, history_size=4)
    for _ in range(2):
        opt.step(closure_for(opt, loss))
    saved_params, saved = _values(params), _clone_state_dict(opt.state_dict())
    params, loss = _model(kindle, np.float64, init=saved_params)
    fresh = optim.LBFGS(params, max_iter=3, history_size=4)
    fresh.load_state_dict(saved)
    for _ in range(2):
        fresh.step(closure_for(fresh, loss))
    for a, b in zip(_values(params), uninterrupted):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name,kwargs", ROUND_TRIP, ids=[n for n, _ in ROUND_TRIP])
def test_state_dict_layout_matches_torch(torch, name, kwargs):
    dicts = []
    for lib, mod in ((kindle, optim), (torch, torch.optim)):
        params, loss = _model(lib)
        opt = getattr(mod, name)([{"params": params[:1]}, {"params": params[1:], "lr": 0.02}], **kwargs)
        params[1].grad = None
        _train(opt, loss, 3)
        dicts.append(opt.state_dict())
    k, t = dicts
    assert sorted(k["state"]) == sorted(t["state"])
    for i in t["state"]:
        assert sorted(k["state"][i]) == sorted(t["state"][i])
        for key, tv in t["state"][i].items():
            kv = k["state"][i][key]
            assert tuple(kv.shape) == tuple(tv.shape), key
            assert str(kv.dtype).split(".")[-1] == str(tv.dtype).split(".")[-1], key
            np.testing.assert_allclose(kv.numpy(), tv.numpy(), rtol=1e-4, atol=1e-6)
    assert len(k["param_groups"]) == len(t["param_groups"])
    for kg, tg in zip(k["param_groups"], t["param_groups"]):
        assert kg.keys() == tg.keys()
        assert kg["params"] == tg["params"]
        assert kg["lr"] == tg["lr"]


@pytest.mark.parametrize("name,kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9}),
                                         ("Adam", {"lr": 0.01, "amsgrad": True}),
                                         ("RMSprop", {"lr": 0.01, "centered": True}),
                                         ("NAdam", {"lr": 0.01})])
def test_load_torch_state_dict(torch, name, kwargs):
    # A torch checkpoint's optimizer state, converted tensor by tensor, continues in kindle as
    # it does in torch.
    tparams, tloss = _model(torch)
    topt = getattr(torch.optim, name)(tparams, **kwargs)
    _train(topt, tloss, 10)

    def convert(v):
        if isinstance(v, torch.Tensor):
            return kindle.tensor(v.detach().numpy().copy())
        if isinstance(v, dict):
            return {k: convert(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(convert(x) for x in v)
        return v

    kparams, kloss = _model(kindle, init=_values(tparams))
    kopt = getattr(optim, name)(kparams, **kwargs)
    kopt.load_state_dict(convert(topt.state_dict()))
    _train(topt, tloss, 10)
    _train(kopt, kloss, 10)
    _assert_close(_values(kparams), _values(tparams))


def test_load_state_dict_errors():
    params, _ = _model(kindle)
    opt = optim.SGD(params, lr=0.1)
    two = optim.SGD([{"params": params[:1]}, {"params": params[1:]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict(two.state_dict())
    short = optim.SGD(params[:2], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict(short.state_dict())


def test_load_state_dict_restores_hyperparameters_and_dtype():
    params, loss = _model(kindle)
    opt = optim.Adam(params, lr=0.01)
    _train(opt, loss, 2)
    sd = _clone_state_dict(opt.state_dict())
    sd["param_groups"][0]["lr"] = 0.123
    sd["state"][0]["exp_avg"] = sd["state"][0]["exp_avg"].double()
    fresh = optim.Adam(params, lr=0.5)
    fresh.load_state_dict(sd)
    assert fresh.param_groups[0]["lr"] == 0.123
    assert fresh.param_groups[0]["params"][0] is params[0]
    st = fresh.state[params[0]]
    assert st["exp_avg"].dtype == kindle.float32  # cast to the parameter's dtype
    assert st["step"].dtype == kindle.float32 and st["step"].dim() == 0
    assert st["step"].item() == 2.0


# ----------------------------------------------------------------------------- the Optimizer API
def test_param_groups_and_defaults():
    params, _ = _model(kindle)
    opt = optim.SGD([{"params": params[:2]}, {"params": params[2], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert len(opt.param_groups) == 2
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["params"] == [params[2]] or opt.param_groups[1]["params"][0] is params[2]
    assert opt.param_groups[1]["momentum"] == 0.9
    assert opt.defaults["lr"] == 0.1 and opt.defaults["nesterov"] is False
    assert "Parameter Group 1" in repr(opt) and "lr: 0.5" in repr(opt)


def test_named_parameters():
    params, _ = _model(kindle)
    opt = optim.Adam([("w", params[0]), ("b", params[1])])
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]
    with pytest.raises(ValueError, match="all optimizer param groups should be with/without names"):
        opt.add_param_group({"params": [params[2]]})


def test_add_param_group(torch):
    params, loss = _model(kindle)
    opt = optim.SGD(params[:2], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": params[2], "lr": 0.01})
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["lr"] == 0.01

    tparams, tloss = _model(torch)
    topt = torch.optim.SGD(tparams[:2], lr=0.1, momentum=0.9)
    topt.add_param_group({"params": tparams[2], "lr": 0.01})
    _train(opt, loss, 20)
    _train(topt, tloss, 20)
    _assert_close(_values(params), _values(tparams))

    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [params[0]]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([params[0]])
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {kindle.zeros(2, requires_grad=True)}})
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        opt.add_param_group({"params": [1.0]})
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        opt.add_param_group({"params": [params[0] * 2]})
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([params[0], params[0]], lr=0.1)


def test_required_hyperparameter():
    class Custom(optim.Optimizer):
        def __init__(self, params, lr=optim.optimizer.required):
            super().__init__(params, {"lr": lr})

        def step(self, closure=None):
            return None

    p = kindle.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        Custom([p])
    assert Custom([{"params": [p], "lr": 0.1}]).param_groups[0]["lr"] == 0.1


@pytest.mark.parametrize("args,message", [
    ((), "optimizer got an empty parameter list"),
])
def test_empty_params(args, message):
    with pytest.raises(ValueError, match=message):
        optim.SGD([], lr=0.1)


def test_tensor_as_params_is_a_type_error():
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        optim.SGD(kindle.zeros(3, requires_grad=True), lr=0.1)


BAD_ARGS = [
    ("SGD", {"lr": -0.1}), ("SGD", {"lr": 0.1, "momentum": -1}),
    ("SGD", {"lr": 0.1, "weight_decay": -1}), ("SGD", {"lr": 0.1, "nesterov": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "nesterov": True}),
    ("Adam", {"lr": -1.0}), ("Adam", {"eps": -1.0}), ("Adam", {"betas": (1.0, 0.999)}),
    ("Adam", {"betas": (0.9, -0.1)}), ("Adam", {"weight_decay": -1.0}),
    ("Adam", {"betas": (0, 0.999)}), ("AdamW", {"betas": (0.9, 1.5)}),
    ("RMSprop", {"alpha": -0.5}), ("RMSprop", {"momentum": -0.5}), ("RMSprop", {"eps": -1.0}),
    ("Adagrad", {"lr_decay": -1}), ("Adagrad", {"initial_accumulator_value": -1}),
    ("Adagrad", {"eps": -1}), ("Adamax", {"betas": (0.9, 1.0)}),
    ("NAdam", {"momentum_decay": -1}), ("RAdam", {"betas": (-0.1, 0.9)}),
]


@pytest.mark.parametrize("name,kwargs", BAD_ARGS, ids=[f"{n}-{k}" for n, k in BAD_ARGS])
def test_bad_hyperparameters_match_torch(torch, name, kwargs):
    with pytest.raises(ValueError) as t:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as k:
        getattr(optim, name)([kindle.zeros(2, requires_grad=True)], **kwargs)
    assert str(k.value) == str(t.value)


def test_differentiable_is_not_supported():
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        optim.Adam([kindle.zeros(2, requires_grad=True)], differentiable=True)


def test_zero_grad():
    params, loss = _model(kindle)
    opt = optim.SGD(params, lr=0.1)
    loss().backward()
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in params)
    opt.zero_grad()
    assert all(p.grad is None for p in params)


def test_step_closure_no_grad_and_skipped_params():
    params, loss = _model(kindle)
    opt = optim.Adam(params, lr=0.1)

    def closure():
        opt.zero_grad()
        value = loss()
        value.backward()
        params[1].grad = None  # b gets no gradient: skipped, no state
        return value

    before = _values(params)
    with kindle.no_grad():  # step(closure) turns grad mode back on for the closure
        returned = opt.step(closure)
    assert isinstance(returned, kindle.Tensor) and returned.item() > 0
    after = _values(params)
    assert not np.array_equal(after[0], before[0])
    np.testing.assert_array_equal(after[1], before[1])
    assert params[1] not in opt.state and params[0] in opt.state
    assert all(p.is_leaf and p.requires_grad and p.grad_fn is None for p in params)
    assert opt.step() is None  # no closure: returns None


def test_step_runs_without_grad_mode():
    p = kindle.ones(3, requires_grad=True)
    p.grad = kindle.ones(3)
    seen = []
    opt = optim.SGD([p], lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: seen.append(kindle.is_grad_enabled()))
    opt.step()
    assert seen == [True]  # hooks run in the caller's grad mode, the update without grad
    assert kindle.is_grad_enabled()
    np.testing.assert_allclose(p.detach().numpy(), 0.9)
    assert p.grad_fn is None and p.is_leaf


def test_step_hooks():
    p = kindle.ones(2, requires_grad=True)
    p.grad = kindle.ones(2)
    opt = optim.SGD([p], lr=0.5)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt)))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", p.detach().numpy()[0])))
    g = optim.optimizer.register_optimizer_step_post_hook(lambda o, a, k: calls.append("global"))
    opt.step()
    assert calls == [("pre", True), ("post", 0.5), "global"]
    h1.remove()
    h2.remove()
    g.remove()
    opt.step()
    assert len(calls) == 3


def test_state_dict_hooks():
    p = kindle.ones(2, requires_grad=True)
    opt = optim.SGD([p], lr=0.5)
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    assert opt.state_dict()["extra"] == 1
    loaded = []
    opt.register_load_state_dict_post_hook(lambda o: loaded.append(True))
    opt.load_state_dict({"state": {}, "param_groups": opt.state_dict()["param_groups"]})
    assert loaded == [True]


def test_adagrad_state_created_at_construction():
    params, _ = _model(kindle)
    opt = optim.Adagrad(params, initial_accumulator_value=0.25)
    for p in params:
        assert opt.state[p]["step"].item() == 0.0
        np.testing.assert_array_equal(opt.state[p]["sum"].numpy(), np.full(tuple(p.shape), 0.25, np.float32))


def test_sgd_without_momentum_keeps_no_state():
    params, loss = _model(kindle)
    opt = optim.SGD(params, lr=0.1)
    _train(opt, loss, 2)
    assert len(opt.state) == 0


def test_float64_parameters(torch):
    results = []
    for lib, mod in ((kindle, optim), (torch, torch.optim)):
        params, loss = _model(lib, np.float64)
        opt = mod.Adam(params, lr=0.01, amsgrad=True)
        _train(opt, loss, 50)
        results.append(_values(params))
        assert opt.state[params[0]]["exp_avg"].dtype == lib.float64
    _assert_close(*results, rtol=1e-10, atol=1e-12)


def test_tensor_lr(torch):
    results = []
    for lib, mod in ((kindle, optim), (torch, torch.optim)):
        params, loss = _model(lib)
        opt = mod.SGD(params, lr=lib.tensor(0.05), momentum=0.9)
        _train(opt, loss, 20)
        results.append(_values(params))
    _assert_close(*results)


def test_no_warnings_in_normal_use():
    params, loss = _model(kindle)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt = optim.AdamW(params)
        _train(opt, loss, 3)
        opt.load_state_dict(opt.state_dict())


@pytest.mark.parametrize("name,kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.1}),
                                         ("Adam", {"amsgrad": True, "weight_decay": 0.1}),
                                         ("AdamW", {}), ("RMSprop", {"centered": True, "momentum": 0.5}),
                                         ("Adagrad", {"lr_decay": 0.1}), ("NAdam", {}), ("RAdam", {}),
                                         ("Adamax", {})])
def test_mixed_group_matches_torch(torch, name, kwargs):
    # One group holding a non-contiguous float32 leaf (with a non-contiguous grad), a float64
    # parameter, an empty one and a 0-d one: the fused kernels take one dtype per call.
    a = np.random.default_rng(1).standard_normal((4, 3))
    results = []
    for lib, mod in ((kindle, optim), (torch, torch.optim)):
        params = [lib.tensor(a.astype(np.float32)).t().detach().requires_grad_(),
                  lib.tensor(a).requires_grad_(), lib.zeros(0, requires_grad=True),
                  lib.tensor(np.float32(1.5)).requires_grad_()]
        opt = getattr(mod, name)(params, **kwargs)
        for _ in range(5):
            opt.zero_grad()
            sum((p * p * p).sum() for p in params).backward()
            params[0].grad = params[0].grad.t().contiguous().t()
            opt.step()
        results.append(_values(params))
    for k, t in zip(*results):
        assert k.dtype == t.dtype and k.shape == t.shape
    _assert_close(*results, rtol=1e-5, atol=1e-6)
