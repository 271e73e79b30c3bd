// The common layers: Linear, convolutions, pooling, normalisation, dropout, embeddings,
// activations. Parameter names, shapes, default initialisation and messages are Python's
// (kindle.nn / torch.nn), so state dicts move between the two front ends unchanged, and the
// same kindle::manual_seed gives the same initial weights in both.
#pragma once
#include <functional>
#include <typeinfo>

#include "kindle/nn/module.h"
#include "kindle/nn/options.h"

namespace kindle::nn {

// Returns its input.
class IdentityImpl : public Module {
 public:
  Tensor forward(const Tensor& input) override { return input; }
};
KINDLE_MODULE(Identity);

// y = x W^T + b; W ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform_ with a = sqrt(5)), b likewise.
class LinearImpl : public Module {
 public:
  explicit LinearImpl(const LinearOptions& options);
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true)
      : LinearImpl(LinearOptions(in_features, out_features).bias(bias)) {}
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  std::string extra_repr() const override;

  LinearOptions options;
  Tensor weight, bias;  // bias undefined when options.bias() is false
};
KINDLE_MODULE(Linear);

// Flattens dimensions start_dim..end_dim.
class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& input) override { return input.flatten(start_dim, end_dim); }
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};
KINDLE_MODULE(Flatten);

// Convolutions over D spatial dimensions (D = 1, 2, 3); weight (out, in / groups, *kernel_size).
template <size_t D>
class ConvNdImpl : public Module {
 public:
  explicit ConvNdImpl(const ConvOptions<D>& options);
  ConvNdImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : ConvNdImpl(ConvOptions<D>(in_channels, out_channels, kernel_size)) {}
  Tensor forward(const Tensor& input) override;
  // "Conv1d" / "Conv2d" (a subclass keeps its own name).
  std::string name() const override {
    return typeid(*this) == typeid(ConvNdImpl) ? "Conv" + std::to_string(D) + "d" : Module::name();
  }
  void reset_parameters();
  std::string extra_repr() const override;

  ConvOptions<D> options;
  Tensor weight, bias;
};
using Conv1dImpl = ConvNdImpl<1>;
KINDLE_MODULE(Conv1d);
using Conv2dImpl = ConvNdImpl<2>;
KINDLE_MODULE(Conv2d);
using Conv3dImpl = ConvNdImpl<3>;
KINDLE_MODULE(Conv3d);
extern template class ConvNdImpl<1>;
extern template class ConvNdImpl<2>;
extern template class ConvNdImpl<3>;

// Transposed convolutions (the gradient of a convolution with respect to its input); weight
// (in, out / groups, *kernel_size).
template <size_t D>
class ConvTransposeNdImpl : public Module {
 public:
  explicit ConvTransposeNdImpl(const ConvTransposeOptions<D>& options);
  ConvTransposeNdImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : ConvTransposeNdImpl(ConvTransposeOptions<D>(in_channels, out_channels, kernel_size)) {}
  Tensor forward(const Tensor& input) override { return forward(input, std::nullopt); }
  // output_size picks the output_padding that gives that size (as Python's output_size=).
  Tensor forward(const Tensor& input, const std::optional<std::vector<int64_t>>& output_size);
  KINDLE_MODULE_CALL
  std::string name() const override {
    return typeid(*this) == typeid(ConvTransposeNdImpl) ? "ConvTranspose" + std::to_string(D) + "d" : Module::name();
  }
  void reset_parameters();
  std::string extra_repr() const override;

  ConvTransposeOptions<D> options;
  Tensor weight, bias;
};
using ConvTranspose1dImpl = ConvTransposeNdImpl<1>;
KINDLE_MODULE(ConvTranspose1d);
using ConvTranspose2dImpl = ConvTransposeNdImpl<2>;
KINDLE_MODULE(ConvTranspose2d);
using ConvTranspose3dImpl = ConvTransposeNdImpl<3>;
KINDLE_MODULE(ConvTranspose3d);
extern template class ConvTransposeNdImpl<1>;
extern template class ConvTransposeNdImpl<2>;
extern template class ConvTransposeNdImpl<3>;

