"""kindle.nn RNN/LSTM/GRU, the cells and nn.utils.rnn against torch: with torch's weights loaded,
the same outputs, final states, input and parameter gradients (float32); the same parameter
names, shapes, repr and default initialisation range; packing and padding; argument errors."""
import math
import warnings

import numpy as np
import pytest

import kindle
import kindle.nn as nn
from kindle.nn.utils import rnn as rnn_utils

RTOL, ATOL = 1e-4, 1e-5


def _k(t, requires_grad=False):
    out = kindle.from_numpy(t.detach().numpy().copy())
    return out.requires_grad_() if requires_grad else out


def _close(k, t, what):
    np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg=what)


def _pair(torch, cls_name, *args, **kwargs):
    """The same module in both libraries, kindle's holding torch's weights."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls_name)(*args, **kwargs)
    km = getattr(nn, cls_name)(*args, **kwargs)
    km.load_state_dict({k: _k(v) for k, v in tm.state_dict().items()})
    return km, tm


def _compare_params(km, tm):
    kp, tp = dict(km.named_parameters()), dict(tm.named_parameters())
    assert list(kp) == list(tp)
    for name in tp:
        _close(kp[name].grad, tp[name].grad, f"grad of {name}")


RNN_CASES = [
    # name, class, kwargs, (batched, h0 given)
    ("rnn-tanh", "RNN", {}, (True, False)),
    ("rnn-relu-2l-h0", "RNN", {"num_layers": 2, "nonlinearity": "relu"}, (True, True)),
    ("rnn-bi-bf-nobias", "RNN", {"bidirectional": True, "batch_first": True, "bias": False}, (True, True)),
    ("rnn-unbatched", "RNN", {"num_layers": 2}, (False, True)),
    ("lstm", "LSTM", {}, (True, False)),
    ("lstm-2l-bi-h0", "LSTM", {"num_layers": 2, "bidirectional": True}, (True, True)),
    ("lstm-bf-nobias", "LSTM", {"batch_first": True, "bias": False}, (True, True)),
    ("lstm-unbatched-bi", "LSTM", {"bidirectional": True}, (False, True)),
    ("lstm-unbatched-noh0", "LSTM", {"batch_first": True}, (False, False)),
    ("gru", "GRU", {}, (True, False)),
    ("gru-2l-bi-bf-h0", "GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}, (True, True)),
    ("gru-unbatched", "GRU", {"num_layers": 2}, (False, False)),
    ("gru-eval-dropout", "GRU", {"num_layers": 2, "dropout": 0.5}, (True, True)),
]


@pytest.mark.parametrize("case", RNN_CASES, ids=[c[0] for c in RNN_CASES])
def test_recurrent_module_matches_torch(case):
    torch = pytest.importorskip("torch")
    name, cls, kwargs, (batched, with_h0) = case
    km, tm = _pair(torch, cls, 4, 6, **kwargs)
    if "dropout" in kwargs:  # dropout acts only in training; eval must match exactly
        km.eval()
        tm.eval()
    lstm = cls == "LSTM"
    dirs = 2 if kwargs.get("bidirectional") else 1
    layers = kwargs.get("num_layers", 1)
    T, B = 5, 3
    shape = ((B, T, 4) if kwargs.get("batch_first") else (T, B, 4)) if batched else (T, 4)
    x = torch.randn(*shape, requires_grad=True)
    kx = _k(x, True)
    hshape = (layers * dirs, B, 6) if batched else (layers * dirs, 6)
    targs, kargs = [x], [kx]
    if with_h0:
        h0 = torch.randn(*hshape, requires_grad=True)
        kh0 = _k(h0, True)
        if lstm:
            c0 = torch.randn(*hshape, requires_grad=True)
            kc0 = _k(c0, True)
            targs.append((h0, c0))
            kargs.append((kh0, kc0))
        else:
            targs.append(h0)
            kargs.append(kh0)
    tout, thid = tm(*targs)
    kout, khid = km(*kargs)
    _close(kout, tout, "output")
    assert tuple(kout.shape) == tuple(tout.shape)
    tstates = thid if lstm else (thid,)
    kstates = khid if lstm else (khid,)
    assert isinstance(khid, tuple) == lstm
    for i, (ks, ts) in enumerate(zip(kstates, tstates)):
        assert tuple(ks.shape) == tuple(ts.shape)
        _close(ks, ts, f"state {i}")
    # a loss that reaches every output, weighted so no gradient is a plain sum
    g = torch.randn(tout.shape)
    gs = [torch.randn(ts.shape) for ts in tstates]
    tloss = (tout * g).sum() + sum((ts * gi).sum() for ts, gi in zip(tstates, gs))
    kloss = (kout * _k(g)).sum() + sum((ks * _k(gi)).sum() for ks, gi in zip(kstates, gs))
    tloss.backward()
    kloss.backward()
    _close(kx.grad, x.grad, "input grad")
    if with_h0:
        _close(kh0.grad, h0.grad, "h0 grad")
        if lstm:
            _close(kc0.grad, c0.grad, "c0 grad")
    _compare_params(km, tm)


@pytest.mark.parametrize("cls,kwargs", [("RNN", {"num_layers": 3, "nonlinearity": "relu", "dropout": 0.2}),
                                        ("LSTM", {"bidirectional": True, "bias": False, "batch_first": True}),
                                        ("LSTM", {"proj_size": 2, "num_layers": 2}),
                                        ("GRU", {"num_layers": 2, "bidirectional": True})])
def test_parameters_repr_and_init_match_torch(cls, kwargs):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = getattr(torch.nn, cls)(5, 8, **kwargs)
        km = getattr(nn, cls)(5, 8, **kwargs)
    assert repr(km) == repr(tm)
    tsd, ksd = tm.state_dict(), km.state_dict()
    assert list(ksd) == list(tsd)
    for key in tsd:
        assert tuple(ksd[key].shape) == tuple(tsd[key].shape), key
    assert km._flat_weights_names == tm._flat_weights_names
    assert [[tuple(p.shape) for p in ws] for ws in km.all_weights] == \
        [[tuple(p.shape) for p in ws] for ws in tm.all_weights]
    bound = 1 / math.sqrt(8)
    values = np.concatenate([p.detach().numpy().ravel() for p in km.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert values.std() > bound / 3  # spread over the interval, not a constant
    km.flatten_parameters()  # a no-op, as on CPU in torch


def test_flat_weights_follow_replaced_parameters():
    torch = pytest.importorskip("torch")
    km, tm = _pair(torch, "GRU", 3, 4)
    x = torch.randn(2, 1, 3)
    km.weight_hh_l0 = nn.Parameter(_k(tm.weight_hh_l0 * 2))
    with torch.no_grad():
        tm.weight_hh_l0.mul_(2)
    _close(km(_k(x))[0], tm(x)[0], "after replacing weight_hh_l0")


@pytest.mark.parametrize("cfg", [dict(num_layers=1), dict(num_layers=2, bidirectional=True),
                                 dict(num_layers=2, batch_first=True, bias=False),
                                 dict(num_layers=1, bidirectional=True, batch_first=True)],
                         ids=["1", "2bi", "2bf_nobias", "1bi_bf"])
@pytest.mark.parametrize("lengths", [None, [5, 3, 4]], ids=["padded", "packed"])
def test_lstm_with_projections_matches_torch(cfg, lengths):
    torch = pytest.importorskip("torch")
    km, tm = _pair(torch, "LSTM", 4, 6, proj_size=3, **cfg)
    assert tuple(km.weight_hr_l0.shape) == (3, 6) and tuple(km.weight_hh_l0.shape) == (24, 3)
    x = torch.randn(3, 5, 4) if cfg.get("batch_first") else torch.randn(5, 3, 4)
    results = []
    for lib, m, inp in ((kindle, km, _k(x)), (torch, tm, x)):
        if lengths is not None:
            inp = lib.nn.utils.rnn.pack_padded_sequence(inp, lengths, batch_first=m.batch_first, enforce_sorted=False)
        out, (h, c) = m(inp)
        if lengths is not None:
            out = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first=m.batch_first)[0]
        (out.sum() + h.square().sum() + c.sum()).backward()
        results.append((out, h, c))
    for what, k, t in zip(("output", "h_n", "c_n"), *results):
        _close(k, t, what)
    _compare_params(km, tm)


def test_dropout_between_layers_in_training():
    kindle.manual_seed(0)
    m = nn.LSTM(3, 16, num_layers=2, dropout=0.5)
    x = kindle.randn(4, 2, 3)
    a, b = m(x)[0], m(x)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    m.eval()
    np.testing.assert_array_equal(m(x)[0].detach().numpy(), m(x)[0].detach().numpy())


def test_double_module():
    torch = pytest.importorskip("torch")
    km, tm = _pair(torch, "LSTM", 3, 4, num_layers=2)
    km.double()
    tm.double()
    x = torch.randn(5, 2, 3, dtype=torch.float64)
    out = km(_k(x))[0]
    assert out.dtype == kindle.float64
    np.testing.assert_allclose(out.detach().numpy(), tm(x)[0].detach().numpy(), rtol=1e-10, atol=1e-12)


def test_recurrent_argument_errors():
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="dropout should be a number"):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(3, 0)
    with pytest.raises(TypeError, match="input_size should be of type int"):
        nn.GRU(3.0, 4)
    with pytest.raises(TypeError, match="batch_first should be of type bool"):
        nn.GRU(3, 4, batch_first=1)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.RNN(3, 4, dropout=0.5)
    m, lstm = nn.GRU(3, 4), nn.LSTM(3, 4)
    with pytest.raises(ValueError, match="GRU: Expected input to be 2D or 3D, got 4D"):
        m(kindle.randn(1, 2, 3, 3))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
        m(kindle.randn(2, 1, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 3, 4\]"):
        m(kindle.randn(5, 2, 3), kindle.zeros(1, 3, 4))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx should also be 3-D but got 2-D tensor"):
        m(kindle.randn(5, 2, 3), kindle.zeros(1, 4))
    with pytest.raises(RuntimeError, match="hx and cx should also be 2-D but got \\(3-D, 2-D\\) tensors"):
        lstm(kindle.randn(5, 3), (kindle.zeros(1, 1, 4), kindle.zeros(1, 4)))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(1, 2, 4\), got \[1, 2, 5\]"):
        lstm(kindle.randn(5, 2, 3), (kindle.zeros(1, 2, 4), kindle.zeros(1, 2, 5)))
    with pytest.raises(ValueError, match="does not match weight dtype"):
        m(kindle.randn(5, 2, 3, dtype=kindle.float64))


CELL_CASES = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu", "bias": False}), ("LSTMCell", {}),
              ("LSTMCell", {"bias": False}), ("GRUCell", {})]


@pytest.mark.parametrize("cls,kwargs", CELL_CASES)
@pytest.mark.parametrize("batched,with_h", [(True, True), (True, False), (False, True)])
def test_cell_matches_torch(cls, kwargs, batched, with_h):
    torch = pytest.importorskip("torch")
    km, tm = _pair(torch, cls, 3, 5, **kwargs)
    assert repr(km) == repr(tm)
    assert list(km.state_dict()) == list(tm.state_dict())
    lstm = cls == "LSTMCell"
    x = torch.randn(*((4, 3) if batched else (3,)), requires_grad=True)
    kx = _k(x, True)
    hshape = (4, 5) if batched else (5,)
    targs, kargs, hs = [x], [kx], []
    if with_h:
        hs = [torch.randn(*hshape, requires_grad=True) for _ in range(2 if lstm else 1)]
        khs = [_k(h, True) for h in hs]
        targs.append(tuple(hs) if lstm else hs[0])
        kargs.append(tuple(khs) if lstm else khs[0])
    tout, kout = tm(*targs), km(*kargs)
    touts = tout if lstm else (tout,)
    kouts = kout if lstm else (kout,)
    loss_t, loss_k = 0, 0
    for i, (ko, to) in enumerate(zip(kouts, touts)):
        assert tuple(ko.shape) == tuple(to.shape)
        _close(ko, to, f"output {i}")
        g = torch.randn(to.shape)
        loss_t, loss_k = loss_t + (to * g).sum(), loss_k + (ko * _k(g)).sum()
    loss_t.backward()
    loss_k.backward()
    _close(kx.grad, x.grad, "input grad")
    for h, kh in zip(hs, khs if with_h else []):
        _close(kh.grad, h.grad, "state grad")
    _compare_params(km, tm)


def test_cell_errors_and_init():
    m = nn.GRUCell(3, 16)
    bound = 1 / 4
    values = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert values.min() >= -bound and values.max() <= bound and values.std() > bound / 3
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D instead"):
        m(kindle.randn(1, 2, 3))
    with pytest.raises(ValueError, match="GRUCell: Expected hidden to be 1D or 2D, got 3D instead"):
        m(kindle.randn(2, 3), kindle.zeros(1, 2, 16))
    with pytest.raises(ValueError, match=r"LSTMCell: Expected hx\[1\] to be 1D or 2D, got 3D instead"):
        nn.LSTMCell(3, 4)(kindle.randn(2, 3), (kindle.zeros(2, 4), kindle.zeros(1, 2, 4)))
    with pytest.raises(RuntimeError, match="input_size"):
        m(kindle.randn(2, 5))


# ---- nn.utils.rnn

def _seqs(torch, lengths, feat=3):
    ts = [torch.randn(n, feat, requires_grad=True) for n in lengths]
    return ts, [_k(t, True) for t in ts]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch(batch_first, padding_side):
    torch = pytest.importorskip("torch")
    ts, ks = _seqs(torch, [2, 4, 1])
    tp = torch.nn.utils.rnn.pad_sequence(ts, batch_first=batch_first, padding_value=-1.5, padding_side=padding_side)
    kp = rnn_utils.pad_sequence(ks, batch_first=batch_first, padding_value=-1.5, padding_side=padding_side)
    np.testing.assert_array_equal(kp.detach().numpy(), tp.detach().numpy())
    g = torch.randn(tp.shape)
    (tp * g).sum().backward()
    (kp * _k(g)).sum().backward()
    for k, t in zip(ks, ts):
        np.testing.assert_array_equal(k.grad.numpy(), t.grad.numpy())
    back = rnn_utils.unpad_sequence(rnn_utils.pad_sequence(ks, batch_first), kindle.tensor([2, 4, 1]), batch_first)
    for k, b in zip(ks, back):
        np.testing.assert_array_equal(b.detach().numpy(), k.detach().numpy())


@pytest.mark.parametrize("enforce_sorted,lengths", [(True, [5, 3, 3, 1]), (False, [2, 5, 1, 5])])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_pad_packed_match_torch(enforce_sorted, lengths, batch_first):
    torch = pytest.importorskip("torch")
    B, T = len(lengths), max(lengths)
    x = torch.randn(*((B, T, 2) if batch_first else (T, B, 2)), requires_grad=True)
    kx = _k(x, True)
    tp = torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor(lengths), batch_first, enforce_sorted)
    kp = rnn_utils.pack_padded_sequence(kx, lengths, batch_first, enforce_sorted)
    assert isinstance(kp, rnn_utils.PackedSequence)
    np.testing.assert_array_equal(kp.data.detach().numpy(), tp.data.detach().numpy())
    assert kp.batch_sizes.tolist() == tp.batch_sizes.tolist()
    for ki, ti in ((kp.sorted_indices, tp.sorted_indices), (kp.unsorted_indices, tp.unsorted_indices)):
        assert (ki is None) == (ti is None)
        if ti is not None:
            assert ki.tolist() == ti.tolist()
    tpad, tlen = torch.nn.utils.rnn.pad_packed_sequence(tp, batch_first, padding_value=9.0, total_length=T + 2)
    kpad, klen = rnn_utils.pad_packed_sequence(kp, batch_first, padding_value=9.0, total_length=T + 2)
    np.testing.assert_array_equal(kpad.detach().numpy(), tpad.detach().numpy())
    assert klen.tolist() == tlen.tolist() and klen.dtype == kindle.int64
    g = torch.randn(tpad.shape)
    (tpad * g).sum().backward()
    (kpad * _k(g)).sum().backward()
    np.testing.assert_array_equal(kx.grad.numpy(), x.grad.numpy())


def test_pack_sequence_round_trip_and_errors():
    ks = [kindle.randn(n, 2) for n in (3, 1, 4)]
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        rnn_utils.pack_sequence(ks)
    packed = rnn_utils.pack_sequence(ks, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 2, 2, 1]
    for a, b in zip(ks, rnn_utils.unpack_sequence(packed)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert packed.double().data.dtype == kindle.float64
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        rnn_utils.pad_packed_sequence(packed, total_length=2)
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        rnn_utils.pack_padded_sequence(kindle.randn(3, 2, 1), [3, 0])
    with pytest.raises(RuntimeError, match="Expected `len\\(lengths\\)` to be equal to batch_size"):  # as torch 2.13
        rnn_utils.pack_padded_sequence(kindle.randn(3, 2, 1), [3])


@pytest.mark.parametrize("cls,kwargs", [("LSTM", {"bidirectional": True, "num_layers": 2}),
                                        ("GRU", {"bidirectional": True}), ("RNN", {"nonlinearity": "relu"})])
def test_recurrent_modules_on_packed_sequences(cls, kwargs):
    torch = pytest.importorskip("torch")
    km, tm = _pair(torch, cls, 3, 4, **kwargs)
    lengths = [2, 5, 1, 5, 3]
    ts, ks = _seqs(torch, lengths)
    tp = torch.nn.utils.rnn.pack_sequence(ts, enforce_sorted=False)
    kp = rnn_utils.pack_sequence(ks, enforce_sorted=False)
    dirs = 2 if kwargs.get("bidirectional") else 1
    h0 = torch.randn(kwargs.get("num_layers", 1) * dirs, len(lengths), 4)
    lstm = cls == "LSTM"
    thx = (h0, torch.randn(h0.shape)) if lstm else h0
    khx = (_k(thx[0]), _k(thx[1])) if lstm else _k(h0)
    tout, thid = tm(tp, thx)
    kout, khid = km(kp, khx)
    assert isinstance(kout, rnn_utils.PackedSequence)
    assert kout.batch_sizes.tolist() == tout.batch_sizes.tolist()
    assert kout.unsorted_indices.tolist() == tout.unsorted_indices.tolist()
    _close(kout.data, tout.data, "packed output")
    tstates, kstates = (thid, khid) if lstm else ((thid,), (khid,))
    for ks_, ts_ in zip(kstates, tstates):
        _close(ks_, ts_, "final state")
    g = torch.randn(tout.data.shape)
    gh = torch.randn(tstates[0].shape)
    ((tout.data * g).sum() + (tstates[0] * gh).sum()).backward()
    ((kout.data * _k(g)).sum() + (kstates[0] * _k(gh)).sum()).backward()
    for k, t in zip(ks, ts):
        _close(k.grad, t.grad, "sequence grad")
    _compare_params(km, tm)
    # no initial state: zeros, as torch
    _close(km(kp)[0].data, tm(tp)[0].data, "packed output without hx")
