// Random fills with PyTorch's CPU transforms, so that a seed gives torch's numbers. The generator
// is drawn in one thread (it is sequential); where torch first draws all uniforms and then
// transforms them (normal_ of 16 elements or more), the transform runs in parallel over blocks
// that do not depend on the split. This file is compiled with -ffp-contract=off: every fused
// multiply-add below is written out, because torch's vectorised code fuses some and not others.
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/parallel.h"
#include "ops/kernels.h"

namespace kindle::cpu {
namespace {

constexpr int64_t kChunk = 2048;  // words drawn per refill of the local buffer (even: 64-bit pairs)

// Calls f(words, first, count) for consecutive blocks of n draws of 32 bits.
template <typename F>
void draw32(GeneratorImpl& g, int64_t n, F&& f) {
  uint32_t buf[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    int64_t k = std::min(kChunk, n - i);
    g.fill(buf, k);
    f(buf, i, k);
  }
}
// The same for 64-bit draws (two words each, the first is the high half).
template <typename F>
void draw64(GeneratorImpl& g, int64_t n, F&& f) {
  uint32_t buf[kChunk];
  uint64_t wide[kChunk / 2];
  for (int64_t i = 0; i < n; i += kChunk / 2) {
    int64_t k = std::min(kChunk / 2, n - i);
    g.fill(buf, 2 * k);
    for (int64_t j = 0; j < k; ++j) wide[j] = uint64_t(buf[2 * j]) << 32 | buf[2 * j + 1];
    f(wide, i, k);
  }
}

// torch's uniforms: a float from the low 24 bits of one draw, a double from the low 53 of two.
inline float u24(uint32_t w) { return float(w & 0xFFFFFFu) * 0x1.0p-24f; }
inline double u53(uint64_t w) { return double(w & ((uint64_t(1) << 53) - 1)) * 0x1.0p-53; }

// ---- normal_: Box-Muller over blocks of 16 uniforms (u[j] gives the radius, u[j + 8] the angle)

#ifdef __AVX2__
// log and sin/cos of 8 floats: the Cephes polynomials of the public "avx_mathfun" routines that
// torch's AVX2 normal_ uses, with the multiply-adds fused exactly where torch's build fuses them.
inline __m256 log8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
  __m256 invalid = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LE_OS);
  x = _mm256_max_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x00800000)));  // no denormals
  __m256i emm0 = _mm256_srli_epi32(_mm256_castps_si256(x), 23);
  x = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(~0x7f800000)));
  x = _mm256_or_ps(x, half);  // the mantissa, in [0.5, 1)
  emm0 = _mm256_sub_epi32(emm0, _mm256_set1_epi32(0x7f));
  __m256 e = _mm256_add_ps(_mm256_cvtepi32_ps(emm0), one);
  __m256 mask = _mm256_cmp_ps(x, _mm256_set1_ps(0.707106781186547524f), _CMP_LT_OS);
  __m256 tmp = _mm256_and_ps(x, mask);
  x = _mm256_sub_ps(x, one);
  e = _mm256_sub_ps(e, _mm256_and_ps(one, mask));
  x = _mm256_add_ps(x, tmp);
  __m256 z = _mm256_mul_ps(x, x);
  __m256 y = _mm256_fmadd_ps(_mm256_set1_ps(7.0376836292E-2f), x, _mm256_set1_ps(-1.1514610310E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.1676998740E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(-1.2420140846E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.4249322787E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(-1.6668057665E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(2.0000714765E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(-2.4999993993E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(3.3333331174E-1f));
  y = _mm256_mul_ps(y, x);
  y = _mm256_fmadd_ps(y, z, _mm256_mul_ps(e, _mm256_set1_ps(-2.12194440e-4f)));
  y = _mm256_fnmadd_ps(z, half, y);
  x = _mm256_add_ps(x, y);
  x = _mm256_fmadd_ps(e, _mm256_set1_ps(0.693359375f), x);
  return _mm256_or_ps(x, invalid);  // NaN for x <= 0
}

inline void sincos8(__m256 x, __m256* s, __m256* c) {
  const __m256 sign_mask = _mm256_castsi256_ps(_mm256_set1_epi32(int32_t(0x80000000u)));
  __m256 sign_sin = _mm256_and_ps(x, sign_mask);
  x = _mm256_andnot_ps(sign_mask, x);
  __m256 y = _mm256_mul_ps(x, _mm256_set1_ps(1.27323954473516f));  // 4 / pi
  __m256i j = _mm256_cvttps_epi32(y);
  j = _mm256_and_si256(_mm256_add_epi32(j, _mm256_set1_epi32(1)), _mm256_set1_epi32(~1));
  y = _mm256_cvtepi32_ps(j);
  __m256 swap_sin = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(j, _mm256_set1_epi32(4)), 29));
  __m256 poly = _mm256_castsi256_ps(
      _mm256_cmpeq_epi32(_mm256_and_si256(j, _mm256_set1_epi32(2)), _mm256_setzero_si256()));
  x = _mm256_fmadd_ps(y, _mm256_set1_ps(-0.78515625f), x);  // x - y * pi/4 in three parts
  x = _mm256_fmadd_ps(y, _mm256_set1_ps(-2.4187564849853515625e-4f), x);
  x = _mm256_fmadd_ps(y, _mm256_set1_ps(-3.77489497744594108e-8f), x);
  __m256 sign_cos = _mm256_castsi256_ps(_mm256_slli_epi32(
      _mm256_andnot_si256(_mm256_sub_epi32(j, _mm256_set1_epi32(2)), _mm256_set1_epi32(4)), 29));
  sign_sin = _mm256_xor_ps(sign_sin, swap_sin);
  __m256 z = _mm256_mul_ps(x, x);
  __m256 yc = _mm256_fmadd_ps(_mm256_set1_ps(2.443315711809948E-005f), z, _mm256_set1_ps(-1.388731625493765E-003f));
  yc = _mm256_fmadd_ps(yc, z, _mm256_set1_ps(4.166664568298827E-002f));
  yc = _mm256_mul_ps(yc, z);
  yc = _mm256_fmsub_ps(yc, z, _mm256_mul_ps(z, _mm256_set1_ps(0.5f)));
  yc = _mm256_add_ps(yc, _mm256_set1_ps(1.0f));
  __m256 ys = _mm256_fmadd_ps(_mm256_set1_ps(-1.9515295891E-4f), z, _mm256_set1_ps(8.3321608736E-3f));
  ys = _mm256_fmadd_ps(ys, z, _mm256_set1_ps(-1.6666654611E-1f));
  ys = _mm256_mul_ps(ys, z);
  ys = _mm256_fmadd_ps(ys, x, x);
  *s = _mm256_xor_ps(_mm256_blendv_ps(yc, ys, poly), sign_sin);
  *c = _mm256_xor_ps(_mm256_blendv_ps(ys, yc, poly), sign_cos);
}

inline void normal16(float* p, __m256 mean, __m256 std) {
  __m256 u1 = _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_loadu_ps(p));
  __m256 u2 = _mm256_loadu_ps(p + 8);
  __m256 r = _mm256_sqrt_ps(_mm256_mul_ps(_mm256_set1_ps(-2.0f), log8(u1)));
  __m256 th = _mm256_mul_ps(_mm256_set1_ps(float(2.0 * M_PI)), u2);
  __m256 s, c;
  sincos8(th, &s, &c);
  _mm256_storeu_ps(p, _mm256_fmadd_ps(_mm256_mul_ps(r, c), std, mean));
  _mm256_storeu_ps(p + 8, _mm256_fmadd_ps(_mm256_mul_ps(r, s), std, mean));
}
inline void normal16(float* p, float mean, float std) {
  normal16(p, _mm256_set1_ps(mean), _mm256_set1_ps(std));
}
#else
// The baseline build: the same transform in float with libm, as torch's build without AVX2 has it.
inline void normal16(float* p, float mean, float std) {
  for (int j = 0; j < 8; ++j) {
    float r = std::sqrt(-2.0f * std::log(1.0f - p[j])), th = float(2.0 * M_PI) * p[j + 8];
    p[j] = r * std::cos(th) * std + mean;
    p[j + 8] = r * std::sin(th) * std + mean;
  }
}
#endif

inline void normal16(double* p, double mean, double std) {
  for (int j = 0; j < 8; ++j) {
    double r = std::sqrt(-2.0 * std::log(1.0 - p[j])), th = 2.0 * M_PI * p[j + 8];
    p[j] = std::fma(r * std::cos(th), std, mean);
    p[j + 8] = std::fma(r * std::sin(th), std, mean);
  }
}

// torch's normal_ of a contiguous tensor of at least 16 elements: n uniforms, then 16 more for
// the tail when n is not a multiple of 16; the blocks are transformed, then the last 16 elements
// are overwritten by the tail's uniforms and transformed again.
template <typename T>
void normal_fill(T* p, int64_t n, double mean, double std, GeneratorImpl& g) {
  T tail[16];
  {
    std::lock_guard<std::mutex> lock(g.mutex());
    if constexpr (std::is_same_v<T, float>) {
      draw32(g, n, [&](const uint32_t* w, int64_t b, int64_t k) { for (int64_t i = 0; i < k; ++i) p[b + i] = u24(w[i]); });
      if (n % 16) draw32(g, 16, [&](const uint32_t* w, int64_t, int64_t) { for (int i = 0; i < 16; ++i) tail[i] = u24(w[i]); });
    } else {
      draw64(g, n, [&](const uint64_t* w, int64_t b, int64_t k) { for (int64_t i = 0; i < k; ++i) p[b + i] = u53(w[i]); });
      if (n % 16) draw64(g, 16, [&](const uint64_t* w, int64_t, int64_t) { for (int i = 0; i < 16; ++i) tail[i] = u53(w[i]); });
    }
  }
  auto block = [&](T* q) {
    if constexpr (std::is_same_v<T, float>) normal16(q, float(mean), float(std));
    else normal16(q, mean, std);
  };
  int64_t blocks = n / 16;
  // Transcendentals cost ~50x a draw: blocks of 4096 elements (float) keep the split cheap.
  parallel_for(0, blocks, std::is_same_v<T, float> ? 256 : 64, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) block(p + 16 * i);
  });
  if (n % 16) {
    std::memcpy(p + n - 16, tail, sizeof(tail));
    block(p + n - 16);
  }
}

