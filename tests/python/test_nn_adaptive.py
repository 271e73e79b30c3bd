"""nn.AdaptiveLogSoftmaxWithLoss against torch's: the same weights give the same outputs, loss,
log-probabilities, predictions and gradients, batched and not; the errors torch raises."""
import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")


def _pair(in_features, n_classes, cutoffs, **kw):
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, **kw).double()
    k = kindle.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, **kw).double()
    k.load_state_dict({n: kindle.tensor(v.detach().numpy()) for n, v in t.state_dict().items()})
    return k, t


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kw", [{}, {"div_value": 2.0, "head_bias": True}])
def test_matches_torch(kw):
    k, t = _pair(16, 30, [4, 10, 20], **kw)
    assert list(k.state_dict()) == list(t.state_dict())
    rng = np.random.default_rng(0)
    x = rng.standard_normal((9, 16))
    y = np.array([0, 3, 4, 9, 10, 19, 20, 29, 5])
    kx, tx = kindle.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    kout, tout = k(kx, kindle.tensor(y)), t(tx, torch.tensor(y))
    _close(kout.output, tout.output)
    _close(kout.loss, tout.loss)
    kout.loss.backward()
    tout.loss.backward()
    _close(kx.grad, tx.grad)
    for (n, kp), (_, tp) in zip(k.named_parameters(), t.named_parameters()):
        _close(kp.grad, tp.grad)
    _close(k.log_prob(kx), t.log_prob(tx))
    assert k.predict(kx).tolist() == t.predict(tx).tolist()
    # unbatched
    k1, t1 = k(kx[0], kindle.tensor(y[0])), t(tx[0], torch.tensor(y[0]))
    _close(k1.output, t1.output)
    _close(k.log_prob(kx[0]), t.log_prob(tx[:1])[0])  # (torch's log_prob takes 2-D input only)


def test_errors_match_torch():
    k, t = _pair(8, 10, [3])
    x = kindle.randn(4, 8, dtype=kindle.float64)
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\]"):
        k(x, kindle.tensor([0, 1, 2, 10]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        k(x, kindle.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        k(x, kindle.zeros(4, 1, dtype=kindle.int64))
    with pytest.raises(ValueError, match="cutoffs should be a sequence"):
        kindle.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 3])
