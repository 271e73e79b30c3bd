// The 3-d layers of torch.nn.functional (conv3d, conv_transpose3d, max/avg/adaptive/lp pooling)
// composed from the 2-d kernels, the depth dimension folded into the batch: the convolutions
// stack the kernel's depth taps as channels of one 2-d convolution, the pools reduce the depth
// taps of the 2-d results. Autograd differentiates the composition, except max pooling, an op
// whose derivative scatters the gradient to the first maximum of each window, as PyTorch's
// kernels do. Both front ends call these ops.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kindle/autograd.h"
#include "nn/common.h"

namespace kindle {

namespace {

template <typename E>
[[noreturn]] void rethrow_named(const char* op, const E& e) {
  std::string m = e.what();
  if (m.rfind(op, 0) == 0) throw;  // already names the op
  throw E(std::string(op) + ": " + m);
}

// Errors of the 2-d ops inside name the 3-d op the user called, keeping their type.
template <typename F>
auto named(const char* op, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const OutOfMemoryError&) {
    throw;
  } catch (const NotImplementedError& e) {
    rethrow_named(op, e);
  } catch (const TypeError& e) {
    rethrow_named(op, e);
  } catch (const IndexError& e) {
    rethrow_named(op, e);
  } catch (const ValueError& e) {
    rethrow_named(op, e);
  } catch (const Error& e) {
    if (typeid(e) != typeid(Error)) throw;  // another subclass: keep it as it is
    rethrow_named(op, e);
  }
}

// One value per spatial dim, or one for all three.
DimVector triple(IntArrayRef v, const char* name, const char* op) { return nn_detail::expand_param(v, 3, name, op); }

std::string joined(IntArrayRef v, const char* sep) {
  return std::to_string(v[0]) + sep + std::to_string(v[1]) + sep + std::to_string(v[2]);
}

// (the input as 5-D, whether it had a batch dim)
std::pair<Tensor, bool> batched5(const Tensor& input, const char* op) {
  if (input.dim() == 5) return {input, true};
  KINDLE_CHECK(input.dim() == 4, op, ": Expected 4D (unbatched) or 5D (batched) input to ", op,
               ", but got input of size: ", input.sizes());
  return {input.unsqueeze(0), false};
}

Tensor unbatched(const Tensor& t, bool batched) { return batched ? t : t.squeeze(IntArrayRef{0}); }

// (N, C, D, H, W) -> (N*D, C, H, W): depth into the batch.
Tensor fold_depth(const Tensor& x) {
  return x.transpose(1, 2).reshape({x.size(0) * x.size(2), x.size(1), x.size(3), x.size(4)});
}

// (N*D, C, H, W) -> (N, C, D, H, W)
Tensor unfold_depth(const Tensor& y, int64_t n, int64_t d) {
  return y.reshape({n, d, y.size(1), y.size(2), y.size(3)}).transpose(1, 2);
}

bool is_reduced(DType d) { return d == kFloat16 || d == kBFloat16; }

// float16/bfloat16 run in float32 and round once, as PyTorch accumulates.
std::optional<Tensor> to_float(const std::optional<Tensor>& t) {
  return t ? std::optional<Tensor>(t->to(kFloat32)) : std::nullopt;
}

void check_bias(const std::optional<Tensor>& bias, const Tensor& weight, int64_t out_channels, const char* op) {
  if (bias)
    KINDLE_CHECK(bias->dim() == 1 && bias->size(0) == out_channels, op, ": Given weight of size ", weight.sizes(),
                 ", expected bias to be 1-dimensional with ", out_channels, " elements, but got bias of size ",
                 bias->sizes(), " instead");
}

Tensor add_bias(const Tensor& out, const std::optional<Tensor>& bias) {
  return bias ? out + bias->reshape({1, -1, 1, 1, 1}) : out;
}

// Depth slices start, start + step, ... (count of them), as x[:, :, start::step][:count].
Tensor depth_taps(const Tensor& x, int64_t start, int64_t step, int64_t count) {
  return x.slice(2, start, start + step * (count - 1) + 1, step);
}

// PyTorch's pooling output size along one dim (floor division, also of a negative span).
int64_t pool_out(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t num = size + 2 * p - (d * (k - 1) + 1) + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= size + p) --out;
  return out;
}

