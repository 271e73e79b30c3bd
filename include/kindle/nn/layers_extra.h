// Shrinkage, local response normalisation, the soft-margin losses and the remaining pooling and
// patch layers of torch.nn, with Python's names, arguments and defaults (and libtorch's options
// spellings), each a thin module over the core op Python's layer calls too.
//   nn::Hardshrink shrink(nn::HardshrinkOptions().lambda(0.3));
//   nn::AdaptiveMaxPool1d pool(3);  auto [values, indices] = pool->forward_with_indices(x);
#pragma once
#include <optional>
#include <tuple>

#include "kindle/nn/loss.h"
#include "kindle/nn/module.h"
#include "kindle/nn/options.h"

namespace kindle::nn {

struct HardshrinkOptions {
  HardshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}
  KINDLE_ARG(double, lambda);
};
using SoftshrinkOptions = HardshrinkOptions;

// x where |x| > lambda, else 0.
class HardshrinkImpl : public Module {
 public:
  explicit HardshrinkImpl(const HardshrinkOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  HardshrinkOptions options;
};
KINDLE_MODULE(Hardshrink);

// x - lambda * sign(x) where |x| > lambda, else 0.
class SoftshrinkImpl : public Module {
 public:
  explicit SoftshrinkImpl(const SoftshrinkOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  SoftshrinkOptions options;
};
KINDLE_MODULE(Softshrink);

struct LocalResponseNormOptions {
  LocalResponseNormOptions(int64_t size) : size_(size) {}
  KINDLE_ARG(int64_t, size);
  KINDLE_ARG(double, alpha) = 1e-4;
  KINDLE_ARG(double, beta) = 0.75;
  KINDLE_ARG(double, k) = 1.0;
};
class LocalResponseNormImpl : public Module {
 public:
  explicit LocalResponseNormImpl(const LocalResponseNormOptions& options) : options(options) {}
  LocalResponseNormImpl(int64_t size) : options(size) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  LocalResponseNormOptions options;
};
KINDLE_MODULE(LocalResponseNorm);

// Softmax over the channels of (C, H, W) or (N, C, H, W).
class Softmax2dImpl : public Module {
 public:
  Tensor forward(const Tensor& input) override;
};
KINDLE_MODULE(Softmax2d);

struct SoftMarginLossOptions {
  SoftMarginLossOptions(EnumName reduction = "mean") : reduction_(std::move(reduction)) {}
  KINDLE_ARG(EnumName, reduction);
};
class SoftMarginLossImpl : public Loss {
 public:
  explicit SoftMarginLossImpl(const SoftMarginLossOptions& o = {}) : Loss(o.reduction()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
};
KINDLE_MODULE(SoftMarginLoss);

struct MultiLabelSoftMarginLossOptions {
  KINDLE_ARG(Tensor, weight);  // undefined: no class weights
  KINDLE_ARG(EnumName, reduction) = "mean";
};
class MultiLabelSoftMarginLossImpl : public Loss {
 public:
  explicit MultiLabelSoftMarginLossImpl(const MultiLabelSoftMarginLossOptions& o = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  Tensor weight;  // the buffer "weight", as Python's
};
KINDLE_MODULE(MultiLabelSoftMarginLoss);

// ---- pooling over the last dims (1-d layers run the 2-d ops on a height of one, as Python's)

template <size_t D>
struct AdaptivePoolOptions {
  AdaptivePoolOptions(ExpandingArray<D> output_size) : output_size_(output_size) {}
  KINDLE_ARG(ExpandingArray<D>, output_size);
};
using AdaptiveAvgPool1dOptions = AdaptivePoolOptions<1>;
using AdaptiveMaxPool1dOptions = AdaptivePoolOptions<1>;
using AdaptiveMaxPool2dOptions = AdaptivePoolOptions<2>;
using AdaptiveMaxPool3dOptions = AdaptivePoolOptions<3>;
using AdaptiveAvgPool3dOptions = AdaptivePoolOptions<3>;

class AdaptiveAvgPool1dImpl : public Module {
 public:
  AdaptiveAvgPool1dImpl(const AdaptiveAvgPool1dOptions& options) : options(options) {}
  AdaptiveAvgPool1dImpl(ExpandingArray<1> output_size) : options(output_size) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  AdaptiveAvgPool1dOptions options;
};
KINDLE_MODULE(AdaptiveAvgPool1d);

// forward gives the maxima; forward_with_indices also their flat positions in each plane.
template <size_t D>
class AdaptiveMaxPoolNdImpl : public Module {
 public:
  AdaptiveMaxPoolNdImpl(const AdaptivePoolOptions<D>& options) : options(options) {}
  AdaptiveMaxPoolNdImpl(ExpandingArray<D> output_size) : options(output_size) {}
  Tensor forward(const Tensor& input) override { return std::get<0>(forward_with_indices(input)); }
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string name() const override {
    return typeid(*this) == typeid(AdaptiveMaxPoolNdImpl) ? "AdaptiveMaxPool" + std::to_string(D) + "d"
                                                          : Module::name();
  }
  std::string extra_repr() const override;
  AdaptivePoolOptions<D> options;
};
using AdaptiveMaxPool1dImpl = AdaptiveMaxPoolNdImpl<1>;
KINDLE_MODULE(AdaptiveMaxPool1d);
using AdaptiveMaxPool2dImpl = AdaptiveMaxPoolNdImpl<2>;
KINDLE_MODULE(AdaptiveMaxPool2d);
using AdaptiveMaxPool3dImpl = AdaptiveMaxPoolNdImpl<3>;
KINDLE_MODULE(AdaptiveMaxPool3d);
extern template class AdaptiveMaxPoolNdImpl<1>;
extern template class AdaptiveMaxPoolNdImpl<2>;
extern template class AdaptiveMaxPoolNdImpl<3>;

// Fractional max pooling (Graham, 2014): windows of kernel_size at pseudo-random starts, to an
// output_size or output_ratio of the input. The samples that place the windows are drawn per call
// with kindle::rand (as Python's layer draws them), unless _random_samples fixes them.
template <size_t D>
struct FractionalMaxPoolOptions {
  FractionalMaxPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size) {}
  KINDLE_ARG(ExpandingArray<D>, kernel_size);
  KINDLE_ARG(std::optional<ExpandingArray<D>>, output_size);
  KINDLE_ARG(std::optional<std::vector<double>>, output_ratio);  // D ratios in (0, 1), or one for all
  KINDLE_ARG(Tensor, _random_samples);                           // (N, C, D); undefined: drawn per call
};
using FractionalMaxPool2dOptions = FractionalMaxPoolOptions<2>;
using FractionalMaxPool3dOptions = FractionalMaxPoolOptions<3>;

template <size_t D>
class FractionalMaxPoolNdImpl : public Module {
 public:
  FractionalMaxPoolNdImpl(const FractionalMaxPoolOptions<D>& options);
  FractionalMaxPoolNdImpl(ExpandingArray<D> kernel_size) : FractionalMaxPoolNdImpl(FractionalMaxPoolOptions<D>(kernel_size)) {}
  Tensor forward(const Tensor& input) override { return std::get<0>(forward_with_indices(input)); }
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string name() const override { return "FractionalMaxPool" + std::to_string(D) + "d"; }
  FractionalMaxPoolOptions<D> options;
};
using FractionalMaxPool2dImpl = FractionalMaxPoolNdImpl<2>;
KINDLE_MODULE(FractionalMaxPool2d);
using FractionalMaxPool3dImpl = FractionalMaxPoolNdImpl<3>;
KINDLE_MODULE(FractionalMaxPool3d);
extern template class FractionalMaxPoolNdImpl<2>;
extern template class FractionalMaxPoolNdImpl<3>;

// The p-norm of each window: (sum x^p)^(1/p).
template <size_t D>
struct LPPoolOptions {
  LPPoolOptions(double norm_type, ExpandingArray<D> kernel_size)
      : norm_type_(norm_type), kernel_size_(kernel_size), stride_(kernel_size) {}
  KINDLE_ARG(double, norm_type);
  KINDLE_ARG(ExpandingArray<D>, kernel_size);
  KINDLE_ARG(ExpandingArray<D>, stride);  // default: the kernel size
  KINDLE_ARG(bool, ceil_mode) = false;
};
using LPPool1dOptions = LPPoolOptions<1>;
using LPPool2dOptions = LPPoolOptions<2>;
using LPPool3dOptions = LPPoolOptions<3>;
template <size_t D>
class LPPoolNdImpl : public Module {
 public:
  LPPoolNdImpl(const LPPoolOptions<D>& options) : options(options) {}
  Tensor forward(const Tensor& input) override;
  std::string name() const override {
    return typeid(*this) == typeid(LPPoolNdImpl) ? "LPPool" + std::to_string(D) + "d" : Module::name();
  }
  std::string extra_repr() const override;
  LPPoolOptions<D> options;
};
using LPPool1dImpl = LPPoolNdImpl<1>;
KINDLE_MODULE(LPPool1d);
using LPPool2dImpl = LPPoolNdImpl<2>;
KINDLE_MODULE(LPPool2d);
using LPPool3dImpl = LPPoolNdImpl<3>;
KINDLE_MODULE(LPPool3d);
extern template class LPPoolNdImpl<1>;
extern template class LPPoolNdImpl<2>;
extern template class LPPoolNdImpl<3>;

// ---- sliding-window patches: Unfold (image -> columns) and Fold (columns -> image, summing overlaps)

struct UnfoldOptions {
  UnfoldOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size) {}
  KINDLE_ARG(ExpandingArray<2>, kernel_size);
  KINDLE_ARG(ExpandingArray<2>, dilation) = 1;
  KINDLE_ARG(ExpandingArray<2>, padding) = 0;
  KINDLE_ARG(ExpandingArray<2>, stride) = 1;
};
class UnfoldImpl : public Module {
 public:
  UnfoldImpl(const UnfoldOptions& options) : options(options) {}
  UnfoldImpl(ExpandingArray<2> kernel_size) : options(kernel_size) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  UnfoldOptions options;
};
KINDLE_MODULE(Unfold);

struct FoldOptions {
  FoldOptions(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size)
      : output_size_(output_size), kernel_size_(kernel_size) {}
  KINDLE_ARG(ExpandingArray<2>, output_size);
  KINDLE_ARG(ExpandingArray<2>, kernel_size);
  KINDLE_ARG(ExpandingArray<2>, dilation) = 1;
  KINDLE_ARG(ExpandingArray<2>, padding) = 0;
  KINDLE_ARG(ExpandingArray<2>, stride) = 1;
};
class FoldImpl : public Module {
 public:
  FoldImpl(const FoldOptions& options) : options(options) {}
  FoldImpl(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size) : options(output_size, kernel_size) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  FoldOptions options;
};
KINDLE_MODULE(Fold);

// ---- bags of embeddings: the sum, mean or max of each bag's rows

struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  KINDLE_ARG(int64_t, num_embeddings);
  KINDLE_ARG(int64_t, embedding_dim);
  KINDLE_ARG(std::optional<double>, max_norm);
  KINDLE_ARG(double, norm_type) = 2.0;
  KINDLE_ARG(EnumName, mode) = "mean";  // kSum, kMean or kMax
  KINDLE_ARG(bool, include_last_offset) = false;
  KINDLE_ARG(std::optional<int64_t>, padding_idx);
  KINDLE_ARG(Tensor, _weight);  // a given weight instead of N(0, 1) draws
  KINDLE_ARG(std::optional<DType>, dtype);
};
// input: 2-d (each row a bag) or 1-d with offsets (where each bag starts); per_sample_weights
// scale the rows (mode sum only).
class EmbeddingBagImpl : public Module {
 public:
  explicit EmbeddingBagImpl(const EmbeddingBagOptions& options);
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingBagImpl(EmbeddingBagOptions(num_embeddings, embedding_dim)) {}
  Tensor forward(const Tensor& input, const Tensor& offsets = {}, const Tensor& per_sample_weights = {});
  void reset_parameters();
  std::string extra_repr() const override;
  EmbeddingBagOptions options;
  Tensor weight;

