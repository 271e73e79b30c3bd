// GEMM: Intel MKL (from PyPI, through its single dynamic library mkl_rt) for float32 and
// float64; a plain loop for the other dtypes (no BLAS has them). On AMD's CPUs with AVX-512,
// float32 products of at least a few rows and columns run on Kindle's own kernel (sgemm.h): MKL
// runs its AVX2 code there, at half their speed (on Intel's it runs AVX-512 code, and stays). A
// linear layer at a small batch takes sgemm.h's dot-product form on either.
//
// Why MKL and not OpenBLAS: measured side by side with torch (which uses MKL), OpenBLAS reached
// 84-89% of torch's GFLOP/s at 256-1024 on this machine, MKL 98-104%. MKL runs on the GNU
// OpenMP threading layer, so its threads are the same libgomp pool as Kindle's own kernels
// instead of a second pool that spins against it. Built with KINDLE_BLAS=openblas (for machines
// without MKL), the same code calls OpenBLAS: see blas_symbols.h and the block below the declarations.
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <type_traits>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "cpu/blas.h"
#include "cpu/blas_symbols.h"
#include "cpu/parallel.h"
#include "cpu/sgemm.h"
#include "ops/kernels.h"

#ifndef KINDLE_BLAS_OPENBLAS
// Intel MKL through its own headers (the mkl-include wheel).
#include <mkl_cblas.h>
#include <mkl_service.h>
namespace {
using Trans = CBLAS_TRANSPOSE;
constexpr CBLAS_LAYOUT kRowMajor = CblasRowMajor;
constexpr Trans kNoTrans = CblasNoTrans, kTrans = CblasTrans;
constexpr CBLAS_IDENTIFIER kBMatrix = CblasBMatrix;
constexpr MKL_INT kPacked = CblasPacked;
constexpr int kThreadingGnu = MKL_THREADING_GNU, kInterfaceLp64 = MKL_INTERFACE_LP64;
}  // namespace
#else
// OpenBLAS: its headers differ between the PyPI wheel (scipy_-prefixed names) and a system's (plain
// names), so the entry points used are declared here with CBLAS's int-valued enums, under the
// names blas_symbols.h maps. Below them, the MKL extensions used, written with plain OpenBLAS calls
// under MKL's names and signatures (internal to this file), so that the code below serves both
// libraries.
extern "C" {
void cblas_sgemm(int layout, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
void cblas_dgemm(int layout, int ta, int tb, int m, int n, int k, double alpha, const double* a, int lda,
                 const double* b, int ldb, double beta, double* c, int ldc);
void cblas_sgemm_batch_strided(int layout, int ta, int tb, int m, int n, int k, float alpha, const float* a,
                               int lda, int stride_a, const float* b, int ldb, int stride_b, float beta, float* c,
                               int ldc, int stride_c, int batch);
void cblas_dgemm_batch_strided(int layout, int ta, int tb, int m, int n, int k, double alpha, const double* a,
                               int lda, int stride_a, const double* b, int ldb, int stride_b, double beta,
                               double* c, int ldc, int stride_c, int batch);
}

namespace {
using Trans = int;
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;  // CBLAS's enum values
constexpr int kPacked = 151, kBMatrix = 162;                      // (MKL's, for the emulations)
constexpr int kThreadingGnu = 3, kInterfaceLp64 = 0;
}  // namespace
#include "cpu/loops.h"

extern "C" {
void cblas_cgemm(int layout, int ta, int tb, int m, int n, int k, const void* alpha, const void* a, int lda,
                 const void* b, int ldb, const void* beta, void* c, int ldc);
void cblas_zgemm(int layout, int ta, int tb, int m, int n, int k, const void* alpha, const void* a, int lda,
                 const void* b, int ldb, const void* beta, void* c, int ldc);
}

#ifdef KINDLE_BLAS_SYSTEM_OPENBLAS
// (blas_symbols.h names these for the library's missing strided batches)
extern "C" {
void cblas_sgemm_batch_strided(int layout, int ta, int tb, int m, int n, int k, float alpha, const float* a,
                               int lda, int stride_a, const float* b, int ldb, int stride_b, float beta, float* c,
                               int ldc, int stride_c, int batch) {
  for (int i = 0; i < batch; ++i)
    cblas_sgemm(layout, ta, tb, m, n, k, alpha, a + size_t(i) * stride_a, lda, b + size_t(i) * stride_b, ldb, beta,
                c + size_t(i) * stride_c, ldc);
}
void cblas_dgemm_batch_strided(int layout, int ta, int tb, int m, int n, int k, double alpha, const double* a,
                               int lda, int stride_a, const double* b, int ldb, int stride_b, double beta,
                               double* c, int ldc, int stride_c, int batch) {
  for (int i = 0; i < batch; ++i)
    cblas_dgemm(layout, ta, tb, m, n, k, alpha, a + size_t(i) * stride_a, lda, b + size_t(i) * stride_b, ldb, beta,
                c + size_t(i) * stride_c, ldc);
}
}
#endif

namespace {

// Nothing to select: OpenBLAS's interface is LP64 only, its threads its own pthreads pool.
int MKL_Set_Threading_Layer(int) { return 0; }
int MKL_Set_Interface_Layer(int) { return 0; }

// Half precision: the wheel has no float16 GEMM, and its cblas_sbgemm (bfloat16) is declared in
// cblas.h but not built. Both operands are widened to float32 (exactly) for sgemm: the same float32
// accumulation as MKL's, a copy of the operands more. (CBLAS: 111 no transpose.)
template <typename T>
void widened_gemm(int layout, int ta, int tb, int m, int n, int k, float alpha, const uint16_t* a, int lda,
                  const uint16_t* b, int ldb, float beta, float* c, int ldc) {
  auto widened = [](const uint16_t* src, int ld, int rows, int cols) {  // rows x cols of src, packed
    std::vector<float> dst(size_t(rows) * size_t(cols));
    for (int r = 0; r < rows; ++r)
      kindle::cpu::widen(reinterpret_cast<const T*>(src) + size_t(r) * ld, dst.data() + size_t(r) * cols, cols);
    return dst;
  };
  const int acols = ta == 111 ? k : m, bcols = tb == 111 ? n : k;
  const std::vector<float> fa = widened(a, lda, ta == 111 ? m : k, acols);
  const std::vector<float> fb = widened(b, ldb, tb == 111 ? k : n, bcols);
  cblas_sgemm(layout, ta, tb, m, n, k, alpha, fa.data(), std::max(acols, 1), fb.data(), std::max(bcols, 1), beta, c,
              ldc);
}
void cblas_gemm_bf16bf16f32(int layout, int ta, int tb, int m, int n, int k, float alpha, const uint16_t* a, int lda,
                            const uint16_t* b, int ldb, float beta, float* c, int ldc) {
  widened_gemm<kindle::BFloat16>(layout, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void cblas_gemm_f16f16f32(int layout, int ta, int tb, int m, int n, int k, float alpha, const uint16_t* a, int lda,
                          const uint16_t* b, int ldb, float beta, float* c, int ldc) {
  widened_gemm<kindle::Half>(layout, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Packed GEMM (only B packed, row-major, as PackedGemm uses it): the "packed" B is alpha op(B)
// copied as a row-major k x n matrix, and a product with it a plain GEMM (with ldb = n, which
// PackedGemm passes). (CBLAS: 111 no transpose, 112 transpose.)
template <typename T>
size_t pack_get_size(int k, int n) { return std::max<size_t>(1, size_t(k) * size_t(n)) * sizeof(T); }
template <typename T>
void pack_copy(int trans, int n, int k, T alpha, const T* src, int ld, T* dest) {
  for (int p = 0; p < k; ++p)
    for (int j = 0; j < n; ++j)
      dest[size_t(p) * n + j] = alpha * (trans == 112 ? src[size_t(j) * ld + p] : src[size_t(p) * ld + j]);
}
size_t cblas_sgemm_pack_get_size(int, int, int n, int k) { return pack_get_size<float>(k, n); }
size_t cblas_dgemm_pack_get_size(int, int, int n, int k) { return pack_get_size<double>(k, n); }
void cblas_sgemm_pack(int, int, int trans, int, int n, int k, float alpha, const float* src, int ld, float* dest) {
  pack_copy(trans, n, k, alpha, src, ld, dest);
}
void cblas_dgemm_pack(int, int, int trans, int, int n, int k, double alpha, const double* src, int ld, double* dest) {
  pack_copy(trans, n, k, alpha, src, ld, dest);
}
void cblas_sgemm_compute(int layout, int ta, int, int m, int n, int k, const float* a, int lda, const float* b,
                         int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(layout, ta, 111, m, n, k, 1.f, a, lda, b, ldb, beta, c, ldc);
}
void cblas_dgemm_compute(int layout, int ta, int, int m, int n, int k, const double* a, int lda, const double* b,
                         int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(layout, ta, 111, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

// Complex batches: OpenBLAS's c/zgemm_batch_strided (0.3.34) step through the batch by `stride`
// real scalars, not complex elements as MKL's do (a bug: their interface indexes a float pointer),
// so that matrices past the first are wrong. One c/zgemm per matrix instead.
template <size_t kBytes, typename Gemm>
void complex_batch(Gemm gemm, int layout, int ta, int tb, int m, int n, int k, const void* alpha, const void* a,
                   int lda, int sa, const void* b, int ldb, int sb, const void* beta, void* c, int ldc, int sc,
                   int batch) {
  auto pa = static_cast<const char*>(a), pb = static_cast<const char*>(b);
  auto pc = static_cast<char*>(c);
  for (size_t i = 0; i < size_t(batch); ++i)
    gemm(layout, ta, tb, m, n, k, alpha, pa + i * sa * kBytes, lda, pb + i * sb * kBytes, ldb, beta,
         pc + i * sc * kBytes, ldc);
}
void cblas_cgemm_batch_strided(int layout, int ta, int tb, int m, int n, int k, const void* alpha, const void* a,
                               int lda, int sa, const void* b, int ldb, int sb, const void* beta, void* c, int ldc,
                               int sc, int batch) {
  complex_batch<8>(cblas_cgemm, layout, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
}
void cblas_zgemm_batch_strided(int layout, int ta, int tb, int m, int n, int k, const void* alpha, const void* a,
                               int lda, int sa, const void* b, int ldb, int sb, const void* beta, void* c, int ldc,
                               int sc, int batch) {
  complex_batch<16>(cblas_zgemm, layout, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
}

}  // namespace
#endif

namespace kindle::cpu {

const char* blas_library() {
#ifdef KINDLE_BLAS_OPENBLAS
  return "openblas";
#else
  return "mkl";
#endif
}

const char* vector_math_library() {
#ifdef KINDLE_WITH_SLEEF
  return "sleef";
#else
  return "libmvec";
#endif
}

// Must run before any other MKL call: otherwise mkl_rt picks Intel's OpenMP runtime (or whatever
// MKL_THREADING_LAYER says), a second thread pool in the process.
void init_mkl() {
  static std::once_flag once;
  std::call_once(once, [] {
    MKL_Set_Interface_Layer(kInterfaceLp64);
    MKL_Set_Threading_Layer(kThreadingGnu);
  });
}

namespace {

template <typename T>
void gemm_loop(const GemmArgs& g) {
  using A = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, opmath_t<T>, int64_t>;
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  T* c = static_cast<T*>(g.c);
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      A acc = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        A x = A(opmath_t<T>(g.trans_a ? a[p * g.lda + i] : a[i * g.lda + p]));
        A y = A(opmath_t<T>(g.trans_b ? b[j * g.ldb + p] : b[p * g.ldb + j]));
        if constexpr (std::is_same_v<T, bool>) acc = acc || (x && y);
        else acc += x * y;
      }
      A prev = g.beta == 0 ? A(0) : A(opmath_t<T>(c[i * g.ldc + j]));
      if constexpr (std::is_same_v<T, bool>) c[i * g.ldc + j] = bool(acc) || bool(prev);
      else c[i * g.ldc + j] = T(opmath_t<T>(A(g.alpha) * acc + A(g.beta) * prev));
    }
}

template <typename T>
void blas_gemm(const GemmArgs& g, int64_t batch, int64_t sa, int64_t sb, int64_t sc) {
  const Trans ta = g.trans_a ? kTrans : kNoTrans, tb = g.trans_b ? kTrans : kNoTrans;
  auto a = static_cast<const T*>(g.a);
  auto b = static_cast<const T*>(g.b);
  auto c = static_cast<T*>(g.c);
  int m = int(g.m), n = int(g.n), k = int(g.k), lda = int(g.lda), ldb = int(g.ldb), ldc = int(g.ldc);
  if (batch == 1) {
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(kRowMajor, ta, tb, m, n, k, float(g.alpha), a, lda, b, ldb, float(g.beta), c, ldc);
    else
      cblas_dgemm(kRowMajor, ta, tb, m, n, k, g.alpha, a, lda, b, ldb, g.beta, c, ldc);
  } else {
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm_batch_strided(kRowMajor, ta, tb, m, n, k, float(g.alpha), a, lda, int(sa), b, ldb, int(sb),
                                float(g.beta), c, ldc, int(sc), int(batch));
    else
      cblas_dgemm_batch_strided(kRowMajor, ta, tb, m, n, k, g.alpha, a, lda, int(sa), b, ldb, int(sb), g.beta, c,
                                ldc, int(sc), int(batch));
  }
}

bool fits_int(std::initializer_list<int64_t> xs) {
  for (int64_t x : xs)
    if (x > INT_MAX) return false;
  return true;
}

// A product with a few rows (a batch-1 linear layer) reads the whole weight to do little work:
// it is bound by memory, not arithmetic. Fixed blocks of columns, each one single-threaded MKL
// call, spread over the threads: each core streams (and keeps in its own L2, call after call)
// its own part of the weight. The blocks do not depend on the thread count, nor do the results.
constexpr int64_t kFewRows = 8, kColumnBlock = 128;

template <typename T>
void few_rows_gemm(const GemmArgs& g) {
  const int64_t blocks = (g.n + kColumnBlock - 1) / kColumnBlock;
  parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    MKL_Set_Num_Threads_Local(1);
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t j0 = blk * kColumnBlock;
      GemmArgs part = g;
      part.n = std::min(kColumnBlock, g.n - j0);
      part.b = static_cast<const T*>(g.b) + (g.trans_b ? j0 * g.ldb : j0);
      part.c = static_cast<T*>(g.c) + j0;
      blas_gemm<T>(part, 1, 0, 0, 0);
    }
  });
}

// The BLAS on several threads may split a product's sum over k (MKL did for 128x4096 by 4096x1024:
// the 5th digit changed between 1 and 2 threads), and its strict reproducibility mode halved the
// speed of small single-threaded products. So a large product is cut into bands of C that are a
// function of its shape only (up to kBlasBands of them), each one single-threaded BLAS call; the
// bands, and the products of a batch, run in parallel or in turn, the same calls either way, so
// the bits do not depend on the thread count. As many bands as the machine has cores, up to 4
// (a power of two): each band is a call that repacks A or B, and on one thread 4 bands cost up to
// 8% against 2 (1024x768 by 768x768, 1024x3072 by 3072x768 in bands of 256 rows).
int64_t blas_bands() {
  static const int64_t bands = [] {
    const int procs = omp_get_num_procs();
    return procs >= 4 ? 4 : procs >= 2 ? 2 : 1;
  }();
  return bands;
}

template <typename T>
void banded_blas_gemm(const GemmArgs& g, int64_t batch, int64_t sa, int64_t sb, int64_t sc, int threads) {
  const double flops = double(g.m) * double(g.n) * double(g.k);
  const bool by_cols = g.n >= g.m;
  const int64_t extent = by_cols ? g.n : g.m;
  const int64_t bands = std::max<int64_t>(1, std::min({blas_bands(), int64_t(flops / double(1 << 24)), extent / 64}));
  const int64_t step = (extent + bands - 1) / bands;
  const int64_t es = sizeof(T);
  auto run = [&](int64_t item) {
    const int64_t bi = item / bands, lo = (item % bands) * step, len = std::min(extent, lo + step) - lo;
    if (len <= 0) return;
    GemmArgs part = g;
    const char* a = static_cast<const char*>(g.a) + bi * sa * es;
    const char* b = static_cast<const char*>(g.b) + bi * sb * es;
    char* c = static_cast<char*>(g.c) + bi * sc * es;
    if (by_cols) {
      part.n = len;
      b += (g.trans_b ? lo * g.ldb : lo) * es;
      c += lo * es;
    } else {
      part.m = len;
      a += (g.trans_a ? lo : lo * g.lda) * es;
      c += lo * g.ldc * es;
    }
    part.a = a;
    part.b = b;
    part.c = c;
    blas_gemm<T>(part, 1, 0, 0, 0);
  };
  const int64_t items = batch * bands;
  if (threads <= 1 || items == 1 || omp_in_parallel()) {
    MKL_Set_Num_Threads_Local(1);
    if (bands == 1) return blas_gemm<T>(g, batch, sa, sb, sc);  // one product, or a batch of one-band products
    for (int64_t i = 0; i < items; ++i) run(i);
    return;
  }
  parallel_for(0, items, 1, [&](int64_t i0, int64_t i1) {
    MKL_Set_Num_Threads_Local(1);
    for (int64_t i = i0; i < i1; ++i) run(i);
  });
}

// Kindle's SGEMM takes products with at least this many rows and columns; thinner ones (a
// matrix-vector product, a batch-1 linear layer) are bound by memory, where MKL's paths do well.
constexpr int64_t kOwnMin = 8;
bool own_sgemm(int64_t m, int64_t n) { return m >= kOwnMin && n >= kOwnMin && sgemm::preferred(); }
// A linear layer at a small batch (1-16 rows times a transposed weight): Kindle's dot-product
// form reads the weight once in place (0.35-0.45 of torch's time at 2-16 rows here, 0.85 at 1).
bool own_dot(const GemmArgs& g) {
  return !g.trans_a && g.trans_b && g.m <= sgemm::kDotRows && g.n >= kOwnMin && sgemm::available();
}

// One float32 product on `threads` threads: C split into bands of whole micro-tiles of columns
// (or of rows, for a tall C). Every element of C is the same sum in the same order however C is
// split, so the result does not depend on the thread count.
void own_gemm(const GemmArgs& g, int threads) {
  auto a = static_cast<const float*>(g.a);
  auto b = static_cast<const float*>(g.b);
  auto c = static_cast<float*>(g.c);
  const float alpha = float(g.alpha), beta = float(g.beta);
  if (threads <= 1 || omp_in_parallel()) {
    sgemm::gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, alpha, a, g.lda, b, g.ldb, beta, c, g.ldc);
    return;
  }
  const bool by_cols = g.n >= g.m;
  const int64_t extent = by_cols ? g.n : g.m, unit = by_cols ? 32 : 12;
  const int64_t parts = std::min<int64_t>(threads, (extent + unit - 1) / unit);
  const int64_t step = (extent + unit * parts - 1) / (unit * parts) * unit;
  parallel_for(0, parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t lo = p * step, len = std::min(extent, lo + step) - lo;
      if (len <= 0) continue;
      if (by_cols)
        sgemm::gemm(g.trans_a, g.trans_b, g.m, len, g.k, alpha, a, g.lda, b + (g.trans_b ? lo * g.ldb : lo), g.ldb,
                    beta, c + lo, g.ldc);
      else
        sgemm::gemm(g.trans_a, g.trans_b, len, g.n, g.k, alpha, a + (g.trans_a ? lo : lo * g.lda), g.lda, b, g.ldb,
                    beta, c + lo * g.ldc, g.ldc);
    }
  });
}

// A batch of float32 products: the matrices in parallel when there are enough of them, else one
// after another, each on every thread.
void own_gemm_batch(const GemmArgs& g0, int64_t batch, int64_t sa, int64_t sb, int64_t sc, int threads) {
  auto item = [&](int64_t i, int t) {
    GemmArgs g = g0;
    g.a = static_cast<const float*>(g.a) + i * sa;
    g.b = static_cast<const float*>(g.b) + i * sb;
    g.c = static_cast<float*>(g.c) + i * sc;
    own_gemm(g, t);
  };
  if (threads <= 1) {
    for (int64_t i = 0; i < batch; ++i) item(i, 1);
  } else if (batch >= 2 * threads) {
    parallel_for(0, batch, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) item(i, 1);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i) item(i, threads);
  }
}

// complex64/complex128 through MKL's cgemm/zgemm (a batch of one is a batch too).
void complex_gemm(DType dt, const GemmArgs& g, int64_t batch, int64_t sa, int64_t sb, int64_t sc) {
  KINDLE_CHECK(fits_int({g.m, g.n, g.k, g.lda, g.ldb, g.ldc, sa, sb, sc, batch}), "matmul: a complex product of ",
               g.m, "x", g.k, " and ", g.k, "x", g.n, " (batch ", batch, ") is beyond the BLAS's 32-bit sizes");
  init_mkl();
  double flops = 4.0 * double(g.m) * double(g.n) * double(g.k) * double(batch);
  MKL_Set_Num_Threads_Local(flops < double(1 << 23) ? 1 : get_num_threads());
  const Trans ta = g.trans_a ? kTrans : kNoTrans, tb = g.trans_b ? kTrans : kNoTrans;
  int m = int(g.m), n = int(g.n), k = int(g.k), lda = int(g.lda), ldb = int(g.ldb), ldc = int(g.ldc);
  if (dt == kComplex64) {
    const c64 alpha(float(g.alpha)), beta(float(g.beta));
    cblas_cgemm_batch_strided(kRowMajor, ta, tb, m, n, k, &alpha, g.a, lda, int(sa), g.b, ldb, int(sb), &beta, g.c,
                              ldc, int(sc), int(batch));
  } else {
    const c128 alpha(g.alpha), beta(g.beta);
    cblas_zgemm_batch_strided(kRowMajor, ta, tb, m, n, k, &alpha, g.a, lda, int(sa), g.b, ldb, int(sb), &beta, g.c,
                              ldc, int(sc), int(batch));
  }
}

// Half precision through MKL's bf16/f16 GEMMs (float32 accumulation, the hardware's bf16 dot
// products where the CPU has them), then rounded once into the half-precision output.
template <typename T>
void half_gemm(const GemmArgs& g, int64_t batch, int64_t sa, int64_t sb, int64_t sc) {
  init_mkl();
  const Trans ta = g.trans_a ? kTrans : kNoTrans, tb = g.trans_b ? kTrans : kNoTrans;
  double flops = double(g.m) * double(g.n) * double(g.k) * double(batch);
  MKL_Set_Num_Threads_Local(flops < double(1 << 23) ? 1 : get_num_threads());
  std::vector<float> acc(size_t(g.m * g.n));
  for (int64_t bi = 0; bi < batch; ++bi) {
    auto a = static_cast<const uint16_t*>(g.a) + bi * sa;
    auto b = static_cast<const uint16_t*>(g.b) + bi * sb;
    T* c = static_cast<T*>(g.c) + bi * sc;
    if constexpr (std::is_same_v<T, BFloat16>)
      cblas_gemm_bf16bf16f32(kRowMajor, ta, tb, int(g.m), int(g.n), int(g.k), 1.f, a, int(g.lda), b, int(g.ldb), 0.f,
                             acc.data(), int(g.n));
    else
      cblas_gemm_f16f16f32(kRowMajor, ta, tb, int(g.m), int(g.n), int(g.k), 1.f, a, int(g.lda), b, int(g.ldb), 0.f,
                           acc.data(), int(g.n));
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        float v = float(g.alpha) * acc[size_t(i * g.n + j)];
        if (g.beta != 0) v += float(g.beta) * float(c[i * g.ldc + j]);
        c[i * g.ldc + j] = T(v);
      }
  }
}

// One row of an outer product, c[j] = a * b[j], with stores that bypass the caches (no read of
// the destination's lines first): for an output larger than the caches, which the next reader
// fetches from memory anyway, that halves the memory traffic. The row's unaligned head and tail
// take ordinary stores.
inline void streamed_scaled_row(float* __restrict c, const float* __restrict b, float a, int64_t n) {
  int64_t j = 0;
#if defined(__AVX512F__)
  const int64_t head = std::min<int64_t>(n, int64_t((64 - reinterpret_cast<uintptr_t>(c) % 64) % 64) / 4);
  for (; j < head; ++j) c[j] = a * b[j];
  const __m512 va = _mm512_set1_ps(a);
  for (; j + 16 <= n; j += 16) _mm512_stream_ps(c + j, _mm512_mul_ps(va, _mm512_loadu_ps(b + j)));
#endif
  for (; j < n; ++j) c[j] = a * b[j];
}

// k = 1 (outer products: the weight gradients of per-example linear layers under vmap): each
// element is the one product a GEMM would compute, written once; packing and tiling buy nothing.
// Outputs of more than 8 MB (64 examples of a 784x128 layer's gradient: 25.7 MB) are written
// with streaming stores.
template <typename T>
void outer_kernel(const GemmArgs& g, int64_t batch, int64_t sa, int64_t sb, int64_t sc) {
  const T* A = static_cast<const T*>(g.a);
  const T* Bm = static_cast<const T*>(g.b);
  T* C = static_cast<T*>(g.c);
  const int64_t ia = g.trans_a ? 1 : g.lda, jb = g.trans_b ? g.ldb : 1;
  const T alpha = T(g.alpha);
  const bool stream = std::is_same_v<T, float> && double(batch) * double(g.m) * double(g.n) * sizeof(T) > 8e6;
  parallel_for(0, batch * g.m, std::max<int64_t>(1, 32768 / std::max<int64_t>(g.n, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / g.m, i = r % g.m;
      const T ai = A[b * sa + i * ia];
      const T* bp = Bm + b * sb;
      T* cp = C + b * sc + i * g.ldc;
      if (jb == 1 && alpha == T(1)) {
        if constexpr (std::is_same_v<T, float>) {
          if (stream) {
            streamed_scaled_row(cp, bp, ai, g.n);
            continue;
          }
        }
#pragma omp simd
        for (int64_t j = 0; j < g.n; ++j) cp[j] = ai * bp[j];
      } else {
        for (int64_t j = 0; j < g.n; ++j) cp[j] = alpha * (ai * bp[j * jb]);
      }
    }
#if defined(__AVX512F__)
    if (stream) _mm_sfence();  // the streamed lines are visible before the region ends
#endif
  });
}

void gemm_kernel(DType dt, const GemmArgs* g0, int64_t batch, int64_t sa, int64_t sb, int64_t sc) {
  if (g0->m == 0 || g0->n == 0 || batch == 0) return;
  if (is_complex(dt)) return complex_gemm(dt, *g0, batch, sa, sb, sc);
  if ((dt == kBFloat16 || dt == kFloat16) && fits_int({g0->m, g0->n, g0->k, g0->lda, g0->ldb, g0->ldc})) {
    if (dt == kBFloat16) half_gemm<BFloat16>(*g0, batch, sa, sb, sc);
    else half_gemm<Half>(*g0, batch, sa, sb, sc);
    return;
  }
  dispatch_all(dt, "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (g0->k == 1 && g0->beta == 0) return outer_kernel<T>(*g0, batch, sa, sb, sc);
      // MKL's LP64 interface takes 32-bit sizes; a larger problem falls back to the loop rather
      // than overflowing.
      if (fits_int({g0->m, g0->n, g0->k, g0->lda, g0->ldb, g0->ldc, sa, sb, sc, batch})) {
        init_mkl();
        // Small products run on one thread: waking the pool costs more than it saves, and on a
        // time-sliced second core it can cost milliseconds (a recurrent step of an LSTM, 20x256 by
        // 256x1024, is 5M multiply-adds: threaded, it ran 2-3x slower on a loaded machine).
        double flops = double(g0->m) * double(g0->n) * double(g0->k) * double(batch);
        if constexpr (std::is_same_v<T, float>) {
          if (own_dot(*g0)) {
            own_gemm_batch(*g0, batch, sa, sb, sc, flops < double(1 << 23) ? 1 : get_num_threads());
            return;
          }
        }
        if (batch == 1 && g0->m <= kFewRows && g0->n >= 2 * kColumnBlock && flops < double(1 << 23)) {
          few_rows_gemm<T>(*g0);
          return;
        }
        if constexpr (std::is_same_v<T, float>) {
          if (own_sgemm(g0->m, g0->n)) {
            own_gemm_batch(*g0, batch, sa, sb, sc, flops < double(1 << 23) ? 1 : get_num_threads());
            return;
          }
        }
        banded_blas_gemm<T>(*g0, batch, sa, sb, sc, flops < double(1 << 23) ? 1 : get_num_threads());
        return;
      }
    }
    const int64_t es = sizeof(T);
    for (int64_t i = 0; i < batch; ++i) {
      GemmArgs g = *g0;
      g.a = static_cast<const char*>(g.a) + i * sa * es;
      g.b = static_cast<const char*>(g.b) + i * sb * es;
      g.c = static_cast<char*>(g.c) + i * sc * es;
      gemm_loop<T>(g);
    }
  });
}

}  // namespace

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc, int threads) {
  if (m == 0 || n == 0) return;
  GemmArgs g{trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, double(alpha), double(beta)};
  if constexpr (std::is_same_v<T, float>) {
    if (own_sgemm(m, n) || own_dot(g)) return own_gemm(g, threads);
  }
  init_mkl();
  if (threads <= 1) {  // callers on one thread (a convolution's units) keep one call
    MKL_Set_Num_Threads_Local(1);
    blas_gemm<T>(g, 1, 0, 0, 0);
    return;
  }
  banded_blas_gemm<T>(g, 1, 0, 0, 0, threads);
}
template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t, int);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
                           int64_t, double, double*, int64_t, int);