void check_pool(IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d, const char* op) {
  for (int i = 0; i < 3; ++i) {
    KINDLE_CHECK(k[i] > 0 && s[i] > 0 && d[i] > 0, op, ": kernel_size, stride and dilation must be greater than "
                 "zero, but got kernel_size=", k, ", stride=", s, ", dilation=", d);
    KINDLE_CHECK(p[i] >= 0 && p[i] <= k[i] / 2, op, ": pad should be at most half of effective kernel size, but got "
                 "pad=", p, ", kernel_size=", k);
  }
}

double lowest_of(DType dt) {
  switch (dt) {
    case kUInt8: case kBool: return 0;
    case kInt8: return std::numeric_limits<int8_t>::min();
    case kInt16: return std::numeric_limits<int16_t>::min();
    case kInt32: return std::numeric_limits<int32_t>::min();
    case kInt64: return double(std::numeric_limits<int64_t>::min());
    default: return -std::numeric_limits<double>::infinity();
  }
}

// The output sizes of adaptive 3-d pooling (no empty spatial dims allowed in the input).
DimVector adaptive_sizes(const Tensor& x, IntArrayRef output_size, const char* op) {
  for (int64_t i = 2; i < 5; ++i)
    KINDLE_CHECK(x.size(i) != 0, op, "(): Expected input to have non-zero size for non-batch dimensions, but input "
                 "has sizes ", x.sizes(), " with dimension ", i, " being empty");
  KINDLE_CHECK(output_size.size() == 3 || output_size.size() == 1, op, ": output_size must be 3, got ",
               output_size.size());
  DimVector o = triple(output_size, "output_size", op);
  for (int64_t v : o)
    KINDLE_CHECK(v >= 0, op, ": elements of output_size must be greater than or equal to 0 but received ",
                 output_size);
  return o;
}

// The depth windows of adaptive pooling: [floor(i * D / o), ceil((i + 1) * D / o)).
std::pair<int64_t, int64_t> adaptive_range(int64_t i, int64_t size, int64_t out) {
  return {i * size / out, ((i + 1) * size + out - 1) / out};
}

}  // namespace

