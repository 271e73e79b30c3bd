// Complex kernels. The real kernels (binary.cpp, unary.cpp, reduce.cpp) hand a complex operand
// here, so that each op keeps one stub and the real loops stay free of complex cases.
#pragma once
#include "ops/kernels.h"

namespace kindle::cpu {
void complex_copy(TensorIter& it);  // either side complex
void complex_fill(TensorIter& it, const Scalar& v);
void complex_where(TensorIter& it);
void complex_unary(TensorIter& it, UnaryOp op);
void complex_binary(TensorIter& it, BinaryOp op);
void complex_add_alpha(TensorIter& it, const Scalar& alpha);
void complex_reduce(const ReducePlan& pl, ReduceOp op);
}  // namespace kindle::cpu
