// max_pool2d and avg_pool2d (see ops/rnn_kernels.h): direct loops over each plane's windows, one
// plane per task.
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/loops.h"
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

// Scan-order maximum: the first NaN wins and stops the scan, else the first largest value.
template <typename T>
inline void take_max(T v, int64_t i, T& bv, int64_t& bi) {
  if (!is_nan(bv) && (is_nan(v) || v > bv)) bv = v, bi = i;
}

// 2x2 windows, stride 2, no padding or dilation (most networks' pooling): two input rows per
// output row, no bounds checks.
template <typename T>
void max_pool_2x2_plane(const T* xp, T* vp, int64_t* ip, const WindowGeom& g) {
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const int64_t r = 2 * oy * g.W;
    const T* r0 = xp + r;
    const T* r1 = r0 + g.W;
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const int64_t c = 2 * ox;
      T bv = r0[c];
      int64_t bi = r + c;
      take_max(r0[c + 1], r + c + 1, bv, bi);
      take_max(r1[c], r + g.W + c, bv, bi);
      take_max(r1[c + 1], r + g.W + c + 1, bv, bi);
      vp[oy * g.ow + ox] = bv;
      ip[oy * g.ow + ox] = bi;
    }
  }
}

template <typename T>
void max_pool_planes(const T* x, T* vals, int64_t* idx, const WindowGeom& g) {
  const int64_t planes = g.N * g.C, HW = g.H * g.W, L = g.oh * g.ow;
  const bool two_by_two = g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 &&
                          g.dh == 1 && g.dw == 1 && 2 * g.oh <= g.H && 2 * g.ow <= g.W;
  parallel_for(0, planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(L, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const T* xp = x + p * HW;
      T* vp = vals + p * L;
      int64_t* ip = idx + p * L;
      if (two_by_two) {
        max_pool_2x2_plane(xp, vp, ip, g);
        continue;
      }
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

// One output's window, clipped to the image, and its divisor (torch's avg_pool2d rules: the
// padded window counts padding, never ceil_mode's overhang past it).
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  double inv;
};
inline AvgWindow avg_window(const WindowGeom& g, AvgPoolOptions o, int64_t oy, int64_t ox) {
  int64_t h0 = oy * g.sh - g.ph, w0 = ox * g.sw - g.pw;
  int64_t h1 = std::min(h0 + g.kh, g.H + g.ph), w1 = std::min(w0 + g.kw, g.W + g.pw);
  int64_t padded = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, g.H), w1 = std::min(w1, g.W);
  int64_t div = o.divisor ? o.divisor : o.count_include_pad ? padded : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, 1.0 / double(div)};
}

template <typename T>
void avg_pool_planes(const T* x, T* out, const WindowGeom& g, AvgPoolOptions o) {
  using M = opmath_t<T>;
  const int64_t planes = g.N * g.C, HW = g.H * g.W, L = g.oh * g.ow;
  parallel_for(0, planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(L, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const T* xp = x + p * HW;
      T* op = out + p * L;
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          AvgWindow w = avg_window(g, o, oy, ox);
          M sum = 0;
          for (int64_t ih = w.h0; ih < w.h1; ++ih)
            for (int64_t iw = w.w0; iw < w.w1; ++iw) sum += M(load(xp + ih * g.W + iw));
          op[oy * g.ow + ox] = T(sum * M(w.inv));
        }
    }
  });
}

template <typename T>
void avg_pool_backward_planes(const T* grad, T* gin, const WindowGeom& g, AvgPoolOptions o) {
  using M = opmath_t<T>;
  const int64_t planes = g.N * g.C, HW = g.H * g.W, L = g.oh * g.ow;
  parallel_for(0, planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(L, 1)), [&](int64_t lo, int64_t hi) {
    std::vector<M> acc(static_cast<size_t>(HW));
    for (int64_t p = lo; p < hi; ++p) {
      std::fill(acc.begin(), acc.end(), M(0));
      const T* gp = grad + p * L;
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          AvgWindow w = avg_window(g, o, oy, ox);
          M v = M(load(gp + oy * g.ow + ox)) * M(w.inv);
          for (int64_t ih = w.h0; ih < w.h1; ++ih)
            for (int64_t iw = w.w0; iw < w.w1; ++iw) acc[size_t(ih * g.W + iw)] += v;
        }
      T* ip = gin + p * HW;
      for (int64_t i = 0; i < HW; ++i) ip[i] = T(acc[size_t(i)]);
    }
  });
}

void avg_pool2d_kernel(const Tensor& x, const Tensor& out, const WindowGeom& g, AvgPoolOptions o) {
  dispatch_floating(x.dtype(), "avg_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    avg_pool_planes<T>(static_cast<const T*>(x.data_ptr()), static_cast<T*>(out.data_ptr()), g, o);
  });
}

void avg_pool2d_backward_kernel(const Tensor& grad, const Tensor& gin, const WindowGeom& g, AvgPoolOptions o) {
  dispatch_floating(grad.dtype(), "avg_pool2d_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    avg_pool_backward_planes<T>(static_cast<const T*>(grad.data_ptr()), static_cast<T*>(gin.data_ptr()), g, o);
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(max_pool2d_stub, DeviceType::CPU, &cpu::max_pool2d_kernel);
KINDLE_REGISTER_KERNEL(avg_pool2d_stub, DeviceType::CPU, &cpu::avg_pool2d_kernel);
KINDLE_REGISTER_KERNEL(avg_pool2d_backward_stub, DeviceType::CPU, &cpu::avg_pool2d_backward_kernel);
}  // namespace kindle
