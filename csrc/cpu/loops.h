// The one strided, broadcast, parallel elementwise loop. A kernel supplies a functor on values;
// for_each_run walks the iterator's dims and calls the functor loop on runs of the innermost dim,
// with a contiguous fast path the compiler vectorises.
#pragma once
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>

#include "cpu/parallel.h"
#include "ops/tensor_iter.h"

namespace kindle::cpu {

// Calls loop(char** ptrs, const int64_t* inner_strides, int64_t n) on every innermost run.
// serial: one thread, in order (scatter with accumulation must not race).
template <typename Loop>
void for_each_run(const TensorIter& it, const Loop& loop, bool serial = false) {
  const int nops = it.n_operands;
  const int64_t nd = it.ndim();
  // Chunk boundaries move back to a multiple of 64 elements from the start of their innermost run,
  // so that every element falls in the same part of a vectorised loop (body or scalar tail, whose
  // vector-math results can differ in the last bit) whatever the thread count. Both neighbours
  // move a shared boundary alike, so the chunks still tile the range.
  const int64_t inner = nd > 0 ? it.shape[0] : 1;
  auto align = [&](int64_t p) { return p >= it.numel || inner <= 0 ? p : p - (p % inner) % 64; };
  parallel_for(0, it.numel, serial ? it.numel + 1 : kGrainSize, [&](int64_t begin_in, int64_t end_in) {
    const int64_t begin = align(begin_in), end = align(end_in);
    if (begin >= end) return;
    int64_t idx[16] = {0};  // multi-index, dim 0 innermost
    DimVector local_idx;
    int64_t* id = nd <= 16 ? idx : (local_idx.resize(nd), local_idx.data());
    int64_t rem = begin;
    for (int64_t d = 0; d < nd; ++d) { id[d] = rem % it.shape[d]; rem /= it.shape[d]; }
    char* ptrs[kMaxOperands];
    int64_t inner[kMaxOperands];
    for (int i = 0; i < nops; ++i) inner[i] = it.strides[i][0];
    int64_t pos = begin;
    while (pos < end) {
      for (int i = 0; i < nops; ++i) {
        char* p = it.data(i);
        for (int64_t d = 0; d < nd; ++d) p += id[d] * it.strides[i][d];
        ptrs[i] = p;
      }
      int64_t n = std::min(it.shape[0] - id[0], end - pos);
      loop(ptrs, inner, n);
      pos += n;
      id[0] += n;
      for (int64_t d = 0; d + 1 < nd && id[d] >= it.shape[d]; ++d) { id[d] = 0; ++id[d + 1]; }
    }
  });
}

// Reads one element as its opmath value. A bool is read as its byte != 0: memory shared with
// NumPy or loaded from a file may hold bytes other than 0 and 1, which every op reads as true
// (as PyTorch does); loading such a byte as a C++ bool would be undefined.
template <typename In>
inline opmath_t<In> load(const In* p) {
  if constexpr (std::is_same_v<In, bool>) return *reinterpret_cast<const uint8_t*>(p) != 0;
  else return opmath_t<In>(*p);
}

// Signed integers wrap on overflow as in PyTorch (two's complement), without the undefined
// behaviour of signed overflow in C++: the arithmetic is done on an unsigned type at least as
// wide as int (uint16 * uint16 would otherwise promote to a signed int and overflow).
template <typename M>
using wrap_unsigned_t = std::conditional_t<(sizeof(M) < sizeof(unsigned)), unsigned, std::make_unsigned_t<M>>;
template <typename M>
M wrap_add(M a, M b) {
  if constexpr (std::is_integral_v<M> && std::is_signed_v<M>) return M(wrap_unsigned_t<M>(a) + wrap_unsigned_t<M>(b));
  else return M(a + b);
}
template <typename M>
M wrap_sub(M a, M b) {
  if constexpr (std::is_integral_v<M> && std::is_signed_v<M>) return M(wrap_unsigned_t<M>(a) - wrap_unsigned_t<M>(b));
  else return M(a - b);
}
template <typename M>
M wrap_mul(M a, M b) {
  if constexpr (std::is_integral_v<M> && std::is_signed_v<M>) return M(wrap_unsigned_t<M>(a) * wrap_unsigned_t<M>(b));
  else return M(a * b);
}

// `omp simd` only on plain arithmetic types: GCC 12 fails (an internal error) on some loops
// that convert 16-bit floats, and those gain nothing from it anyway.
template <typename T> constexpr bool kSimdOk = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

// 16-bit floats in blocks: contiguous runs are widened to float32 a block at a time, computed on
// in float (vectorised), and narrowed back with round-to-nearest-even; element by element, GCC
// leaves the conversions scalar (8x slower for bfloat16 autocast's relu backward).
template <typename T> constexpr bool kReduced = std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>;
constexpr int64_t kReducedBlock = 256;

template <typename T>
inline void widen(const T* src, float* dst, int64_t n) {
  const uint16_t* u = reinterpret_cast<const uint16_t*>(src);
  if constexpr (std::is_same_v<T, BFloat16>) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      uint32_t bits = uint32_t(u[i]) << 16;
      float f;
      __builtin_memcpy(&f, &bits, 4);
      dst[i] = f;
    }
  } else {
    int64_t i = 0;
#ifdef __F16C__
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(u + i))));
#endif
    for (; i < n; ++i) dst[i] = float(src[i]);
  }
}

