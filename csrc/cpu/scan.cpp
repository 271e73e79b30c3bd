// Running scans along contiguous rows [M, R] that carry more than a sum: the running max/min
// with the index where it was reached (cummax, cummin), and the running log-sum-exp.
// Each row is scanned in order by one thread, so results never depend on the thread count.
#include <complex>
#include <cmath>

#include "cpu/loops.h"
#include "cpu/parallel.h"
#include "ops/scan_kernels.h"

namespace kindle::cpu {
namespace {

// The running extreme: a new value takes over when it is at least as extreme (the latest index
// wins a tie) or NaN; once NaN, only another NaN moves the index (as in PyTorch).
void cum_extreme_kernel(const Tensor& in, const Tensor& values, const Tensor& indices, bool is_max) {
  int64_t R = in.size(-1), M = R ? in.numel() / R : 0;
  dispatch_all(in.dtype(), is_max ? "cummax" : "cummin", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = opmath_t<T>;
    const T* p = static_cast<const T*>(in.data_ptr());
    T* v = static_cast<T*>(values.data_ptr());
    int64_t* ix = static_cast<int64_t*>(indices.data_ptr());
    parallel_for(0, M, rows_grain(R), [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) {
        const T* row = p + m * R;
        C best = C(row[0]);
        int64_t at = 0;
        for (int64_t r = 0; r < R; ++r) {
          C x = C(row[r]);
          bool take = x != x || (best == best && (is_max ? x >= best : x <= best));
          if (take) { best = x; at = r; }
          v[m * R + r] = T(best);
          ix[m * R + r] = at;
        }
      }
    });
  });
}

// log(exp(a) + exp(b)) without overflow: equal infinities (and -inf with anything) need care.
template <typename A>
A log_add_exp(A a, A b) {
  if (a != a || b != b) return a + b;
  A hi = std::max(a, b), lo = std::min(a, b);
  if (std::isinf(hi) || lo == -INFINITY) return hi;
  return hi + std::log1p(std::exp(lo - hi));
}

// The complex version: ordered by real part; log1p(z) = log|1 + z| + i arg(1 + z) with |1 + z|^2
// = 1 + x(2 + x) + y^2 kept accurate for small z.
template <typename C>
C log_add_exp_complex(C a, C b) {
  using A = typename C::value_type;
  if (std::isnan(a.real()) || std::isnan(b.real()) || std::isnan(a.imag()) || std::isnan(b.imag())) return a + b;
  C hi = a.real() >= b.real() ? a : b, lo = a.real() >= b.real() ? b : a;
  if (lo.real() == -INFINITY) return hi;
  if (std::isinf(hi.real())) return hi;
  C z = std::exp(lo - hi);
  A x = z.real(), y = z.imag();
  return hi + C(A(0.5) * std::log1p(x * (2 + x) + y * y), std::atan2(y, 1 + x));
}

template <typename C>
void logcumsumexp_complex(const Tensor& in, const Tensor& out, int64_t M, int64_t R) {
  const C* p = static_cast<const C*>(in.data_ptr());
  C* o = static_cast<C*>(out.data_ptr());
  parallel_for(0, M, rows_grain(R), [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) {
      C acc(-INFINITY, 0);
      for (int64_t r = 0; r < R; ++r) o[m * R + r] = acc = log_add_exp_complex(acc, p[m * R + r]);
    }
  });
}

void logcumsumexp_kernel(const Tensor& in, const Tensor& out) {
  int64_t R = in.size(-1), M = R ? in.numel() / R : 0;
  if (in.dtype() == kComplex64) return logcumsumexp_complex<c64>(in, out, M, R);
  if (in.dtype() == kComplex128) return logcumsumexp_complex<c128>(in, out, M, R);
  dispatch_floating(in.dtype(), "logcumsumexp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* p = static_cast<const T*>(in.data_ptr());
    T* o = static_cast<T*>(out.data_ptr());
    parallel_for(0, M, rows_grain(R), [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) {
        A acc = -INFINITY;
        for (int64_t r = 0; r < R; ++r) {
          acc = log_add_exp(acc, A(p[m * R + r]));
          o[m * R + r] = T(acc);
        }
      }
    });
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(cum_extreme_stub, DeviceType::CPU, &cpu::cum_extreme_kernel);
KINDLE_REGISTER_KERNEL(logcumsumexp_stub, DeviceType::CPU, &cpu::logcumsumexp_kernel);
}  // namespace kindle
