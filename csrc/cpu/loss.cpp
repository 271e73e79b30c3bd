// Cross entropy row kernels (see ops/loss_kernels.h): the forward reads the logits once per row
// (max, then the sum of exponentials), the backward writes softmax minus the one-hot target,
// scaled, in one pass; log_softmax + nll_loss made about four passes and a zero-filled gradient.
#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/parallel.h"
#include "cpu/vec_math.h"
#include "ops/loss_kernels.h"

namespace kindle::cpu {
namespace {

template <typename T>
void forward(const Tensor& x, const Tensor& target, int64_t ignore_index, const Tensor& lse, const Tensor& loss) {
  const int64_t N = x.size(0), C = x.size(1);
  const T* xp = static_cast<const T*>(x.data_ptr());
  const int64_t* tp = static_cast<const int64_t*>(target.data_ptr());
  T* lp = static_cast<T*>(lse.data_ptr());
  T* op = static_cast<T*>(loss.data_ptr());
  parallel_for(0, N, rows_grain(C), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* __restrict row = xp + r * C;
      T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
      for (int64_t j = 0; j < C; ++j) m = row[j] > m ? row[j] : m;  // (std::max does not vectorise)
      if (std::isinf(m)) m = m > 0 ? m : T(0);  // as softmax: no inf - inf below
      T s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t j = 0; j < C; ++j) s += vm::exp(row[j] - m);
      const T l = m + std::log(s);
      lp[r] = l;
      op[r] = tp[r] == ignore_index ? T(0) : l - row[tp[r]];
    }
  });
}

template <typename T>
void backward(const Tensor& x, const Tensor& target, const Tensor& lse, const Tensor& coef, const Tensor& dx) {
  const int64_t N = x.size(0), C = x.size(1);
  const T* xp = static_cast<const T*>(x.data_ptr());
  const int64_t* tp = static_cast<const int64_t*>(target.data_ptr());
  const T* lp = static_cast<const T*>(lse.data_ptr());
  const T* cp = static_cast<const T*>(coef.data_ptr());
  T* dp = static_cast<T*>(dx.data_ptr());
  parallel_for(0, N, rows_grain(C), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* __restrict row = xp + r * C;
      T* __restrict d = dp + r * C;
      const T c = cp[r], l = lp[r];
      if (c == T(0)) {
        std::fill(d, d + C, T(0));
        continue;
      }
#pragma omp simd
      for (int64_t j = 0; j < C; ++j) d[j] = c * vm::exp(row[j] - l);
      d[tp[r]] -= c;
    }
  });
}

void cross_entropy_kernel(const Tensor& x, const Tensor& target, int64_t ignore_index, const Tensor& lse,
                          const Tensor& loss) {
  if (x.dtype() == kFloat64) forward<double>(x, target, ignore_index, lse, loss);
  else forward<float>(x, target, ignore_index, lse, loss);
}
void cross_entropy_backward_kernel(const Tensor& x, const Tensor& target, const Tensor& lse, const Tensor& coef,
                                   const Tensor& dx) {
  if (x.dtype() == kFloat64) backward<double>(x, target, lse, coef, dx);
  else backward<float>(x, target, lse, coef, dx);
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(cross_entropy_stub, DeviceType::CPU, &cpu::cross_entropy_kernel);
KINDLE_REGISTER_KERNEL(cross_entropy_backward_stub, DeviceType::CPU, &cpu::cross_entropy_backward_kernel);
}  // namespace kindle
