// The fused attention kernels (csrc/cpu/attention.cpp) behind scaled_dot_product_attention
// without a mask or dropout: blockwise online softmax, so memory stays O(L + S) per head instead
// of O(L * S). Tensors are float32/float64: q (BH, L, E), k (BH, S, E), v (BH, S, Ev), out
// (BH, L, Ev), laid out as AttentionGeom's HeadRows say in the forward and contiguous in the
// backward, lse (BH, L) contiguous the log-sum-exp of each query's scaled scores (+inf for a query
// with no key to attend to, whose output is 0).
#pragma once
#include "ops/kernels.h"

namespace kindle {

// Where the forward kernel finds a head's rows: head h = (b, j) of `heads` per batch item has row
// r at data + b * batch + j * head + r * row, each row contiguous. So q, k and v split from one
// projection and viewed (B, heads, L, E) are read in place, and the output can be laid out
// (B, L, heads, Ev), as a transformer's next step wants it.
struct HeadRows {
  int64_t batch, head, row;
  int64_t at(int64_t h, int64_t heads) const { return h / heads * batch + h % heads * head; }
  static HeadRows contiguous(int64_t rows, int64_t cols) { return {rows * cols, rows * cols, cols}; }
};

struct AttentionGeom {
  int64_t BH, L, S, E, Ev;
  double scale;
  bool causal;  // query i attends keys j <= i
  // The forward's layouts (the backward takes contiguous (BH, rows, cols) tensors).
  int64_t heads = 1;
  HeadRows q{}, k{}, v{}, out{};
};
extern KernelStub<void (*)(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                           const AttentionGeom&)> flash_attention_stub;
extern KernelStub<void (*)(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& out, const Tensor& lse, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                           const AttentionGeom&)> flash_attention_backward_stub;

}  // namespace kindle
