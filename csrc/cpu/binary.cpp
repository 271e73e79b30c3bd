// Binary elementwise kernels, plus the fused add with alpha, where, fill and the parameterised
// float ops (clamp, lerp, addcmul, ...). One functor per op; the loops are loops.h's.
#include <atomic>
#include <cmath>
#include <limits>

#include "cpu/complex.h"
#include "cpu/loops.h"
#include "cpu/vec_math.h"
#include "ops/kernels.h"

namespace kindle::cpu {
namespace {

// Integer a / b and a % b with b != 0: the most negative value over -1 overflows (SIGFPE on
// x86); the quotient wraps to itself and the remainder is 0, as in PyTorch.
template <typename M>
M int_div(M a, M b) {
  if constexpr (std::is_signed_v<M>) if (b == -1) return wrap_sub(M(0), a);
  return M(a / b);
}
template <typename M>
M int_rem(M a, M b) {
  if constexpr (std::is_signed_v<M>) if (b == -1) return M(0);
  return M(a % b);
}

template <typename M>
M python_mod(M a, M b) {  // the result takes the sign of the divisor
  if constexpr (std::is_floating_point_v<M>) {
    M r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  } else {
    M r = int_rem(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
}

template <typename M>
M int_pow(M base, M exp) {
  if constexpr (std::is_signed_v<M>) {
    if (exp < 0) return base == 1 ? 1 : base == -1 ? (exp % 2 ? -1 : 1) : 0;
  }
  M r = 1;
  while (exp) {
    if (exp & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    exp >>= 1;
  }
  return r;
}

template <typename T>
void binary_typed(const TensorIter& it, BinaryOp op) {
  using M = opmath_t<T>;
  constexpr bool is_float = std::is_floating_point_v<M>;
  constexpr bool is_bool = std::is_same_v<T, bool>;
  auto run = [&](auto f) { binary_loop<T, T>(it, f); };
  auto run_bool = [&](auto f) { binary_loop<bool, T>(it, f); };
  std::atomic<bool> zero_div{false};
  switch (op) {
    case BinaryOp::Add: if constexpr (is_bool) return run([](M a, M b) { return a || b; }); else return run([](M a, M b) { return wrap_add(a, b); });
    case BinaryOp::Sub: return run([](M a, M b) { return wrap_sub(a, b); });
    case BinaryOp::Mul: if constexpr (is_bool) return run([](M a, M b) { return a && b; }); else return run([](M a, M b) { return wrap_mul(a, b); });
    case BinaryOp::Div: return run([](M a, M b) { return M(a / b); });
    case BinaryOp::DivTrunc:
      if constexpr (is_float) return run([](M a, M b) { return std::trunc(a / b); });
      else if constexpr (!is_bool) { run([&](M a, M b) { if (b == 0) { zero_div = true; return M(0); } return int_div(a, b); }); }
      break;
    case BinaryOp::DivFloor:
      if constexpr (is_float)
        return run([](M a, M b) {
          if (b == 0) return a / b;
          M m = std::fmod(a, b), d = (a - m) / b;
          if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
          M f = std::floor(d);
          return d - f > M(0.5) ? f + 1 : f;
        });
      else if constexpr (!is_bool) {
        run([&](M a, M b) {
          if (b == 0) { zero_div = true; return M(0); }
          M q = int_div(a, b);
          if ((int_rem(a, b) != 0) && ((a < 0) != (b < 0))) q = M(q - 1);
          return q;
        });
      }
      break;
    case BinaryOp::Remainder:
      if constexpr (is_float) return run([](M a, M b) { return python_mod(a, b); });
      else if constexpr (!is_bool) { run([&](M a, M b) { if (b == 0) { zero_div = true; return M(0); } return python_mod(a, b); }); }
      break;
    case BinaryOp::Fmod:
      if constexpr (is_float) return run([](M a, M b) { return std::fmod(a, b); });
      else if constexpr (!is_bool) { run([&](M a, M b) { if (b == 0) { zero_div = true; return M(0); } return int_rem(a, b); }); }
      break;
    case BinaryOp::Pow:
      // Exponents 0.5 and -0.5 are sqrt and rsqrt, as PyTorch computes them (pow(-inf, 0.5) is
      // inf by IEEE, but NaN there) except for float16, which it computes with pow.
      if constexpr (std::is_same_v<T, Half>)
        return run([](M a, M b) { return b == M(2) ? a * a : vm::pow(a, b); });
      else if constexpr (is_float)
        return run([](M a, M b) {
          return b == M(2) ? a * a : b == M(0.5) ? std::sqrt(a) : b == M(-0.5) ? M(1) / std::sqrt(a) : vm::pow(a, b);
        });
      else if constexpr (!is_bool) return run([](M a, M b) { return int_pow(a, b); });
      break;
    case BinaryOp::Atan2: if constexpr (is_float) return run([](M a, M b) { return vm::atan2(a, b); }); break;
    case BinaryOp::Hypot: if constexpr (is_float) return run([](M a, M b) { return vm::hypot(a, b); }); break;
    case BinaryOp::Copysign: if constexpr (is_float) return run([](M a, M b) { return std::copysign(a, b); }); break;
    case BinaryOp::Xlogy: if constexpr (is_float) return run([](M a, M b) { return b != b ? b : a == 0 ? M(0) : a * vm::log(b); }); break;
    // NaN in b passes the gradient (as PyTorch's threshold_backward)
    case BinaryOp::ReluGrad: if constexpr (is_float) return run([](M g, M r) { return r <= M(0) ? M(0) : g; }); break;
    case BinaryOp::TanhGrad: if constexpr (is_float) return run([](M g, M y) { return g * (M(1) - y * y); }); break;
    case BinaryOp::SigmoidGrad: if constexpr (is_float) return run([](M g, M y) { return g * (M(1) - y) * y; }); break;
    case BinaryOp::Maximum:
      if constexpr (is_float) return run([](M a, M b) { return a != a ? a : b != b ? b : std::max(a, b); });
      else return run([](M a, M b) { return std::max(a, b); });
    case BinaryOp::Minimum:
      if constexpr (is_float) return run([](M a, M b) { return a != a ? a : b != b ? b : std::min(a, b); });
      else return run([](M a, M b) { return std::min(a, b); });
    case BinaryOp::Fmax: if constexpr (is_float) return run([](M a, M b) { return std::fmax(a, b); }); else return run([](M a, M b) { return std::max(a, b); });
    case BinaryOp::Fmin: if constexpr (is_float) return run([](M a, M b) { return std::fmin(a, b); }); else return run([](M a, M b) { return std::min(a, b); });
    case BinaryOp::Eq: return run_bool([](M a, M b) { return a == b; });
    case BinaryOp::Ne: return run_bool([](M a, M b) { return a != b; });
    case BinaryOp::Lt: return run_bool([](M a, M b) { return a < b; });
    case BinaryOp::Le: return run_bool([](M a, M b) { return a <= b; });
    case BinaryOp::Gt: return run_bool([](M a, M b) { return a > b; });
    case BinaryOp::Ge: return run_bool([](M a, M b) { return a >= b; });
    case BinaryOp::LogicalAnd: return run_bool([](M a, M b) { return bool(a) && bool(b); });
    case BinaryOp::LogicalOr: return run_bool([](M a, M b) { return bool(a) || bool(b); });
    case BinaryOp::LogicalXor: return run_bool([](M a, M b) { return bool(a) != bool(b); });
    case BinaryOp::BitAnd: if constexpr (!is_float) return run([](M a, M b) { return M(a & b); }); break;
    case BinaryOp::BitOr: if constexpr (!is_float) return run([](M a, M b) { return M(a | b); }); break;
    case BinaryOp::BitXor: if constexpr (!is_float) return run([](M a, M b) { return M(a ^ b); }); break;
    case BinaryOp::Shl:
      if constexpr (!is_float && !is_bool)
        return run([](M a, M b) { using U = std::make_unsigned_t<M>; return b < 0 || b >= M(sizeof(M) * 8) ? M(0) : M(U(a) << b); });
      break;
    case BinaryOp::Shr:
      if constexpr (!is_float && !is_bool)
        return run([](M a, M b) { return b < 0 || b >= M(sizeof(M) * 8) ? M(a < 0 ? -1 : 0) : M(a >> b); });
      break;
  }
  // The op layer checks divisors for zeros before anything is written; this is the backstop.
  KINDLE_CHECK(!zero_div.load(), "ZeroDivisionError: integer division or modulo by zero");
  if (!is_bool && (op == BinaryOp::DivTrunc || op == BinaryOp::DivFloor || op == BinaryOp::Remainder || op == BinaryOp::Fmod)) return;
  KINDLE_CHECK_NOT_IMPLEMENTED(false, op_code_name(op), ": not implemented for ", it.input_dtype(0), " tensors");
}

void binary_kernel(TensorIter& it, BinaryOp op) {
  if (is_complex(it.input_dtype(0))) return complex_binary(it, op);
  dispatch_all(it.input_dtype(0), "binary", [&](auto tag) { binary_typed<typename decltype(tag)::type>(it, op); });
}

void add_alpha_kernel(TensorIter& it, const Scalar& alpha) {
  if (is_complex(it.input_dtype(0))) return complex_add_alpha(it, alpha);
  dispatch_numeric(it.input_dtype(0), "add", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const M al = alpha.to<M>();
    binary_loop<T, T>(it, [al](M a, M b) { return M(a + al * b); });
  });
}

// A 2-d copy whose input is contiguous along the output's outer dim (a transpose): walk it in
// square tiles so that both sides stay in cache; a strided row walk thrashes it.
template <typename T>
bool copy_transposed(const TensorIter& it) {
  if (it.ndim() != 2) return false;
  const int64_t es = sizeof(T);
  const int64_t* so = it.strides[0].data();
  const int64_t* si = it.strides[1].data();
  if (so[0] != es || si[1] != es || si[0] == es) return false;
  const int64_t n0 = it.shape[0], n1 = it.shape[1];
  if (n0 * n1 < 4096) return false;
  constexpr int64_t B = 32;
  char* out = it.data(0);
  const char* in = it.data(1);
  const int64_t nb0 = (n0 + B - 1) / B, nb1 = (n1 + B - 1) / B;
  parallel_for(0, nb0 * nb1, 16, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int64_t i1 = (t / nb0) * B, i0 = (t % nb0) * B;
      int64_t e1 = std::min(i1 + B, n1), e0 = std::min(i0 + B, n0);
      for (int64_t j = i1; j < e1; ++j) {
        T* o = reinterpret_cast<T*>(out + j * so[1]);
        const char* src = in + j * si[1];
        for (int64_t i = i0; i < e0; ++i) o[i] = *reinterpret_cast<const T*>(src + i * si[0]);
      }
    }
  });
  return true;
}

void copy_kernel(TensorIter& it) {
  DType out = it.output().dtype(), in = it.input_dtype(0);
  if (out == in && itemsize(out) == 16) {
    unary_loop<c128, c128>(it, [](c128 z) { return z; });
    return;
  }
  if (is_complex(out) || is_complex(in)) return complex_copy(it);
  if (out == in) {
    bool done = false;
    switch (itemsize(out)) {
      case 1: done = copy_transposed<uint8_t>(it); break;
      case 2: done = copy_transposed<uint16_t>(it); break;
      case 4: done = copy_transposed<uint32_t>(it); break;
      case 8: done = copy_transposed<uint64_t>(it); break;
    }
    if (done) return;
  }
  dispatch_all(out, "copy", [&](auto otag) {
    using O = typename decltype(otag)::type;
    dispatch_all(in, "copy", [&](auto itag) {
      using I = typename decltype(itag)::type;
      if constexpr (std::is_same_v<O, bool>) unary_loop<O, I>(it, [](opmath_t<I> x) { return x != opmath_t<I>(0); });
      else unary_loop<O, I>(it, [](opmath_t<I> x) { return static_cast<opmath_t<O>>(x); });
    });
  });
}

void fill_kernel(TensorIter& it, const Scalar& v) {
  if (is_complex(it.output().dtype())) return complex_fill(it, v);
  dispatch_all(it.output().dtype(), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T val = v.to<T>();
    for_each_run(it, [&](char** p, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(T)) {
        T* o = reinterpret_cast<T*>(p[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = val;
      } else {
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = val;
      }
    });
  });
}

// Contiguous runs (each value operand contiguous or one broadcast value) take a select loop the
// compiler vectorises: autograd's masks (relu-like backwards, clamp's) are where()s of one shape.
template <typename T, int StepA, int StepB>
void where_run(char** p, int64_t n) {
  T* o = reinterpret_cast<T*>(p[0]);
  const uint8_t* c = reinterpret_cast<const uint8_t*>(p[1]);  // a bool is its byte != 0 (see load)
  const T* a = reinterpret_cast<const T*>(p[2]);
  const T* b = reinterpret_cast<const T*>(p[3]);
  // (both values loaded unconditionally: a load under the select is not vectorised)
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const T av = a[i * StepA], bv = b[i * StepB];
    o[i] = c[i] != 0 ? av : bv;
  }
}

void where_kernel(TensorIter& it) {
  if (is_complex(it.output().dtype())) return complex_where(it);
  dispatch_all(it.output().dtype(), "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_run(it, [&](char** p, const int64_t* s, int64_t n) {
      constexpr int64_t st = sizeof(T);
      if constexpr (kSimdOk<T>) {
        if (s[0] == st && s[1] == 1) {
          if (s[2] == st && s[3] == st) return where_run<T, 1, 1>(p, n);
          if (s[2] == st && s[3] == 0) return where_run<T, 1, 0>(p, n);
          if (s[2] == 0 && s[3] == st) return where_run<T, 0, 1>(p, n);
        }
      }
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) =
            load(reinterpret_cast<const bool*>(p[1] + i * s[1])) ? *reinterpret_cast<const T*>(p[2] + i * s[2])
                                                             : *reinterpret_cast<const T*>(p[3] + i * s[3]);
    });
  });
}

