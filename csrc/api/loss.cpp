// Loss modules over the C++ loss ops (csrc/nn/loss.cpp).
#include "kindle/nn/loss.h"

#include "util.h"

namespace kindle::nn {

using detail::opt;

Loss::Loss(std::string r) : reduction(std::move(r)) {
  KINDLE_CHECK_VALUE(reduction == "none" || reduction == "mean" || reduction == "sum", reduction,
                     " is not a valid value for reduction");
}

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& o) : Loss(o.reduction()), options(o) {
  weight = register_buffer("weight", o.weight());
}
Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  return cross_entropy(input, target, opt(weight), options.ignore_index(), reduction, options.label_smoothing());
}

NLLLossImpl::NLLLossImpl(const NLLLossOptions& o) : Loss(o.reduction()), options(o) {
  weight = register_buffer("weight", o.weight());
}
Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return nll_loss(input, target, opt(weight), options.ignore_index(), reduction);
}

BCELossImpl::BCELossImpl(const BCELossOptions& o) : Loss(o.reduction()), options(o) {
  weight = register_buffer("weight", o.weight());
}
Tensor BCELossImpl::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy(input, target, opt(weight), reduction);
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& o) : Loss(o.reduction()), options(o) {
  weight = register_buffer("weight", o.weight());
  pos_weight = register_buffer("pos_weight", o.pos_weight());
}
Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy_with_logits(input, target, opt(weight), opt(pos_weight), reduction);
}

Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) { return mse_loss(input, target, reduction); }
Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) { return l1_loss(input, target, reduction); }
Tensor SmoothL1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return smooth_l1_loss(input, target, reduction, beta);
}
Tensor HuberLossImpl::forward(const Tensor& input, const Tensor& target) {
  return huber_loss(input, target, reduction, delta);
}
Tensor KLDivLossImpl::forward(const Tensor& input, const Tensor& target) {
  return kl_div(input, target, reduction, log_target);
}

}  // namespace kindle::nn
