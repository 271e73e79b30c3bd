// Recurrent layers (RNN, LSTM, GRU) and cells over the C++ recurrent kernels, with Python's
// parameter names (weight_ih_l0, weight_hh_l0_reverse, ...), U(-1/sqrt(hidden), 1/sqrt(hidden))
// initialisation and input conventions: input (T, N, F), or (N, T, F) with batch_first, or
// unbatched (T, F); states (layers * directions, N, hidden).
//
//   nn::LSTM lstm(nn::LSTMOptions(10, 20).num_layers(2));
//   Tensor y = lstm(x);                           // the output sequence (zero initial state)
//   auto [out, state] = lstm->forward(x, std::make_tuple(h0, c0));   // libtorch's form
//   auto [h, c] = state;
//   auto [out2, h_n] = gru->forward(x, h0);
//   auto [packed_out, state2] = lstm->forward_with_packed_input(packed);  // a PackedSequence
#pragma once
#include <optional>
#include <tuple>

#include "kindle/nn/module.h"
#include "kindle/nn/options.h"
#include "kindle/nn/packed_sequence.h"

namespace kindle::nn {

// libtorch's results: LSTM gives (output, (h_n, c_n)), RNN and GRU (output, h_n). Each also
// converts to its output tensor, so `Tensor y = lstm(x)` and chaining layers keep working.
struct LSTMOutput : std::tuple<Tensor, std::tuple<Tensor, Tensor>> {
  using std::tuple<Tensor, std::tuple<Tensor, Tensor>>::tuple;
  operator Tensor() const { return std::get<0>(*this); }  // NOLINT: implicit, the output sequence
};
struct RNNStateOutput : std::tuple<Tensor, Tensor> {
  using std::tuple<Tensor, Tensor>::tuple;
  operator Tensor() const { return std::get<0>(*this); }  // NOLINT
};

// h_n and c_n are (layers * directions, N, hidden); c_n is undefined except for LSTM.
struct RNNOutput {
  Tensor output, h_n, c_n;
};

class RNNBase : public Module {
 public:
  // mode: "RNN_TANH", "RNN_RELU", "LSTM" or "GRU".
  RNNBase(std::string mode, const RNNOptions& options);
  // The output sequence, from zero initial states.
  Tensor forward(const Tensor& input) override;
  // Undefined h0 / c0 start from zeros.
  RNNOutput forward_with_state(const Tensor& input, const Tensor& h0 = {}, const Tensor& c0 = {});
  // A packed batch: the output packed as the input; h0 / c0 in the batch's original order.
  std::tuple<utils::rnn::PackedSequence, Tensor, Tensor> forward_packed(const utils::rnn::PackedSequence& input,
                                                                         const Tensor& h0 = {}, const Tensor& c0 = {});
  // The parameters in the kernel's order, looked up by name (so replaced ones are seen).
  std::vector<Tensor> flat_weights() const;
  void reset_parameters();
  std::string extra_repr() const override;

  RNNOptions options;
  std::string mode;

