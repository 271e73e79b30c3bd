// Convolution and pooling: im2col/col2im (csrc/cpu/im2col.cpp) plus GEMMs and reductions. The
// two window ops have derivatives (each other); the rest are composites.
#include <cmath>

#include "kindle/autocast.h"
#include "kindle/autograd.h"
#include "nn/common.h"
#include "ops/kernels.h"
#include "ops/rnn_kernels.h"

namespace kindle {

namespace {

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode = false) {
  // Floor division, also of a negative span: with ceil_mode a kernel longer than the padded
  // input still gives one window, as in PyTorch.
  int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  // With ceil_mode, the last window must start inside the input or the left padding.
  if (ceil_mode && (o - 1) * s >= in + p) --o;
  return std::max<int64_t>(o, 0);
}

WindowGeom geom(IntArrayRef image, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s, const char* op,
                bool ceil_mode = false) {
  KINDLE_CHECK(image.size() == 4, op, ": expected a 4-D (N, C, H, W) input, got shape ", image);
  KINDLE_CHECK(k.size() == 2 && d.size() == 2 && p.size() == 2 && s.size() == 2, op,
               ": kernel_size, dilation, padding and stride must have 2 elements each");
  for (int i = 0; i < 2; ++i) {
    KINDLE_CHECK(k[i] > 0 && s[i] > 0 && d[i] > 0, op, ": kernel size, stride and dilation must be greater than "
                 "zero, got kernel_size=", k, ", stride=", s, ", dilation=", d);
    KINDLE_CHECK(p[i] >= 0, op, ": padding must be non-negative, got ", p);
  }
  WindowGeom g{image[0], image[1], image[2], image[3], k[0], k[1], s[0], s[1], p[0], p[1],
               d[0], d[1], 0, 0};
  g.oh = out_size(g.H, g.kh, g.sh, g.ph, g.dh, ceil_mode);
  g.ow = out_size(g.W, g.kw, g.sw, g.pw, g.dw, ceil_mode);
  KINDLE_CHECK(g.oh > 0 && g.ow > 0, op, ": Calculated padded input size per channel: (", g.H + 2 * g.ph, " x ",
               g.W + 2 * g.pw, "). Kernel size: (", g.dh * (g.kh - 1) + 1, " x ", g.dw * (g.kw - 1) + 1,
               "). Kernel size can't be greater than actual input size");
  return g;
}
WindowGeom geom(const Tensor& image, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s, const char* op,
                bool ceil_mode = false) {
  return geom(image.sizes(), k, d, p, s, op, ceil_mode);
}

}  // namespace

Tensor native_im2col(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                     IntArrayRef stride) {
  if (self.is_complex())  // columns of the parts
    return complex(native_im2col(real(self), kernel_size, dilation, padding, stride),
                   native_im2col(imag(self), kernel_size, dilation, padding, stride));
  WindowGeom g = geom(self, kernel_size, dilation, padding, stride, "im2col");
  KINDLE_CHECK(self.is_floating_point(), "im2col: expected a floating point input, got ", self.dtype());
  Tensor x = self.contiguous();
  Tensor cols = empty_tensor({g.N, g.oh * g.ow, g.C * g.kh * g.kw}, self.dtype(), self.device());
  if (cols.numel()) im2col_stub[self.device()](x, cols, g);
  return cols;
}

Tensor native_col2im(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
                     IntArrayRef padding, IntArrayRef stride) {
  if (self.is_complex())  // images of the parts
    return complex(native_col2im(real(self), output_size, kernel_size, dilation, padding, stride),
                   native_col2im(imag(self), output_size, kernel_size, dilation, padding, stride));
  KINDLE_CHECK(self.dim() == 3 && output_size.size() == 2, "col2im: expected a 3-D (N, L, C*kh*kw) input and a "
               "2-element output_size, got shapes ", self.sizes(), " and ", output_size);
  KINDLE_CHECK(kernel_size.size() == 2, "col2im: kernel_size must have 2 elements");
  int64_t k = kernel_size[0] * kernel_size[1];
  KINDLE_CHECK(k > 0 && self.size(2) % k == 0, "col2im: Expected size of input's last dimension to be divisible by "
               "the product of kernel_size, but got input.size(2)=", self.size(2), " and kernel_size=", kernel_size);
  Tensor image = empty_tensor({self.size(0), self.size(2) / k, output_size[0], output_size[1]}, self.dtype(),
                              self.device());
  WindowGeom g = geom(image, kernel_size, dilation, padding, stride, "col2im");
  KINDLE_CHECK(g.oh * g.ow == self.size(1), "col2im: Given output_size=", output_size, ", kernel_size=", kernel_size,
               ", dilation=", dilation, ", padding=", padding, ", stride=", stride, ", expected size of input's "
               "dimension 2 to match the calculated number of sliding blocks ", g.oh, " * ", g.ow, " = ",
               g.oh * g.ow, ", but got input.size(2)=", self.size(1), ".");
  Tensor c = self.contiguous();
  if (image.numel()) col2im_stub[self.device()](c, image, g);
  return image;
}

