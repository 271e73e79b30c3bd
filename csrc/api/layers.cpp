// Linear, convolution, pooling, normalisation, dropout, embedding and activation modules over
// the C++ functional ops (csrc/nn/). Initialisation draws in Python's order.
#include "kindle/nn/layers.h"

#include <cmath>

#include "kindle/autograd.h"
#include "kindle/nn/init.h"
#include "kindle/operators.h"
#include "util.h"

namespace kindle::nn {

using detail::new_weight;
using detail::opt;
using detail::py_arg;
using detail::py_bool;
using detail::py_float;
using detail::py_tuple;

// Bias bound of Linear and the convolutions: 1 / sqrt(fan_in), 0 for an empty weight.
static void init_fan_in_bias(const Tensor& weight, const Tensor& bias) {
  if (!bias.defined()) return;
  auto [fan_in, fan_out] = init::calculate_fan_in_and_fan_out(weight);
  double bound = fan_in > 0 ? 1 / std::sqrt(double(fan_in)) : 0;
  init::uniform_(bias, -bound, bound);
}

// ---- Linear, Flatten

LinearImpl::LinearImpl(const LinearOptions& o) : options(o) {
  weight = register_parameter("weight", new_weight({o.out_features(), o.in_features()}, o.dtype()));
  bias = register_parameter("bias", o.bias() ? new_weight({o.out_features()}, o.dtype()) : Tensor());
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  init_fan_in_bias(weight, bias);
}

Tensor LinearImpl::forward(const Tensor& input) { return linear(input, weight, opt(bias)); }

std::string LinearImpl::extra_repr() const {
  return "in_features=" + std::to_string(options.in_features()) +
         ", out_features=" + std::to_string(options.out_features()) + ", bias=" + py_bool(bias.defined());
}

std::string FlattenImpl::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

// ---- convolutions

template <size_t D>
ConvNdImpl<D>::ConvNdImpl(const ConvOptions<D>& o) : options(o) {
  KINDLE_CHECK_VALUE(o.groups() > 0, "groups must be a positive integer");
  KINDLE_CHECK_VALUE(o.in_channels() % o.groups() == 0, "in_channels must be divisible by groups");
  KINDLE_CHECK_VALUE(o.out_channels() % o.groups() == 0, "out_channels must be divisible by groups");
  const std::string& pmode = o.padding().mode();
  KINDLE_CHECK_VALUE(pmode.empty() || pmode == "same" || pmode == "valid", "Invalid padding string '", pmode,
                     "', should be one of {'valid', 'same'}");
  KINDLE_CHECK_VALUE(pmode != "same" || o.stride().all_equal(1),
                     "padding='same' is not supported for strided convolutions");
  const std::string& m = o.padding_mode();
  KINDLE_CHECK_VALUE(m == "zeros" || m == "reflect" || m == "replicate" || m == "circular",
                     "padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got padding_mode='",
                     m, "'");
  std::vector<int64_t> shape = {o.out_channels(), o.in_channels() / o.groups()};
  for (size_t i = 0; i < D; ++i) shape.push_back(o.kernel_size()[i]);
  weight = register_parameter("weight", new_weight(shape, o.dtype()));
  bias = register_parameter("bias", o.bias() ? new_weight({o.out_channels()}, o.dtype()) : Tensor());
  reset_parameters();
}

template <size_t D>
void ConvNdImpl<D>::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  init_fan_in_bias(weight, bias);
}

