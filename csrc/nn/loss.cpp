// Losses of torch.nn.functional, composed of core ops (autograd comes from those).
#include <cmath>

#include "kindle/autograd.h"
#include "nn/common.h"
#include "ops/loss_kernels.h"
#include "ops/value_checks.h"

namespace kindle {
namespace nn_detail {

void check_reduction(std::string_view reduction, const char* op) {
  KINDLE_CHECK_VALUE(reduction == "none" || reduction == "mean" || reduction == "sum", op, ": ", reduction,
                     " is not a valid value for reduction (expected 'none', 'mean' or 'sum')");
}

Tensor reduce_loss(const Tensor& loss, std::string_view reduction, const char* op) {
  check_reduction(reduction, op);
  if (reduction == "mean") return loss.mean();
  if (reduction == "sum") return loss.sum();
  return loss;
}

}  // namespace nn_detail

using nn_detail::reduce_loss;

namespace {

void check_same_numel(const Tensor& input, const Tensor& target, const char* op) {
  // PyTorch broadcasts with a warning; a mismatch that does not broadcast raises in the op below.
  (void)input, (void)target, (void)op;
}

// The weighted losses of torch 2.x: 'mean' is sum(w * l) / sum(w).
Tensor weighted(const Tensor& loss, const std::optional<Tensor>& weight, std::string_view reduction, const Tensor& input,
                const char* op, bool plain_mean = false) {
  if (!weight) return reduce_loss(loss, reduction, op);
  KINDLE_CHECK_VALUE(weight->sizes() == input.sizes(), op, ": Weights and input must have the same size (weight ",
                     weight->sizes(), ", input ", input.sizes(), ")");
  nn_detail::check_reduction(reduction, op);
  Tensor wl = loss * *weight;
  if (reduction == "none") return wl;
  if (reduction == "sum") return wl.sum();
  return plain_mean ? wl.mean() : wl.sum() / weight->sum();  // huber_loss takes the plain mean (as PyTorch)
}

void check_float(const Tensor& t, const char* op, const char* what) {
  KINDLE_CHECK(t.is_floating_point(), op, ": expected ", what, " to be a floating point tensor, got ", t.dtype());
}

}  // namespace

Tensor mse_loss(const Tensor& self, const Tensor& target, std::string_view reduction,
               const std::optional<Tensor>& weight) {
  check_kernel_dtype(self.dtype(), "mse_cpu", true, true);  // no complex kernel
  check_same_numel(self, target, "mse_loss");
  Tensor loss = (self - target).square();
  return weighted(loss, weight, reduction, self, "mse_loss");
}

Tensor l1_loss(const Tensor& self, const Tensor& target, std::string_view reduction,
               const std::optional<Tensor>& weight) {
  Tensor loss = (self - target).abs();
  return weighted(loss, weight, reduction, self, "l1_loss");
}

Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, std::string_view reduction, double beta) {
  check_kernel_dtype(self.dtype(), "smooth_l1_cpu", true, true);  // no complex kernel
  check_kernel_dtype(promote_types(self.dtype(), target.dtype()), "smooth_l1_cpu", false, false);
  KINDLE_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  if (beta == 0) return l1_loss(self, target, reduction, std::nullopt);
  Tensor d = (self - target).abs();
  return reduce_loss(where(d < beta, 0.5 * d.square() / beta, d - 0.5 * beta), reduction, "smooth_l1_loss");
}

Tensor huber_loss(const Tensor& self, const Tensor& target, std::string_view reduction, double delta,
                  const std::optional<Tensor>& weight) {
  check_kernel_dtype(self.dtype(), "huber_cpu", true, true);  // no complex kernel
  check_kernel_dtype(promote_types(self.dtype(), target.dtype()), "huber_cpu", false, false);
  KINDLE_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  Tensor d = (self - target).abs();
  Tensor loss = where(d < delta, 0.5 * d.square(), delta * (d - 0.5 * delta));
  return weighted(loss, weight, reduction, self, "huber_loss", true);
}

