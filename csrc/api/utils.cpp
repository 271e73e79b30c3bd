// Gradient clipping (include/kindle/nn/utils.h), over the op table.
#include "kindle/nn/utils.h"

#include <cmath>
#include <limits>

#include "kindle/autograd.h"
#include "kindle/ops.h"

namespace kindle::nn::utils {

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> norms;
  for (const Tensor& p : parameters) {
    Tensor g = p.grad();
    if (g.defined()) norms.push_back(g.norm(norm_type).to(kFloat64));
  }
  if (norms.empty()) return 0.0;
  Tensor all = stack(norms);
  double total = std::isinf(norm_type) ? all.max().item<double>() : all.norm(norm_type).item<double>();
  KINDLE_CHECK(!error_if_nonfinite || std::isfinite(total), "The total norm of order ", norm_type,
               " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and "
               "scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`");
  double coef = max_norm / (total + 1e-6);
  if (coef < 1.0)
    for (const Tensor& p : parameters) {
      Tensor g = p.grad();
      if (g.defined()) g.mul_(scalar_to_tensor(coef));
    }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  autograd::NoGradGuard no_grad;
  for (const Tensor& p : parameters) {
    Tensor g = p.grad();
    if (g.defined()) g.clamp_(-clip_value, clip_value);
  }
}

}  // namespace kindle::nn::utils
