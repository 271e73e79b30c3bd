"""kindle.optim.lr_scheduler against torch.optim.lr_scheduler: for each scheduler (and several
option sets) the learning rates of two parameter groups over 100 steps equal torch's, as do the
momenta/betas the cyclic schedulers set; state_dict round trips; step(epoch) closed forms; the
constructors' errors; the step-order warning, and silence in normal use."""
import math
import warnings

import pytest

import kindle
from kindle import optim
from kindle.optim import lr_scheduler as K

STEPS = 100


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _optimizer(lib, mod, kind="SGD"):
    p1, p2 = lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)
    groups = [{"params": [p1]}, {"params": [p2], "lr": 0.05}]
    if kind == "Adam":
        return mod.Adam(groups, lr=0.1)
    return mod.SGD(groups, lr=0.1, momentum=0.9)


def _trace(opt, sched, steps=STEPS, metrics=None):
    """[(lrs, momenta)] after construction and after every step; optimizer.step() first."""
    def snapshot():
        lrs = list(sched.get_last_lr())
        moms = [g["betas"][0] if "betas" in g else g.get("momentum") for g in opt.param_groups]
        return lrs, moms

    out = [snapshot()]
    for i in range(steps):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        out.append(snapshot())
    return out


def _assert_same(k, t):
    assert len(k) == len(t)
    for i, ((klr, kmom), (tlr, tmom)) in enumerate(zip(k, t)):
        assert klr == pytest.approx(tlr, rel=1e-12, abs=1e-15), f"lr at step {i}"
        assert kmom == pytest.approx(tmom, rel=1e-12, abs=1e-15), f"momentum at step {i}"


def _flat(seqs):
    return [x for seq in seqs for x in seq]


def _lambda(epoch):
    return 0.97 ** epoch


SCHEDULERS = [
    ("LambdaLR", lambda o: {"lr_lambda": _lambda}),
    ("LambdaLR", lambda o: {"lr_lambda": [_lambda, lambda e: 1.0 / (e + 1)]}),
    ("MultiplicativeLR", lambda o: {"lr_lambda": lambda e: 0.95}),
    ("StepLR", lambda o: {"step_size": 7}),
    ("StepLR", lambda o: {"step_size": 10, "gamma": 0.5}),
    ("MultiStepLR", lambda o: {"milestones": [10, 30, 30, 80], "gamma": 0.3}),
    ("ConstantLR", lambda o: {}),
    ("ConstantLR", lambda o: {"factor": 0.5, "total_iters": 40}),
    ("LinearLR", lambda o: {}),
    ("LinearLR", lambda o: {"start_factor": 0.1, "end_factor": 0.7, "total_iters": 60}),
    ("ExponentialLR", lambda o: {"gamma": 0.96}),
    ("PolynomialLR", lambda o: {"total_iters": 50, "power": 2.0}),
    ("CosineAnnealingLR", lambda o: {"T_max": 30}),
    ("CosineAnnealingLR", lambda o: {"T_max": 17, "eta_min": 0.001}),
    ("CosineAnnealingWarmRestarts", lambda o: {"T_0": 10}),
    ("CosineAnnealingWarmRestarts", lambda o: {"T_0": 5, "T_mult": 2, "eta_min": 0.002}),
    ("CyclicLR", lambda o: {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 8}),
    ("CyclicLR", lambda o: {"base_lr": [0.01, 0.02], "max_lr": 0.2, "step_size_up": 5,
                            "step_size_down": 9, "mode": "triangular2"}),
    ("CyclicLR", lambda o: {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 6, "mode": "exp_range",
                            "gamma": 0.98, "base_momentum": 0.7, "max_momentum": 0.95}),
    ("OneCycleLR", lambda o: {"max_lr": 0.5, "total_steps": STEPS}),
    ("OneCycleLR", lambda o: {"max_lr": [0.5, 0.2], "epochs": 10, "steps_per_epoch": 10,
                              "anneal_strategy": "linear", "pct_start": 0.25}),
    ("OneCycleLR", lambda o: {"max_lr": 0.3, "total_steps": STEPS, "three_phase": True,
                              "div_factor": 10.0, "final_div_factor": 100.0}),
    ("OneCycleLR", lambda o: {"max_lr": 0.3, "total_steps": STEPS, "cycle_momentum": False}),
]


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
@pytest.mark.parametrize("name,make_kwargs", SCHEDULERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SCHEDULERS)])
def test_lr_sequence_matches_torch(torch, name, make_kwargs, kind):
    traces = []
    for lib, mod, sched_mod in ((kindle, optim, K), (torch, torch.optim, torch.optim.lr_scheduler)):
        opt = _optimizer(lib, mod, kind)
        sched = getattr(sched_mod, name)(opt, **make_kwargs(opt))
        traces.append(_trace(opt, sched))
    _assert_same(*traces)
    assert len({tuple(lrs) for lrs, _ in traces[1]}) > 1  # the schedule changes the lr


