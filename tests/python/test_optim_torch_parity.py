"""Every kindle.optim optimizer against torch 2.13's, in float64 so that the two agree to the
last bits or nearly:

- a few steps of the same model (own autograd in each library) over several option sets,
  including maximize, weight decay and the implementation flags (foreach, fused): the
  parameters and every state tensor match, under the same state keys;
- state_dict: the same keys as torch, a kindle round trip (save, load into a fresh optimizer,
  continue == uninterrupted), and torch's state_dict loaded into kindle continuing as torch does;
- the constructors: every keyword torch's __init__ takes is accepted (same order, kind and
  default), bad hyper-parameters raise torch's exception type and message, and the flags torch
  refuses on a CPU (capturable=True) fail the same way;
- differentiable=True (Adadelta, ASGD, Rprop): gradients through two steps match torch's;
- SparseAdam: construction and errors as torch; its sparse update against torch's on sparse
  gradients (Kindle has no sparse tensors, so its update function is called directly).
"""
import inspect

import numpy as np
import pytest

import kindle
from kindle import optim
from kindle.optim.sparse_adam import _sparse_adam_update

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(15)
INIT = {
    "w": RNG.standard_normal((4, 3)),
    "b": RNG.standard_normal(4),
    "v": RNG.standard_normal((2, 4)),
    "t": RNG.standard_normal((2, 3, 2)),
    "s": np.array(0.7),
}
X = RNG.standard_normal((6, 3))
Y = RNG.standard_normal((6, 2))
U = RNG.standard_normal((2, 3, 2))
STEPS = 5


def _model(lib, dtype=np.float64, init=None, sign=1.0, names=("w", "b", "v", "t", "s")):
    """Parameters and a loss over them: an MLP's squared error plus terms for a 3-d and a 0-d
    parameter. sign=-1 for the maximize=True runs."""
    init = init if init is not None else [INIT[n] for n in names]
    params = [lib.tensor(np.array(a, dtype=dtype), requires_grad=True) for a in init]
    by_name = dict(zip(names, params))
    x, y, u = (lib.tensor(a.astype(dtype)) for a in (X, Y, U))

    def loss():
        w, v = by_name["w"], by_name["v"]
        h = x @ w.t()
        if "b" in by_name:
            h = h + by_name["b"]
        out = h.tanh() @ v.t()
        value = ((out - y) ** 2).mean()
        if "t" in by_name:
            value = value + (by_name["t"].tanh() * u).sum() * 0.1
        if "s" in by_name:
            s = by_name["s"]
            value = value + (s * out).mean() + (s - 0.3) ** 2
        return value * sign

    return params, loss


def _train(opt, loss, steps=STEPS):
    for _ in range(steps):
        opt.zero_grad()
        loss().backward()
        opt.step()


def _np(v):
    return np.array(v.detach().numpy()) if hasattr(v, "detach") else v


def _assert_close(kindle_values, torch_values, rtol, atol):
    assert len(kindle_values) == len(torch_values)
    for a, e in zip(kindle_values, torch_values):
        np.testing.assert_allclose(_np(a), _np(e), rtol=rtol, atol=atol)


def _assert_state_close(kopt, topt, rtol, atol):
    """The same state keys per parameter, with equal values (tensor or number)."""
    kstate, tstate = kopt.state_dict()["state"], topt.state_dict()["state"]
    assert sorted(kstate) == sorted(tstate)
    for i, ts in tstate.items():
        ks = kstate[i]
        assert list(ks) == list(ts), f"state keys of parameter {i}"
        for key, tv in ts.items():
            kv = ks[key]
            if isinstance(tv, torch.Tensor):
                assert isinstance(kv, kindle.Tensor), key
                assert tuple(kv.shape) == tuple(tv.shape), key
                assert str(kv.dtype).split(".")[-1] == str(tv.dtype).split(".")[-1], key
                np.testing.assert_allclose(_np(kv), _np(tv), rtol=rtol, atol=atol, err_msg=key)
            else:
                assert kv == tv, key


