// LAPACK through MKL (mkl_rt exports the Fortran LP64 interface; its own headers declare it): Cholesky, LU, symmetric
// eigendecomposition, SVD, QR and triangular solves for float32/float64. Each routine runs
// over the batch in parallel with single-threaded LAPACK calls (small matrices, the common
// batched case) or, for one matrix, one call that MKL threads itself. With KINDLE_BLAS=openblas
// the same calls go to OpenBLAS's LAPACK (blas_symbols.h), batches all by the per-matrix loop.
#include <algorithm>
#include <climits>
#include <complex>
#include <vector>

#include "cpu/blas.h"
#include "cpu/blas_symbols.h"
#include "cpu/parallel.h"
#include "cpu/small_lu.h"
#include "ops/kernels.h"

#ifndef KINDLE_BLAS_OPENBLAS
// Intel MKL through its own headers (the mkl-include wheel), complex numbers as std::complex (MKL's
// documented way to name its complex types).
#define MKL_Complex8 std::complex<float>
#define MKL_Complex16 std::complex<double>
#include <mkl_cblas.h>
#include <mkl_lapack.h>
#include <mkl_service.h>
// mkl_rt exports the batched Cholesky, but MKL declares it only in its GPU-offload header.
extern "C" {
void spotrf_batch_strided(const char* uplo, const MKL_INT* n, float* a, const MKL_INT* lda, const MKL_INT* stride_a,
                          const MKL_INT* batch, MKL_INT* info);
void dpotrf_batch_strided(const char* uplo, const MKL_INT* n, double* a, const MKL_INT* lda, const MKL_INT* stride_a,
                          const MKL_INT* batch, MKL_INT* info);
}
namespace {
constexpr CBLAS_LAYOUT kColMajor = CblasColMajor;
struct TrsmArgs {  // CBLAS's enums from the int codes the solvers compute
  CBLAS_SIDE side; CBLAS_UPLO uplo; CBLAS_TRANSPOSE trans; CBLAS_DIAG diag;
  TrsmArgs(int s, int u, int t, int d)
      : side(CBLAS_SIDE(s)), uplo(CBLAS_UPLO(u)), trans(CBLAS_TRANSPOSE(t)), diag(CBLAS_DIAG(d)) {}
};
}  // namespace
#else
// OpenBLAS: its headers differ between the PyPI wheel (scipy_-prefixed names) and a system's
// (plain names; Debian's has no LAPACK prototypes), so the routines used are declared here with
// CBLAS's int-valued enums and the Fortran LP64 interface, under the names blas_symbols.h maps.
extern "C" {
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda, const int* ipiv,
             float* b, const int* ldb, int* info);
void dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda, const int* ipiv,
             double* b, const int* ldb, int* info);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
             const int* lwork, int* iwork, const int* liwork, int* info);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info);
// The two-stage tridiagonal reduction (eigenvalues only in LAPACK): 15-25% faster than syevd's
// from n = 1024 on (measured here, MKL 2026, 1 and 2 threads); slower below.
void ssyevd_2stage_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
                    const int* lwork, int* iwork, const int* liwork, int* info);
void dsyevd_2stage_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                    double* work, const int* lwork, int* iwork, const int* liwork, int* info);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u, const int* ldu,
             float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
             int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* work,
             const int* lwork, int* info);
void cblas_strsm(int layout, int side, int uplo, int transa, int diag, int m, int n, float alpha, const float* a,
                 int lda, float* b, int ldb);
void cblas_dtrsm(int layout, int side, int uplo, int transa, int diag, int m, int n, double alpha, const double* a,
                 int lda, double* b, int ldb);
void sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr, float* wi,
            float* vl, const int* ldvl, float* vr, const int* ldvr, float* work, const int* lwork, int* info);
void dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda, double* wr, double* wi,
            double* vl, const int* ldvl, double* vr, const int* ldvr, double* work, const int* lwork, int* info);
void ssytrf_(const char* uplo, const int* n, float* a, const int* lda, int* ipiv, float* work, const int* lwork,
             int* info);
void dsytrf_(const char* uplo, const int* n, double* a, const int* lda, int* ipiv, double* work, const int* lwork,
             int* info);
void ssytrs_(const char* uplo, const int* n, const int* nrhs, const float* a, const int* lda, const int* ipiv,
             float* b, const int* ldb, int* info);
void dsytrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda, const int* ipiv,
             double* b, const int* ldb, int* info);
