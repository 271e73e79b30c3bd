// The elementwise families' op layer: one call per op, its dtype rule read from the op code's
// KernelRule (declared in ops.yaml), then the device kernel through its stub. The plain ops are
// generated calls of these (elementwise_ops.cpp); the others are in elementwise.cpp.
#pragma once
#include "kindle/tensor.h"
#include "ops/op_codes.h"

namespace kindle {

// out = op(self), into `out` when given (the in-place forms pass self).
Tensor unary(const char* name, const Tensor& self, UnaryOp op, const Tensor& out = {});
// out = op(a, b), broadcast and promoted.
Tensor binary(const char* name, const Tensor& a, const Tensor& b, BinaryOp op, const Tensor& out = {});
// The class of ops.yaml's `dtypes:` a dtype belongs to.
DTypeClass dtype_class(DType dt);
// Raises what PyTorch raises when the rule's kernel does not compute `dt` (the dtype it would
// compute in): the declared refusal, else NotImplementedError naming the op and the dtype.
void check_kernel_dtype(const char* name, const KernelRule& rule, DType dt);

}  // namespace kindle
