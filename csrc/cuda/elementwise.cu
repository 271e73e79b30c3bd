// Elementwise CUDA kernels: unary and binary op families, add with alpha, casts, fill, where.
// The op code is switched inside the kernel (uniform across threads), so each family is one
// kernel per dtype rather than one per op and dtype. Semantics follow csrc/cpu/ (NaN
// propagation of maximum/minimum, Python's remainder, ReLU's gradient passing NaN).
#include "cuda/loops.cuh"

namespace kindle::cuda_kernels {
namespace {

template <typename M>
__device__ __forceinline__ M unary_float(UnaryOp op, M x) {
  constexpr bool f32 = std::is_same_v<M, float>;
  switch (op) {
    case UnaryOp::Neg: return -x;
    case UnaryOp::Abs: return fabs(x);
    case UnaryOp::Sign: case UnaryOp::Sgn: return M((x > M(0)) - (x < M(0)));  // NaN gives 0, as on the CPU
    case UnaryOp::Sqrt: return sqrt(x);
    case UnaryOp::Rsqrt: return rsqrt(x);
    case UnaryOp::Exp: return exp(x);
    case UnaryOp::Exp2: return exp2(x);
    case UnaryOp::Log: return log(x);
    case UnaryOp::Log2: return log2(x);
    case UnaryOp::Log10: return log10(x);
    case UnaryOp::Log1p: return log1p(x);
    case UnaryOp::Expm1: return expm1(x);
    case UnaryOp::Sin: return sin(x);
    case UnaryOp::Cos: return cos(x);
    case UnaryOp::Tan: return tan(x);
    case UnaryOp::Asin: return asin(x);
    case UnaryOp::Acos: return acos(x);
    case UnaryOp::Atan: return atan(x);
    case UnaryOp::Sinh: return sinh(x);
    case UnaryOp::Cosh: return cosh(x);
    case UnaryOp::Tanh: return tanh(x);
    case UnaryOp::Asinh: return asinh(x);
    case UnaryOp::Acosh: return acosh(x);
    case UnaryOp::Atanh: return atanh(x);
    case UnaryOp::Sigmoid: return M(1) / (M(1) + exp(-x));
    case UnaryOp::Relu: return x <= M(0) ? M(0) : x;
    case UnaryOp::Silu: return x / (M(1) + exp(-x));
    case UnaryOp::GeluErf: return M(0.5) * x * (M(1) + erf(x * M(0.70710678118654752440)));
    case UnaryOp::GeluTanh: {
      M inner = M(0.79788456080286535588) * (x + M(0.044715) * x * x * x);
      return M(0.5) * x * (M(1) + tanh(inner));
    }
    case UnaryOp::Erf: return erf(x);
    case UnaryOp::Erfinv: if constexpr (f32) return erfinvf(x); else return erfinv(x);
    case UnaryOp::Floor: return floor(x);
    case UnaryOp::Ceil: return ceil(x);
    case UnaryOp::Round: return rint(x);
    case UnaryOp::Trunc: return trunc(x);
    case UnaryOp::Frac: return x - trunc(x);
    case UnaryOp::Reciprocal: return M(1) / x;
    case UnaryOp::Square: return x * x;
    case UnaryOp::Conj: return x;
    default: return x;
  }
}

bool unary_float_op(UnaryOp op) {
  switch (op) {
    case UnaryOp::LogicalNot: case UnaryOp::BitwiseNot: case UnaryOp::Isnan: case UnaryOp::Isinf:
    case UnaryOp::Isfinite: case UnaryOp::Signbit: return false;
    default: return true;
  }
}

template <typename M>
__device__ __forceinline__ bool unary_pred(UnaryOp op, M x) {
  if constexpr (std::is_floating_point_v<M>) {
    switch (op) {
      case UnaryOp::Isnan: return x != x;
      case UnaryOp::Isinf: return isinf(x);
      case UnaryOp::Isfinite: return isfinite(x);
      case UnaryOp::Signbit: return signbit(x);
      default: return !x;  // LogicalNot
    }
  } else {
    switch (op) {
      case UnaryOp::Isnan: case UnaryOp::Isinf: return false;
      case UnaryOp::Isfinite: return true;
      case UnaryOp::Signbit: if constexpr (std::is_signed_v<M>) return x < 0; else return false;
      default: return !x;  // LogicalNot
    }
  }
}

template <typename M>
__device__ __forceinline__ M unary_int(UnaryOp op, M x) {
  switch (op) {
    case UnaryOp::Neg: return M(-x);
    case UnaryOp::Abs: if constexpr (std::is_signed_v<M>) return x < 0 ? M(-x) : x; else return x;
    case UnaryOp::Sign: case UnaryOp::Sgn: return M((x > M(0)) - (x < M(0)));
    case UnaryOp::Square: return M(x * x);
    case UnaryOp::BitwiseNot: if constexpr (std::is_same_v<M, bool>) return !x; else return M(~x);
    case UnaryOp::Relu: return x < M(0) ? M(0) : x;
    default: return x;  // Floor, Ceil, Round, Trunc, Conj: the identity on integers
  }
}

bool unary_int_op(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: case UnaryOp::Abs: case UnaryOp::Sign: case UnaryOp::Sgn: case UnaryOp::Square:
    case UnaryOp::BitwiseNot: case UnaryOp::Relu: case UnaryOp::Floor: case UnaryOp::Ceil: case UnaryOp::Round:
    case UnaryOp::Trunc: case UnaryOp::Conj: return true;
    default: return false;
  }
}

template <typename M>
__device__ __forceinline__ M python_mod(M a, M b) {
  if constexpr (std::is_floating_point_v<M>) {
    M r = fmod(a, b);
    if (r != M(0) && ((r < M(0)) != (b < M(0)))) r += b;
    return r;
  } else {
    M r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
}

template <typename M>
__device__ __forceinline__ M binary_float(BinaryOp op, M a, M b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return a / b;
    case BinaryOp::DivTrunc: return trunc(a / b);
    case BinaryOp::DivFloor: {
      if (b == M(0)) return a / b;
      M m = fmod(a, b), d = (a - m) / b;
      if (m != M(0) && ((b < M(0)) != (m < M(0)))) d -= M(1);
      M f = floor(d);
      return d - f > M(0.5) ? f + M(1) : f;
    }
    case BinaryOp::Pow: return b == M(2) ? a * a : b == M(0.5) ? sqrt(a) : pow(a, b);
    case BinaryOp::Atan2: return atan2(a, b);
    case BinaryOp::Maximum: return a != a ? a : b != b ? b : (a > b ? a : b);
    case BinaryOp::Minimum: return a != a ? a : b != b ? b : (a < b ? a : b);
    case BinaryOp::Fmax: return fmax(a, b);
    case BinaryOp::Fmin: return fmin(a, b);
    case BinaryOp::Fmod: return fmod(a, b);
    case BinaryOp::Remainder: return python_mod(a, b);
    case BinaryOp::Hypot: return hypot(a, b);
    case BinaryOp::Copysign: return copysign(a, b);
    case BinaryOp::Xlogy: return b != b ? b : a == M(0) ? M(0) : a * log(b);
    case BinaryOp::ReluGrad: return b <= M(0) ? M(0) : a;
    case BinaryOp::TanhGrad: return a * (M(1) - b * b);
    case BinaryOp::SigmoidGrad: return a * (M(1) - b) * b;
    default: return a;
  }
}

bool binary_float_op(BinaryOp op) {
  switch (op) {
    case BinaryOp::BitAnd: case BinaryOp::BitOr: case BinaryOp::BitXor: case BinaryOp::Shl: case BinaryOp::Shr:
      return false;
    default: return true;
  }
}

template <typename M>
__device__ __forceinline__ M int_pow(M a, M b) {
  if (b < 0) return a == 1 ? M(1) : a == M(-1) ? M((b & 1) ? -1 : 1) : M(0);
  M r = 1;
  while (b) {
    if (b & 1) r = M(r * a);
    a = M(a * a);
    b >>= 1;
  }
  return r;
}

// Integer arithmetic wraps (two's complement) as on the CPU; computed unsigned to stay defined.
template <typename M>
__device__ __forceinline__ M binary_int(BinaryOp op, M a, M b) {
  using U = std::make_unsigned_t<M>;
  switch (op) {
    case BinaryOp::Add: return M(U(a) + U(b));
    case BinaryOp::Sub: return M(U(a) - U(b));
    case BinaryOp::Mul: return M(U(a) * U(b));
    case BinaryOp::Pow: return int_pow(a, b);
    case BinaryOp::Maximum: case BinaryOp::Fmax: return a > b ? a : b;
    case BinaryOp::Minimum: case BinaryOp::Fmin: return a < b ? a : b;
    case BinaryOp::BitAnd: return M(a & b);
    case BinaryOp::BitOr: return M(a | b);
    case BinaryOp::BitXor: return M(a ^ b);
    case BinaryOp::Shl: return b < 0 || b >= M(sizeof(M) * 8) ? M(0) : M(U(a) << b);
    case BinaryOp::Shr: return b < 0 || b >= M(sizeof(M) * 8) ? M(a < 0 ? -1 : 0) : M(a >> b);
    default: return a;
  }
}

bool binary_int_op(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: case BinaryOp::Sub: case BinaryOp::Mul: case BinaryOp::Pow: case BinaryOp::Maximum:
    case BinaryOp::Fmax: case BinaryOp::Minimum: case BinaryOp::Fmin: case BinaryOp::BitAnd: case BinaryOp::BitOr:
    case BinaryOp::BitXor: case BinaryOp::Shl: case BinaryOp::Shr: return true;
    default: return false;
  }
}

