// Constructor options of the layers, in a readable chained style:
//   nn::Conv2d(nn::Conv2dOptions(3, 64, 3).stride(1).padding(1).bias(false))
// The required arguments go to the options' constructor; every optional one has a setter that
// returns the options (so calls chain) and a getter of the same name. Defaults are PyTorch's.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "kindle/nn/enum.h"
#include "kindle/tensor.h"

// Declares an option: a chainable setter `name(value)`, a getter `name()` and the member name_.
#define KINDLE_ARG(T, name)                                     \
 public:                                                        \
  auto name(const T& new_##name)->decltype(*this) {             \
    this->name##_ = new_##name;                                 \
    return *this;                                               \
  }                                                             \
  const T& name() const noexcept { return this->name##_; }      \
  T& name() noexcept { return this->name##_; }                  \
                                                                \
 private:                                                       \
  T name##_

namespace kindle::nn {

// D integers given as one (repeated) or as D values: kernel_size(3) or kernel_size({3, 5}).
template <size_t D>
class ExpandingArray {
 public:
  ExpandingArray(int64_t v) { values_.fill(v); }
  ExpandingArray(std::initializer_list<int64_t> list) : ExpandingArray(std::vector<int64_t>(list)) {}
  ExpandingArray(const std::vector<int64_t>& list) {
    KINDLE_CHECK_VALUE(list.size() == D || list.size() == 1, "expected ", D, " values (or one for all ", D,
                       " dimensions), got ", list.size());
    for (size_t i = 0; i < D; ++i) values_[i] = list[list.size() == 1 ? 0 : i];
  }
  int64_t operator[](size_t i) const { return values_[i]; }
  size_t size() const { return D; }
  operator IntArrayRef() const { return IntArrayRef(values_.data(), D); }
  IntArrayRef ref() const { return IntArrayRef(values_.data(), D); }
  bool all_equal(int64_t v) const {
    for (int64_t x : values_)
      if (x != v) return false;
    return true;
  }
  std::string str() const;  // "(3, 3)" or "(3,)", as Python prints tuples

 private:
  std::array<int64_t, D> values_{};
};

// Convolution padding: D integers, or "valid" / "same" (kindle::kValid / kSame; checked by the op).
template <size_t D>
class ConvPadding : public ExpandingArray<D> {
 public:
  ConvPadding(int64_t v) : ExpandingArray<D>(v) {}
  ConvPadding(int v) : ExpandingArray<D>(int64_t(v)) {}  // a literal 0 must not read as a null string
  ConvPadding(std::initializer_list<int64_t> list) : ExpandingArray<D>(list) {}
  ConvPadding(const char* mode) : ExpandingArray<D>(0), mode_(mode) {}
  ConvPadding(std::string mode) : ExpandingArray<D>(0), mode_(std::move(mode)) {}
  ConvPadding(enumtype::kSame) : ConvPadding("same") {}
  ConvPadding(enumtype::kValid) : ConvPadding("valid") {}
  // "" when given as integers.
  const std::string& mode() const { return mode_; }

 private:
  std::string mode_;
};

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  KINDLE_ARG(int64_t, in_features);
  KINDLE_ARG(int64_t, out_features);
  KINDLE_ARG(bool, bias) = true;
  KINDLE_ARG(std::optional<DType>, dtype);
};

template <size_t D>
struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  KINDLE_ARG(int64_t, in_channels);
  KINDLE_ARG(int64_t, out_channels);
  KINDLE_ARG(ExpandingArray<D>, kernel_size);
  KINDLE_ARG(ExpandingArray<D>, stride) = 1;
  KINDLE_ARG(ConvPadding<D>, padding) = 0;
  KINDLE_ARG(ExpandingArray<D>, dilation) = 1;
  KINDLE_ARG(int64_t, groups) = 1;
  KINDLE_ARG(bool, bias) = true;
  KINDLE_ARG(std::string, padding_mode) = "zeros";  // zeros, reflect, replicate, circular
  KINDLE_ARG(std::optional<DType>, dtype);
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;

struct LeakyReLUOptions {
  KINDLE_ARG(double, negative_slope) = 0.01;
  KINDLE_ARG(bool, inplace) = false;
};

template <size_t D>
struct ConvTransposeOptions {
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  KINDLE_ARG(int64_t, in_channels);
  KINDLE_ARG(int64_t, out_channels);
  KINDLE_ARG(ExpandingArray<D>, kernel_size);
  KINDLE_ARG(ExpandingArray<D>, stride) = 1;
  KINDLE_ARG(ExpandingArray<D>, padding) = 0;
  KINDLE_ARG(ExpandingArray<D>, output_padding) = 0;
  KINDLE_ARG(int64_t, groups) = 1;
  KINDLE_ARG(bool, bias) = true;
  KINDLE_ARG(ExpandingArray<D>, dilation) = 1;
  KINDLE_ARG(std::string, padding_mode) = "zeros";  // only zeros, as in Python
  KINDLE_ARG(std::optional<DType>, dtype);
};
using ConvTranspose1dOptions = ConvTransposeOptions<1>;
using ConvTranspose2dOptions = ConvTransposeOptions<2>;
using ConvTranspose3dOptions = ConvTransposeOptions<3>;

template <size_t D>
struct MaxPoolOptions {
  MaxPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  KINDLE_ARG(ExpandingArray<D>, kernel_size);
  KINDLE_ARG(ExpandingArray<D>, stride);  // defaults to kernel_size
  KINDLE_ARG(ExpandingArray<D>, padding) = 0;
  KINDLE_ARG(ExpandingArray<D>, dilation) = 1;
  KINDLE_ARG(bool, ceil_mode) = false;
};
using MaxPool1dOptions = MaxPoolOptions<1>;
using MaxPool2dOptions = MaxPoolOptions<2>;
using MaxPool3dOptions = MaxPoolOptions<3>;

template <size_t D>
struct AvgPoolOptions {
  AvgPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  KINDLE_ARG(ExpandingArray<D>, kernel_size);
  KINDLE_ARG(ExpandingArray<D>, stride);  // defaults to kernel_size
  KINDLE_ARG(ExpandingArray<D>, padding) = 0;
  KINDLE_ARG(bool, ceil_mode) = false;
  KINDLE_ARG(bool, count_include_pad) = true;
  KINDLE_ARG(std::optional<int64_t>, divisor_override);  // 2-d and 3-d pooling, as libtorch
};
using AvgPool1dOptions = AvgPoolOptions<1>;
using AvgPool2dOptions = AvgPoolOptions<2>;
using AvgPool3dOptions = AvgPoolOptions<3>;

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  KINDLE_ARG(int64_t, num_features);
  KINDLE_ARG(double, eps) = 1e-5;
  // nullopt: cumulative moving average, as Python's momentum=None.
  KINDLE_ARG(std::optional<double>, momentum) = 0.1;
  KINDLE_ARG(bool, affine) = true;
  KINDLE_ARG(bool, track_running_stats) = true;
  KINDLE_ARG(std::optional<DType>, dtype);
};

using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;
using AdaptiveAvgPool2dOptions = ExpandingArray<2>;

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  LayerNormOptions(int64_t normalized_shape) : normalized_shape_({normalized_shape}) {}
  KINDLE_ARG(std::vector<int64_t>, normalized_shape);
  KINDLE_ARG(double, eps) = 1e-5;
  KINDLE_ARG(bool, elementwise_affine) = true;
  KINDLE_ARG(bool, bias) = true;
  KINDLE_ARG(std::optional<DType>, dtype);
};

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : num_groups_(num_groups), num_channels_(num_channels) {}
  KINDLE_ARG(int64_t, num_groups);
  KINDLE_ARG(int64_t, num_channels);
  KINDLE_ARG(double, eps) = 1e-5;
  KINDLE_ARG(bool, affine) = true;
  KINDLE_ARG(std::optional<DType>, dtype);
};

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}
  KINDLE_ARG(double, p);
};

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  KINDLE_ARG(int64_t, num_embeddings);
  KINDLE_ARG(int64_t, embedding_dim);
  KINDLE_ARG(std::optional<int64_t>, padding_idx);
  KINDLE_ARG(std::optional<double>, max_norm);
  KINDLE_ARG(double, norm_type) = 2.0;
  KINDLE_ARG(bool, scale_grad_by_freq) = false;
  KINDLE_ARG(std::optional<DType>, dtype);
};

