// max_pool2d and avg_pool2d (see ops/rnn_kernels.h): direct loops over each plane's windows, one
// plane per task.
#include <cmath>
#include <limits>
#include <vector>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

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

// Scan-order maximum as PyTorch's kernels take it: a NaN or a larger value replaces the best, so
// the last NaN of a window wins, else the first largest value.
template <typename T>
inline void take_max(T v, int64_t i, T& bv, int64_t& bi) {
  if (is_nan(v) || v > bv) bv = v, bi = i;
}

// 2x2 windows, stride 2, no padding or dilation (most networks' pooling): two input rows per
// output row, no bounds checks, and take_max's rule as a chain of selects: eight (or four)
// outputs at a time with AVX2 for float (scalar branches on random data mispredicted about half
// the time: 15 ns an output), the rest one at a time.
template <typename T>
inline void max_2x2(T a, T b, T c, T d, int64_t W, T& bv, int64_t& off) {
  bv = a;
  off = 0;
  take_max(b, 1, bv, off);
  take_max(c, W, bv, off);
  take_max(d, W + 1, bv, off);
}

#if defined(__AVX2__)
// take_max's rule on eight lanes: where a NaN v, or a v larger than the best, replaces it.
inline __m256 replaces8(__m256 v, __m256 bv) {
  return _mm256_or_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), _mm256_cmp_ps(v, bv, _CMP_GT_OQ));
}

// take_max on eight lanes.
inline void take_max8(__m256 v, int32_t k, __m256& bv, __m256i& off) {
  const __m256 take = replaces8(v, bv);
  bv = _mm256_blendv_ps(bv, v, take);
  off = _mm256_blendv_epi8(off, _mm256_set1_epi32(k), _mm256_castps_si256(take));
}

inline void take_max4(__m128 v, int32_t k, __m128& bv, __m128i& off) {
  const __m128 take = _mm_or_ps(_mm_cmp_ps(v, v, _CMP_UNORD_Q), _mm_cmp_ps(v, bv, _CMP_GT_OQ));
  bv = _mm_blendv_ps(bv, v, take);
  off = _mm_blendv_epi8(off, _mm_set1_epi32(k), _mm_castps_si128(take));
}

// Columns 2i and 2i+1 of 16 floats: (even, odd), in order.
inline void deinterleave(const float* p, __m256& even, __m256& odd) {
  const __m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
  even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xd8));
  odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xdd)), 0xd8));
}
#endif

template <typename T>
void max_pool_2x2_plane(const T* xp, T* vp, int64_t* ip, const WindowGeom& g) {
  const int64_t W = g.W;
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const int64_t r = 2 * oy * W;
    const T* r0 = xp + r;
    const T* r1 = r0 + W;
    T* vo = vp + oy * g.ow;
    int64_t* io = ip + oy * g.ow;
    int64_t ox = 0;
#if defined(__AVX2__)
    if constexpr (std::is_same_v<T, float>) {
      for (; ox + 8 <= g.ow; ox += 8) {  // reads columns 2 ox .. 2 ox + 15 < 2 ow <= W: inside the row
        __m256 a, b, c, d;
        deinterleave(r0 + 2 * ox, a, b);
        deinterleave(r1 + 2 * ox, c, d);
        __m256 bv = a;
        __m256i off = _mm256_setzero_si256();
        take_max8(b, 1, bv, off);
        take_max8(c, int32_t(W), bv, off);
        take_max8(d, int32_t(W + 1), bv, off);
        _mm256_storeu_ps(vo + ox, bv);
        const __m256i base = _mm256_add_epi64(_mm256_set1_epi64x(r + 2 * ox), _mm256_setr_epi64x(0, 2, 4, 6));
        const __m256i lo = _mm256_add_epi64(base, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(off)));
        const __m256i hi = _mm256_add_epi64(_mm256_add_epi64(base, _mm256_set1_epi64x(8)),
                                            _mm256_cvtepi32_epi64(_mm256_extracti128_si256(off, 1)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(io + ox), lo);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(io + ox + 4), hi);
      }
      for (; ox + 4 <= g.ow; ox += 4) {  // (8x8 maps pool to rows of 4)
        const __m128 l0 = _mm_loadu_ps(r0 + 2 * ox), h0 = _mm_loadu_ps(r0 + 2 * ox + 4);
        const __m128 l1 = _mm_loadu_ps(r1 + 2 * ox), h1 = _mm_loadu_ps(r1 + 2 * ox + 4);
        __m128 bv = _mm_shuffle_ps(l0, h0, 0x88);
        __m128i off = _mm_setzero_si128();
        take_max4(_mm_shuffle_ps(l0, h0, 0xdd), 1, bv, off);
        take_max4(_mm_shuffle_ps(l1, h1, 0x88), int32_t(W), bv, off);
        take_max4(_mm_shuffle_ps(l1, h1, 0xdd), int32_t(W + 1), bv, off);
        _mm_storeu_ps(vo + ox, bv);
        const __m256i base = _mm256_add_epi64(_mm256_set1_epi64x(r + 2 * ox), _mm256_setr_epi64x(0, 2, 4, 6));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(io + ox), _mm256_add_epi64(base, _mm256_cvtepi32_epi64(off)));
      }
    }