template <size_t D>
class MaxPoolNdImpl : public Module {
 public:
  explicit MaxPoolNdImpl(const MaxPoolOptions<D>& options) : options(options) {}
  MaxPoolNdImpl(ExpandingArray<D> kernel_size) : options(kernel_size) {}
  Tensor forward(const Tensor& input) override;
  // "MaxPool1d" / "MaxPool2d" (a subclass keeps its own name).
  std::string name() const override {
    return typeid(*this) == typeid(MaxPoolNdImpl) ? "MaxPool" + std::to_string(D) + "d" : Module::name();
  }
  std::string extra_repr() const override;
  MaxPoolOptions<D> options;
};
using MaxPool1dImpl = MaxPoolNdImpl<1>;
KINDLE_MODULE(MaxPool1d);
using MaxPool2dImpl = MaxPoolNdImpl<2>;
KINDLE_MODULE(MaxPool2d);
using MaxPool3dImpl = MaxPoolNdImpl<3>;
KINDLE_MODULE(MaxPool3d);
extern template class MaxPoolNdImpl<1>;
extern template class MaxPoolNdImpl<2>;
extern template class MaxPoolNdImpl<3>;

template <size_t D>
class AvgPoolNdImpl : public Module {
 public:
  explicit AvgPoolNdImpl(const AvgPoolOptions<D>& options) : options(options) {}
  AvgPoolNdImpl(ExpandingArray<D> kernel_size) : options(kernel_size) {}
  Tensor forward(const Tensor& input) override;
  // "AvgPool1d" / "AvgPool2d" (a subclass keeps its own name).
  std::string name() const override {
    return typeid(*this) == typeid(AvgPoolNdImpl) ? "AvgPool" + std::to_string(D) + "d" : Module::name();
  }
  std::string extra_repr() const override;
  AvgPoolOptions<D> options;
};
using AvgPool1dImpl = AvgPoolNdImpl<1>;
KINDLE_MODULE(AvgPool1d);
using AvgPool2dImpl = AvgPoolNdImpl<2>;
KINDLE_MODULE(AvgPool2d);
using AvgPool3dImpl = AvgPoolNdImpl<3>;
KINDLE_MODULE(AvgPool3d);
extern template class AvgPoolNdImpl<1>;
extern template class AvgPoolNdImpl<2>;
extern template class AvgPoolNdImpl<3>;

class AdaptiveAvgPool2dImpl : public Module {
 public:
  explicit AdaptiveAvgPool2dImpl(ExpandingArray<2> output_size) : output_size(output_size) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override { return "output_size=" + output_size.str(); }
  ExpandingArray<2> output_size;
};
KINDLE_MODULE(AdaptiveAvgPool2d);

class AdaptiveAvgPool3dImpl : public Module {
 public:
  explicit AdaptiveAvgPool3dImpl(ExpandingArray<3> output_size) : output_size(output_size) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override { return "output_size=" + output_size.str(); }
  ExpandingArray<3> output_size;
};
KINDLE_MODULE(AdaptiveAvgPool3d);

// Batch normalisation with running statistics (buffers running_mean, running_var,
// num_batches_tracked); D is the expected input rank family: BatchNorm1d takes (N, C) or
// (N, C, L), BatchNorm2d (N, C, H, W), BatchNorm3d (N, C, D, H, W).
template <size_t D>
class BatchNormNdImpl : public Module {
 public:
  explicit BatchNormNdImpl(const BatchNormOptions& options);
  explicit BatchNormNdImpl(int64_t num_features) : BatchNormNdImpl(BatchNormOptions(num_features)) {}
  Tensor forward(const Tensor& input) override;
  // "BatchNorm1d" / "BatchNorm2d" (a subclass keeps its own name).
  std::string name() const override {
    return typeid(*this) == typeid(BatchNormNdImpl) ? "BatchNorm" + std::to_string(D) + "d" : Module::name();
  }
  void reset_running_stats();
  void reset_parameters();
  std::string extra_repr() const override;

  BatchNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
};
using BatchNorm1dImpl = BatchNormNdImpl<1>;
KINDLE_MODULE(BatchNorm1d);
using BatchNorm2dImpl = BatchNormNdImpl<2>;
KINDLE_MODULE(BatchNorm2d);
using BatchNorm3dImpl = BatchNormNdImpl<3>;
KINDLE_MODULE(BatchNorm3d);
extern template class BatchNormNdImpl<1>;
extern template class BatchNormNdImpl<2>;
extern template class BatchNormNdImpl<3>;

class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);
  explicit LayerNormImpl(int64_t normalized_shape) : LayerNormImpl(LayerNormOptions(normalized_shape)) {}
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  std::string extra_repr() const override;

  LayerNormOptions options;
  Tensor weight, bias;
};
KINDLE_MODULE(LayerNorm);

class GroupNormImpl : public Module {
 public:
  explicit GroupNormImpl(const GroupNormOptions& options);
  GroupNormImpl(int64_t num_groups, int64_t num_channels) : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  GroupNormOptions options;
  Tensor weight, bias;
};
KINDLE_MODULE(GroupNorm);