// torch's scalar normal (fewer than 16 elements, or a strided tensor): Box-Muller on two double
// uniforms, the second value kept in the generator for the next draw.
inline double normal_double(GeneratorImpl& g) {
  if (auto v = g.take_normal()) return *v;
  double a = u53(g.random64()), b = u53(g.random64());
  double r = std::sqrt(-2.0 * std::log1p(-b)), th = 2.0 * M_PI * a;
  g.put_normal(r * std::sin(th));
  return r * std::cos(th);
}

template <typename T>
void store(T* p, int64_t i, double v) { p[i] = T(v); }

void random_kernel(const Tensor& out, const RandomArgs& args, GeneratorImpl& g) {
  const int64_t n = out.numel();
  dispatch_all(out.dtype(), "random", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    switch (args.kind) {
      case RandomKind::Uniform: {
        if constexpr (std::is_same_v<T, double>) {
          const double a = args.a, b = args.b, w = b - a;
          std::lock_guard<std::mutex> lock(g.mutex());
          draw64(g, n, [&](const uint64_t* r, int64_t s, int64_t k) {
            for (int64_t i = 0; i < k; ++i) {
              double v = std::fma(u53(r[i]), w, a);
              p[s + i] = v == b ? a : v;  // rounding reached `to`: torch returns `from`
            }
          });
        } else if constexpr (!std::is_integral_v<T>) {
          // 24 random bits and float arithmetic for float, half and bfloat16 alike.
          const float a = float(args.a), b = float(args.b), w = b - a;
          const T ta = T(a), tb = T(b);
          std::lock_guard<std::mutex> lock(g.mutex());
          draw32(g, n, [&](const uint32_t* r, int64_t s, int64_t k) {
            for (int64_t i = 0; i < k; ++i) {
              T v = T(std::fma(u24(r[i]), w, a));
              p[s + i] = float(v) == float(tb) ? ta : v;  // rounded to `to` (often in half): `from`, as torch
            }
          });
        }
        break;
      }
      case RandomKind::Normal:
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          normal_fill(p, n, args.a, args.b, g);
        } else if constexpr (!std::is_integral_v<T>) {
          std::vector<float> tmp(static_cast<size_t>(n));
          normal_fill(tmp.data(), n, args.a, args.b, g);
          for (int64_t i = 0; i < n; ++i) p[i] = T(tmp[size_t(i)]);
        }
        break;
      case RandomKind::NormalSerial: {
        std::lock_guard<std::mutex> lock(g.mutex());
        for (int64_t i = 0; i < n; ++i) store(p, i, std::fma(normal_double(g), args.b, args.a));
        break;
      }
      case RandomKind::Bernoulli: {
        std::lock_guard<std::mutex> lock(g.mutex());
        draw64(g, n, [&](const uint64_t* r, int64_t s, int64_t k) {
          for (int64_t i = 0; i < k; ++i) p[s + i] = T(u53(r[i]) < args.a ? 1 : 0);
        });
        break;
      }
      case RandomKind::Exponential: {
        const double scale = -1.0 / args.a;
        std::lock_guard<std::mutex> lock(g.mutex());
        draw64(g, n, [&](const uint64_t* r, int64_t s, int64_t k) {
          for (int64_t i = 0; i < k; ++i) store(p, s + i, scale * std::log1p(-u53(r[i])));
        });
        break;
      }
      case RandomKind::Integer: {
        // from + a draw modulo the range: 32-bit draws when the range fits, else 64-bit ones.
        const uint64_t from = uint64_t(args.from), range = args.range;
        auto put = [&](int64_t i, uint64_t x) {
          int64_t v = int64_t(from + x % range);
          if constexpr (std::is_integral_v<T>) p[i] = T(v);
          else p[i] = T(double(v));
        };
        std::lock_guard<std::mutex> lock(g.mutex());
        if (range < (uint64_t(1) << 32))
          draw32(g, n, [&](const uint32_t* r, int64_t s, int64_t k) { for (int64_t i = 0; i < k; ++i) put(s + i, r[i]); });
        else
          draw64(g, n, [&](const uint64_t* r, int64_t s, int64_t k) { for (int64_t i = 0; i < k; ++i) put(s + i, r[i]); });
        break;
      }
    }
  });
}