namespace nn_detail {

void check_conv(const Tensor& input, const Tensor& weight, int64_t groups, int64_t spatial, const char* op) {
  KINDLE_CHECK(input.dim() == spatial + 2, op, ": Expected ", spatial + 1, "D (unbatched) or ", spatial + 2,
               "D (batched) input, but got input of size: ", input.sizes());
  KINDLE_CHECK(weight.dim() == spatial + 2, op, ": expected a ", spatial + 2, "-D weight, got shape ", weight.sizes());
  KINDLE_CHECK(groups > 0, op, ": non-positive groups is not supported");
  KINDLE_CHECK(input.size(1) == weight.size(1) * groups, op, ": Given groups=", groups, ", weight of size ",
               weight.sizes(), ", expected input", input.sizes(), " to have ", weight.size(1) * groups,
               " channels, but got ", input.size(1), " channels instead");
  KINDLE_CHECK(weight.size(0) % groups == 0, op, ": Given groups=", groups, ", expected weight to be divisible by ",
               groups, " at dimension 0, but got weight of size ", weight.sizes(), " instead");
}

DimVector expand_param(IntArrayRef v, size_t n, const char* name, const char* op) {
  KINDLE_CHECK(v.size() == 1 || v.size() == n, op, ": expected ", name, " to be a single integer value or a list of ",
               n, " values to match the convolution dimensions, but got ", name, "=", v);
  DimVector out;
  for (size_t i = 0; i < n; ++i) out.push_back(v[v.size() == 1 ? 0 : i]);
  return out;
}

}  // namespace nn_detail
using nn_detail::check_conv;

namespace {
// A complex convolution from four real ones, (a + ib) * (c + id) = (ac - bd) + i(ad + bc): the
// real kernels serve complex tensors, and autograd flows through real/imag/complex.
template <typename Conv>
Tensor complex_conv(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, const char* op,
                    Conv conv) {
  KINDLE_CHECK(input.dtype() == weight.dtype() && (!bias || bias->dtype() == input.dtype()), op,
               ": expected input, weight and bias of one dtype, got ", input.dtype(), ", ", weight.dtype(),
               bias ? std::string(" and ") + dtype_name(bias->dtype()) : std::string());
  Tensor a = real(input), b = imag(input), c = real(weight), d = imag(weight);
  Tensor out = complex(conv(a, c) - conv(b, d), conv(a, d) + conv(b, c));
  if (bias) {
    DimVector shape(size_t(out.dim()), 1);
    shape[1] = -1;
    out = out + bias->reshape(shape);
  }
  return out;
}
}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  if (input.dim() == 3) return conv2d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(IntArrayRef{0});
  check_conv(input, weight, groups, 2, "conv2d");
  if (input.is_complex() || weight.is_complex())
    return complex_conv(input, weight, bias, "conv2d", [&](const Tensor& x, const Tensor& w) {
      return conv2d(x, w, std::nullopt, stride, padding, dilation, groups);
    });
  const int64_t O = weight.size(0);
  if (bias) KINDLE_CHECK(bias->dim() == 1 && bias->size(0) == O, "conv2d: Given weight of size ", weight.sizes(),
                         ", expected bias to be 1-dimensional with ", O, " elements, but got bias of size ",
                         bias->sizes(), " instead");
  if (input.dtype() == kFloat16 || input.dtype() == kBFloat16) {  // accumulate in float32, round once
    std::optional<Tensor> b32;
    if (bias) b32 = bias->to(kFloat32);
    return conv2d_forward(input.to(kFloat32), weight.to(kFloat32), b32, stride, padding, dilation, groups)
        .to(input.dtype());
  }
  return conv2d_forward(input, weight, bias, stride, padding, dilation, groups);
}

