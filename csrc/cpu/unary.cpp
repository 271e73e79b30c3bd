// Unary elementwise kernels: one functor per op; the loop is loops.h's.
#include <cmath>

#include "cpu/complex.h"
#include "cpu/loops.h"
#include "cpu/vec_math.h"
#include "ops/kernels.h"

// GCC 12 reports the AVX-512 intrinsics' own undefined source operand (_mm512_undefined_ps in
// avx512fintrin.h) as maybe uninitialized where exp16 and the others are inlined (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kindle::cpu {
namespace {

template <typename T>
void float_unary(const TensorIter& it, UnaryOp op) {
  using M = opmath_t<T>;
  auto run = [&](auto f) { unary_loop<T, T>(it, f); };
  switch (op) {
    case UnaryOp::Sqrt: return run([](M x) { return std::sqrt(x); });
    case UnaryOp::Rsqrt: return run([](M x) { return M(1) / std::sqrt(x); });
    case UnaryOp::Exp:
#ifdef __AVX512F__
      if constexpr (std::is_same_v<T, float>) return unary_loop_f32v<__m512>(it, [](__m512 x) { return vm::exp16(x); });
#endif
      return run([](M x) { return vm::exp(x); });
    case UnaryOp::Exp2: return run([](M x) { return vm::exp2(x); });
    case UnaryOp::Log: return run([](M x) { return vm::log(x); });
    case UnaryOp::Log2: return run([](M x) { return vm::log2(x); });
    case UnaryOp::Log10: return run([](M x) { return vm::log10(x); });
    case UnaryOp::Log1p: return run([](M x) { return vm::log1p(x); });
    case UnaryOp::Expm1: return run([](M x) { return vm::expm1(x); });
    case UnaryOp::Sin: return run([](M x) { return vm::sin(x); });
    case UnaryOp::Cos: return run([](M x) { return vm::cos(x); });
    case UnaryOp::Tan: return run([](M x) { return vm::tan(x); });
    case UnaryOp::Asin: return run([](M x) { return vm::asin(x); });
    case UnaryOp::Acos: return run([](M x) { return vm::acos(x); });
    case UnaryOp::Atan: return run([](M x) { return vm::atan(x); });
    case UnaryOp::Sinh: return run([](M x) { return vm::sinh(x); });
    case UnaryOp::Asinh: return run([](M x) { return std::asinh(x); });
    case UnaryOp::Acosh: return run([](M x) { return std::acosh(x); });
    case UnaryOp::Atanh: return run([](M x) { return std::atanh(x); });
    case UnaryOp::Cosh: return run([](M x) { return vm::cosh(x); });
    case UnaryOp::Tanh:
#if defined(__AVX512F__)
      if constexpr (std::is_same_v<T, float>) return unary_loop_f32v<__m512>(it, [](__m512 x) { return vm::tanh16(x); });
#elif defined(__AVX2__)
      if constexpr (std::is_same_v<T, float>) return unary_loop_f32v<__m256>(it, [](__m256 x) { return vm::tanh8(x); });
#endif
      return run([](M x) { return vm::tanh(x); });
    case UnaryOp::Erf: return run([](M x) { return vm::erf(x); });
    case UnaryOp::Erfinv: return run([](M x) { return vm::erfinv(x); });
    case UnaryOp::Sigmoid: return run([](M x) { return M(1) / (M(1) + vm::exp(-x)); });
    case UnaryOp::Silu: return run([](M x) { return x / (M(1) + vm::exp(-x)); });
    case UnaryOp::GeluErf:
#ifdef __AVX512F__
      if constexpr (std::is_same_v<T, float>) return unary_loop_f32v<__m512>(it, [](__m512 x) { return vm::gelu16(x); });
#endif
      if constexpr (std::is_same_v<M, float>)
        return run([](M x) { return M(0.5) * x * (M(1) + vm::gelu_erf(x * M(0.70710678118654752))); });
      else
        return run([](M x) { return M(0.5) * x * (M(1) + vm::erf(x * M(0.70710678118654752))); });
    case UnaryOp::GeluTanh:
      return run([](M x) {
        M inner = M(0.79788456080286536) * (x + M(0.044715) * x * x * x);
        return M(0.5) * x * (M(1) + vm::tanh(inner));
      });
    case UnaryOp::Reciprocal: return run([](M x) { return M(1) / x; });
    case UnaryOp::Frac: return run([](M x) { return x - std::trunc(x); });
    case UnaryOp::Round: return run([](M x) { return std::nearbyint(x); });
    default: KINDLE_INTERNAL_ASSERT(false, "unary op ", int(op), " is not a float op");
  }
}

template <typename T>
void any_unary(const TensorIter& it, UnaryOp op) {
  using M = opmath_t<T>;
  auto run = [&](auto f) { unary_loop<T, T>(it, f); };
  auto run_bool = [&](auto f) { unary_loop<bool, T>(it, f); };
  constexpr bool is_float = std::is_floating_point_v<M>;
  switch (op) {
    case UnaryOp::Neg: return run([](M x) { return wrap_sub(M(0), x); });  // -INT_MIN wraps
    case UnaryOp::Abs:
      if constexpr (std::is_unsigned_v<M>) return run([](M x) { return x; });
      else return run([](M x) { return x < M(0) ? wrap_sub(M(0), x) : x; });
    case UnaryOp::Sign:
    case UnaryOp::Sgn: return run([](M x) { return M((M(0) < x) - (x < M(0))); });  // sign(nan) is 0, as in PyTorch
    case UnaryOp::Relu: return run([](M x) { return x < M(0) ? M(0) : x; });
    case UnaryOp::Square: return run([](M x) { return wrap_mul(x, x); });
    case UnaryOp::Floor: if constexpr (is_float) return run([](M x) { return std::floor(x); }); else return run([](M x) { return x; });
    case UnaryOp::Ceil: if constexpr (is_float) return run([](M x) { return std::ceil(x); }); else return run([](M x) { return x; });
    case UnaryOp::Trunc: if constexpr (is_float) return run([](M x) { return std::trunc(x); }); else return run([](M x) { return x; });
    case UnaryOp::Round: if constexpr (is_float) return run([](M x) { return std::nearbyint(x); }); else return run([](M x) { return x; });
    case UnaryOp::LogicalNot: return run_bool([](M x) { return !bool(x); });
    case UnaryOp::Isnan: return run_bool([](M x) { return x != x; });
    case UnaryOp::Isinf: if constexpr (is_float) return run_bool([](M x) { return std::isinf(x); }); else return run_bool([](M) { return false; });
    case UnaryOp::Isfinite: if constexpr (is_float) return run_bool([](M x) { return std::isfinite(x); }); else return run_bool([](M) { return true; });
    case UnaryOp::Signbit:  // not std::signbit: it hits a GCC 12 vectoriser bug here
      if constexpr (is_float) return run_bool([](M x) { return x < M(0) || (x == M(0) && M(1) / x < M(0)); });
      else return run_bool([](M x) { return x < M(0); });
    case UnaryOp::BitwiseNot:
      if constexpr (std::is_same_v<T, bool>) return run([](M x) { return !x; });
      else if constexpr (std::is_integral_v<M>) return run([](M x) { return M(~x); });
      break;
    default:
      if constexpr (is_float) return float_unary<T>(it, op);
      break;
  }
  KINDLE_INTERNAL_ASSERT(false, "unary op ", int(op), " has no kernel for ", it.input_dtype(0));
}

void unary_kernel(TensorIter& it, UnaryOp op) {
  if (is_complex(it.input_dtype(0))) return complex_unary(it, op);
  dispatch_all(it.input_dtype(0), "unary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      // bool only reaches here for ops that are defined on it (the op layer checks)
      any_unary<bool>(it, op);
    } else {
      any_unary<T>(it, op);
    }
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(unary_stub, DeviceType::CPU, &cpu::unary_kernel);
}  // namespace kindle