// torch's randperm: a forward Fisher-Yates shuffle, position i swapped with i + draw % (n - i).
void randperm_kernel(const Tensor& out, GeneratorImpl& g) {
  const int64_t n = out.numel();
  int64_t* r = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) r[i] = i;
  if (n < 2) return;
  std::lock_guard<std::mutex> lock(g.mutex());
  const bool small = n < int64_t(UINT32_MAX / 20);
  for (int64_t i = 0; i < n - 1; ++i) {
    uint64_t d = small ? g.random() : g.random64();
    int64_t z = int64_t(d % uint64_t(n - i));
    std::swap(r[i], r[i + z]);
  }
}

// multinomial with replacement, as torch samples it: each row's running sum (in the
// probabilities' type), divided by the total, the last entry set to 1; each sample is the first
// entry not below a double uniform.
void multinomial_kernel(const Tensor& probs, const Tensor& out, GeneratorImpl& g) {
  const int64_t rows = probs.size(0), cats = probs.size(1), samples = out.size(1);
  int64_t* o = out.data_ptr<int64_t>();
  dispatch_floating(probs.dtype(), "multinomial", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* P = static_cast<const T*>(probs.data_ptr());
    std::vector<A> cum(static_cast<size_t>(cats));
    std::lock_guard<std::mutex> lock(g.mutex());
    for (int64_t d = 0; d < rows; ++d) {
      A sum = 0;
      for (int64_t j = 0; j < cats; ++j) {
        A v = A(P[d * cats + j]);
        KINDLE_CHECK(v >= 0 && std::isfinite(v), "multinomial: probability tensor contains either `inf`, `nan` or element < 0");
        sum += v;
        cum[size_t(j)] = sum;
      }
      KINDLE_CHECK(sum > 0, "multinomial: invalid multinomial distribution (sum of probabilities <= 0)");
      for (int64_t j = 0; j < cats; ++j) cum[size_t(j)] /= sum;
      cum[size_t(cats - 1)] = 1;
      for (int64_t s = 0; s < samples; ++s) {
        double u = u53(g.random64());
        int64_t lo = 0, hi = cats;
        while (hi > lo) {
          int64_t mid = lo + (hi - lo) / 2;
          if (double(cum[size_t(mid)]) < u) lo = mid + 1;
          else hi = mid;
        }
        o[d * samples + s] = lo;
      }
    }
  });
}