// The three native convolution ops: float32/float64 tensors; the kernels take contiguous ones.
namespace {

ConvGeom conv_geom(IntArrayRef input, IntArrayRef weight, IntArrayRef stride, IntArrayRef padding,
                   IntArrayRef dilation, int64_t groups, const char* op) {
  KINDLE_CHECK(weight.size() == 4, op, ": expected a 4-D weight, got shape ", weight);
  KINDLE_CHECK(input.size() == 4 && groups > 0 && input[1] == weight[1] * groups && weight[0] % groups == 0, op,
               ": input ", input, " and weight ", weight, " do not match for groups=", groups);
  return ConvGeom{geom(input, {weight[2], weight[3]}, dilation, padding, stride, op), weight[0], groups};
}

void check_float(const Tensor& a, const Tensor& b, const char* op) {
  KINDLE_CHECK(a.dtype() == b.dtype(), op, ": expected input and weight of one dtype, got ", a.dtype(), " and ",
               b.dtype());
  KINDLE_CHECK(a.dtype() == kFloat32 || a.dtype() == kFloat64, op, ": expected float32 or float64 tensors, got ",
               a.dtype());
}

}  // namespace

namespace {
Tensor run_conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, const ConvGeom& g) {
  Tensor out = empty_tensor({g.w.N, g.O, g.w.oh, g.w.ow}, input.dtype(), input.device());
  Tensor x = input.contiguous(), w = weight.contiguous(), b;
  if (bias) b = bias->to(input.dtype()).contiguous();
  if (out.numel()) conv2d_stub[input.device()](x, w, bias ? &b : nullptr, out, g);
  return out;
}
}  // namespace

Tensor native_conv2d_forward(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                             IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  check_float(input, weight, "conv2d");
  return run_conv2d(input, weight, bias,
                    conv_geom(input.sizes(), weight.sizes(), stride, padding, dilation, groups, "conv2d"));
}

// conv2d followed by clamp(min, max), for inference (kindle.compile's fused convolution + batch
// norm + ReLU/ReLU6/Hardtanh): the convolution clamps each block of its output while the block is
// still in cache, where the eager pair would make a second pass over the whole activation.
Tensor _conv2d_clamp(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                     IntArrayRef padding, IntArrayRef dilation, int64_t groups, double min, double max,
                     const std::optional<Tensor>& out, int64_t out_channel) {
  KINDLE_CHECK(!(autograd::GradMode::is_enabled() &&
                 (input.requires_grad() || weight.requires_grad() || (bias && bias->requires_grad()) ||
                  (out && out->requires_grad()))),
               "_conv2d_clamp: an inference-only op (no gradient formula); call it with gradients off, or use "
               "conv2d followed by clamp");
  KINDLE_CHECK(!(min > max), "_conv2d_clamp: expected min <= max, got min=", min, " and max=", max);
  const bool native = input.dim() == 4 && input.dtype() == weight.dtype() &&
                      (input.dtype() == kFloat32 || input.dtype() == kFloat64) && input.device().is_cpu();
  if (out) {
    const int64_t O = weight.dim() > 0 ? weight.size(0) : 0;
    KINDLE_CHECK(out->dim() == 4 && out->is_contiguous() && out->dtype() == input.dtype() &&
                     out->device() == input.device() && out_channel >= 0 && out_channel + O <= out->size(1),
                 "_conv2d_clamp: expected `out` a contiguous 4-D ", input.dtype(), " tensor with channels [",
                 out_channel, ", ", out_channel + O, "), got ", out->sizes(), " ", out->dtype());
    if (!native) {
      Tensor y = conv2d(input, weight, bias, stride, padding, dilation, groups).clamp_(min, max);
      KINDLE_CHECK(y.dim() == 4 && y.size(0) == out->size(0) && y.size(2) == out->size(2) && y.size(3) == out->size(3),
                   "_conv2d_clamp: the convolution's output ", y.sizes(), " does not fit `out` ", out->sizes());
      out->narrow(1, out_channel, O).copy_(y);
      return *out;
    }
  }
  if (!native) return conv2d(input, weight, bias, stride, padding, dilation, groups).clamp_(min, max);
  check_conv(input, weight, groups, 2, "_conv2d_clamp");
  const int64_t O = weight.size(0);
  KINDLE_CHECK(!bias || (bias->dim() == 1 && bias->size(0) == O), "_conv2d_clamp: Given weight of size ",
               weight.sizes(), ", expected bias to be 1-dimensional with ", O, " elements, but got bias of size ",
               bias ? bias->sizes() : IntArrayRef{}, " instead");
  ConvGeom g = conv_geom(input.sizes(), weight.sizes(), stride, padding, dilation, groups, "_conv2d_clamp");
  g.lo = min;
  g.hi = max;
  if (!out) return run_conv2d(input, weight, bias, g);
  KINDLE_CHECK(out->size(0) == g.w.N && out->size(2) == g.w.oh && out->size(3) == g.w.ow,
               "_conv2d_clamp: the convolution's output (", g.w.N, ", ", O, ", ", g.w.oh, ", ", g.w.ow,
               ") does not fit `out` ", out->sizes());
  g.out_image_stride = out->size(1) * g.w.oh * g.w.ow;
  Tensor x = input.contiguous(), w = weight.contiguous(), b;
  if (bias) b = bias->to(input.dtype()).contiguous();
  if (out->numel() && O) conv2d_stub[input.device()](x, w, bias ? &b : nullptr, out->narrow(1, out_channel, O), g);
  return *out;
}

