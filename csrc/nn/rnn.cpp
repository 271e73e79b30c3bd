// Recurrent cells and multi-layer (bidirectional) RNN/LSTM/GRU loops, composed of GEMMs and
// pointwise ops; the nn modules (issue 5) call these.
#include <algorithm>

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

namespace {

// The LSTM recurrence of one layer and direction, from the input projections xi (T, B, 4H)
// (biases included): steps of addmm and lstm_pointwise, recorded op by op.
std::tuple<Tensor, Tensor, Tensor> lstm_recurrence_ops(const Tensor& xi, Tensor h, Tensor c, const Tensor& w_hh,
                                                       bool reverse) {
  const int64_t T = xi.size(0);
  std::vector<Tensor> gi = xi.unbind(0);
  std::vector<Tensor> steps(static_cast<size_t>(T));
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s;
    std::tie(h, c) = lstm_pointwise(addmm(gi[size_t(t)], h, w_hh.t()), c);
    steps[size_t(t)] = h;
  }
  return {stack(steps, 0), h, c};
}

// The same recurrence as one autograd node. The forward keeps every step's gates and cell state;
// the backward walks the steps in reverse with the fused pointwise kernel and forms the w_hh
// gradient with one GEMM over all steps, where the op-by-op graph had a GEMM, a transpose and an
// accumulation per step. With create_graph, the backward differentiates the op-by-op recurrence
// (recomputed from the saved inputs), so double backward works as before.
std::tuple<Tensor, Tensor, Tensor> lstm_recurrence(const Tensor& xi, const Tensor& h0, const Tensor& c0,
                                                   const Tensor& w_hh, bool reverse) {
  const DType dt = xi.dtype();
  const bool fusable = (dt == kFloat32 || dt == kFloat64) && h0.dtype() == dt && c0.dtype() == dt &&
                       w_hh.dtype() == dt && xi.dim() == 3 && xi.size(0) > 0 && xi.numel() > 0 && h0.dim() == 2 &&
                       c0.dim() == 2 && h0.sizes() == c0.sizes() && xi.size(1) == h0.size(0) &&
                       xi.size(2) == 4 * h0.size(1) && w_hh.dim() == 2 && w_hh.size(0) == xi.size(2) &&
                       w_hh.size(1) == h0.size(1);
  using autograd::forward_ad::is_dual;
  if (!fusable || is_dual(xi) || is_dual(h0) || is_dual(c0) || is_dual(w_hh))  // (tangents flow through ops)
    return lstm_recurrence_ops(xi, h0, c0, w_hh, reverse);
  const int64_t T = xi.size(0), B = h0.size(0), H = h0.size(1);
  Tensor G, cells, out, hT, cT;
  Tensor h0c = h0.contiguous(), c0c = c0.contiguous();
  {
    autograd::NoGradGuard no_grad;
    G = xi.contiguous().clone();  // becomes the gates: xi[t] + h @ w_hh^T
    cells = empty_tensor({T, B, H}, dt, xi.device());
    out = empty_tensor({T, B, H}, dt, xi.device());
    lstm_recurrence_stub[xi.device()](G, h0c, c0c, w_hh.contiguous(), out, cells, reverse);
    const int64_t last = reverse ? 0 : T - 1;
    hT = out.select(0, last).clone();
    cT = cells.select(0, last).clone();
  }
  const bool any_grad = xi.requires_grad() || h0.requires_grad() || c0.requires_grad() || w_hh.requires_grad();
  if (!autograd::GradMode::is_enabled() || !any_grad) return {out, hT, cT};
  auto ctx = std::make_shared<autograd::FunctionCtx>();
  ctx->needs_input_grad = {xi.requires_grad(), h0.requires_grad(), c0.requires_grad(), w_hh.requires_grad()};
  ctx->materialize_grads = false;
  ctx->save_for_backward({xi, h0, c0, w_hh, out, G, cells});
  auto outs = autograd::wrap_outputs(
      "LstmRecurrenceBackward0", {xi, h0, c0, w_hh}, {out, hT, cT}, ctx,
      [reverse, T, B, H](autograd::FunctionCtx& c, autograd::tensor_list grads) -> autograd::tensor_list {
        autograd::tensor_list s = c.saved_tensors();
        const Tensor &xi = s[0], &h0 = s[1], &c0 = s[2], &w_hh = s[3], &out = s[4], &G = s[5], &cells = s[6];
        if (autograd::GradMode::is_enabled()) {  // create_graph
          auto [o, hT, cT] = lstm_recurrence_ops(xi, h0, c0, w_hh, reverse);
          autograd::tensor_list outs, gos, want, result(4);
          const Tensor produced[3] = {o, hT, cT};
          for (int k = 0; k < 3; ++k)
            if (grads[size_t(k)].defined()) outs.push_back(produced[k]), gos.push_back(grads[size_t(k)]);
          std::vector<size_t> idx;
          for (size_t i = 0; i < 4; ++i)
            if (c.needs_input_grad[i]) want.push_back(s[i]), idx.push_back(i);
          if (outs.empty() || want.empty()) return result;
          autograd::tensor_list got = autograd::grad(outs, want, gos, true, true, true);
          for (size_t j = 0; j < idx.size(); ++j) result[idx[j]] = got[j];
          return result;
        }
        const DType dt = G.dtype();
        Tensor dout = grads[0].defined() ? grads[0].contiguous() : Tensor();
        Tensor dh = grads[1].defined() ? grads[1].contiguous().clone() : zeros({B, H}, dt, G.device());
        Tensor dc = grads[2].defined() ? grads[2].contiguous().clone() : zeros({B, H}, dt, G.device());
        Tensor dG = empty_tensor(G.sizes(), dt, G.device());
        lstm_recurrence_backward_stub[G.device()](dout.defined() ? &dout : nullptr, G, c0.contiguous(), cells,
                                                  w_hh.contiguous(), dG, dh, dc, reverse);
        autograd::tensor_list result(4);
        if (c.needs_input_grad[0]) result[0] = dG;
        if (c.needs_input_grad[1]) result[1] = dh;
        if (c.needs_input_grad[2]) result[2] = dc;
        if (c.needs_input_grad[3]) {
          // h_{t-1} for every step t, in the layout of dG.
          Tensor h0r = h0.contiguous().unsqueeze(0);
          Tensor hprev = T == 1 ? h0r
                         : reverse ? cat({out.narrow(0, 1, T - 1), h0r}, 0)
                                   : cat({h0r, out.narrow(0, 0, T - 1)}, 0);
          result[3] = mm(dG.reshape({T * B, 4 * H}).t(), hprev.reshape({T * B, H}));
        }
        return result;
      });
  return {outs[0], outs[1], outs[2]};
}

}  // namespace

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

