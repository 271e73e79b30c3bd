// Kindle's own single-precision GEMM for CPUs with AVX-512 (csrc/cpu/sgemm.cpp: its kernels are
// compiled for AVX-512 and entered only where the CPU has it). MKL runs its AVX2 code on AMD's AVX-512
// cores (Zen 4/5), half of what they can do; this kernel reaches 85-95% of the AVX-512 peak on
// large products (measured 220-240 GFLOP/s per core here, MKL 95-100).
//
// Each output element is one sum over k in a fixed order (blocks of kKc, in order), so results
// do not depend on how callers split the rows or columns of C over threads.
#pragma once
#include <cstdint>

namespace kindle::cpu::sgemm {

// True when the CPU has AVX-512F (checked once) and KINDLE_SGEMM is not "mkl": the kernels here
// can run. The dot-product form for a few rows (gemm below) is used wherever they can.
bool available();
// True where the packed GEMM (PackedA, multiply, gemm with many rows) is the one to use rather
// than MKL's: available(), on a CPU that is not Intel's (MKL runs AVX2 code on AMD's AVX-512
// cores, its own AVX-512 kernels on Intel's, where they measured faster), or with
// KINDLE_SGEMM=kindle.
bool preferred();

// A row-major operand A (m x k, or its transpose when trans) packed into panels of kMr rows, so
// that many products with it (bands of one convolution) pack it once.
class PackedA {
 public:
  PackedA() = default;
  PackedA(bool trans, int64_t m, int64_t k, const float* a, int64_t lda);
  ~PackedA();
  PackedA(const PackedA&) = delete;
  PackedA& operator=(const PackedA&) = delete;
  int64_t rows() const { return m_; }
  int64_t depth() const { return k_; }
  const float* data() const { return data_; }

 private:
  int64_t m_ = 0, k_ = 0;
  float* data_ = nullptr;
  void* storage_ = nullptr;  // the caching allocator's block (a Tensor), so packing does not page-fault
};

// Rows of A per packed panel: a product over part of A's rows starts at a multiple of this.
constexpr int64_t kPanelRows = 12;

// Rows [row0, row0 + rows) of C (m x n, ld ldc; c points at row 0) = alpha * A op(B) + beta * C,
// on the calling thread, A packed (rows m, depth k; row0 a multiple of kPanelRows); op(B) is
// k x n. beta == 0 ignores C's old contents (NaN included), as BLAS does. Each row is the same
// sum whichever range it is computed in, so callers may split the rows over threads freely.
void multiply(const PackedA& a, int64_t row0, int64_t rows, bool trans_b, int64_t n, float alpha, const float* b,
              int64_t ldb, float beta, float* c, int64_t ldc);
inline void multiply(const PackedA& a, bool trans_b, int64_t n, float alpha, const float* b, int64_t ldb, float beta,
                     float* c, int64_t ldc) {
  multiply(a, 0, a.rows(), trans_b, n, alpha, b, ldb, beta, c, ldc);
}

// The same with A unpacked: C = alpha * op(A) op(B) + beta * C, on the calling thread. With at
// most kDotRows rows of A (not transposed) and B transposed (a linear layer at a small batch), the
// product is formed as dot products over B's rows, read in place (packing B would cost as much).
constexpr int64_t kDotRows = 16;

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace kindle::cpu::sgemm
