// interpolate: separable, one (out, in) weight matrix per spatial dim applied with a GEMM, which
// covers every mode (nearest, nearest-exact, linear, cubic, area, antialiased) with one
// differentiable path: the gradient is the transposed matrix.
#include <cmath>

#include "kindle/autocast.h"
#include "nn/common.h"

namespace kindle {

namespace {

double cubic_near(double x, double A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }        // |x| <= 1
double cubic_far(double x, double A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }    // 1 < |x| < 2
double cubic_filter(double x, double A) {
  x = std::abs(x);
  return x <= 1 ? cubic_near(x, A) : x < 2 ? cubic_far(x, A) : 0.0;
}

// Source coordinate of output i (PyTorch's area_pixel_compute_source_index).
double source(int64_t i, int64_t in, int64_t out, double r, bool align_corners, bool cubic) {
  if (align_corners) return out > 1 ? double(i) * double(in - 1) / double(out - 1) : 0.0;
  double s = (double(i) + 0.5) * r - 0.5;
  return cubic ? s : std::max(s, 0.0);
}

// `single`: the ratio rounded to float32, as torch computes it for every input but float64 (a
// weight on a rounding boundary of a uint8 result depends on it).
Tensor weights(int64_t in, int64_t out, std::string_view mode, bool align_corners, std::optional<double> scale,
               bool antialias, bool single) {
  Tensor m = zeros({out, in}, kFloat64);
  double* w = static_cast<double*>(m.raw_data_ptr());
  auto at = [&](int64_t i, int64_t j) -> double& { return w[i * in + std::clamp<int64_t>(j, 0, in - 1)]; };
  double r = scale && *scale > 0 ? 1.0 / *scale : double(in) / double(out);
  if (single) r = double(float(r));
  bool linear = mode == "linear" || mode == "bilinear" || mode == "trilinear";
  bool cubic = mode == "bicubic";
  for (int64_t i = 0; i < out; ++i) {
    if (mode == "nearest") {
      at(i, std::min<int64_t>(int64_t(std::floor(float(i) * float(r))), in - 1)) = 1;
    } else if (mode == "nearest-exact") {
      at(i, std::min<int64_t>(int64_t(std::floor((double(i) + 0.5) * r)), in - 1)) = 1;
    } else if (mode == "area") {
      int64_t a = (i * in) / out, b = ((i + 1) * in + out - 1) / out;
      for (int64_t j = a; j < b; ++j) at(i, j) = 1.0 / double(b - a);
    } else if (antialias) {
      // a filter widened by the downscale ratio (not narrowed when upscaling), normalised over the
      // taps inside the input: PyTorch's antialias weights, on every axis once antialias is asked
      // for (bicubic then uses A = -0.5 even where it upsamples)
      const double widen = std::max(r, 1.0);
      double support = (cubic ? 2.0 : 1.0) * widen, center = r * (double(i) + 0.5);
      int64_t lo = std::max<int64_t>(int64_t(center - support + 0.5), 0);
      int64_t hi = std::min<int64_t>(int64_t(center + support + 0.5), in);
      double total = 0;
      std::vector<double> ws;
      for (int64_t j = lo; j < hi; ++j) {
        double x = (double(j) - center + 0.5) / widen;
        double f = cubic ? cubic_filter(x, -0.5) : std::max(0.0, 1.0 - std::abs(x));
        ws.push_back(f);
        total += f;
      }
      for (int64_t j = lo; j < hi; ++j) at(i, j) += total != 0 ? ws[size_t(j - lo)] / total : 0.0;
    } else if (linear) {
      double s = source(i, in, out, r, align_corners, false);
      int64_t a = std::min<int64_t>(int64_t(std::floor(s)), in - 1);
      double l = s - double(a);
      at(i, a) += 1 - l;
      at(i, std::min<int64_t>(a + 1, in - 1)) += l;
    } else {  // bicubic
      double s = source(i, in, out, r, align_corners, true);
      int64_t a = int64_t(std::floor(s));
      double t = s - double(a);
      const double A = -0.75;
      double c[4] = {cubic_far(t + 1, A), cubic_near(t, A), cubic_near(1 - t, A), cubic_far(2 - t, A)};
      for (int k = 0; k < 4; ++k) at(i, a - 1 + k) += c[k];
    }
  }
  return m;
}

// One axis of a uint8 image resampled as torch's separable uint8 kernels do it, so that results
// match to the level: the weights rounded to int16 at the most fractional bits that keep the
// largest in range, sums in int32 from half a unit, shifted back and saturated to a byte.
Tensor byte_pass(const Tensor& x, int64_t d, const Tensor& weight) {
  const int64_t out = weight.size(0), in = weight.size(1);
  const double* w = weight.const_data_ptr<double>();
  double w_max = 0;
  for (int64_t k = 0; k < out * in; ++k) w_max = std::max(w_max, w[k]);
  int bits = 0;
  for (; bits < 15; ++bits)
    if (int(0.5 + w_max * double(1 << (bits + 1))) >= (1 << 15)) break;
  std::vector<int32_t> q(size_t(out * in));
  std::vector<int64_t> first(static_cast<size_t>(out)), last(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    first[size_t(o)] = in, last[size_t(o)] = 0;
    for (int64_t j = 0; j < in; ++j) {
      double v = w[o * in + j] * double(1 << bits);
      int32_t r = int32_t(v < 0 ? v - 0.5 : v + 0.5);
      q[size_t(o * in + j)] = r;
      if (r != 0) first[size_t(o)] = std::min(first[size_t(o)], j), last[size_t(o)] = j + 1;
    }
  }
  Tensor src = x.movedim({d}, {-1}).contiguous();
  const int64_t rows = in ? src.numel() / in : 0;
  Tensor dst = empty_tensor({rows * out}, kUInt8);
  const uint8_t* sp = src.const_data_ptr<uint8_t>();
  uint8_t* dp = static_cast<uint8_t*>(dst.raw_data_ptr());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      int32_t acc = bits > 0 ? 1 << (bits - 1) : 0;
      for (int64_t j = first[size_t(o)]; j < last[size_t(o)]; ++j) acc += int32_t(sp[r * in + j]) * q[size_t(o * in + j)];
      dp[r * out + o] = uint8_t(std::clamp(acc >> bits, 0, 255));
    }
  DimVector shape;
  for (int64_t v : src.sizes()) shape.push_back(v);
  shape.back() = out;
  return dst.view(shape).movedim({-1}, {d});
}

}  // namespace

