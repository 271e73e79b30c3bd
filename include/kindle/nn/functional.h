// libtorch's functional spellings over the op table:
//  - ATen's names at the top level that the op table spells otherwise: max_pool2d (values only),
//    the losses with a Reduction::Mean/Sum/None argument in ATen's order
//    (nll_loss(x, t, weight, Reduction::Sum)), cross_entropy_loss;
//  - kindle::nn::functional (F): each function with its *FuncOptions, as torch::nn::functional:
//    F::dropout(x, F::DropoutFuncOptions().p(0.2).training(is_training())).
#pragma once
#include <optional>
#include <string>
#include <variant>

#include "kindle/nn/enum.h"
#include "kindle/nn/options.h"
#include "kindle/ops.h"

namespace kindle {

// ATen's reduction codes. A scoped enum, so that no overload taking an int (ignore_index) can
// take a reduction by accident.
namespace Reduction {
enum class Reduction : int64_t { None = 0, Mean = 1, Sum = 2 };
inline constexpr Reduction None = Reduction::None;
inline constexpr Reduction Mean = Reduction::Mean;
inline constexpr Reduction Sum = Reduction::Sum;
}  // namespace Reduction
std::string_view reduction_name(Reduction::Reduction r);

Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                Reduction::Reduction reduction, int64_t ignore_index = -100);
Tensor cross_entropy_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                          Reduction::Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                          double label_smoothing = 0.0);
Tensor mse_loss(const Tensor& self, const Tensor& target, Reduction::Reduction reduction);
Tensor l1_loss(const Tensor& self, const Tensor& target, Reduction::Reduction reduction);
Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, Reduction::Reduction reduction, double beta = 1.0);
Tensor huber_loss(const Tensor& self, const Tensor& target, Reduction::Reduction reduction, double delta = 1.0);
Tensor kl_div(const Tensor& self, const Tensor& target, Reduction::Reduction reduction, bool log_target = false);
Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                            Reduction::Reduction reduction);
Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& pos_weight, Reduction::Reduction reduction);

// Max pooling, the values only (max_pool2d_with_indices gives the indices too).
Tensor max_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor max_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);

namespace nn::functional {

// A loss reduction given as libtorch does (kindle::kSum) or as Python does ("sum").
using LossReduction = EnumName;

struct DropoutFuncOptions {
  KINDLE_ARG(double, p) = 0.5;
  KINDLE_ARG(bool, training) = true;
  KINDLE_ARG(bool, inplace) = false;
};
Tensor dropout(const Tensor& input, const DropoutFuncOptions& options = {});
Tensor dropout2d(const Tensor& input, const DropoutFuncOptions& options = {});
Tensor dropout3d(const Tensor& input, const DropoutFuncOptions& options = {});

struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}
  KINDLE_ARG(int64_t, dim);
  KINDLE_ARG(std::optional<DType>, dtype);
};
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;
Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options);
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options);

struct LeakyReLUFuncOptions {
  KINDLE_ARG(double, negative_slope) = 0.01;
  KINDLE_ARG(bool, inplace) = false;
};
Tensor leaky_relu(const Tensor& input, const LeakyReLUFuncOptions& options = {});
struct GELUFuncOptions {
  KINDLE_ARG(std::string, approximate) = "none";
};
Tensor gelu(const Tensor& input, const GELUFuncOptions& options = {});
Tensor relu(const Tensor& input, bool inplace = false);
Tensor silu(const Tensor& input, bool inplace = false);
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});

template <size_t D>
struct MaxPoolFuncOptions {
  MaxPoolFuncOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  KINDLE_ARG(ExpandingArray<D>, kernel_size);
  KINDLE_ARG(ExpandingArray<D>, stride);
  KINDLE_ARG(ExpandingArray<D>, padding) = 0;
  KINDLE_ARG(ExpandingArray<D>, dilation) = 1;
  KINDLE_ARG(bool, ceil_mode) = false;
};
using MaxPool1dFuncOptions = MaxPoolFuncOptions<1>;
using MaxPool2dFuncOptions = MaxPoolFuncOptions<2>;
Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& options);
using MaxPool3dFuncOptions = MaxPoolFuncOptions<3>;
Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options);
Tensor max_pool3d(const Tensor& input, const MaxPool3dFuncOptions& options);
template <size_t D>
struct AvgPoolFuncOptions {
  AvgPoolFuncOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  KINDLE_ARG(ExpandingArray<D>, kernel_size);
  KINDLE_ARG(ExpandingArray<D>, stride);
  KINDLE_ARG(ExpandingArray<D>, padding) = 0;
  KINDLE_ARG(bool, ceil_mode) = false;
  KINDLE_ARG(bool, count_include_pad) = true;
  KINDLE_ARG(std::optional<int64_t>, divisor_override);
};
using AvgPool2dFuncOptions = AvgPoolFuncOptions<2>;
using AvgPool3dFuncOptions = AvgPoolFuncOptions<3>;
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options);
Tensor avg_pool3d(const Tensor& input, const AvgPool3dFuncOptions& options);
template <size_t D>
struct AdaptiveAvgPoolFuncOptions {
  AdaptiveAvgPoolFuncOptions(ExpandingArray<D> output_size) : output_size_(output_size) {}
  KINDLE_ARG(ExpandingArray<D>, output_size);
};
using AdaptiveAvgPool2dFuncOptions = AdaptiveAvgPoolFuncOptions<2>;
using AdaptiveAvgPool3dFuncOptions = AdaptiveAvgPoolFuncOptions<3>;
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options);
Tensor adaptive_avg_pool3d(const Tensor& input, const AdaptiveAvgPool3dFuncOptions& options);

