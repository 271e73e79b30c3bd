// Recurrent cells and multi-layer (bidirectional) RNN/LSTM/GRU loops, composed of GEMMs and
// pointwise ops; the nn modules (issue 5) call these.
#include "autograd/formulas.h"
#include "kindle/autograd.h"
#include "nn/common.h"
#include "ops/rnn_kernels.h"

namespace kindle {

namespace {
Tensor gates(const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh,
             const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  return linear(x, w_ih, b_ih) + linear(h, w_hh, b_hh);
}
void check_cell(const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh, int64_t n_gates,
                const char* op) {
  KINDLE_CHECK(x.dim() == 1 || x.dim() == 2, op, ": Expected input to be 1D or 2D, got ", x.dim(), "D instead");
  KINDLE_CHECK(x.size(-1) == w_ih.size(1), op, ": input has inconsistent input_size: got ", x.size(-1), " expected ",
               w_ih.size(1));
  KINDLE_CHECK(h.size(-1) * n_gates == w_hh.size(0) && w_hh.size(1) == h.size(-1), op, ": hidden state of shape ",
               h.sizes(), " does not match weight_hh of shape ", w_hh.sizes());
}
}  // namespace

namespace {

// The pointwise LSTM step written with ops (other dtypes, and the recorded double backward).
std::tuple<Tensor, Tensor> lstm_pointwise_ops(const Tensor& gates, const Tensor& cx) {
  auto g = gates.chunk(4, -1);
  Tensor c = g[1].sigmoid() * cx + g[0].sigmoid() * g[2].tanh();
  return {g[3].sigmoid() * c.tanh(), c};
}
bool lstm_fusable(const Tensor& gates, const Tensor& cx) {
  return (gates.dtype() == kFloat32 || gates.dtype() == kFloat64) && cx.dtype() == gates.dtype() &&
         gates.dim() == 2 && cx.dim() == 2 && gates.size(0) == cx.size(0) && gates.size(1) == 4 * cx.size(1);
}

}  // namespace

std::tuple<Tensor, Tensor> native_lstm_pointwise(const Tensor& gates, const Tensor& cx) {
  KINDLE_CHECK(gates.dim() >= 1 && gates.size(-1) == 4 * cx.size(-1), "lstm_cell: gates of shape ", gates.sizes(),
               " do not match the cell state of shape ", cx.sizes());
  if (!lstm_fusable(gates, cx)) return lstm_pointwise_ops(gates, cx);
  Tensor g = gates.contiguous(), c = cx.contiguous();
  Tensor hy = empty_tensor(c.sizes(), c.dtype(), c.device()), cy = empty_tensor(c.sizes(), c.dtype(), c.device());
  if (c.numel()) lstm_pointwise_stub[c.device()](g, c, hy, cy);
  return {hy, cy};
}

namespace autograd {
Tensor lstm_pointwise_grad(const Tensor& grad_hy, const Tensor& grad_cy, const Tensor& gates, const Tensor& cx,
                           const Tensor& cy, bool gates_grad) {
  if (!grad_hy.defined() && !grad_cy.defined()) return {};
  if (GradMode::is_enabled() || !lstm_fusable(gates, cx)) {  // with ops: recorded for double backward
    auto a = gates.chunk(4, -1);
    Tensor i = a[0].sigmoid(), f = a[1].sigmoid(), g = a[2].tanh(), o = a[3].sigmoid();
    Tensor tc = (f * cx + i * g).tanh();
    Tensor gh = grad_hy.defined() ? grad_hy : zeros_like(cx), gc = grad_cy.defined() ? grad_cy : zeros_like(cx);
    Tensor dct = gc + gh * o * (1 - tc * tc);
    if (!gates_grad) return dct * f;
    return cat({dct * g * i * (1 - i), dct * cx * f * (1 - f), dct * i * (1 - g * g), gh * tc * o * (1 - o)}, -1);
  }
  Tensor dg = empty_tensor(gates.sizes(), gates.dtype(), gates.device());
  Tensor dc = empty_tensor(cx.sizes(), cx.dtype(), cx.device());
  Tensor gh = grad_hy.defined() ? grad_hy.contiguous() : Tensor(), gc = grad_cy.defined() ? grad_cy.contiguous() : Tensor();
  if (cx.numel())
    lstm_pointwise_backward_stub[cx.device()](gh.defined() ? &gh : nullptr, gc.defined() ? &gc : nullptr,
                                              gates.contiguous(), cx.contiguous(), cy.contiguous(), dg, dc);
  return gates_grad ? dg : dc;
}
}  // namespace autograd

std::tuple<Tensor, Tensor> lstm_cell(const Tensor& input, const Tensor& hx, const Tensor& cx, const Tensor& w_ih,
                                     const Tensor& w_hh, const std::optional<Tensor>& b_ih,
                                     const std::optional<Tensor>& b_hh) {
  check_cell(input, hx, w_ih, w_hh, 4, "lstm_cell");
  return lstm_pointwise(gates(input, hx, w_ih, w_hh, b_ih, b_hh), cx);
}

Tensor gru_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  check_cell(input, hx, w_ih, w_hh, 3, "gru_cell");
  auto gi = linear(input, w_ih, b_ih).chunk(3, -1);
  auto gh = linear(hx, w_hh, b_hh).chunk(3, -1);
  Tensor r = (gi[0] + gh[0]).sigmoid(), z = (gi[1] + gh[1]).sigmoid();
  Tensor n = (gi[2] + r * gh[2]).tanh();
  return (1 - z) * n + z * hx;
}