Tensor native_conv2d_backward_input(const Tensor& grad_output, const Tensor& weight, IntArrayRef input_size,
                                    IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  check_float(grad_output, weight, "conv2d_backward_input");
  ConvGeom g = conv_geom(input_size, weight.sizes(), stride, padding, dilation, groups, "conv2d_backward_input");
  KINDLE_CHECK(grad_output.sizes() == IntArrayRef({g.w.N, g.O, g.w.oh, g.w.ow}), "conv2d_backward_input: expected "
               "grad_output of shape ", IntArrayRef({g.w.N, g.O, g.w.oh, g.w.ow}), ", got ", grad_output.sizes());
  Tensor dx = empty_tensor(input_size, grad_output.dtype(), grad_output.device());
  if (dx.numel()) conv2d_backward_input_stub[dx.device()](grad_output.contiguous(), weight.contiguous(), dx, g);
  return dx;
}

Tensor native_conv2d_backward_weight(const Tensor& grad_output, const Tensor& input, IntArrayRef weight_size,
                                     IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  check_float(grad_output, input, "conv2d_backward_weight");
  ConvGeom g = conv_geom(input.sizes(), weight_size, stride, padding, dilation, groups, "conv2d_backward_weight");
  KINDLE_CHECK(grad_output.sizes() == IntArrayRef({g.w.N, g.O, g.w.oh, g.w.ow}), "conv2d_backward_weight: expected "
               "grad_output of shape ", IntArrayRef({g.w.N, g.O, g.w.oh, g.w.ow}), ", got ", grad_output.sizes());
  Tensor dw = empty_tensor(weight_size, grad_output.dtype(), grad_output.device());
  if (dw.numel()) conv2d_backward_weight_stub[dw.device()](grad_output.contiguous(), input.contiguous(), dw, g);
  return dw;
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  if (input.dim() == 2) return conv1d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(IntArrayRef{0});
  check_conv(input, weight, groups, 1, "conv1d");
  return conv2d(input.unsqueeze(2), weight.unsqueeze(2), bias, {1, stride[0]}, {0, padding[0]}, {1, dilation[0]},
                groups)
      .squeeze(IntArrayRef{2});
}

namespace nn_detail {

// padding='valid' is no padding; 'same' pads dilation * (kernel - 1) per spatial dim, half on
// each side, the odd element at the end (by padding the input there, as PyTorch does). Returns
// the (maybe padded) input and the symmetric padding for the convolution.
std::pair<Tensor, DimVector> padding_from_string(const Tensor& input, const Tensor& weight, IntArrayRef stride,
                                                 std::string_view padding, IntArrayRef dilation, size_t n,
                                                 const char* op) {
  DimVector sym(n, 0);
  if (padding == "valid") return {input, sym};
  KINDLE_CHECK(padding == "same", op, ": Invalid padding string '", padding, "', should be one of ['valid', 'same']");
  for (int64_t s : stride)
    KINDLE_CHECK(s == 1, op, ": padding='same' is not supported for strided convolutions (stride ", stride, ")");
  KINDLE_CHECK(weight.dim() == int64_t(n) + 2 && dilation.size() == n, op, ": expected a weight of ", n + 2,
               " dimensions and ", n, " dilation values for padding='same', got weight ", weight.sizes(),
               " and dilation ", dilation);
  DimVector extra(2 * n, 0);  // F.pad's order: last spatial dim first, (left, right) pairs
  bool odd = false;
  for (size_t i = 0; i < n; ++i) {
    int64_t total = dilation[i] * (weight.size(int64_t(2 + i)) - 1);
    sym[i] = total / 2;
    extra[2 * (n - 1 - i) + 1] = total - 2 * sym[i];
    odd = odd || total % 2 != 0;
  }
  return {odd ? pad(input, extra) : input, sym};
}

}  // namespace nn_detail

Tensor _conv1d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                       IntArrayRef stride, std::string_view padding, IntArrayRef dilation, int64_t groups) {
  auto [x, p] = nn_detail::padding_from_string(input, weight, stride, padding, dilation, 1, "conv1d");
  return conv1d(x, weight, bias, stride, p, dilation, groups);
}