template <typename T>
inline void narrow(const float* src, T* dst, int64_t n) {
  uint16_t* u = reinterpret_cast<uint16_t*>(dst);
  if constexpr (std::is_same_v<T, BFloat16>) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      uint32_t bits;
      __builtin_memcpy(&bits, src + i, 4);
      bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
      uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
      u[i] = uint16_t(nan ? ((bits >> 16) | 0x40u) : rounded);
    }
  } else {
    int64_t i = 0;
#ifdef __F16C__
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(u + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
    for (; i < n; ++i) dst[i] = T(src[i]);
  }
}

// out[i] = f(a[i]) with Out and In the element types; f works on opmath values.
template <typename Out, typename In, typename F>
void unary_loop(const TensorIter& it, const F& f) {
  for_each_run(it, [&](char** p, const int64_t* s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* a = reinterpret_cast<const In*>(p[1]);
    if constexpr (kReduced<In> && std::is_same_v<Out, In>) {
      if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
        alignas(32) float fa[kReducedBlock], fo[kReducedBlock];
        for (int64_t i0 = 0; i0 < n; i0 += kReducedBlock) {
          int64_t m = std::min(kReducedBlock, n - i0);
          widen(a + i0, fa, m);
#pragma omp simd
          for (int64_t i = 0; i < m; ++i) fo[i] = float(f(fa[i]));
          narrow(fo, o + i0, m);
        }
        return;
      }
    }
    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
      if constexpr (kSimdOk<Out> && kSimdOk<In>) {
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) o[i] = Out(f(load(a + i)));
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = Out(f(load(a + i)));
      }
    } else if (s[0] == sizeof(Out) && s[1] == 0) {
      Out v = Out(f(load(a)));
      for (int64_t i = 0; i < n; ++i) o[i] = v;
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) =
            Out(f(load(reinterpret_cast<const In*>(p[1] + i * s[1]))));
    }
  });
}

#ifdef __AVX2__
// float32 -> float32 with a vector body `v` (__m256, or __m512 in the AVX-512 build), a whole
// vector at a time whatever the strides (gathered into a buffer when not contiguous, and the tail
// of a run padded): every element goes through `v`, so a result does not depend on where the
// element falls in a run, which changes with the thread count. Pass `v` as a lambda (a function
// pointer is not inlined).
template <typename Vec, typename V>
void unary_loop_f32v(const TensorIter& it, const V& v) {
  constexpr int64_t W = sizeof(Vec) / sizeof(float);
  auto load = [](const float* q) {
    if constexpr (W == 8) return _mm256_loadu_ps(q);
#ifdef __AVX512F__
    else return _mm512_loadu_ps(q);
#endif
  };
  auto store = [](float* q, Vec y) {
    if constexpr (W == 8) _mm256_storeu_ps(q, y);
#ifdef __AVX512F__
    else _mm512_storeu_ps(q, y);
#endif
  };
  for_each_run(it, [&](char** p, const int64_t* s, int64_t n) {
    const bool contiguous = s[0] == 4 && s[1] == 4;
    int64_t i = 0;
    if (contiguous) {
      float* o = reinterpret_cast<float*>(p[0]);
      const float* a = reinterpret_cast<const float*>(p[1]);
      // two vectors a step: their dependency chains (a division, a polynomial) overlap
      for (; i + 2 * W <= n; i += 2 * W) {
        const Vec y0 = v(load(a + i)), y1 = v(load(a + i + W));
        store(o + i, y0);
        store(o + i + W, y1);
      }
      for (; i + W <= n; i += W) store(o + i, v(load(a + i)));
    }
    alignas(64) float buf[W];
    for (; i < n; i += W) {
      const int64_t m = std::min<int64_t>(W, n - i);
      for (int64_t k = 0; k < W; ++k) buf[k] = k < m ? *reinterpret_cast<const float*>(p[1] + (i + k) * s[1]) : 0.0f;
      store(buf, v(load(buf)));
      for (int64_t k = 0; k < m; ++k) *reinterpret_cast<float*>(p[0] + (i + k) * s[0]) = buf[k];
    }
  });
}
#endif