namespace {
// IndexError naming the first target outside [0, C) that is not ignore_index.
void check_targets(const Tensor& tgt, const Tensor& valid, int64_t C, int64_t ignore_index) {
  Tensor bad = logical_and(valid, logical_or(tgt < 0, tgt >= C));
  if (detail::any_value(bad)) {
    Tensor v = tgt.masked_select(bad);
    KINDLE_CHECK_INDEX(false, "nll_loss: Target ", v.reshape({-1}).select(0, 0).item<int64_t>(), " is out of bounds (there are ",
                       C, " classes; ignore_index is ", ignore_index, ")");
  }
}
}  // namespace

Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t ignore_index,
                std::string_view reduction) {
  check_kernel_dtype(self.dtype(), "nll_loss_out_frame", true, true);  // no complex kernel
  check_kernel_dtype(self.dtype(), "nll_loss_out_frame", false, false);
  nn_detail::check_reduction(reduction, "nll_loss");
  KINDLE_CHECK(self.dim() >= 1, "nll_loss: input tensor should be 1D or more (got a 0-d tensor)");
  KINDLE_CHECK(target.dtype() == kInt64 || target.dtype() == kUInt8,
               "nll_loss: expected scalar type Long or Byte for the target (class indices), but found ", target.dtype());
  int64_t cdim = self.dim() == 1 ? 0 : 1;
  if (self.dim() >= 2 && target.dim() >= 1)
    KINDLE_CHECK_VALUE(self.size(0) == target.size(0), "nll_loss: Expected input batch_size (", self.size(0),
                       ") to match target batch_size (", target.size(0), ").");
  int64_t C = self.size(cdim);
  // Expected target shape: the input's shape without the class dim.
  DimVector want;
  for (int64_t i = 0; i < self.dim(); ++i)
    if (i != cdim) want.push_back(self.size(i));
  KINDLE_CHECK(target.sizes() == IntArrayRef(want), "nll_loss: expected target of shape ", IntArrayRef(want),
               " for input of shape ", self.sizes(), ", got ", target.sizes());
  if (weight) {
    KINDLE_CHECK(weight->dim() == 1 && weight->numel() == C, "nll_loss: weight tensor should be defined either for all ",
                 C, " classes or no classes but got weight tensor of shape: ", weight->sizes());
  }
  Tensor tgt = target.to(kInt64);
  Tensor valid = tgt != ignore_index;
  check_targets(tgt, valid, C, ignore_index);
  Tensor safe = where(valid, tgt, scalar_tensor_of(0, kInt64));
  Tensor logp = cdim == 0 ? self : self.movedim({1}, {-1});  // classes last
  Tensor picked = -logp.gather(-1, safe.unsqueeze(-1)).squeeze(IntArrayRef{-1});
  Tensor w = valid.to(self.dtype());
  if (weight) w = w * weight->index_select(0, safe.reshape({-1})).reshape(safe.sizes());
  // An ignored target contributes exactly 0, even next to NaN/inf logits (0 * NaN would be NaN).
  Tensor losses = where(valid, picked * w, nn_detail::zero_like_scalar(picked));
  if (reduction == "none") return losses;
  if (reduction == "sum") return losses.sum();
  // All targets ignored: the mean is NaN (0/0) as in PyTorch, but its gradient is 0, not NaN.
  Tensor total = w.sum();
  Tensor none = total == 0;
  Tensor denom = where(none, scalar_tensor_of(1, total.dtype()), total);
  return where(none, scalar_tensor_of(std::nan(""), total.dtype()), losses.sum() / denom);
}