Tensor _conv2d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                       IntArrayRef stride, std::string_view padding, IntArrayRef dilation, int64_t groups) {
  auto [x, p] = nn_detail::padding_from_string(input, weight, stride, padding, dilation, 2, "conv2d");
  return conv2d(x, weight, bias, stride, p, dilation, groups);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  if (input.dim() == 3)
    return conv_transpose2d(input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups, dilation)
        .squeeze(IntArrayRef{0});
  KINDLE_CHECK(input.dim() == 4 && weight.dim() == 4, "conv_transpose2d: expected a 4-D input and weight, got ",
               input.sizes(), " and ", weight.sizes());
  KINDLE_CHECK(groups > 0, "conv_transpose2d: non-positive groups is not supported");
  KINDLE_CHECK(weight.size(0) % groups == 0, "conv_transpose2d: Given groups=", groups, ", expected weight to be "
               "divisible by ", groups, " at dimension 0, but got weight of size ", weight.sizes(), " instead");
  KINDLE_CHECK(input.size(1) == weight.size(0), "conv_transpose2d: Given transposed=1, weight of size ",
               weight.sizes(), ", expected input", input.sizes(), " to have ", weight.size(0),
               " channels, but got ", input.size(1), " channels instead");
  for (int i = 0; i < 2; ++i)
    KINDLE_CHECK(output_padding[i] < stride[i] || output_padding[i] < dilation[i], "conv_transpose2d: output padding "
                 "must be smaller than either stride or dilation, but got output_padding=", output_padding,
                 ", stride=", stride, ", dilation=", dilation);
  if (input.is_complex() || weight.is_complex())
    return complex_conv(input, weight, bias, "conv_transpose2d", [&](const Tensor& x, const Tensor& w) {
      return conv_transpose2d(x, w, std::nullopt, stride, padding, output_padding, groups, dilation);
    });
  if (input.dtype() == kFloat16 || input.dtype() == kBFloat16) {  // accumulate in float32, round once
    std::optional<Tensor> b32;
    if (bias) b32 = bias->to(kFloat32);
    return conv_transpose2d(input.to(kFloat32), weight.to(kFloat32), b32, stride, padding, output_padding, groups,
                            dilation).to(input.dtype());
  }
  int64_t N = input.size(0), Cin = input.size(1), H = input.size(2), W = input.size(3);
  int64_t Og = weight.size(1), kh = weight.size(2), kw = weight.size(3), O = Og * groups;
  if (bias) KINDLE_CHECK(bias->dim() == 1 && bias->size(0) == O, "conv_transpose2d: Given transposed=1, weight of size ",
                         weight.sizes(), ", expected bias to be 1-dimensional with ", O, " elements, but got bias of "
                         "size ", bias->sizes(), " instead");
  int64_t OH = (H - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1;
  int64_t OW = (W - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1;
  KINDLE_CHECK(OH > 0 && OW > 0, "conv_transpose2d: the output size (", OH, " x ", OW, ") would not be positive");
  // A transposed convolution is the input gradient of the convolution it transposes: the same
  // kernel (filters packed once, col2im per image, Winograd for 3x3 stride 1) and the same
  // derivatives (ops.yaml). An output padding of a whole stride or more (allowed where the
  // dilation exceeds the stride) makes that convolution's output op / stride rows (columns)
  // longer than the input: zeros there, which add nothing.
  const bool native = (input.dtype() == kFloat32 || input.dtype() == kFloat64) && weight.dtype() == input.dtype();
  if (native) {
    const int64_t eh = output_padding[0] / stride[0], ew = output_padding[1] / stride[1];
    const Tensor x = eh || ew ? pad(input, {0, ew, 0, eh}, "constant", 0.0) : input;
    Tensor out = conv2d_backward_input(x, weight, {N, O, OH, OW}, stride, padding, dilation, groups);
    if (bias) out = out + bias->reshape({1, O, 1, 1});
    return out;
  }
  Tensor rows = input.permute({0, 2, 3, 1}).reshape({N * H * W, Cin});
  int64_t Cg = Cin / groups;
  std::vector<Tensor> parts;
  for (int64_t g = 0; g < groups; ++g)  // (N*H*W, Og*kh*kw) per group
    parts.push_back(mm(rows.narrow(1, g * Cg, Cg), weight.narrow(0, g * Cg, Cg).reshape({Cg, Og * kh * kw})));
  Tensor cols = (groups == 1 ? parts[0] : cat(parts, 1)).reshape({N, H * W, O * kh * kw});
  Tensor out = col2im(cols, {OH, OW}, {kh, kw}, dilation, padding, stride);
  if (bias) out = out + bias->reshape({1, O, 1, 1});
  return out;
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  if (input.dim() == 2)
    return conv_transpose1d(input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups, dilation)
        .squeeze(IntArrayRef{0});
  return conv_transpose2d(input.unsqueeze(2), weight.unsqueeze(2), bias, {1, stride[0]}, {0, padding[0]},
                          {0, output_padding[0]}, groups, {1, dilation[0]})
      .squeeze(IntArrayRef{2});
}

// ---- pooling

namespace {

// Pads (right/bottom) so that ceil_mode's last windows fit; returns the extra padding per dim.
std::pair<int64_t, int64_t> ceil_extra(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d,
                                       bool ceil_mode) {
  if (!ceil_mode) return {0, 0};
  int64_t oh = out_size(x.size(-2), k[0], s[0], p[0], d[0], true);
  int64_t ow = out_size(x.size(-1), k[1], s[1], p[1], d[1], true);
  int64_t eh = std::max<int64_t>(0, (oh - 1) * s[0] + d[0] * (k[0] - 1) + 1 - (x.size(-2) + 2 * p[0]));
  int64_t ew = std::max<int64_t>(0, (ow - 1) * s[1] + d[1] * (k[1] - 1) + 1 - (x.size(-1) + 2 * p[1]));
  return {eh, ew};
}

void check_pool(const Tensor& self, IntArrayRef k, IntArrayRef s, IntArrayRef p, const char* op) {
  KINDLE_CHECK(self.dim() == 3 || self.dim() == 4, op, ": Expected 3D or 4D (batch mode) tensor for input, got ",
               self.sizes());
  KINDLE_CHECK(k.size() == 2 && s.size() == 2 && p.size() == 2, op, ": kernel_size, stride and padding need 2 values");
  for (int i = 0; i < 2; ++i)
    KINDLE_CHECK(p[i] * 2 <= k[i], op, ": pad should be at most half of effective kernel size, but got pad=", p[i],
                 ", kernel_size=", k[i]);
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  check_kernel_dtype(self.dtype(), "max_pool2d", true, true);  // no complex kernel
  DimVector s(stride.empty() ? kernel_size : stride);
  check_pool(self, kernel_size, s, padding, "max_pool2d");
  if (self.dim() == 3) {
    auto [v, i] = max_pool2d_with_indices(self.unsqueeze(0), kernel_size, s, padding, dilation, ceil_mode);
    return {v.squeeze(IntArrayRef{0}), i.squeeze(IntArrayRef{0})};
  }
  return max_pool2d_fwd(self, kernel_size, s, padding, dilation, ceil_mode);
}

namespace {
// The values (and, with `indices`, the int64 indices) of max pooling a 4-D input.
std::tuple<Tensor, Tensor> run_max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                          IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, bool indices) {
  KINDLE_CHECK(self.dim() == 4, "max_pool2d: expected a 4-D input, got ", self.sizes());
  KINDLE_CHECK(self.dtype() != kBool, "max_pool2d: \"max_pool2d\" not implemented for 'Bool'");
  WindowGeom g = geom(self, kernel_size, dilation, padding, stride, "max_pool2d", ceil_mode);
  Tensor x = self.contiguous();
  Tensor vals = empty_tensor({g.N, g.C, g.oh, g.ow}, self.dtype(), self.device());
  // (no elements: the kernel writes the values only)
  const std::vector<int64_t> idx_shape = indices ? std::vector<int64_t>{g.N, g.C, g.oh, g.ow} : std::vector<int64_t>{0};
  Tensor idx = empty_tensor(idx_shape, kInt64, self.device());
  if (vals.numel()) max_pool2d_stub[self.device()](x, vals, idx, g);
  return {vals, idx};
}
}  // namespace

// max_pool2d's values alone, where nothing will differentiate them (gradients off, or an input
// that does not require grad, and no forward-mode tangent): the indices' int64 stores were two
// thirds of the bytes a pool wrote. Otherwise max_pool2d_with_indices, whose gradient needs them.
Tensor _max_pool2d_values(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                          IntArrayRef dilation, bool ceil_mode) {
  if ((autograd::GradMode::is_enabled() && self.requires_grad()) || autograd::forward_ad::is_dual(self) ||
      !self.device().is_cpu())
    return std::get<0>(max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));
  check_kernel_dtype(self.dtype(), "max_pool2d", true, true);
  DimVector s(stride.empty() ? kernel_size : stride);
  check_pool(self, kernel_size, s, padding, "max_pool2d");
  if (self.dim() == 3)
    return _max_pool2d_values(self.unsqueeze(0), kernel_size, s, padding, dilation, ceil_mode).squeeze(IntArrayRef{0});
  return std::get<0>(run_max_pool2d(self, kernel_size, s, padding, dilation, ceil_mode, false));
}

std::tuple<Tensor, Tensor> native_max_pool2d_fwd(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                 IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return run_max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode, true);
}

Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  DimVector s(stride.empty() ? kernel_size : stride);
  check_pool(self, kernel_size, s, padding, "avg_pool2d");
  if (self.dim() == 3)
    return avg_pool2d(self.unsqueeze(0), kernel_size, s, padding, ceil_mode, count_include_pad, divisor_override)
        .squeeze(IntArrayRef{0});
  KINDLE_CHECK(!divisor_override || *divisor_override != 0, "avg_pool2d: divisor must be not zero");
  check_kernel_dtype(self.dtype(), "avg_pool2d", true, true);  // no complex kernel (as in PyTorch)
  if (is_floating_point(self.dtype()))  // the direct kernel; integers keep the composite below
    return avg_pool2d_fwd(self, kernel_size, s, padding, ceil_mode, count_include_pad, divisor_override);
  int64_t N = self.size(0), C = self.size(1), H = self.size(2), W = self.size(3);
  auto [eh, ew] = ceil_extra(self, kernel_size, s, padding, {1, 1}, ceil_mode);
  DimVector pad4{padding[1], padding[1] + ew, padding[0], padding[0] + eh};
  Tensor x = pad(self, pad4, "constant", 0.0);
  Tensor cols = im2col(x, kernel_size, {1, 1}, {0, 0}, s);
  int64_t L = cols.size(1), k = kernel_size[0] * kernel_size[1];
  int64_t oh = out_size(H + 2 * padding[0] + eh, kernel_size[0], s[0], 0, 1);
  int64_t ow = L / std::max<int64_t>(oh, 1);
  Tensor sums = cols.reshape({N, L, C, k}).sum(IntArrayRef{3});  // (N, L, C)
  Tensor div;
  if (divisor_override) {
    div = scalar_tensor_of(double(*divisor_override), self.dtype());
  } else {
    // Count the window's elements: inside the input, or (count_include_pad) inside the padding,
    // never in ceil_mode's extra overhang.
    Tensor ones = pad(kindle::ones({1, 1, H, W}, self.dtype(), self.device()), {padding[1], padding[1], padding[0], padding[0]},
                      "constant", count_include_pad ? 1.0 : 0.0);
    ones = pad(ones, {0, ew, 0, eh}, "constant", 0.0);
    div = im2col(ones, kernel_size, {1, 1}, {0, 0}, s).sum(IntArrayRef{2}).reshape({1, L, 1});
  }
  return (sums / div).reshape({N, oh, ow, C}).permute({0, 3, 1, 2}).contiguous();
}