__device__ __forceinline__ bool binary_bool(BinaryOp op, bool a, bool b) {
  switch (op) {
    case BinaryOp::Add: case BinaryOp::BitOr: case BinaryOp::Maximum: case BinaryOp::Fmax: return a || b;
    case BinaryOp::Mul: case BinaryOp::BitAnd: case BinaryOp::Minimum: case BinaryOp::Fmin: return a && b;
    case BinaryOp::BitXor: return a != b;
    default: return a;
  }
}

bool binary_bool_op(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: case BinaryOp::BitOr: case BinaryOp::Maximum: case BinaryOp::Fmax: case BinaryOp::Mul:
    case BinaryOp::BitAnd: case BinaryOp::Minimum: case BinaryOp::Fmin: case BinaryOp::BitXor: return true;
    default: return false;
  }
}

bool is_predicate(BinaryOp op) {
  switch (op) {
    case BinaryOp::Eq: case BinaryOp::Ne: case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt:
    case BinaryOp::Ge: case BinaryOp::LogicalAnd: case BinaryOp::LogicalOr: case BinaryOp::LogicalXor: return true;
    default: return false;
  }
}

template <typename M>
__device__ __forceinline__ bool binary_pred(BinaryOp op, M a, M b) {
  switch (op) {
    case BinaryOp::Eq: return a == b;
    case BinaryOp::Ne: return a != b;
    case BinaryOp::Lt: return a < b;
    case BinaryOp::Le: return a <= b;
    case BinaryOp::Gt: return a > b;
    case BinaryOp::Ge: return a >= b;
    case BinaryOp::LogicalAnd: return bool(a) && bool(b);
    case BinaryOp::LogicalOr: return bool(a) || bool(b);
    default: return bool(a) != bool(b);  // LogicalXor
  }
}

