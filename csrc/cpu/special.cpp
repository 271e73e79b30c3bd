// kindle.special's kernels: each element through a double-precision scalar function, rounded once
// to the tensor's float dtype.
#include "cpu/loops.h"
#include "cpu/special_math.h"
#include "ops/kernels.h"

namespace kindle::cpu {
namespace {

double special_unary(SpecialOp op, double x, const double* p) {
  switch (op) {
    case SpecialOp::Lgamma: return sm::lgamma(x);
    case SpecialOp::Digamma: return sm::digamma(x);
    case SpecialOp::Polygamma: return sm::polygamma(int64_t(p[0]), x);
    case SpecialOp::Erfc: return std::erfc(x);
    case SpecialOp::Erfcx: return sm::erfcx(x);
    case SpecialOp::Ndtri: return sm::ndtri(x);
    case SpecialOp::LogNdtr: return sm::log_ndtr(x);
    case SpecialOp::Entr: return sm::entr(x);
    case SpecialOp::I0:
    case SpecialOp::ModBesselI0: return sm::bessel_i(0, x, false);
    case SpecialOp::I0e: return sm::bessel_i(0, x, true);
    case SpecialOp::I1:
    case SpecialOp::ModBesselI1: return sm::bessel_i(1, x, false);
    case SpecialOp::I1e: return sm::bessel_i(1, x, true);
    case SpecialOp::BesselJ0: return sm::bessel_j(0, x);
    case SpecialOp::BesselJ1: return sm::bessel_j(1, x);
    case SpecialOp::BesselY0: return sm::bessel_y(0, x);
    case SpecialOp::BesselY1: return sm::bessel_y(1, x);
    case SpecialOp::ModBesselK0: return sm::bessel_k(0, x, false);
    case SpecialOp::ModBesselK1: return sm::bessel_k(1, x, false);
    case SpecialOp::ScaledBesselK0: return sm::bessel_k(0, x, true);
    case SpecialOp::ScaledBesselK1: return sm::bessel_k(1, x, true);
    case SpecialOp::SphericalBesselJ0: return sm::spherical_bessel_j0(x);
    case SpecialOp::AiryAi: return sm::airy_ai(x);
    default: return sm::kNaN;
  }
}

double special_binary(SpecialOp op, double a, double b) {
  using sm::Poly;
  switch (op) {
    case SpecialOp::Zeta: return sm::zeta(a, b);
    case SpecialOp::Igamma: return sm::igamma(a, b);
    case SpecialOp::Igammac: return sm::igammac(a, b);
    case SpecialOp::Xlog1py: return sm::xlog1py(a, b);
    case SpecialOp::ChebyshevT: return sm::orthogonal_poly(Poly::ChebT, a, b);
    case SpecialOp::ChebyshevU: return sm::orthogonal_poly(Poly::ChebU, a, b);
    case SpecialOp::ChebyshevV: return sm::orthogonal_poly(Poly::ChebV, a, b);
    case SpecialOp::ChebyshevW: return sm::orthogonal_poly(Poly::ChebW, a, b);
    // shifted Chebyshev polynomials: T*_n(x) = T_n(2x - 1)
    case SpecialOp::ShiftedChebyshevT: return sm::orthogonal_poly(Poly::ChebT, 2 * a - 1, b);
    case SpecialOp::ShiftedChebyshevU: return sm::orthogonal_poly(Poly::ChebU, 2 * a - 1, b);
    case SpecialOp::ShiftedChebyshevV: return sm::orthogonal_poly(Poly::ChebV, 2 * a - 1, b);
    case SpecialOp::ShiftedChebyshevW: return sm::orthogonal_poly(Poly::ChebW, 2 * a - 1, b);
    case SpecialOp::HermiteH: return sm::orthogonal_poly(Poly::HermiteH, a, b);
    case SpecialOp::HermiteHe: return sm::orthogonal_poly(Poly::HermiteHe, a, b);
    case SpecialOp::LaguerreL: return sm::orthogonal_poly(Poly::LaguerreL, a, b);
    case SpecialOp::LegendreP: return sm::orthogonal_poly(Poly::LegendreP, a, b);
    default: return sm::kNaN;
  }
}

void special_kernel(TensorIter& it, SpecialOp op, const double* p) {
  dispatch_floating(it.output().dtype(), "special", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float>) {
      if (op == SpecialOp::Lgamma) {  // glibc's float lgamma is correctly rounded to an ulp, and 3x faster
        return unary_loop<float, float>(it, [](float x) { int sign; return ::lgammaf_r(x, &sign); });
      }
    }
    if (op >= SpecialOp::Zeta)
      binary_loop<T, T>(it, [op](auto a, auto b) { return decltype(a)(special_binary(op, double(a), double(b))); });
    else
      unary_loop<T, T>(it, [op, p](auto x) { return decltype(x)(special_unary(op, double(x), p)); });
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KernelStub<void (*)(TensorIter&, SpecialOp, const double*)> special_stub{"special"};
KINDLE_REGISTER_KERNEL(special_stub, DeviceType::CPU, &cpu::special_kernel);
}  // namespace kindle