// Zeroes elements with probability p while training and scales the rest by 1 / (1 - p).
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(double p = 0.5);
  explicit DropoutImpl(const DropoutOptions& options) : DropoutImpl(options.p()) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double p;
};
KINDLE_MODULE(Dropout);

// Zeroes whole channels of (N, C, H, W) inputs.
class Dropout2dImpl : public Module {
 public:
  explicit Dropout2dImpl(double p = 0.5);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double p;
};
KINDLE_MODULE(Dropout2d);

// Zeroes whole channels of (N, C, D, H, W) inputs.
class Dropout3dImpl : public Module {
 public:
  explicit Dropout3dImpl(double p = 0.5);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double p;
};
KINDLE_MODULE(Dropout3d);

// A lookup table: weight ~ N(0, 1) with the padding row zeroed.
class EmbeddingImpl : public Module {
 public:
  explicit EmbeddingImpl(const EmbeddingOptions& options);
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  std::string extra_repr() const override;

  EmbeddingOptions options;
  Tensor weight;

  struct Pretrained {};  // tag of the constructor Embedding::from_pretrained uses
  EmbeddingImpl(Pretrained, const EmbeddingOptions& options, const Tensor& weight, bool freeze);
};
class Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder<EmbeddingImpl>::ModuleHolder;
  // A table that uses `embeddings` as its weight (shared, not copied, as in Python), frozen
  // (requires_grad false) unless freeze is false.
  static Embedding from_pretrained(const Tensor& embeddings, bool freeze = true,
                                   std::optional<int64_t> padding_idx = std::nullopt);
};

// Wraps a function as a module (for Sequential): nn::Functional([](const Tensor& x) { ... }), or
// with arguments bound after the input, as libtorch: nn::Functional(kindle::max_pool2d, 2, 2, 0, 1, false).
class FunctionalImpl : public Module {
 public:
  explicit FunctionalImpl(std::function<Tensor(const Tensor&)> fn, std::string name = "Functional")
      : fn_(std::move(fn)), name_(std::move(name)) {}
  template <typename F, typename A, typename... Rest,
            typename = std::enable_if_t<std::is_invocable_r_v<Tensor, F, const Tensor&, const A&, const Rest&...>>>
  FunctionalImpl(F fn, A arg, Rest... rest)
      : fn_([fn, arg, rest...](const Tensor& x) -> Tensor { return fn(x, arg, rest...); }), name_("Functional") {}
  Tensor forward(const Tensor& input) override { return fn_(input); }
  std::string name() const override { return name_; }

 private:
  std::function<Tensor(const Tensor&)> fn_;
  std::string name_;
};
KINDLE_MODULE(Functional);

// ---- activations (Python's class names and defaults)

#define KINDLE_SIMPLE_ACTIVATION(Name)                 \
  class Name##Impl : public Module {                   \
   public:                                             \
    Tensor forward(const Tensor& input) override;      \
  };                                                   \
  KINDLE_MODULE(Name);
// ReLU(true) works in place, as libtorch's ReLU(ReLUOptions().inplace(true)).
#define KINDLE_INPLACE_ACTIVATION(Name)                              \
  class Name##Impl : public Module {                                 \
   public:                                                           \
    explicit Name##Impl(bool inplace = false) : inplace(inplace) {}  \
    Tensor forward(const Tensor& input) override;                    \
    std::string extra_repr() const override { return inplace ? "inplace=True" : ""; } \
    bool inplace;                                                    \
  };                                                                 \
  KINDLE_MODULE(Name);
KINDLE_INPLACE_ACTIVATION(ReLU)
KINDLE_INPLACE_ACTIVATION(ReLU6)
KINDLE_INPLACE_ACTIVATION(SELU)
#undef KINDLE_INPLACE_ACTIVATION
KINDLE_SIMPLE_ACTIVATION(SiLU)
KINDLE_SIMPLE_ACTIVATION(Mish)
KINDLE_SIMPLE_ACTIVATION(Sigmoid)
KINDLE_SIMPLE_ACTIVATION(Tanh)
KINDLE_SIMPLE_ACTIVATION(Softsign)
KINDLE_SIMPLE_ACTIVATION(Tanhshrink)
KINDLE_SIMPLE_ACTIVATION(Hardswish)
KINDLE_SIMPLE_ACTIVATION(Hardsigmoid)
KINDLE_SIMPLE_ACTIVATION(LogSigmoid)
#undef KINDLE_SIMPLE_ACTIVATION