def _composites(lib_sched, opt):
    return {
        "sequential": lambda: lib_sched.SequentialLR(
            opt, [lib_sched.LinearLR(opt, start_factor=0.1, total_iters=10),
                  lib_sched.CosineAnnealingLR(opt, T_max=40),
                  lib_sched.ExponentialLR(opt, gamma=0.9)], milestones=[10, 50]),
        "chained": lambda: lib_sched.ChainedScheduler(
            [lib_sched.ConstantLR(opt, factor=0.1, total_iters=5),
             lib_sched.ExponentialLR(opt, gamma=0.95)]),
        "chained-cosine-step": lambda: lib_sched.ChainedScheduler(
            [lib_sched.CosineAnnealingLR(opt, T_max=25), lib_sched.StepLR(opt, 9, 0.5)]),
    }


@pytest.mark.parametrize("which", ["sequential", "chained", "chained-cosine-step"])
def test_composite_schedulers_match_torch(torch, which):
    traces = []
    for lib, mod, sched_mod in ((kindle, optim, K), (torch, torch.optim, torch.optim.lr_scheduler)):
        opt = _optimizer(lib, mod)
        sched = _composites(sched_mod, opt)[which]()
        traces.append(_trace(opt, sched))
    _assert_same(*traces)


PLATEAU = [
    {},
    {"mode": "max", "factor": 0.5, "patience": 3},
    {"threshold_mode": "abs", "threshold": 0.05, "patience": 2, "cooldown": 4, "min_lr": 0.004},
    {"mode": "max", "threshold_mode": "abs", "patience": 0, "min_lr": [0.01, 0.002], "eps": 1e-3},
]


@pytest.mark.parametrize("kwargs", PLATEAU)
def test_reduce_lr_on_plateau_matches_torch(torch, kwargs):
    # A metric that improves, stalls, improves again and oscillates.
    metrics = [1.0 / (1 + i) if i < 20 else 0.05 + 0.01 * math.sin(i) * (i % 7 == 0)
               for i in range(STEPS)]
    metrics[60:70] = [0.01 - 0.001 * j for j in range(10)]
    traces = []
    for lib, mod, sched_mod in ((kindle, optim, K), (torch, torch.optim, torch.optim.lr_scheduler)):
        opt = _optimizer(lib, mod)
        sched = sched_mod.ReduceLROnPlateau(opt, **kwargs)
        traces.append(_trace(opt, sched, metrics=[lib.tensor(m) for m in metrics]))
    _assert_same(*traces)
    assert traces[0][-1][0] != traces[0][0][0]


def test_step_with_epoch_uses_closed_form(torch):
    for name, kwargs in (("StepLR", {"step_size": 3, "gamma": 0.5}), ("ExponentialLR", {"gamma": 0.9}),
                         ("CosineAnnealingLR", {"T_max": 10}), ("MultiStepLR", {"milestones": [2, 5]}),
                         ("LinearLR", {}), ("ConstantLR", {}), ("PolynomialLR", {"total_iters": 8})):
        lrs = []
        for lib, mod, sched_mod in ((kindle, optim, K), (torch, torch.optim, torch.optim.lr_scheduler)):
            opt = _optimizer(lib, mod)
            sched = getattr(sched_mod, name)(opt, **kwargs)
            seq = []
            for epoch in (4, 1, 7, 7, 12):
                opt.step()
                with pytest.warns(UserWarning, match="epoch parameter"):
                    sched.step(epoch)
                seq.append(sched.get_last_lr())
            lrs.append(seq)
        assert _flat(lrs[0]) == pytest.approx(_flat(lrs[1]), rel=1e-12), name


