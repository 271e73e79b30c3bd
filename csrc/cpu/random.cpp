#include <cmath>

#include "cpu/parallel.h"
#include "ops/kernels.h"

namespace kindle::cpu {
namespace {

inline double u01_53(const Philox4& r) {  // uniform in [0, 1) with 53 random bits
  uint64_t x = (uint64_t(r.v[0]) << 32 | r.v[1]) >> 11;
  return double(x) * 0x1.0p-53;
}
inline float u01_24(uint32_t w) { return float(w >> 8) * 0x1.0p-24f; }

void random_kernel(const Tensor& out, RandomKind kind, double a, double b, uint64_t seed, uint64_t offset) {
  dispatch_all(out.dtype(), "random", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    parallel_for(0, out.numel(), 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        Philox4 r = philox(seed, offset + uint64_t(i));
        double v;
        switch (kind) {
          case RandomKind::Uniform:
            v = out.dtype() == kFloat64 ? u01_53(r) : double(u01_24(r.v[0]));
            v = a + (b - a) * v;
            if (v >= b && b > a) v = std::nextafter(b, a);  // rounding must not reach `to`
            break;
          case RandomKind::Normal: {
            double u1 = (double(r.v[2]) + 1.0) * 0x1.0p-32, u2 = u01_53(r);
            v = a + b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
            break;
          }
          case RandomKind::Bernoulli: v = u01_53(r) < a ? 1.0 : 0.0; break;
          case RandomKind::Integer: {
            uint64_t range = uint64_t(int64_t(b) - int64_t(a));
            uint64_t x = uint64_t(r.v[0]) << 32 | r.v[1];
            *reinterpret_cast<T*>(p + i) = T(int64_t(a) + int64_t(range ? x % range : 0));
            continue;
          }
          case RandomKind::Exponential: v = -std::log1p(-u01_53(r)) / a; break;
        }
        p[i] = T(v);
      }
    });
  });
}

void range_kernel(const Tensor& out, double start, double step, double end, bool linspace) {
  int64_t n = out.numel();
  dispatch_numeric(out.dtype(), "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    int64_t half = n == 1 ? 1 : n / 2;  // one step of linspace is its start
    const bool exact_int = !linspace && start == std::floor(start) && step == std::floor(step);
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        double v = (!linspace || i < half) ? start + double(i) * step : end - double(n - 1 - i) * step;
        if constexpr (std::is_integral_v<T>) p[i] = T(exact_int ? int64_t(start) + i * int64_t(step) : int64_t(v));
        else p[i] = T(v);
      }
    });
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KernelStub<void (*)(const Tensor&, RandomKind, double, double, uint64_t, uint64_t)> random_stub{"random"};
KernelStub<void (*)(const Tensor&, double, double, double, bool)> range_stub{"arange"};
KINDLE_REGISTER_KERNEL(random_stub, DeviceType::CPU, &cpu::random_kernel);
KINDLE_REGISTER_KERNEL(range_stub, DeviceType::CPU, &cpu::range_kernel);
}  // namespace kindle