def _to_kindle(v):
    if isinstance(v, torch.Tensor):
        return kindle.tensor(v.detach().numpy().copy())
    if isinstance(v, dict):
        return {k: _to_kindle(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_to_kindle(x) for x in v)
    return v


def _clone(v):
    if isinstance(v, kindle.Tensor):
        return v.clone()
    if isinstance(v, dict):
        return {k: _clone(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_clone(x) for x in v)
    return v


# Muon takes only matrices; the others get the whole model.
MATRICES = ("w", "v")

CASES = [
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-5}),
    ("Adadelta", {"weight_decay": 0.1, "foreach": True}),
    ("Adadelta", {"maximize": True, "weight_decay": 0.05}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 1e-2, "alpha": 0.5, "t0": 2}),
    ("ASGD", {"lr": 0.05, "weight_decay": 0.1, "t0": 0}),
    ("ASGD", {"lr": 0.05, "maximize": True, "weight_decay": 0.05, "t0": 3, "foreach": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.08)}),
    ("Rprop", {"maximize": True, "foreach": True}),
    ("Adafactor", {}),
    ("Adafactor", {"lr": 0.05, "beta2_decay": -0.5, "eps": (1e-20, 1e-2), "d": 2.0}),
    ("Adafactor", {"weight_decay": 0.1}),
    ("Adafactor", {"maximize": True, "weight_decay": 0.05, "foreach": False}),
    ("Muon", {"lr": 0.02}),
    ("Muon", {"lr": 0.02, "nesterov": False, "momentum": 0.8, "weight_decay": 0.0,
              "adjust_lr_fn": "match_rms_adamw"}),
    ("Muon", {"lr": 0.02, "ns_steps": 3, "ns_coefficients": (2.0, -1.5, 0.5),
              "adjust_lr_fn": "original"}),
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "maximize": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "fused": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "foreach": True}),
    ("Adam", {}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "maximize": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "fused": True, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "foreach": True, "maximize": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "maximize": True, "amsgrad": True, "weight_decay": 0.3}),
    ("AdamW", {"lr": 0.01, "fused": True}),
    ("Adagrad", {}),
    ("Adagrad", {"lr_decay": 0.01, "initial_accumulator_value": 0.1, "weight_decay": 0.1}),
    ("Adagrad", {"maximize": True, "eps": 1e-6}),
    ("Adagrad", {"fused": True}),
    ("Adagrad", {"foreach": True, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1, "maximize": True}),
    ("Adamax", {"foreach": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.01, "momentum_decay": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True,
               "foreach": True}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "weight_decay": 0.1, "maximize": True}),
    ("RMSprop", {"lr": 0.003, "centered": True, "alpha": 0.9, "foreach": True}),
]


def _tolerance(name, kwargs=None):
    # Muon orthogonalises in bfloat16 (8-bit mantissa): torch's and Kindle's bfloat16 matmuls
    # may round an element differently, so its parameters agree to bfloat16 precision only.
    if name == "Muon":
        return 2e-2, 2e-3
    # foreach=True / fused=True select other torch kernels (ASGD's foreach form even computes
    # its step sizes in float32 tensors); Kindle runs the one update, which follows torch's
    # default CPU path, so those agree within rounding rather than bit for bit.
    if kwargs and (kwargs.get("foreach") or kwargs.get("fused")):
        return 1e-6, 1e-9
    return 1e-9, 1e-12


def _names(name):
    return MATRICES if name == "Muon" else ("w", "b", "v", "t", "s")


def _build(lib, mod, name, kwargs, dtype=np.float64, init=None):
    params, loss = _model(lib, dtype, init, -1.0 if kwargs.get("maximize") else 1.0,
                          _names(name))
    return params, loss, getattr(mod, name)(params, **kwargs)


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_steps_match_torch(name, kwargs):
    kparams, kloss, kopt = _build(kindle, optim, name, kwargs)
    tparams, tloss, topt = _build(torch, torch.optim, name, kwargs)
    _train(kopt, kloss)
    _train(topt, tloss)
    moved = [not np.allclose(_np(p), INIT[n]) for p, n in zip(tparams, _names(name))]
    assert all(moved), "a no-op step would pass this test"
    rtol, atol = _tolerance(name, kwargs)
    _assert_close(kparams, tparams, rtol, atol)
    _assert_state_close(kopt, topt, rtol, atol)


