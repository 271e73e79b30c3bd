// Direct GEMM for CPU kernels that drive their own loops (convolution): row-major
// C = alpha * op(A) op(B) + beta * C on `threads` MKL threads (1 inside a parallel region).
#pragma once
#include <cstdint>

namespace kindle::cpu {

// Selects MKL's interface and threading layers (GNU OpenMP); call before any other MKL function.
void init_mkl();
// The BLAS/LAPACK library this build calls: "mkl" or "openblas" (KINDLE_BLAS).
const char* blas_library();
// The vector math library the kernels' exp/log/tanh/... loops call (KINDLE_VECTOR_MATH): "sleef"
// (through cpu/vec_math_sleef.cpp) or "libmvec" (glibc's).
const char* vector_math_library();

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc, int threads);

// op(B) packed once for many single-threaded products C = A op(B) + beta C with A of m rows
// (MKL's packed GEMM; float and double): a recurrence multiplies by the same weight every step,
// and an unpacked GEMM would repack it each time.
template <typename T>
class PackedGemm {
 public:
  PackedGemm(bool trans_b, int64_t m, int64_t n, int64_t k, const T* b, int64_t ldb);
  ~PackedGemm();
  PackedGemm(const PackedGemm&) = delete;
  PackedGemm& operator=(const PackedGemm&) = delete;
  void multiply(const T* a, int64_t lda, T beta, T* c, int64_t ldc) const;

 private:
  int64_t m_, n_, k_;
  T* packed_ = nullptr;
};

}  // namespace kindle::cpu
