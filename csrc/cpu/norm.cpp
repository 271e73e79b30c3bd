// Fused normalisation kernels (see ops/norm_kernels.h): one task per row (layer_norm) or per
// channel (batch_norm), each summed in a fixed order (`omp simd` reductions: a fixed lane
// layout), so results do not depend on the thread count. Two passes for the statistics (mean, then centred squares) keep the variance exact
// for inputs with a large mean.
#include <algorithm>
#include <cmath>

#include "cpu/parallel.h"
#include "ops/norm_kernels.h"

namespace kindle::cpu {
namespace {

template <typename T>
const T* cptr(const Tensor* t) { return t ? static_cast<const T*>(t->data_ptr()) : nullptr; }
template <typename T>
T* ptr(const Tensor& t) { return static_cast<T*>(t.data_ptr()); }

template <typename F>
void dispatch_ff(DType d, const F& f) {
  if (d == kFloat64) f(double{});
  else f(float{});
}

// The sum of f(j) for j < n in kLanes partial sums (term j into lane j % kLanes), the lanes then
// added pairwise: a fixed order, whatever the thread count. One `omp simd` accumulator makes
// every vector wait for the previous add (a 768-wide layer_norm row took 1.3x torch's time);
// 32 lanes are 4 independent chains of 8-wide float vectors.
template <typename T, typename F>
inline T lane_sum(int64_t n, const F& f) {
  constexpr int64_t kLanes = 32;
  T acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
#pragma omp simd
    for (int64_t k = 0; k < kLanes; ++k) acc[k] += f(j + k);
  for (int64_t k = 0; j + k < n; ++k) acc[k] += f(j + k);
  for (int64_t w = kLanes / 2; w > 0; w /= 2)
    for (int64_t k = 0; k < w; ++k) acc[k] += acc[k + w];
  return acc[0];
}

void layer_norm_kernel(const Tensor& x, const Tensor* w, const Tensor* b, const Tensor& y, const Tensor& mean,
                       const Tensor& rstd, const RowsGeom& g) {
  dispatch_ff(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *xp = cptr<T>(&x), *wp = cptr<T>(w), *bp = cptr<T>(b);
    T *yp = ptr<T>(y), *mp = ptr<T>(mean), *rp = ptr<T>(rstd);
    parallel_for(0, g.M, rows_grain(g.D), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const T* xr = xp + i * g.D;
        T* yr = yp + i * g.D;
        const T s = lane_sum<T>(g.D, [&](int64_t j) { return xr[j]; });
        const T mu = g.D ? s / T(g.D) : T(0);
        const T ss = lane_sum<T>(g.D, [&](int64_t j) { return (xr[j] - mu) * (xr[j] - mu); });
        const T r = T(1) / std::sqrt(ss / T(std::max<int64_t>(g.D, 1)) + T(g.eps));
        mp[i] = mu;
        rp[i] = r;
        if (wp && bp)
#pragma omp simd
          for (int64_t j = 0; j < g.D; ++j) yr[j] = (xr[j] - mu) * r * wp[j] + bp[j];
        else if (wp) for (int64_t j = 0; j < g.D; ++j) yr[j] = (xr[j] - mu) * r * wp[j];
        else if (bp) for (int64_t j = 0; j < g.D; ++j) yr[j] = (xr[j] - mu) * r + bp[j];
        else for (int64_t j = 0; j < g.D; ++j) yr[j] = (xr[j] - mu) * r;
      }
    });
  });
}

