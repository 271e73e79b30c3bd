// max_pool2d (see ops/rnn_kernels.h): a direct loop over each plane's windows, one plane per task.
#include <cmath>
#include <limits>

#include "cpu/parallel.h"
#include "ops/rnn_kernels.h"

namespace kindle::cpu {
namespace {

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else if constexpr (std::is_integral_v<T>) return false;
  else return std::isnan(float(v));
}

template <typename T>
void max_pool_planes(const T* x, T* vals, int64_t* idx, const WindowGeom& g) {
  const int64_t planes = g.N * g.C, HW = g.H * g.W, L = g.oh * g.ow;
  parallel_for(0, planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(L, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const T* xp = x + p * HW;
      T* vp = vals + p * L;
      int64_t* ip = idx + p * L;
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          int64_t best = -1;
          T bv{};
          bool nan = false;
          for (int64_t ki = 0; ki < g.kh && !nan; ++ki) {
            const int64_t ih = oy * g.sh - g.ph + ki * g.dh;
            if (ih < 0 || ih >= g.H) continue;
            for (int64_t kj = 0; kj < g.kw; ++kj) {
              const int64_t iw = ox * g.sw - g.pw + kj * g.dw;
              if (iw < 0 || iw >= g.W) continue;
              const T v = xp[ih * g.W + iw];
              if (is_nan(v)) {
                best = ih * g.W + iw, bv = v, nan = true;
                break;
              }
              if (best < 0 || v > bv) best = ih * g.W + iw, bv = v;
            }
          }
          vp[oy * g.ow + ox] = bv;
          ip[oy * g.ow + ox] = best;
        }
    }
  });
}

void max_pool2d_kernel(const Tensor& x, const Tensor& values, const Tensor& indices, const WindowGeom& g) {
  dispatch_all(x.dtype(), "max_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      KINDLE_CHECK(false, "max_pool2d: \"max_pool2d\" not implemented for 'Bool'");
    } else {
      max_pool_planes<T>(static_cast<const T*>(x.data_ptr()), static_cast<T*>(values.data_ptr()),
                         static_cast<int64_t*>(indices.data_ptr()), g);
    }
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const WindowGeom&)> max_pool2d_stub{"max_pool2d"};
KINDLE_REGISTER_KERNEL(max_pool2d_stub, DeviceType::CPU, &cpu::max_pool2d_kernel);
}  // namespace kindle