// One element of each family (functors: nvcc refuses device lambdas inside generic lambdas).
template <typename T>
struct UnaryPredF {
  UnaryOp op;
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<bool*>(p[0]) = unary_pred<opmath_t<T>>(op, cvt<opmath_t<T>>(*reinterpret_cast<const T*>(p[1])));
  }
};
template <typename T>
struct UnaryFloatF {
  UnaryOp op;
  __device__ void operator()(char* const* p) const {
    using M = opmath_t<T>;
    *reinterpret_cast<T*>(p[0]) = cvt<T>(unary_float<M>(op, cvt<M>(*reinterpret_cast<const T*>(p[1]))));
  }
};
template <typename T>
struct UnaryIntF {
  UnaryOp op;
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<T*>(p[0]) = unary_int<T>(op, *reinterpret_cast<const T*>(p[1]));
  }
};
template <typename T>
struct BinaryPredF {
  BinaryOp op;
  __device__ void operator()(char* const* p) const {
    using M = opmath_t<T>;
    *reinterpret_cast<bool*>(p[0]) =
        binary_pred<M>(op, cvt<M>(*reinterpret_cast<const T*>(p[1])), cvt<M>(*reinterpret_cast<const T*>(p[2])));
  }
};
template <typename T>
struct BinaryFloatF {
  BinaryOp op;
  __device__ void operator()(char* const* p) const {
    using M = opmath_t<T>;
    *reinterpret_cast<T*>(p[0]) = cvt<T>(
        binary_float<M>(op, cvt<M>(*reinterpret_cast<const T*>(p[1])), cvt<M>(*reinterpret_cast<const T*>(p[2]))));
  }
};
struct BinaryBoolF {
  BinaryOp op;
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<bool*>(p[0]) =
        binary_bool(op, *reinterpret_cast<const bool*>(p[1]), *reinterpret_cast<const bool*>(p[2]));
  }
};
template <typename T>
struct BinaryIntF {
  BinaryOp op;
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<T*>(p[0]) = binary_int<T>(op, *reinterpret_cast<const T*>(p[1]), *reinterpret_cast<const T*>(p[2]));
  }
};
template <typename T>
struct AddAlphaF {
  opmath_t<T> alpha;
  __device__ void operator()(char* const* p) const {
    using M = opmath_t<T>;
    M a = cvt<M>(*reinterpret_cast<const T*>(p[1])), b = cvt<M>(*reinterpret_cast<const T*>(p[2]));
    *reinterpret_cast<T*>(p[0]) = cvt<T>(M(a + alpha * b));
  }
};
template <typename O, typename I>
struct CopyF {
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<O*>(p[0]) = cvt<O>(*reinterpret_cast<const I*>(p[1]));
  }
};
template <typename T>
struct FillF {
  T v;
  __device__ void operator()(char* const* p) const { *reinterpret_cast<T*>(p[0]) = v; }
};
template <typename T>
struct WhereF {
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<T*>(p[0]) = *reinterpret_cast<const bool*>(p[1]) ? *reinterpret_cast<const T*>(p[2])
                                                                       : *reinterpret_cast<const T*>(p[3]);
  }
};

}  // namespace