template <size_t D>
Tensor ConvNdImpl<D>::forward(const Tensor& input) {
  const auto& o = options;
  const std::string& pmode = o.padding().mode();
  auto conv = [&](const Tensor& x, IntArrayRef padding) {
    if constexpr (D == 1) return conv1d(x, weight, opt(bias), o.stride(), padding, o.dilation(), o.groups());
    else if constexpr (D == 2) return conv2d(x, weight, opt(bias), o.stride(), padding, o.dilation(), o.groups());
    else return conv3d(x, weight, opt(bias), o.stride(), padding, o.dilation(), o.groups());
  };
  if (o.padding_mode() == "zeros") {
    if (pmode.empty()) return conv(input, o.padding());
    // 'same' / 'valid': the op resolves it (as F.conv2d's string padding does)
    if constexpr (D == 1) return _conv1d_padding(input, weight, opt(bias), o.stride(), pmode, o.dilation(), o.groups());
    else if constexpr (D == 2) return _conv2d_padding(input, weight, opt(bias), o.stride(), pmode, o.dilation(), o.groups());
    else return _conv3d_padding(input, weight, opt(bias), o.stride(), pmode, o.dilation(), o.groups());
  }
  // Other padding modes pad explicitly, in F.pad's order (last spatial dimension first, left then
  // right), with 'same''s odd element at the end, then convolve unpadded.
  std::vector<int64_t> pad_lr(2 * D, 0);
  for (size_t i = 0; i < D; ++i) {
    int64_t total = pmode == "same" ? o.dilation()[i] * (o.kernel_size()[i] - 1)
                    : pmode == "valid" ? 0 : 2 * o.padding()[i];
    pad_lr[2 * (D - 1 - i)] = total / 2;
    pad_lr[2 * (D - 1 - i) + 1] = total - total / 2;
  }
  return conv(pad(input, pad_lr, o.padding_mode()), IntArrayRef(std::vector<int64_t>(D, 0)));
}

template <size_t D>
std::string ConvNdImpl<D>::extra_repr() const {
  const auto& o = options;
  std::string s = std::to_string(o.in_channels()) + ", " + std::to_string(o.out_channels()) +
                  ", kernel_size=" + o.kernel_size().str() + ", stride=" + o.stride().str();
  if (!o.padding().mode().empty()) s += ", padding=" + o.padding().mode();
  else if (!o.padding().all_equal(0)) s += ", padding=" + o.padding().str();
  if (!o.dilation().all_equal(1)) s += ", dilation=" + o.dilation().str();
  if (o.groups() != 1) s += ", groups=" + std::to_string(o.groups());
  if (!bias.defined()) s += ", bias=False";
  if (o.padding_mode() != "zeros") s += ", padding_mode=" + o.padding_mode();
  return s;
}

template class ConvNdImpl<1>;
template class ConvNdImpl<2>;
template class ConvNdImpl<3>;

template <size_t D>
ConvTransposeNdImpl<D>::ConvTransposeNdImpl(const ConvTransposeOptions<D>& o) : options(o) {
  KINDLE_CHECK_VALUE(o.groups() > 0, "groups must be a positive integer");
  KINDLE_CHECK_VALUE(o.in_channels() % o.groups() == 0, "in_channels must be divisible by groups");
  KINDLE_CHECK_VALUE(o.out_channels() % o.groups() == 0, "out_channels must be divisible by groups");
  KINDLE_CHECK_VALUE(o.padding_mode() == "zeros", "Only \"zeros\" padding mode is supported for ConvTranspose",
                     D, "d, got '", o.padding_mode(), "'");
  std::vector<int64_t> shape = {o.in_channels(), o.out_channels() / o.groups()};
  for (size_t i = 0; i < D; ++i) shape.push_back(o.kernel_size()[i]);
  weight = register_parameter("weight", new_weight(shape, o.dtype()));
  bias = register_parameter("bias", o.bias() ? new_weight({o.out_channels()}, o.dtype()) : Tensor());
  reset_parameters();
}

template <size_t D>
void ConvTransposeNdImpl<D>::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  init_fan_in_bias(weight, bias);
}