namespace {

Tensor cross_entropy_ops(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                         int64_t ignore_index, std::string_view reduction, double label_smoothing) {
  nn_detail::check_reduction(reduction, "cross_entropy");
  KINDLE_CHECK(label_smoothing >= 0 && label_smoothing <= 1, "cross_entropy: label_smoothing must be between 0.0 and "
               "1.0. Got: ", label_smoothing);
  KINDLE_CHECK(self.dim() >= 1, "cross_entropy: input tensor should be 1D or more (got a 0-d tensor)");
  int64_t cdim = self.dim() == 1 ? 0 : 1;
  int64_t C = self.size(cdim);
  Tensor logp = self.log_softmax(cdim);
  DimVector wshape(size_t(self.dim()), 1);
  wshape[size_t(cdim)] = C;
  if (target.is_floating_point()) {  // class probabilities
    KINDLE_CHECK(target.sizes() == self.sizes(), "cross_entropy: expected target of the input's shape ", self.sizes(),
                 " for class probabilities, got ", target.sizes());
    Tensor t = label_smoothing > 0 ? target * (1 - label_smoothing) + label_smoothing / double(C) : target;
    Tensor prod = logp * t;
    if (weight) prod = prod * weight->reshape(wshape);
    Tensor losses = -prod.sum(IntArrayRef{cdim});
    if (reduction == "mean") return self.dim() == 1 ? losses : losses.sum() / double(losses.numel());
    return reduce_loss(losses, reduction, "cross_entropy");
  }
  Tensor nll = nll_loss(logp, target, weight, ignore_index, reduction);
  if (label_smoothing == 0) return nll;
  Tensor ignored = target.to(kInt64) == ignore_index;
  Tensor smooth = weight ? -(logp * weight->reshape(wshape)).sum(IntArrayRef{cdim}) : -logp.sum(IntArrayRef{cdim});
  smooth = smooth.masked_fill(ignored, nn_detail::zero_like_scalar(smooth));
  Tensor ret;
  if (reduction == "none") ret = smooth;
  else if (reduction == "sum") ret = smooth.sum();
  else if (weight) {
    Tensor safe = where(ignored, scalar_tensor_of(0, kInt64), target.to(kInt64));
    Tensor wsum = (weight->index_select(0, safe.reshape({-1})) * logical_not(ignored).reshape({-1}).to(self.dtype())).sum();
    ret = smooth.sum() / wsum;
  } else {
    ret = smooth.sum() / logical_not(ignored).sum().to(self.dtype());
  }
  return (1 - label_smoothing) * nll + ret * (label_smoothing / double(C));
}

// Class indices into (N, C) float logits, no weight, no smoothing: one autograd node over two row
// kernels (ops/loss_kernels.h). With create_graph, its backward differentiates the ops version.
Tensor cross_entropy_fused(const Tensor& self, const Tensor& target, int64_t ignore_index,
                           std::string_view reduction) {
  const int64_t N = self.size(0), C = self.size(1);
  KINDLE_CHECK_VALUE(target.size(0) == N, "nll_loss: Expected input batch_size (", N, ") to match target batch_size (",
                     target.size(0), ").");
  Tensor x = self.contiguous(), tgt = target.contiguous();
  Tensor valid = tgt != ignore_index;
  check_targets(tgt, valid, C, ignore_index);
  Tensor lse = empty_tensor({N}, x.dtype(), x.device()), losses = empty_tensor({N}, x.dtype(), x.device());
  const bool mean = reduction == "mean";
  Tensor count, out;  // count: the rows not ignored (the mean's denominator)
  {
    autograd::NoGradGuard no_grad;
    if (N) cross_entropy_stub[x.device()](x, tgt, ignore_index, lse, losses);
    if (mean) count = valid.sum().to(x.dtype());
    if (reduction == "none") out = losses;
    else if (reduction == "sum") out = losses.sum();
    else out = losses.sum() / count;  // 0/0: NaN when every target is ignored, as in PyTorch
  }
  if (!autograd::GradMode::is_enabled() || !self.requires_grad()) return out;
  auto ctx = std::make_shared<autograd::FunctionCtx>();
  ctx->needs_input_grad = {true};
  ctx->save_for_backward(mean ? autograd::tensor_list{self, tgt, lse, valid, count}
                              : autograd::tensor_list{self, tgt, lse, valid});
  std::string red(reduction);
  auto outs = autograd::wrap_outputs(
      "CrossEntropyBackward0", {self}, {out}, ctx,
      [red, ignore_index](autograd::FunctionCtx& c, autograd::tensor_list grads) -> autograd::tensor_list {
        autograd::tensor_list s = c.saved_tensors();
        const Tensor &self = s[0], &tgt = s[1], &lse = s[2], &valid = s[3];
        if (!grads[0].defined()) return {Tensor()};
        if (autograd::GradMode::is_enabled()) {  // create_graph
          Tensor again = cross_entropy_ops(self, tgt, std::nullopt, ignore_index, red, 0.0);
          return autograd::grad({again}, {self}, {grads[0]}, true, true, true);
        }
        // Per row: the output gradient (its share of the mean), 0 on ignored rows.
        Tensor g = grads[0].to(self.dtype());
        if (red == "mean") g = where(s[4] == 0, zeros_like(g), g / s[4]);
        Tensor coef = where(valid, g.expand(valid.sizes()), zeros_like(lse)).contiguous();
        Tensor dx = empty_tensor(self.sizes(), self.dtype(), self.device());
        if (self.numel()) cross_entropy_backward_stub[self.device()](self.contiguous(), tgt, lse, coef, dx);
        return {dx};
      });
  return outs[0];
}

}  // namespace

