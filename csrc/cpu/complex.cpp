// Complex elementwise kernels, casts and reductions on std::complex (PyTorch's formulas where the
// C++ library's differ: sgn, pow with a zero exponent, log1p and expm1 near zero).
#include "cpu/complex.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "cpu/loops.h"
#include "cpu/parallel.h"

namespace kindle::cpu {
namespace {

// One element converted as a copy converts it: a complex value into a real type keeps the real
// part (Tensor.to and .float() in Python warn, as torch does); into bool, nonzero-ness of either part.
template <typename O, typename V>
O convert(const V& x) {
  if constexpr (is_complex_v<V>) {
    if constexpr (is_complex_v<O>) return O(x);
    else if constexpr (std::is_same_v<O, bool>) return x.real() != 0 || x.imag() != 0;
    else return O(static_cast<opmath_t<O>>(x.real()));
  } else {
    using R = typename O::value_type;
    return O(static_cast<R>(x), R(0));
  }
}

template <typename C>
C log1p_c(C z) {  // log(1 + z) without losing a small z
  using R = typename C::value_type;
  R x = z.real(), y = z.imag();
  if (std::abs(x) < R(0.5) && std::abs(y) < R(0.5))
    return C(R(0.5) * std::log1p(x * (x + 2) + y * y), std::atan2(y, x + 1));
  return std::log(C(1) + z);
}
template <typename C>
C expm1_c(C z) {  // exp(z) - 1 = expm1(x) cos y - 2 sin^2(y/2) + i e^x sin y
  using R = typename C::value_type;
  R x = z.real(), y = z.imag(), s = std::sin(y / 2);
  return C(std::expm1(x) * std::cos(y) - 2 * s * s, std::exp(x) * std::sin(y));
}
template <typename C>
C pow_c(C a, C b) {
  if (b == C(0)) return C(1);
  if (b == C(1)) return a;
  if (b == C(2)) return a * a;
  if (a == C(0)) return b.real() > 0 ? C(0) : std::pow(a, b);
  return std::pow(a, b);
}
template <typename C>
bool isnan_c(C z) { return z.real() != z.real() || z.imag() != z.imag(); }

template <typename C>
void unary_typed(TensorIter& it, UnaryOp op) {
  using R = typename C::value_type;
  auto run = [&](auto f) { unary_loop<C, C>(it, f); };
  auto run_bool = [&](auto f) { unary_loop<bool, C>(it, f); };
  const R ln2 = R(0.693147180559945309417), ln10 = R(2.30258509299404568402);
  switch (op) {
    case UnaryOp::Neg: return run([](C z) { return -z; });
    case UnaryOp::Conj: return run([](C z) { return std::conj(z); });
    case UnaryOp::Abs:  // into a real output: |z| without overflow
      return unary_loop<R, C>(it, [](C z) { return std::hypot(z.real(), z.imag()); });
    case UnaryOp::Sgn: return run([](C z) { R a = std::hypot(z.real(), z.imag()); return a == 0 ? C(0) : z / a; });
    case UnaryOp::Sqrt: return run([](C z) { return std::sqrt(z); });
    case UnaryOp::Rsqrt: return run([](C z) { return C(1) / std::sqrt(z); });
    case UnaryOp::Exp: return run([](C z) { return std::exp(z); });
    case UnaryOp::Exp2: return run([=](C z) { return std::exp(z * ln2); });
    case UnaryOp::Log: return run([](C z) { return std::log(z); });
    case UnaryOp::Log2: return run([=](C z) { return std::log(z) / ln2; });
    case UnaryOp::Log10: return run([=](C z) { return std::log(z) / ln10; });
    case UnaryOp::Log1p: return run([](C z) { return log1p_c(z); });
    case UnaryOp::Expm1: return run([](C z) { return expm1_c(z); });
    case UnaryOp::Sin: return run([](C z) { return std::sin(z); });
    case UnaryOp::Cos: return run([](C z) { return std::cos(z); });
    case UnaryOp::Tan: return run([](C z) { return std::tan(z); });
    case UnaryOp::Asin: return run([](C z) { return std::asin(z); });
    case UnaryOp::Acos: return run([](C z) { return std::acos(z); });
    case UnaryOp::Atan: return run([](C z) { return std::atan(z); });
    case UnaryOp::Sinh: return run([](C z) { return std::sinh(z); });
    case UnaryOp::Cosh: return run([](C z) { return std::cosh(z); });
    case UnaryOp::Tanh: return run([](C z) { return std::tanh(z); });
    case UnaryOp::Asinh: return run([](C z) { return std::asinh(z); });
    case UnaryOp::Acosh: return run([](C z) { return std::acosh(z); });
    case UnaryOp::Atanh: return run([](C z) { return std::atanh(z); });
    case UnaryOp::Sigmoid: return run([](C z) { return C(1) / (C(1) + std::exp(-z)); });
    case UnaryOp::Silu: return run([](C z) { return z / (C(1) + std::exp(-z)); });
    case UnaryOp::Reciprocal: return run([](C z) { return C(1) / z; });
    case UnaryOp::Square: return run([](C z) { return z * z; });
    case UnaryOp::LogicalNot: return run_bool([](C z) { return z == C(0); });
    case UnaryOp::Isnan: return run_bool([](C z) { return isnan_c(z); });
    case UnaryOp::Isinf: return run_bool([](C z) { return std::isinf(z.real()) || std::isinf(z.imag()); });
    case UnaryOp::Isfinite: return run_bool([](C z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); });
    default: break;
  }
  KINDLE_INTERNAL_ASSERT(false, "unary op ", int(op), " has no complex kernel (the op layer refuses it)");
}

template <typename C>
void binary_typed(TensorIter& it, BinaryOp op) {
  auto run = [&](auto f) { binary_loop<C, C>(it, f); };
  auto run_bool = [&](auto f) { binary_loop<bool, C>(it, f); };
  switch (op) {
    case BinaryOp::Add: return run([](C a, C b) { return a + b; });
    case BinaryOp::Sub: return run([](C a, C b) { return a - b; });
    // the textbook product, as torch computes it (std::complex's also repairs inf * nan: slower)
    case BinaryOp::Mul:
      return run([](C a, C b) { return C(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()); });
    case BinaryOp::Div: return run([](C a, C b) { return a / b; });
    case BinaryOp::Pow: return run([](C a, C b) { return pow_c(a, b); });
    case BinaryOp::Eq: return run_bool([](C a, C b) { return a == b; });
    case BinaryOp::Ne: return run_bool([](C a, C b) { return a != b; });
    case BinaryOp::LogicalAnd: return run_bool([](C a, C b) { return a != C(0) && b != C(0); });
    case BinaryOp::LogicalOr: return run_bool([](C a, C b) { return a != C(0) || b != C(0); });
    case BinaryOp::LogicalXor: return run_bool([](C a, C b) { return (a != C(0)) != (b != C(0)); });
    default: break;
  }
  throw NotImplementedError(detail::str_cat("\"", op_code_name(op), "_cpu\" not implemented for '",
                                            scalar_type_name(it.input_dtype(0)), "'"));
}

// A contiguous run summed as interleaved parts: 16 lanes of the part type (8 complex numbers)
// over chunks of 1024, each chunk's lanes folded in a fixed order and added in double.
template <typename C>
c128 sum_run(const C* p, int64_t n) {
  using R = typename C::value_type;
  constexpr int L = 16;
  constexpr int64_t kChunk = 1024;
  const R* f = reinterpret_cast<const R*>(p);
  double re = 0, im = 0;
  for (int64_t c = 0; c < n; c += kChunk) {
    const int64_t m = 2 * std::min(kChunk, n - c);
    const R* q = f + 2 * c;
    R lanes[L] = {};
    int64_t i = 0;
    for (; i + L <= m; i += L)
      for (int l = 0; l < L; ++l) lanes[l] += q[i + l];
    for (; i < m; ++i) lanes[i & 1] += q[i];
    for (int l = 2; l < L; ++l) lanes[l & 1] += lanes[l];
    re += double(lanes[0]);
    im += double(lanes[1]);
  }
  return {re, im};
}

constexpr int64_t kBlock = 1 << 15;

template <typename C, ReduceOp OP>
void reduce_typed(const ReducePlan& pl) {
  // A fixed order per output whatever the thread count: contiguous rows in blocks of kBlock
  // (blocks of one long row in parallel, combined in order), strided rows one by one in complex128.
  const C* in = static_cast<const C*>(pl.input->data_ptr());
  C* out = static_cast<C*>(pl.out.data_ptr());
  const int64_t nk = int64_t(pl.kept_sizes.size()), R = pl.R;
  auto offset_of = [&](int64_t m) {
    int64_t off = 0;
    for (int64_t d = nk - 1; d >= 0; --d) { off += (m % pl.kept_sizes[d]) * pl.kept_strides[d]; m /= pl.kept_sizes[d]; }
    return off;
  };
  auto row = [&](const C* p) {
    if (OP == ReduceOp::Sum && pl.rstride == 1) {
      c128 acc(0);
      for (int64_t b = 0; b < R; b += kBlock) acc += sum_run(p + b, std::min(kBlock, R - b));
      return acc;
    }
    c128 acc = OP == ReduceOp::Prod ? c128(1) : c128(0);
    for (int64_t i = 0; i < R; ++i) {
      c128 x(p[i * pl.rstride]);
      acc = OP == ReduceOp::Prod ? acc * x : acc + x;
    }
    return acc;
  };
  if (OP == ReduceOp::Sum && pl.M == 1 && pl.rstride == 1 && R > kBlock) {
    const int64_t nb = (R + kBlock - 1) / kBlock;
    std::vector<c128> part(static_cast<size_t>(nb));
    const C* p = in + offset_of(0);
    parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) part[size_t(b)] = sum_run(p + b * kBlock, std::min(kBlock, R - b * kBlock));
    });
    c128 acc(0);
    for (const c128& v : part) acc += v;
    out[0] = C(acc);
    return;
  }
  parallel_for(0, pl.M, rows_grain(R), [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) out[m] = C(row(in + offset_of(m)));
  });
}

}  // namespace

