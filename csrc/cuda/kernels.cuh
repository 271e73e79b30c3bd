// The interface between the CUDA kernels (csrc/cuda/*.cu, compiled by nvcc) and their glue
// (csrc/cuda/*.cpp, compiled with the rest of the library): plain structs, the op codes and
// DType values as integers, so that nvcc never parses the library's own headers.
// Each launcher returns false for a dtype/op pair it has no kernel for; the glue raises.
#pragma once
#include <cstdint>

#include <cuda_runtime_api.h>

#include "ops/op_codes.h"

namespace kindle::cuda_kernels {

constexpr int kMaxDims = 16;
constexpr int kMaxOps = 4;

// An elementwise loop as TensorIter describes it: dim 0 innermost, strides in bytes, outputs
// first. Operand i's element at linear index n lives at data[i] + sum_d idx_d * strides[i][d].
struct Loop {
  int ndim = 0, nops = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxOps][kMaxDims] = {};
  char* data[kMaxOps] = {};
};

// dtype codes are kindle::DType's values.
bool unary(const Loop& l, int in_dtype, int out_dtype, UnaryOp op, cudaStream_t s);
bool binary(const Loop& l, int in_dtype, int out_dtype, BinaryOp op, cudaStream_t s);
bool add_alpha(const Loop& l, int dtype, double alpha, cudaStream_t s);
bool copy(const Loop& l, int out_dtype, int in_dtype, cudaStream_t s);
// out = value (the value's bytes in the output's dtype, itemsize bytes of `bits`)
bool fill(const Loop& l, int dtype, uint64_t bits, cudaStream_t s);
// operands: out, condition (bool), a, b
bool where(const Loop& l, int dtype, cudaStream_t s);

// M outputs, each reducing R elements `rstride` apart; output m's first element is at the
// offset given by the kept dims (sizes/strides in elements, innermost last).
struct Reduction {
  const void* in = nullptr;
  void* out = nullptr;  // contiguous, M elements
  int nkept = 0;
  int64_t kept_sizes[kMaxDims] = {}, kept_strides[kMaxDims] = {};
  int64_t M = 1, R = 1, rstride = 1;
  // Few long contiguous rows are reduced by `chunks` blocks each, whose partials (8 bytes each)
  // go to `work` (M * chunks of them) before a second pass.
  int64_t chunks = 1;
  void* work = nullptr;
};
// How many blocks should share one contiguous row of a reduction with M rows of R elements.
int64_t reduce_chunks(int64_t M, int64_t R);
bool reduce(const Reduction& r, int in_dtype, int out_dtype, ReduceOp op, cudaStream_t s);
// Rows [M, R], contiguous: softmax or log_softmax.
bool softmax(const void* in, void* out, int64_t M, int64_t R, int dtype, bool log, cudaStream_t s);

}  // namespace kindle::cuda_kernels