Tensor rnn_tanh_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  check_cell(input, hx, w_ih, w_hh, 1, "rnn_tanh_cell");
  return gates(input, hx, w_ih, w_hh, b_ih, b_hh).tanh();
}

Tensor rnn_relu_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  check_cell(input, hx, w_ih, w_hh, 1, "rnn_relu_cell");
  return gates(input, hx, w_ih, w_hh, b_ih, b_hh).relu();
}

// mode: "LSTM", "GRU", "RNN_TANH", "RNN_RELU". params: per layer and direction, w_ih, w_hh
// (and b_ih, b_hh when has_biases), in PyTorch's order. input (T, B, F) or (B, T, F) with
// batch_first. hx: (layers * dirs, B, H); cx for LSTM. Returns (output, h_n, c_n).
std::tuple<Tensor, Tensor, Tensor> rnn(const Tensor& input, const Tensor& hx, const std::optional<Tensor>& cx,
                                       TensorList params, std::string_view mode, bool has_biases, int64_t num_layers,
                                       double dropout_p, bool train, bool bidirectional, bool batch_first) {
  bool lstm = mode == "LSTM";
  KINDLE_CHECK_VALUE(lstm || mode == "GRU" || mode == "RNN_TANH" || mode == "RNN_RELU", "rnn: unknown mode ", mode);
  KINDLE_CHECK(input.dim() == 3, "rnn: expected a 3-D input (sequence, batch, features), got ", input.sizes());
  KINDLE_CHECK(!lstm || cx, "rnn: LSTM needs the initial cell state");
  int64_t dirs = bidirectional ? 2 : 1, per = has_biases ? 4 : 2;
  KINDLE_CHECK(int64_t(params.size()) == num_layers * dirs * per, "rnn: expected ", num_layers * dirs * per,
               " parameter tensors, got ", params.size());
  Tensor x = batch_first ? input.transpose(0, 1) : input;
  int64_t T = x.size(0);
  std::vector<Tensor> hn, cn;
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    std::vector<Tensor> outs_dir;
    for (int64_t d = 0; d < dirs; ++d) {
      size_t base = size_t((layer * dirs + d) * per);
      const Tensor &w_ih = params[base], &w_hh = params[base + 1];
      std::optional<Tensor> b_ih, b_hh;
      if (has_biases) b_ih = params[base + 2], b_hh = params[base + 3];
      Tensor h = hx.select(0, layer * dirs + d), c = lstm ? cx->select(0, layer * dirs + d) : Tensor();
      // The input projection of every step in one GEMM (with both biases for the LSTM); the
      // recurrence only multiplies by w_hh. unbind: one backward node for all steps.
      std::optional<Tensor> bias_in = b_ih;
      if (lstm && b_ih && b_hh) bias_in = *b_ih + *b_hh;
      std::vector<Tensor> xi = linear(x, w_ih, bias_in).unbind(0);  // T x (B, gates*H)
      std::vector<Tensor> steps(static_cast<size_t>(T));
      for (int64_t s = 0; s < T; ++s) {
        int64_t t = d == 0 ? s : T - 1 - s;
        const Tensor& gi = xi[size_t(t)];
        if (lstm) {
          Tensor pre = (b_hh && !b_ih) ? addmm(gi + *b_hh, h, w_hh.t()) : addmm(gi, h, w_hh.t());
          std::tie(h, c) = lstm_pointwise(pre, c);
        } else if (mode == "GRU") {
          auto a = gi.chunk(3, -1);
          auto b = linear(h, w_hh, b_hh).chunk(3, -1);
          Tensor r = (a[0] + b[0]).sigmoid(), z = (a[1] + b[1]).sigmoid();
          Tensor n = (a[2] + r * b[2]).tanh();
          h = (1 - z) * n + z * h;
        } else {
          Tensor pre = gi + linear(h, w_hh, b_hh);
          h = mode == "RNN_TANH" ? pre.tanh() : pre.relu();
        }
        steps[size_t(t)] = h;
      }
      outs_dir.push_back(stack(steps, 0));
      hn.push_back(h);
      if (lstm) cn.push_back(c);
    }
    x = dirs == 1 ? outs_dir[0] : cat(outs_dir, -1);
    if (dropout_p > 0 && train && layer + 1 < num_layers) x = dropout(x, dropout_p, true);
  }
  Tensor out = batch_first ? x.transpose(0, 1) : x;
  // c_n is an empty tensor for RNN and GRU (a defined value: Python sees a tensor, never a null).
  return {out, stack(hn, 0), lstm ? stack(cn, 0) : empty_tensor({0}, out.dtype(), out.device())};
}

}  // namespace kindle
