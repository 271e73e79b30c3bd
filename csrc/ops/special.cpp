// kindle.special and its top-level aliases (lgamma, digamma, polygamma, erfc, i0, igamma, ...):
// PyTorch's dtype rules per function, then the special kernel (csrc/cpu/special.cpp).
#include "native_ops.h"
#include "ops/kernels.h"

namespace kindle {
namespace {

// reduced: PyTorch has float16/bfloat16 kernels for it. int_to_float: integers promote to the
// default float type (igamma alone refuses them).
struct Rules {
  bool reduced = true;
  bool int_to_float = true;
};

Tensor special(const char* name, const Tensor& a, const Tensor* b, SpecialOp op, Rules rules, double p0 = 0,
               const Tensor& out = {}) {
  TensorIterConfig cfg;
  cfg.add_output(out).add_input(a);
  if (b) cfg.add_input(*b);
  cfg.int_to_float = rules.int_to_float;
  TensorIter it = cfg.build(name);
  DType ct = it.common_dtype;
  bool ok = is_floating_point(ct) && (rules.reduced || (ct != kFloat16 && ct != kBFloat16));
  KINDLE_CHECK_NOT_IMPLEMENTED(ok, name, ": \"", name, "_cpu\" not implemented for '", scalar_type_name(ct), "'");
  double p[1] = {p0};
  if (it.numel) special_stub[it.device()](it, op, p);
  it.finish();
  if (out.defined()) out.bump_version();
  return it.output();
}

constexpr Rules kAll{true, true}, kF32F64{false, true}, kFloatsOnly{true, false};

}  // namespace

// NS is `native_` for the ops with derivatives (their autograd wrappers are generated); errors
// name the op without it.
#define KINDLE_SPECIAL_UNARY(NS, fn, OP, RULES) \
  Tensor NS##fn(const Tensor& self) { return special(#fn, self, nullptr, SpecialOp::OP, RULES); }
#define KINDLE_SPECIAL_UNARY_INPLACE(fn, OP, RULES)  \
  KINDLE_SPECIAL_UNARY(native_, fn, OP, RULES)       \
  const Tensor& native_##fn##_(const Tensor& self) { \
    special(#fn "_", self, nullptr, SpecialOp::OP, RULES, 0, self); \
    return self;                                     \
  }
#define KINDLE_SPECIAL_BINARY(NS, fn, OP, RULES) \
  Tensor NS##fn(const Tensor& self, const Tensor& other) { return special(#fn, self, &other, SpecialOp::OP, RULES); }
#define KINDLE_SPECIAL_BINARY_INPLACE(fn, OP, RULES)                      \
  KINDLE_SPECIAL_BINARY(native_, fn, OP, RULES)                           \
  const Tensor& native_##fn##_(const Tensor& self, const Tensor& other) { \
    special(#fn "_", self, &other, SpecialOp::OP, RULES, 0, self);        \
    return self;                                                          \
  }

// with derivatives (the autograd wrappers are generated around native_*)
KINDLE_SPECIAL_UNARY_INPLACE(lgamma, Lgamma, kAll)
KINDLE_SPECIAL_UNARY_INPLACE(digamma, Digamma, kAll)
KINDLE_SPECIAL_UNARY_INPLACE(erfc, Erfc, kAll)
KINDLE_SPECIAL_UNARY_INPLACE(i0, I0, kAll)
KINDLE_SPECIAL_UNARY(native_, special_i0e, I0e, kAll)
KINDLE_SPECIAL_UNARY(native_, special_i1, I1, kAll)
KINDLE_SPECIAL_UNARY(native_, special_i1e, I1e, kAll)
KINDLE_SPECIAL_UNARY(native_, special_erfcx, Erfcx, kF32F64)
KINDLE_SPECIAL_UNARY(native_, special_ndtri, Ndtri, kF32F64)
KINDLE_SPECIAL_UNARY(native_, special_log_ndtr, LogNdtr, kF32F64)
KINDLE_SPECIAL_UNARY(native_, special_entr, Entr, kAll)
KINDLE_SPECIAL_BINARY(native_, special_zeta, Zeta, kF32F64)
KINDLE_SPECIAL_BINARY(native_, special_xlog1py, Xlog1py, kAll)
KINDLE_SPECIAL_BINARY_INPLACE(igamma, Igamma, kFloatsOnly)
KINDLE_SPECIAL_BINARY_INPLACE(igammac, Igammac, kFloatsOnly)

Tensor native_polygamma(int64_t n, const Tensor& self) {
  KINDLE_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  return special("polygamma", self, nullptr, SpecialOp::Polygamma, kAll, double(n));
}
const Tensor& native_polygamma_(const Tensor& self, int64_t n) {
  KINDLE_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  special("polygamma_", self, nullptr, SpecialOp::Polygamma, kAll, double(n), self);
  return self;
}

// without derivatives, as in PyTorch
KINDLE_SPECIAL_UNARY(, special_bessel_j0, BesselJ0, kF32F64)
KINDLE_SPECIAL_UNARY(, special_bessel_j1, BesselJ1, kF32F64)
KINDLE_SPECIAL_UNARY(, special_bessel_y0, BesselY0, kF32F64)
KINDLE_SPECIAL_UNARY(, special_bessel_y1, BesselY1, kF32F64)
KINDLE_SPECIAL_UNARY(, special_modified_bessel_i0, ModBesselI0, kF32F64)
KINDLE_SPECIAL_UNARY(, special_modified_bessel_i1, ModBesselI1, kF32F64)
KINDLE_SPECIAL_UNARY(, special_modified_bessel_k0, ModBesselK0, kF32F64)
KINDLE_SPECIAL_UNARY(, special_modified_bessel_k1, ModBesselK1, kF32F64)
KINDLE_SPECIAL_UNARY(, special_scaled_modified_bessel_k0, ScaledBesselK0, kF32F64)
KINDLE_SPECIAL_UNARY(, special_scaled_modified_bessel_k1, ScaledBesselK1, kF32F64)
KINDLE_SPECIAL_UNARY(, special_spherical_bessel_j0, SphericalBesselJ0, kF32F64)
KINDLE_SPECIAL_UNARY(, special_airy_ai, AiryAi, kF32F64)
KINDLE_SPECIAL_BINARY(, special_chebyshev_polynomial_t, ChebyshevT, kF32F64)
KINDLE_SPECIAL_BINARY(, special_chebyshev_polynomial_u, ChebyshevU, kF32F64)
KINDLE_SPECIAL_BINARY(, special_chebyshev_polynomial_v, ChebyshevV, kF32F64)
KINDLE_SPECIAL_BINARY(, special_chebyshev_polynomial_w, ChebyshevW, kF32F64)
KINDLE_SPECIAL_BINARY(, special_shifted_chebyshev_polynomial_t, ShiftedChebyshevT, kF32F64)
KINDLE_SPECIAL_BINARY(, special_shifted_chebyshev_polynomial_u, ShiftedChebyshevU, kF32F64)
KINDLE_SPECIAL_BINARY(, special_shifted_chebyshev_polynomial_v, ShiftedChebyshevV, kF32F64)
KINDLE_SPECIAL_BINARY(, special_shifted_chebyshev_polynomial_w, ShiftedChebyshevW, kF32F64)
KINDLE_SPECIAL_BINARY(, special_hermite_polynomial_h, HermiteH, kF32F64)
KINDLE_SPECIAL_BINARY(, special_hermite_polynomial_he, HermiteHe, kF32F64)
KINDLE_SPECIAL_BINARY(, special_laguerre_polynomial_l, LaguerreL, kF32F64)
KINDLE_SPECIAL_BINARY(, special_legendre_polynomial_p, LegendreP, kF32F64)

}  // namespace kindle