// One row of the input gradient; with pw / pb, also adds the row's terms of the weight and bias
// gradients (grad * xhat and grad) into them.
template <typename T>
void layer_norm_backward_row(const T* __restrict gr, const T* __restrict xr, const T* __restrict wp, T mu, T r,
                             T* __restrict dr, T* __restrict pw, T* __restrict pb, int64_t D) {
  T a = 0, c = 0;  // sums of g*w and of g*w*(x - mu)
  if (wp)
#pragma omp simd reduction(+ : a, c)
    for (int64_t j = 0; j < D; ++j) {
      T gw = gr[j] * wp[j];
      a += gw;
      c += gw * (xr[j] - mu);
    }
  else
#pragma omp simd reduction(+ : a, c)
    for (int64_t j = 0; j < D; ++j) {
      a += gr[j];
      c += gr[j] * (xr[j] - mu);
    }
  const T inv_d = T(1) / T(D);
  a *= inv_d;
  c *= inv_d * r;  // mean of g*w*xhat
  if (wp && pw && pb) {  // the common case (affine, both parameters trained): one loop
#pragma omp simd
    for (int64_t j = 0; j < D; ++j) {
      const T xh = (xr[j] - mu) * r;
      dr[j] = r * (gr[j] * wp[j] - a - xh * c);
      pw[j] += gr[j] * xh;
      pb[j] += gr[j];
    }
    return;
  }
  if (wp)
    for (int64_t j = 0; j < D; ++j) dr[j] = r * (gr[j] * wp[j] - a - (xr[j] - mu) * r * c);
  else
    for (int64_t j = 0; j < D; ++j) dr[j] = r * (gr[j] - a - (xr[j] - mu) * r * c);
  if (pw)
    for (int64_t j = 0; j < D; ++j) pw[j] += gr[j] * (xr[j] - mu) * r;
  if (pb)
    for (int64_t j = 0; j < D; ++j) pb[j] += gr[j];
}

void layer_norm_backward_input_kernel(const Tensor& grad, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                      const Tensor* w, const Tensor& dx, const Tensor* dw, const Tensor* db,
                                      const RowsGeom& g) {
  dispatch_ff(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *gp = cptr<T>(&grad), *xp = cptr<T>(&x), *mp = cptr<T>(&mean), *rp = cptr<T>(&rstd), *wp = cptr<T>(w);
    T* dp = ptr<T>(dx);
    if (!dw && !db) {
      parallel_for(0, g.M, rows_grain(g.D), [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i)
          layer_norm_backward_row<T>(gp + i * g.D, xp + i * g.D, wp, mp[i], rp[i], dp + i * g.D, nullptr, nullptr, g.D);
      });
      return;
    }
    // The parameter gradients sum over rows: fixed blocks of rows (a function of M only) each
    // sum into their own partial row, and the partial rows are added in block order.
    const int64_t blocks = std::min<int64_t>(g.M, 64);
    Tensor partial = empty_tensor({2, blocks, g.D}, x.dtype());
    T* pw_all = dw ? ptr<T>(partial) : nullptr;
    T* pb_all = db ? ptr<T>(partial) + blocks * g.D : nullptr;
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        T* pw = pw_all ? pw_all + b * g.D : nullptr;
        T* pb = pb_all ? pb_all + b * g.D : nullptr;
        if (pw) std::fill(pw, pw + g.D, T(0));
        if (pb) std::fill(pb, pb + g.D, T(0));
        for (int64_t i = b * g.M / blocks; i < (b + 1) * g.M / blocks; ++i)
          layer_norm_backward_row<T>(gp + i * g.D, xp + i * g.D, wp, mp[i], rp[i], dp + i * g.D, pw, pb, g.D);
      }
    });
    parallel_for(0, g.D, std::max<int64_t>(64, g.D / 64), [&](int64_t lo, int64_t hi) {
      for (int which = 0; which < 2; ++which) {
        const T* part = which == 0 ? pw_all : pb_all;
        if (!part) continue;
        T* out = ptr<T>(which == 0 ? *dw : *db);
        for (int64_t j = lo; j < hi; ++j) out[j] = part[j];
        for (int64_t b = 1; b < blocks; ++b)
          for (int64_t j = lo; j < hi; ++j) out[j] += part[b * g.D + j];
      }
    });
  });
}