Tensor interpolate(const Tensor& self, IntArrayRef output_size, std::string_view mode,
                   std::optional<bool> align_corners, std::optional<double> scale_d, std::optional<double> scale_h,
                   std::optional<double> scale_w, bool antialias) {
  autocast::Exclude no_autocast;  // (not on PyTorch's autocast lists: its matrix product runs as given)
  int64_t spatial = self.dim() - 2;
  KINDLE_CHECK_NOT_IMPLEMENTED(spatial >= 1 && spatial <= 3, "interpolate: got a ", self.dim(), "-D input; 3-D, 4-D "
                               "and 5-D inputs (N, C, spatial...) are supported");
  KINDLE_CHECK(int64_t(output_size.size()) == spatial, "interpolate: expected ", spatial,
               " output sizes for input of shape ", self.sizes(), ", got ", output_size);
  IntArrayRef in_spatial = self.sizes().slice(2, size_t(spatial));
  bool positive = true;
  for (int64_t s : output_size) positive &= s > 0;
  for (int64_t s : in_spatial) positive &= s > 0;
  KINDLE_CHECK(positive, "interpolate: Input and output sizes should be greater than 0, but got input ",
               in_spatial, " and output ", output_size);
  bool linear_mode = (mode == "linear" && spatial == 1) || (mode == "bilinear" && spatial == 2) ||
                     (mode == "trilinear" && spatial == 3) || (mode == "bicubic" && spatial == 2);
  KINDLE_CHECK_NOT_IMPLEMENTED(mode == "nearest" || mode == "nearest-exact" || mode == "area" || linear_mode,
                               "interpolate: got ", self.dim(), "D input with mode '", mode, "'");
  KINDLE_CHECK_VALUE(linear_mode || !align_corners, "interpolate: align_corners option can only be set with the "
                     "interpolating modes: linear | bilinear | bicubic | trilinear");
  KINDLE_CHECK_VALUE(!antialias || ((mode == "bilinear" || mode == "bicubic") && spatial == 2), "interpolate: "
                     "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as input");
  KINDLE_CHECK_NOT_IMPLEMENTED(!antialias || !align_corners.value_or(false),
                               "interpolate: anti-alias is supported without align_corners");
  // uint8 images, as torch takes them: nearest modes pick values; bilinear and bicubic blend in
  // fixed point as torch's kernels (byte_pass).
  // (An integer input in any other mode is NotImplementedError, as torch's missing kernels.)
  const bool nearest = mode == "nearest" || mode == "nearest-exact";
  const bool byte_blend = self.dtype() == kUInt8 && spatial == 2 && (mode == "bilinear" || mode == "bicubic");
  KINDLE_CHECK_NOT_IMPLEMENTED(self.is_floating_point() || (self.dtype() == kUInt8 && (nearest || byte_blend)),
               "interpolate: \"", mode, "\" is not implemented for ", self.dtype(), " input (floating point inputs "
               "take every mode; uint8 takes nearest, nearest-exact, and 2-D bilinear and bicubic)");
  KINDLE_CHECK_NOT_IMPLEMENTED(!(antialias && (self.dtype() == kFloat16 || self.dtype() == kBFloat16)),
                               "interpolate: antialiasing is not implemented for ", self.dtype(),
                               " (as in torch: convert to float32)");
  if (self.dtype() == kFloat16 || self.dtype() == kBFloat16)  // blend in float32, round once
    return interpolate(self.to(kFloat32), output_size, mode, align_corners, scale_d, scale_h, scale_w, antialias)
        .to(self.dtype());
  if (byte_blend) {  // along the width, then the height, a byte image in between (bicubic saturates there)
    KINDLE_CHECK_NOT_IMPLEMENTED(self.device().is_cpu(), "interpolate: uint8 input on ", self.device());
    Tensor y = byte_pass(self, 3, weights(self.size(3), output_size[1], mode, align_corners.value_or(false), scale_w,
                                          antialias, true));
    return byte_pass(y, 2, weights(self.size(2), output_size[0], mode, align_corners.value_or(false), scale_h,
                                   antialias, true)).contiguous();
  }
  std::optional<double> scales[3] = {scale_d, scale_h, scale_w};
  Tensor y = self;
  for (int64_t k = 0; k < spatial; ++k) {
    int64_t d = 2 + k;
    std::optional<double> sc = scales[3 - spatial + k];
    std::string_view m = mode == "area" ? "area" : mode;
    Tensor w = weights(y.size(d), output_size[size_t(k)], m, align_corners.value_or(false),
                       mode == "area" ? std::nullopt : sc, antialias, y.dtype() != kFloat64)
                    ._to_device(y.device());  // built on the host
    if (mode == "nearest" || mode == "nearest-exact") {
      // A copy of the chosen sources: a product with the 0/1 weights would turn 0 * inf into NaN.
      y = y.index_select(d, w.argmax(1));
      continue;
    }
    y = matmul(y.movedim({d}, {-1}), w.to(y.dtype()).t()).movedim({-1}, {d});
  }
  return y.contiguous();
}

}  // namespace kindle