Tensor native_avg_pool2d_fwd(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                             bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  WindowGeom g = geom(self, kernel_size, {1, 1}, padding, stride, "avg_pool2d", ceil_mode);
  Tensor x = self.contiguous();
  Tensor out = empty_tensor({g.N, g.C, g.oh, g.ow}, self.dtype(), self.device());
  if (out.numel()) avg_pool2d_stub[self.device()](x, out, g, {count_include_pad, divisor_override.value_or(0)});
  return out;
}

Tensor native_avg_pool2d_bwd(const Tensor& grad_output, IntArrayRef input_size, IntArrayRef kernel_size,
                             IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                             std::optional<int64_t> divisor_override) {
  WindowGeom g = geom(input_size, kernel_size, {1, 1}, padding, stride, "avg_pool2d_backward", ceil_mode);
  KINDLE_CHECK(grad_output.dim() == 4 && grad_output.size(2) == g.oh && grad_output.size(3) == g.ow,
               "avg_pool2d_backward: expected a gradient of shape (", g.N, ", ", g.C, ", ", g.oh, ", ", g.ow, "), got ",
               grad_output.sizes());
  Tensor go = grad_output.contiguous();
  Tensor gin = empty_tensor(input_size, grad_output.dtype(), grad_output.device());
  if (gin.numel())
    avg_pool2d_backward_stub[grad_output.device()](go, gin, g, {count_include_pad, divisor_override.value_or(0)});
  return gin;
}

