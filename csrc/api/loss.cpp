// Loss modules over the C++ loss ops (csrc/nn/loss.cpp).
#include "kindle/nn/loss.h"

#include "kindle/operators.h"

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

// ---- the other losses

Tensor HingeEmbeddingLossImpl::forward(const Tensor& input, const Tensor& target) {
  return hinge_embedding_loss(input, target, margin, reduction);
}
Tensor PoissonNLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return poisson_nll_loss(input, target, options.log_input(), options.full(), options.eps(), reduction);
}
MultiMarginLossImpl::MultiMarginLossImpl(const MultiMarginLossOptions& o) : Loss(o.reduction()), options(o) {
  KINDLE_CHECK_VALUE(o.p() == 1 || o.p() == 2, "only p == 1 and p == 2 supported");
  KINDLE_CHECK_VALUE(!o.weight().defined() || o.weight().dim() == 1,
                     "MultiMarginLoss: weight must be 1-D or undefined, got ", o.weight().sizes());
  weight = register_buffer("weight", o.weight());
}
Tensor MultiMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  std::optional<Tensor> w;
  if (weight.defined()) w = weight;
  return multi_margin_loss(input, target, options.p(), options.margin(), w, reduction);
}
Tensor MultiLabelMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return multilabel_margin_loss(input, target, reduction);
}
Tensor MarginRankingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
  return margin_ranking_loss(input1, input2, target, options.margin(), options.reduction().name());
}
Tensor CosineEmbeddingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
  return cosine_embedding_loss(input1, input2, target, options.margin(), options.reduction().name());
}
Tensor TripletMarginLossImpl::forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) {
  const auto& o = options;
  return triplet_margin_loss(anchor, positive, negative, o.margin(), o.p(), o.eps(), o.swap(), o.reduction().name());
}
Tensor CTCLossImpl::forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                            const Tensor& target_lengths) {
  const auto& o = options;
  return ctc_loss(log_probs, targets, input_lengths, target_lengths, o.blank(), o.reduction().name(),
                  o.zero_infinity());
}

TripletMarginWithDistanceLossImpl::TripletMarginWithDistanceLossImpl(const TripletMarginWithDistanceLossOptions& o)
    : options(o) {
  KINDLE_CHECK_VALUE(o.margin() > 0, "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got ",
                     o.margin(), " instead");
}
Tensor TripletMarginWithDistanceLossImpl::forward(const Tensor& anchor, const Tensor& positive,
                                                  const Tensor& negative) {
  const auto& o = options;
  if (!o.distance_function())  // pairwise_distance: the triplet margin loss itself
    return triplet_margin_loss(anchor, positive, negative, o.margin(), 2.0, 1e-6, o.swap(), o.reduction().name());
  const auto& dist = *o.distance_function();
  const int64_t a = anchor.dim(), p = positive.dim(), n = negative.dim();
  KINDLE_CHECK(a == p && p == n, "The anchor, positive, and negative tensors are expected to have the same number of "
               "dimensions, but got: anchor ", a, "D, positive ", p, "D, and negative ", n, "D inputs");
  Tensor d_pos = dist(anchor, positive), d_neg = dist(anchor, negative);
  if (o.swap()) d_neg = minimum(d_neg, dist(positive, negative));
  Tensor loss = clamp_min(d_pos - d_neg + o.margin(), 0);
  const std::string& r = o.reduction().name();
  KINDLE_CHECK_VALUE(r == "none" || r == "mean" || r == "sum", r, " is not a valid value for reduction");
  return r == "mean" ? loss.mean() : r == "sum" ? loss.sum() : loss;
}

Tensor GaussianNLLLossImpl::forward(const Tensor& input, const Tensor& target, const Tensor& var) {
  return gaussian_nll_loss(input, target, var, options.full(), options.eps(), options.reduction().name());
}

}  // namespace kindle::nn
