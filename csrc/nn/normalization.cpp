// Normalisation layers of torch.nn.functional, composed of core ops.
#include <limits>

#include "autograd/forward_ad.h"
#include "kindle/autograd.h"
#include "autograd/formulas.h"
#include "nn/common.h"
#include "ops/norm_kernels.h"

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
  return std::get<0>(fused_layer_norm(self, normalized_shape, weight, bias, eps));
}

Tensor rms_norm(const Tensor& self, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                std::optional<double> eps) {
  check_normalized_shape(self, normalized_shape, "rms_norm");
  double e = eps ? *eps
                 : self.dtype() == kFloat64 || self.dtype() == kComplex128 ? std::numeric_limits<double>::epsilon()
                 : self.dtype() == kFloat16 ? 0.0009765625
                 : self.dtype() == kBFloat16 ? 0.0078125 : double(std::numeric_limits<float>::epsilon());
  if (is_half(self.dtype())) return rms_norm(self.to(kFloat32), normalized_shape, weight, e).to(self.dtype());
  DimVector dims = last_dims(self.dim(), normalized_shape.size());
  // (complex: PyTorch squares the numbers, not their magnitudes; so does this)
  Tensor y = self * (self.square().mean(dims, true) + e).rsqrt();
  if (weight) y = y * *weight;
  return y;
}