// Note [Ranges as torch computes them]: arange and linspace give torch's exact bits, because
// programs compare against them and feed them to floor() (affine_grid's pixel centres). arange
// works in a wide accumulator (double; float for 16-bit types) and, as torch's 256-bit vector
// loop does, computes one base value per vector of 32 bytes' worth of elements, rounds it to the
// type and steps from it, except in the tail after the last full pair of vectors, which is
// computed per element; linspace is per element in the type itself (double for integers), from
// the start for the first half and from the end for the second. Both with fused multiply-adds,
// as torch's compiled loops contract them. Only the element's index enters, so the values do not
// depend on the thread count (torch's do for more than 32768 elements: its threads' chunks
// restart the vector grouping; ours is that of one thread).
// A double to int64 as x86's conversion does it (out of range or NaN: INT64_MIN), without the
// undefined behaviour of the C++ cast (logspace(0, 30, dtype=int64) overflows).
inline int64_t to_int64(double v) {
  return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? int64_t(v) : INT64_MIN;
}

template <typename T>
using RangeAcc = std::conditional_t<std::is_same_v<T, double> || std::is_same_v<T, float>, double, float>;

template <typename T>
void arange_fill(T* p, int64_t n, double start_d, double step_d) {
  using Acc = RangeAcc<T>;
  const Acc start = Acc(start_d), step = Acc(step_d);
  constexpr int64_t V = 32 / int64_t(sizeof(T));
  const int64_t vec_end = n - n % (2 * V);
  parallel_for(0, (n + V - 1) / V, std::max<int64_t>(1, kGrainSize / V), [&](int64_t gb, int64_t ge) {
    for (int64_t g = gb; g < ge; ++g) {
      const int64_t i0 = g * V, i1 = std::min(n, i0 + V);
      if (i0 < vec_end) {
        const Acc base = Acc(T(std::fma(step, Acc(i0), start)));
        for (int64_t i = i0; i < i1; ++i) p[i] = T(std::fma(Acc(i - i0), step, base));
      } else {
        for (int64_t i = i0; i < i1; ++i) p[i] = T(std::fma(step, Acc(i), start));
      }
    }
  });
}

