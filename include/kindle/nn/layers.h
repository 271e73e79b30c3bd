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
class Identity : public Module {
 public:
  Tensor forward(const Tensor& input) override { return input; }
};

// y = x W^T + b; W ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform_ with a = sqrt(5)), b likewise.
class Linear : public Module {
 public:
  explicit Linear(const LinearOptions& options);
  Linear(int64_t in_features, int64_t out_features, bool bias = true)
      : Linear(LinearOptions(in_features, out_features).bias(bias)) {}
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  std::string extra_repr() const override;

  LinearOptions options;
  Tensor weight, bias;  // bias undefined when options.bias() is false
};

// Flattens dimensions start_dim..end_dim.
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& input) override { return input.flatten(start_dim, end_dim); }
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};

// Convolutions over D spatial dimensions (D = 1, 2); weight (out, in / groups, *kernel_size).
template <size_t D>
class ConvNd : public Module {
 public:
  explicit ConvNd(const ConvOptions<D>& options);
  ConvNd(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : ConvNd(ConvOptions<D>(in_channels, out_channels, kernel_size)) {}
  Tensor forward(const Tensor& input) override;
  // "Conv1d" / "Conv2d" (a subclass keeps its own name).
  std::string name() const override {
    return typeid(*this) == typeid(ConvNd) ? "Conv" + std::to_string(D) + "d" : Module::name();
  }
  void reset_parameters();
  std::string extra_repr() const override;

  ConvOptions<D> options;
  Tensor weight, bias;
};
using Conv1d = ConvNd<1>;
using Conv2d = ConvNd<2>;
extern template class ConvNd<1>;
extern template class ConvNd<2>;

template <size_t D>
class MaxPoolNd : public Module {
 public:
  explicit MaxPoolNd(const MaxPoolOptions<D>& options) : options(options) {}
  MaxPoolNd(ExpandingArray<D> kernel_size) : options(kernel_size) {}
  Tensor forward(const Tensor& input) override;
  // "MaxPool1d" / "MaxPool2d" (a subclass keeps its own name).
  std::string name() const override {
    return typeid(*this) == typeid(MaxPoolNd) ? "MaxPool" + std::to_string(D) + "d" : Module::name();
  }
  std::string extra_repr() const override;
  MaxPoolOptions<D> options;
};
using MaxPool1d = MaxPoolNd<1>;
using MaxPool2d = MaxPoolNd<2>;
extern template class MaxPoolNd<1>;
extern template class MaxPoolNd<2>;

template <size_t D>
class AvgPoolNd : public Module {
 public:
  explicit AvgPoolNd(const AvgPoolOptions<D>& options) : options(options) {}
  AvgPoolNd(ExpandingArray<D> kernel_size) : options(kernel_size) {}
  Tensor forward(const Tensor& input) override;
  // "AvgPool1d" / "AvgPool2d" (a subclass keeps its own name).
  std::string name() const override {
    return typeid(*this) == typeid(AvgPoolNd) ? "AvgPool" + std::to_string(D) + "d" : Module::name();
  }
  std::string extra_repr() const override;
  AvgPoolOptions<D> options;
};
using AvgPool1d = AvgPoolNd<1>;
using AvgPool2d = AvgPoolNd<2>;
extern template class AvgPoolNd<1>;
extern template class AvgPoolNd<2>;

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(ExpandingArray<2> output_size) : output_size(output_size) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override { return "output_size=" + output_size.str(); }
  ExpandingArray<2> output_size;
};

// Batch normalisation with running statistics (buffers running_mean, running_var,
// num_batches_tracked); D is the expected input rank family: BatchNorm1d takes (N, C) or
// (N, C, L), BatchNorm2d (N, C, H, W).
template <size_t D>
class BatchNormNd : public Module {
 public:
  explicit BatchNormNd(const BatchNormOptions& options);
  explicit BatchNormNd(int64_t num_features) : BatchNormNd(BatchNormOptions(num_features)) {}
  Tensor forward(const Tensor& input) override;
  // "BatchNorm1d" / "BatchNorm2d" (a subclass keeps its own name).
  std::string name() const override {
    return typeid(*this) == typeid(BatchNormNd) ? "BatchNorm" + std::to_string(D) + "d" : Module::name();
  }
  void reset_running_stats();
  void reset_parameters();
  std::string extra_repr() const override;

  BatchNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
};
using BatchNorm1d = BatchNormNd<1>;
using BatchNorm2d = BatchNormNd<2>;
extern template class BatchNormNd<1>;
extern template class BatchNormNd<2>;

class LayerNorm : public Module {
 public:
  explicit LayerNorm(const LayerNormOptions& options);
  explicit LayerNorm(int64_t normalized_shape) : LayerNorm(LayerNormOptions(normalized_shape)) {}
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  std::string extra_repr() const override;

  LayerNormOptions options;
  Tensor weight, bias;
};

class GroupNorm : public Module {
 public:
  explicit GroupNorm(const GroupNormOptions& options);
  GroupNorm(int64_t num_groups, int64_t num_channels) : GroupNorm(GroupNormOptions(num_groups, num_channels)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  GroupNormOptions options;
  Tensor weight, bias;
};

// Zeroes elements with probability p while training and scales the rest by 1 / (1 - p).
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  explicit Dropout(const DropoutOptions& options) : Dropout(options.p()) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double p;
};

// Zeroes whole channels of (N, C, H, W) inputs.
class Dropout2d : public Module {
 public:
  explicit Dropout2d(double p = 0.5);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double p;
};

// A lookup table: weight ~ N(0, 1) with the padding row zeroed.
class Embedding : public Module {
 public:
  explicit Embedding(const EmbeddingOptions& options);
  Embedding(int64_t num_embeddings, int64_t embedding_dim)
      : Embedding(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  // A table that uses `embeddings` as its weight (shared, not copied, as in Python), frozen
  // (requires_grad false) unless freeze is false.
  static Embedding from_pretrained(const Tensor& embeddings, bool freeze = true,
                                   std::optional<int64_t> padding_idx = std::nullopt);
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  std::string extra_repr() const override;

  EmbeddingOptions options;
  Tensor weight;

 private:
  struct Pretrained {};
  Embedding(Pretrained, const EmbeddingOptions& options, const Tensor& weight, bool freeze);
};

// Wraps a function as a module (for Sequential): nn::Functional([](const Tensor& x) { ... }).
class Functional : public Module {
 public:
  explicit Functional(std::function<Tensor(const Tensor&)> fn, std::string name = "Functional")
      : fn_(std::move(fn)), name_(std::move(name)) {}
  Tensor forward(const Tensor& input) override { return fn_(input); }
  std::string name() const override { return name_; }

 private:
  std::function<Tensor(const Tensor&)> fn_;
  std::string name_;
};

// ---- activations (Python's class names and defaults)

#define KINDLE_SIMPLE_ACTIVATION(Name)                 \
  class Name : public Module {                         \
   public:                                             \
    Tensor forward(const Tensor& input) override;      \
  };
KINDLE_SIMPLE_ACTIVATION(ReLU)
KINDLE_SIMPLE_ACTIVATION(ReLU6)
KINDLE_SIMPLE_ACTIVATION(SELU)
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

class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope(negative_slope) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double negative_slope;
};

class ELU : public Module {
 public:
  explicit ELU(double alpha = 1.0) : alpha(alpha) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double alpha;
};

class CELU : public Module {
 public:
  explicit CELU(double alpha = 1.0) : alpha(alpha) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double alpha;
};

class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none") : approximate(std::move(approximate)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::string approximate;  // "none" or "tanh"
};

class Softplus : public Module {
 public:
  explicit Softplus(double beta = 1.0, double threshold = 20.0) : beta(beta), threshold(threshold) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double beta, threshold;
};

class Hardtanh : public Module {
 public:
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double min_val, max_val;
};

class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& input) override { return input.softmax(dim); }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  int64_t dim;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& input) override { return input.log_softmax(dim); }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  int64_t dim;
};

// A learned negative slope per channel (num_parameters = 1 or C), initialised to `init`.
class PReLU : public Module {
 public:
  explicit PReLU(int64_t num_parameters = 1, double init = 0.25);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override { return "num_parameters=" + std::to_string(num_parameters); }
  int64_t num_parameters;
  Tensor weight;
};

}  // namespace kindle::nn
