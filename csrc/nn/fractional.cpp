// Fractional max pooling (Graham, 2014; torch.nn.functional.fractional_max_pool2d/3d): max over
// windows whose starts follow a pseudo-random sequence per (batch, channel) plane, generated from
// `random_samples` (N, C, dims) in [0, 1) as PyTorch's kernels generate them, so the same samples
// give PyTorch's windows. The window's first maximum (NaN first) is the output and its flat index
// in the plane the returned index; the derivative scatters the gradient to those indices.
#include "kindle/autograd.h"
#include "kindle/factories.h"
#include "kindle/operators.h"
#include "kindle/ops.h"

namespace kindle {

namespace {

// Window starts (N, C, out) along one dim: PyTorch's generate_intervals, in the samples' dtype.
Tensor intervals(const Tensor& sample, int64_t in, int64_t out, int64_t pool) {
  std::vector<int64_t> shape(sample.sizes().begin(), sample.sizes().end());
  shape.push_back(1);
  Tensor last = full(shape, in - pool, TensorOptions(kInt64).device(sample.device()));
  if (out == 1) return last;
  Tensor alpha = full({}, double(in - pool), TensorOptions(sample.dtype()).device(sample.device())) / double(out - 1);
  Tensor i = arange(out - 1, TensorOptions(sample.dtype()).device(sample.device()));
  Tensor s = sample.unsqueeze(-1);
  Tensor seq = ((i + s) * alpha).to(kInt64) - (s * alpha).to(kInt64);
  return cat({seq, last}, -1);
}

std::tuple<Tensor, Tensor> fractional(const Tensor& input, IntArrayRef k, IntArrayRef out, const Tensor& samples,
                                      int64_t nd) {
  const std::string op = "fractional_max_pool" + std::to_string(nd) + "d()";
  KINDLE_CHECK(input.dim() == nd + 1 || input.dim() == nd + 2, op, ": Expected ", nd + 1, "D or ", nd + 2,
               "D tensor, but got: ", input.sizes());
  KINDLE_CHECK(int64_t(k.size()) == nd && int64_t(out.size()) == nd, op, ": expected ", nd,
               " values for kernel_size and output_size");
  const bool batched = input.dim() == nd + 2;
  Tensor x = batched ? input : input.unsqueeze(0);
  const int64_t n = x.size(0), c = x.size(1);
  static const char* names[] = {"time", "height", "width"};
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t size = x.size(2 + d);
    KINDLE_CHECK(out[size_t(d)] > 0 && k[size_t(d)] > 0, op, ": kernel_size and output_size must be greater than 0");
    const char* name = names[3 - nd + d];
    KINDLE_CHECK(out[size_t(d)] + k[size_t(d)] - 1 <= size, op, ": pool ", name, " ", k[size_t(d)],
                 " too large relative to input ", name, " ", size);
  }
  KINDLE_CHECK(samples.dim() == 3 && samples.size(0) == n && samples.size(1) == c && samples.size(2) == nd, op,
               ": expected _random_samples of shape (", n, ", ", c, ", ", nd, "), got ", samples.sizes());
  autograd::AutoGradMode no_grad(false);
  // PyTorch's sample order: (w, h) for 2-d, (t, h, w) for 3-d.
  std::vector<int64_t> strides(size_t(nd), 1);
  for (int64_t d = nd - 2; d >= 0; --d) strides[size_t(d)] = strides[size_t(d + 1)] * x.size(3 + d);
  Tensor flat;  // flat index of every window element: (N, C, *out, *k)
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t which = nd == 2 ? 1 - d : d;
    Tensor starts = intervals(samples.select(2, which), x.size(2 + d), out[size_t(d)], k[size_t(d)]);
    Tensor offs = starts.unsqueeze(-1) + arange(k[size_t(d)], TensorOptions(kInt64).device(starts.device()));
    std::vector<int64_t> shape(size_t(2 + 2 * nd), 1);
    shape[0] = n;
    shape[1] = c;
    shape[size_t(2 + d)] = out[size_t(d)];
    shape[size_t(2 + nd + d)] = k[size_t(d)];
    Tensor term = (offs * strides[size_t(d)]).reshape(shape);
    flat = flat.defined() ? flat + term : term;
  }
  std::vector<int64_t> full_shape{n, c}, out_shape{n, c};
  full_shape.insert(full_shape.end(), out.begin(), out.end());
  full_shape.insert(full_shape.end(), k.begin(), k.end());
  out_shape.insert(out_shape.end(), out.begin(), out.end());
  std::vector<int64_t> window_shape = out_shape;
  window_shape.push_back(-1);
  flat = flat.expand(full_shape).reshape({n, c, -1});
  Tensor values = x.reshape({n, c, -1}).gather(2, flat).reshape(window_shape);
  Tensor pick = values.argmax(-1, true);
  Tensor result = values.gather(-1, pick).squeeze(IntArrayRef{-1});
  Tensor indices = flat.reshape(window_shape).gather(-1, pick).squeeze(IntArrayRef{-1});
  if (!batched) return {result.squeeze(IntArrayRef{0}), indices.squeeze(IntArrayRef{0})};
  return {result, indices};
}

}  // namespace

std::tuple<Tensor, Tensor> native_fractional_max_pool2d(const Tensor& self, IntArrayRef kernel_size,
                                                        IntArrayRef output_size, const Tensor& random_samples) {
  return fractional(self, kernel_size, output_size, random_samples, 2);
}

std::tuple<Tensor, Tensor> native_fractional_max_pool3d(const Tensor& self, IntArrayRef kernel_size,
                                                        IntArrayRef output_size, const Tensor& random_samples) {
  return fractional(self, kernel_size, output_size, random_samples, 3);
}

}  // namespace kindle