NEW = ["Adadelta", "ASGD", "Rprop", "Adafactor", "Muon"]


@pytest.mark.parametrize("name", NEW)
def test_float32_steps_match_torch(name):
    kparams, kloss, kopt = _build(kindle, optim, name, {}, np.float32)
    tparams, tloss, topt = _build(torch, torch.optim, name, {}, np.float32)
    _train(kopt, kloss)
    _train(topt, tloss)
    rtol, atol = (2e-2, 2e-3) if name == "Muon" else (1e-4, 1e-6)
    _assert_close(kparams, tparams, rtol, atol)
    _assert_state_close(kopt, topt, rtol, atol)


@pytest.mark.parametrize("name", NEW)
def test_two_param_groups_match_torch(name):
    results = []
    for lib, mod in ((kindle, optim), (torch, torch.optim)):
        params, loss = _model(lib, names=_names(name))
        opt = getattr(mod, name)([{"params": params[:1]},
                                  {"params": params[1:], "lr": 0.003}], lr=0.02)
        params[-1].grad = None
        _train(opt, loss)
        results.append(params)
    _assert_close(*results, *_tolerance(name))


@pytest.mark.parametrize("name", NEW)
def test_tensor_lr_matches_torch(name):
    results = []
    for lib, mod in ((kindle, optim), (torch, torch.optim)):
        params, loss = _model(lib, names=_names(name))
        opt = getattr(mod, name)(params, lr=lib.tensor(0.02, dtype=lib.float64))
        _train(opt, loss)
        results.append(params)
    _assert_close(*results, *_tolerance(name))


ROUND_TRIP = [("Adadelta", {"weight_decay": 0.1}), ("ASGD", {"t0": 2, "lr": 0.05}),
              ("Rprop", {"lr": 0.05}), ("Adafactor", {"lr": 0.05}), ("Muon", {"lr": 0.02}),
              ("Adam", {"amsgrad": True, "maximize": True}), ("SGD", {"momentum": 0.9}),
              ("RMSprop", {"centered": True, "momentum": 0.5})]


@pytest.mark.parametrize("name,kwargs", ROUND_TRIP, ids=[n for n, _ in ROUND_TRIP])
def test_state_dict_round_trip(name, kwargs):
    params, loss, opt = _build(kindle, optim, name, kwargs)
    _train(opt, loss, 2 * STEPS)
    uninterrupted = [_np(p) for p in params]

    params, loss, opt = _build(kindle, optim, name, kwargs)
    _train(opt, loss)
    saved_params, saved = [_np(p) for p in params], _clone(opt.state_dict())
    del opt
    params, loss, fresh = _build(kindle, optim, name, kwargs, init=saved_params)
    fresh.load_state_dict(saved)
    assert all(p in fresh.state for p in params)
    _train(fresh, loss)
    # ASGD keeps eta and mu as float32 tensors, which load_state_dict casts to the parameter's
    # dtype (torch's rule for every state tensor but 'step'): a float64 run continues with
    # float64 step sizes, as it does in torch, and so differs in the last float32 bits.
    rtol = 1e-6 if name == "ASGD" else 0
    for a, b in zip(params, uninterrupted):
        np.testing.assert_allclose(_np(a), b, rtol=rtol, atol=0)


@pytest.mark.parametrize("name,kwargs", ROUND_TRIP, ids=[n for n, _ in ROUND_TRIP])
def test_load_torch_state_dict(name, kwargs):
    # torch's state_dict (keys, step counters, hyper-parameters), converted tensor by tensor,
    # continues in kindle as it continues when loaded into a fresh torch optimizer.
    tparams, tloss, topt = _build(torch, torch.optim, name, kwargs)
    _train(topt, tloss)
    saved = topt.state_dict()
    kparams, kloss, kopt = _build(kindle, optim, name, kwargs, init=[_np(p) for p in tparams])
    kopt.load_state_dict(_to_kindle(saved))
    tparams, tloss, topt = _build(torch, torch.optim, name, kwargs, init=[_np(p) for p in tparams])
    topt.load_state_dict(saved)
    tsd, ksd = topt.state_dict(), kopt.state_dict()
    assert [g.keys() for g in ksd["param_groups"]] == [g.keys() for g in tsd["param_groups"]]
    _train(topt, tloss)
    _train(kopt, kloss)
    _assert_close(kparams, tparams, *_tolerance(name))
    _assert_state_close(kopt, topt, *_tolerance(name))