Tensor conv3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const char* op = "conv3d";
  auto [x, batched] = batched5(input, op);
  nn_detail::check_conv(x, weight, groups, 3, op);
  auto s = triple(stride, "stride", op), p = triple(padding, "padding", op), d = triple(dilation, "dilation", op);
  for (int i = 0; i < 3; ++i) {
    KINDLE_CHECK(s[i] > 0, op, ": non-positive stride is not supported");
    KINDLE_CHECK(d[i] > 0, op, ": dilation should be greater than zero");
    KINDLE_CHECK(p[i] >= 0, op, ": negative padding is not supported");
    KINDLE_CHECK(weight.size(2 + i) > 0, op, ": kernel size must be positive, got weight of size ", weight.sizes());
  }
  check_bias(bias, weight, weight.size(0), op);
  if (is_reduced(x.dtype()) && x.dtype() == weight.dtype())
    return unbatched(conv3d(x.to(kFloat32), weight.to(kFloat32), to_float(bias), s, p, d, groups).to(x.dtype()),
                     batched);
  if (p[0]) x = pad(x, {0, 0, 0, 0, p[0], p[0]});
  const int64_t n = x.size(0), depth = x.size(2);
  int64_t span[3], padded[3] = {depth, x.size(3) + 2 * p[1], x.size(4) + 2 * p[2]};
  for (int i = 0; i < 3; ++i) span[size_t(i)] = d[size_t(i)] * (weight.size(2 + i) - 1) + 1;
  for (int i = 0; i < 3; ++i)
    KINDLE_CHECK(padded[size_t(i)] >= span[size_t(i)], op, ": Calculated padded input size per channel: (",
                 joined(IntArrayRef(padded, 3), " x "), "). Kernel size: (", joined(IntArrayRef(span, 3), " x "),
                 "). Kernel size can't be greater than actual input size");
  const int64_t d_out = (depth - span[0]) / s[0] + 1;
  // The kernel's depth taps become input channels of one 2-d convolution over the depth-folded
  // batch: one GEMM with a kD times deeper reduction instead of kD smaller ones and their sums
  // (about 20% faster; the input is copied kD times). Channels are laid out (group, tap, channel
  // of the group), so each group's channels stay contiguous, as conv2d's groups expect.
  const int64_t kd_n = weight.size(2), c = x.size(1), cg = c / groups, h = x.size(3), w = x.size(4);
  Tensor stacked;
  if (kd_n == 1) {
    stacked = fold_depth(depth_taps(x, 0, s[0], d_out));
  } else {
    std::vector<Tensor> taps;
    for (int64_t kd = 0; kd < kd_n; ++kd)  // (N, Do, g, C/g, H, W)
      taps.push_back(depth_taps(x, kd * d[0], s[0], d_out).reshape({n, groups, cg, d_out, h, w}).permute({0, 3, 1, 2, 4, 5}));
    stacked = stack(taps, 3).reshape({n * d_out, c * kd_n, h, w});  // (N, Do, g, kD, C/g, H, W)
  }
  Tensor w2 = weight.transpose(1, 2).reshape({weight.size(0), kd_n * cg, weight.size(3), weight.size(4)});
  Tensor out = named(op, [&] {
    return conv2d(stacked, w2, std::nullopt, {s[1], s[2]}, {p[1], p[2]}, {d[1], d[2]}, groups);
  });
  return unbatched(add_bias(unfold_depth(out, n, d_out), bias).contiguous(), batched);
}

Tensor _conv3d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                       IntArrayRef stride, std::string_view padding, IntArrayRef dilation, int64_t groups) {
  auto s = triple(stride, "stride", "conv3d"), d = triple(dilation, "dilation", "conv3d");
  auto [x, p] = nn_detail::padding_from_string(input, weight, s, padding, d, 3, "conv3d");
  return conv3d(x, weight, bias, s, p, d, groups);
}

Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  const char* op = "conv_transpose3d";
  auto [x, batched] = batched5(input, op);
  KINDLE_CHECK(weight.dim() == 5, op, ": expected a 5-dimensional weight, got ", weight.sizes());
  KINDLE_CHECK(groups > 0, op, ": non-positive groups is not supported");
  KINDLE_CHECK(weight.size(0) % groups == 0, op, ": Given groups=", groups, ", expected weight to be divisible by ",
               groups, " at dimension 0, but got weight of size ", weight.sizes(), " instead");
  KINDLE_CHECK(x.size(1) == weight.size(0), op, ": Given transposed=1, weight of size ", weight.sizes(),
               ", expected input", x.sizes(), " to have ", weight.size(0), " channels, but got ", x.size(1),
               " channels instead");
  auto s = triple(stride, "stride", op), p = triple(padding, "padding", op);
  auto opad = triple(output_padding, "output_padding", op), d = triple(dilation, "dilation", op);
  for (int i = 0; i < 3; ++i) {
    KINDLE_CHECK(s[size_t(i)] > 0, op, ": non-positive stride is not supported");
    KINDLE_CHECK(d[size_t(i)] > 0, op, ": dilation should be greater than zero");
    KINDLE_CHECK(p[size_t(i)] >= 0 && opad[size_t(i)] >= 0, op, ": negative padding is not supported");
    KINDLE_CHECK(opad[size_t(i)] < s[size_t(i)] || opad[size_t(i)] < d[size_t(i)], op,
                 ": output padding must be smaller than either stride or dilation, but got output_padding=",
                 opad, ", stride=", s, ", dilation=", d);
  }
  check_bias(bias, weight, weight.size(1) * groups, op);
  if (is_reduced(x.dtype()) && x.dtype() == weight.dtype())
    return unbatched(conv_transpose3d(x.to(kFloat32), weight.to(kFloat32), to_float(bias), s, p, opad, groups, d)
                         .to(x.dtype()),
                     batched);
  const int64_t n = x.size(0), depth = x.size(2), kd_n = weight.size(2);
  const int64_t full_depth = (depth - 1) * s[0] + d[0] * (kd_n - 1) + 1 + opad[0];
  const int64_t d_out = full_depth - 2 * p[0];
  KINDLE_CHECK(d_out > 0, op, ": the output depth would be ", d_out, " (input depth ", depth, ", kernel depth ",
               kd_n, ", stride ", s[0], ", padding ", p[0], ")");
  // One transposed 2-d convolution gives every depth tap's contribution as output channels
  // (group, tap, channel of the group), as conv3d stacks them on the input side; each tap's
  // slices then add into the output depths start + stride * i.
  const int64_t cog = weight.size(1);
  Tensor w2 = weight.transpose(1, 2).reshape({weight.size(0), kd_n * cog, weight.size(3), weight.size(4)});
  Tensor y = named(op, [&] {
    return conv_transpose2d(fold_depth(x), w2, std::nullopt, {s[1], s[2]}, {p[1], p[2]}, {opad[1], opad[2]}, groups,
                            {d[1], d[2]});
  });
  const int64_t ho = y.size(2), wo = y.size(3);
  y = y.reshape({n, depth, groups, kd_n, cog, ho, wo});
  Tensor full = zeros({n, full_depth, groups * cog, ho, wo}, y.dtype(), y.device());
  for (int64_t kd = 0; kd < kd_n; ++kd)
    full.slice(1, kd * d[0], kd * d[0] + s[0] * (depth - 1) + 1, s[0])
        .add_(y.select(3, kd).reshape({n, depth, groups * cog, ho, wo}));
  Tensor out = full.slice(1, p[0], p[0] + d_out).transpose(1, 2);
  return unbatched(add_bias(out, bias).contiguous(), batched);
}

