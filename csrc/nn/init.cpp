// nn::init, the one implementation under both front ends (Python's kindle.nn.init binds these).
// The scalar arithmetic is written as Python writes it (pow for squares) and the draws are
// torch's, so bounds and weights match torch bit for bit under the same seed.
#include "kindle/nn/init.h"

#include <algorithm>
#include <cctype>
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

int64_t calculate_correct_fan(const Tensor& tensor, const EnumName& mode_name) {
  std::string mode = mode_name.name();
  std::transform(mode.begin(), mode.end(), mode.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  KINDLE_CHECK_VALUE(mode == "fan_in" || mode == "fan_out", "Mode ", mode,
                     " not supported, please use one of ['fan_in', 'fan_out']");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return mode == "fan_in" ? fan_in : fan_out;
}

const Tensor& uniform_(const Tensor& tensor, double a, double b, const OptGenerator& generator) {
  autograd::NoGradGuard g;
  return tensor.uniform_(a, b, generator);
}

const Tensor& normal_(const Tensor& tensor, double mean, double std, const OptGenerator& generator) {
  autograd::NoGradGuard g;
  return tensor.normal_(mean, std, generator);
}

// As torch 2.13 draws: when [a, b] holds more than 30% of the mass, normals with those outside
// redrawn until none is; otherwise uniform proposals on [a, b], each accepted where the log of a
// second uniform is at most its log density relative to the peak on [a, b].
const Tensor& trunc_normal_(const Tensor& tensor, double mean, double std, double a, double b,
                            const OptGenerator& gen) {
  auto norm_cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  autograd::NoGradGuard g;
  if (norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std) > 0.3) {
    // the bounds as the tensor's dtype holds them
    Tensor lo = scalar_to_tensor(scalar_tensor_of(a, tensor.dtype()).item<double>());
    Tensor hi = scalar_to_tensor(scalar_tensor_of(b, tensor.dtype()).item<double>());
    Tensor out = tensor.normal_(mean, std, gen);
    while (true) {
      Tensor outside = logical_or(lt(out, lo), gt(out, hi));
      if (!outside.any().item<bool>()) break;
      out = where(outside, empty_like(out).normal_(mean, std, gen), out);
    }
    if (!out.is_same(tensor)) tensor.copy_(out);
    return tensor;
  }
  const double log_peak = -0.5 * std::pow((std::max(a, std::min(mean, b)) - mean) / std, 2);
  auto log_density = [&](const Tensor& x) -> const Tensor& {  // in place, as Python's x.sub_(...)...
    x.sub_(scalar_to_tensor(mean)).div_(scalar_to_tensor(std)).pow_(scalar_to_tensor(2));
    return x.mul_(scalar_to_tensor(-0.5)).sub_(scalar_to_tensor(log_peak));
  };
  Tensor proposal = empty_like(tensor), u = empty_like(tensor);
  tensor.uniform_(a, b, gen);
  Tensor rejected = gt(u.uniform_(0, 1, gen).log_(), log_density(proposal.copy_(tensor)));
  if (rejected.any().item<bool>()) {
    Tensor out = tensor;
    while (true) {
      proposal.uniform_(a, b, gen);
      out = where(rejected, proposal, out);
      Tensor again = gt(u.uniform_(0, 1, gen).log_(), log_density(proposal));
      rejected = where(rejected, again, rejected);
      if (!rejected.any().item<bool>()) break;
    }
    tensor.copy_(out);
  }
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

const Tensor& xavier_uniform_(const Tensor& tensor, double gain, const OptGenerator& generator) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  double a = std::sqrt(3.0) * gain * std::sqrt(2.0 / double(fan_in + fan_out));
  return init::uniform_(tensor, -a, a, generator);
}

const Tensor& xavier_normal_(const Tensor& tensor, double gain, const OptGenerator& generator) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return init::normal_(tensor, 0.0, gain * std::sqrt(2.0 / double(fan_in + fan_out)), generator);
}

const Tensor& kaiming_uniform_(const Tensor& tensor, double a, const EnumName& mode, const EnumName& nonlinearity,
                               const OptGenerator& generator) {
  if (tensor.numel() == 0) return tensor;  // (Python warns "Initializing zero-element tensors is a no-op")
  int64_t fan = calculate_correct_fan(tensor, mode);
  double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(double(fan));
  return init::uniform_(tensor, -bound, bound, generator);
}

const Tensor& kaiming_normal_(const Tensor& tensor, double a, const EnumName& mode, const EnumName& nonlinearity,
                              const OptGenerator& generator) {
  if (tensor.numel() == 0) return tensor;
  int64_t fan = calculate_correct_fan(tensor, mode);
  return init::normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / std::sqrt(double(fan)), generator);
}

}  // namespace kindle::nn::init
