// The BLAS and LAPACK symbols Kindle calls, renamed for OpenBLAS (KINDLE_BLAS=openblas): the
// scipy-openblas32 wheel prefixes every symbol with scipy_ (so that it never clashes with another
// BLAS in the process), and these macros map the MKL/reference names to it, so that blas.cpp's and
// lapack.cpp's own declarations and calls serve both libraries. Include it before them. (Not
// OpenBLAS's headers: their enum-typed parameters would clash with the int-based declarations.)
// A system OpenBLAS (KINDLE_BLAS_SYSTEM_OPENBLAS: Debian's, as on aarch64) keeps the plain names.
// With MKL this header is empty.
#pragma once

#ifdef KINDLE_BLAS_OPENBLAS
#include <omp.h>

#ifdef KINDLE_BLAS_SYSTEM_OPENBLAS
#define KINDLE_OPENBLAS_NAME(name) name
// Older OpenBLAS releases (Debian 12's 0.3.21) have no strided batches: blas.cpp loops over GEMMs.
#define cblas_sgemm_batch_strided kindle_openblas_sgemm_batch_strided
#define cblas_dgemm_batch_strided kindle_openblas_dgemm_batch_strided
#else
#define KINDLE_OPENBLAS_NAME(name) scipy_##name

// BLAS (blas.cpp, lapack.cpp)
#define cblas_sgemm scipy_cblas_sgemm
#define cblas_dgemm scipy_cblas_dgemm
#define cblas_sgemm_batch_strided scipy_cblas_sgemm_batch_strided
#define cblas_dgemm_batch_strided scipy_cblas_dgemm_batch_strided
#define cblas_cgemm scipy_cblas_cgemm
#define cblas_zgemm scipy_cblas_zgemm
#define cblas_strsm scipy_cblas_strsm
#define cblas_dtrsm scipy_cblas_dtrsm
#define cblas_ctrsm scipy_cblas_ctrsm
#define cblas_ztrsm scipy_cblas_ztrsm

// LAPACK (lapack.cpp; the Fortran LP64 interface)
#define spotrf_ scipy_spotrf_
#define dpotrf_ scipy_dpotrf_
#define cpotrf_ scipy_cpotrf_
#define zpotrf_ scipy_zpotrf_
#define sgetrf_ scipy_sgetrf_
#define dgetrf_ scipy_dgetrf_
#define cgetrf_ scipy_cgetrf_
#define zgetrf_ scipy_zgetrf_
#define sgetrs_ scipy_sgetrs_
#define dgetrs_ scipy_dgetrs_
#define cgetrs_ scipy_cgetrs_
#define zgetrs_ scipy_zgetrs_
#define ssyevd_ scipy_ssyevd_
#define dsyevd_ scipy_dsyevd_
#define ssyevd_2stage_ scipy_ssyevd_2stage_
#define dsyevd_2stage_ scipy_dsyevd_2stage_
#define cheevd_ scipy_cheevd_
#define zheevd_ scipy_zheevd_
#define sgesdd_ scipy_sgesdd_
#define dgesdd_ scipy_dgesdd_
#define cgesdd_ scipy_cgesdd_
#define zgesdd_ scipy_zgesdd_
#define sgeqrf_ scipy_sgeqrf_
#define dgeqrf_ scipy_dgeqrf_
#define cgeqrf_ scipy_cgeqrf_
#define zgeqrf_ scipy_zgeqrf_
#define sorgqr_ scipy_sorgqr_
#define dorgqr_ scipy_dorgqr_
#define cungqr_ scipy_cungqr_
#define zungqr_ scipy_zungqr_
#define sgeev_ scipy_sgeev_
#define dgeev_ scipy_dgeev_
#define cgeev_ scipy_cgeev_
#define zgeev_ scipy_zgeev_
#define ssytrf_ scipy_ssytrf_
#define dsytrf_ scipy_dsytrf_
#define ssytrs_ scipy_ssytrs_
#define dsytrs_ scipy_dsytrs_

#endif  // KINDLE_BLAS_SYSTEM_OPENBLAS

// MKL's per-thread thread count. This wheel has no openblas_set_num_threads_local: its count is
// process-wide (its own pthreads pool), and run threaded inside an OpenMP parallel region it warns
// that it may hang. So the count is set process-wide, to 1 inside a parallel region (where Kindle
// asks for 1 anyway), and only when it changes; the previous count is returned, as MKL does.
extern "C" {
void KINDLE_OPENBLAS_NAME(openblas_set_num_threads)(int num_threads);
int KINDLE_OPENBLAS_NAME(openblas_get_num_threads)(void);
inline int kindle_openblas_set_num_threads_local(int n) {
  const int prev = KINDLE_OPENBLAS_NAME(openblas_get_num_threads)();
  if (omp_in_parallel()) n = 1;
  if (n > 0 && n != prev) KINDLE_OPENBLAS_NAME(openblas_set_num_threads)(n);
  return prev;
}
}
#define MKL_Set_Num_Threads_Local kindle_openblas_set_num_threads_local
#endif
