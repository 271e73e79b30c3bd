// The op codes of the kernel families: plain enums with no dependencies, so that device code
// compiled by another compiler (csrc/cuda/*.cu, by nvcc) selects the same functors.
#pragma once
#include <cstdint>

namespace kindle {

// Elementwise families: the op code selects a functor inside the device kernel.
enum class UnaryOp : uint8_t {
  Neg, Abs, Sign, Sqrt, Rsqrt, Exp, Exp2, Log, Log2, Log10, Log1p, Expm1, Sin, Cos, Tan, Asin,
  Acos, Atan, Sinh, Cosh, Tanh, Sigmoid, Relu, Silu, GeluErf, GeluTanh, Erf, Erfinv, Floor, Ceil,
  Round, Trunc, Frac, Reciprocal, Square, LogicalNot, BitwiseNot, Isnan, Isinf, Isfinite,
  Signbit, Sgn, Asinh, Acosh, Atanh, Conj,
};
enum class BinaryOp : uint8_t {
  Add, Sub, Mul, Div, DivTrunc, DivFloor, Pow, Atan2, Maximum, Minimum, Fmod, Remainder,
  Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr, LogicalXor, BitAnd, BitOr, BitXor, Shl, Shr,
  Hypot, Copysign, Fmax, Fmin, Xlogy,
  // backward kernels (a = incoming gradient, b = the forward's input or output)
  ReluGrad, TanhGrad, SigmoidGrad,
};

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min, All, Any, SumSq };

}  // namespace kindle