void layer_norm_backward_param_kernel(const Tensor& grad, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& dparam, bool weight, const RowsGeom& g) {
  dispatch_ff(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *gp = cptr<T>(&grad), *xp = cptr<T>(&x), *mp = cptr<T>(&mean), *rp = cptr<T>(&rstd);
    T* out = ptr<T>(dparam);
    // Columns split across threads; each column sums the rows in order.
    parallel_for(0, g.D, std::max<int64_t>(64, g.D / 64), [&](int64_t lo, int64_t hi) {
      for (int64_t j = lo; j < hi; ++j) out[j] = 0;
      for (int64_t i = 0; i < g.M; ++i) {
        const T *gr = gp + i * g.D, *xr = xp + i * g.D;
        if (weight) {
          const T mu = mp[i], r = rp[i];
          for (int64_t j = lo; j < hi; ++j) out[j] += gr[j] * (xr[j] - mu) * r;
        } else {
          for (int64_t j = lo; j < hi; ++j) out[j] += gr[j];
        }
      }
    });
  });
}

// ---- batch_norm: channel c of image n is the run x[(n * C + c) * S, +S).

void batch_norm_stats_kernel(const Tensor& x, const Tensor& mean, const Tensor& var, const ChannelsGeom& g) {
  dispatch_ff(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = cptr<T>(&x);
    T *mp = ptr<T>(mean), *vp = ptr<T>(var);
    const double m = double(g.N * g.S);
    parallel_for(0, g.C, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) {
        double s = 0;
        for (int64_t n = 0; n < g.N; ++n) {
          const T* r = xp + (n * g.C + c) * g.S;
          T part = 0;
#pragma omp simd reduction(+ : part)
          for (int64_t k = 0; k < g.S; ++k) part += r[k];
          s += double(part);
        }
        const double mu = m > 0 ? s / m : 0;
        double ss = 0;
        const T mut = T(mu);
        for (int64_t n = 0; n < g.N; ++n) {
          const T* r = xp + (n * g.C + c) * g.S;
          T part = 0;
#pragma omp simd reduction(+ : part)
          for (int64_t k = 0; k < g.S; ++k) part += (r[k] - mut) * (r[k] - mut);
          ss += double(part);
        }
        mp[c] = T(mu);
        vp[c] = T(m > 0 ? ss / m : 0);
      }
    });
  });
}

void batch_norm_apply_kernel(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor* w,
                             const Tensor* b, const Tensor& y, const ChannelsGeom& g) {
  dispatch_ff(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *xp = cptr<T>(&x), *mp = cptr<T>(&mean), *ip = cptr<T>(&invstd), *wp = cptr<T>(w), *bp = cptr<T>(b);
    T* yp = ptr<T>(y);
    parallel_for(0, g.N * g.C, rows_grain(g.S), [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t c = t % g.C;
        // (x - mean) first: folding the mean into the shift (x * scale + (b - mean * scale))
        // cancels two large terms where the mean is large against the spread, 5-8x the error.
        const T scale = ip[c] * (wp ? wp[c] : T(1)), mu = mp[c];
        const T shift = bp ? bp[c] : T(0);
        const T* r = xp + t * g.S;
        T* o = yp + t * g.S;
        for (int64_t k = 0; k < g.S; ++k) o[k] = (r[k] - mu) * scale + shift;
      }
    });
  });
}

void batch_norm_apply_parts_kernel(const std::vector<Tensor>& parts, const Tensor& mean, const Tensor& invstd,
                                   const Tensor* w, const Tensor* b, const Tensor& y, const ChannelsGeom& g, double lo,
                                   double hi) {
  dispatch_ff(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *mp = cptr<T>(&mean), *ip = cptr<T>(&invstd), *wp = cptr<T>(w), *bp = cptr<T>(b);
    T* yp = ptr<T>(y);
    // Channel c of the concatenation: its first plane in image 0, and its part's image stride.
    std::vector<const T*> first(size_t(g.C));
    std::vector<int64_t> image(size_t(g.C));
    int64_t c0 = 0;
    for (const Tensor& p : parts) {
      const int64_t cp = p.size(1);
      const T* base = cptr<T>(&p);
      for (int64_t c = 0; c < cp; ++c) {
        first[size_t(c0 + c)] = base + c * g.S;
        image[size_t(c0 + c)] = cp * g.S;
      }
      c0 += cp;
    }
    const T tlo = T(lo), thi = T(hi);
    parallel_for(0, g.N * g.C, rows_grain(g.S), [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t n = t / g.C, c = t % g.C;
        // The arithmetic of batch_norm_apply_kernel, then the clamp (NaN stays NaN).
        const T scale = ip[c] * (wp ? wp[c] : T(1)), mu = mp[c];
        const T shift = bp ? bp[c] : T(0);
        const T* r = first[size_t(c)] + n * image[size_t(c)];
        T* o = yp + t * g.S;
        for (int64_t k = 0; k < g.S; ++k) o[k] = std::min(std::max((r[k] - mu) * scale + shift, tlo), thi);
      }
    });
  });
}