 private:
  std::vector<std::string> flat_names_;
};

class RNNImpl : public RNNBase {
 public:
  explicit RNNImpl(const RNNOptions& options);
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  RNNStateOutput forward(const Tensor& input, const Tensor& hx = {}) {
    RNNOutput r = forward_with_state(input, hx);
    return {r.output, r.h_n};
  }
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(const utils::rnn::PackedSequence& input,
                                                                           const Tensor& hx = {}) {
    auto [out, h, c] = forward_packed(input, hx);
    return {out, h};
  }
  KINDLE_MODULE_CALL
};
KINDLE_MODULE(RNN);

class LSTMImpl : public RNNBase {
 public:
  explicit LSTMImpl(const LSTMOptions& options) : RNNBase("LSTM", options) {}
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  // hx: (h_0, c_0); none starts from zeros.
  LSTMOutput forward(const Tensor& input, const std::optional<std::tuple<Tensor, Tensor>>& hx = std::nullopt) {
    RNNOutput r = hx ? forward_with_state(input, std::get<0>(*hx), std::get<1>(*hx)) : forward_with_state(input);
    return {r.output, std::make_tuple(r.h_n, r.c_n)};
  }
  LSTMOutput forward(const Tensor& input, const Tensor& h0, const Tensor& c0) {
    return forward(input, std::make_tuple(h0, c0));
  }
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> forward_with_packed_input(
      const utils::rnn::PackedSequence& input, const std::optional<std::tuple<Tensor, Tensor>>& hx = std::nullopt) {
    auto [out, h, c] = hx ? forward_packed(input, std::get<0>(*hx), std::get<1>(*hx)) : forward_packed(input);
    return {out, std::make_tuple(h, c)};
  }
  KINDLE_MODULE_CALL
};
KINDLE_MODULE(LSTM);

class GRUImpl : public RNNBase {
 public:
  explicit GRUImpl(const GRUOptions& options) : RNNBase("GRU", options) {}
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  RNNStateOutput forward(const Tensor& input, const Tensor& hx = {}) {
    RNNOutput r = forward_with_state(input, hx);
    return {r.output, r.h_n};
  }
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(const utils::rnn::PackedSequence& input,
                                                                           const Tensor& hx = {}) {
    auto [out, h, c] = forward_packed(input, hx);
    return {out, h};
  }
  KINDLE_MODULE_CALL
};
KINDLE_MODULE(GRU);

// Cells: one step. Inputs (N, input_size) or unbatched (input_size); states likewise.
// `cell->forward(x)` and `cell(x, h)` are libtorch's calls: RNNCell and GRUCell return h',
// LSTMCell returns (h', c') (and converts to h'). Module's one-tensor forward (what Sequential
// calls) gives h' from zero states for each of them.
class RNNCellBase : public Module {
 public:
  RNNCellBase(const RNNCellOptions& options, int64_t num_chunks);
  Tensor forward(const Tensor& input) override { return hidden_from_zeros(input); }
  void reset_parameters();
  std::string extra_repr() const override;
  RNNCellOptions options;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  virtual Tensor hidden_from_zeros(const Tensor& input) = 0;
  // (batched?, input as 2-D, state as 2-D or zeros)
  std::tuple<bool, Tensor, Tensor> batch(const char* name, const Tensor& input, const Tensor& state,
                                         const char* state_name) const;
};

class RNNCellImpl : public RNNCellBase {
 public:
  explicit RNNCellImpl(const RNNCellOptions& options);
  RNNCellImpl(int64_t input_size, int64_t hidden_size) : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  // An undefined hx starts from zeros.
  Tensor forward(const Tensor& input, const Tensor& hx = {});
  KINDLE_MODULE_CALL

 protected:
  Tensor hidden_from_zeros(const Tensor& input) override { return forward(input); }
};
KINDLE_MODULE(RNNCell);

class GRUCellImpl : public RNNCellBase {
 public:
  explicit GRUCellImpl(const GRUCellOptions& options) : RNNCellBase(options, 3) {}
  GRUCellImpl(int64_t input_size, int64_t hidden_size) : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  Tensor forward(const Tensor& input, const Tensor& hx = {});
  KINDLE_MODULE_CALL

 protected:
  Tensor hidden_from_zeros(const Tensor& input) override { return forward(input); }
};
KINDLE_MODULE(GRUCell);

class LSTMCellImpl : public RNNCellBase {
 public:
  explicit LSTMCellImpl(const LSTMCellOptions& options) : RNNCellBase(options, 4) {}
  LSTMCellImpl(int64_t input_size, int64_t hidden_size) : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  // (h', c'); hx = (h, c), or none for zeros (libtorch's form).
  RNNStateOutput forward(const Tensor& input, const std::optional<std::tuple<Tensor, Tensor>>& hx = std::nullopt) {
    return hx ? forward(input, std::get<0>(*hx), std::get<1>(*hx)) : forward(input, Tensor(), Tensor());
  }
  // Undefined h / c start from zeros.
  RNNStateOutput forward(const Tensor& input, const Tensor& h, const Tensor& c);
  KINDLE_MODULE_CALL

 protected:
  Tensor hidden_from_zeros(const Tensor& input) override { return std::get<0>(forward(input)); }
};
KINDLE_MODULE(LSTMCell);

}  // namespace kindle::nn

// Structured bindings: auto [output, state] = lstm->forward(x);
template <>
struct std::tuple_size<kindle::nn::LSTMOutput> : std::integral_constant<size_t, 2> {};
template <size_t I>
struct std::tuple_element<I, kindle::nn::LSTMOutput> : std::tuple_element<I, std::tuple<kindle::Tensor, std::tuple<kindle::Tensor, kindle::Tensor>>> {};
template <>
struct std::tuple_size<kindle::nn::RNNStateOutput> : std::integral_constant<size_t, 2> {};
template <size_t I>
struct std::tuple_element<I, kindle::nn::RNNStateOutput> : std::tuple_element<I, std::tuple<kindle::Tensor, kindle::Tensor>> {};