std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  const char* op = "max_pool3d";
  auto [x, batched] = batched5(self, op);
  auto k = triple(kernel_size, "kernel_size", op);
  auto s = stride.empty() ? k : triple(stride, "stride", op);
  auto p = triple(padding, "padding", op), d = triple(dilation, "dilation", op);
  check_pool(k, s, p, d, op);
  const int64_t d_out = pool_out(x.size(2), k[0], s[0], p[0], d[0], ceil_mode);
  KINDLE_CHECK(d_out > 0, op, ": Given input size: (", x.size(1), "x", x.size(2), "x", x.size(3), "x", x.size(4),
               "). Calculated output size is too small");
  auto [values, indices] = max_pool3d_fwd(x, k, s, p, d, ceil_mode);
  return {unbatched(values, batched), unbatched(indices, batched)};
}

// The values and their flat positions in each (D, H, W) volume, computed without recording
// autograd: the op's derivative scatters the gradient to those positions in one pass.
std::tuple<Tensor, Tensor> native_max_pool3d_fwd(const Tensor& self, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                                 IntArrayRef d, bool ceil_mode) {
  const char* op = "max_pool3d";
  KINDLE_CHECK(self.dim() == 5 && k.size() == 3 && s.size() == 3 && p.size() == 3 && d.size() == 3, op,
               ": expected a 5-D input and 3 values each for kernel_size, stride, padding and dilation");
  autograd::AutoGradMode no_grad(false);
  const Tensor& x = self;
  const int64_t n = x.size(0), depth = x.size(2), h = x.size(3), w = x.size(4);
  const int64_t d_out = pool_out(depth, k[0], s[0], p[0], d[0], ceil_mode);
  auto [v2, i2] = named(op, [&] {
    return max_pool2d_with_indices(fold_depth(x), {k[1], k[2]}, {s[1], s[2]}, {p[1], p[2]}, {d[1], d[2]}, ceil_mode);
  });
  v2 = unfold_depth(v2, n, depth);
  // Indices into the whole volume: depth * H * W plus the index within the slice.
  Tensor i3 = unfold_depth(i2, n, depth) + arange(depth, std::nullopt, 1, kInt64, x.device()).reshape({1, 1, depth, 1, 1}) * (h * w);
  // A running maximum over the depth taps (views, no stacked copy): a later tap wins only when
  // larger, or NaN over a number, so ties and NaNs go to the first, as PyTorch's kernels pick.
  const int64_t right = std::max<int64_t>(0, (d_out - 1) * s[0] + d[0] * (k[0] - 1) + 1 - depth - p[0]);
  Tensor vp = v2, ip = i3;
  if (p[0] || right) {
    vp = pad(v2.movedim({2}, {-1}), {p[0], right}, "constant", lowest_of(x.dtype())).movedim({-1}, {2});
    ip = pad(i3.movedim({2}, {-1}), {p[0], right}, "constant", 0.0).movedim({-1}, {2});
  }
  Tensor values = depth_taps(vp, 0, s[0], d_out), indices = depth_taps(ip, 0, s[0], d_out);
  const bool nan_possible = x.is_floating_point();
  for (int64_t kd = 1; kd < k[0]; ++kd) {
    Tensor v = depth_taps(vp, kd * d[0], s[0], d_out), iv = depth_taps(ip, kd * d[0], s[0], d_out);
    Tensor take = gt(v, values);
    if (nan_possible) take = logical_or(take, logical_and(isnan(v), logical_not(isnan(values))));
    values = where(take, v, values);
    indices = where(take, iv, indices);
  }
  values = values.contiguous();
  indices = indices.contiguous();
  return {values, indices};
}

