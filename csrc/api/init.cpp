// nn::init, with Python's formulas and messages (python/kindle/nn/init.py). The scalar arithmetic
// is written as Python writes it (pow for squares) so bounds, and therefore weights, match bit
// for bit under the same seed.
#include "kindle/nn/init.h"

#include <cmath>

#include "kindle/autograd.h"
#include "kindle/ops.h"

namespace kindle::nn::init {

double calculate_gain(const EnumName& name, std::optional<double> param) {
  const std::string& nonlinearity = name.name();
  static const char* linear_fns[] = {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                                     "conv_transpose2d", "conv_transpose3d", "sigmoid"};
  for (const char* n : linear_fns)
    if (nonlinearity == n) return 1;
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1 + std::pow(slope, 2)));
  }
  if (nonlinearity == "selu") return 3.0 / 4;
  throw ValueError("Unsupported nonlinearity " + nonlinearity);
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  KINDLE_CHECK_VALUE(tensor.dim() >= 2,
                     "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

static int64_t correct_fan(const Tensor& tensor, const std::string& mode) {
  KINDLE_CHECK_VALUE(mode == "fan_in" || mode == "fan_out", "Mode ", mode,
                     " not supported, please use one of ['fan_in', 'fan_out']");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return mode == "fan_in" ? fan_in : fan_out;
}

const Tensor& uniform_(const Tensor& tensor, double a, double b) {
  autograd::NoGradGuard g;
  return tensor.uniform_(a, b);
}

const Tensor& normal_(const Tensor& tensor, double mean, double std) {
  autograd::NoGradGuard g;
  return tensor.normal_(mean, std);
}

const Tensor& trunc_normal_(const Tensor& tensor, double mean, double std, double a, double b) {
  // The inverse CDF of a uniform draw, as torch does.
  auto norm_cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  autograd::NoGradGuard g;
  double lo = norm_cdf((a - mean) / std), hi = norm_cdf((b - mean) / std);
  tensor.uniform_(2 * lo - 1, 2 * hi - 1);
  tensor.erfinv_();
  tensor.mul_(scalar_to_tensor(std * std::sqrt(2.0)));
  tensor.add_(scalar_to_tensor(mean));
  tensor.clamp_(a, b);
  return tensor;
}

const Tensor& constant_(const Tensor& tensor, double value) {
  autograd::NoGradGuard g;
  return tensor.fill_(Scalar(value));
}

const Tensor& ones_(const Tensor& tensor) { return constant_(tensor, 1.0); }

const Tensor& zeros_(const Tensor& tensor) {
  autograd::NoGradGuard g;
  return tensor.zero_();
}

const Tensor& eye_(const Tensor& tensor) {
  KINDLE_CHECK_VALUE(tensor.dim() == 2, "Only tensors with 2 dimensions are supported");
  autograd::NoGradGuard g;
  return tensor.copy_(eye(tensor.size(0), tensor.size(1), tensor.dtype()));
}

const Tensor& xavier_uniform_(const Tensor& tensor, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  double a = std::sqrt(3.0) * gain * std::sqrt(2.0 / double(fan_in + fan_out));
  return init::uniform_(tensor, -a, a);
}

const Tensor& xavier_normal_(const Tensor& tensor, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return init::normal_(tensor, 0.0, gain * std::sqrt(2.0 / double(fan_in + fan_out)));
}

const Tensor& kaiming_uniform_(const Tensor& tensor, double a, const EnumName& mode,
                               const EnumName& nonlinearity) {
  if (tensor.numel() == 0) return tensor;  // Python warns "Initializing zero-element tensors is a no-op"
  int64_t fan = correct_fan(tensor, mode);
  double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(double(fan));
  return init::uniform_(tensor, -bound, bound);
}

const Tensor& kaiming_normal_(const Tensor& tensor, double a, const EnumName& mode, const EnumName& nonlinearity) {
  if (tensor.numel() == 0) return tensor;
  int64_t fan = correct_fan(tensor, mode);
  return init::normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / std::sqrt(double(fan)));
}

}  // namespace kindle::nn::init