def test_warm_restarts_fractional_epochs(torch):
    seqs = []
    for lib, mod, sched_mod in ((kindle, optim, K), (torch, torch.optim, torch.optim.lr_scheduler)):
        opt = _optimizer(lib, mod)
        sched = sched_mod.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.001)
        seq = []
        for i in range(40):
            sched.step(i * 0.37)  # the documented per-batch use: no deprecation warning
            seq.append(sched.get_last_lr())
        seqs.append(seq)
    assert _flat(seqs[0]) == pytest.approx(_flat(seqs[1]), rel=1e-12)


@pytest.mark.parametrize("name,make_kwargs", [s for s in SCHEDULERS if s[0] != "LambdaLR"][::3])
def test_state_dict_round_trip(name, make_kwargs):
    opt = _optimizer(kindle, optim)
    sched = getattr(K, name)(opt, **make_kwargs(opt))
    full = _trace(opt, sched, steps=60)

    opt = _optimizer(kindle, optim)
    sched = getattr(K, name)(opt, **make_kwargs(opt))
    _trace(opt, sched, steps=30)
    opt_state, sched_state = opt.state_dict(), sched.state_dict()
    assert "optimizer" not in sched_state and sched_state["last_epoch"] == 30

    opt2 = _optimizer(kindle, optim)
    sched2 = getattr(K, name)(opt2, **make_kwargs(opt2))
    sched2.load_state_dict(sched_state)
    opt2.load_state_dict(opt_state)
    rest = _trace(opt2, sched2, steps=30)
    _assert_same(rest, full[30:])


def test_composite_state_dict_round_trip():
    opt = _optimizer(kindle, optim)
    sched = _composites(K, opt)["sequential"]()
    full = _trace(opt, sched, steps=60)
    opt = _optimizer(kindle, optim)
    sched = _composites(K, opt)["sequential"]()
    _trace(opt, sched, steps=25)
    sd, osd = sched.state_dict(), opt.state_dict()
    assert len(sd["_schedulers"]) == 3 and "optimizer" not in sd["_schedulers"][0]
    opt2 = _optimizer(kindle, optim)
    sched2 = _composites(K, opt2)["sequential"]()
    sched2.load_state_dict(sd)
    opt2.load_state_dict(osd)
    _assert_same(_trace(opt2, sched2, steps=35), full[25:])


def test_lambda_state_dict_saves_callable_objects_only():
    class Decay:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, epoch):
            return self.rate ** epoch

    opt = _optimizer(kindle, optim)
    sched = K.LambdaLR(opt, [Decay(0.9), lambda e: 1.0])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.9}, None]
    other = K.LambdaLR(_optimizer(kindle, optim), [Decay(0.5), lambda e: 1.0])
    other.load_state_dict(sd)
    assert other.lr_lambdas[0].rate == 0.9


def test_resume_with_last_epoch(torch):
    lrs = []
    for lib, mod, sched_mod in ((kindle, optim, K), (torch, torch.optim, torch.optim.lr_scheduler)):
        opt = _optimizer(lib, mod)
        with pytest.raises(KeyError, match="initial_lr"):
            sched_mod.StepLR(opt, 5, last_epoch=10)
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"]
        sched = sched_mod.CosineAnnealingLR(opt, T_max=20, last_epoch=10)
        lrs.append([lrs_ for lrs_, _ in _trace(opt, sched, steps=20)])
    assert _flat(lrs[0]) == pytest.approx(_flat(lrs[1]), rel=1e-12)


def test_initial_lr_and_base_lrs():
    opt = _optimizer(kindle, optim)
    sched = K.StepLR(opt, 2)
    assert sched.base_lrs == [0.1, 0.05] and sched.last_epoch == 0
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05]
    assert K._LRScheduler is K.LRScheduler


def test_tensor_lr_is_updated_in_place(torch):
    out = []
    for lib, mod, sched_mod in ((kindle, optim, K), (torch, torch.optim, torch.optim.lr_scheduler)):
        lr = lib.tensor(0.1)
        opt = mod.SGD([lib.zeros(2, requires_grad=True)], lr=lr)
        sched = sched_mod.ExponentialLR(opt, gamma=0.5)
        opt.step()
        sched.step()
        assert opt.param_groups[0]["lr"] is lr
        out.append(float(lr))
    assert out[0] == pytest.approx(out[1]) == 0.05


