// kindle.special's kernels: each element through a double-precision scalar function, rounded once
// to the tensor's float dtype.
#include "cpu/loops.h"
#include "cpu/special_fast.h"
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

// float32 through a vectorised formula of special_fast.h in blocks; the elements outside its
// domain (valid(x) false) are redone through the scalar double function. Each block is read
// before anything is written: the output may be the input (lgamma_).
template <typename Fast, typename Valid>
void float_fast(const TensorIter& it, SpecialOp op, const double* p, const Fast& fast, const Valid& valid) {
  constexpr int64_t kBlock = 256;
  for_each_run(it, [&](char** ptr, const int64_t* s, int64_t n) {
    if (s[0] == 4 && s[1] == 4 && ptr[0] != ptr[1]) {  // contiguous, not in place: straight through
      float* o = reinterpret_cast<float*>(ptr[0]);
      const float* a = reinterpret_cast<const float*>(ptr[1]);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = float(fast(double(a[i])));
      for (int64_t i = 0; i < n; ++i)
        if (!valid(a[i])) o[i] = float(special_unary(op, double(a[i]), p));
      return;
    }
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
      int64_t m = std::min(kBlock, n - i0);
      alignas(32) float x[kBlock], out[kBlock];
      for (int64_t i = 0; i < m; ++i) x[i] = *reinterpret_cast<const float*>(ptr[1] + (i0 + i) * s[1]);
#pragma omp simd
      for (int64_t i = 0; i < m; ++i) out[i] = float(fast(double(x[i])));
      for (int64_t i = 0; i < m; ++i)
        if (!valid(x[i])) out[i] = float(special_unary(op, double(x[i]), p));
      for (int64_t i = 0; i < m; ++i) *reinterpret_cast<float*>(ptr[0] + (i0 + i) * s[0]) = out[i];
    }
  });
}

// ndtri: the central formula for every element of a block, then the tails (a log, a square
// root and a longer interpolant) only for the elements that need them, gathered.
void ndtri_float(const TensorIter& it, const double* p) {
  const auto& g = fast::ndtri_center();
  const auto& h = fast::ndtri_tail();
  constexpr int64_t kBlock = 256;
  for_each_run(it, [&](char** ptr, const int64_t* s, int64_t n) {
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
      int64_t m = std::min(kBlock, n - i0);
      alignas(32) double x[kBlock], tail[kBlock];
      int32_t idx[kBlock];
      for (int64_t i = 0; i < m; ++i) x[i] = *reinterpret_cast<const float*>(ptr[1] + (i0 + i) * s[1]);
      alignas(32) float out[kBlock];
#pragma omp simd
      for (int64_t i = 0; i < m; ++i) out[i] = float(fast::ndtri_center_value(x[i], g));
      int64_t nt = 0;
      for (int64_t i = 0; i < m; ++i)
        if (!fast::ndtri_central(x[i])) tail[nt] = x[i], idx[nt++] = int32_t(i);
#pragma omp simd
      for (int64_t j = 0; j < nt; ++j) tail[j] = fast::ndtri_tail_value(tail[j], h);
      for (int64_t j = 0; j < nt; ++j) {
        double xv = x[idx[j]];
        out[idx[j]] = fast::ndtri_valid(float(xv)) ? float(tail[j]) : float(special_unary(SpecialOp::Ndtri, xv, p));
      }
      for (int64_t i = 0; i < m; ++i) *reinterpret_cast<float*>(ptr[0] + (i0 + i) * s[0]) = out[i];
    }
  });
}

bool float_kernel(TensorIter& it, SpecialOp op, const double* p) {
  switch (op) {
    // (lambdas, not function pointers: the formulas must inline into the vectorised loop)
    case SpecialOp::Lgamma:
      float_fast(it, op, p, [](double x) { return fast::lgamma(x); }, fast::lgamma_valid);
      return true;
    case SpecialOp::Digamma:
      float_fast(it, op, p, [](double x) { return fast::digamma(x); }, fast::digamma_valid);
      return true;
    case SpecialOp::I0e: float_fast(it, op, p, [](double x) { return fast::i0e(x); }, fast::i0e_valid); return true;
    case SpecialOp::Ndtri: ndtri_float(it, p); return true;
    default: return false;
  }
}

void special_kernel(TensorIter& it, SpecialOp op, const double* p) {
  dispatch_floating(it.output().dtype(), "special", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float>) {
      if (it.n_operands - it.n_outputs == 1 && it.input_dtype(0) == kFloat32 && float_kernel(it, op, p)) return;
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
KINDLE_REGISTER_KERNEL(special_stub, DeviceType::CPU, &cpu::special_kernel);
}  // namespace kindle