Tensor cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                     int64_t ignore_index, std::string_view reduction, double label_smoothing) {
  check_kernel_dtype(self.dtype(), "nll_loss_out_frame", true, true);  // no complex kernel
  nn_detail::check_reduction(reduction, "cross_entropy");
  if (self.dim() == 2 && target.dim() == 1 && target.dtype() == kInt64 && !weight && label_smoothing == 0 &&
      (self.dtype() == kFloat32 || self.dtype() == kFloat64) && self.size(1) > 0 &&
      !autograd::forward_ad::is_dual(self))
    return cross_entropy_fused(self, target, ignore_index, reduction);
  return cross_entropy_ops(self, target, weight, ignore_index, reduction, label_smoothing);
}

Tensor native_binary_cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                   std::string_view reduction) {
  KINDLE_CHECK_VALUE(self.sizes() == target.sizes(), "binary_cross_entropy: Using a target size (", target.sizes(),
                     ") that is different to the input size (", self.sizes(), ") is deprecated. Please ensure they "
                     "have the same size.");
  check_float(self, "binary_cross_entropy", "input");
  KINDLE_CHECK(detail::all_values(logical_and(self >= 0, self <= 1)),
               "binary_cross_entropy: all elements of input should be between 0 and 1");
  // log clamped at -100, as PyTorch, so that a 0 or 1 input gives a finite loss.
  Tensor lx = clamp_min(self.log(), -100), l1x = clamp_min((1 - self).log(), -100);
  Tensor loss = -(target * lx + (1 - target) * l1x);
  if (weight) loss = loss * *weight;
  return reduce_loss(loss, reduction, "binary_cross_entropy");
}

Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& pos_weight, std::string_view reduction) {
  KINDLE_CHECK_VALUE(self.sizes() == target.sizes(), "binary_cross_entropy_with_logits: Target size (", target.sizes(),
                     ") must be the same as input size (", self.sizes(), ")");
  // (1 - t) x + w_pos(t) * log(1 + exp(-x)); softplus is stable and smooth at 0
  Tensor softplus_neg = softplus(-self);
  Tensor loss;
  if (pos_weight) {
    Tensor lw = (*pos_weight - 1) * target + 1;
    loss = (1 - target) * self + lw * softplus_neg;
  } else {
    loss = (1 - target) * self + softplus_neg;
  }
  if (weight) loss = loss * *weight;
  return reduce_loss(loss, reduction, "binary_cross_entropy_with_logits");
}

