// C++ operators on tensors; a number on either side becomes a wrapped-number tensor, so type
// promotion is the same as in Python (float_tensor * 2 stays float32).
#pragma once
#include "kindle/ops.h"

namespace kindle {

#define KINDLE_CPP_OPERATOR(op, fn)                                                                  \
  inline Tensor operator op(const Tensor& a, const Tensor& b) { return fn(a, b); }                  \
  inline Tensor operator op(const Tensor& a, const Scalar& b) { return fn(a, scalar_to_tensor(b)); } \
  inline Tensor operator op(const Scalar& a, const Tensor& b) { return fn(scalar_to_tensor(a), b); }
inline Tensor add2(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor sub2(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor div2(const Tensor& a, const Tensor& b) { return div(a, b); }
KINDLE_CPP_OPERATOR(+, add2)
KINDLE_CPP_OPERATOR(-, sub2)
KINDLE_CPP_OPERATOR(*, mul)
KINDLE_CPP_OPERATOR(/, div2)
KINDLE_CPP_OPERATOR(==, eq)
KINDLE_CPP_OPERATOR(!=, ne)
KINDLE_CPP_OPERATOR(<, lt)
KINDLE_CPP_OPERATOR(<=, le)
KINDLE_CPP_OPERATOR(>, gt)
KINDLE_CPP_OPERATOR(>=, ge)
// libtorch's remainder, bitwise and shift operators (masks: `a | b`, `~mask`)
KINDLE_CPP_OPERATOR(%, remainder)
KINDLE_CPP_OPERATOR(&, bitwise_and)
KINDLE_CPP_OPERATOR(|, bitwise_or)
KINDLE_CPP_OPERATOR(^, bitwise_xor)
KINDLE_CPP_OPERATOR(<<, bitwise_left_shift)
KINDLE_CPP_OPERATOR(>>, bitwise_right_shift)
#undef KINDLE_CPP_OPERATOR
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator~(const Tensor& a) { return bitwise_not(a); }

// In place, as libtorch: t += u is t.add_(u).
#define KINDLE_CPP_COMPOUND(op, fn)                                                                      \
  inline const Tensor& operator op(const Tensor& a, const Tensor& b) { return a.fn(b); }                \
  inline const Tensor& operator op(const Tensor& a, const Scalar& b) { return a.fn(scalar_to_tensor(b)); }
KINDLE_CPP_COMPOUND(+=, add_)
KINDLE_CPP_COMPOUND(-=, sub_)
KINDLE_CPP_COMPOUND(*=, mul_)
KINDLE_CPP_COMPOUND(/=, div_)
KINDLE_CPP_COMPOUND(%=, remainder_)
KINDLE_CPP_COMPOUND(&=, bitwise_and_)
KINDLE_CPP_COMPOUND(|=, bitwise_or_)
KINDLE_CPP_COMPOUND(^=, bitwise_xor_)
#undef KINDLE_CPP_COMPOUND

}  // namespace kindle
