// Normalisation layers of torch.nn.functional, composed of core ops.
#include <limits>

#include "kindle/autograd.h"
#include "nn/common.h"

namespace kindle {

namespace {

bool is_half(DType dt) { return dt == kFloat16 || dt == kBFloat16; }

DimVector last_dims(int64_t ndim, size_t n) {
  DimVector d;
  for (int64_t i = ndim - int64_t(n); i < ndim; ++i) d.push_back(i);
  return d;
}

void check_normalized_shape(const Tensor& self, IntArrayRef normalized_shape, const char* op) {
  KINDLE_CHECK(!normalized_shape.empty(), op, ": Expected normalized_shape to be at least 1-dimensional, i.e., "
               "containing at least one element, but got normalized_shape = []");
  bool ok = self.dim() >= int64_t(normalized_shape.size()) &&
            self.sizes().slice(size_t(self.dim()) - normalized_shape.size()) == normalized_shape;
  KINDLE_CHECK(ok, op, ": Given normalized_shape=", normalized_shape, ", expected input with shape [*, ",
               normalized_shape, "], but got input of size", self.sizes());
}

// (1, C, 1, ...) for a per-channel parameter of an (N, C, ...) input
Tensor per_channel(const Tensor& p, int64_t ndim) {
  DimVector shape(size_t(ndim), 1);
  shape[1] = p.numel();
  return p.reshape(shape);
}

}  // namespace

Tensor layer_norm(const Tensor& self, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  check_normalized_shape(self, normalized_shape, "layer_norm");
  if (weight)
    KINDLE_CHECK(weight->sizes() == normalized_shape, "layer_norm: weight of shape ", weight->sizes(),
                 " does not match normalized_shape ", normalized_shape);
  if (bias)
    KINDLE_CHECK(bias->sizes() == normalized_shape, "layer_norm: bias of shape ", bias->sizes(),
                 " does not match normalized_shape ", normalized_shape);
  if (is_half(self.dtype()))  // statistics and normalisation in float32, rounded once (as PyTorch)
    return layer_norm(self.to(kFloat32), normalized_shape, weight, bias, eps).to(self.dtype());
  DimVector dims = last_dims(self.dim(), normalized_shape.size());
  auto [var, mean] = var_mean(self, dims, std::nullopt, true, Scalar(0));
  Tensor y = (self - mean) * (var + eps).rsqrt();
  if (weight) y = y * *weight;
  if (bias) y = y + *bias;
  return y;
}

Tensor rms_norm(const Tensor& self, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                std::optional<double> eps) {
  check_normalized_shape(self, normalized_shape, "rms_norm");
  double e = eps ? *eps
                 : self.dtype() == kFloat64 ? std::numeric_limits<double>::epsilon()
                 : self.dtype() == kFloat16 ? 0.0009765625
                 : self.dtype() == kBFloat16 ? 0.0078125 : double(std::numeric_limits<float>::epsilon());
  if (is_half(self.dtype())) return rms_norm(self.to(kFloat32), normalized_shape, weight, e).to(self.dtype());
  DimVector dims = last_dims(self.dim(), normalized_shape.size());
  Tensor y = self * (self.square().mean(dims, true) + e).rsqrt();
  if (weight) y = y * *weight;
  return y;
}

Tensor group_norm(const Tensor& self, int64_t num_groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  KINDLE_CHECK(self.dim() >= 2, "group_norm: Expected at least 2 dimensions for input tensor but received ",
               self.dim());
  int64_t N = self.size(0), C = self.size(1);
  KINDLE_CHECK(num_groups > 0 && C % num_groups == 0, "group_norm: Expected number of channels in input to be "
               "divisible by num_groups, but got input of shape ", self.sizes(), " and num_groups=", num_groups);
  if (weight) KINDLE_CHECK(weight->numel() == C, "group_norm: Expected weight to be a vector of size equal to the "
                           "number of channels in input, but got weight of shape ", weight->sizes(), " and input of shape ",
                           self.sizes());
  if (bias) KINDLE_CHECK(bias->numel() == C, "group_norm: Expected bias to be a vector of size equal to the number of "
                         "channels in input, but got bias of shape ", bias->sizes(), " and input of shape ", self.sizes());
  if (is_half(self.dtype())) return group_norm(self.to(kFloat32), num_groups, weight, bias, eps).to(self.dtype());
  Tensor g = self.reshape({N, num_groups, N == 0 ? 0 : self.numel() / (N * num_groups)});
  auto [var, mean] = var_mean(g, IntArrayRef{2}, std::nullopt, true, Scalar(0));
  Tensor y = ((g - mean) * (var + eps).rsqrt()).reshape(self.sizes());
  if (weight) y = y * per_channel(*weight, self.dim());
  if (bias) y = y + per_channel(*bias, self.dim());
  return y;
}

Tensor batch_norm(const Tensor& self, const std::optional<Tensor>& running_mean,
                  const std::optional<Tensor>& running_var, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, bool training, double momentum, double eps) {
  KINDLE_CHECK(self.dim() >= 2, "batch_norm: expected an input of at least 2 dimensions (N, C, ...), got shape ",
               self.sizes());
  if (is_half(self.dtype()))
    return batch_norm(self.to(kFloat32), running_mean, running_var, weight, bias, training, momentum, eps)
        .to(self.dtype());
  int64_t C = self.size(1);
  auto check_param = [&](const std::optional<Tensor>& t, const char* what) {
    if (t) KINDLE_CHECK(t->numel() == C, "batch_norm: ", what, " should contain ", C, " elements, not ", t->numel());
  };
  check_param(running_mean, "running_mean");
  check_param(running_var, "running_var");
  check_param(weight, "weight");
  check_param(bias, "bias");
  DimVector dims{0};
  for (int64_t i = 2; i < self.dim(); ++i) dims.push_back(i);
  Tensor mean, var;
  if (training) {
    int64_t n = self.numel() / std::max<int64_t>(C, 1);
    KINDLE_CHECK_VALUE(n > 1, "Expected more than 1 value per channel when training, got input size ", self.sizes());
    std::tie(var, mean) = var_mean(self, dims, std::nullopt, true, Scalar(0));
    if (running_mean || running_var) {
      autograd::NoGradGuard g;
      if (running_mean) running_mean->mul_(scalar_to_tensor(1 - momentum)).add_(mean.reshape({C}).detach() * momentum);
      if (running_var)
        running_var->mul_(scalar_to_tensor(1 - momentum))
            .add_(var.reshape({C}).detach() * (momentum * double(n) / double(n - 1)));
    }
  } else {
    KINDLE_CHECK(running_mean && running_var, "batch_norm: running_mean and running_var must be defined in evaluation "
                 "mode (training=False)");
    mean = per_channel(*running_mean, self.dim());
    var = per_channel(*running_var, self.dim());
  }
  Tensor y = (self - mean) * (var + eps).rsqrt();
  if (weight) y = y * per_channel(*weight, self.dim());
  if (bias) y = y + per_channel(*bias, self.dim());
  return y;
}

Tensor instance_norm(const Tensor& self, const std::optional<Tensor>& running_mean,
                     const std::optional<Tensor>& running_var, const std::optional<Tensor>& weight,
                     const std::optional<Tensor>& bias, bool use_input_stats, double momentum, double eps) {
  KINDLE_CHECK(self.dim() >= 3, "instance_norm: expected an input of at least 3 dimensions (N, C, ...), got shape ",
               self.sizes());
  int64_t N = self.size(0), C = self.size(1);
  if (use_input_stats) {
    int64_t spatial = C == 0 || N == 0 ? 2 : self.numel() / (N * C);
    KINDLE_CHECK_VALUE(spatial > 1, "instance_norm: Expected more than 1 spatial element when training, got input size ",
                       self.sizes());
  }
  // Instance norm is batch norm of a (1, N*C, ...) input; running stats are averaged over N.
  DimVector shape(self.sizes());
  shape[0] = 1;
  shape[1] = N * C;
  Tensor x = self.reshape(shape);
  std::optional<Tensor> rm, rv;
  if (running_mean) rm = running_mean->repeat({N});
  if (running_var) rv = running_var->repeat({N});
  Tensor y = batch_norm(x, rm, rv, std::nullopt, std::nullopt, use_input_stats, momentum, eps).reshape(self.sizes());
  if (use_input_stats) {
    autograd::NoGradGuard g;
    if (running_mean) running_mean->copy_(rm->reshape({N, C}).mean(IntArrayRef{0}));
    if (running_var) running_var->copy_(rv->reshape({N, C}).mean(IntArrayRef{0}));
  }
  if (weight) y = y * per_channel(*weight, self.dim());
  if (bias) y = y + per_channel(*bias, self.dim());
  return y;
}

}  // namespace kindle