namespace {
// (out, in) matrix averaging the adaptive windows [floor(i*in/out), ceil((i+1)*in/out))
Tensor adaptive_matrix(int64_t in, int64_t out, DType dt) {
  Tensor m = zeros({out, in}, dt);
  for (int64_t i = 0; i < out; ++i) {
    int64_t a = (i * in) / out, b = ((i + 1) * in + out - 1) / out;
    m.select(0, i).narrow(0, a, b - a).fill_(1.0 / double(b - a));
  }
  return m;
}
}  // namespace

// The p-norm of each window: (sum x^p)^(1/p), through the average pool as PyTorch computes it.
Tensor lp_pool2d(const Tensor& self, double norm_type, IntArrayRef kernel_size, IntArrayRef stride, bool ceil_mode) {
  KINDLE_CHECK(kernel_size.size() == 2, "lp_pool2d: kernel_size must have 2 elements");
  check_kernel_dtype(self.dtype(), "avg_pool2d", false, false);
  Tensor out = avg_pool2d(pow(self, scalar_to_tensor(Scalar(norm_type))), kernel_size, stride, {0, 0}, ceil_mode, true,
                          std::nullopt);
  // sign(out) * relu(|out|): the value of out, with a zero gradient where a window sums to 0
  Tensor sum = sign(out) * relu(abs(out)) * Scalar(kernel_size[0] * kernel_size[1]);
  return pow(sum, scalar_to_tensor(Scalar(1.0 / norm_type)));
}

Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  autocast::Exclude no_autocast;  // (not on PyTorch's autocast lists: its matrix product runs as given)
  check_kernel_dtype(self.dtype(), "adaptive_avg_pool2d", true, true);  // no complex kernel (as in PyTorch)
  check_kernel_dtype(self.dtype(), "adaptive_avg_pool2d", false, false);
  KINDLE_CHECK(self.dim() == 3 || self.dim() == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ",
               self.sizes());
  KINDLE_CHECK(output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  int64_t H = self.size(-2), W = self.size(-1);
  KINDLE_CHECK(output_size[0] >= 0 && output_size[1] >= 0, "adaptive_avg_pool2d: elements of output_size must be "
               "greater than or equal to 0 but received ", output_size);
  int64_t oh = output_size[0], ow = output_size[1];
  KINDLE_CHECK(H > 0 && W > 0, "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
               "dimensions, but input has sizes ", self.sizes());
  if (oh == 1 && ow == 1) return self.mean(IntArrayRef{-2, -1}, true);
  // (the matrices are built on the host, then moved to the input's device)
  Tensor y = matmul(self, adaptive_matrix(W, ow, self.dtype())._to_device(self.device()).t());  // (..., H, ow)
  return matmul(adaptive_matrix(H, oh, self.dtype())._to_device(self.device()), y);            // (..., oh, ow)
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& self, IntArrayRef output_size) {
  check_kernel_dtype(self.dtype(), "adaptive_max_pool2d", false, false);
  KINDLE_CHECK(self.dim() == 3 || self.dim() == 4, "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got ",
               self.sizes());
  KINDLE_CHECK(output_size.size() == 2, "adaptive_max_pool2d: output_size must be 2");
  int64_t H = self.size(-2), W = self.size(-1);
  KINDLE_CHECK(output_size[0] >= 0 && output_size[1] >= 0, "adaptive_max_pool2d: elements of output_size must be "
               "greater than or equal to 0 but received ", output_size);
  KINDLE_CHECK(H > 0 && W > 0, "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
               "but input has sizes ", self.sizes());
  int64_t oh = output_size[0], ow = output_size[1];
  std::vector<Tensor> vals, idxs;
  for (int64_t i = 0; i < oh; ++i) {
    int64_t a = (i * H) / oh, b = ((i + 1) * H + oh - 1) / oh;
    for (int64_t j = 0; j < ow; ++j) {
      int64_t c = (j * W) / ow, e = ((j + 1) * W + ow - 1) / ow;
      Tensor win = self.narrow(-2, a, b - a).narrow(-1, c, e - c);
      DimVector flat(self.sizes().slice(0, size_t(self.dim() - 2)));
      flat.push_back((b - a) * (e - c));
      auto [v, k] = win.reshape(flat).max(-1);
      vals.push_back(v);
      Tensor kk = k.div(scalar_to_tensor(e - c), "floor"), kj = k.remainder(scalar_to_tensor(e - c));
      idxs.push_back((kk + a) * W + kj + c);
    }
  }
  DimVector shape(self.sizes().slice(0, size_t(self.dim() - 2)));
  shape.push_back(oh);
  shape.push_back(ow);
  return {stack(vals, -1).reshape(shape), stack(idxs, -1).reshape(shape)};
}

}  // namespace kindle