template <size_t D>
Tensor ConvTransposeNdImpl<D>::forward(const Tensor& input, const std::optional<std::vector<int64_t>>& output_size) {
  const auto& o = options;
  std::vector<int64_t> output_padding(o.output_padding().ref().begin(), o.output_padding().ref().end());
  if (output_size) {
    // The sizes reachable with output_padding in [0, max(stride, dilation)), as Python.
    std::vector<int64_t> want = *output_size;
    KINDLE_CHECK_VALUE(want.size() == D || want.size() == D + 2 || want.size() == D + 1, name(),
                       ": output_size must have ", D, " or ", D + 2, " elements (got ", want.size(), ")");
    want.erase(want.begin(), want.end() - long(D));
    for (size_t i = 0; i < D; ++i) {
      int64_t in = input.size(input.dim() - int64_t(D) + int64_t(i));
      int64_t min_size = (in - 1) * o.stride()[i] - 2 * o.padding()[i] + o.dilation()[i] * (o.kernel_size()[i] - 1) + 1;
      int64_t extra = want[i] - min_size;
      KINDLE_CHECK_VALUE(extra >= 0 && extra < std::max(o.stride()[i], o.dilation()[i]), name(),
                         ": requested an output size of ", want[i], ", but valid sizes range from ", min_size, " to ",
                         min_size + std::max(o.stride()[i], o.dilation()[i]) - 1);
      output_padding[i] = extra;
    }
  }
  std::optional<Tensor> b = bias.defined() ? std::optional<Tensor>(bias) : std::nullopt;
  if constexpr (D == 1) {
    return conv_transpose1d(input, weight, b, o.stride(), o.padding(), output_padding, o.groups(), o.dilation());
  } else if constexpr (D == 2) {
    return conv_transpose2d(input, weight, b, o.stride(), o.padding(), output_padding, o.groups(), o.dilation());
  } else {
    return conv_transpose3d(input, weight, b, o.stride(), o.padding(), output_padding, o.groups(), o.dilation());
  }
}

template <size_t D>
std::string ConvTransposeNdImpl<D>::extra_repr() const {
  const auto& o = options;
  std::string s = std::to_string(o.in_channels()) + ", " + std::to_string(o.out_channels()) +
                  ", kernel_size=" + o.kernel_size().str() + ", stride=" + o.stride().str();
  if (!o.padding().all_equal(0)) s += ", padding=" + o.padding().str();
  if (!o.output_padding().all_equal(0)) s += ", output_padding=" + o.output_padding().str();
  if (!o.dilation().all_equal(1)) s += ", dilation=" + o.dilation().str();
  if (o.groups() != 1) s += ", groups=" + std::to_string(o.groups());
  if (!bias.defined()) s += ", bias=False";
  return s;
}

template class ConvTransposeNdImpl<1>;
template class ConvTransposeNdImpl<2>;
template class ConvTransposeNdImpl<3>;

// ---- pooling (1-D runs as 2-D over a unit height, as the Python front end does)

template <size_t D>
Tensor MaxPoolNdImpl<D>::forward(const Tensor& input) {
  const auto& o = options;
  if constexpr (D == 1) {
    auto out = max_pool2d_with_indices(input.unsqueeze(-2), {1, o.kernel_size()[0]}, {1, o.stride()[0]},
                                       {0, o.padding()[0]}, {1, o.dilation()[0]}, o.ceil_mode());
    return std::get<0>(out).squeeze(std::vector<int64_t>{-2});
  } else if constexpr (D == 2) {
    return std::get<0>(max_pool2d_with_indices(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                                               o.ceil_mode()));
  } else {
    return std::get<0>(max_pool3d_with_indices(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                                               o.ceil_mode()));
  }
}

template <size_t D>
std::string MaxPoolNdImpl<D>::extra_repr() const {
  const auto& o = options;
  return "kernel_size=" + py_arg(o.kernel_size()) + ", stride=" + py_arg(o.stride()) +
         ", padding=" + py_arg(o.padding()) + ", dilation=" + py_arg(o.dilation()) +
         ", ceil_mode=" + py_bool(o.ceil_mode());
}

template <size_t D>
Tensor AvgPoolNdImpl<D>::forward(const Tensor& input) {
  const auto& o = options;
  if constexpr (D == 1) {
    return avg_pool2d(input.unsqueeze(-2), {1, o.kernel_size()[0]}, {1, o.stride()[0]}, {0, o.padding()[0]},
                      o.ceil_mode(), o.count_include_pad())
        .squeeze(std::vector<int64_t>{-2});
  } else if constexpr (D == 2) {
    KINDLE_CHECK_INDEX(input.dim() >= 3, "avg_pool2d: expected a 3-D or 4-D input, got shape ", input.sizes());
    return avg_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                      o.divisor_override());
  } else {
    return avg_pool3d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                      o.divisor_override());
  }
}