bool unary(const Loop& l, int in_dtype, int out_dtype, UnaryOp op, cudaStream_t s) {
  bool ok = true;
  bool pred = !unary_float_op(op) && op != UnaryOp::BitwiseNot;
  if (pred && out_dtype != kBool) return false;
  bool done = dispatch(in_dtype, [&](auto tag) {
    using T = decltype(tag);
    if (pred) {
      launch<2>(l, s, UnaryPredF<T>{op});
    } else if (out_dtype != in_dtype) {
      ok = false;
    } else if constexpr (is_floating_v<T>) {
      if (op == UnaryOp::BitwiseNot) ok = false;
      else launch<2>(l, s, UnaryFloatF<T>{op});
    } else {
      if (!unary_int_op(op)) ok = false;
      else launch<2>(l, s, UnaryIntF<T>{op});
    }
  });
  return done && ok;
}

bool binary(const Loop& l, int in_dtype, int out_dtype, BinaryOp op, cudaStream_t s) {
  bool ok = true;
  bool done = dispatch(in_dtype, [&](auto tag) {
    using T = decltype(tag);
    if (is_predicate(op)) {
      if (out_dtype != kBool) ok = false;
      else launch<3>(l, s, BinaryPredF<T>{op});
    } else if (out_dtype != in_dtype) {
      ok = false;
    } else if constexpr (is_floating_v<T>) {
      if (!binary_float_op(op)) ok = false;
      else launch<3>(l, s, BinaryFloatF<T>{op});
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!binary_bool_op(op)) ok = false;
      else launch<3>(l, s, BinaryBoolF{op});
    } else {
      if (!binary_int_op(op)) ok = false;
      else launch<3>(l, s, BinaryIntF<T>{op});
    }
  });
  return done && ok;
}

bool add_alpha(const Loop& l, int dtype, double alpha, cudaStream_t s) {
  bool ok = true;
  bool done = dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) ok = false;
    else launch<3>(l, s, AddAlphaF<T>{opmath_t<T>(alpha)});
  });
  return done && ok;
}

bool copy(const Loop& l, int out_dtype, int in_dtype, cudaStream_t s) {
  bool ok = false;
  dispatch(out_dtype, [&](auto otag) {
    using O = decltype(otag);
    ok = dispatch(in_dtype, [&](auto itag) { launch<2>(l, s, CopyF<O, decltype(itag)>{}); });
  });
  return ok;
}

bool fill(const Loop& l, int dtype, uint64_t bits, cudaStream_t s) {
  return dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    FillF<T> f;
    memcpy(&f.v, &bits, sizeof(T));
    launch<1>(l, s, f);
  });
}

bool where(const Loop& l, int dtype, cudaStream_t s) {
  return dispatch(dtype, [&](auto tag) { launch<4>(l, s, WhereF<decltype(tag)>{}); });
}

}  // namespace kindle::cuda_kernels