void cgetrf_(const int* m, const int* n, void* a, const int* lda, int* ipiv, int* info);
void zgetrf_(const int* m, const int* n, void* a, const int* lda, int* ipiv, int* info);
void cgetrs_(const char* trans, const int* n, const int* nrhs, const void* a, const int* lda, const int* ipiv,
             void* b, const int* ldb, int* info);
void zgetrs_(const char* trans, const int* n, const int* nrhs, const void* a, const int* lda, const int* ipiv,
             void* b, const int* ldb, int* info);
// complex (single and double): the matrices are interleaved (re, im) pairs, passed as void*
void cpotrf_(const char* uplo, const int* n, void* a, const int* lda, int* info);
void zpotrf_(const char* uplo, const int* n, void* a, const int* lda, int* info);
void cheevd_(const char* jobz, const char* uplo, const int* n, void* a, const int* lda, float* w, void* work,
             const int* lwork, float* rwork, const int* lrwork, int* iwork, const int* liwork, int* info);
void zheevd_(const char* jobz, const char* uplo, const int* n, void* a, const int* lda, double* w, void* work,
             const int* lwork, double* rwork, const int* lrwork, int* iwork, const int* liwork, int* info);
void cgesdd_(const char* jobz, const int* m, const int* n, void* a, const int* lda, float* s, void* u, const int* ldu,
             void* vt, const int* ldvt, void* work, const int* lwork, float* rwork, int* iwork, int* info);
void zgesdd_(const char* jobz, const int* m, const int* n, void* a, const int* lda, double* s, void* u, const int* ldu,
             void* vt, const int* ldvt, void* work, const int* lwork, double* rwork, int* iwork, int* info);
void cgeqrf_(const int* m, const int* n, void* a, const int* lda, void* tau, void* work, const int* lwork, int* info);
void zgeqrf_(const int* m, const int* n, void* a, const int* lda, void* tau, void* work, const int* lwork, int* info);
void cungqr_(const int* m, const int* n, const int* k, void* a, const int* lda, const void* tau, void* work,
             const int* lwork, int* info);
void zungqr_(const int* m, const int* n, const int* k, void* a, const int* lda, const void* tau, void* work,
             const int* lwork, int* info);
void cgeev_(const char* jobvl, const char* jobvr, const int* n, void* a, const int* lda, void* w, void* vl,
            const int* ldvl, void* vr, const int* ldvr, void* work, const int* lwork, float* rwork, int* info);
void zgeev_(const char* jobvl, const char* jobvr, const int* n, void* a, const int* lda, void* w, void* vl,
            const int* ldvl, void* vr, const int* ldvr, void* work, const int* lwork, double* rwork, int* info);
void cblas_ctrsm(int layout, int side, int uplo, int transa, int diag, int m, int n, const void* alpha, const void* a,
                 int lda, void* b, int ldb);
void cblas_ztrsm(int layout, int side, int uplo, int transa, int diag, int m, int n, const void* alpha, const void* a,
                 int lda, void* b, int ldb);
}
namespace {
constexpr int kColMajor = 102;
struct TrsmArgs {
  int side, uplo, trans, diag;
  TrsmArgs(int s, int u, int t, int d) : side(s), uplo(u), trans(t), diag(d) {}
};
}  // namespace
#endif