class LeakyReLUImpl : public Module {
 public:
  explicit LeakyReLUImpl(double negative_slope = 0.01) : negative_slope(negative_slope) {}
  explicit LeakyReLUImpl(const LeakyReLUOptions& o) : negative_slope(o.negative_slope()), inplace(o.inplace()) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double negative_slope;
  bool inplace = false;
};
KINDLE_MODULE(LeakyReLU);

class ELUImpl : public Module {
 public:
  explicit ELUImpl(double alpha = 1.0) : alpha(alpha) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double alpha;
};
KINDLE_MODULE(ELU);

class CELUImpl : public Module {
 public:
  explicit CELUImpl(double alpha = 1.0) : alpha(alpha) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double alpha;
};
KINDLE_MODULE(CELU);

class GELUImpl : public Module {
 public:
  explicit GELUImpl(std::string approximate = "none") : approximate(std::move(approximate)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::string approximate;  // "none" or "tanh"
};
KINDLE_MODULE(GELU);

class SoftplusImpl : public Module {
 public:
  explicit SoftplusImpl(double beta = 1.0, double threshold = 20.0) : beta(beta), threshold(threshold) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double beta, threshold;
};
KINDLE_MODULE(Softplus);

class HardtanhImpl : public Module {
 public:
  explicit HardtanhImpl(double min_val = -1.0, double max_val = 1.0);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double min_val, max_val;
};
KINDLE_MODULE(Hardtanh);

class SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& input) override { return input.softmax(dim); }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  int64_t dim;
};
KINDLE_MODULE(Softmax);

class LogSoftmaxImpl : public Module {
 public:
  explicit LogSoftmaxImpl(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& input) override { return input.log_softmax(dim); }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  int64_t dim;
};
KINDLE_MODULE(LogSoftmax);

// A learned negative slope per channel (num_parameters = 1 or C), initialised to `init`.
class PReLUImpl : public Module {
 public:
  explicit PReLUImpl(int64_t num_parameters = 1, double init = 0.25);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override { return "num_parameters=" + std::to_string(num_parameters); }
  int64_t num_parameters;
  Tensor weight;
};
KINDLE_MODULE(PReLU);

// ---- more layers over single core ops (Python's names, arguments and defaults)

// x where x > threshold, else value.
class ThresholdImpl : public Module {
 public:
  ThresholdImpl(double threshold, double value) : threshold(threshold), value(value) {}
  Tensor forward(const Tensor& input) override { return kindle::threshold(input, threshold, value); }
  std::string extra_repr() const override;
  double threshold, value;
};
KINDLE_MODULE(Threshold);

// The first half of `dim` gated by the sigmoid of the second.
class GLUImpl : public Module {
 public:
  explicit GLUImpl(int64_t dim = -1) : dim(dim) {}
  Tensor forward(const Tensor& input) override { return glu(input, dim); }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  int64_t dim;
};
KINDLE_MODULE(GLU);

class SoftminImpl : public Module {
 public:
  explicit SoftminImpl(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& input) override { return softmin(input, dim); }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  int64_t dim;
};
KINDLE_MODULE(Softmin);

// Dimension `dim` split into `sizes`.
class UnflattenImpl : public Module {
 public:
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes) : dim(dim), sizes(std::move(sizes)) {}
  Tensor forward(const Tensor& input) override { return unflatten(input, dim, sizes); }
  std::string extra_repr() const override;
  int64_t dim;
  std::vector<int64_t> sizes;
};
KINDLE_MODULE(Unflatten);

struct CosineSimilarityOptions {
  KINDLE_ARG(int64_t, dim) = 1;
  KINDLE_ARG(double, eps) = 1e-8;
};
class CosineSimilarityImpl : public Module {
 public:
  explicit CosineSimilarityImpl(const CosineSimilarityOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x1, const Tensor& x2) { return cosine_similarity(x1, x2, options.dim(), options.eps()); }
  KINDLE_MODULE_CALL
  CosineSimilarityOptions options;
};
KINDLE_MODULE(CosineSimilarity);

struct PairwiseDistanceOptions {
  KINDLE_ARG(double, p) = 2.0;
  KINDLE_ARG(double, eps) = 1e-6;
  KINDLE_ARG(bool, keepdim) = false;
};
class PairwiseDistanceImpl : public Module {
 public:
  explicit PairwiseDistanceImpl(const PairwiseDistanceOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x1, const Tensor& x2) {
    return pairwise_distance(x1, x2, options.p(), options.eps(), options.keepdim());
  }
  KINDLE_MODULE_CALL
  PairwiseDistanceOptions options;
};
KINDLE_MODULE(PairwiseDistance);