Tensor kl_div(const Tensor& self, const Tensor& target, std::string_view reduction, bool log_target) {
  KINDLE_CHECK_VALUE(reduction == "none" || reduction == "mean" || reduction == "sum" || reduction == "batchmean",
                     "kl_div: ", reduction, " is not a valid value for reduction");
  check_float(self, "kl_div", "input");
  Tensor loss = log_target ? target.exp() * (target - self) : xlogy(target, target) - target * self;
  if (reduction == "batchmean") return self.dim() == 0 ? loss.sum() : loss.sum() / double(self.size(0));
  return reduce_loss(loss, reduction, "kl_div");
}

Tensor poisson_nll_loss(const Tensor& self, const Tensor& target, bool log_input, bool full, double eps,
                        std::string_view reduction) {
  Tensor loss = log_input ? self.exp() - target * self : self - target * (self + eps).log();
  if (full) {
    Tensor stirling = target * target.log() - target + 0.5 * (2 * M_PI * target).log();
    loss = loss + stirling.masked_fill(target <= 1, nn_detail::zero_like_scalar(stirling));
  }
  return reduce_loss(loss, reduction, "poisson_nll_loss");
}

Tensor gaussian_nll_loss(const Tensor& self, const Tensor& target, const Tensor& var, bool full, double eps,
                         std::string_view reduction) {
  check_float(self, "gaussian_nll_loss", "input");
  Tensor v = var;
  if (v.sizes() != self.sizes()) {
    // var may lack the last dim or have it of size 1 (one variance per sample)
    if (self.dim() > 0 && v.dim() == self.dim() - 1 && v.sizes() == self.sizes().slice(0, size_t(self.dim() - 1)))
      v = v.unsqueeze(-1);
    else
      KINDLE_CHECK_VALUE(v.dim() == self.dim() && v.size(-1) == 1 &&
                             v.sizes().slice(0, size_t(v.dim() - 1)) == self.sizes().slice(0, size_t(self.dim() - 1)),
                         "gaussian_nll_loss: var is of incorrect size (input ", self.sizes(), ", var ", var.sizes(), ")");
  }
  KINDLE_CHECK_VALUE(!detail::any_value(v < 0), "gaussian_nll_loss: var has negative entry/entries");
  // Clamp for stability without changing the gradient (PyTorch clamps in place under no_grad).
  Tensor clamped = v + (clamp_min(v, eps) - v).detach();
  Tensor loss = 0.5 * (clamped.log() + (self - target).square() / clamped);
  if (full) loss = loss + 0.5 * std::log(2 * M_PI);
  return reduce_loss(loss, reduction, "gaussian_nll_loss");
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                           std::string_view reduction) {
  KINDLE_CHECK(input1.dim() == input2.dim() && input1.dim() == target.dim(), "margin_ranking_loss : All input tensors "
               "should have same dimension but got sizes: input1: ", input1.sizes(), ", input2: ", input2.sizes(),
               ", target: ", target.sizes());
  return reduce_loss(clamp_min(-target * (input1 - input2) + margin, 0), reduction, "margin_ranking_loss");
}

Tensor hinge_embedding_loss(const Tensor& self, const Tensor& target, double margin, std::string_view reduction) {
  Tensor zero = nn_detail::zero_like_scalar(self);
  Scalar m = self.is_floating_point() ? Scalar(margin) : Scalar(int64_t(margin));
  Tensor margin_part = clamp_min(scalar_to_tensor(m) - self, 0).masked_fill(target != -1, zero);
  Tensor self_part = self.masked_fill(target != 1, zero);
  return reduce_loss(margin_part + self_part, reduction, "hinge_embedding_loss");
}

Tensor soft_margin_loss(const Tensor& self, const Tensor& target, std::string_view reduction) {
  KINDLE_CHECK(self.is_floating_point(), "result type Float can't be cast to the desired output type ",
               scalar_type_name(self.dtype()));
  KINDLE_CHECK_VALUE(self.sizes() == target.sizes(), "soft_margin_loss: input size ", self.sizes(),
                     " and target size ", target.sizes(), " must be the same");
  return reduce_loss(log1p(exp(-target * self)), reduction, "soft_margin_loss");
}

