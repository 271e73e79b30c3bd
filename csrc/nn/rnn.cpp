// Recurrent cells and multi-layer (bidirectional) RNN/LSTM/GRU loops, composed of GEMMs and
// pointwise ops; the nn modules (issue 5) call these.
#include "nn/common.h"

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

std::tuple<Tensor, Tensor> lstm_cell(const Tensor& input, const Tensor& hx, const Tensor& cx, const Tensor& w_ih,
                                     const Tensor& w_hh, const std::optional<Tensor>& b_ih,
                                     const std::optional<Tensor>& b_hh) {
  check_cell(input, hx, w_ih, w_hh, 4, "lstm_cell");
  auto g = gates(input, hx, w_ih, w_hh, b_ih, b_hh).chunk(4, -1);
  Tensor c = g[1].sigmoid() * cx + g[0].sigmoid() * g[2].tanh();
  Tensor h = g[3].sigmoid() * c.tanh();
  return {h, c};
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
      // The input projection of every step in one GEMM; the recurrence only multiplies by w_hh.
      Tensor xi = linear(x, w_ih, b_ih);  // (T, B, gates*H)
      std::vector<Tensor> steps(static_cast<size_t>(T));
      for (int64_t s = 0; s < T; ++s) {
        int64_t t = d == 0 ? s : T - 1 - s;
        Tensor gi = xi.select(0, t);
        if (lstm) {
          auto g = (gi + linear(h, w_hh, b_hh)).chunk(4, -1);
          c = g[1].sigmoid() * c + g[0].sigmoid() * g[2].tanh();
          h = g[3].sigmoid() * c.tanh();
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