struct RNNOptions {
  RNNOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  KINDLE_ARG(int64_t, input_size);
  KINDLE_ARG(int64_t, hidden_size);
  KINDLE_ARG(int64_t, num_layers) = 1;
  KINDLE_ARG(std::string, nonlinearity) = "tanh";  // RNN only: tanh or relu
  KINDLE_ARG(bool, bias) = true;
  KINDLE_ARG(bool, batch_first) = false;
  KINDLE_ARG(double, dropout) = 0.0;
  KINDLE_ARG(bool, bidirectional) = false;
  KINDLE_ARG(std::optional<DType>, dtype);
};
using LSTMOptions = RNNOptions;
using GRUOptions = RNNOptions;

struct RNNCellOptions {
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  KINDLE_ARG(int64_t, input_size);
  KINDLE_ARG(int64_t, hidden_size);
  KINDLE_ARG(bool, bias) = true;
  KINDLE_ARG(std::string, nonlinearity) = "tanh";  // RNNCell only
  KINDLE_ARG(std::optional<DType>, dtype);
};
using LSTMCellOptions = RNNCellOptions;
using GRUCellOptions = RNNCellOptions;

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads) : embed_dim_(embed_dim), num_heads_(num_heads) {}
  KINDLE_ARG(int64_t, embed_dim);
  KINDLE_ARG(int64_t, num_heads);
  KINDLE_ARG(double, dropout) = 0.0;
  KINDLE_ARG(bool, bias) = true;
  KINDLE_ARG(bool, add_bias_kv) = false;
  KINDLE_ARG(bool, add_zero_attn) = false;
  KINDLE_ARG(std::optional<int64_t>, kdim);
  KINDLE_ARG(std::optional<int64_t>, vdim);
  KINDLE_ARG(bool, batch_first) = false;
  KINDLE_ARG(std::optional<DType>, dtype);
};

struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  KINDLE_ARG(int64_t, d_model);
  KINDLE_ARG(int64_t, nhead);
  KINDLE_ARG(int64_t, dim_feedforward) = 2048;
  KINDLE_ARG(double, dropout) = 0.1;
  KINDLE_ARG(std::string, activation) = "relu";  // relu or gelu
  KINDLE_ARG(double, layer_norm_eps) = 1e-5;
  KINDLE_ARG(bool, batch_first) = false;
  KINDLE_ARG(bool, norm_first) = false;
  KINDLE_ARG(bool, bias) = true;
  KINDLE_ARG(std::optional<DType>, dtype);
};

// The decoder layer takes the encoder layer's arguments (libtorch has a separate type of the same shape).
using TransformerDecoderLayerOptions = TransformerEncoderLayerOptions;

struct TransformerOptions {
  TransformerOptions(int64_t d_model = 512, int64_t nhead = 8) : d_model_(d_model), nhead_(nhead) {}
  KINDLE_ARG(int64_t, d_model);
  KINDLE_ARG(int64_t, nhead);
  KINDLE_ARG(int64_t, num_encoder_layers) = 6;
  KINDLE_ARG(int64_t, num_decoder_layers) = 6;
  KINDLE_ARG(int64_t, dim_feedforward) = 2048;
  KINDLE_ARG(double, dropout) = 0.1;
  KINDLE_ARG(std::string, activation) = "relu";  // relu or gelu
  KINDLE_ARG(double, layer_norm_eps) = 1e-5;
  KINDLE_ARG(bool, batch_first) = false;
  KINDLE_ARG(bool, norm_first) = false;
  KINDLE_ARG(bool, bias) = true;
  KINDLE_ARG(std::optional<DType>, dtype);
};

// Losses: reduction is "none", "mean" or "sum" (or kindle::kNone, kMean, kSum).
struct CrossEntropyLossOptions {
  KINDLE_ARG(Tensor, weight);  // undefined: no class weights
  KINDLE_ARG(int64_t, ignore_index) = -100;
  KINDLE_ARG(EnumName, reduction) = "mean";
  KINDLE_ARG(double, label_smoothing) = 0.0;
};
struct NLLLossOptions {
  KINDLE_ARG(Tensor, weight);
  KINDLE_ARG(int64_t, ignore_index) = -100;
  KINDLE_ARG(EnumName, reduction) = "mean";
};
struct BCELossOptions {
  KINDLE_ARG(Tensor, weight);
  KINDLE_ARG(EnumName, reduction) = "mean";
};
struct BCEWithLogitsLossOptions {
  KINDLE_ARG(Tensor, weight);
  KINDLE_ARG(Tensor, pos_weight);
  KINDLE_ARG(EnumName, reduction) = "mean";
};
struct ReductionOptions {
  ReductionOptions(EnumName reduction = "mean") : reduction_(std::move(reduction)) {}
  KINDLE_ARG(EnumName, reduction);
};
using MSELossOptions = ReductionOptions;
using L1LossOptions = ReductionOptions;
struct SmoothL1LossOptions {
  KINDLE_ARG(EnumName, reduction) = "mean";
  KINDLE_ARG(double, beta) = 1.0;
};
struct HuberLossOptions {
  KINDLE_ARG(EnumName, reduction) = "mean";
  KINDLE_ARG(double, delta) = 1.0;
};
struct KLDivLossOptions {
  KINDLE_ARG(EnumName, reduction) = "mean";
  KINDLE_ARG(bool, log_target) = false;
};

template <size_t D>
std::string ExpandingArray<D>::str() const {
  std::string s = "(";
  for (size_t i = 0; i < D; ++i) s += (i ? ", " : "") + std::to_string(values_[i]);
  return s + (D == 1 ? ",)" : ")");
}

}  // namespace kindle::nn
