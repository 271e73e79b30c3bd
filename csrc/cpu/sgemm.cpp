// Single-precision GEMM with AVX-512 (see sgemm.h), laid out as BLIS lays out its GEMMs:
//
//   for each block of kNc columns of C:
//     for each block of kKc of the depth, in order:
//       pack op(B)'s block into panels of kNr columns (kKc x kNr each: one panel fits L1)
//       for each panel of kNr columns, for each panel of kMr rows of A (packed, from L2):
//         the micro-kernel: a kMr x kNr tile of C in 24 zmm accumulators, one rank-1 update
//         per step of depth (2 vector loads of B, 12 broadcasts of A, 24 FMAs)
//
// Only the kernel code below the target pragma uses AVX-512; it is entered only where the CPU has
// AVX-512F (available()), and it calls no inline function from a header (whose out-of-line copy
// could otherwise be compiled for AVX-512 and picked by the linker for every caller).
#include "cpu/sgemm.h"

#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <stdexcept>

#include "kindle/cpu_capability.h"
#include "kindle/tensor.h"

namespace kindle::cpu::sgemm {
namespace {

constexpr int64_t kMr = kPanelRows, kNr = 32;
constexpr int64_t kKc = 256;   // depth per block: a B panel (kKc x kNr) is 32 KB, in L1
constexpr int64_t kMc = 240;   // rows of A per block when it is packed here: 240 KB, in L2
constexpr int64_t kNc = 2048;  // columns per packed B block: 2 MB
constexpr int64_t kDirectRows = 48;

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Grow-only per-thread scratch: packing buffers are reused call after call (a fresh allocation
// of megabytes would page-fault on every call).
struct Scratch {
  float* p = nullptr;
  int64_t size = 0;
  ~Scratch() { std::free(p); }
  float* get(int64_t n) {
    if (n > size) {
      std::free(p);
      p = static_cast<float*>(std::aligned_alloc(64, size_t(round_up(n, 16)) * sizeof(float)));
      if (!p) throw std::bad_alloc();
      size = round_up(n, 16);
    }
    return p;
  }
};
thread_local Scratch b_scratch, a_scratch;

// PackedA's storage from Kindle's caching allocator: a layer's filters packed call after call
// reuse one cached block instead of faulting in fresh pages (1-2 ms for a 512-channel layer).
[[maybe_unused]] float* allocate_packed(int64_t n, void** storage) {
  auto* t = new Tensor(empty_tensor({n}, kFloat32));
  *storage = t;
  return static_cast<float*>(t->data_ptr());
}
void release_packed(void* storage) { delete static_cast<Tensor*>(storage); }

bool detect() {
  const char* env = std::getenv("KINDLE_SGEMM");
  if (env && std::strcmp(env, "mkl") == 0) return false;
  // AVX-512 only where it is the kernels' chosen set (KINDLE_CPU_CAPABILITY=avx2 or default on
  // an AVX-512 CPU means none of it)
  return cpu_capability() == CpuCapability::AVX512;
}

// MKL runs its own AVX-512 kernels on Intel's CPUs (on AMD's it runs AVX2 code); there it took
// 0.8-0.9 of this kernel's time on products of many rows (a Xeon with AVX-512 and AMX, 2026-12-07:
// 161 against 136 GFLOP/s at 512x4608x128, 67 against 37 at 32x2592x5184).
bool detect_preferred() {
  if (!available()) return false;
  const char* env = std::getenv("KINDLE_SGEMM");
  if (env && std::strcmp(env, "kindle") == 0) return true;
#if defined(__x86_64__)
  __builtin_cpu_init();
  return !__builtin_cpu_is("intel");
#else
  return false;
#endif
}

}  // namespace

bool available() {
  static const bool yes = detect();
  return yes;
}

bool preferred() {
  static const bool yes = detect_preferred();
  return yes;
}

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx512f")

namespace {

inline int64_t lesser(int64_t a, int64_t b) { return a < b ? a : b; }

// dst[p * W + r] = src[r * ld + p] for p < kc and r < W (0 for r >= rows): rows of a row-major
// matrix become a panel's columns. A full panel goes in 4x4 blocks transposed in registers, so
// that every store writes 4 values (one at a time, packing was a quarter of a convolution's time).
template <int64_t W>
void pack_rows_transposed(const float* src, int64_t ld, int64_t rows, int64_t kc, float* dst) {
  int64_t p = 0;
  if (rows == W) {
    for (; p + 4 <= kc; p += 4) {
      float* d = dst + p * W;
      for (int64_t r = 0; r < W; r += 4) {
        __m128 r0 = _mm_loadu_ps(src + r * ld + p), r1 = _mm_loadu_ps(src + (r + 1) * ld + p);
        __m128 r2 = _mm_loadu_ps(src + (r + 2) * ld + p), r3 = _mm_loadu_ps(src + (r + 3) * ld + p);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(d + r, r0);
        _mm_storeu_ps(d + W + r, r1);
        _mm_storeu_ps(d + 2 * W + r, r2);
        _mm_storeu_ps(d + 3 * W + r, r3);
      }
    }
  }
  for (; p < kc; ++p)
    for (int64_t r = 0; r < W; ++r) dst[p * W + r] = r < rows ? src[r * ld + p] : 0.f;
}

// Rows [i0, i0 + mr) of op(A), depth [p0, p0 + kc), into one panel: dst[p * kMr + i], rows past
// mr zero.
void pack_a_panel(bool trans, const float* a, int64_t lda, int64_t i0, int64_t mr, int64_t p0, int64_t kc,
                  float* dst) {
  if (trans) {  // op(A)(i, p) = a[p * lda + i]: each depth step reads mr contiguous values
    const __mmask16 m = __mmask16((1u << mr) - 1);
    for (int64_t p = 0; p < kc; ++p) {
      const __m512 v = _mm512_maskz_loadu_ps(m, a + (p0 + p) * lda + i0);
      _mm512_mask_storeu_ps(dst + p * kMr, __mmask16((1u << kMr) - 1), v);
    }
    return;
  }
  pack_rows_transposed<kMr>(a + i0 * lda + p0, lda, mr, kc, dst);
}

// Columns [j0, j0 + nr) of op(B), depth [p0, p0 + kc), into one panel: dst[p * kNr + j], columns
// past nr zero.
void pack_b_panel(bool trans, const float* b, int64_t ldb, int64_t j0, int64_t nr, int64_t p0, int64_t kc,
                  float* dst) {
  if (!trans) {  // op(B)(p, j) = b[p * ldb + j]: rows of nr contiguous values
    const __mmask16 m0 = __mmask16(nr >= 16 ? 0xFFFFu : (1u << nr) - 1);
    const __mmask16 m1 = __mmask16(nr >= 32 ? 0xFFFFu : nr > 16 ? (1u << (nr - 16)) - 1 : 0u);
    for (int64_t p = 0; p < kc; ++p) {
      const float* s = b + (p0 + p) * ldb + j0;
      _mm512_store_ps(dst + p * kNr, _mm512_maskz_loadu_ps(m0, s));
      _mm512_store_ps(dst + p * kNr + 16, _mm512_maskz_loadu_ps(m1, s + 16));
    }
    return;
  }
  // op(B)(p, j) = b[j * ldb + p]: each column is a contiguous row of b (a linear layer's weight).
  pack_rows_transposed<kNr>(b + j0 * ldb + p0, ldb, nr, kc, dst);
}

// C tile (mr x nr, ld ldc) = alpha * A . B-panel + beta * C over depth kc (beta == 0: C is not
// read), A being NP consecutive row panels (a, a + a_next). NV vectors of 16 columns per row: 2,
// or 1 where the tile has at most 16 columns, which then takes two row panels (24 accumulators
// either way: enough independent FMAs to cover their latency).
template <int NV, int NP>
void micro_kernel(int64_t kc, const float* __restrict a, int64_t a_next, const float* __restrict b, int64_t ldb,
                  float* c, int64_t ldc, int64_t mr, int64_t nr, float alpha, float beta) {
  constexpr int R = NP * kMr;
  __m512 acc[R][NV];
#pragma GCC unroll 24
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  const float* __restrict a1 = a + a_next;
  for (int64_t p = 0; p < kc; ++p) {
    __m512 bv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_ps(b + v * 16);
#pragma GCC unroll 24
    for (int i = 0; i < R; ++i) {
      const __m512 ai = _mm512_set1_ps(i < kMr ? a[i] : a1[i - kMr]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
    a += kMr;
    a1 += kMr;
    b += ldb;
  }
  __mmask16 mask[NV];
#pragma GCC unroll 2
  for (int v = 0; v < NV; ++v) {
    const int64_t left = nr - 16 * v;
    mask[v] = __mmask16(left >= 16 ? 0xFFFFu : left > 0 ? (1u << left) - 1 : 0u);
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 24
  for (int i = 0; i < R; ++i) {
    if (i >= mr) break;
    float* row = c + i * ldc;
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      __m512 r = _mm512_mul_ps(va, acc[i][v]);
      if (beta != 0.f) r = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask[v], row + 16 * v), r);
      _mm512_mask_storeu_ps(row + 16 * v, mask[v], r);
    }
  }
}

// One (kc deep) block: C[rows, cols] (m x nc) = alpha * A-block . B-block + beta * C, the A panels
// a_stride floats apart. The B block is packed in panels of kc x kNr (bp), or (direct, where A
// has so few rows that packing B would cost more than it saves) read in place from the rows of
// op(B) (b + p * ldb), with only a last, partial panel packed into bp.
void macro_kernel(int64_t m, int64_t nc, int64_t kc, const float* a, int64_t a_stride, const float* bp,
                  const float* direct_b, int64_t ldb, float alpha, float beta, float* c, int64_t ldc) {
  for (int64_t j = 0; j < nc; j += kNr) {
    const int64_t nr = lesser(kNr, nc - j);
    const float* bpanel = bp + (j / kNr) * kc * kNr;
    int64_t bstride = kNr;
    if (direct_b && nr == kNr) {
      bpanel = direct_b + j;
      bstride = ldb;
    } else if (direct_b) {
      bpanel = bp;
    }
    if (nr > 16) {
      for (int64_t i = 0; i < m; i += kMr)
        micro_kernel<2, 1>(kc, a + (i / kMr) * a_stride, 0, bpanel, bstride, c + i * ldc + j, ldc,
                           lesser(kMr, m - i), nr, alpha, beta);
      continue;
    }
    int64_t i = 0;
    for (; i + kMr < m; i += 2 * kMr)
      micro_kernel<1, 2>(kc, a + (i / kMr) * a_stride, a_stride, bpanel, bstride, c + i * ldc + j, ldc,
                         lesser(2 * kMr, m - i), nr, alpha, beta);
    if (i < m)
      micro_kernel<1, 1>(kc, a + (i / kMr) * a_stride, 0, bpanel, bstride, c + i * ldc + j, ldc, m - i, nr, alpha,
                         beta);
  }
}

void pack_b_block(bool trans_b, const float* b, int64_t ldb, int64_t jc, int64_t nc, int64_t pc, int64_t kc,
                  float* bp) {
  for (int64_t j = 0; j < nc; j += kNr) pack_b_panel(trans_b, b, ldb, jc + j, lesser(kNr, nc - j), pc, kc, bp + (j / kNr) * kc * kNr);
}

// The driver shared by both entry points: `a_block(pc, kc, ic, mc)` returns the packed panels of
// rows [ic, ic + mc) at depth [pc, pc + kc) and their stride.
template <typename ABlock>
void drive(int64_t m, int64_t n, int64_t k, int64_t mc_step, const ABlock& a_block, bool trans_b, const float* b,
           int64_t ldb, float alpha, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // C = beta * C
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    return;
  }
  // Each packed B panel serves m / kMr micro-kernel calls; with few of them, packing costs more
  // than reading B's rows in place.
  const bool direct = !trans_b && m <= kDirectRows;
  float* bp = b_scratch.get(kKc * round_up(lesser(n, kNc), kNr));
  for (int64_t jc = 0; jc < n; jc += kNc) {
    const int64_t nc = lesser(kNc, n - jc);
    for (int64_t pc = 0; pc < k; pc += kKc) {
      const int64_t kc = lesser(kKc, k - pc);
      const float* direct_b = nullptr;
      if (direct) {
        direct_b = b + pc * ldb + jc;
        if (nc % kNr) pack_b_panel(false, b, ldb, jc + nc / kNr * kNr, nc % kNr, pc, kc, bp);
      } else {
        pack_b_block(trans_b, b, ldb, jc, nc, pc, kc, bp);
      }
      const float beta_block = pc == 0 ? beta : 1.f;
      for (int64_t ic = 0; ic < m; ic += mc_step) {
        const int64_t mc = lesser(mc_step, m - ic);
        int64_t stride = 0;
        const float* ap = a_block(pc, kc, ic, mc, stride);
        macro_kernel(mc, nc, kc, ap, stride, bp, direct_b, ldb, alpha, beta_block, c + ic * ldc + jc, ldc);
      }
    }
  }
}

// All of op(A), in blocks of depth kKc (each block's panels contiguous, in the order the driver
// reads them).
void pack_all(bool trans, int64_t m, int64_t k, const float* a, int64_t lda, float* dst) {
  const int64_t mp = round_up(m, kMr);
  for (int64_t pc = 0; pc < k; pc += kKc) {
    const int64_t kc = lesser(kKc, k - pc);
    for (int64_t i = 0; i < m; i += kMr)
      pack_a_panel(trans, a, lda, i, lesser(kMr, m - i), pc, kc, dst + mp * pc + (i / kMr) * kc * kMr);
  }
}

// C (m x n) = alpha * A B^T + beta * C for a few rows of A (a linear layer at a small batch: A the
// activations, B the weight, both with rows along the depth). Packing the weight would cost as
// much as the product, so each pair of B's rows is read once, in place, against every row of A
// (in L1): dot products accumulated 16 lanes wide, reduced at the end.
template <int R>
void dot_rows(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, int64_t n, float alpha, float beta,
              float* c, int64_t ldc) {
  const __mmask16 tail = __mmask16((1u << (k % 16)) - 1);
  const int64_t k16 = k / 16 * 16;
  for (int64_t j = 0; j < n; j += 2) {
    const bool pair = j + 1 < n;
    const float* b0 = b + j * ldb;
    const float* b1 = pair ? b0 + ldb : b0;
    __m512 acc[R][2];
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int64_t p = 0; p < k16; p += 16) {
      const __m512 w0 = _mm512_loadu_ps(b0 + p), w1 = _mm512_loadu_ps(b1 + p);
#pragma GCC unroll 16
      for (int i = 0; i < R; ++i) {
        const __m512 x = _mm512_loadu_ps(a + i * lda + p);
        acc[i][0] = _mm512_fmadd_ps(x, w0, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(x, w1, acc[i][1]);
      }
    }
    if (tail) {
      const __m512 w0 = _mm512_maskz_loadu_ps(tail, b0 + k16), w1 = _mm512_maskz_loadu_ps(tail, b1 + k16);
#pragma GCC unroll 16
      for (int i = 0; i < R; ++i) {
        const __m512 x = _mm512_maskz_loadu_ps(tail, a + i * lda + k16);
        acc[i][0] = _mm512_fmadd_ps(x, w0, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(x, w1, acc[i][1]);
      }
    }
    for (int i = 0; i < R; ++i)
      for (int h = 0; h < (pair ? 2 : 1); ++h) {
        float& out = c[i * ldc + j + h];
        const float v = alpha * _mm512_reduce_add_ps(acc[i][h]);
        out = beta == 0.f ? v : v + beta * out;
      }
  }
}

// Rows of A in groups of up to 8 (dot_rows' accumulators: 2 per row).
void few_rows(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
              float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; i += 8) {
    const float* ai = a + i * lda;
    float* ci = c + i * ldc;
    switch (lesser(8, m - i)) {
      case 1: dot_rows<1>(k, ai, lda, b, ldb, n, alpha, beta, ci, ldc); break;
      case 2: dot_rows<2>(k, ai, lda, b, ldb, n, alpha, beta, ci, ldc); break;
      case 3: dot_rows<3>(k, ai, lda, b, ldb, n, alpha, beta, ci, ldc); break;
      case 4: dot_rows<4>(k, ai, lda, b, ldb, n, alpha, beta, ci, ldc); break;
      case 5: dot_rows<5>(k, ai, lda, b, ldb, n, alpha, beta, ci, ldc); break;
      case 6: dot_rows<6>(k, ai, lda, b, ldb, n, alpha, beta, ci, ldc); break;
      case 7: dot_rows<7>(k, ai, lda, b, ldb, n, alpha, beta, ci, ldc); break;
      default: dot_rows<8>(k, ai, lda, b, ldb, n, alpha, beta, ci, ldc); break;
    }
  }
}

}  // namespace

void multiply(const PackedA& a, int64_t row0, int64_t rows, bool trans_b, int64_t n, float alpha, const float* b,
              int64_t ldb, float beta, float* c, int64_t ldc) {
  if (row0 % kMr != 0 || row0 < 0 || rows < 0 || row0 + rows > a.rows())
    throw std::logic_error("sgemm::multiply: the rows must start at a panel boundary and lie inside A");
  const int64_t k = a.depth();
  const float* data = a.data();
  const int64_t mp = round_up(a.rows(), kMr);
  auto block = [&](int64_t pc, int64_t kc, int64_t ic, int64_t, int64_t& stride) {
    stride = kc * kMr;
    return data + mp * pc + ((row0 + ic) / kMr) * kc * kMr;
  };
  drive(rows, n, k, round_up(rows, kMr), block, trans_b, b, ldb, alpha, beta, c + row0 * ldc, ldc);
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (!trans_a && trans_b && m <= kDotRows && k > 0 && n > 0) return few_rows(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  float* ap = a_scratch.get(kMc * kKc);
  auto block = [&](int64_t pc, int64_t kc, int64_t ic, int64_t mc, int64_t& stride) {
    for (int64_t i = 0; i < mc; i += kMr) pack_a_panel(trans_a, a, lda, ic + i, lesser(kMr, mc - i), pc, kc, ap + (i / kMr) * kc * kMr);
    stride = kc * kMr;
    return static_cast<const float*>(ap);
  };
  drive(m, n, k, kMc, block, trans_b, b, ldb, alpha, beta, c, ldc);
}

PackedA::PackedA(bool trans, int64_t m, int64_t k, const float* a, int64_t lda) : m_(m), k_(k) {
  data_ = allocate_packed(round_up(m, kMr) * k + 16, &storage_);
  pack_all(trans, m, k, a, lda, data_);
}

#pragma GCC pop_options
#else
// Not an x86-64 build: available() is false (no AVX-512), so none of this is ever called.
void multiply(const PackedA&, int64_t, int64_t, bool, int64_t, float, const float*, int64_t, float, float*, int64_t) {
  throw std::logic_error("sgemm::multiply: Kindle's AVX-512 GEMM does not exist on this architecture");
}
void gemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float, float*,
          int64_t) {
  throw std::logic_error("sgemm::gemm: Kindle's AVX-512 GEMM does not exist on this architecture");
}
PackedA::PackedA(bool, int64_t, int64_t, const float*, int64_t) {
  throw std::logic_error("sgemm::PackedA: Kindle's AVX-512 GEMM does not exist on this architecture");
}
#endif

PackedA::~PackedA() { release_packed(storage_); }

}  // namespace kindle::cpu::sgemm
