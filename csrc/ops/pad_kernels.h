// The gather behind reflect / replicate / circular padding (csrc/cpu/pad.cpp) and its adjoint.
// Tensors are contiguous and seen as (planes, depth, height, width); out[p, z, y, x] =
// in[p, z_src[z], y_src[y], x_src[x]]. The adjoint adds every output element back into its
// source, one plane per task and in a fixed order (deterministic).
#pragma once
#include <vector>

#include "ops/kernels.h"

namespace kindle {

struct PadGather {
  int64_t planes = 1, in_d = 1, in_h = 1, in_w = 1;
  std::vector<int64_t> z_src, y_src, x_src;  // one source index per output position
  int64_t x_lo = 0;  // output columns [x_lo, x_lo + in_w) read input columns 0.. in order
};
extern KernelStub<void (*)(const Tensor& in, const Tensor& out, const PadGather&)> pad_gather_stub;
extern KernelStub<void (*)(const Tensor& grad_out, const Tensor& grad_in, const PadGather&)> pad_scatter_stub;

}  // namespace kindle