def test_state_dict_param_groups_match_torch():
    for name in NEW + ["SparseAdam"]:
        names = ("w",) if name in ("Muon", "SparseAdam") else ("w", "b")
        ksd = getattr(optim, name)(_model(kindle, names=names)[0]).state_dict()
        tsd = getattr(torch.optim, name)(_model(torch, names=names)[0]).state_dict()
        assert ksd["param_groups"] == tsd["param_groups"], name
        assert ksd["state"] == tsd["state"] == {}


# ------------------------------------------------------------------------------ constructors

def _torch_optimizers():
    return sorted(n for n in torch.optim.__all__
                  if isinstance(getattr(torch.optim, n), type)
                  and issubclass(getattr(torch.optim, n), torch.optim.Optimizer)
                  and n != "Optimizer")


def test_kindle_has_every_torch_optimizer():
    missing = [n for n in _torch_optimizers() if not hasattr(optim, n)]
    assert not missing, f"torch.optim optimizers missing in kindle.optim: {missing}"


@pytest.mark.parametrize("name", _torch_optimizers())
def test_signature_matches_torch(name):
    if not hasattr(optim, name):
        pytest.skip(f"kindle.optim has no {name}")
    tsig = inspect.signature(getattr(torch.optim, name).__init__).parameters
    ksig = inspect.signature(getattr(optim, name).__init__).parameters
    missing = [p for p in tsig if p not in ksig]
    assert not missing, f"{name}.__init__ lacks torch's keyword arguments {missing}"
    for pname, tp in tsig.items():
        kp = ksig[pname]
        assert kp.kind == tp.kind, (name, pname)
        assert kp.default == tp.default, (name, pname, kp.default, tp.default)
    assert list(ksig)[:len(tsig)] == list(tsig), f"{name}: argument order differs from torch"


BAD = [
    ("Adadelta", {"lr": -1.0}), ("Adadelta", {"rho": 1.5}), ("Adadelta", {"rho": -0.1}),
    ("Adadelta", {"eps": -1e-3}), ("Adadelta", {"weight_decay": -0.1}),
    ("ASGD", {"lr": -0.1}), ("ASGD", {"weight_decay": -1.0}),
    ("Rprop", {"lr": -0.1}), ("Rprop", {"etas": (1.5, 1.2)}), ("Rprop", {"etas": (0.5, 0.9)}),
    ("Rprop", {"etas": (0.0, 1.2)}),
    ("Adafactor", {"lr": -0.1}), ("Adafactor", {"beta2_decay": 0.5}),
    ("Adafactor", {"eps": (-1.0, 1e-3)}), ("Adafactor", {"eps": (None, -1e-3)}),
    ("Adafactor", {"d": 0.5}), ("Adafactor", {"weight_decay": -0.1}),
    ("SparseAdam", {"lr": 0.0}), ("SparseAdam", {"lr": -1.0}), ("SparseAdam", {"eps": 0.0}),
    ("SparseAdam", {"betas": (1.0, 0.999)}), ("SparseAdam", {"betas": (0.9, -0.1)}),
    ("Muon", {"lr": -1.0}), ("Muon", {"momentum": -0.5}), ("Muon", {"weight_decay": -0.1}),
    ("Muon", {"adjust_lr_fn": "linear"}),
    ("Adam", {"lr": -1.0}), ("Adam", {"betas": (0.9, 1.0)}), ("Adam", {"eps": -1.0}),
    ("Adam", {"weight_decay": -1.0}), ("Adam", {"fused": True, "foreach": True}),
    ("AdamW", {"fused": True, "foreach": True}), ("AdamW", {"betas": (-0.1, 0.9)}),
    ("SGD", {"lr": -1.0}), ("SGD", {"momentum": -0.5}), ("SGD", {"weight_decay": -1.0}),
    ("SGD", {"nesterov": True}), ("SGD", {"fused": True, "foreach": True}),
    ("Adagrad", {"lr_decay": -1.0}), ("Adagrad", {"initial_accumulator_value": -1.0}),
    ("Adagrad", {"eps": -1.0}), ("Adagrad", {"fused": True, "foreach": True}),
    ("Adamax", {"betas": (1.0, 0.9)}), ("NAdam", {"momentum_decay": -1.0}),
    ("RAdam", {"eps": -1.0}), ("RMSprop", {"alpha": -1.0}), ("RMSprop", {"momentum": -1.0}),
    ("Adam", {"fused": True, "differentiable": True}),
    ("SGD", {"fused": True, "differentiable": True}),
    ("Adagrad", {"fused": True, "differentiable": True}),
]