template <typename T>
PackedGemm<T>::PackedGemm(bool trans_b, int64_t m, int64_t n, int64_t k, const T* b, int64_t ldb)
    : m_(m), n_(n), k_(k) {
  KINDLE_CHECK(fits_int({m, n, k, ldb}), "PackedGemm: sizes beyond MKL's 32-bit interface: ", m, "x", n, "x", k);
  init_mkl();
  MKL_Set_Num_Threads_Local(1);
  const Trans tb = trans_b ? kTrans : kNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    size_t bytes = cblas_sgemm_pack_get_size(kBMatrix, int(m), int(n), int(k));
    packed_ = static_cast<T*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    KINDLE_CHECK(packed_, "PackedGemm: out of memory (", bytes, " bytes)");
    cblas_sgemm_pack(kRowMajor, kBMatrix, tb, int(m), int(n), int(k), 1.f, b, int(ldb), packed_);
  } else {
    size_t bytes = cblas_dgemm_pack_get_size(kBMatrix, int(m), int(n), int(k));
    packed_ = static_cast<T*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    KINDLE_CHECK(packed_, "PackedGemm: out of memory (", bytes, " bytes)");
    cblas_dgemm_pack(kRowMajor, kBMatrix, tb, int(m), int(n), int(k), 1.0, b, int(ldb), packed_);
  }
}

template <typename T>
PackedGemm<T>::~PackedGemm() {
  std::free(packed_);
}

template <typename T>
void PackedGemm<T>::multiply(const T* a, int64_t lda, T beta, T* c, int64_t ldc) const {
  if (m_ == 0 || n_ == 0) return;
  MKL_Set_Num_Threads_Local(1);
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm_compute(kRowMajor, kNoTrans, kPacked, int(m_), int(n_), int(k_), a, int(lda), packed_, int(n_), beta, c,
                        int(ldc));
  else
    cblas_dgemm_compute(kRowMajor, kNoTrans, kPacked, int(m_), int(n_), int(k_), a, int(lda), packed_, int(n_), beta, c,
                        int(ldc));
}

template class PackedGemm<float>;
template class PackedGemm<double>;

}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(gemm_stub, DeviceType::CPU, &cpu::gemm_kernel);
}  // namespace kindle