Tensor multilabel_soft_margin_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                   std::string_view reduction) {
  nn_detail::check_reduction(reduction, "multilabel_soft_margin_loss");
  Tensor loss = -(target * logsigmoid(self) + (1 - target) * logsigmoid(-self));
  if (weight) loss = loss * *weight;
  int64_t last = self.dim() - 1;  // the classes
  loss = loss.sum(IntArrayRef{last}) / self.size(last);
  return reduce_loss(loss, reduction, "multilabel_soft_margin_loss");
}

Tensor cosine_similarity(const Tensor& x1_in, const Tensor& x2_in, int64_t dim, double eps) {
  check_kernel_dtype(x1_in.dtype(), "cosine_similarity", true, true);  // no complex kernel
  // Normalise first (as PyTorch), which keeps the result within [-1, 1]; broadcast first so
  // that a size-1 dim is normalised at its broadcast size.
  auto b = broadcast_tensors({x1_in, x2_in});
  const Tensor &x1 = b[0], &x2 = b[1];
  Tensor n1 = clamp_min(x1.norm(2, IntArrayRef{dim}, true), eps);
  Tensor n2 = clamp_min(x2.norm(2, IntArrayRef{dim}, true), eps);
  return ((x1 / n1) * (x2 / n2)).sum(IntArrayRef{dim});
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                             std::string_view reduction) {
  KINDLE_CHECK(input1.sizes() == input2.sizes(), "cosine_embedding_loss: the two inputs must have the same shape, got ",
               input1.sizes(), " and ", input2.sizes());
  const double e = 1e-12;
  int64_t d = input1.dim() - 1;
  Tensor prod = (input1 * input2).sum(IntArrayRef{d});
  Tensor m1 = input1.square().sum(IntArrayRef{d}) + e, m2 = input2.square().sum(IntArrayRef{d}) + e;
  Tensor cos = prod / (m1 * m2).sqrt();
  Tensor zero = nn_detail::zero_like_scalar(cos);
  Tensor pos = (1 - cos).masked_fill(target != 1, zero);
  Tensor neg = clamp_min(cos - margin, 0).masked_fill(target != -1, zero);
  return reduce_loss(pos + neg, reduction, "cosine_embedding_loss");
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  int64_t d = std::max(x1.dim(), x2.dim()) - 1;
  if (d < 0) return (x1 - x2 + eps).abs();
  return (x1 - x2 + eps).norm(p, IntArrayRef{d}, keepdim);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin,
                           double p, double eps, bool swap, std::string_view reduction) {
  KINDLE_CHECK(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(), "triplet_margin_loss: The anchor, "
               "positive, and negative tensors are expected to have the same number of dimensions, but got: anchor ",
               anchor.dim(), "D, positive ", positive.dim(), "D, and negative ", negative.dim(), "D inputs");
  Tensor dp = pairwise_distance(anchor, positive, p, eps, false);
  Tensor dn = pairwise_distance(anchor, negative, p, eps, false);
  if (swap) dn = minimum(dn, pairwise_distance(positive, negative, p, eps, false));
  return reduce_loss(clamp_min(margin + dp - dn, 0), reduction, "triplet_margin_loss");
}