#endif
    for (; ox < g.ow; ++ox) {
      T bv;
      int64_t off;
      max_2x2(r0[2 * ox], r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1], W, bv, off);
      vo[ox] = bv;
      io[ox] = r + 2 * ox + off;
    }
  }
}

// One output of a general window, scanning its taps in order within the image (padding skipped).
template <typename T>
inline void max_window(const T* xp, const WindowGeom& g, int64_t oy, int64_t ox, T& bv, int64_t& best) {
  best = -1;
  for (int64_t ki = 0; ki < g.kh; ++ki) {
    const int64_t ih = oy * g.sh - g.ph + ki * g.dh;
    if (ih < 0 || ih >= g.H) continue;
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      const int64_t iw = ox * g.sw - g.pw + kj * g.dw;
      if (iw < 0 || iw >= g.W) continue;
      const T v = xp[ih * g.W + iw];
      if (best < 0) best = ih * g.W + iw, bv = v;
      else take_max(v, ih * g.W + iw, bv, best);
    }
  }
}

#if defined(__AVX2__)
// Eight outputs ox.. ox + 7 of row oy whose windows lie inside the image's columns (every column
// tap valid; the rows outside the image are skipped as by max_window, so the scan order and the
// result are max_window's). Tap columns are a load (stride 1), two deinterleaved loads (stride 2)
// or a gather. Offsets in 32 bits: the caller checks the plane has fewer than 2^31 elements.
inline void max_window8(const float* xp, const WindowGeom& g, int64_t oy, int64_t ox, __m256& bv, __m256i& off) {
  const __m256i lanes = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(int32_t(g.sw)));
  bool first = true;  // (every window has a row in the image: some tap sets bv and off)
  bv = _mm256_setzero_ps();
  off = _mm256_setzero_si256();
  const int64_t c = ox * g.sw - g.pw;
  for (int64_t ki = 0; ki < g.kh; ++ki) {
    const int64_t ih = oy * g.sh - g.ph + ki * g.dh;
    if (ih < 0 || ih >= g.H) continue;
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      const int32_t k = int32_t(ih * g.W + c + kj * g.dw);  // the tap's element for lane 0
      __m256 v, unused;
      if (g.sw == 1) v = _mm256_loadu_ps(xp + k);
      else if (g.sw == 2) deinterleave(xp + k, v, unused);
      else v = _mm256_i32gather_ps(xp + k, lanes, 4);
      if (first) bv = v, off = _mm256_set1_epi32(k), first = false;
      else take_max8(v, k, bv, off);
    }
  }
}

// The same for the first n <= 8 outputs from ox where some taps fall outside the image's columns
// (padding, ceil_mode's overhang): masked gathers, and per lane the first valid tap starts the scan.
inline void max_window8_border(const float* xp, const WindowGeom& g, int64_t oy, int64_t ox, int64_t n, __m256& bv,
                               __m256i& off) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i lane_col = _mm256_mullo_epi32(lane, _mm256_set1_epi32(int32_t(g.sw)));
  const __m256i in_range = _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(n)), lane);
  const __m256i col0 = _mm256_add_epi32(lane_col, _mm256_set1_epi32(int32_t(ox * g.sw - g.pw)));
  __m256i have = _mm256_setzero_si256();
  bv = _mm256_setzero_ps();
  off = _mm256_setzero_si256();
  for (int64_t ki = 0; ki < g.kh; ++ki) {
    const int64_t ih = oy * g.sh - g.ph + ki * g.dh;
    if (ih < 0 || ih >= g.H) continue;
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      const __m256i col = _mm256_add_epi32(col0, _mm256_set1_epi32(int32_t(kj * g.dw)));
      const __m256i valid = _mm256_and_si256(
          in_range, _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), col),
                                        _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(g.W)), col)));
      const __m256 v = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), xp + ih * g.W, col, _mm256_castsi256_ps(valid), 4);
      const __m256i take = _mm256_and_si256(
          valid, _mm256_or_si256(_mm256_castps_si256(replaces8(v, bv)), _mm256_andnot_si256(have, valid)));
      bv = _mm256_blendv_ps(bv, v, _mm256_castsi256_ps(take));
      off = _mm256_blendv_epi8(off, _mm256_add_epi32(col, _mm256_set1_epi32(int32_t(ih * g.W))), take);
      have = _mm256_or_si256(have, valid);
    }
  }
  off = _mm256_sub_epi32(off, lane_col);  // each lane's element, as an offset from its first column
}

