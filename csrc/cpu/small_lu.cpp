#include "cpu/small_lu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace kindle::cpu {
namespace {

// Blocked right-looking LU on a padded copy of the matrix. Columns are factored in panels of
// kPanel; the rest of the matrix then takes one rank-kPanel update, whose kernel holds a tile of
// the panel's L (two vectors of rows x kPanel columns) in registers and streams the trailing
// columns past it: four FMAs per loaded and stored vector instead of the rank-1 update's one,
// and no per-column loop overhead. The copy has zero rows below the matrix so that tiles may
// run past its last row; rows are independent in every step, so those rows never reach the
// result (and are never pivot candidates).
constexpr int kPanel = 4;
constexpr int kVecBytes = 32;

template <typename T>
struct Vec {
  static constexpr int kLanes = kVecBytes / sizeof(T);
  typedef T type __attribute__((vector_size(kVecBytes)));
  static type load(const T* p) {
    type v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(T* p, type v) { std::memcpy(p, &v, sizeof v); }
};

// Unblocked LU of the panel a[k0.., k0..k0+w): pivots recorded (0-based, absolute rows) and
// rows swapped inside the panel only.
template <typename T>
void factor_panel(int m, int k0, int w, T* a, int ld, int* piv, int* info) {
  const T sfmin = std::numeric_limits<T>::min();
  for (int k = k0; k < k0 + w; ++k) {
    T* ck = a + static_cast<long>(k) * ld;
    int p = k;  // the first entry of largest magnitude, as LAPACK's i?amax picks it
    T best = std::abs(ck[k]);
    for (int i = k + 1; i < m; ++i) {
      const T v = std::abs(ck[i]);
      if (v > best) best = v, p = i;
    }
    piv[k] = p;
    if (p != k)
      for (int j = k0; j < k0 + w; ++j) std::swap(a[static_cast<long>(j) * ld + k], a[static_cast<long>(j) * ld + p]);
    const T pivot = ck[k];
    if (pivot == T(0)) {
      if (*info == 0) *info = k + 1;
    } else if (std::abs(pivot) >= sfmin) {  // scaled as dgetf2 scales
      const T r = T(1) / pivot;
      for (int i = k + 1; i < m; ++i) ck[i] *= r;
    } else {
      for (int i = k + 1; i < m; ++i) ck[i] /= pivot;
    }
    for (int j = k + 1; j < k0 + w; ++j) {
      T* cj = a + static_cast<long>(j) * ld;
      const T u = cj[k];
      if (u != T(0))
        for (int i = k + 1; i < m; ++i) cj[i] -= ck[i] * u;
    }
  }
}

// c[r0..r1) of columns [j0, n) -= L[r0..r1, k0..k0+kPanel) * U[k0..k0+kPanel, j]; r1 - r0 is a
// multiple of two vectors (the padding rows absorb the overrun).
template <typename T>
void rank_panel_update(int r0, int r1, int k0, int j0, int n, T* a, int ld) {
  using V = Vec<T>;
  using v = typename V::type;
  constexpr int L = V::kLanes;
  const T* lcols = a + static_cast<long>(k0) * ld;
  for (int i = r0; i < r1; i += 2 * L) {
    v l0[kPanel], l1[kPanel];
    for (int t = 0; t < kPanel; ++t) {
      l0[t] = V::load(lcols + static_cast<long>(t) * ld + i);
      l1[t] = V::load(lcols + static_cast<long>(t) * ld + i + L);
    }
    for (int j = j0; j < n; ++j) {
      T* cj = a + static_cast<long>(j) * ld;
      v c0 = V::load(cj + i), c1 = V::load(cj + i + L);
      for (int t = 0; t < kPanel; ++t) {
        const T u = cj[k0 + t];
        c0 -= l0[t] * u;
        c1 -= l1[t] * u;
      }
      V::store(cj + i, c0);
      V::store(cj + i + L, c1);
    }
  }
}

template <typename T>
void getrf_blocked(int m, int n, T* a_out, int lda, int* ipiv, int* info) {
  constexpr int kTile = 2 * Vec<T>::kLanes;
  const int steps = std::min(m, n);
  const int ld = (m + kTile - 1 + kTile - 1) / kTile * kTile;
  thread_local std::vector<T> buffer;
  buffer.assign(static_cast<size_t>(ld) * n, T(0));
  T* a = buffer.data();
  for (int j = 0; j < n; ++j) std::copy_n(a_out + static_cast<long>(j) * lda, m, a + static_cast<long>(j) * ld);

  *info = 0;
  for (int k0 = 0; k0 < steps; k0 += kPanel) {
    const int w = std::min(kPanel, steps - k0);
    factor_panel(m, k0, w, a, ld, ipiv, info);
    // the panel's row swaps on every column outside it
    for (int j = 0; j < n; ++j) {
      if (j == k0) j += w;
      if (j >= n) break;
      T* cj = a + static_cast<long>(j) * ld;
      for (int k = k0; k < k0 + w; ++k)
        if (ipiv[k] != k) std::swap(cj[k], cj[ipiv[k]]);
    }
    const int j0 = k0 + w;
    if (j0 >= n) continue;
    // U's rows of the panel: unit lower-triangular solve with the panel's L11, column by column
    for (int j = j0; j < n; ++j) {
      T* cj = a + static_cast<long>(j) * ld;
      for (int t = 1; t < w; ++t) {
        T s = cj[k0 + t];
        for (int q = 0; q < t; ++q) s -= a[static_cast<long>(k0 + q) * ld + k0 + t] * cj[k0 + q];
        cj[k0 + t] = s;
      }
    }
    const int r0 = j0;
    if (r0 >= m) continue;
    if (w == kPanel) {
      const int r1 = r0 + (m - r0 + kTile - 1) / kTile * kTile;
      rank_panel_update(r0, r1, k0, j0, n, a, ld);
    } else {  // the last, narrower panel of a wide matrix
      for (int j = j0; j < n; ++j) {
        T* cj = a + static_cast<long>(j) * ld;
        for (int t = 0; t < w; ++t) {
          const T* lt = a + static_cast<long>(k0 + t) * ld;
          const T u = cj[k0 + t];
          for (int i = r0; i < m; ++i) cj[i] -= lt[i] * u;
        }
      }
    }
  }
  for (int k = 0; k < steps; ++k) ++ipiv[k];  // LAPACK's 1-based pivots
  for (int j = 0; j < n; ++j) std::copy_n(a + static_cast<long>(j) * ld, m, a_out + static_cast<long>(j) * lda);
}

}  // namespace

void small_getrf(int m, int n, float* a, int lda, int* ipiv, int* info) { getrf_blocked(m, n, a, lda, ipiv, info); }
void small_getrf(int m, int n, double* a, int lda, int* ipiv, int* info) { getrf_blocked(m, n, a, lda, ipiv, info); }

}  // namespace kindle::cpu
