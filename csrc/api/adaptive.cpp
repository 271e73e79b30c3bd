// nn::AdaptiveLogSoftmaxWithLoss over the core's adaptive_log_softmax ops (csrc/nn/adaptive_softmax.cpp).
#include "kindle/nn/adaptive.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "kindle/ops.h"

namespace kindle::nn {

AdaptiveLogSoftmaxWithLossImpl::AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions o)
    : options(std::move(o)) {
  const auto& c = options.cutoffs();
  KINDLE_CHECK_VALUE(!c.empty(), "cutoffs should be a sequence of length larger than 0");
  const bool sorted = std::is_sorted(c.begin(), c.end()) && std::set<int64_t>(c.begin(), c.end()).size() == c.size();
  KINDLE_CHECK_VALUE(sorted && c.front() > 0 && c.back() <= options.n_classes() - 1, "cutoffs should be a sequence "
                     "of unique, positive integers sorted in an increasing order, where each value is between 1 and "
                     "n_classes-1");
  cutoffs = c;
  cutoffs.push_back(options.n_classes());
  shortlist_size = cutoffs[0];
  n_clusters = int64_t(cutoffs.size()) - 1;
  head_size = shortlist_size + n_clusters;
  head = register_module("head", Linear(LinearOptions(options.in_features(), head_size).bias(options.head_bias())));
  tail = register_module("tail", ModuleList());
  for (int64_t i = 0; i < n_clusters; ++i) {
    const auto hidden = int64_t(std::floor(double(options.in_features()) / std::pow(options.div_value(), double(i + 1))));
    const int64_t size = cutoffs[size_t(i + 1)] - cutoffs[size_t(i)];
    tail->push_back(Sequential(Linear(LinearOptions(options.in_features(), hidden).bias(false)),
                               Linear(LinearOptions(hidden, size).bias(false))));
  }
}

void AdaptiveLogSoftmaxWithLossImpl::reset_parameters() {
  head->reset_parameters();
  for (const auto& proj : tail->children())
    for (const auto& layer : proj->children()) std::dynamic_pointer_cast<LinearImpl>(layer)->reset_parameters();
}

std::optional<Tensor> AdaptiveLogSoftmaxWithLossImpl::head_bias() const {
  return head->bias.defined() ? std::optional<Tensor>(head->bias) : std::nullopt;
}

std::vector<Tensor> AdaptiveLogSoftmaxWithLossImpl::tail_weights() const {
  std::vector<Tensor> out;
  for (const auto& proj : tail->children())
    for (const auto& layer : proj->children()) out.push_back(std::dynamic_pointer_cast<LinearImpl>(layer)->weight);
  return out;
}

ASMoutput AdaptiveLogSoftmaxWithLossImpl::forward(const Tensor& input, const Tensor& target) {
  auto [output, loss] =
      adaptive_log_softmax_with_loss(input, target, head->weight, head_bias(), tail_weights(), cutoffs);
  return {output, loss};
}

Tensor AdaptiveLogSoftmaxWithLossImpl::log_prob(const Tensor& input) {
  return adaptive_log_softmax_log_prob(input, head->weight, head_bias(), tail_weights(), cutoffs);
}

Tensor AdaptiveLogSoftmaxWithLossImpl::predict(const Tensor& input) {
  return adaptive_log_softmax_predict(input, head->weight, head_bias(), tail_weights(), cutoffs);
}

}  // namespace kindle::nn
