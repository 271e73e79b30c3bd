// The fused attention kernels (csrc/cpu/attention.cpp) behind scaled_dot_product_attention
// without a mask or dropout: blockwise online softmax, so memory stays O(L + S) per head instead
// of O(L * S). Tensors are contiguous float32/float64: q (BH, L, E), k (BH, S, E), v (BH, S, Ev),
// out (BH, L, Ev), lse (BH, L) the log-sum-exp of each query's scaled scores (+inf for a query
// with no key to attend to, whose output is 0).
#pragma once
#include "ops/kernels.h"

namespace kindle {

struct AttentionGeom {
  int64_t BH, L, S, E, Ev;
  double scale;
  bool causal;  // query i attends keys j <= i
};
extern KernelStub<void (*)(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                           const AttentionGeom&)> flash_attention_stub;
extern KernelStub<void (*)(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& out, const Tensor& lse, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                           const AttentionGeom&)> flash_attention_backward_stub;

}  // namespace kindle