// Stores n <= 8 outputs: the values, and the elements off + lane * sw as int64.
inline void store8(const WindowGeom& g, __m256 bv, __m256i off, int64_t n, float* vo, int64_t* io) {
  alignas(32) float v[8];
  alignas(32) int64_t idx[8];
  const __m256i step = _mm256_setr_epi64x(0, g.sw, 2 * g.sw, 3 * g.sw);
  float* vd = n == 8 ? vo : v;
  int64_t* id = n == 8 ? io : idx;
  _mm256_storeu_ps(vd, bv);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(id),
                      _mm256_add_epi64(step, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(off))));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(id + 4),
                      _mm256_add_epi64(_mm256_add_epi64(step, _mm256_set1_epi64x(4 * g.sw)),
                                       _mm256_cvtepi32_epi64(_mm256_extracti128_si256(off, 1))));
  if (n < 8) {
    std::copy(v, v + n, vo);
    std::copy(idx, idx + n, io);
  }
}
#endif

// A general window over one plane: eight outputs at a time (float, AVX2; scalar branches on
// random data mispredict: 3x3 stride-2 windows took 12 ns an output), by plain loads where all
// their column taps lie in the image, by masked gathers at the borders; other types one at a time.
template <typename T>
void max_pool_plane(const T* xp, T* vp, int64_t* ip, const WindowGeom& g) {
#if defined(__AVX2__)
  if constexpr (std::is_same_v<T, float>) {
    if (g.H * g.W < (int64_t(1) << 31) && g.W * g.sw < (int64_t(1) << 28)) {
      // interior vectors start at lo, lo + 8, ... below hi; the last column one starting at ox
      // reads is (ox + 7) sw - pw + (kw - 1) dw (+ 1 for stride 2's odd columns)
      const int64_t lo = std::min(g.ow, (g.pw + g.sw - 1) / g.sw);
      const int64_t last = g.W - 1 + g.pw - (g.kw - 1) * g.dw - (g.sw == 2 ? 1 : 0);
      const int64_t hi = last < 0 ? 0 : std::min(g.ow - 8, last / g.sw - 7) + 1;
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        float* vo = vp + oy * g.ow;
        int64_t* io = ip + oy * g.ow;
        __m256 bv;
        __m256i off;
        int64_t ox = 0;
        while (ox < lo) {  // left border
          const int64_t n = std::min<int64_t>(8, lo - ox);
          max_window8_border(xp, g, oy, ox, n, bv, off);
          store8(g, bv, off, n, vo + ox, io + ox);
          ox += n;
        }
        for (; ox < hi; ox += 8) {
          max_window8(xp, g, oy, ox, bv, off);
          store8(g, bv, off, 8, vo + ox, io + ox);
        }
        for (; ox < g.ow; ox += 8) {  // right border
          const int64_t n = std::min<int64_t>(8, g.ow - ox);
          max_window8_border(xp, g, oy, ox, n, bv, off);
          store8(g, bv, off, n, vo + ox, io + ox);
        }
      }
      return;
    }
  }
#endif
  for (int64_t oy = 0; oy < g.oh; ++oy)
    for (int64_t ox = 0; ox < g.ow; ++ox) max_window(xp, g, oy, ox, vp[oy * g.ow + ox], ip[oy * g.ow + ox]);
}

template <typename T>
void max_pool_planes(const T* x, T* vals, int64_t* idx, const WindowGeom& g) {
  const int64_t planes = g.N * g.C, HW = g.H * g.W, L = g.oh * g.ow;
  const bool two_by_two = g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 &&
                          g.dh == 1 && g.dw == 1 && 2 * g.oh <= g.H && 2 * g.ow <= g.W;
  parallel_for(0, planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(L, 1)), [&](int64_t lo, int64_t hi) {
    // Values only (idx null: nothing will differentiate the pool): the same loops write each
    // plane's indices into one per-task plane that stays in cache, not into memory.
    std::vector<int64_t> scratch(idx ? 0 : size_t(L));
    for (int64_t p = lo; p < hi; ++p) {
      const T* xp = x + p * HW;
      T* vp = vals + p * L;
      int64_t* ip = idx ? idx + p * L : scratch.data();
      if (two_by_two) max_pool_2x2_plane(xp, vp, ip, g);
      else max_pool_plane(xp, vp, ip, g);
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
                         indices.numel() ? static_cast<int64_t*>(indices.data_ptr()) : nullptr, g);
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