Tensor group_norm(const Tensor& self, int64_t num_groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  check_kernel_dtype(self.dtype(), "GroupNormKernelImpl", true, true);  // no complex kernel
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
  if (training) {
    int64_t n = self.numel() / std::max<int64_t>(C, 1);
    KINDLE_CHECK_VALUE(n > 1, "Expected more than 1 value per channel when training, got input size ", self.sizes());
  } else {
    KINDLE_CHECK(running_mean && running_var, "batch_norm: running_mean and running_var must be defined in evaluation "
                 "mode (training=False)");
  }
  return std::get<0>(fused_batch_norm(self, weight, bias, running_mean, running_var, training, momentum, eps));
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

// ---- the fused ops and their backward

namespace {

void check_ff(const Tensor& t, const char* op) {
  // complex: NotImplementedError, as torch has no complex kernel either
  KINDLE_CHECK_NOT_IMPLEMENTED(!t.is_complex(), op, ": \"", std::string_view(op) == "layer_norm" ?
                               "LayerNormKernelImpl" : op, "\" not implemented for '", scalar_type_name(t.dtype()), "'");
  KINDLE_CHECK(t.dtype() == kFloat32 || t.dtype() == kFloat64, op, ": expected a float32 or float64 input, got ",
               t.dtype());
}
std::optional<Tensor> as_contig(const std::optional<Tensor>& t, DType dt) {
  if (!t) return std::nullopt;
  return t->to(dt).contiguous();
}
RowsGeom rows_geom(const Tensor& input, IntArrayRef normalized_shape, double eps) {
  int64_t D = 1;
  for (int64_t s : normalized_shape) D *= s;
  return RowsGeom{D == 0 ? 0 : input.numel() / D, D, eps};
}
DimVector stats_shape(const Tensor& input, IntArrayRef normalized_shape) {
  DimVector s(input.sizes());
  for (size_t i = s.size() - normalized_shape.size(); i < s.size(); ++i) s[i] = 1;
  return s;
}
ChannelsGeom channels_geom(const Tensor& x) {
  int64_t N = x.size(0), C = x.size(1);
  return ChannelsGeom{N, C, N * C == 0 ? 0 : x.numel() / (N * C)};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> native_fused_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                                                            const std::optional<Tensor>& weight,
                                                            const std::optional<Tensor>& bias, double eps) {
  check_ff(input, "layer_norm");
  check_normalized_shape(input, normalized_shape, "layer_norm");
  RowsGeom g = rows_geom(input, normalized_shape, eps);
  Tensor x = input.contiguous();
  auto w = as_contig(weight, x.dtype()), b = as_contig(bias, x.dtype());
  Tensor y = empty_tensor(input.sizes(), x.dtype(), x.device());
  DimVector ss = stats_shape(input, normalized_shape);
  Tensor mean = empty_tensor(ss, x.dtype(), x.device()), rstd = empty_tensor(ss, x.dtype(), x.device());
  if (g.M) layer_norm_stub[x.device()](x, w ? &*w : nullptr, b ? &*b : nullptr, y, mean, rstd, g);
  return {y, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> native_fused_batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                                                           const std::optional<Tensor>& bias,
                                                           const std::optional<Tensor>& running_mean,
                                                           const std::optional<Tensor>& running_var, bool training,
                                                           double momentum, double eps) {
  check_ff(input, "batch_norm");
  KINDLE_CHECK(input.dim() >= 2, "batch_norm: expected an input of at least 2 dimensions (N, C, ...), got shape ",
               input.sizes());
  Tensor x = input.contiguous();
  ChannelsGeom g = channels_geom(x);
  DType dt = x.dtype();
  auto w = as_contig(weight, dt), b = as_contig(bias, dt);
  Tensor mean, invstd;
  if (training) {
    mean = empty_tensor({g.C}, dt, x.device());
    Tensor var = empty_tensor({g.C}, dt, x.device());
    if (g.C) batch_norm_stats_stub[x.device()](x, mean, var, g);
    invstd = (var + eps).rsqrt();
    const double n = double(g.N * g.S);
    autograd::NoGradGuard ng;
    if (running_mean) running_mean->mul_(scalar_to_tensor(1 - momentum)).add_(mean * momentum);
    if (running_var) running_var->mul_(scalar_to_tensor(1 - momentum)).add_(var * (momentum * n / std::max(n - 1, 1.0)));
  } else {
    mean = running_mean->to(dt, true).contiguous();  // a copy: outputs must not alias the buffers
    invstd = (running_var->to(dt) + eps).rsqrt().contiguous();
  }
  Tensor y = empty_tensor(x.sizes(), dt, x.device());
  if (y.numel()) batch_norm_apply_stub[x.device()](x, mean, invstd, w ? &*w : nullptr, b ? &*b : nullptr, y, g);
  return {y, mean, invstd};
}

// Eval-mode batch norm of torch.cat(tensors, 1), then clamp(min, max): kindle.compile's fusion of
// DenseNet's cat -> BatchNorm2d -> ReLU, one pass where eager makes three (the concatenation, the
// normalisation, the in-place ReLU). `invstd` is 1 / sqrt(running_var + eps), computed by the caller
// as batch_norm computes it, so the result is batch_norm's then clamp's, element for element.
Tensor _cat_batch_norm_clamp(TensorList tensors, const Tensor& mean, const Tensor& invstd,
                             const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, double min,
                             double max) {
  KINDLE_CHECK(!tensors.empty(), "_cat_batch_norm_clamp: expected at least one tensor");
  KINDLE_CHECK(!(min > max), "_cat_batch_norm_clamp: expected min <= max, got min=", min, " and max=", max);
  const Tensor& t0 = tensors[0];
  const bool grad = autograd::GradMode::is_enabled();
  std::vector<Tensor> parts;
  int64_t C = 0;
  for (const Tensor& t : tensors) {
    check_ff(t, "_cat_batch_norm_clamp");
    KINDLE_CHECK(t.dim() >= 2 && t.dim() == t0.dim() && t.dtype() == t0.dtype() && t.device() == t0.device() &&
                     t.size(0) == t0.size(0) && t.sizes().slice(2) == t0.sizes().slice(2),
                 "_cat_batch_norm_clamp: expected tensors of one dtype and device, shaped (N, C_i, *) alike but "
                 "for C_i; got ", t0.sizes(), " ", t0.dtype(), " and ", t.sizes(), " ", t.dtype());
    KINDLE_CHECK(!(grad && t.requires_grad()), "_cat_batch_norm_clamp: an inference-only op (no gradient "
                 "formula); call it with gradients off, or use cat, batch_norm and clamp");
    parts.push_back(t.contiguous());
    C += t.size(1);
  }
  const DType dt = t0.dtype();
  auto per_channel = [&](const std::optional<Tensor>& p, const char* what) -> std::optional<Tensor> {
    if (!p) return std::nullopt;
    KINDLE_CHECK(p->numel() == C, "_cat_batch_norm_clamp: ", what, " should contain ", C, " elements, not ",
                 p->numel());
    KINDLE_CHECK(!(grad && p->requires_grad()), "_cat_batch_norm_clamp: an inference-only op (no gradient "
                 "formula); call it with gradients off");
    return p->to(dt).contiguous();
  };
  auto m = per_channel(mean, "mean"), s = per_channel(invstd, "invstd"), w = per_channel(weight, "weight"),
       b = per_channel(bias, "bias");
  std::vector<int64_t> shape(t0.sizes().begin(), t0.sizes().end());
  shape[1] = C;
  Tensor y = empty_tensor(shape, dt, t0.device());
  int64_t S = 1;
  for (size_t i = 2; i < shape.size(); ++i) S *= shape[i];
  const ChannelsGeom g{shape[0], C, S};
  if (y.numel())
    batch_norm_apply_parts_stub[t0.device()](parts, *m, *s, w ? &*w : nullptr, b ? &*b : nullptr, y, g, min, max);
  return y;
}

namespace autograd {
Tensor layer_norm_grad_input(const Tensor& grad, const Tensor& input, const Tensor& mean, const Tensor& rstd,
                             const std::optional<Tensor>& weight, IntArrayRef normalized_shape, double eps,
                             Tensor* grad_weight, Tensor* grad_bias) {
  if (!grad.defined()) return {};
  if (GradMode::is_enabled()) {  // recorded backward: written with ops
    // The statistics are recomputed with ops so that their dependence on input is recorded.
    DimVector dims = last_dims(input.dim(), normalized_shape.size());
    auto [v, mu] = var_mean(input, dims, std::nullopt, true, Scalar(0));
    Tensor r = (v + eps).rsqrt();
    Tensor xhat = (input - mu) * r;
    Tensor g = weight ? grad * *weight : grad;
    return r * (g - g.mean(dims, true) - xhat * (g * xhat).mean(dims, true));
  }
  RowsGeom geom = rows_geom(input, normalized_shape, 0);
  Tensor dx = empty_tensor(input.sizes(), input.dtype(), input.device());
  auto w = as_contig(weight, input.dtype());
  Tensor dw, db;
  if (grad_weight && geom.M) dw = empty_tensor(normalized_shape, input.dtype(), input.device());
  if (grad_bias && geom.M) db = empty_tensor(normalized_shape, input.dtype(), input.device());
  if (geom.M)
    layer_norm_backward_input_stub[input.device()](grad.contiguous(), input.contiguous(), mean, rstd,
                                                   w ? &*w : nullptr, dx, dw.defined() ? &dw : nullptr,
                                                   db.defined() ? &db : nullptr, geom);
  if (dw.defined()) *grad_weight = dw;
  if (db.defined()) *grad_bias = db;
  return dx;
}

// The input's part is the backward's formula with the weight applied after: layer norm's Jacobian
// in x-hat is symmetric.
Tensor layer_norm_jvp(const Tensor& input, const Tensor& input_t, const std::optional<Tensor>& weight,
                      const Tensor& weight_t, const Tensor& bias_t, IntArrayRef normalized_shape, double eps) {
  DimVector dims = last_dims(input.dim(), normalized_shape.size());
  auto [v, mu] = var_mean(input, dims, std::nullopt, true, Scalar(0));
  Tensor r = (v + eps).rsqrt();
  Tensor xhat = (input - mu) * r;
  Tensor out_t;
  if (input_t.defined()) {
    Tensor d = r * (input_t - input_t.mean(dims, true) - xhat * (input_t * xhat).mean(dims, true));
    out_t = weight ? d * *weight : d;
  }
  if (weight_t.defined()) out_t = forward_ad::add_terms(out_t, xhat * weight_t);
  if (bias_t.defined()) out_t = forward_ad::add_terms(out_t, bias_t);
  return out_t;
}

Tensor layer_norm_grad_param(const Tensor& grad, const Tensor& input, const Tensor& mean, const Tensor& rstd,
                             IntArrayRef normalized_shape, bool weight, double eps) {
  if (!grad.defined()) return {};
  if (GradMode::is_enabled()) {
    DimVector lead;
    for (int64_t i = 0; i < input.dim() - int64_t(normalized_shape.size()); ++i) lead.push_back(i);
    DimVector dims = last_dims(input.dim(), normalized_shape.size());
    Tensor t = grad;
    if (weight) {
      auto [v, mu] = var_mean(input, dims, std::nullopt, true, Scalar(0));
      t = grad * ((input - mu) * (v + eps).rsqrt());
    }
    return lead.empty() ? t : t.sum(lead);
  }
  RowsGeom geom = rows_geom(input, normalized_shape, 0);
  Tensor out = empty_tensor(normalized_shape, input.dtype(), input.device());
  if (geom.M) layer_norm_backward_param_stub[input.device()](grad.contiguous(), input.contiguous(), mean, rstd, out,
                                                             weight, geom);
  else out.zero_();
  return out;
}

Tensor batch_norm_grad_input(const Tensor& grad, const Tensor& input, const std::optional<Tensor>& weight,
                             const Tensor& mean, const Tensor& invstd, bool training, double eps) {
  if (!grad.defined()) return {};
  if (GradMode::is_enabled()) {
    DimVector dims{0};
    for (int64_t i = 2; i < input.dim(); ++i) dims.push_back(i);
    Tensor m = per_channel(mean, input.dim()), is = per_channel(invstd, input.dim());
    if (training) {  // statistics recomputed with ops: their dependence on input is recorded
      auto [v, mu] = var_mean(input, dims, std::nullopt, true, Scalar(0));
      m = mu;
      is = (v + eps).rsqrt();
    }
    Tensor scale = weight ? is * per_channel(*weight, input.dim()) : is;
    if (!training) return grad * scale;
    Tensor xhat = (input - m) * is;
    return scale * (grad - grad.mean(dims, true) - xhat * (grad * xhat).mean(dims, true));
  }
  Tensor x = input.contiguous(), g = grad.contiguous();
  ChannelsGeom geom = channels_geom(x);
  auto w = as_contig(weight, x.dtype());
  Tensor dx = empty_tensor(x.sizes(), x.dtype(), x.device());
  if (!dx.numel()) return dx;
  if (training) {
    Tensor sg = empty_tensor({geom.C}, x.dtype(), x.device()), sgx = empty_tensor({geom.C}, x.dtype(), x.device());
    batch_norm_reduce_stub[x.device()](g, x, mean, invstd, sg, sgx, geom);
    batch_norm_backward_input_stub[x.device()](g, x, mean, invstd, w ? &*w : nullptr, &sg, &sgx, dx, geom);
  } else {
    batch_norm_backward_input_stub[x.device()](g, x, mean, invstd, w ? &*w : nullptr, nullptr, nullptr, dx, geom);
  }
  return dx;
}

Tensor batch_norm_grad_param(const Tensor& grad, const Tensor& input, const Tensor& mean, const Tensor& invstd,
                             bool weight, bool training, double eps) {
  if (!grad.defined()) return {};
  DimVector dims{0};
  for (int64_t i = 2; i < input.dim(); ++i) dims.push_back(i);
  if (GradMode::is_enabled()) {
    Tensor t = grad;
    if (weight && training) {
      auto [v, mu] = var_mean(input, dims, std::nullopt, true, Scalar(0));
      t = grad * ((input - mu) * (v + eps).rsqrt());
    } else if (weight) {
      t = grad * ((input - per_channel(mean, input.dim())) * per_channel(invstd, input.dim()));
    }
    return t.sum(dims);
  }
  Tensor x = input.contiguous();
  ChannelsGeom geom = channels_geom(x);
  Tensor sg = zeros({geom.C}, x.dtype(), x.device()), sgx = zeros({geom.C}, x.dtype(), x.device());
  if (x.numel()) batch_norm_reduce_stub[x.device()](grad.contiguous(), x, mean, invstd, sg, sgx, geom);
  return weight ? sgx : sg;
}

}  // namespace autograd

// Each element divided by (k + alpha * mean of the squares over `size` neighbouring channels)**beta,
// zero-padded at the channel ends with the window centred as torch's.
Tensor local_response_norm(const Tensor& self, int64_t size, double alpha, double beta, double k) {
  KINDLE_CHECK_VALUE(self.dim() >= 3, "Expected 3D or higher dimensionality input (got ", self.dim(), " dimensions)");
  if (self.numel() == 0) return self;
  KINDLE_CHECK_NOT_IMPLEMENTED(self.is_floating_point(), "local_response_norm: Kindle has no integer form (got ",
                               self.dtype(), ")");
  // torch's kernel (a 3-d average pool) has no half form above 3 dimensions; neither does this one, to agree
  KINDLE_CHECK_NOT_IMPLEMENTED(self.dim() == 3 || (self.dtype() != kFloat16 && self.dtype() != kBFloat16),
                               "\"avg_pool3d_out_frame\" not implemented for '", scalar_type_name(self.dtype()), "'");
  KINDLE_CHECK_VALUE(size > 0, "local_response_norm: size must be positive, got ", size);
  Tensor sq = self * self;
  auto pad = [&](int64_t n) {
    DimVector shape(sq.sizes());
    shape[1] = n;
    return zeros(shape, sq.dtype(), sq.device());
  };
  Tensor padded = cat({pad(size / 2), sq, pad((size - 1) / 2)}, 1);
  Tensor window = padded.unfold(1, size, 1).sum(IntArrayRef{-1}) / double(size);
  return self / (window * alpha + k).pow(beta);
}

// The legacy Lua-torch layer (nn.CrossMapLRN2d) as PyTorch's port computes it: channel c scaled by
// the sum of squares over [c - p + 1, c + p - 1] (p = (size - 1) / 2 + 1), where the running
// window of that code never drops channel 0 once c > p; reproduced so that results match.
Tensor cross_map_lrn2d(const Tensor& self, int64_t size, double alpha, double beta, double k) {
  KINDLE_CHECK_VALUE(self.dim() == 4, "CrossMapLRN2d: Expected input to be 4D, got ", self.dim(), "D instead.");
  KINDLE_CHECK_VALUE(size > 0, "CrossMapLRN2d: size must be positive, got ", size);
  const int64_t c = self.size(1), p = (size - 1) / 2 + 1;
  Tensor sq = self * self;
  Tensor prefix = cat({zeros_like(sq.narrow(1, 0, 1)), sq.cumsum(1)}, 1);
  Tensor chans = arange(c, std::nullopt, 1, kInt64, self.device());
  Tensor lo = where(chans > p, chans - p + 1, zeros_like(chans));
  Tensor hi = clamp_max(chans + (p - 1), c - 1);
  Tensor window = prefix.index_select(1, hi + 1) - prefix.index_select(1, lo);
  Tensor channel0 = (chans > p).to(sq.dtype()).reshape({1, c, 1, 1}) * sq.narrow(1, 0, 1);
  return self * ((window + channel0) * (alpha / double(size)) + k).pow(-beta);
}

}  // namespace kindle