// sum over j != y of w[y] * max(0, margin - x[y] + x[j])^p, over the C classes.
Tensor multi_margin_loss(const Tensor& self, const Tensor& target, int64_t p, double margin,
                         const std::optional<Tensor>& weight, std::string_view reduction) {
  nn_detail::check_reduction(reduction, "multi_margin_loss");
  KINDLE_CHECK(p == 1 || p == 2, "multi_margin_loss: only p == 1 and p == 2 supported, got ", p);
  KINDLE_CHECK((self.dim() == 1 && target.dim() <= 1) || (self.dim() == 2 && target.dim() == 1), "multi_margin_loss: "
               "inconsistent target size: ", target.sizes(), " for input of size: ", self.sizes());
  KINDLE_CHECK_NOT_IMPLEMENTED(self.dtype() == kFloat32 || self.dtype() == kFloat64,  // PyTorch's kernel dtypes
                               "multi_margin_loss: \"multi_margin_loss_cpu_kernel\" not implemented for '",
                               scalar_type_name(self.dtype()), "'");
  KINDLE_CHECK(target.dtype() == kInt64, "multi_margin_loss: expected target of dtype int64, got ", target.dtype());
  Tensor x = self.dim() == 1 ? self.unsqueeze(0) : self;
  Tensor t = target.reshape({-1});
  int64_t C = x.size(1);
  KINDLE_CHECK(t.numel() == x.size(0), "multi_margin_loss: inconsistent target size: ", target.sizes(),
               " for input of size: ", self.sizes());
  if (weight) KINDLE_CHECK(weight->dim() == 1 && weight->numel() == C, "multi_margin_loss: inconsistent weight size: ",
                           weight->sizes(), " for input of size: ", self.sizes());
  KINDLE_CHECK(detail::all_values(logical_and(t >= Scalar(0), t < Scalar(C))),
                              "multi_margin_loss: target out of range (classes are 0 to ", C - 1, ")");
  Tensor ty = t.unsqueeze(1);
  Tensor z = clamp_min(x - x.gather(1, ty) + margin, 0);
  if (p == 2) z = z * z;
  z = z.scatter(1, ty, Scalar(0));  // the target's own class is not a margin
  if (weight) z = z * weight->to(z.dtype()).index_select(0, t).unsqueeze(1);
  Tensor losses = z.sum(IntArrayRef{1}) / double(C);
  if (self.dim() == 1) losses = losses.reshape({});
  return reduce_loss(losses, reduction, "multi_margin_loss");
}

// Targets are the class indices before the first -1; every (target j, non-target k) pair adds
// max(0, 1 - (x[j] - x[k])), over the C classes (a target listed twice counts twice, as in PyTorch).
Tensor multilabel_margin_loss(const Tensor& self, const Tensor& target, std::string_view reduction) {
  nn_detail::check_reduction(reduction, "multilabel_margin_loss");
  KINDLE_CHECK((self.dim() <= 2) && target.sizes() == self.sizes(), "multilabel_margin_loss: inconsistent target size: ",
               target.sizes(), " for input of size: ", self.sizes());
  KINDLE_CHECK_NOT_IMPLEMENTED(self.dtype() == kFloat32 || self.dtype() == kFloat64,
                               "multilabel_margin_loss: \"multilabel_margin_loss_forward_out_frame\" not implemented "
                               "for '", scalar_type_name(self.dtype()), "'");
  KINDLE_CHECK(target.dtype() == kInt64, "multilabel_margin_loss: expected target of dtype int64, got ", target.dtype());
  Tensor x = self.dim() == 2 ? self : self.reshape({1, -1});
  Tensor t = target.reshape(x.sizes());
  int64_t C = x.size(1);
  KINDLE_CHECK(detail::all_values(logical_and(t >= Scalar(-1), t < Scalar(C))),
                              "multilabel_margin_loss: target out of range (classes are 0 to ", C - 1, ", -1 ends the list)");
  Tensor listed = (t >= Scalar(0)).to(kInt64).cumprod(1);            // 1 before the first -1
  Tensor count = zeros(x.sizes(), kInt64, x.device()).scatter_add(1, t.clamp_min(0), listed).to(x.dtype());
  Tensor pair = count.unsqueeze(2) * (count == Scalar(0)).to(x.dtype()).unsqueeze(1);  // [n, j, k]
  Tensor z = clamp_min(1 - x.unsqueeze(2) + x.unsqueeze(1), 0);
  Tensor losses = (z * pair).sum(IntArrayRef{1, 2}) / double(C);
  if (self.dim() < 2) losses = losses.reshape({});
  return reduce_loss(losses, reduction, "multilabel_margin_loss");
}

Tensor normalize(const Tensor& self, double p, int64_t dim, double eps) {
  return self / clamp_min(self.norm(p, IntArrayRef{dim}, true), eps).expand_as(self);
}

}  // namespace kindle
