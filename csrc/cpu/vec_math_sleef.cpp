// The vector math entry points GCC calls from vectorised loops (cpu/vec_math.h declares exp, log,
// ... `simd`, so GCC calls _ZGVdN8v_expf, _ZGVnN4v_expf and the like), defined over SLEEF's own
// API for the instruction sets of this build of the kernels (baseline SSE2 always; AVX2 and
// AVX-512 in those modules; Advanced SIMD on aarch64), hidden so that each library's calls bind
// to its own definitions at link time. Not SLEEF's GNU-ABI library, which exports these names:
// - exported, they resolve at run time to whichever library comes first in the search order, and
//   glibc's libmvec (which the linker pulls into the Python module for libkindle's references)
//   came first, and its IFUNC symbols were bound inside SLEEF's library before libmvec was
//   relocated: a crash at import;
// - on aarch64 Debian's build (3.5.1) follows the base procedure-call standard where GCC calls
//   these names under the vector PCS (q8-q23 preserved by the callee) and keeps values there:
//   lanes of pow(x, 1) came back as 1.0. Defined here with aarch64_vector_pcs, the compiler saves
//   what SLEEF's code may clobber.
// The 1.0-ULP versions throughout (hypot: 0.5 ULP).
#ifdef KINDLE_WITH_SLEEF
#if defined(__x86_64__)
#include <immintrin.h>
#define KINDLE_VEC_ENTRY extern "C" __attribute__((visibility("hidden")))
#elif defined(__aarch64__)
#include <arm_neon.h>
#define KINDLE_VEC_ENTRY extern "C" __attribute__((aarch64_vector_pcs, visibility("hidden")))
#endif
#include <sleef.h>

// ISA letter L of the vector ABI's mangling, NF float / ND double lanes, vector types F and D, and
// SLEEF's suffix for the instruction set.
#define KINDLE_VEC_UNARY(L, NF, ND, F, D, SUF, name, acc)                                             \
  KINDLE_VEC_ENTRY F _ZGV##L##N##NF##v_##name##f(F x) { return Sleef_##name##f##NF##_##acc##SUF(x); } \
  KINDLE_VEC_ENTRY D _ZGV##L##N##ND##v_##name(D x) { return Sleef_##name##d##ND##_##acc##SUF(x); }
#define KINDLE_VEC_BINARY(L, NF, ND, F, D, SUF, name, acc)                                                        \
  KINDLE_VEC_ENTRY F _ZGV##L##N##NF##vv_##name##f(F x, F y) { return Sleef_##name##f##NF##_##acc##SUF(x, y); } \
  KINDLE_VEC_ENTRY D _ZGV##L##N##ND##vv_##name(D x, D y) { return Sleef_##name##d##ND##_##acc##SUF(x, y); }
#define KINDLE_VEC_ISA(...)                                                                                   \
  KINDLE_VEC_UNARY(__VA_ARGS__, exp, u10) KINDLE_VEC_UNARY(__VA_ARGS__, exp2, u10)                          \
  KINDLE_VEC_UNARY(__VA_ARGS__, expm1, u10) KINDLE_VEC_UNARY(__VA_ARGS__, log, u10)                         \
  KINDLE_VEC_UNARY(__VA_ARGS__, log2, u10) KINDLE_VEC_UNARY(__VA_ARGS__, log10, u10)                        \
  KINDLE_VEC_UNARY(__VA_ARGS__, log1p, u10) KINDLE_VEC_UNARY(__VA_ARGS__, sin, u10)                         \
  KINDLE_VEC_UNARY(__VA_ARGS__, cos, u10) KINDLE_VEC_UNARY(__VA_ARGS__, tan, u10)                           \
  KINDLE_VEC_UNARY(__VA_ARGS__, asin, u10) KINDLE_VEC_UNARY(__VA_ARGS__, acos, u10)                         \
  KINDLE_VEC_UNARY(__VA_ARGS__, atan, u10) KINDLE_VEC_UNARY(__VA_ARGS__, sinh, u10)                         \
  KINDLE_VEC_UNARY(__VA_ARGS__, cosh, u10) KINDLE_VEC_UNARY(__VA_ARGS__, tanh, u10)                         \
  KINDLE_VEC_UNARY(__VA_ARGS__, erf, u10) KINDLE_VEC_BINARY(__VA_ARGS__, pow, u10)                          \
  KINDLE_VEC_BINARY(__VA_ARGS__, atan2, u10) KINDLE_VEC_BINARY(__VA_ARGS__, hypot, u05)

#if defined(__x86_64__)
KINDLE_VEC_ISA(b, 4, 2, __m128, __m128d, sse2)
#ifdef __AVX2__
KINDLE_VEC_ISA(d, 8, 4, __m256, __m256d, avx2)
#endif
#ifdef __AVX512F__
KINDLE_VEC_ISA(e, 16, 8, __m512, __m512d, avx512f)
#endif
#elif defined(__aarch64__)
KINDLE_VEC_ISA(n, 4, 2, float32x4_t, float64x2_t, advsimd)
#endif
#endif  // KINDLE_WITH_SLEEF
