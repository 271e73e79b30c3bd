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

// tanh: (1 - e^-2|x|) / (1 + e^-2|x|), and its Taylor series where that cancels (|x| < 0.3).
// Max relative error 3e-7 against float64 tanh.
inline __m256 tanh8(__m256 x) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
  __m256 sign = _mm256_and_ps(x, sign_mask);
  __m256 a = _mm256_andnot_ps(sign_mask, x);
  __m256 t = _ZGVdN8v_expf(_mm256_mul_ps(a, _mm256_set1_ps(-2.0f)));
  __m256 big = _mm256_div_ps(_mm256_sub_ps(one, t), _mm256_add_ps(one, t));
  __m256 x2 = _mm256_mul_ps(a, a);
  __m256 p = _mm256_set1_ps(-0.00886323552f);
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(0.0218694885f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-0.0539682540f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(0.133333333f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-0.333333333f));
  p = _mm256_fmadd_ps(p, x2, one);
  __m256 small = _mm256_mul_ps(a, p);
  __m256 r = _mm256_blendv_ps(big, small, _mm256_cmp_ps(a, _mm256_set1_ps(0.3f), _CMP_LT_OQ));
  return _mm256_or_ps(r, sign);
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