template <typename Out, typename In, typename F>
void binary_loop(const TensorIter& it, const F& f) {
  using M = opmath_t<In>;
  for_each_run(it, [&](char** p, const int64_t* s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* a = reinterpret_cast<const In*>(p[1]);
    const In* b = reinterpret_cast<const In*>(p[2]);
    constexpr int64_t so = sizeof(Out), si = sizeof(In);
    if constexpr (kReduced<In> && std::is_same_v<Out, In>) {
      if (s[0] == so && s[1] == si && (s[2] == si || s[2] == 0)) {
        alignas(32) float fa[kReducedBlock], fb[kReducedBlock], fo[kReducedBlock];
        const float bv = s[2] == 0 ? float(*b) : 0.0f;
        for (int64_t i0 = 0; i0 < n; i0 += kReducedBlock) {
          int64_t m = std::min(kReducedBlock, n - i0);
          widen(a + i0, fa, m);
          if (s[2] == 0) {
#pragma omp simd
            for (int64_t i = 0; i < m; ++i) fo[i] = float(f(fa[i], bv));
          } else {
            widen(b + i0, fb, m);
#pragma omp simd
            for (int64_t i = 0; i < m; ++i) fo[i] = float(f(fa[i], fb[i]));
          }
          narrow(fo, o + i0, m);
        }
        return;
      }
    }
    if (s[0] == so && s[1] == si && s[2] == si) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = Out(f(load(a + i), load(b + i)));
    } else if (s[0] == so && s[1] == si && s[2] == 0) {
      const M bv = load(b);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = Out(f(load(a + i), bv));
    } else if (s[0] == so && s[1] == 0 && s[2] == si) {
      const M av = load(a);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = Out(f(av, load(b + i)));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) =
            Out(f(load(reinterpret_cast<const In*>(p[1] + i * s[1])),
                  load(reinterpret_cast<const In*>(p[2] + i * s[2]))));
    }
  });
}

// out = post(in..., pre(x)), x the last input (one or two inputs), for float ops that call the
// vector math library and then select: GCC vectorises neither a select after a vector-ABI call
// nor a call under a select (elu stayed a scalar loop, 8x torch's time), but it vectorises each
// alone. So a run is done a block at a time in two loops over L1-resident buffers, the inputs
// gathered (and 16-bit floats widened) into them whatever their strides.
constexpr int64_t kStageBlock = 256;

template <typename T>
inline const opmath_t<T>* stage_in(const char* p, int64_t s, int64_t i0, int64_t m, opmath_t<T>* buf) {
  const T* a = reinterpret_cast<const T*>(p);
  if constexpr (!kReduced<T>) {
    if (s == sizeof(T)) return a + i0;
  } else {
    if (s == sizeof(T)) return widen(a + i0, buf, m), buf;
  }
  for (int64_t i = 0; i < m; ++i) buf[i] = load(reinterpret_cast<const T*>(p + (i0 + i) * s));
  return buf;
}

template <typename T, int NIn, typename Pre, typename Post>
void staged_loop(const TensorIter& it, const Pre& pre, const Post& post) {
  static_assert(NIn == 1 || NIn == 2);
  using M = opmath_t<T>;
  for_each_run(it, [&](char** p, const int64_t* s, int64_t n) {
    alignas(64) M ib[NIn][kStageBlock], mb[kStageBlock], ob[kStageBlock];
    const bool direct = !kReduced<T> && s[0] == sizeof(T);
    for (int64_t i0 = 0; i0 < n; i0 += kStageBlock) {
      const int64_t m = std::min(kStageBlock, n - i0);
      const M* __restrict x = stage_in<T>(p[NIn], s[NIn], i0, m, ib[NIn - 1]);
#pragma omp simd
      for (int64_t i = 0; i < m; ++i) mb[i] = pre(x[i]);
      M* o = direct ? reinterpret_cast<M*>(p[0]) + i0 : ob;
      if constexpr (NIn == 1) {
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) o[i] = post(x[i], mb[i]);
      } else {
        const M* __restrict g = stage_in<T>(p[1], s[1], i0, m, ib[0]);
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) o[i] = post(g[i], x[i], mb[i]);
      }
      if (direct) continue;
      if constexpr (kReduced<T>) {
        if (s[0] == sizeof(T)) { narrow(ob, reinterpret_cast<T*>(p[0]) + i0, m); continue; }
      }
      for (int64_t i = 0; i < m; ++i) *reinterpret_cast<T*>(p[0] + (i0 + i) * s[0]) = T(ob[i]);
    }
  });
}

template <typename T, typename F>
void ternary_loop(const TensorIter& it, const F& f) {
  for_each_run(it, [&](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t st = sizeof(T);
    if (s[0] == st && s[1] == st && s[2] == st && s[3] == st) {
      T* o = reinterpret_cast<T*>(p[0]);
      const T *a = reinterpret_cast<const T*>(p[1]), *b = reinterpret_cast<const T*>(p[2]),
              *c = reinterpret_cast<const T*>(p[3]);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = T(f(load(a + i), load(b + i), load(c + i)));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) =
            T(f(load(reinterpret_cast<const T*>(p[1] + i * s[1])),
                load(reinterpret_cast<const T*>(p[2] + i * s[2])),
                load(reinterpret_cast<const T*>(p[3] + i * s[3]))));
    }
  });
}

}  // namespace kindle::cpu