template <size_t D>
std::string AvgPoolNdImpl<D>::extra_repr() const {
  const auto& o = options;
  return "kernel_size=" + py_arg(o.kernel_size()) + ", stride=" + py_arg(o.stride()) +
         ", padding=" + py_arg(o.padding());
}

template class MaxPoolNdImpl<1>;
template class MaxPoolNdImpl<2>;
template class MaxPoolNdImpl<3>;
template class AvgPoolNdImpl<1>;
template class AvgPoolNdImpl<2>;
template class AvgPoolNdImpl<3>;

Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& input) { return adaptive_avg_pool2d(input, output_size); }
Tensor AdaptiveAvgPool3dImpl::forward(const Tensor& input) { return adaptive_avg_pool3d(input, output_size); }

// ---- normalisation

template <size_t D>
BatchNormNdImpl<D>::BatchNormNdImpl(const BatchNormOptions& o) : options(o) {
  int64_t c = o.num_features();
  weight = register_parameter("weight", o.affine() ? new_weight({c}, o.dtype()) : Tensor());
  bias = register_parameter("bias", o.affine() ? new_weight({c}, o.dtype()) : Tensor());
  if (o.track_running_stats()) {
    DType dt = o.dtype().value_or(default_dtype());
    running_mean = register_buffer("running_mean", zeros({c}, dt));
    running_var = register_buffer("running_var", ones({c}, dt));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  } else {
    register_buffer("running_mean", Tensor());
    register_buffer("running_var", Tensor());
    register_buffer("num_batches_tracked", Tensor());
  }
  reset_parameters();
}

template <size_t D>
void BatchNormNdImpl<D>::reset_running_stats() {
  if (!options.track_running_stats()) return;
  autograd::NoGradGuard g;
  running_mean.zero_();
  running_var.fill_(Scalar(1));
  num_batches_tracked.zero_();
}

template <size_t D>
void BatchNormNdImpl<D>::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

template <size_t D>
Tensor BatchNormNdImpl<D>::forward(const Tensor& input) {
  if constexpr (D == 1)
    KINDLE_CHECK_VALUE(input.dim() == 2 || input.dim() == 3, "expected 2D or 3D input (got ", input.dim(), "D input)");
  else
    KINDLE_CHECK_VALUE(input.dim() == int64_t(D) + 2, "expected ", D + 2, "D input (got ", input.dim(), "D input)");
  double factor = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats()) {
    autograd::NoGradGuard g;
    num_batches_tracked.add_(scalar_to_tensor(1));
    if (!options.momentum()) factor = 1.0 / num_batches_tracked.item<double>();  // cumulative moving average
  }
  bool bn_training = is_training() || !running_mean.defined();
  bool use_stats = !is_training() || options.track_running_stats();
  return batch_norm(input, use_stats ? opt(running_mean) : std::nullopt, use_stats ? opt(running_var) : std::nullopt,
                    opt(weight), opt(bias), bn_training, factor, options.eps());
}

template <size_t D>
std::string BatchNormNdImpl<D>::extra_repr() const {
  const auto& o = options;
  return std::to_string(o.num_features()) + ", eps=" + py_float(o.eps()) +
         ", momentum=" + (o.momentum() ? py_float(*o.momentum()) : "None") + ", affine=" + py_bool(o.affine()) +
         ", bias=" + py_bool(bias.defined()) + ", track_running_stats=" + py_bool(o.track_running_stats());
}

template class BatchNormNdImpl<1>;
template class BatchNormNdImpl<2>;
template class BatchNormNdImpl<3>;

LayerNormImpl::LayerNormImpl(const LayerNormOptions& o) : options(o) {
  bool affine = o.elementwise_affine();
  weight = register_parameter("weight", affine ? new_weight(o.normalized_shape(), o.dtype()) : Tensor());
  bias = register_parameter("bias", affine && o.bias() ? new_weight(o.normalized_shape(), o.dtype()) : Tensor());
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& input) {
  return layer_norm(input, options.normalized_shape(), opt(weight), opt(bias), options.eps());
}

std::string LayerNormImpl::extra_repr() const {
  return py_tuple(options.normalized_shape()) + ", eps=" + py_float(options.eps()) +
         ", elementwise_affine=" + py_bool(options.elementwise_affine()) + ", bias=" + py_bool(bias.defined());
}