namespace kindle::cpu {
namespace {

// One overload set per routine, so the batch loop below is written once for both dtypes.
void potrf(const char* u, const int* n, float* a, const int* l, int* i) { spotrf_(u, n, a, l, i); }
void potrf(const char* u, const int* n, double* a, const int* l, int* i) { dpotrf_(u, n, a, l, i); }
void getrf(const int* m, const int* n, float* a, const int* l, int* p, int* i) { sgetrf_(m, n, a, l, p, i); }
void getrf(const int* m, const int* n, double* a, const int* l, int* p, int* i) { dgetrf_(m, n, a, l, p, i); }
// MKL's batched Cholesky: one call for the batch (Cholesky of 256 64x64 matrices: 1.5x faster than a loop).
// OpenBLAS has none: there a batch takes the per-matrix loop (kBatchedLapack is false, the calls discarded).
#ifndef KINDLE_BLAS_OPENBLAS
constexpr bool kBatchedLapack = true;
void potrf_batch(const char* u, const int* n, float* a, const int* l, const int* sa, const int* b, int* i) {
  spotrf_batch_strided(u, n, a, l, sa, b, i);
}
void potrf_batch(const char* u, const int* n, double* a, const int* l, const int* sa, const int* b, int* i) {
  dpotrf_batch_strided(u, n, a, l, sa, b, i);
}
#else
constexpr bool kBatchedLapack = false;
#endif
void getrs(const char* t, const int* n, const int* r, const float* a, const int* l, const int* p, float* b,
           const int* lb, int* i) { sgetrs_(t, n, r, a, l, p, b, lb, i); }
void getrs(const char* t, const int* n, const int* r, const double* a, const int* l, const int* p, double* b,
           const int* lb, int* i) { dgetrs_(t, n, r, a, l, p, b, lb, i); }
void syevd(bool two_stage, const char* j, const char* u, const int* n, float* a, const int* l, float* w, float* wk,
           const int* lw, int* iw, const int* liw, int* i) {
  (two_stage ? ssyevd_2stage_ : ssyevd_)(j, u, n, a, l, w, wk, lw, iw, liw, i);
}
void syevd(bool two_stage, const char* j, const char* u, const int* n, double* a, const int* l, double* w, double* wk,
           const int* lw, int* iw, const int* liw, int* i) {
  (two_stage ? dsyevd_2stage_ : dsyevd_)(j, u, n, a, l, w, wk, lw, iw, liw, i);
}
void gesdd(const char* j, const int* m, const int* n, float* a, const int* l, float* s, float* u, const int* lu,
           float* vt, const int* lvt, float* wk, const int* lw, int* iw, int* i) {
  sgesdd_(j, m, n, a, l, s, u, lu, vt, lvt, wk, lw, iw, i);
}
void gesdd(const char* j, const int* m, const int* n, double* a, const int* l, double* s, double* u, const int* lu,
           double* vt, const int* lvt, double* wk, const int* lw, int* iw, int* i) {
  dgesdd_(j, m, n, a, l, s, u, lu, vt, lvt, wk, lw, iw, i);
}
void geqrf(const int* m, const int* n, float* a, const int* l, float* t, float* w, const int* lw, int* i) {
  sgeqrf_(m, n, a, l, t, w, lw, i);
}
void geqrf(const int* m, const int* n, double* a, const int* l, double* t, double* w, const int* lw, int* i) {
  dgeqrf_(m, n, a, l, t, w, lw, i);
}
void orgqr(const int* m, const int* n, const int* k, float* a, const int* l, const float* t, float* w, const int* lw,
           int* i) { sorgqr_(m, n, k, a, l, t, w, lw, i); }
void orgqr(const int* m, const int* n, const int* k, double* a, const int* l, const double* t, double* w,
           const int* lw, int* i) { dorgqr_(m, n, k, a, l, t, w, lw, i); }
void trsm(int s, int u, int t, int d, int m, int n, const float* a, int la, float* b, int lb) {
  const TrsmArgs e(s, u, t, d);
  cblas_strsm(kColMajor, e.side, e.uplo, e.trans, e.diag, m, n, 1.0f, a, la, b, lb);
}
void trsm(int s, int u, int t, int d, int m, int n, const double* a, int la, double* b, int lb) {
  const TrsmArgs e(s, u, t, d);
  cblas_dtrsm(kColMajor, e.side, e.uplo, e.trans, e.diag, m, n, 1.0, a, la, b, lb);
}

void geev(const char* jl, const char* jr, const int* n, float* a, const int* l, float* wr, float* wi, float* vl,
          const int* lvl, float* vr, const int* lvr, float* w, const int* lw, int* i) {
  sgeev_(jl, jr, n, a, l, wr, wi, vl, lvl, vr, lvr, w, lw, i);
}
void geev(const char* jl, const char* jr, const int* n, double* a, const int* l, double* wr, double* wi, double* vl,
          const int* lvl, double* vr, const int* lvr, double* w, const int* lw, int* i) {
  dgeev_(jl, jr, n, a, l, wr, wi, vl, lvl, vr, lvr, w, lw, i);
}
void sytrf(const char* u, const int* n, float* a, const int* l, int* p, float* w, const int* lw, int* i) {
  ssytrf_(u, n, a, l, p, w, lw, i);
}
void sytrf(const char* u, const int* n, double* a, const int* l, int* p, double* w, const int* lw, int* i) {
  dsytrf_(u, n, a, l, p, w, lw, i);
}
void sytrs(const char* u, const int* n, const int* r, const float* a, const int* l, const int* p, float* b,
           const int* lb, int* i) { ssytrs_(u, n, r, a, l, p, b, lb, i); }
void sytrs(const char* u, const int* n, const int* r, const double* a, const int* l, const int* p, double* b,
           const int* lb, int* i) { dsytrs_(u, n, r, a, l, p, b, lb, i); }
void getrf(const int* m, const int* n, c64* a, const int* l, int* p, int* i) { cgetrf_(m, n, a, l, p, i); }
void getrf(const int* m, const int* n, c128* a, const int* l, int* p, int* i) { zgetrf_(m, n, a, l, p, i); }
void getrs(const char* t, const int* n, const int* r, const c64* a, const int* l, const int* p, c64* b,
           const int* lb, int* i) { cgetrs_(t, n, r, a, l, p, b, lb, i); }
void getrs(const char* t, const int* n, const int* r, const c128* a, const int* l, const int* p, c128* b,
           const int* lb, int* i) { zgetrs_(t, n, r, a, l, p, b, lb, i); }

void potrf(const char* u, const int* n, c64* a, const int* l, int* i) { cpotrf_(u, n, a, l, i); }
void potrf(const char* u, const int* n, c128* a, const int* l, int* i) { zpotrf_(u, n, a, l, i); }
void heevd(const char* j, const char* u, const int* n, c64* a, const int* l, float* w, c64* wk, const int* lw,
           float* rw, const int* lrw, int* iw, const int* liw, int* i) {
  cheevd_(j, u, n, a, l, w, wk, lw, rw, lrw, iw, liw, i);
}
void heevd(const char* j, const char* u, const int* n, c128* a, const int* l, double* w, c128* wk, const int* lw,
           double* rw, const int* lrw, int* iw, const int* liw, int* i) {
  zheevd_(j, u, n, a, l, w, wk, lw, rw, lrw, iw, liw, i);
}
void gesdd(const char* j, const int* m, const int* n, c64* a, const int* l, float* s, c64* u, const int* lu, c64* vt,
           const int* lvt, c64* w, const int* lw, float* rw, int* iw, int* i) {
  cgesdd_(j, m, n, a, l, s, u, lu, vt, lvt, w, lw, rw, iw, i);
}
void gesdd(const char* j, const int* m, const int* n, c128* a, const int* l, double* s, c128* u, const int* lu,
           c128* vt, const int* lvt, c128* w, const int* lw, double* rw, int* iw, int* i) {
  zgesdd_(j, m, n, a, l, s, u, lu, vt, lvt, w, lw, rw, iw, i);
}
void geqrf(const int* m, const int* n, c64* a, const int* l, c64* t, c64* w, const int* lw, int* i) {
  cgeqrf_(m, n, a, l, t, w, lw, i);
}
void geqrf(const int* m, const int* n, c128* a, const int* l, c128* t, c128* w, const int* lw, int* i) {
  zgeqrf_(m, n, a, l, t, w, lw, i);
}
void ungqr(const int* m, const int* n, const int* k, c64* a, const int* l, const c64* t, c64* w, const int* lw,
           int* i) { cungqr_(m, n, k, a, l, t, w, lw, i); }
void ungqr(const int* m, const int* n, const int* k, c128* a, const int* l, const c128* t, c128* w, const int* lw,
           int* i) { zungqr_(m, n, k, a, l, t, w, lw, i); }
void geev(const char* jl, const char* jr, const int* n, c64* a, const int* l, c64* w, c64* vl, const int* lvl,
          c64* vr, const int* lvr, c64* wk, const int* lw, float* rw, int* i) {
  cgeev_(jl, jr, n, a, l, w, vl, lvl, vr, lvr, wk, lw, rw, i);
}
void geev(const char* jl, const char* jr, const int* n, c128* a, const int* l, c128* w, c128* vl, const int* lvl,
          c128* vr, const int* lvr, c128* wk, const int* lw, double* rw, int* i) {
  zgeev_(jl, jr, n, a, l, w, vl, lvl, vr, lvr, wk, lw, rw, i);
}
void trsm(int s, int u, int t, int d, int m, int n, const c64* a, int la, c64* b, int lb) {
  const c64 one{1, 0};
  const TrsmArgs e(s, u, t, d);
  cblas_ctrsm(kColMajor, e.side, e.uplo, e.trans, e.diag, m, n, &one, a, la, b, lb);
}
void trsm(int s, int u, int t, int d, int m, int n, const c128* a, int la, c128* b, int lb) {
  const c128 one{1, 0};
  const TrsmArgs e(s, u, t, d);
  cblas_ztrsm(kColMajor, e.side, e.uplo, e.trans, e.diag, m, n, &one, a, la, b, lb);
}

template <typename T>
T* at(void* p, int64_t stride, int64_t i) { return static_cast<T*>(p) + stride * i; }

// Runs f(b) for every matrix of the batch: the batch split across threads, each MKL call on
// one thread; a single matrix gets MKL's own threading.
template <typename F>
void for_batch(int64_t batch, F&& f) {
  if (batch == 1) return f(0);
  parallel_for(0, batch, 1, [&](int64_t lo, int64_t hi) {
    int prev = MKL_Set_Num_Threads_Local(1);
    for (int64_t b = lo; b < hi; ++b) f(b);
    MKL_Set_Num_Threads_Local(prev);
  });
}

// f() with MKL on one thread: for a matrix too small to amortise waking the others (a 256x256
// Cholesky took 0.6 ms on two threads, 0.24 ms on one).
template <typename F>
void on_one_thread(F&& f) {
  int prev = MKL_Set_Num_Threads_Local(1);
  f();
  MKL_Set_Num_Threads_Local(prev);
}

// A workspace query (lwork = -1) and its answer as a size.
template <typename T>
int workspace(T query) { return std::max(1, int(query)); }

// The LU factorisation and its solve, for every dtype (complex included: what complex
// linalg.solve, inv and det need).
template <typename T>
void lu(Lapack op, const LapackArgs& g) {
  const int m = int(g.m), n = int(g.n), k = int(g.k);
  const int lda = std::max(1, m);
  if (op == Lapack::Getrf) {  // a: m x n; ipiv: min(m, n) per matrix
    if constexpr (!is_complex_v<T>) {
      if (m <= kSmallLuMax && n <= kSmallLuMax) {
        parallel_for(0, g.batch, 1, [&](int64_t lo, int64_t hi) {
          for (int64_t b = lo; b < hi; ++b)
            small_getrf(m, n, at<T>(g.a, g.stride_a, b), lda, g.ipiv + b * std::min(m, n), g.info + b);
        });
        return;
      }
    }
    // Not MKL's getrf_batch_strided: after a batched GEMM on two threads it rejected its own
    // pivot array (DLASWP parameter 6) and returned wrong factors (test_linalg's batched det).
    for_batch(g.batch, [&](int64_t b) {
      getrf(&m, &n, at<T>(g.a, g.stride_a, b), &lda, g.ipiv + b * std::min(m, n), g.info + b);
    });
    return;
  }
  KINDLE_INTERNAL_ASSERT(op == Lapack::Getrs, "lapack: routine ", int(op), " is not an LU routine");
  // a: the LU factors (n x n, m == n), b: n x k right-hand sides
  const char trans = g.trans ? 'T' : 'N';
  for_batch(g.batch, [&](int64_t b) {
    getrs(&trans, &n, &k, at<T>(g.a, g.stride_a, b), &lda, g.ipiv + b * n, at<T>(g.b, g.stride_b, b), &lda, g.info + b);
  });
}

template <typename T>
void run(Lapack op, const LapackArgs& g) {
  const int m = int(g.m), n = int(g.n), k = int(g.k);
  const int lda = std::max(1, m);
  switch (op) {
    case Lapack::Sytrf: {  // a: n x n symmetric (the `upper` or lower triangle read), ipiv: n per matrix
      const char uplo = g.upper ? 'U' : 'L';
      T wq, dummy = 0;
      int lw = -1, info, pd = 0;
      sytrf(&uplo, &n, &dummy, &lda, &pd, &wq, &lw, &info);
      lw = workspace(wq);
      for_batch(g.batch, [&](int64_t b) {
        std::vector<T> work(static_cast<size_t>(lw));
        sytrf(&uplo, &n, at<T>(g.a, g.stride_a, b), &lda, g.ipiv + b * n, work.data(), &lw, g.info + b);
      });
      return;
    }
    case Lapack::Sytrs: {  // a: the factors from Sytrf, b: n x k right-hand sides
      const char uplo = g.upper ? 'U' : 'L';
      for_batch(g.batch, [&](int64_t b) {
        sytrs(&uplo, &n, &k, at<T>(g.a, g.stride_a, b), &lda, g.ipiv + b * n, at<T>(g.b, g.stride_b, b), &lda,
              g.info + b);
      });
      return;
    }
    case Lapack::Geev: {  // a: n x n (destroyed); b, c: real and imaginary parts of the eigenvalues; d: V
      const char jobvl = 'N', jobvr = g.vectors ? 'V' : 'N';
      const int ldvl = 1, ldvr = std::max(1, n);
      T wq, dummy = 0;
      int lw = -1, info;
      geev(&jobvl, &jobvr, &n, &dummy, &lda, &dummy, &dummy, &dummy, &ldvl, &dummy, &ldvr, &wq, &lw, &info);
      lw = workspace(wq);
      for_batch(g.batch, [&](int64_t b) {
        std::vector<T> work(static_cast<size_t>(lw));
        T vl = 0;
        T* vr = g.vectors ? at<T>(g.d, g.stride_d, b) : &vl;
        geev(&jobvl, &jobvr, &n, at<T>(g.a, g.stride_a, b), &lda, at<T>(g.b, g.stride_b, b),
             at<T>(g.c, g.stride_c, b), &vl, &ldvl, vr, &ldvr, work.data(), &lw, g.info + b);
      });
      return;
    }
    case Lapack::Potrf: {  // a: n x n, the `upper` or lower triangle read and factored
      const char uplo = g.upper ? 'U' : 'L';
      if constexpr (kBatchedLapack) {
        if (g.batch > 1 && g.stride_a <= INT32_MAX && g.batch <= INT32_MAX) {
          const int sa = int(g.stride_a), nb = int(g.batch);
          return potrf_batch(&uplo, &n, static_cast<T*>(g.a), &lda, &sa, &nb, g.info);
        }
      }
      if (g.batch == 1 && n <= 384) return on_one_thread([&] { potrf(&uplo, &n, static_cast<T*>(g.a), &lda, g.info); });
      for_batch(g.batch, [&](int64_t b) { potrf(&uplo, &n, at<T>(g.a, g.stride_a, b), &lda, g.info + b); });
      return;
    }
    case Lapack::Getrf:
    case Lapack::Getrs: return lu<T>(op, g);
    case Lapack::Syevd: {  // a: n x n (eigenvectors on exit when `vectors`), b: n eigenvalues
      const char jobz = g.vectors ? 'V' : 'N', uplo = g.upper ? 'U' : 'L';
      const bool two_stage = !g.vectors && n >= 1024;
      T wq;
      int iwq, lw = -1, liw = -1, info;
      syevd(two_stage, &jobz, &uplo, &n, nullptr, &lda, nullptr, &wq, &lw, &iwq, &liw, &info);
      lw = workspace(wq), liw = std::max(1, iwq);
      for_batch(g.batch, [&](int64_t b) {
        std::vector<T> work(static_cast<size_t>(lw));
        std::vector<int> iwork(static_cast<size_t>(liw));
        syevd(two_stage, &jobz, &uplo, &n, at<T>(g.a, g.stride_a, b), &lda, at<T>(g.b, g.stride_b, b), work.data(), &lw,
              iwork.data(), &liw, g.info + b);
      });
      return;
    }
    case Lapack::Gesdd: {  // a: m x n (destroyed), b: min(m,n) singular values, c: U, d: V^T
      const int mn = std::min(m, n);
      const char jobz = !g.vectors ? 'N' : g.full ? 'A' : 'S';
      const int ucols = g.full ? m : mn, vrows = g.full ? n : mn;
      const int ldu = std::max(1, m), ldvt = std::max(1, vrows);
      (void)ucols;
      T wq;
      int lw = -1, info;
      std::vector<int> iq(size_t(8 * std::max(1, mn)));
      gesdd(&jobz, &m, &n, nullptr, &lda, nullptr, nullptr, &ldu, nullptr, &ldvt, &wq, &lw, iq.data(), &info);
      lw = workspace(wq);
      for_batch(g.batch, [&](int64_t b) {
        std::vector<T> work(static_cast<size_t>(lw));
        std::vector<int> iwork(size_t(8 * std::max(1, mn)));
        T* u = g.vectors ? at<T>(g.c, g.stride_c, b) : nullptr;
        T* vt = g.vectors ? at<T>(g.d, g.stride_d, b) : nullptr;
        gesdd(&jobz, &m, &n, at<T>(g.a, g.stride_a, b), &lda, at<T>(g.b, g.stride_b, b), u, &ldu, vt, &ldvt,
              work.data(), &lw, iwork.data(), g.info + b);
      });
      return;
    }
    case Lapack::Geqrf: {  // a: m x n, b: min(m, n) Householder scalars
      T wq;
      int lw = -1, info;
      geqrf(&m, &n, nullptr, &lda, nullptr, &wq, &lw, &info);
      lw = workspace(wq);
      for_batch(g.batch, [&](int64_t b) {
        std::vector<T> work(static_cast<size_t>(lw));
        geqrf(&m, &n, at<T>(g.a, g.stride_a, b), &lda, at<T>(g.b, g.stride_b, b), work.data(), &lw, g.info + b);
      });
      return;
    }
    case Lapack::Orgqr: {  // a: m x n holding k reflectors (from geqrf), b: their scalars; Q on exit
      T wq;
      int lw = -1, info;
      orgqr(&m, &n, &k, nullptr, &lda, nullptr, &wq, &lw, &info);
      lw = workspace(wq);
      for_batch(g.batch, [&](int64_t b) {
        std::vector<T> work(static_cast<size_t>(lw));
        orgqr(&m, &n, &k, at<T>(g.a, g.stride_a, b), &lda, at<T>(g.b, g.stride_b, b), work.data(), &lw, g.info + b);
      });
      return;
    }
    case Lapack::Trsm: {  // a: triangular (k x k), b: m x n right-hand sides (k = m left, n right)
      const int side = g.left ? 141 : 142, uplo = g.upper ? 121 : 122, trans = g.trans ? 112 : 111,
                diag = g.unit ? 132 : 131;
      const int ka = std::max(1, k);
      for_batch(g.batch, [&](int64_t b) {
        trsm(side, uplo, trans, diag, m, n, at<T>(g.a, g.stride_a, b), ka, at<T>(g.b, g.stride_b, b), lda);
      });
      return;
    }
  }
}

// The complex routines: Hermitian where the real ones are symmetric (heevd, ungqr), real
// eigenvalues and singular values (b points to a real array), and real workspaces beside the
// complex ones. T is the complex type, R its real part's.
template <typename T, typename R>
void run_complex(Lapack op, const LapackArgs& g) {
  const int m = int(g.m), n = int(g.n), k = int(g.k);
  const int lda = std::max(1, m);
  auto size_of = [](T q) { return std::max(1, int(q.real())); };
  switch (op) {
    case Lapack::Getrf:
    case Lapack::Getrs: return lu<T>(op, g);
    case Lapack::Potrf: {
      const char uplo = g.upper ? 'U' : 'L';
      for_batch(g.batch, [&](int64_t b) { potrf(&uplo, &n, at<T>(g.a, g.stride_a, b), &lda, g.info + b); });
      return;
    }
    case Lapack::Syevd: {  // heevd; b: n real eigenvalues
      const char jobz = g.vectors ? 'V' : 'N', uplo = g.upper ? 'U' : 'L';
      T wq;
      R rwq;
      int iwq, lw = -1, lrw = -1, liw = -1, info;
      heevd(&jobz, &uplo, &n, nullptr, &lda, nullptr, &wq, &lw, &rwq, &lrw, &iwq, &liw, &info);
      lw = size_of(wq), lrw = std::max(1, int(rwq)), liw = std::max(1, iwq);
      for_batch(g.batch, [&](int64_t b) {
        std::vector<T> work(static_cast<size_t>(lw));
        std::vector<R> rwork(static_cast<size_t>(lrw));
        std::vector<int> iwork(static_cast<size_t>(liw));
        heevd(&jobz, &uplo, &n, at<T>(g.a, g.stride_a, b), &lda, at<R>(g.b, g.stride_b, b), work.data(), &lw,
              rwork.data(), &lrw, iwork.data(), &liw, g.info + b);
      });
      return;
    }
    case Lapack::Gesdd: {  // b: min(m,n) real singular values, c: U, d: V^H
      const int mn = std::min(m, n), mx = std::max(m, n);
      const char jobz = !g.vectors ? 'N' : g.full ? 'A' : 'S';
      const int vrows = g.full ? n : mn;
      const int ldu = std::max(1, m), ldvt = std::max(1, vrows);
      // LAPACK's rwork bound (the 'N' one as of LAPACK 3.7)
      const size_t lrw = size_t(std::max(1, !g.vectors ? 7 * mn : mn * std::max(5 * mn + 7, 2 * mx + 2 * mn + 1)));
      T wq;
      int lw = -1, info;
      std::vector<R> rq(lrw);
      std::vector<int> iq(size_t(8 * std::max(1, mn)));
      gesdd(&jobz, &m, &n, nullptr, &lda, nullptr, nullptr, &ldu, nullptr, &ldvt, &wq, &lw, rq.data(), iq.data(),
            &info);
      lw = size_of(wq);
      for_batch(g.batch, [&](int64_t b) {
        std::vector<T> work(static_cast<size_t>(lw));
        std::vector<R> rwork(lrw);
        std::vector<int> iwork(size_t(8 * std::max(1, mn)));
        T* u = g.vectors ? at<T>(g.c, g.stride_c, b) : nullptr;
        T* vt = g.vectors ? at<T>(g.d, g.stride_d, b) : nullptr;
        gesdd(&jobz, &m, &n, at<T>(g.a, g.stride_a, b), &lda, at<R>(g.b, g.stride_b, b), u, &ldu, vt, &ldvt,
              work.data(), &lw, rwork.data(), iwork.data(), g.info + b);
      });
      return;
    }
    case Lapack::Geqrf: {
      T wq;
      int lw = -1, info;
      geqrf(&m, &n, nullptr, &lda, nullptr, &wq, &lw, &info);
      lw = size_of(wq);
      for_batch(g.batch, [&](int64_t b) {
        std::vector<T> work(static_cast<size_t>(lw));
        geqrf(&m, &n, at<T>(g.a, g.stride_a, b), &lda, at<T>(g.b, g.stride_b, b), work.data(), &lw, g.info + b);
      });
      return;
    }
    case Lapack::Orgqr: {  // ungqr
      T wq;
      int lw = -1, info;
      ungqr(&m, &n, &k, nullptr, &lda, nullptr, &wq, &lw, &info);
      lw = size_of(wq);
      for_batch(g.batch, [&](int64_t b) {
        std::vector<T> work(static_cast<size_t>(lw));
        ungqr(&m, &n, &k, at<T>(g.a, g.stride_a, b), &lda, at<T>(g.b, g.stride_b, b), work.data(), &lw, g.info + b);
      });
      return;
    }
    case Lapack::Geev: {  // b: n complex eigenvalues, d: the right eigenvectors (complex already)
      const char jobvl = 'N', jobvr = g.vectors ? 'V' : 'N';
      const int ldvl = 1, ldvr = std::max(1, n);
      T wq, dummy{};
      R rdummy = 0;
      int lw = -1, info;
      geev(&jobvl, &jobvr, &n, &dummy, &lda, &dummy, &dummy, &ldvl, &dummy, &ldvr, &wq, &lw, &rdummy, &info);
      lw = size_of(wq);
      for_batch(g.batch, [&](int64_t b) {
        std::vector<T> work(static_cast<size_t>(lw));
        std::vector<R> rwork(size_t(2 * std::max(1, n)));
        T vl{};
        T* vr = g.vectors ? at<T>(g.d, g.stride_d, b) : &vl;
        geev(&jobvl, &jobvr, &n, at<T>(g.a, g.stride_a, b), &lda, at<T>(g.b, g.stride_b, b), &vl, &ldvl, vr, &ldvr,
             work.data(), &lw, rwork.data(), g.info + b);
      });
      return;
    }
    case Lapack::Trsm: {  // trans: the conjugate transpose (what the complex formulas need)
      const int side = g.left ? 141 : 142, uplo = g.upper ? 121 : 122, trans = g.trans ? 113 : 111,
                diag = g.unit ? 132 : 131;
      const int ka = std::max(1, k);
      for_batch(g.batch, [&](int64_t b) {
        trsm(side, uplo, trans, diag, m, n, at<T>(g.a, g.stride_a, b), ka, at<T>(g.b, g.stride_b, b), lda);
      });
      return;
    }
    case Lapack::Sytrf:
    case Lapack::Sytrs: break;
  }
  KINDLE_CHECK_NOT_IMPLEMENTED(false, "lapack: routine ", int(op), " has no complex version in Kindle");
}

void lapack_kernel(Lapack op, const LapackArgs& g) {
  init_mkl();
  if (g.dtype == kComplex64) return run_complex<c64, float>(op, g);
  if (g.dtype == kComplex128) return run_complex<c128, double>(op, g);
  if (g.dtype == kFloat32) return run<float>(op, g);
  KINDLE_INTERNAL_ASSERT(g.dtype == kFloat64, "lapack: unsupported dtype ", g.dtype);
  run<double>(op, g);
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(lapack_stub, DeviceType::CPU, &cpu::lapack_kernel);
}  // namespace kindle