 private:
  using Module::forward;
};
KINDLE_MODULE(EmbeddingBag);

// ---- channel shuffling, unpooling, randomized leaky ReLU, the legacy cross-map LRN

struct ChannelShuffleOptions {
  ChannelShuffleOptions(int64_t groups) : groups_(groups) {}
  KINDLE_ARG(int64_t, groups);
};
class ChannelShuffleImpl : public Module {
 public:
  explicit ChannelShuffleImpl(const ChannelShuffleOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override { return "groups=" + std::to_string(options.groups()); }
  ChannelShuffleOptions options;
};
KINDLE_MODULE(ChannelShuffle);

// Writes pooled values back at the indices max pooling returned (zeros elsewhere).
template <size_t D>
struct MaxUnpoolOptions {
  MaxUnpoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  KINDLE_ARG(ExpandingArray<D>, kernel_size);
  KINDLE_ARG(ExpandingArray<D>, stride);  // default: the kernel size
  KINDLE_ARG(ExpandingArray<D>, padding) = 0;
};
using MaxUnpool1dOptions = MaxUnpoolOptions<1>;
using MaxUnpool2dOptions = MaxUnpoolOptions<2>;
using MaxUnpool3dOptions = MaxUnpoolOptions<3>;
template <size_t D>
class MaxUnpoolNdImpl : public Module {
 public:
  explicit MaxUnpoolNdImpl(const MaxUnpoolOptions<D>& options) : options(options) {}
  MaxUnpoolNdImpl(ExpandingArray<D> kernel_size) : options(kernel_size) {}
  // output_size: D (or D + 2) sizes within one stride of the default, as Python's.
  Tensor forward(const Tensor& input, const Tensor& indices,
                 const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
  KINDLE_MODULE_CALL
  std::string name() const override {
    return typeid(*this) == typeid(MaxUnpoolNdImpl) ? "MaxUnpool" + std::to_string(D) + "d" : Module::name();
  }
  std::string extra_repr() const override {
    return "kernel_size=" + options.kernel_size().str() + ", stride=" + options.stride().str() +
           ", padding=" + options.padding().str();
  }
  MaxUnpoolOptions<D> options;

 private:
  using Module::forward;
};
using MaxUnpool1dImpl = MaxUnpoolNdImpl<1>;
KINDLE_MODULE(MaxUnpool1d);
using MaxUnpool2dImpl = MaxUnpoolNdImpl<2>;
KINDLE_MODULE(MaxUnpool2d);
using MaxUnpool3dImpl = MaxUnpoolNdImpl<3>;
KINDLE_MODULE(MaxUnpool3d);
extern template class MaxUnpoolNdImpl<1>;
extern template class MaxUnpoolNdImpl<2>;
extern template class MaxUnpoolNdImpl<3>;

// Training: slopes for the non-positive elements drawn from U(lower, upper); eval: their mean.
struct RReLUOptions {
  KINDLE_ARG(double, lower) = 1.0 / 8;
  KINDLE_ARG(double, upper) = 1.0 / 3;
  KINDLE_ARG(bool, inplace) = false;
};
class RReLUImpl : public Module {
 public:
  explicit RReLUImpl(const RReLUOptions& options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  RReLUOptions options;
};
KINDLE_MODULE(RReLU);

struct CrossMapLRN2dOptions {
  CrossMapLRN2dOptions(int64_t size) : size_(size) {}
  KINDLE_ARG(int64_t, size);
  KINDLE_ARG(double, alpha) = 1e-4;
  KINDLE_ARG(double, beta) = 0.75;
  KINDLE_ARG(int64_t, k) = 1;
};
class CrossMapLRN2dImpl : public Module {
 public:
  explicit CrossMapLRN2dImpl(const CrossMapLRN2dOptions& options) : options(options) {}
  explicit CrossMapLRN2dImpl(int64_t size) : options(size) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  CrossMapLRN2dOptions options;
};
KINDLE_MODULE(CrossMapLRN2d);

}  // namespace kindle::nn
