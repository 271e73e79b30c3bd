// Tabulated row gathers and column-tile helpers shared by the convolution kernels (conv2d.cpp,
// conv_subpixel.cpp, depthwise.h): each column of an unfolded row reads one element of a plane
// through a table of offsets computed once per call, so that narrow or strided windows cost one
// gather loop per (channel, tap).
#pragma once
#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kindle::cpu {

// The tabulated im2col and col2im of one (channel, tap) row: row[l] = plane[src[l]] (0 where
// src[l] < 0, the padding), and its adjoint plane[src[l]] += row[l]. One tap's positions are
// distinct, so sixteen of them are gathered (and scattered back) at once without conflicts; the
// scalar loops were a fifth of a DCGAN layer's time.
#if defined(__AVX512F__)
// Sixteen table entries at `table`: their positions (pos), which of them lie in the plane (in),
// and the plane's values there (0 in the padding).
inline __m512 gather16(const float* plane, const int32_t* table, __m512i& pos, __mmask16& in) {
  pos = _mm512_loadu_si512(table);
  in = _mm512_cmpge_epi32_mask(pos, _mm512_setzero_si512());
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), in, pos, plane, 4);
}
#endif

template <typename T>
inline void gather_row(T* __restrict row, const T* __restrict plane, const int32_t* src, int64_t l0, int64_t l1) {
  int64_t l = l0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    __m512i pos;
    __mmask16 in;
    for (; l + 16 <= l1; l += 16) _mm512_storeu_ps(row + l, gather16(plane, src + l, pos, in));
  }
#endif
  for (; l < l1; ++l) row[l] = src[l] >= 0 ? plane[src[l]] : T(0);
}

// gather_row where the table is a shift: src[l] == l + shift wherever src[l] >= 0, as at stride 1
// when the unfolded rows are as wide as the plane's (a "same" convolution; a sub-pixel phase grid
// as wide as the output gradient). Masked loads replace the gathers.
template <typename T>
inline void shifted_row(T* __restrict row, const T* __restrict plane, const int32_t* src, int64_t shift, int64_t l0,
                        int64_t l1) {
  int64_t l = l0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    for (; l + 16 <= l1; l += 16) {
      const __mmask16 in = _mm512_cmpge_epi32_mask(_mm512_loadu_si512(src + l), _mm512_setzero_si512());
      _mm512_storeu_ps(row + l, _mm512_maskz_loadu_ps(in, plane + (l + shift)));  // (masked lanes never load)
    }
    if (l < l1) {  // the tail, masked too: rows are short (49 positions of a 7x7 plane)
      const __mmask16 tail = __mmask16((1u << (l1 - l)) - 1);
      const __mmask16 in =
          _mm512_mask_cmpge_epi32_mask(tail, _mm512_maskz_loadu_epi32(tail, src + l), _mm512_setzero_si512());
      _mm512_mask_storeu_ps(row + l, tail, _mm512_maskz_loadu_ps(in, plane + (l + shift)));
      return;
    }
  }
#endif
  for (; l < l1; ++l) row[l] = src[l] >= 0 ? plane[l + shift] : T(0);
}

// A constant-stride copy, r[i] = src[S * i] for i in [lo, hi) (a constant stride vectorises).
template <int S, typename T>
inline void strided_copy(T* __restrict r, const T* __restrict src, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) r[i] = src[S * i];
}

// The shift of a table of n entries if it is one (see shifted_row), else kNoShift.
constexpr int64_t kNoShift = INT64_MIN;
inline int64_t table_shift(const int32_t* src, int64_t n) {
  int64_t shift = kNoShift;
  for (int64_t l = 0; l < n; ++l) {
    if (src[l] < 0) continue;
    if (shift == kNoShift) shift = src[l] - l;
    else if (src[l] - l != shift) return kNoShift;
  }
  return shift == kNoShift ? 0 : shift;  // (all padding: any shift reads nothing)
}

// One tabulated row: shifted_row where the table has a shift (table_shift), else gather_row.
template <typename T>
inline void table_row(T* row, const T* plane, const int32_t* src, int64_t shift, int64_t l0, int64_t l1) {
  if (shift != kNoShift) shifted_row(row, plane, src, shift, l0, l1);
  else gather_row(row, plane, src, l0, l1);
}

// Zeros columns [cw, ld) of `rows` rows of ld: a column tile's padding up to its block of 16
// (zero products where the tile's columns are summed, discarded where they are outputs).
template <typename T>
inline void zero_padding(T* m, int64_t rows, int64_t cw, int64_t ld) {
  if (ld > cw)
    for (int64_t r = 0; r < rows; ++r) std::fill(m + r * ld + cw, m + (r + 1) * ld, T(0));
}

// Calls f(i, l0, l1) for the images overlapping the tile of columns [c0, c0 + cw), the columns being
// the positions of all the images (L each) flattened: image i's positions [l0, l1) are the tile's
// columns from i * L + l0 - c0.
template <typename F>
inline void over_images(int64_t L, int64_t c0, int64_t cw, const F& f) {
  for (int64_t i = c0 / L; i * L < c0 + cw; ++i) f(i, std::max<int64_t>(0, c0 - i * L), std::min(L, c0 + cw - i * L));
}

// Columns per tile when `total` columns are cut into tiles of about `target`: a multiple of 16
// (MKL's kernels take 16 columns at a time, and a ragged block costs a whole one), at least two
// tiles from 64 columns and a multiple of 4 from 3, so that two or four threads share them evenly.
inline int64_t column_tile(int64_t total, int64_t target) {
  int64_t n = std::max<int64_t>((total + target - 1) / target, total >= 64 ? 2 : 1);
  if (n > 2) n = (n + 3) / 4 * 4;
  return ((total + n - 1) / n + 15) / 16 * 16;
}

template <typename T>
inline void scatter_add_row(const T* __restrict row, T* __restrict plane, const int32_t* dst, int64_t l0, int64_t l1) {
  int64_t l = l0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    __m512i pos;
    __mmask16 in;
    for (; l + 16 <= l1; l += 16) {
      const __m512 sum = _mm512_add_ps(gather16(plane, dst + l, pos, in), _mm512_loadu_ps(row + l));
      _mm512_mask_i32scatter_ps(plane, in, pos, sum, 4);
    }
  }
#endif
  for (; l < l1; ++l)
    if (dst[l] >= 0) plane[dst[l]] += row[l];
}

}  // namespace kindle::cpu
