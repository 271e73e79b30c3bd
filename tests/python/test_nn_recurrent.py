"""The recurrent kernels (kindle._C._nn.rnn and the cells) against torch.nn's RNN modules:
outputs, final states and gradients, for every mode, bidirectional, batch_first, several layers."""
import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")

MODES = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU, "RNN_TANH": torch.nn.RNN, "RNN_RELU": torch.nn.RNN}


def _k(t):
    return kindle.tensor(t.detach().numpy())


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("layers,bidirectional,batch_first,bias", [(1, False, False, True), (2, True, False, True),
                                                                  (2, False, True, False), (1, True, True, True)])
def test_rnn_matches_torch(mode, layers, bidirectional, batch_first, bias):
    torch.manual_seed(0)
    kw = {"nonlinearity": "tanh" if mode == "RNN_TANH" else "relu"} if mode.startswith("RNN") else {}
    m = MODES[mode](5, 7, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias,
                    **kw).double()
    dirs = 2 if bidirectional else 1
    x = torch.randn(4, 6, 5, dtype=torch.float64)  # (T, B, F) or (B, T, F)
    h0 = torch.randn(layers * dirs, 6 if not batch_first else 4, 7, dtype=torch.float64)
    c0 = torch.randn_like(h0)
    x.requires_grad_()
    if mode == "LSTM":
        out, (hn, cn) = m(x, (h0, c0))
    else:
        out, hn = m(x, h0)
    kx = _k(x).requires_grad_()
    params = [_k(p).requires_grad_() for p in m._flat_weights]
    ko, kh, kc = kindle._C._nn.rnn(kx, _k(h0), _k(c0) if mode == "LSTM" else None, params, mode, bias, layers, 0.0,
                                   False, bidirectional, batch_first)
    np.testing.assert_allclose(ko.detach().numpy(), out.detach().numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(kh.detach().numpy(), hn.detach().numpy(), rtol=1e-9, atol=1e-10)
    if mode == "LSTM":
        np.testing.assert_allclose(kc.detach().numpy(), cn.detach().numpy(), rtol=1e-9, atol=1e-10)
    g = torch.randn_like(out)
    (out * g).sum().backward()
    (ko * _k(g)).sum().backward()
    np.testing.assert_allclose(kx.grad.numpy(), x.grad.numpy(), rtol=1e-8, atol=1e-10)
    for kp, tp in zip(params, m._flat_weights):
        np.testing.assert_allclose(kp.grad.numpy(), tp.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("batch", [9, 16, 33])
def test_lstm_float32_batches_match_float64(batch):
    """float32 at batch 8 and more: the recurrent product then runs transposed on Kindle's own
    GEMM where the CPU has AVX-512 (csrc/cpu/lstm.cpp); against torch in float64."""
    torch.manual_seed(1)
    m = torch.nn.LSTM(13, 40, num_layers=2, bidirectional=True).double()
    x = torch.randn(6, batch, 13, dtype=torch.float64, requires_grad=True)
    out, (hn, cn) = m(x)
    g = torch.randn_like(out)
    (out * g).sum().backward()
    kx = kindle.tensor(x.detach().numpy().astype(np.float32)).requires_grad_()
    params = [kindle.tensor(p.detach().numpy().astype(np.float32)).requires_grad_() for p in m._flat_weights]
    ko, kh, kc = kindle._C._nn.rnn(kx, kindle.zeros(4, batch, 40), kindle.zeros(4, batch, 40), params, "LSTM", True, 2,
                                   0.0, False, True, False)
    (ko * kindle.tensor(g.numpy().astype(np.float32))).sum().backward()
    for got, want in [(ko, out), (kh, hn), (kc, cn), (kx.grad, x.grad)] + list(
            zip([p.grad for p in params], [p.grad for p in m._flat_weights])):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cell", ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"])
def test_cells_match_torch(cell):
    torch.manual_seed(1)
    mod = {"lstm_cell": torch.nn.LSTMCell, "gru_cell": torch.nn.GRUCell}.get(cell)
    if mod is None:
        m = torch.nn.RNNCell(3, 4, nonlinearity="tanh" if "tanh" in cell else "relu").double()
    else:
        m = mod(3, 4).double()
    x = torch.randn(2, 3, dtype=torch.float64)
    h = torch.randn(2, 4, dtype=torch.float64)
    c = torch.randn(2, 4, dtype=torch.float64)
    args = [_k(m.weight_ih), _k(m.weight_hh), _k(m.bias_ih), _k(m.bias_hh)]
    if cell == "lstm_cell":
        th, tc = m(x, (h, c))
        kh, kc = kindle._C._nn.lstm_cell(_k(x), _k(h), _k(c), *args)
        np.testing.assert_allclose(kc.numpy(), tc.detach().numpy(), rtol=1e-10, atol=1e-12)
    else:
        th = m(x, h)
        kh = getattr(kindle._C._nn, cell)(_k(x), _k(h), *args)
    np.testing.assert_allclose(kh.numpy(), th.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_rnn_bad_input():
    x = kindle.randn(3, 2, 5)
    h = kindle.zeros(1, 2, 7)
    with pytest.raises(RuntimeError, match="parameter tensors"):
        kindle._C._nn.rnn(x, h, h, [kindle.randn(28, 5)], "LSTM", True, 1, 0.0, False, False, False)
    with pytest.raises(ValueError, match="unknown mode"):
        kindle._C._nn.rnn(x, h, None, [], "XYZ", True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="input_size"):
        kindle._C._nn.gru_cell(kindle.randn(2, 4), kindle.randn(2, 7), kindle.randn(21, 5), kindle.randn(21, 7))


@pytest.mark.parametrize("batch", [1, 2, 5, 20])
def test_lstm_float32_matches_float64_and_ignores_the_thread_count(batch):
    # Batches of one or two take the recurrent product as dot products with the weight's
    # rows, split over the threads; larger ones MKL's packed GEMM. Both: float32 close to torch's
    # float64, and the same bits at 1 and 2 threads, forward and backward.
    torch.manual_seed(1)
    ref = torch.nn.LSTM(24, 40, num_layers=2).double()
    x = torch.randn(7, batch, 24, dtype=torch.float64)
    want, _ = ref(x)
    m = kindle.nn.LSTM(24, 40, num_layers=2)
    m.load_state_dict({k: kindle.tensor(v.detach().float().numpy()) for k, v in ref.state_dict().items()})
    results = []
    old = kindle.get_num_threads()
    try:
        for threads in (1, 2):
            kindle.set_num_threads(threads)
            xk = kindle.tensor(x.float().numpy(), requires_grad=True)
            out, (h, c) = m(xk)
            out.sum().backward()
            np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=0, atol=2e-5)
            results.append([out.detach().numpy(), h.detach().numpy(), xk.grad.numpy()] +
                           [p.grad.numpy().copy() for p in m.parameters()])
            m.zero_grad()
    finally:
        kindle.set_num_threads(old)
    for a, b in zip(*results):
        assert np.array_equal(a, b)
