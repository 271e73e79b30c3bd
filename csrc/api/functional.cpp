// libtorch's functional spellings (include/kindle/nn/functional.h): thin wrappers over the op table.
#include "kindle/nn/functional.h"

#include <cmath>

namespace kindle {

std::string_view reduction_name(Reduction::Reduction r) {
  switch (r) {
    case Reduction::None: return "none";
    case Reduction::Mean: return "mean";
    case Reduction::Sum: return "sum";
  }
  KINDLE_ERROR("unknown Reduction ", int64_t(r));
}

Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                Reduction::Reduction reduction, int64_t ignore_index) {
  return nll_loss(self, target, weight, ignore_index, reduction_name(reduction));
}
Tensor cross_entropy_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                          Reduction::Reduction reduction, int64_t ignore_index, double label_smoothing) {
  return cross_entropy(self, target, weight, ignore_index, reduction_name(reduction), label_smoothing);
}
Tensor mse_loss(const Tensor& self, const Tensor& target, Reduction::Reduction reduction) {
  return mse_loss(self, target, reduction_name(reduction));
}
Tensor l1_loss(const Tensor& self, const Tensor& target, Reduction::Reduction reduction) {
  return l1_loss(self, target, reduction_name(reduction));
}
Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, Reduction::Reduction reduction, double beta) {
  return smooth_l1_loss(self, target, reduction_name(reduction), beta);
}
Tensor huber_loss(const Tensor& self, const Tensor& target, Reduction::Reduction reduction, double delta) {
  return huber_loss(self, target, reduction_name(reduction), delta);
}
Tensor kl_div(const Tensor& self, const Tensor& target, Reduction::Reduction reduction, bool log_target) {
  return kl_div(self, target, reduction_name(reduction), log_target);
}
Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                            Reduction::Reduction reduction) {
  return binary_cross_entropy(self, target, weight, reduction_name(reduction));
}
Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& pos_weight, Reduction::Reduction reduction) {
  return binary_cross_entropy_with_logits(self, target, weight, pos_weight, reduction_name(reduction));
}

namespace {
// A pooling argument of D values from one value or D (empty: `fallback`).
DimVector expand(IntArrayRef v, size_t d, IntArrayRef fallback, const char* op, const char* what) {
  if (v.empty()) v = fallback;
  KINDLE_CHECK_VALUE(v.size() == 1 || v.size() == d, op, ": ", what, " must be one value or ", d, " values, got ",
                     v.size());
  DimVector out;
  for (size_t i = 0; i < d; ++i) out.push_back(v[v.size() == 1 ? 0 : i]);
  return out;
}
}  // namespace

Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  const char* op = "max_pool2d";
  DimVector k = expand(kernel_size, 2, {}, op, "kernel_size");
  return _max_pool2d_values(self, k, expand(stride, 2, k, op, "stride"), expand(padding, 2, {}, op, "padding"),
                            expand(dilation, 2, {}, op, "dilation"), ceil_mode);
}

// The op expands a single value to all three dims.
Tensor max_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor max_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  const char* op = "max_pool1d";
  KINDLE_CHECK_VALUE(self.dim() == 2 || self.dim() == 3, op, ": expected a 2-D or 3-D input, got ", self.sizes());
  int64_t k = expand(kernel_size, 1, {}, op, "kernel_size")[0];
  int64_t s = expand(stride, 1, IntArrayRef(k), op, "stride")[0];
  int64_t p = padding.empty() ? 0 : expand(padding, 1, {}, op, "padding")[0];
  int64_t d = dilation.empty() ? 1 : expand(dilation, 1, {}, op, "dilation")[0];
  Tensor out = std::get<0>(max_pool2d_with_indices(self.unsqueeze(-2), {1, k}, {1, s}, {0, p}, {1, d}, ceil_mode));
  return out.squeeze(std::vector<int64_t>{-2});
}