GroupNormImpl::GroupNormImpl(const GroupNormOptions& o) : options(o) {
  KINDLE_CHECK_VALUE(o.num_groups() > 0 && o.num_channels() % o.num_groups() == 0, "num_channels (", o.num_channels(),
                     ") must be divisible by num_groups (", o.num_groups(), ")");
  weight = register_parameter("weight", o.affine() ? new_weight({o.num_channels()}, o.dtype()) : Tensor());
  bias = register_parameter("bias", o.affine() ? new_weight({o.num_channels()}, o.dtype()) : Tensor());
  if (o.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor GroupNormImpl::forward(const Tensor& input) {
  return group_norm(input, options.num_groups(), opt(weight), opt(bias), options.eps());
}

std::string GroupNormImpl::extra_repr() const {
  return std::to_string(options.num_groups()) + ", " + std::to_string(options.num_channels()) +
         ", eps=" + py_float(options.eps()) + ", affine=" + py_bool(options.affine()) +
         ", bias=" + py_bool(bias.defined());
}

// ---- dropout

static void check_p(double p) {
  KINDLE_CHECK_VALUE(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", py_float(p));
}

DropoutImpl::DropoutImpl(double p) : p(p) { check_p(p); }
Tensor DropoutImpl::forward(const Tensor& input) { return dropout(input, p, is_training()); }
std::string DropoutImpl::extra_repr() const { return "p=" + py_float(p) + ", inplace=False"; }

Dropout2dImpl::Dropout2dImpl(double p) : p(p) { check_p(p); }
Tensor Dropout2dImpl::forward(const Tensor& input) { return dropout2d(input, p, is_training()); }
std::string Dropout2dImpl::extra_repr() const { return "p=" + py_float(p) + ", inplace=False"; }
Dropout3dImpl::Dropout3dImpl(double p) : p(p) { check_p(p); }
Tensor Dropout3dImpl::forward(const Tensor& input) { return dropout3d(input, p, is_training()); }
std::string Dropout3dImpl::extra_repr() const { return "p=" + py_float(p) + ", inplace=False"; }

// ---- embedding

namespace detail {
std::optional<int64_t> check_padding_idx(std::optional<int64_t> idx, int64_t n) {
  if (!idx) return idx;
  KINDLE_CHECK_VALUE(!(*idx > 0 && *idx >= n) && *idx >= -n, "Padding_idx must be within num_embeddings");
  return *idx < 0 ? *idx + n : *idx;
}

void init_embedding_(const Tensor& weight, std::optional<int64_t> padding_idx) {
  init::normal_(weight);
  if (padding_idx) {
    autograd::NoGradGuard g;
    weight.select(0, *padding_idx).fill_(Scalar(0));
  }
}
}  // namespace detail

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& o) : options(o) {
  options.padding_idx(detail::check_padding_idx(o.padding_idx(), o.num_embeddings()));
  weight = register_parameter("weight", new_weight({o.num_embeddings(), o.embedding_dim()}, o.dtype()));
  reset_parameters();
}

EmbeddingImpl::EmbeddingImpl(Pretrained, const EmbeddingOptions& o, const Tensor& w, bool freeze) : options(o) {
  options.padding_idx(detail::check_padding_idx(o.padding_idx(), o.num_embeddings()));
  weight = register_parameter("weight", w.detach(), !freeze);
}

Embedding Embedding::from_pretrained(const Tensor& embeddings, bool freeze, std::optional<int64_t> padding_idx) {
  KINDLE_CHECK_VALUE(embeddings.dim() == 2, "Embeddings parameter is expected to be 2-dimensional");
  return Embedding(EmbeddingImpl::Pretrained{}, EmbeddingOptions(embeddings.size(0), embeddings.size(1)).padding_idx(padding_idx),
                   embeddings, freeze);
}

void EmbeddingImpl::reset_parameters() { detail::init_embedding_(weight, options.padding_idx()); }

Tensor EmbeddingImpl::forward(const Tensor& input) {
  return embedding(input, weight, options.padding_idx(), options.max_norm(), options.norm_type(),
                   options.scale_grad_by_freq());
}

std::string EmbeddingImpl::extra_repr() const {
  std::string s = std::to_string(options.num_embeddings()) + ", " + std::to_string(options.embedding_dim());
  if (options.padding_idx()) s += ", padding_idx=" + std::to_string(*options.padding_idx());
  if (options.max_norm()) s += ", max_norm=" + py_float(*options.max_norm());
  if (options.norm_type() != 2) s += ", norm_type=" + py_float(options.norm_type());
  if (options.scale_grad_by_freq()) s += ", scale_grad_by_freq=True";
  return s;
}

// ---- activations

Tensor ReLUImpl::forward(const Tensor& x) { return inplace ? relu_(x) : relu(x); }
Tensor ReLU6Impl::forward(const Tensor& x) { return inplace ? hardtanh_(x, 0, 6) : relu6(x); }
Tensor SELUImpl::forward(const Tensor& x) { return inplace ? x.copy_(selu(x)) : selu(x); }
Tensor SiLUImpl::forward(const Tensor& x) { return silu(x); }
Tensor MishImpl::forward(const Tensor& x) { return mish(x); }
Tensor SigmoidImpl::forward(const Tensor& x) { return sigmoid(x); }
Tensor TanhImpl::forward(const Tensor& x) { return tanh(x); }
Tensor SoftsignImpl::forward(const Tensor& x) { return softsign(x); }
Tensor TanhshrinkImpl::forward(const Tensor& x) { return tanhshrink(x); }
Tensor HardswishImpl::forward(const Tensor& x) { return hardswish(x); }
Tensor HardsigmoidImpl::forward(const Tensor& x) { return hardsigmoid(x); }
Tensor LogSigmoidImpl::forward(const Tensor& x) { return logsigmoid(x); }

Tensor LeakyReLUImpl::forward(const Tensor& x) {
  return inplace ? x.copy_(leaky_relu(x, negative_slope)) : leaky_relu(x, negative_slope);
}
std::string LeakyReLUImpl::extra_repr() const { return "negative_slope=" + py_float(negative_slope); }
Tensor ELUImpl::forward(const Tensor& x) { return elu(x, alpha); }
std::string ELUImpl::extra_repr() const { return "alpha=" + py_float(alpha); }
Tensor CELUImpl::forward(const Tensor& x) { return celu(x, alpha); }
std::string CELUImpl::extra_repr() const { return "alpha=" + py_float(alpha); }
Tensor GELUImpl::forward(const Tensor& x) { return gelu(x, approximate); }
std::string GELUImpl::extra_repr() const { return "approximate='" + approximate + "'"; }
Tensor SoftplusImpl::forward(const Tensor& x) { return softplus(x, beta, threshold); }
std::string SoftplusImpl::extra_repr() const { return "beta=" + py_float(beta) + ", threshold=" + py_float(threshold); }

HardtanhImpl::HardtanhImpl(double min_val, double max_val) : min_val(min_val), max_val(max_val) {
  KINDLE_CHECK_VALUE(max_val > min_val, "max_val (", py_float(max_val), ") must be greater than min_val (",
                     py_float(min_val), ")");
}
Tensor HardtanhImpl::forward(const Tensor& x) { return hardtanh(x, min_val, max_val); }
std::string HardtanhImpl::extra_repr() const { return "min_val=" + py_float(min_val) + ", max_val=" + py_float(max_val); }

PReLUImpl::PReLUImpl(int64_t num_parameters, double init_value) : num_parameters(num_parameters) {
  Tensor w = empty_tensor({num_parameters}, default_dtype());
  w.fill_(Scalar(init_value));
  weight = register_parameter("weight", w);
}
Tensor PReLUImpl::forward(const Tensor& x) { return prelu(x, weight); }

// ---- more layers over single core ops

std::string ThresholdImpl::extra_repr() const {
  return "threshold=" + py_float(threshold) + ", value=" + py_float(value);
}

std::string UnflattenImpl::extra_repr() const { return "dim=" + std::to_string(dim) + ", unflattened_size=" + py_tuple(sizes); }

BilinearImpl::BilinearImpl(const BilinearOptions& o) : options(o) {
  weight = register_parameter("weight", new_weight({o.out_features(), o.in1_features(), o.in2_features()}, o.dtype()));
  bias = register_parameter("bias", o.bias() ? new_weight({o.out_features()}, o.dtype()) : Tensor());
  reset_parameters();
}

void BilinearImpl::reset_parameters() {
  double bound = 1 / std::sqrt(double(weight.size(1)));
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor BilinearImpl::forward(const Tensor& x1, const Tensor& x2) { return bilinear(x1, x2, weight, opt(bias)); }

std::string BilinearImpl::extra_repr() const {
  return "in1_features=" + std::to_string(options.in1_features()) + ", in2_features=" +
         std::to_string(options.in2_features()) + ", out_features=" + std::to_string(options.out_features()) +
         ", bias=" + py_bool(bias.defined());
}

Dropout1dImpl::Dropout1dImpl(double p) : p(p) { check_p(p); }
std::string Dropout1dImpl::extra_repr() const { return "p=" + py_float(p) + ", inplace=False"; }
AlphaDropoutImpl::AlphaDropoutImpl(double p) : p(p) { check_p(p); }
std::string AlphaDropoutImpl::extra_repr() const { return "p=" + py_float(p) + ", inplace=False"; }
FeatureAlphaDropoutImpl::FeatureAlphaDropoutImpl(double p) : p(p) { check_p(p); }
std::string FeatureAlphaDropoutImpl::extra_repr() const { return "p=" + py_float(p) + ", inplace=False"; }

template <size_t D>
InstanceNormImpl<D>::InstanceNormImpl(const InstanceNormOptions& o) : options(o) {
  const int64_t C = o.num_features();
  weight = register_parameter("weight", o.affine() ? ones({C}, o.dtype()) : Tensor());
  bias = register_parameter("bias", o.affine() ? zeros({C}, o.dtype()) : Tensor());
  if (o.track_running_stats()) {
    running_mean = register_buffer("running_mean", zeros({C}, o.dtype()));
    running_var = register_buffer("running_var", ones({C}, o.dtype()));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
}

template <size_t D>
Tensor InstanceNormImpl<D>::forward(const Tensor& input) {
  const int64_t unbatched = int64_t(D) + 1;
  KINDLE_CHECK_VALUE(input.dim() == unbatched || input.dim() == unbatched + 1, "expected ", unbatched, "D or ",
                     unbatched + 1, "D input (got ", input.dim(), "D input)");
  const int64_t feature_dim = input.dim() - unbatched;
  KINDLE_CHECK_VALUE(!options.affine() || input.size(feature_dim) == options.num_features(),
                     "expected input's size at dim=", feature_dim, " to match num_features (", options.num_features(),
                     "), but got: ", input.size(feature_dim), ".");
  Tensor x = input.dim() == unbatched ? input.unsqueeze(0) : input;
  bool use_input_stats = is_training() || !options.track_running_stats();
  Tensor y = instance_norm(x, opt(running_mean), opt(running_var), opt(weight), opt(bias), use_input_stats,
                           options.momentum(), options.eps());
  return input.dim() == unbatched ? y.squeeze(IntArrayRef{0}) : y;
}

template <size_t D>
std::string InstanceNormImpl<D>::extra_repr() const {
  return std::to_string(options.num_features()) + ", eps=" + py_float(options.eps()) + ", momentum=" +
         py_float(options.momentum()) + ", affine=" + py_bool(options.affine()) +
         ", track_running_stats=" + py_bool(options.track_running_stats());
}

template class InstanceNormImpl<1>;
template class InstanceNormImpl<2>;
template class InstanceNormImpl<3>;

RMSNormImpl::RMSNormImpl(const RMSNormOptions& o) : options(o) {
  weight = register_parameter("weight", o.elementwise_affine() ? ones(o.normalized_shape(), o.dtype()) : Tensor());
}

Tensor RMSNormImpl::forward(const Tensor& input) {
  return rms_norm(input, options.normalized_shape(), opt(weight), options.eps());
}

std::string RMSNormImpl::extra_repr() const {
  return py_tuple(options.normalized_shape()) + ", eps=" + (options.eps() ? py_float(*options.eps()) : "None") +
         ", elementwise_affine=" + py_bool(options.elementwise_affine());
}

}  // namespace kindle::nn