@pytest.mark.parametrize("name,kwargs", BAD, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD)])
def test_bad_hyperparameters_raise_as_torch(name, kwargs):
    with pytest.raises(Exception) as expected:
        getattr(torch.optim, name)(_model(torch, names=("w",))[0], **kwargs)
    with pytest.raises(expected.type) as actual:
        getattr(optim, name)(_model(kindle, names=("w",))[0], **kwargs)
    assert str(actual.value) == str(expected.value)


def _outcome(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 -- the outcome is compared, not handled
        return type(e)
    return None


@pytest.mark.parametrize("name", _torch_optimizers())
def test_flags_behave_as_torch_on_cpu(name):
    """Each of torch's implementation flags, set on its own, on a CPU parameter: the step runs
    where torch's runs and raises torch's exception where torch's raises (capturable=True).
    differentiable=True on a leaf parameter fails in both, possibly with different types: the
    fused-kernel optimizers refuse it at construction with NotImplementedError."""
    if name in ("LBFGS", "SparseAdam"):
        pytest.skip("no flags")
    tsig = inspect.signature(getattr(torch.optim, name).__init__).parameters
    for flag in ("foreach", "fused", "capturable", "differentiable", "maximize"):
        if flag not in tsig:
            continue
        results = []
        for lib, mod in ((torch, torch.optim), (kindle, optim)):
            def run():
                params, loss = _model(lib, names=MATRICES)
                opt = getattr(mod, name)(params, **{flag: True})
                _train(opt, loss, 2)
            results.append(_outcome(run))
        t, k = results
        if flag == "differentiable":
            assert t is not None and k is not None, (name, flag)
        else:
            assert k is t, (name, flag, k, t)


def test_capturable_message():
    params, loss = _model(kindle, names=MATRICES)
    opt = optim.Adadelta(params, capturable=True)
    loss().backward()
    with pytest.raises(AssertionError, match="If capturable=True, params and state_steps must "
                                             "be on supported devices"):
        opt.step()


def test_muon_needs_matrices():
    for lib, mod in ((torch, torch.optim), (kindle, optim)):
        with pytest.raises(ValueError, match="Muon only supports 2D parameters whereas we found "
                                             "a parameter with size"):
            mod.Muon(_model(lib)[0])


# ------------------------------------------------------------------------------ differentiable

# Rprop's second differentiable step fails in torch too (the first one modifies in place the
# step sizes the graph saved), so it takes one.
DIFFERENTIABLE = [("Adadelta", {"weight_decay": 0.1}, 2), ("Adadelta", {"maximize": True}, 2),
                  ("ASGD", {"weight_decay": 0.1, "t0": 1, "lr": 0.1, "lambd": 0.1}, 2),
                  ("Rprop", {"lr": 0.1, "maximize": True}, 1)]


@pytest.mark.parametrize("name,kwargs,steps", DIFFERENTIABLE,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(DIFFERENTIABLE)])
def test_differentiable_gradients_match_torch(name, kwargs, steps):
    # Steps on a non-leaf copy of the parameter, with a gradient that requires grad; the
    # gradient of a weighted sum of the result w.r.t. the initial parameter and the gradient.
    grads = []
    for lib, mod in ((kindle, optim), (torch, torch.optim)):
        w = lib.tensor(INIT["w"], requires_grad=True)
        g = lib.tensor(np.cos(INIT["w"] * 3), requires_grad=True)
        p = w.clone()
        p.grad = g
        opt = getattr(mod, name)([p], differentiable=True, **kwargs)
        for _ in range(steps):
            opt.step()
        (p * lib.tensor(INIT["w"] + 2)).sum().backward()
        grads.append([w.grad, g.grad])
    _assert_close(*grads, 1e-9, 1e-12)
    assert np.abs(_np(grads[1][0])).sum() > 0


