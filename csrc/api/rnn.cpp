// RNN/LSTM/GRU modules and cells (python/kindle/nn/modules/rnn.py): shape checks and state
// arrangement around kindle::rnn and the *_cell ops.
#include "kindle/nn/rnn.h"

#include <cmath>

#include "kindle/nn/init.h"
#include "util.h"

namespace kindle::nn {

using detail::new_weight;
using detail::opt;
using detail::py_float;

namespace {

int64_t gates(const std::string& mode) {
  if (mode == "LSTM") return 4;
  if (mode == "GRU") return 3;
  if (mode == "RNN_TANH" || mode == "RNN_RELU") return 1;
  throw ValueError("Unrecognized RNN mode: " + mode);
}

const char* python_name(const std::string& mode) {
  return mode == "LSTM" ? "LSTM" : mode == "GRU" ? "GRU" : "RNN";
}

std::string tuple_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

std::string list_str(IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

RNNBase::RNNBase(std::string mode_, const RNNOptions& o) : options(o), mode(std::move(mode_)) {
  int64_t gate_size = gates(mode) * o.hidden_size();
  KINDLE_CHECK_VALUE(o.dropout() >= 0 && o.dropout() <= 1,
                     "dropout should be a number in range [0, 1] representing the probability of an element being "
                     "zeroed");
  KINDLE_CHECK_VALUE(o.input_size() > 0, "input_size must be greater than zero");
  KINDLE_CHECK_VALUE(o.hidden_size() > 0, "hidden_size must be greater than zero");
  KINDLE_CHECK_VALUE(o.num_layers() > 0, "num_layers must be greater than zero");
  int64_t dirs = o.bidirectional() ? 2 : 1;
  for (int64_t layer = 0; layer < o.num_layers(); ++layer) {
    int64_t layer_input = layer == 0 ? o.input_size() : o.hidden_size() * dirs;
    for (int64_t d = 0; d < dirs; ++d) {
      std::string suffix = "_l" + std::to_string(layer) + (d == 1 ? "_reverse" : "");
      std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
          {"weight_ih" + suffix, {gate_size, layer_input}}, {"weight_hh" + suffix, {gate_size, o.hidden_size()}}};
      if (o.bias()) {
        shapes.push_back({"bias_ih" + suffix, {gate_size}});
        shapes.push_back({"bias_hh" + suffix, {gate_size}});
      }
      for (auto& [n, shape] : shapes) {
        register_parameter(n, new_weight(shape, o.dtype()));
        flat_names_.push_back(n);
      }
    }
  }
  reset_parameters();
}

void RNNBase::reset_parameters() {
  double stdv = 1.0 / std::sqrt(double(options.hidden_size()));
  for (const Tensor& w : parameters()) init::uniform_(w, -stdv, stdv);
}

std::vector<Tensor> RNNBase::flat_weights() const {
  std::vector<Tensor> out;
  for (auto& n : flat_names_) out.push_back(own_parameters().at(n));
  return out;
}

Tensor RNNBase::forward(const Tensor& input) { return forward_with_state(input).output; }

RNNOutput RNNBase::forward_with_state(const Tensor& input_, const Tensor& h0_, const Tensor& c0_) {
  const auto& o = options;
  bool lstm = mode == "LSTM";
  const char* name = python_name(mode);
  KINDLE_CHECK_VALUE(input_.dim() == 2 || input_.dim() == 3, name, ": Expected input to be 2D or 3D, got ",
                     input_.dim(), "D ", std::string(name) == "RNN" ? "tensor instead" : "instead");
  bool batched = input_.dim() == 3;
  int64_t batch_dim = o.batch_first() ? 0 : 1;
  Tensor input = batched ? input_ : input_.unsqueeze(batch_dim);
  Tensor h0 = h0_, c0 = c0_;
  int64_t want = batched ? 3 : 2;
  const char* kind = batched ? "batched 3-D" : "unbatched 2-D";
  if (lstm && (h0.defined() || c0.defined())) {
    KINDLE_CHECK(h0.defined() && c0.defined(), "LSTM: give both h0 and c0, or neither");
    KINDLE_CHECK(h0.dim() == want && c0.dim() == want, "For ", kind, " input, hx and cx should also be ", want,
                 "-D but got (", h0.dim(), "-D, ", c0.dim(), "-D) tensors");
  } else if (h0.defined()) {
    KINDLE_CHECK(h0.dim() == want, "For ", kind, " input, hx should also be ", want, "-D but got ", h0.dim(),
                 "-D tensor");
  }
  if (!batched) {
    if (h0.defined()) h0 = h0.unsqueeze(1);
    if (c0.defined()) c0 = c0.unsqueeze(1);
  }
  int64_t batch = input.size(batch_dim);
  int64_t dirs = o.bidirectional() ? 2 : 1;
  std::vector<Tensor> weights = flat_weights();
  if (!h0.defined()) h0 = zeros({o.num_layers() * dirs, batch, o.hidden_size()}, input.dtype());
  if (lstm && !c0.defined()) c0 = zeros({o.num_layers() * dirs, batch, o.hidden_size()}, input.dtype());
  // Python's check_forward_args.
  DType wdt = weights[0].dtype();
  KINDLE_CHECK_VALUE(input.dtype() == wdt, "RNN input dtype (", input.dtype(), ") does not match weight dtype (",
                     wdt, "). Convert input: input.to(", wdt, "), or convert model: model.to(", input.dtype(), ")");
  KINDLE_CHECK(input.dim() == 3, "input must have 3 dimensions, got ", input.dim());
  KINDLE_CHECK(input.size(-1) == o.input_size(), "input.size(-1) must be equal to input_size. Expected ",
               o.input_size(), ", got ", input.size(-1));
  std::vector<int64_t> expected = {o.num_layers() * dirs, batch, o.hidden_size()};
  KINDLE_CHECK(h0.sizes() == IntArrayRef(expected), lstm ? "Expected hidden[0] size " : "Expected hidden size ",
               tuple_str(expected), ", got ", list_str(h0.sizes()));
  if (lstm)
    KINDLE_CHECK(c0.sizes() == IntArrayRef(expected), "Expected hidden[1] size ", tuple_str(expected), ", got ",
                 list_str(c0.sizes()));
  auto [out, hn, cn] = rnn(input, h0, lstm ? opt(c0) : std::nullopt, weights, mode, o.bias(), o.num_layers(),
                           o.dropout(), is_training(), o.bidirectional(), o.batch_first());
  RNNOutput r{out, hn, lstm ? cn : Tensor()};
  if (!batched) {
    r.output = r.output.squeeze(std::vector<int64_t>{batch_dim});
    r.h_n = r.h_n.squeeze(std::vector<int64_t>{1});
    if (lstm) r.c_n = r.c_n.squeeze(std::vector<int64_t>{1});
  }
  return r;
}

std::tuple<utils::rnn::PackedSequence, Tensor, Tensor> RNNBase::forward_packed(const utils::rnn::PackedSequence& in,
                                                                                const Tensor& h0_, const Tensor& c0_) {
  const auto& o = options;
  const bool lstm = mode == "LSTM";
  const Tensor& data = in.data();
  KINDLE_CHECK(in.defined() && data.dim() == 2, python_name(mode), ": a packed input's data must be 2-D (steps, "
               "features), got ", data.defined() ? data.dim() : 0, "-D");
  KINDLE_CHECK(data.size(-1) == o.input_size(), "input.size(-1) must be equal to input_size. Expected ",
               o.input_size(), ", got ", data.size(-1));
  KINDLE_CHECK(!lstm || h0_.defined() == c0_.defined(), "LSTM: give both h0 and c0, or neither");
  const int64_t batch = in.batch_sizes().select(0, 0).item<int64_t>(), dirs = o.bidirectional() ? 2 : 1;
  const std::vector<int64_t> expected = {o.num_layers() * dirs, batch, o.hidden_size()};
  // States in the caller's batch order go in sorted order, and come back unsorted.
  auto state = [&](const Tensor& s, const char* which) {
    if (!s.defined()) return zeros(expected, data.dtype());
    KINDLE_CHECK(s.sizes() == IntArrayRef(expected), "Expected ", which, " size ", tuple_str(expected), ", got ",
                 list_str(s.sizes()));
    return in.sorted_indices().defined() ? s.index_select(1, in.sorted_indices()) : s;
  };
  Tensor h0 = state(h0_, lstm ? "hidden[0]" : "hidden"), c0 = lstm ? state(c0_, "hidden[1]") : Tensor();
  auto [out, hn, cn] = rnn_packed(data, in.batch_sizes(), h0, lstm ? opt(c0) : std::nullopt, flat_weights(), mode,
                                  o.bias(), o.num_layers(), o.dropout(), is_training(), o.bidirectional());
  auto unsort = [&](const Tensor& s) {
    return in.unsorted_indices().defined() ? s.index_select(1, in.unsorted_indices()) : s;
  };
  return {utils::rnn::PackedSequence(out, in.batch_sizes(), in.sorted_indices(), in.unsorted_indices()), unsort(hn),
          lstm ? unsort(cn) : Tensor()};
}

std::string RNNBase::extra_repr() const {
  const auto& o = options;
  std::string s = std::to_string(o.input_size()) + ", " + std::to_string(o.hidden_size());
  if (o.num_layers() != 1) s += ", num_layers=" + std::to_string(o.num_layers());
  if (!o.bias()) s += ", bias=False";
  if (o.batch_first()) s += ", batch_first=True";
  if (o.dropout() != 0) s += ", dropout=" + py_float(o.dropout());
  if (o.bidirectional()) s += ", bidirectional=True";
  return s;
}

static std::string rnn_mode(const RNNOptions& o) {
  if (o.nonlinearity() == "tanh") return "RNN_TANH";
  if (o.nonlinearity() == "relu") return "RNN_RELU";
  throw ValueError("Unknown nonlinearity '" + o.nonlinearity() + "'. Select from 'tanh' or 'relu'.");
}

RNNImpl::RNNImpl(const RNNOptions& o) : RNNBase(rnn_mode(o), o) {}

// ---- cells

RNNCellBase::RNNCellBase(const RNNCellOptions& o, int64_t num_chunks) : options(o) {
  int64_t rows = num_chunks * o.hidden_size();
  weight_ih = register_parameter("weight_ih", new_weight({rows, o.input_size()}, o.dtype()));
  weight_hh = register_parameter("weight_hh", new_weight({rows, o.hidden_size()}, o.dtype()));
  bias_ih = register_parameter("bias_ih", o.bias() ? new_weight({rows}, o.dtype()) : Tensor());
  bias_hh = register_parameter("bias_hh", o.bias() ? new_weight({rows}, o.dtype()) : Tensor());
  reset_parameters();
}

void RNNCellBase::reset_parameters() {
  double stdv = options.hidden_size() > 0 ? 1.0 / std::sqrt(double(options.hidden_size())) : 0;
  for (const Tensor& w : parameters()) init::uniform_(w, -stdv, stdv);
}

std::string RNNCellBase::extra_repr() const {
  std::string s = std::to_string(options.input_size()) + ", " + std::to_string(options.hidden_size());
  if (!options.bias()) s += ", bias=False";
  return s;
}

std::tuple<bool, Tensor, Tensor> RNNCellBase::batch(const char* name, const Tensor& input, const Tensor& state,
                                                    const char* state_name) const {
  KINDLE_CHECK_VALUE(input.dim() == 1 || input.dim() == 2, name, ": Expected input to be 1D or 2D, got ", input.dim(),
                     "D instead");
  KINDLE_CHECK_VALUE(!state.defined() || state.dim() == 1 || state.dim() == 2, name, ": Expected ", state_name,
                     " to be 1D or 2D, got ", state.dim(), "D instead");
  bool batched = input.dim() == 2;
  Tensor x = batched ? input : input.unsqueeze(0);
  Tensor h = state.defined() ? (batched ? state : state.unsqueeze(0))
                             : zeros({x.size(0), options.hidden_size()}, x.dtype());
  return {batched, x, h};
}

RNNCellImpl::RNNCellImpl(const RNNCellOptions& o) : RNNCellBase(o, 1) {
  KINDLE_CHECK_VALUE(o.nonlinearity() == "tanh" || o.nonlinearity() == "relu",
                     "Unknown nonlinearity: ", o.nonlinearity());
}

Tensor RNNCellImpl::forward(const Tensor& input, const Tensor& hx) {
  auto [batched, x, h] = batch("RNNCell", input, hx, "hidden");
  Tensor r = options.nonlinearity() == "tanh"
                 ? rnn_tanh_cell(x, h, weight_ih, weight_hh, opt(bias_ih), opt(bias_hh))
                 : rnn_relu_cell(x, h, weight_ih, weight_hh, opt(bias_ih), opt(bias_hh));
  return batched ? r : r.squeeze(std::vector<int64_t>{0});
}

Tensor GRUCellImpl::forward(const Tensor& input, const Tensor& hx) {
  auto [batched, x, h] = batch("GRUCell", input, hx, "hidden");
  Tensor r = gru_cell(x, h, weight_ih, weight_hh, opt(bias_ih), opt(bias_hh));
  return batched ? r : r.squeeze(std::vector<int64_t>{0});
}

RNNStateOutput LSTMCellImpl::forward(const Tensor& input, const Tensor& h0, const Tensor& c0) {
  auto [batched, x, h] = batch("LSTMCell", input, h0, "hx[0]");
  auto [batched2, x2, c] = batch("LSTMCell", input, c0, "hx[1]");
  auto [hn, cn] = lstm_cell(x, h, c, weight_ih, weight_hh, opt(bias_ih), opt(bias_hh));
  if (batched) return {hn, cn};
  return {hn.squeeze(std::vector<int64_t>{0}), cn.squeeze(std::vector<int64_t>{0})};
}

}  // namespace kindle::nn