void param_kernel(TensorIter& it, ParamOp op, const double* pr) {
  dispatch_numeric(it.output().dtype(), "elementwise", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    auto run = [&](auto f) { unary_loop<T, T>(it, f); };
    if constexpr (std::is_floating_point_v<M>) {
      switch (op) {
        // The activations below call the vector math library: those that then select run in
        // staged_loop's two passes (see loops.h), the others in one.
        case ParamOp::Softplus: {
          M beta = M(pr[0]), thr = M(pr[1]);
          return staged_loop<T, 1>(it, [=](M x) { return vm::log1p(vm::exp(x * beta)) / beta; },
                                   [=](M x, M sp) { return x * beta > thr ? x : sp; });
        }
        case ParamOp::SoftplusGrad: {
          M beta = M(pr[0]), thr = M(pr[1]);
          return staged_loop<T, 2>(it, [=](M x) { return M(1) / (M(1) + vm::exp(-x * beta)); },
                                   [=](M g, M x, M sig) {
                                     const M y = g * sig;
                                     return x * beta > thr ? g : y;
                                   });
        }
        case ParamOp::Elu: {
          M alpha = M(pr[0]), scale = M(pr[1]), in_scale = M(pr[2]);
          return staged_loop<T, 1>(it, [=](M x) { return vm::expm1(x * in_scale); },
                                   [=](M x, M em1) {
                                     const M pos = scale * x, neg = scale * alpha * em1;
                                     return x > 0 ? pos : neg;
                                   });
        }
        // (at x == 0 the negative side's slope; NaN at a NaN input, as PyTorch's vectorised
        // kernel: its strided loop passes grad * scale)
        case ParamOp::EluGrad: {
          M alpha = M(pr[0]), scale = M(pr[1]), in_scale = M(pr[2]);
          const M neg_coef = scale * alpha * in_scale;
          return staged_loop<T, 2>(it, [=](M x) { return vm::exp(x * in_scale); },
                                   [=](M g, M x, M e) {
                                     const M pos = g * scale, neg = g * neg_coef * e;
                                     return x > 0 ? pos : neg;
                                   });
        }
        case ParamOp::Mish: return run([](M x) { return x * vm::tanh(vm::log1p(vm::exp(x))); });
        case ParamOp::MishGrad:
          return binary_loop<T, T>(it, [](M g, M x) {
            const M t = vm::tanh(vm::log1p(vm::exp(x))), sig = M(1) / (M(1) + vm::exp(-x));
            return g * (t + x * sig * (M(1) - t * t));
          });
        case ParamOp::SiluGrad:
          return binary_loop<T, T>(it, [](M g, M x) {
            const M sig = M(1) / (M(1) + vm::exp(-x));
            return g * sig * (M(1) + x * (M(1) - sig));
          });
        // min(x, 0) - log(1 + e^-|x|): no overflow on either side
        case ParamOp::LogSigmoid:
          return staged_loop<T, 1>(it, [](M x) { return vm::log1p(vm::exp(-std::fabs(x))); },
                                   [](M x, M l) { return std::min(x, M(0)) - l; });
        case ParamOp::LogSigmoidGrad:  // sigmoid(-x)
          return binary_loop<T, T>(it, [](M g, M x) { return g / (M(1) + vm::exp(x)); });
        case ParamOp::Hardswish:
          return run([](M x) { return x * std::min(std::max(x + M(3), M(0)), M(6)) / M(6); });
        case ParamOp::Hardsigmoid:
          return run([](M x) { return std::min(std::max(x + M(3), M(0)), M(6)) / M(6); });
        // 0 up to -3, grad from 3, grad * (x/3 + 1/2) between them, NaN at NaN: PyTorch's
        // vectorised kernel (its strided loop passes grad at NaN)
        case ParamOp::HardswishGrad:
          return binary_loop<T, T>(it, [](M g, M x) {
            const M mid = g * (x / M(3) + M(0.5));
            return x <= M(-3) ? M(0) : x >= M(3) ? g : mid;
          });
        case ParamOp::HardsigmoidGrad:
          return binary_loop<T, T>(it, [](M g, M x) {
            const M y = g / M(6);
            return x > M(-3) && x < M(3) ? y : M(0);
          });
        case ParamOp::NanToNum: {
          M nan = M(pr[0]), pinf = M(pr[1]), ninf = M(pr[2]);
          return run([=](M x) { return x != x ? nan : x == INFINITY ? pinf : x == -INFINITY ? ninf : x; });
        }
        case ParamOp::RoundDecimals: {
          M scale = M(std::pow(10.0, pr[0]));
          if (pr[0] >= 0) return run([=](M x) { return std::nearbyint(x * scale) / scale; });
          M inv = M(std::pow(10.0, -pr[0]));
          return run([=](M x) { return std::nearbyint(x / inv) * inv; });
        }
        // Both sides computed, so that the select vectorizes (a product only on one side may not be
        // speculated under -ftrapping-math: the loop stayed scalar and branchy, 5 ns an element).
        case ParamOp::LeakyRelu: {
          M sl = M(pr[0]);
          return run([=](M x) {
            const M y = x * sl;
            return x > 0 ? x : y;
          });
        }
        case ParamOp::LeakyReluGrad: {
          M sl = M(pr[0]);
          binary_loop<T, T>(it, [=](M g, M x) {
            const M y = g * sl;
            return x > 0 ? g : y;
          });
          return;
        }
        // The gradient where lo < x < hi. At a NaN input PyTorch's CPU kernels pass the gradient
        // for float32 (and the half types) and give 0 for float64; so does Kindle.
        case ParamOp::HardtanhGrad: {
          M lo = M(pr[0]), hi = M(pr[1]);
          if constexpr (std::is_same_v<T, double>)
            binary_loop<T, T>(it, [=](M g, M x) { return x > lo && x < hi ? g : M(0); });
          else
            binary_loop<T, T>(it, [=](M g, M x) { return x <= lo || x >= hi ? M(0) : g; });
          return;
        }
        case ParamOp::Lerp: { M w = M(pr[0]); binary_loop<T, T>(it, [=](M a, M b) { return std::abs(w) < M(0.5) ? a + w * (b - a) : b - (b - a) * (M(1) - w); }); return; }
        case ParamOp::Addcdiv: { M v = M(pr[0]); ternary_loop<T>(it, [=](M a, M b, M c) { return a + v * (b / c); }); return; }
        default: break;
      }
    }
    switch (op) {
      // A NaN bound makes every result NaN, as in PyTorch (std::max would drop it).
      case ParamOp::Clamp: {
        M lo = M(pr[0]), hi = M(pr[1]);
        if (lo != lo || hi != hi) return run([=](M) { return lo != lo ? lo : hi; });
        return run([=](M x) { return std::min(std::max(x, lo), hi); });
      }
      case ParamOp::ClampMin: {
        M lo = M(pr[0]);
        if (lo != lo) return run([=](M) { return lo; });
        return run([=](M x) { return std::max(x, lo); });
      }
      case ParamOp::ClampMax: {
        M hi = M(pr[0]);
        if (hi != hi) return run([=](M) { return hi; });
        return run([=](M x) { return std::min(x, hi); });
      }
      // (as the selects x < lo ? lo : x > hi ? hi : x, NaN passing through; written so, GCC emits
      // one max and one min an element, where the selects ran 1.15x torch's time in place)
      case ParamOp::Hardtanh: { M lo = M(pr[0]), hi = M(pr[1]); return run([=](M x) { return std::min(std::max(x, lo), hi); }); }
      case ParamOp::Threshold: { M th = M(pr[0]), v = M(pr[1]); return run([=](M x) { return x <= th ? v : x; }); }
      case ParamOp::Addcmul: { M v = M(pr[0]); ternary_loop<T>(it, [=](M a, M b, M c) { return M(a + v * b * c); }); return; }
      default: break;
    }
    KINDLE_INTERNAL_ASSERT(false, "param op ", int(op), " has no kernel for ", it.output().dtype());
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(binary_stub, DeviceType::CPU, &cpu::binary_kernel);
KINDLE_REGISTER_KERNEL(add_alpha_stub, DeviceType::CPU, &cpu::add_alpha_kernel);
KINDLE_REGISTER_KERNEL(copy_stub, DeviceType::CPU, &cpu::copy_kernel);
KINDLE_REGISTER_KERNEL(where_stub, DeviceType::CPU, &cpu::where_kernel);
KINDLE_REGISTER_KERNEL(fill_stub, DeviceType::CPU, &cpu::fill_kernel);
KINDLE_REGISTER_KERNEL(param_stub, DeviceType::CPU, &cpu::param_kernel);
}  // namespace kindle