def test_differentiable_step_refuses_a_leaf_parameter():
    w = kindle.tensor(INIT["w"], requires_grad=True)
    w.grad = kindle.ones_like(w)
    with pytest.raises(RuntimeError):
        optim.Adadelta([w], differentiable=True).step()


# ------------------------------------------------------------------------------ SparseAdam

def test_sparse_adam_refuses_dense_gradients():
    messages = []
    for lib, mod in ((torch, torch.optim), (kindle, optim)):
        params, loss = _model(lib, names=("w", "b", "v"))
        opt = mod.SparseAdam(params, lr=0.01, maximize=True)
        loss().backward()
        with pytest.raises(RuntimeError) as info:
            opt.step()
        messages.append(str(info.value))
        assert dict(opt.state) == {}
    assert messages[0] == messages[1] == ("SparseAdam does not support dense gradients, "
                                          "please consider Adam instead")


def test_sparse_adam_defaults_match_torch():
    k = optim.SparseAdam(_model(kindle, names=("w",))[0])
    t = torch.optim.SparseAdam(_model(torch, names=("w",))[0])
    assert k.defaults == t.defaults


@pytest.mark.parametrize("maximize", [False, True])
def test_sparse_adam_update_matches_torch(maximize):
    """Three steps on an embedding-like table with sparse row gradients (one with a repeated
    row, which torch coalesces) and on a vector: Kindle's update function, fed the coalesced
    indices and values, leaves the parameters and moments torch's SparseAdam leaves."""
    table, vector = RNG.standard_normal((6, 3)), RNG.standard_normal(5)
    row_grads = [([0, 3, 3], RNG.standard_normal((3, 3))), ([5, 1], RNG.standard_normal((2, 3))),
                 ([3], RNG.standard_normal((1, 3)))]
    vector_grads = [([1, 4], RNG.standard_normal(2)), ([0, 1, 2], RNG.standard_normal(3)),
                    ([], np.zeros(0))]
    tparams = [torch.tensor(table, requires_grad=True), torch.tensor(vector, requires_grad=True)]
    kparams = [kindle.tensor(table), kindle.tensor(vector)]
    kstate = [{"exp_avg": kindle.zeros_like(p), "exp_avg_sq": kindle.zeros_like(p), "step": 0}
              for p in kparams]
    topt = torch.optim.SparseAdam(tparams, lr=0.05, betas=(0.8, 0.95), maximize=maximize)
    for (rows, rvals), (idx, vvals) in zip(row_grads, vector_grads):
        tparams[0].grad = torch.sparse_coo_tensor([rows], rvals, (6, 3),
                                                  check_invariants=True)
        tparams[1].grad = torch.sparse_coo_tensor([idx], vvals, (5,), check_invariants=True)
        topt.step()
        for p, tp, st in zip(kparams, tparams, kstate):
            grad = tp.grad.coalesce()
            values = _to_kindle(grad._values())
            st["step"] += 1
            _sparse_adam_update(p, _to_kindle(grad._indices()),
                                values.neg() if maximize else values, st["exp_avg"],
                                st["exp_avg_sq"], st["step"], lr=0.05, beta1=0.8, beta2=0.95,
                                eps=1e-8)
    _assert_close(kparams, tparams, 1e-12, 1e-14)
    for st, tp in zip(kstate, tparams):
        ts = topt.state[tp]
        assert sorted(ts) == sorted(st)
        assert ts["step"] == st["step"]
        _assert_close([st["exp_avg"], st["exp_avg_sq"]], [ts["exp_avg"], ts["exp_avg_sq"]],
                      1e-12, 1e-14)
