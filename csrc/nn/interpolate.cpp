// interpolate (nearest, linear, bilinear): separable, one gather-and-blend per spatial dim.
#include <cmath>

#include "nn/common.h"

namespace kindle {

namespace {

Tensor index_tensor(const std::vector<int64_t>& v) {
  Tensor t = empty_tensor({int64_t(v.size())}, kInt64);
  std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
  return t;
}

// ratio used to map output to input coordinates: 1/scale when the caller gave a scale factor
double ratio_of(int64_t in, int64_t out, std::optional<double> scale) {
  if (scale && *scale > 0) return 1.0 / *scale;
  return double(in) / double(out);
}

Tensor nearest_dim(const Tensor& x, int64_t d, int64_t out, std::optional<double> scale) {
  int64_t in = x.size(d);
  double r = ratio_of(in, out, scale);
  std::vector<int64_t> idx(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) idx[size_t(i)] = std::min<int64_t>(int64_t(std::floor(float(i) * float(r))), in - 1);
  return x.index_select(d, index_tensor(idx));
}

Tensor linear_dim(const Tensor& x, int64_t d, int64_t out, bool align_corners, std::optional<double> scale) {
  int64_t in = x.size(d);
  std::vector<int64_t> i0(static_cast<size_t>(out)), i1(static_cast<size_t>(out));
  Tensor w1 = empty_tensor({out}, kFloat64);
  double* w = w1.data_ptr<double>();
  double r = ratio_of(in, out, scale);
  for (int64_t i = 0; i < out; ++i) {
    double src = align_corners ? (out > 1 ? double(i) * double(in - 1) / double(out - 1) : 0.0)
                               : std::max((double(i) + 0.5) * r - 0.5, 0.0);
    int64_t a = std::min<int64_t>(int64_t(std::floor(src)), in - 1);
    i0[size_t(i)] = a;
    i1[size_t(i)] = std::min<int64_t>(a + 1, in - 1);
    w[i] = src - double(a);
  }
  DimVector wshape(size_t(x.dim()), 1);
  wshape[size_t(d)] = out;
  Tensor lam = w1.to(x.dtype()).reshape(wshape);
  return x.index_select(d, index_tensor(i0)) * (1 - lam) + x.index_select(d, index_tensor(i1)) * lam;
}

}  // namespace

Tensor interpolate(const Tensor& self, IntArrayRef output_size, std::string_view mode,
                   std::optional<bool> align_corners, std::optional<double> scale_h, std::optional<double> scale_w) {
  int64_t spatial = self.dim() - 2;
  KINDLE_CHECK(spatial == 1 || spatial == 2, "interpolate: expected a 3-D (N, C, L) or 4-D (N, C, H, W) input, got ",
               self.sizes());
  KINDLE_CHECK(int64_t(output_size.size()) == spatial, "interpolate: expected ", spatial,
               " output sizes for input of shape ", self.sizes(), ", got ", output_size);
  for (int64_t s : output_size) KINDLE_CHECK(s > 0, "interpolate: output sizes must be positive, got ", output_size);
  KINDLE_CHECK(self.is_floating_point(), "interpolate: expected a floating point input, got ", self.dtype());
  bool linear = mode == "linear" || mode == "bilinear";
  KINDLE_CHECK_NOT_IMPLEMENTED(mode == "nearest" || (mode == "linear" && spatial == 1) ||
                                   (mode == "bilinear" && spatial == 2),
                               "interpolate: got ", self.dim(), "D input with mode '", mode,
                               "'; supported: nearest (3D, 4D), linear (3D), bilinear (4D)");
  KINDLE_CHECK_VALUE(linear || !align_corners, "interpolate: align_corners option can only be set with the "
                     "interpolating modes: linear | bilinear | bicubic | trilinear");
  std::optional<double> scales[2] = {spatial == 1 ? scale_w : scale_h, scale_w};
  Tensor y = self;
  for (int64_t k = 0; k < spatial; ++k) {
    int64_t d = 2 + k;
    std::optional<double> sc = spatial == 1 ? scale_w : scales[k];
    y = linear ? linear_dim(y, d, output_size[size_t(k)], align_corners.value_or(false), sc)
               : nearest_dim(y, d, output_size[size_t(k)], sc);
  }
  return y;
}

}  // namespace kindle