void batch_norm_reduce_kernel(const Tensor& grad, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                              const Tensor& sum_g, const Tensor& sum_gx, const ChannelsGeom& g) {
  dispatch_ff(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *gp = cptr<T>(&grad), *xp = cptr<T>(&x), *mp = cptr<T>(&mean), *ip = cptr<T>(&invstd);
    T *sg = ptr<T>(sum_g), *sgx = ptr<T>(sum_gx);
    parallel_for(0, g.C, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) {
        double a = 0, b = 0;
        const T mu = mp[c];
        for (int64_t n = 0; n < g.N; ++n) {
          const T *gr = gp + (n * g.C + c) * g.S, *xr = xp + (n * g.C + c) * g.S;
          T pa = 0, pb = 0;
#pragma omp simd reduction(+ : pa, pb)
          for (int64_t k = 0; k < g.S; ++k) {
            pa += gr[k];
            pb += gr[k] * (xr[k] - mu);
          }
          a += double(pa);
          b += double(pb);
        }
        sg[c] = T(a);
        sgx[c] = T(b * double(ip[c]));
      }
    });
  });
}

void batch_norm_backward_input_kernel(const Tensor& grad, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                                      const Tensor* w, const Tensor* sum_g, const Tensor* sum_gx, const Tensor& dx,
                                      const ChannelsGeom& g) {
  dispatch_ff(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *gp = cptr<T>(&grad), *xp = cptr<T>(&x), *mp = cptr<T>(&mean), *ip = cptr<T>(&invstd), *wp = cptr<T>(w);
    const T *sg = cptr<T>(sum_g), *sgx = cptr<T>(sum_gx);
    T* dp = ptr<T>(dx);
    const T inv_m = T(1) / T(std::max<int64_t>(g.N * g.S, 1));
    parallel_for(0, g.N * g.C, rows_grain(g.S), [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t c = t % g.C;
        const T scale = ip[c] * (wp ? wp[c] : T(1));
        const T *gr = gp + t * g.S, *xr = xp + t * g.S;
        T* o = dp + t * g.S;
        if (!sg) {
          for (int64_t k = 0; k < g.S; ++k) o[k] = gr[k] * scale;
          continue;
        }
        const T mu = mp[c], a = sg[c] * inv_m, b = sgx[c] * inv_m * ip[c];  // b: per xhat, times invstd
        for (int64_t k = 0; k < g.S; ++k) o[k] = scale * (gr[k] - a - (xr[k] - mu) * b);
      }
    });
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(layer_norm_stub, DeviceType::CPU, &cpu::layer_norm_kernel);
KINDLE_REGISTER_KERNEL(layer_norm_backward_input_stub, DeviceType::CPU, &cpu::layer_norm_backward_input_kernel);
KINDLE_REGISTER_KERNEL(layer_norm_backward_param_stub, DeviceType::CPU, &cpu::layer_norm_backward_param_kernel);
KINDLE_REGISTER_KERNEL(batch_norm_stats_stub, DeviceType::CPU, &cpu::batch_norm_stats_kernel);
KINDLE_REGISTER_KERNEL(batch_norm_apply_stub, DeviceType::CPU, &cpu::batch_norm_apply_kernel);
KINDLE_REGISTER_KERNEL(batch_norm_reduce_stub, DeviceType::CPU, &cpu::batch_norm_reduce_kernel);
KINDLE_REGISTER_KERNEL(batch_norm_apply_parts_stub, DeviceType::CPU, &cpu::batch_norm_apply_parts_kernel);
KINDLE_REGISTER_KERNEL(batch_norm_backward_input_stub, DeviceType::CPU, &cpu::batch_norm_backward_input_kernel);
}  // namespace kindle
