// Direct GEMM for CPU kernels that drive their own loops (convolution): row-major
// C = alpha * op(A) op(B) + beta * C on `threads` MKL threads (1 inside a parallel region).
#pragma once
#include <cstdint>

namespace kindle::cpu {

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc, int threads);

}  // namespace kindle::cpu