// y = x1^T A x2 + b: weight (out, in1, in2) and bias (out) ~ U(-1/sqrt(in1), 1/sqrt(in1)).
struct BilinearOptions {
  BilinearOptions(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : in1_features_(in1_features), in2_features_(in2_features), out_features_(out_features) {}
  KINDLE_ARG(int64_t, in1_features);
  KINDLE_ARG(int64_t, in2_features);
  KINDLE_ARG(int64_t, out_features);
  KINDLE_ARG(bool, bias) = true;
  KINDLE_ARG(std::optional<DType>, dtype);
};
class BilinearImpl : public Module {
 public:
  explicit BilinearImpl(const BilinearOptions& options);
  BilinearImpl(int64_t in1, int64_t in2, int64_t out) : BilinearImpl(BilinearOptions(in1, in2, out)) {}
  Tensor forward(const Tensor& x1, const Tensor& x2);
  KINDLE_MODULE_CALL
  void reset_parameters();
  std::string extra_repr() const override;
  BilinearOptions options;
  Tensor weight, bias;
};
KINDLE_MODULE(Bilinear);

// Zeroes whole channels of (N, C, L) inputs.
class Dropout1dImpl : public Module {
 public:
  explicit Dropout1dImpl(double p = 0.5);
  Tensor forward(const Tensor& input) override { return dropout1d(input, p, is_training()); }
  std::string extra_repr() const override;
  double p;
};
KINDLE_MODULE(Dropout1d);

// Dropout that keeps SELU's mean and variance.
class AlphaDropoutImpl : public Module {
 public:
  explicit AlphaDropoutImpl(double p = 0.5);
  Tensor forward(const Tensor& input) override { return alpha_dropout(input, p, is_training()); }
  std::string extra_repr() const override;
  double p;
};
KINDLE_MODULE(AlphaDropout);

// Alpha dropout of whole channels (inputs of at least 2 dims).
class FeatureAlphaDropoutImpl : public Module {
 public:
  explicit FeatureAlphaDropoutImpl(double p = 0.5);
  Tensor forward(const Tensor& input) override { return feature_alpha_dropout(input, p, is_training()); }
  std::string extra_repr() const override;
  double p;
};
KINDLE_MODULE(FeatureAlphaDropout);

// Normalises each channel of each example over its spatial dims: InstanceNorm1d (N, C, L) or
// (C, L), 2d (N, C, H, W) or (C, H, W), 3d. Without affine and tracked statistics by default.
struct InstanceNormOptions {
  InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}
  KINDLE_ARG(int64_t, num_features);
  KINDLE_ARG(double, eps) = 1e-5;
  KINDLE_ARG(double, momentum) = 0.1;
  KINDLE_ARG(bool, affine) = false;
  KINDLE_ARG(bool, track_running_stats) = false;
  KINDLE_ARG(std::optional<DType>, dtype);
};
template <size_t D>
class InstanceNormImpl : public Module {
 public:
  explicit InstanceNormImpl(const InstanceNormOptions& options);
  explicit InstanceNormImpl(int64_t num_features) : InstanceNormImpl(InstanceNormOptions(num_features)) {}
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return "InstanceNorm" + std::to_string(D) + "d"; }
  std::string extra_repr() const override;
  InstanceNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;
using InstanceNorm1dImpl = InstanceNormImpl<1>;
using InstanceNorm2dImpl = InstanceNormImpl<2>;
using InstanceNorm3dImpl = InstanceNormImpl<3>;
KINDLE_MODULE(InstanceNorm1d);
KINDLE_MODULE(InstanceNorm2d);
KINDLE_MODULE(InstanceNorm3d);
extern template class InstanceNormImpl<1>;
extern template class InstanceNormImpl<2>;
extern template class InstanceNormImpl<3>;

// x / sqrt(mean(x^2) + eps) over the trailing normalized_shape, times weight (ones).
struct RMSNormOptions {
  RMSNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  RMSNormOptions(int64_t normalized_shape) : normalized_shape_({normalized_shape}) {}
  KINDLE_ARG(std::vector<int64_t>, normalized_shape);
  KINDLE_ARG(std::optional<double>, eps);  // unset: the dtype's machine epsilon, as Python's
  KINDLE_ARG(bool, elementwise_affine) = true;
  KINDLE_ARG(std::optional<DType>, dtype);
};
class RMSNormImpl : public Module {
 public:
  explicit RMSNormImpl(const RMSNormOptions& options);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  RMSNormOptions options;
  Tensor weight;
};
KINDLE_MODULE(RMSNorm);

}  // namespace kindle::nn