namespace {

// One layer and direction over the input projections xi (T, B, gates*H) (for the LSTM both biases
// included): the LSTM as one fused recurrence, GRU and RNN step by step. Returns (out (T, B, H),
// h_T, c_T), h_T / c_T the states after the last step processed (step 0 when reverse).
std::tuple<Tensor, Tensor, Tensor> recurrence(std::string_view mode, const Tensor& xi, Tensor h, const Tensor& c,
                                              const Tensor& w_hh, const std::optional<Tensor>& b_hh, bool reverse) {
  if (mode == "LSTM") return lstm_recurrence(xi, h, c, w_hh, reverse);
  const int64_t T = xi.size(0);
  std::vector<Tensor> gi = xi.unbind(0);  // one backward node for all steps
  std::vector<Tensor> steps(static_cast<size_t>(T));
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s;
    const Tensor& g = gi[size_t(t)];
    if (mode == "GRU") {
      auto a = g.chunk(3, -1);
      auto b = linear(h, w_hh, b_hh).chunk(3, -1);
      Tensor r = (a[0] + b[0]).sigmoid(), z = (a[1] + b[1]).sigmoid();
      Tensor n = (a[2] + r * b[2]).tanh();
      h = (1 - z) * n + z * h;
    } else {
      Tensor pre = g + linear(h, w_hh, b_hh);
      h = mode == "RNN_TANH" ? pre.tanh() : pre.relu();
    }
    steps[size_t(t)] = h;
  }
  return {T ? stack(steps, 0) : empty_tensor({0, h.size(0), h.size(1)}, h.dtype(), h.device()), h, c};
}

