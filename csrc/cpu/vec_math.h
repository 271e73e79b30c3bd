// Vectorised libm: glibc's libmvec (x86-64's default) or SLEEF (through cpu/vec_math_sleef.cpp's
// entry points; KINDLE_VECTOR_MATH) provides vector versions of these functions (SSE2/AVX2/AVX-512 on x86-64, Advanced SIMD
// on aarch64), which GCC calls from `omp simd` loops once the declarations carry the simd attribute
// (glibc only adds it under -ffast-math, which we do not want: it would break NaN handling).
// Error bounds: test_vector_math.cpp measures every one of them against float64.
#pragma once
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <cmath>
#include <type_traits>

#if defined(__aarch64__)
// Advanced SIMD: only the 128-bit variants (4 floats, 2 doubles), which SLEEF provides; left to
// itself GCC would also call 64-bit ones (2 floats) that no library has.
#define KINDLE_SIMD_DECL(name)                                                                       \
  _Pragma("omp declare simd simdlen(4) notinbranch") extern "C" float name##f(float) noexcept;        \
  _Pragma("omp declare simd simdlen(2) notinbranch") extern "C" double name(double) noexcept;
#define KINDLE_SIMD_DECL2(name)                                                                      \
  _Pragma("omp declare simd simdlen(4) notinbranch") extern "C" float name##f(float, float) noexcept; \
  _Pragma("omp declare simd simdlen(2) notinbranch") extern "C" double name(double, double) noexcept;
#else
#define KINDLE_SIMD_DECL(name)                                              \
  extern "C" __attribute__((simd("notinbranch"))) float name##f(float) noexcept; \
  extern "C" __attribute__((simd("notinbranch"))) double name(double) noexcept;
#define KINDLE_SIMD_DECL2(name)                                                     \
  extern "C" __attribute__((simd("notinbranch"))) float name##f(float, float) noexcept; \
  extern "C" __attribute__((simd("notinbranch"))) double name(double, double) noexcept;
#endif

KINDLE_SIMD_DECL(exp) KINDLE_SIMD_DECL(exp2) KINDLE_SIMD_DECL(expm1) KINDLE_SIMD_DECL(log)
KINDLE_SIMD_DECL(log2) KINDLE_SIMD_DECL(log10) KINDLE_SIMD_DECL(log1p) KINDLE_SIMD_DECL(sin)
KINDLE_SIMD_DECL(cos) KINDLE_SIMD_DECL(tan) KINDLE_SIMD_DECL(asin) KINDLE_SIMD_DECL(acos)
KINDLE_SIMD_DECL(atan) KINDLE_SIMD_DECL(sinh) KINDLE_SIMD_DECL(cosh) KINDLE_SIMD_DECL(tanh)
KINDLE_SIMD_DECL(erf) KINDLE_SIMD_DECL2(pow) KINDLE_SIMD_DECL2(atan2) KINDLE_SIMD_DECL2(hypot)

