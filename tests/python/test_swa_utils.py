"""kindle.optim.swa_utils against torch.optim.swa_utils: the same model trained the same way in
both libraries gives the same averaged weights, BatchNorm statistics and SWALR rates."""
import copy

import numpy as np
import pytest

import kindle
from kindle import nn
from kindle.optim import swa_utils

torch = pytest.importorskip("torch")


def _pair(seed=0):
    """A small conv + BatchNorm model in both libraries with the same weights."""
    def build(lib):
        return lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3), lib.nn.BatchNorm2d(3), lib.nn.ReLU(), lib.nn.Flatten(),
                                 lib.nn.Linear(12, 2))
    k, t = build(kindle), build(torch)
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for pk, pt in zip(k.parameters(), t.parameters()):
            v = rng.standard_normal(tuple(pt.shape)).astype(np.float32)
            pt.copy_(torch.from_numpy(v))
            pk.data.copy_(kindle.from_numpy(v.copy()))
    return k, t


def _batches(n=6, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((4, 2, 4, 4)).astype(np.float32) for _ in range(n)]


def _close(k, t, tol=1e-5):
    np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("how", ["swa", "ema", "ema_multi", "swa_multi", "buffers"])
def test_averaged_model_matches_torch(how):
    mk, mt = _pair()
    kw_k, kw_t = {}, {}
    if how == "ema":
        kw_k["avg_fn"], kw_t["avg_fn"] = swa_utils.get_ema_avg_fn(0.9), torch.optim.swa_utils.get_ema_avg_fn(0.9)
    elif how == "ema_multi":
        kw_k["multi_avg_fn"] = swa_utils.get_ema_multi_avg_fn(0.8)
        kw_t["multi_avg_fn"] = torch.optim.swa_utils.get_ema_multi_avg_fn(0.8)
    elif how == "swa_multi":
        kw_k["multi_avg_fn"], kw_t["multi_avg_fn"] = swa_utils.get_swa_multi_avg_fn(), \
            torch.optim.swa_utils.get_swa_multi_avg_fn()
    elif how == "buffers":
        kw_k["use_buffers"] = kw_t["use_buffers"] = True
    ak, at = swa_utils.AveragedModel(mk, **kw_k), torch.optim.swa_utils.AveragedModel(mt, **kw_t)
    ok, ot = kindle.optim.SGD(mk.parameters(), lr=0.1), torch.optim.SGD(mt.parameters(), lr=0.1)
    for x in _batches():
        for m, opt, lib in ((mk, ok, kindle), (mt, ot, torch)):
            opt.zero_grad()
            m(lib.from_numpy(x.copy())).pow(2).mean().backward()
            opt.step()
        ak.update_parameters(mk)
        at.update_parameters(mt)
    assert int(ak.n_averaged) == int(at.n_averaged) == 6
    for (nk, pk), (nt, pt) in zip(ak.state_dict().items(), at.state_dict().items()):
        assert nk == nt
        _close(pk.float(), pt.float())
    x = _batches(1, seed=5)[0]
    ak.eval()
    at.eval()
    _close(ak(kindle.from_numpy(x.copy())), at(torch.from_numpy(x)))
    # The average is a deep copy: the model itself is untouched by it.
    assert ak.module is not mk and not any(p is q for p, q in zip(ak.parameters(), mk.parameters()))


def test_update_bn_matches_torch_and_restores_state():
    mk, mt = _pair()
    data = _batches(5, seed=3)
    for m in (mk, mt):
        m.eval()
        m[1].momentum = 0.3
    swa_utils.update_bn([(kindle.from_numpy(x.copy()), 0) for x in data], mk)
    torch.optim.swa_utils.update_bn([(torch.from_numpy(x), 0) for x in data], mt)
    _close(mk[1].running_mean, mt[1].running_mean)
    _close(mk[1].running_var, mt[1].running_var)
    assert int(mk[1].num_batches_tracked) == int(mt[1].num_batches_tracked) == 5
    assert mk[1].momentum == 0.3 and not mk.training  # momentum and mode restored
    swa_utils.update_bn([], nn.Linear(2, 2))  # no BatchNorm: nothing to do


@pytest.mark.parametrize("strategy,epochs", [("cos", 5), ("linear", 3), ("cos", 0)])
def test_swalr_rates_match_torch(strategy, epochs):
    pk, pt = kindle.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
    ok = kindle.optim.SGD([{"params": [pk]}, {"params": [kindle.zeros(1, requires_grad=True)], "lr": 0.5}], lr=1.0)
    ot = torch.optim.SGD([{"params": [pt]}, {"params": [torch.zeros(1, requires_grad=True)], "lr": 0.5}], lr=1.0)
    sk = swa_utils.SWALR(ok, swa_lr=[0.05, 0.01], anneal_epochs=epochs, anneal_strategy=strategy)
    st = torch.optim.swa_utils.SWALR(ot, swa_lr=[0.05, 0.01], anneal_epochs=epochs, anneal_strategy=strategy)
    for _ in range(8):
        assert sk.get_last_lr() == pytest.approx(st.get_last_lr(), rel=1e-12)
        ok.step()
        ot.step()
        sk.step()
        st.step()
    state = sk.state_dict()
    assert "anneal_func" not in state and state["_anneal_strategy"] == strategy
    again = swa_utils.SWALR(kindle.optim.SGD([kindle.zeros(1, requires_grad=True)], lr=1.0), swa_lr=0.1)
    again.load_state_dict(copy.deepcopy(state))
    assert again.anneal_func(0.5) == sk.anneal_func(0.5)


def test_bad_arguments():
    m = nn.Linear(2, 2)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(m, avg_fn=swa_utils.get_swa_avg_fn(), multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    with pytest.raises(ValueError, match="Invalid decay value 1.5"):
        swa_utils.get_ema_avg_fn(1.5)
    opt = kindle.optim.SGD(m.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        swa_utils.SWALR(opt, swa_lr=0.01, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(opt, swa_lr=0.01, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length"):
        swa_utils.SWALR(opt, swa_lr=[0.1, 0.2])
    assert kindle.optim.swa_utils is swa_utils