ERRORS = [
    (TypeError, "is not an Optimizer", lambda o: K.StepLR(object(), 3)),
    (ValueError, "Constant multiplicative factor", lambda o: K.ConstantLR(o, factor=1.5)),
    (ValueError, "Starting multiplicative factor", lambda o: K.LinearLR(o, start_factor=0)),
    (ValueError, "Ending multiplicative factor", lambda o: K.LinearLR(o, end_factor=2)),
    (ValueError, "Expected 2 lr_lambdas, but got 1", lambda o: K.LambdaLR(o, [_lambda])),
    (TypeError, "lr_lambda should be a function", lambda o: K.MultiplicativeLR(o, 0.9)),
    (ValueError, "Factor should be < 1.0", lambda o: K.ReduceLROnPlateau(o, factor=1.0)),
    (ValueError, "mode foo is unknown", lambda o: K.ReduceLROnPlateau(o, mode="foo")),
    (ValueError, "threshold mode x is unknown", lambda o: K.ReduceLROnPlateau(o, threshold_mode="x")),
    (ValueError, "expected 2 min_lrs, got 3", lambda o: K.ReduceLROnPlateau(o, min_lr=[0, 0, 0])),
    (ValueError, "Expected positive integer T_0", lambda o: K.CosineAnnealingWarmRestarts(o, T_0=0)),
    (ValueError, "Expected integer T_mult >= 1", lambda o: K.CosineAnnealingWarmRestarts(o, 2, T_mult=0)),
    (ValueError, "You must define either total_steps", lambda o: K.OneCycleLR(o, 0.1)),
    (ValueError, "Expected positive integer total_steps", lambda o: K.OneCycleLR(o, 0.1, total_steps=0)),
    (ValueError, "Expected float between 0 and 1 pct_start", lambda o: K.OneCycleLR(o, 0.1, 10, pct_start=2.0)),
    (ValueError, "anneal_strategy must be one of", lambda o: K.OneCycleLR(o, 0.1, 10, anneal_strategy="exp")),
    (ValueError, "max_lr must have the same length", lambda o: K.OneCycleLR(o, [0.1], 10)),
    (ValueError, "mode is invalid and scale_fn is None", lambda o: K.CyclicLR(o, 0.01, 0.1, mode="x")),
    (ValueError, "expects at least one scheduler", lambda o: K.SequentialLR(o, [], [])),
    (ValueError, "expects number of schedulers provided to be one more",
     lambda o: K.SequentialLR(o, [K.StepLR(o, 2)], [3])),
    (ValueError, "does not support `ReduceLROnPlateau`",
     lambda o: K.ChainedScheduler([K.ReduceLROnPlateau(o)])),
    (ValueError, "expects all schedulers to belong to the same optimizer",
     lambda o: K.ChainedScheduler([K.StepLR(o, 2), K.StepLR(_optimizer(kindle, optim), 2)])),
]


@pytest.mark.parametrize("exc,message,build", ERRORS, ids=[m for _, m, _ in ERRORS])
def test_errors(exc, message, build):
    with pytest.raises(exc, match=message):
        build(_optimizer(kindle, optim))


def test_cycle_momentum_needs_momentum():
    p = kindle.zeros(2, requires_grad=True)
    opt = optim.Adagrad([p])
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        K.OneCycleLR(opt, 0.1, total_steps=10)
    K.OneCycleLR(opt, 0.1, total_steps=10, cycle_momentum=False)


def test_one_cycle_overstep(torch):
    opt = _optimizer(kindle, optim)
    sched = K.OneCycleLR(opt, 0.1, total_steps=3)
    for _ in range(3):
        opt.step()
        sched.step()
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total steps is 3"):
        sched.step()


def test_warns_when_scheduler_steps_before_optimizer():
    opt = _optimizer(kindle, optim)
    sched = K.StepLR(opt, 3)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()


def test_get_lr_outside_step_warns():
    sched = K.StepLR(_optimizer(kindle, optim), 3)
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()


def test_no_warnings_in_normal_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, make_kwargs in SCHEDULERS:
            opt = _optimizer(kindle, optim)
            _trace(opt, getattr(K, name)(opt, **make_kwargs(opt)), steps=20)
        for which in ("sequential", "chained"):
            opt = _optimizer(kindle, optim)
            _trace(opt, _composites(K, opt)[which](), steps=20)
        opt = _optimizer(kindle, optim)
        _trace(opt, K.ReduceLROnPlateau(opt), steps=20, metrics=[1.0] * 20)