// The same over a packed layer input: xi (sum of lengths, gates*H) in PyTorch's packed order,
// batch_sizes non-increasing. Each run of steps with one batch size b is one recurrence() call
// over the first b sequences (so the LSTM's fused kernel serves packed batches too); forward,
// the rows that end leave their final state behind; in reverse, the rows that start join with
// their initial state. Returns (out (sum of lengths, H), h_n (B, H), c_n).
std::tuple<Tensor, Tensor, Tensor> packed_recurrence(std::string_view mode, const Tensor& xi,
                                                     const std::vector<int64_t>& sizes, const Tensor& h0,
                                                     const Tensor& c0, const Tensor& w_hh,
                                                     const std::optional<Tensor>& b_hh, bool reverse) {
  const bool lstm = mode == "LSTM";
  struct Run {
    int64_t t0, t1, batch, row0;  // steps [t0, t1), `batch` sequences, first packed row
  };
  std::vector<Run> runs;
  for (int64_t t = 0, row = 0; t < int64_t(sizes.size());) {
    int64_t stop = t;
    while (stop < int64_t(sizes.size()) && sizes[size_t(stop)] == sizes[size_t(t)]) ++stop;
    runs.push_back({t, stop, sizes[size_t(t)], row});
    row += (stop - t) * sizes[size_t(t)];
    t = stop;
  }
  const int64_t G = xi.size(-1);
  std::vector<Tensor> outs(runs.size());
  auto run_one = [&](size_t k, Tensor& h, Tensor& c) {
    const Run& r = runs[k];
    Tensor x = xi.narrow(0, r.row0, (r.t1 - r.t0) * r.batch).reshape({r.t1 - r.t0, r.batch, G});
    auto [o, hT, cT] = recurrence(mode, x, h, c, w_hh, b_hh, reverse);
    outs[k] = o.reshape({(r.t1 - r.t0) * r.batch, o.size(-1)});
    h = hT;
    c = cT;
  };
  Tensor hn, cn;
  if (!reverse) {
    std::vector<Tensor> h_done, c_done;  // final states of the rows that end, last rows first
    Tensor h = h0, c = c0;
    for (size_t k = 0; k < runs.size(); ++k) {
      const int64_t b = runs[k].batch;
      if (b < h.size(0)) {
        h_done.push_back(h.narrow(0, b, h.size(0) - b));
        if (lstm) c_done.push_back(c.narrow(0, b, c.size(0) - b));
        h = h.narrow(0, 0, b);
        if (lstm) c = c.narrow(0, 0, b);
      }
      run_one(k, h, c);
    }
    h_done.push_back(h);
    if (lstm) c_done.push_back(c);
    std::reverse(h_done.begin(), h_done.end());
    std::reverse(c_done.begin(), c_done.end());
    hn = h_done.size() == 1 ? h_done[0] : cat(h_done, 0);
    if (lstm) cn = c_done.size() == 1 ? c_done[0] : cat(c_done, 0);
  } else {
    Tensor h = h0.narrow(0, 0, runs.back().batch), c = lstm ? c0.narrow(0, 0, runs.back().batch) : Tensor();
    for (size_t k = runs.size(); k-- > 0;) {
      const int64_t b = runs[k].batch;
      if (b > h.size(0)) {
        h = cat({h, h0.narrow(0, h.size(0), b - h.size(0))}, 0);
        if (lstm) c = cat({c, c0.narrow(0, c.size(0), b - c.size(0))}, 0);
      }
      run_one(k, h, c);
    }
    hn = h;
    cn = c;
  }
  return {outs.size() == 1 ? outs[0] : cat(outs, 0), hn, cn};
}

struct RnnLayout {
  bool lstm;
  int64_t dirs, per;
};

RnnLayout check_rnn(std::string_view mode, const std::optional<Tensor>& cx, TensorList params, bool has_biases,
                 int64_t num_layers, bool bidirectional, const char* op) {
  const bool lstm = mode == "LSTM";
  KINDLE_CHECK_VALUE(lstm || mode == "GRU" || mode == "RNN_TANH" || mode == "RNN_RELU", op, ": unknown mode ", mode);
  KINDLE_CHECK(!lstm || cx, op, ": LSTM needs the initial cell state");
  const int64_t dirs = bidirectional ? 2 : 1, per = has_biases ? 4 : 2;
  KINDLE_CHECK(int64_t(params.size()) == num_layers * dirs * per, op, ": expected ", num_layers * dirs * per,
               " parameter tensors, got ", params.size());
  return {lstm, dirs, per};
}