void complex_copy(TensorIter& it) {
  dispatch_all_and_complex(it.output().dtype(), "copy", [&](auto otag) {
    using O = typename decltype(otag)::type;
    dispatch_all_and_complex(it.input_dtype(0), "copy", [&](auto itag) {
      using I = typename decltype(itag)::type;
      if constexpr (is_complex_v<O> || is_complex_v<I>)
        unary_loop<O, I>(it, [](opmath_t<I> x) { return convert<O>(x); });
    });
  });
}

void complex_fill(TensorIter& it, const Scalar& v) {
  dispatch_complex(it.output().dtype(), "fill_", [&](auto tag) {
    using C = typename decltype(tag)::type;
    const C val = v.to<C>();
    for_each_run(it, [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<C*>(p[0] + i * s[0]) = val;
    });
  });
}

void complex_where(TensorIter& it) {
  dispatch_complex(it.output().dtype(), "where", [&](auto tag) {
    using C = typename decltype(tag)::type;
    for_each_run(it, [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<C*>(p[0] + i * s[0]) = load(reinterpret_cast<const bool*>(p[1] + i * s[1]))
                                                     ? *reinterpret_cast<const C*>(p[2] + i * s[2])
                                                     : *reinterpret_cast<const C*>(p[3] + i * s[3]);
    });
  });
}