template <size_t D>
struct ConvFuncOptions {
  KINDLE_ARG(Tensor, bias);
  KINDLE_ARG(ExpandingArray<D>, stride) = 1;
  KINDLE_ARG(ConvPadding<D>, padding) = 0;  // or kSame / kValid
  KINDLE_ARG(ExpandingArray<D>, dilation) = 1;
  KINDLE_ARG(int64_t, groups) = 1;
};
using Conv2dFuncOptions = ConvFuncOptions<2>;
using Conv3dFuncOptions = ConvFuncOptions<3>;
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options = {});
Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& options = {});

struct BatchNormFuncOptions {
  KINDLE_ARG(Tensor, weight);
  KINDLE_ARG(Tensor, bias);
  KINDLE_ARG(bool, training) = false;
  KINDLE_ARG(std::optional<double>, momentum) = 0.1;
  KINDLE_ARG(double, eps) = 1e-5;
};
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options = {});
struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  KINDLE_ARG(std::vector<int64_t>, normalized_shape);
  KINDLE_ARG(Tensor, weight);
  KINDLE_ARG(Tensor, bias);
  KINDLE_ARG(double, eps) = 1e-5;
};
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options);
struct NormalizeFuncOptions {
  KINDLE_ARG(double, p) = 2.0;
  KINDLE_ARG(int64_t, dim) = 1;
  KINDLE_ARG(double, eps) = 1e-12;
};
Tensor normalize(const Tensor& input, const NormalizeFuncOptions& options = {});
struct PadFuncOptions {
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}
  KINDLE_ARG(std::vector<int64_t>, pad);
  KINDLE_ARG(std::string, mode) = "constant";
  KINDLE_ARG(double, value) = 0;
};
Tensor pad(const Tensor& input, const PadFuncOptions& options);

struct CrossEntropyFuncOptions {
  KINDLE_ARG(Tensor, weight);
  KINDLE_ARG(int64_t, ignore_index) = -100;
  KINDLE_ARG(LossReduction, reduction) = kMean;
  KINDLE_ARG(double, label_smoothing) = 0.0;
};
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options = {});
struct NLLLossFuncOptions {
  KINDLE_ARG(Tensor, weight);
  KINDLE_ARG(int64_t, ignore_index) = -100;
  KINDLE_ARG(LossReduction, reduction) = kMean;
};
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options = {});
struct BinaryCrossEntropyFuncOptions {
  KINDLE_ARG(Tensor, weight);
  KINDLE_ARG(LossReduction, reduction) = kMean;
};
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& options = {});
struct BinaryCrossEntropyWithLogitsFuncOptions {
  KINDLE_ARG(Tensor, weight);
  KINDLE_ARG(Tensor, pos_weight);
  KINDLE_ARG(LossReduction, reduction) = kMean;
};
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options = {});
struct ReductionFuncOptions {
  ReductionFuncOptions() = default;
  ReductionFuncOptions(LossReduction r) : reduction_(std::move(r)) {}
  KINDLE_ARG(LossReduction, reduction) = kMean;
};
using MSELossFuncOptions = ReductionFuncOptions;
using L1LossFuncOptions = ReductionFuncOptions;
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options = {});
struct SmoothL1LossFuncOptions {
  KINDLE_ARG(LossReduction, reduction) = kMean;
  KINDLE_ARG(double, beta) = 1.0;
};
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options = {});

// size or scale_factor (one value for every spatial dim, or one per dim); mode "nearest",
// "bilinear", ... (or kindle::kBilinear).
struct InterpolateFuncOptions {
  KINDLE_ARG(std::optional<std::vector<int64_t>>, size);
  KINDLE_ARG(std::optional<std::vector<double>>, scale_factor);
  KINDLE_ARG(EnumName, mode) = "nearest";
  KINDLE_ARG(std::optional<bool>, align_corners);
  KINDLE_ARG(bool, antialias) = false;
};
Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options = {});
inline Tensor one_hot(const Tensor& input, int64_t num_classes = -1) { return kindle::one_hot(input, num_classes); }

// The ops behind FeatureAlphaDropout, CTCLoss and Python's F.gumbel_softmax / F.pdist.
struct FeatureAlphaDropoutFuncOptions {
  KINDLE_ARG(double, p) = 0.5;
  KINDLE_ARG(bool, training) = false;
  KINDLE_ARG(bool, inplace) = false;
};
inline Tensor feature_alpha_dropout(const Tensor& input, const FeatureAlphaDropoutFuncOptions& options = {}) {
  Tensor out = kindle::feature_alpha_dropout(input, options.p(), options.training());
  return options.inplace() && !out.is_same(input) ? input.copy_(out) : out;
}
struct GumbelSoftmaxFuncOptions {
  KINDLE_ARG(double, tau) = 1.0;
  KINDLE_ARG(bool, hard) = false;
  KINDLE_ARG(int64_t, dim) = -1;
};
inline Tensor gumbel_softmax(const Tensor& logits, const GumbelSoftmaxFuncOptions& options = {}) {
  return kindle::gumbel_softmax(logits, options.tau(), options.hard(), options.dim());
}
inline Tensor pdist(const Tensor& input, double p = 2.0) { return kindle::pdist(input, p); }
struct CTCLossFuncOptions {
  KINDLE_ARG(int64_t, blank) = 0;
  KINDLE_ARG(LossReduction, reduction) = "mean";
  KINDLE_ARG(bool, zero_infinity) = false;
};
inline Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                       const Tensor& target_lengths, const CTCLossFuncOptions& options = {}) {
  return kindle::ctc_loss(log_probs, targets, input_lengths, target_lengths, options.blank(),
                          options.reduction().name(), options.zero_infinity());
}

}  // namespace nn::functional
}  // namespace kindle