// The layers of rnn() and rnn_packed(): `layer_fn(xi, h, c, w_hh, b_hh, reverse)` runs one
// layer and direction on the input projections; the outputs of both directions are concatenated
// along the features, with dropout between layers when training.
template <typename LayerFn>
std::tuple<Tensor, Tensor, Tensor> run_layers(Tensor x, const Tensor& hx, const std::optional<Tensor>& cx,
                                              TensorList params, const RnnLayout& l, bool has_biases,
                                              int64_t num_layers, double dropout_p, bool train, LayerFn layer_fn) {
  std::vector<Tensor> hn, cn;
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    std::vector<Tensor> outs_dir;
    for (int64_t d = 0; d < l.dirs; ++d) {
      const size_t base = size_t((layer * l.dirs + d) * l.per);
      const Tensor &w_ih = params[base], &w_hh = params[base + 1];
      std::optional<Tensor> b_ih, b_hh;
      if (has_biases) b_ih = params[base + 2], b_hh = params[base + 3];
      Tensor h = hx.select(0, layer * l.dirs + d), c = l.lstm ? cx->select(0, layer * l.dirs + d) : Tensor();
      // The input projection of every step in one GEMM (with both biases for the LSTM); the
      // recurrence only multiplies by w_hh.
      std::optional<Tensor> bias_in = b_ih;
      if (l.lstm && b_ih && b_hh) bias_in = *b_ih + *b_hh;
      Tensor xi = linear(x, w_ih, bias_in);
      if (l.lstm && b_hh && !b_ih) xi = xi + *b_hh;
      auto [o, hT, cT] = layer_fn(xi, h, c, w_hh, l.lstm ? std::nullopt : b_hh, d == 1);
      outs_dir.push_back(o);
      hn.push_back(hT);
      if (l.lstm) cn.push_back(cT);
    }
    x = l.dirs == 1 ? outs_dir[0] : cat(outs_dir, -1);
    if (dropout_p > 0 && train && layer + 1 < num_layers) x = dropout(x, dropout_p, true);
  }
  // c_n is an empty tensor for RNN and GRU (a defined value: Python sees a tensor, never a null).
  return {x, stack(hn, 0), l.lstm ? stack(cn, 0) : empty_tensor({0}, x.dtype(), x.device())};
}

}  // namespace

// mode: "LSTM", "GRU", "RNN_TANH", "RNN_RELU". params: per layer and direction, w_ih, w_hh
// (and b_ih, b_hh when has_biases), in PyTorch's order. input (T, B, F) or (B, T, F) with
// batch_first. hx: (layers * dirs, B, H); cx for LSTM. Returns (output, h_n, c_n).
std::tuple<Tensor, Tensor, Tensor> rnn(const Tensor& input, const Tensor& hx, const std::optional<Tensor>& cx,
                                       TensorList params, std::string_view mode, bool has_biases, int64_t num_layers,
                                       double dropout_p, bool train, bool bidirectional, bool batch_first) {
  const RnnLayout l = check_rnn(mode, cx, params, has_biases, num_layers, bidirectional, "rnn");
  KINDLE_CHECK(input.dim() == 3, "rnn: expected a 3-D input (sequence, batch, features), got ", input.sizes());
  auto [out, hn, cn] = run_layers(
      batch_first ? input.transpose(0, 1) : input, hx, cx, params, l, has_biases, num_layers, dropout_p, train,
      [&](const Tensor& xi, const Tensor& h, const Tensor& c, const Tensor& w_hh, const std::optional<Tensor>& b_hh,
          bool reverse) { return recurrence(mode, xi, h, c, w_hh, b_hh, reverse); });
  return {batch_first ? out.transpose(0, 1) : out, hn, cn};
}

// The same over a packed batch: data (sum of lengths, F) and batch_sizes as PyTorch packs them;
// hx / cx in the packed (sorted) batch order. Returns (packed output, h_n, c_n).
std::tuple<Tensor, Tensor, Tensor> rnn_packed(const Tensor& data, const Tensor& batch_sizes, const Tensor& hx,
                                              const std::optional<Tensor>& cx, TensorList params,
                                              std::string_view mode, bool has_biases, int64_t num_layers,
                                              double dropout_p, bool train, bool bidirectional) {
  const RnnLayout l = check_rnn(mode, cx, params, has_biases, num_layers, bidirectional, "rnn_packed");
  const std::vector<int64_t> sizes = nn_detail::packed_batch_sizes(batch_sizes, "rnn_packed");
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  KINDLE_CHECK(!sizes.empty() && data.dim() == 2 && data.size(0) == total, "rnn_packed: batch_sizes ",
               batch_sizes.sizes(), " sum to ", total, " steps but data has shape ", data.sizes());
  KINDLE_CHECK(hx.dim() == 3 && hx.size(1) == sizes[0], "rnn_packed: expected hx of shape (layers * directions, ",
               sizes[0], ", hidden), got ", hx.sizes());
  return run_layers(data, hx, cx, params, l, has_biases, num_layers, dropout_p, train,
                    [&](const Tensor& xi, const Tensor& h, const Tensor& c, const Tensor& w_hh,
                        const std::optional<Tensor>& b_hh, bool reverse) {
                      return packed_recurrence(mode, xi, sizes, h, c, w_hh, b_hh, reverse);
                    });
}

}  // namespace kindle
