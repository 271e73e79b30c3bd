// tril / triu as one pass over the rows: each row keeps its part of the triangle (copied from
// `in`, or left in place when in and out are the same tensor) and zeroes the rest. Both
// tensors are contiguous and seen as (matrices, rows, cols).
#pragma once
#include "ops/kernels.h"

namespace kindle {

extern KernelStub<void (*)(const Tensor& in, const Tensor& out, int64_t diagonal, bool lower)> triangle_stub;

}  // namespace kindle
