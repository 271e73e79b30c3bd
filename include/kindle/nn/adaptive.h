// nn::AdaptiveLogSoftmaxWithLoss (Grave et al. 2016): a head Linear over the shortlist and one slot
// per cluster, and per cluster a two-layer projection (tail[i] = Sequential(Linear, Linear)), as
// Python's module and libtorch's; the computation is the core's adaptive_log_softmax ops.
//   nn::AdaptiveLogSoftmaxWithLoss asm_(nn::AdaptiveLogSoftmaxWithLossOptions(64, 1000, {100, 500}));
//   auto [output, loss] = asm_(x, target);
#pragma once
#include <vector>

#include "kindle/nn/container.h"
#include "kindle/nn/layers.h"

namespace kindle::nn {

struct AdaptiveLogSoftmaxWithLossOptions {
  AdaptiveLogSoftmaxWithLossOptions(int64_t in_features, int64_t n_classes, std::vector<int64_t> cutoffs)
      : in_features_(in_features), n_classes_(n_classes), cutoffs_(std::move(cutoffs)) {}
  KINDLE_ARG(int64_t, in_features);
  KINDLE_ARG(int64_t, n_classes);
  KINDLE_ARG(std::vector<int64_t>, cutoffs);
  KINDLE_ARG(double, div_value) = 4.0;
  KINDLE_ARG(bool, head_bias) = false;
};

// The log-probability of each row's target (output) and the mean negative one (loss).
struct ASMoutput {
  Tensor output, loss;
};

class AdaptiveLogSoftmaxWithLossImpl : public Module {
 public:
  explicit AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions options);
  ASMoutput forward(const Tensor& input, const Tensor& target);
  ASMoutput operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  Tensor log_prob(const Tensor& input);  // (N, n_classes)
  Tensor predict(const Tensor& input);   // the most likely class per row
  void reset_parameters();
  AdaptiveLogSoftmaxWithLossOptions options;
  std::vector<int64_t> cutoffs;  // options' cutoffs and n_classes
  int64_t shortlist_size, n_clusters, head_size;
  Linear head{nullptr};
  ModuleList tail{nullptr};

 private:
  std::optional<Tensor> head_bias() const;
  std::vector<Tensor> tail_weights() const;
  using Module::forward;
};
KINDLE_MODULE(AdaptiveLogSoftmaxWithLoss);

}  // namespace kindle::nn