namespace nn::functional {

Tensor dropout(const Tensor& input, const DropoutFuncOptions& o) {
  Tensor out = kindle::dropout(input, o.p(), o.training());
  return o.inplace() ? input.copy_(out) : out;
}
Tensor dropout2d(const Tensor& input, const DropoutFuncOptions& o) {
  Tensor out = kindle::dropout2d(input, o.p(), o.training());
  return o.inplace() ? input.copy_(out) : out;
}
Tensor dropout3d(const Tensor& input, const DropoutFuncOptions& o) {
  Tensor out = kindle::dropout3d(input, o.p(), o.training());
  return o.inplace() ? input.copy_(out) : out;
}
Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& o) { return kindle::softmax(input, o.dim(), o.dtype()); }
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& o) {
  return kindle::log_softmax(input, o.dim(), o.dtype());
}
Tensor leaky_relu(const Tensor& input, const LeakyReLUFuncOptions& o) {
  Tensor out = kindle::leaky_relu(input, o.negative_slope());
  return o.inplace() ? input.copy_(out) : out;
}
Tensor gelu(const Tensor& input, const GELUFuncOptions& o) { return kindle::gelu(input, o.approximate()); }
Tensor relu(const Tensor& input, bool inplace) { return inplace ? kindle::relu_(input) : kindle::relu(input); }
Tensor silu(const Tensor& input, bool inplace) {
  Tensor out = kindle::silu(input);
  return inplace ? input.copy_(out) : out;
}
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return kindle::linear(input, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt);
}
Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& o) {
  return kindle::max_pool1d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& o) {
  return kindle::max_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
Tensor max_pool3d(const Tensor& input, const MaxPool3dFuncOptions& o) {
  return std::get<0>(
      kindle::max_pool3d_with_indices(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode()));
}
Tensor avg_pool3d(const Tensor& input, const AvgPool3dFuncOptions& o) {
  return kindle::avg_pool3d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                            o.divisor_override());
}
Tensor adaptive_avg_pool3d(const Tensor& input, const AdaptiveAvgPool3dFuncOptions& o) {
  return kindle::adaptive_avg_pool3d(input, o.output_size());
}
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& o) {
  return kindle::avg_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                            o.divisor_override());
}
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& o) {
  return kindle::adaptive_avg_pool2d(input, o.output_size());
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& o) {
  auto bias = o.bias().defined() ? std::optional<Tensor>(o.bias()) : std::nullopt;
  if (!o.padding().mode().empty())  // 'same' / 'valid', resolved by the op (as Python's F.conv2d)
    return kindle::_conv2d_padding(input, weight, bias, o.stride(), o.padding().mode(), o.dilation(), o.groups());
  return kindle::conv2d(input, weight, bias, o.stride(), o.padding(), o.dilation(), o.groups());
}

Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& o) {
  auto bias = o.bias().defined() ? std::optional<Tensor>(o.bias()) : std::nullopt;
  if (!o.padding().mode().empty())
    return kindle::_conv3d_padding(input, weight, bias, o.stride(), o.padding().mode(), o.dilation(), o.groups());
  return kindle::conv3d(input, weight, bias, o.stride(), o.padding(), o.dilation(), o.groups());
}

namespace {
std::optional<Tensor> opt(const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; }
}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& o) {
  return kindle::batch_norm(input, opt(running_mean), opt(running_var), opt(o.weight()), opt(o.bias()), o.training(),
                            o.momentum().value_or(0.1), o.eps());
}
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& o) {
  return kindle::layer_norm(input, o.normalized_shape(), opt(o.weight()), opt(o.bias()), o.eps());
}
Tensor normalize(const Tensor& input, const NormalizeFuncOptions& o) {
  return kindle::normalize(input, o.p(), o.dim(), o.eps());
}
Tensor pad(const Tensor& input, const PadFuncOptions& o) { return kindle::pad(input, o.pad(), o.mode(), o.value()); }
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& o) {
  return kindle::cross_entropy(input, target, opt(o.weight()), o.ignore_index(), o.reduction().name(),
                               o.label_smoothing());
}
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& o) {
  return kindle::nll_loss(input, target, opt(o.weight()), o.ignore_index(), o.reduction().name());
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& o) {
  return kindle::binary_cross_entropy(input, target, opt(o.weight()), o.reduction().name());
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& o) {
  return kindle::binary_cross_entropy_with_logits(input, target, opt(o.weight()), opt(o.pos_weight()),
                                                  o.reduction().name());
}
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o) {
  return kindle::mse_loss(input, target, o.reduction().name());
}
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o) {
  return kindle::l1_loss(input, target, o.reduction().name());
}
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o) {
  return kindle::smooth_l1_loss(input, target, o.reduction().name(), o.beta());
}

Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& o) {
  KINDLE_CHECK_VALUE(input.dim() >= 3, "interpolate: expected a 3-D, 4-D or 5-D input (N, C, *spatial), got ",
                     input.sizes());
  const int64_t d = input.dim() - 2;
  KINDLE_CHECK_VALUE(o.size().has_value() != o.scale_factor().has_value(),
                     "interpolate: give exactly one of size and scale_factor");
  std::vector<int64_t> out(static_cast<size_t>(d));
  std::vector<std::optional<double>> scales(3);
  if (o.size()) {
    const auto& sz = *o.size();
    KINDLE_CHECK_VALUE(sz.size() == 1 || int64_t(sz.size()) == d, "interpolate: size must have 1 or ", d,
                       " elements, got ", sz.size());
    for (int64_t i = 0; i < d; ++i) out[size_t(i)] = sz[sz.size() == 1 ? 0 : size_t(i)];
  } else {
    const auto& sf = *o.scale_factor();
    KINDLE_CHECK_VALUE(sf.size() == 1 || int64_t(sf.size()) == d, "interpolate: scale_factor must have 1 or ", d,
                       " elements, got ", sf.size());
    for (int64_t i = 0; i < d; ++i) {
      double f = sf[sf.size() == 1 ? 0 : size_t(i)];
      out[size_t(i)] = int64_t(std::floor(double(input.size(2 + i)) * f));
      scales[size_t(3 - d + i)] = f;
    }
  }
  return kindle::interpolate(input, out, o.mode().name(), o.align_corners(), scales[0], scales[1], scales[2],
                             o.antialias());
}

}  // namespace nn::functional
}  // namespace kindle