namespace kindle::cpu::vm {
#define KINDLE_VM(name) \
  template <typename T> inline T name(T x) { if constexpr (std::is_same_v<T, float>) return ::name##f(x); else return ::name(double(x)); }
#define KINDLE_VM2(name) \
  template <typename T> inline T name(T x, T y) { if constexpr (std::is_same_v<T, float>) return ::name##f(x, y); else return ::name(double(x), double(y)); }
KINDLE_VM(exp) KINDLE_VM(exp2) KINDLE_VM(expm1) KINDLE_VM(log) KINDLE_VM(log2) KINDLE_VM(log10)
KINDLE_VM(log1p) KINDLE_VM(sin) KINDLE_VM(cos) KINDLE_VM(tan) KINDLE_VM(asin) KINDLE_VM(acos)
KINDLE_VM(atan) KINDLE_VM(sinh) KINDLE_VM(cosh) KINDLE_VM(tanh) KINDLE_VM(erf)
KINDLE_VM2(pow) KINDLE_VM2(atan2) KINDLE_VM2(hypot)
#undef KINDLE_VM
#undef KINDLE_VM2

// erf for gelu (forward and backward) in float32: Abramowitz & Stegun 7.1.26 (absolute error
// < 1.5e-7), which vectorises (one exp). gelu adds it to 1, so its absolute error is what matters.
template <typename M>
inline M gelu_erf(M x) {
  M a = std::fabs(x);
  M t = M(1) / (M(1) + M(0.3275911) * a);
  M p = t * (M(0.254829592) + t * (M(-0.284496736) + t * (M(1.421413741) + t * (M(-1.453152027) + t * M(1.061405429)))));
  M r = M(1) - p * exp(-a * a);
  return std::copysign(r, x);  // not a select: GCC would not vectorise the loop
}

#ifdef __AVX2__
// GCC does not vectorise a select that follows a vector math call, so functions that need one are
// written with AVX2 intrinsics over the 8-wide exp (only in the AVX2 build of the kernels; the
// baseline build calls libm). The vector-ABI entry point is libmvec's or vec_math_sleef.cpp's; no
// header declares it.
extern "C" __m256 _ZGVdN8v_expf(__m256) noexcept;

// tanh(a) / a = 1 - a^2/3 + 2a^4/15 - ... in a^2, highest power first (Taylor; |a| < 0.3)
inline constexpr float kTanhTaylor[6] = {-0.00886323552f, 0.0218694885f, -0.0539682540f, 0.133333333f, -0.333333333f, 1.0f};

// tanh: (1 - e^-2|x|) / (1 + e^-2|x|), and its Taylor series where that cancels (|x| < 0.3).
// Max relative error 3e-7 against float64 tanh.
inline __m256 tanh8(__m256 x) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
  __m256 sign = _mm256_and_ps(x, sign_mask);
  __m256 a = _mm256_andnot_ps(sign_mask, x);
  __m256 t = _ZGVdN8v_expf(_mm256_mul_ps(a, _mm256_set1_ps(-2.0f)));
  __m256 big = _mm256_div_ps(_mm256_sub_ps(one, t), _mm256_add_ps(one, t));
  __m256 x2 = _mm256_mul_ps(a, a);
  __m256 p = _mm256_set1_ps(kTanhTaylor[0]);
  for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(kTanhTaylor[i]));
  __m256 small = _mm256_mul_ps(a, p);
  __m256 r = _mm256_blendv_ps(big, small, _mm256_cmp_ps(a, _mm256_set1_ps(0.3f), _CMP_LT_OQ));
  return _mm256_or_ps(r, sign);
}
#endif

#ifdef __AVX512F__
// 16-wide float32 exp, tanh and gelu written inline (in the AVX-512 build): through libmvec's
// 8-wide calls exp ran at 2.1x, tanh 2.4x and gelu 1.4-1.9x torch's time (torch inlines SLEEF's
// 16-wide code); 16 wide through a call, 1.6x, 2.3x and 1.5x.

// exp(x) = 2^n e^r, n = round(x log2 e), r = x - n ln 2 in two parts (Cody-Waite), e^r by
// Cephes' degree-5 minimax form 1 + r + r^2 p(r); 2^n applied by scalef, which rounds subnormal
// results and saturates to inf / 0. The clamp keeps n finite (exp(89) is already inf, exp(-104)
// 0) and passes NaN through (min/max return their second operand for NaN). Max relative error
// 1.5 ULP against float64 (test_vector_math.cpp).
inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), _mm512_min_ps(_mm512_set1_ps(89.0f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  // p(r) = c0 + c1 r + ... + c5 r^5 by Estrin's scheme: a chain of 3 multiply-adds, not 5
  const __m512 r2 = _mm512_mul_ps(r, r);
  const __m512 p01 = _mm512_fmadd_ps(_mm512_set1_ps(1.6666665459e-1f), r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 p23 = _mm512_fmadd_ps(_mm512_set1_ps(8.3334519073e-3f), r, _mm512_set1_ps(4.1665795894e-2f));
  const __m512 p45 = _mm512_fmadd_ps(_mm512_set1_ps(1.9875691500e-4f), r, _mm512_set1_ps(1.3981999507e-3f));
  const __m512 p = _mm512_fmadd_ps(_mm512_fmadd_ps(p45, r2, p23), r2, p01);
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, r2, r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, n);
}

// 1 / d by the 14-bit reciprocal and one Newton step (relative error about 2^-27): a 16-wide
// division costs 10-16 cycles. d is in [1, 3] wherever it is used.
inline __m512 recip16(__m512 d) {
  const __m512 r = _mm512_rcp14_ps(d);
  return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));
}

// tanh as tanh8 does: (1 - e^-2|x|) / (1 + e^-2|x|), its Taylor series below |x| = 0.3.
inline __m512 tanh16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 a = _mm512_abs_ps(x);
  const __m512 t = exp16(_mm512_mul_ps(a, _mm512_set1_ps(-2.0f)));
  const __m512 big = _mm512_mul_ps(_mm512_sub_ps(one, t), recip16(_mm512_add_ps(one, t)));
  const __m512 x2 = _mm512_mul_ps(a, a);
  __m512 p = _mm512_set1_ps(kTanhTaylor[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(kTanhTaylor[i]));
  const __m512 r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(0.3f), _CMP_LT_OQ), big,
                                        _mm512_mul_ps(a, p));
  // the sign of x back on |tanh|: bitwise or of x's sign bit (also keeps -0 and NaN's payload)
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r),
      _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(int(0x80000000u)))));
}

// gelu(x) = x/2 (1 + erf(x / sqrt 2)), erf as gelu_erf (Abramowitz & Stegun 7.1.26): with
// a = |x| / sqrt 2, erfc(a) = p(t) e^(-a^2), t = 1 / (1 + 0.3275911 a), and x/2 (1 + erf) is
// x erfc(a) / 2 below 0 and x (1 - erfc(a) / 2) above (the halving folded into p).
inline __m512 gelu16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 a = _mm512_abs_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f)));
  const __m512 t = recip16(_mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), a, one));
  __m512 p = _mm512_set1_ps(0.5f * 1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.5f * -1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.5f * 1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.5f * -0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.5f * 0.254829592f));
  p = _mm512_mul_ps(p, t);
  const __m512 h = _mm512_mul_ps(p, exp16(_mm512_fnmadd_ps(a, a, _mm512_setzero_ps())));  // erfc(a) / 2
  // NaN compares false: 1 - NaN either way
  const __m512 s = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), _mm512_sub_ps(one, h), h);
  return _mm512_mul_ps(x, s);
}
#endif

// erfinv: Giles' single-precision approximation, refined by Newton steps on erf.
template <typename T>
inline T erfinv(T y) {
  if (y <= T(-1)) return y == T(-1) ? -INFINITY : NAN;
  if (y >= T(1)) return y == T(1) ? INFINITY : NAN;
  double w = -std::log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w; p = 1.50140941 + p * w;
    x = p * y;
  } else {
    w = std::sqrt(w) - 3.0;
    double p = -0.000200214257;
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w; p = 2.83297682 + p * w;
    x = p * y;
  }
  for (int i = 0; i < 2; ++i)  // 2/sqrt(pi) * exp(-x^2) is erf's derivative
    x -= (std::erf(x) - double(y)) / (1.1283791670955126 * std::exp(-x * x));
  return T(x);
}
}  // namespace kindle::cpu::vm