void complex_unary(TensorIter& it, UnaryOp op) {
  dispatch_complex(it.input_dtype(0), "unary", [&](auto tag) { unary_typed<typename decltype(tag)::type>(it, op); });
}

void complex_binary(TensorIter& it, BinaryOp op) {
  dispatch_complex(it.input_dtype(0), "binary", [&](auto tag) { binary_typed<typename decltype(tag)::type>(it, op); });
}

void complex_add_alpha(TensorIter& it, const Scalar& alpha) {
  dispatch_complex(it.input_dtype(0), "add", [&](auto tag) {
    using C = typename decltype(tag)::type;
    const C al = alpha.to<C>();
    binary_loop<C, C>(it, [al](C a, C b) { return a + al * b; });
  });
}

void complex_reduce(const ReducePlan& pl, ReduceOp op) {
  KINDLE_CHECK_NOT_IMPLEMENTED(op == ReduceOp::Sum || op == ReduceOp::Prod, "reduce: only sum and prod are "
                               "implemented for complex tensors, got ", pl.input->dtype());
  KINDLE_INTERNAL_ASSERT(pl.out.dtype() == pl.input->dtype());
  dispatch_complex(pl.input->dtype(), "reduce", [&](auto tag) {
    using C = typename decltype(tag)::type;
    op == ReduceOp::Sum ? reduce_typed<C, ReduceOp::Sum>(pl) : reduce_typed<C, ReduceOp::Prod>(pl);
  });
}

}  // namespace kindle::cpu