Tensor avg_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  const char* op = "avg_pool3d";
  KINDLE_CHECK_NOT_IMPLEMENTED(self.dtype() == kFloat32 || self.dtype() == kFloat64,  // PyTorch's kernels too
                               "\"avg_pool3d_out_frame\" not implemented for '", scalar_type_name(self.dtype()), "'");
  auto [x, batched] = batched5(self, op);
  auto k = triple(kernel_size, "kernel_size", op);
  auto s = stride.empty() ? k : triple(stride, "stride", op);
  auto p = triple(padding, "padding", op);
  check_pool(k, s, p, {1, 1, 1}, op);
  KINDLE_CHECK(!divisor_override || *divisor_override != 0, op, ": divisor must be not zero");
  const int64_t n = x.size(0), depth = x.size(2), h = x.size(3), w = x.size(4);
  const int64_t d_out = pool_out(depth, k[0], s[0], p[0], 1, ceil_mode);
  KINDLE_CHECK(d_out > 0, op, ": Given input size: (", x.size(1), "x", depth, "x", h, "x", w,
               "). Calculated output size is too small");
  // Window sums: the 2-d sums of each slice, then the depth taps added (as views of the
  // depth-padded sums, without stacking them).
  Tensor sums2 = named(op, [&] {
    return avg_pool2d(fold_depth(x), {k[1], k[2]}, {s[1], s[2]}, {p[1], p[2]}, ceil_mode, true, 1);
  });
  Tensor sums = unfold_depth(sums2, n, depth);
  const int64_t right = std::max<int64_t>(0, (d_out - 1) * s[0] + k[0] - depth - p[0]);
  if (p[0] || right) sums = pad(sums.movedim({2}, {-1}), {p[0], right}).movedim({-1}, {2});
  Tensor total = depth_taps(sums, 0, s[0], d_out);
  for (int64_t kd = 1; kd < k[0]; ++kd) total = total + depth_taps(sums, kd, s[0], d_out);
  if (divisor_override) return unbatched((total / double(*divisor_override)).contiguous(), batched);
  const int64_t sizes[3] = {depth, h, w}, outs[3] = {d_out, total.size(3), total.size(4)};
  // Every window is whole unless padding or ceil_mode make some overhang: then count per window.
  bool uniform = true;
  for (int i = 0; i < 3; ++i)
    uniform = uniform && p[size_t(i)] == 0 && (outs[i] - 1) * s[size_t(i)] + k[size_t(i)] <= sizes[i];
  if (uniform) return unbatched((total / double(k[0] * k[1] * k[2])).contiguous(), batched);
  Tensor counts[3];
  for (int i = 0; i < 3; ++i) {
    Tensor start = arange(outs[i], std::nullopt, 1, kInt64, x.device()) * s[size_t(i)] - p[size_t(i)];
    Tensor cnt = count_include_pad
                     ? clamp_max(start + k[size_t(i)], sizes[i] + p[size_t(i)]) - start
                     : clamp_max(start + k[size_t(i)], sizes[i]) - clamp_min(start, 0);
    counts[i] = cnt.to(x.dtype());
  }
  Tensor div = counts[0].reshape({-1, 1, 1}) * counts[1].reshape({1, -1, 1}) * counts[2].reshape({1, 1, -1});
  return unbatched((total / div).contiguous(), batched);
}

