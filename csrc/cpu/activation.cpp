// Fused activation backward kernels (see ops/activation_kernels.h), one pass each.
#include <algorithm>
#include <cmath>

#include "cpu/parallel.h"
#include "cpu/vec_math.h"
#include "ops/activation_kernels.h"

namespace kindle::cpu {
namespace {

// erf for gelu: float32 uses gelu's own approximation (as the forward does).
template <typename T>
inline T gelu_erf_of(T z) {
  if constexpr (std::is_same_v<T, float>) return vm::gelu_erf(z);
  else return vm::erf(z);
}

template <typename T>
void gelu_backward(const Tensor& grad, const Tensor& x, const Tensor& out, bool tanh) {
  const T* g = static_cast<const T*>(grad.data_ptr());
  const T* v = static_cast<const T*>(x.data_ptr());
  T* o = static_cast<T*>(out.data_ptr());
  const int64_t n = x.numel();
  // chunk boundaries at multiples of 64, as in for_each_run: the same elements in the vector body
  // whatever the thread count
  parallel_for(0, n, kGrainSize, [&](int64_t lo_in, int64_t hi_in) {
    const int64_t lo = lo_in - lo_in % 64, hi = hi_in >= n ? n : hi_in - hi_in % 64;
    if (tanh) {
      const T k = T(0.79788456080286536), c = T(0.044715);
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        const T xi = v[i], x2 = xi * xi;
        const T t = vm::tanh(k * (xi + c * x2 * xi));
        o[i] = g[i] * (T(0.5) * (T(1) + t) + T(0.5) * xi * (T(1) - t * t) * k * (T(1) + T(3) * c * x2));
      }
      return;
    }
    // gelu'(x) = Phi(x) + x * phi(x)
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) {
      const T xi = v[i];
      const T e = gelu_erf_of(xi * T(0.70710678118654752));
      const T pdf = vm::exp(T(-0.5) * xi * xi) * T(0.3989422804014327);
      o[i] = g[i] * (T(0.5) * (T(1) + e) + xi * pdf);
    }
  });
}

template <typename T>
void softmax_backward(const Tensor& grad, const Tensor& y, const Tensor& out, int64_t rows, int64_t cols, bool log) {
  const T* gp = static_cast<const T*>(grad.data_ptr());
  const T* yp = static_cast<const T*>(y.data_ptr());
  T* op = static_cast<T*>(out.data_ptr());
  parallel_for(0, rows, rows_grain(cols), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* __restrict g = gp + r * cols;
      const T* __restrict yr = yp + r * cols;
      T* __restrict o = op + r * cols;
      T s = 0;
      if (log) {
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < cols; ++j) s += g[j];
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) o[j] = g[j] - vm::exp(yr[j]) * s;
      } else {
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < cols; ++j) s += g[j] * yr[j];
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) o[j] = yr[j] * (g[j] - s);
      }
    }
  });
}

void softmax_backward_kernel(const Tensor& grad, const Tensor& y, const Tensor& out, int64_t rows, int64_t cols,
                             bool log) {
  if (y.dtype() == kFloat64) softmax_backward<double>(grad, y, out, rows, cols, log);
  else softmax_backward<float>(grad, y, out, rows, cols, log);
}

void gelu_backward_kernel(const Tensor& grad, const Tensor& x, const Tensor& out, bool tanh) {
  if (x.dtype() == kFloat64) gelu_backward<double>(grad, x, out, tanh);
  else gelu_backward<float>(grad, x, out, tanh);
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(gelu_backward_stub, DeviceType::CPU, &cpu::gelu_backward_kernel);
KINDLE_REGISTER_KERNEL(softmax_backward_stub, DeviceType::CPU, &cpu::softmax_backward_kernel);
}  // namespace kindle