template <typename T>
void linspace_fill(T* p, int64_t n, double start_d, double end_d) {
  const int64_t half = n == 1 ? 1 : n / 2;  // one step of linspace is its start
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    // 16-bit floats: every operation rounds to the type (torch's Half arithmetic), no fusing
    auto r = [](float x) { return float(T(x)); };
    const float start = r(float(start_d)), end = r(float(end_d));
    const float step = n > 1 ? r(r(end - start) / r(float(n - 1))) : 0.f;
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        p[i] = T(i < half ? start + r(step * r(float(i))) : end - r(step * r(float(n - 1 - i))));
    });
    return;
  }
  // otherwise the step in the type itself (double for integers)
  using S = std::conditional_t<std::is_integral_v<T>, double, std::conditional_t<(sizeof(T) < 4), float, T>>;
  const S start = S(T(start_d)), end = S(T(end_d));
  const S step = n > 1 ? (end - start) / S(n - 1) : S(0);
  parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const S v = i < half ? std::fma(step, S(i), start) : std::fma(-step, S(n - 1 - i), end);
      if constexpr (std::is_integral_v<T>) p[i] = T(to_int64(v));  // through int64: defined for any T
      else p[i] = T(v);
    }
  });
}

// torch's logspace: the exponent from the ends in the type, the step in double, no fusing.
void logspace_kernel(const Tensor& out, double start_d, double end_d, double base) {
  const int64_t n = out.numel();
  dispatch_numeric(out.dtype(), "logspace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    const T start = T(start_d), end = T(end_d);
    const double step = n > 1 ? double(T(end - start)) / double(n - 1) : 0.0;
    const int64_t half = n / 2;
    auto in_type = [](int64_t i) {  // the index as the type holds it (torch counts in the type)
      if constexpr (std::is_integral_v<T>) return double(i);
      else return double(T(float(i)));
    };
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        double x;
        if (i < half) {
          const double prod = step * in_type(i);
          x = double(start) + prod;
        } else {
          const double prod = step * double(T(double(n) - in_type(i) - 1.0));
          x = double(end) - prod;
        }
        const double v = std::pow(base, x);
        if constexpr (std::is_integral_v<T>) p[i] = T(to_int64(v));
        else p[i] = T(v);
      }
    });
  });
}

void range_kernel(const Tensor& out, double start, double step, double end, bool linspace) {
  int64_t n = out.numel();
  dispatch_numeric(out.dtype(), "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    if (linspace) return linspace_fill(p, n, start, end);
    if constexpr (std::is_integral_v<T>) {
      const bool exact_int = start == std::floor(start) && step == std::floor(step);
      parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          p[i] = T(exact_int ? int64_t(start) + i * int64_t(step) : to_int64(start + double(i) * step));
      });
    } else {
      arange_fill(p, n, start, step);
    }
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(random_stub, DeviceType::CPU, &cpu::random_kernel);
KINDLE_REGISTER_KERNEL(randperm_stub, DeviceType::CPU, &cpu::randperm_kernel);
KINDLE_REGISTER_KERNEL(multinomial_stub, DeviceType::CPU, &cpu::multinomial_kernel);
KINDLE_REGISTER_KERNEL(range_stub, DeviceType::CPU, &cpu::range_kernel);
KINDLE_REGISTER_KERNEL(logspace_stub, DeviceType::CPU, &cpu::logspace_kernel);
}  // namespace kindle