Tensor lp_pool3d(const Tensor& self, double norm_type, IntArrayRef kernel_size, IntArrayRef stride, bool ceil_mode) {
  // PyTorch's lp_pool3d raises for integer inputs (its avg_pool3d has float kernels only); so does
  // this one, rather than promote them to float with the float norm_type.
  KINDLE_CHECK_NOT_IMPLEMENTED(self.is_floating_point(), "lp_pool3d: \"avg_pool3d_out_frame\" not implemented for '",
                               scalar_type_name(self.dtype()), "'");
  auto k = triple(kernel_size, "kernel_size", "lp_pool3d");
  Tensor out = avg_pool3d(self.pow(norm_type), k, stride, {0, 0, 0}, ceil_mode, true, std::nullopt);
  return (out.sign() * relu(out.abs())).mul(double(k[0] * k[1] * k[2])).pow(1.0 / norm_type);
}

Tensor adaptive_avg_pool3d(const Tensor& self, IntArrayRef output_size) {
  const char* op = "adaptive_avg_pool3d";
  auto [x, batched] = batched5(self, op);
  auto o = adaptive_sizes(x, output_size, op);
  const int64_t n = x.size(0), depth = x.size(2);
  Tensor y = unfold_depth(named(op, [&] { return adaptive_avg_pool2d(fold_depth(x), {o[1], o[2]}); }), n, depth);
  if (o[0] == 0) return unbatched(y.slice(2, 0, 0).contiguous(), batched);
  std::vector<Tensor> slices;
  for (int64_t i = 0; i < o[0]; ++i) {
    auto [a, b] = adaptive_range(i, depth, o[0]);
    slices.push_back(y.slice(2, a, b).mean(2));
  }
  return unbatched(stack(slices, 2), batched);
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d(const Tensor& self, IntArrayRef output_size) {
  const char* op = "adaptive_max_pool3d";
  auto [x, batched] = batched5(self, op);
  auto o = adaptive_sizes(x, output_size, op);
  const int64_t n = x.size(0), depth = x.size(2), h = x.size(3), w = x.size(4);
  auto [v2, i2] = named(op, [&] { return adaptive_max_pool2d(fold_depth(x), {o[1], o[2]}); });
  v2 = unfold_depth(v2, n, depth);
  Tensor i3 = unfold_depth(i2, n, depth) + arange(depth, std::nullopt, 1, kInt64, x.device()).reshape({1, 1, depth, 1, 1}) * (h * w);
  if (o[0] == 0)
    return {unbatched(v2.slice(2, 0, 0).contiguous(), batched), unbatched(i3.slice(2, 0, 0).contiguous(), batched)};
  std::vector<Tensor> values, indices;
  for (int64_t i = 0; i < o[0]; ++i) {
    auto [a, b] = adaptive_range(i, depth, o[0]);
    Tensor win = v2.slice(2, a, b);
    Tensor pick = win.argmax(2, true);
    values.push_back(win.gather(2, pick).squeeze(IntArrayRef{2}));
    indices.push_back(i3.slice(2, a, b).gather(2, pick).squeeze(IntArrayRef{2}));
  }
  return {unbatched(stack(values, 2), batched), unbatched(stack(indices, 2), batched)};
}

}  // namespace kindle
