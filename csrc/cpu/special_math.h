// Scalar special functions in double precision (kindle.special's kernels call these for every
// float dtype, then round once). The Bessel functions come from libstdc++'s C++17 special
// math (std::cyl_bessel_*), which throws on arguments outside its domain: the wrappers here
// handle signs, zeros and NaN first. The rest are written from the textbook formulas cited.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

namespace kindle::cpu::sm {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;

inline double lgamma(double x) {
  int sign;
  return ::lgamma_r(x, &sign);  // lgamma writes the global signgam: a data race across threads
}

// tan(pi x) without the rounding of pi x for large |x|.
inline double tan_pi(double x) {
  double r = std::remainder(x, 1.0);  // in [-0.5, 0.5]
  return std::tan(kPi * r);
}

// digamma: reflection for x < 0, recurrence up to x >= 10, then the asymptotic series
// ln x - 1/(2x) - sum B_2k / (2k x^2k)  (DLMF 5.11.2).
inline double digamma(double x) {
  if (x != x) return x;
  if (x == 0) return std::signbit(x) ? kInf : -kInf;  // as PyTorch: -inf at +0
  if (x < 0) {
    if (x == std::floor(x)) return kNaN;
    return digamma(1 - x) - kPi / tan_pi(x);
  }
  if (x == kInf) return kInf;
  double acc = 0;
  while (x < 10) acc -= 1 / x, x += 1;
  double z = 1 / (x * x);
  double series = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return acc + std::log(x) - 0.5 / x - series;
}

// Hurwitz zeta(s, q) = sum_k (q + k)^-s: direct terms until q + k is large, then the
// Euler-Maclaurin tail with Bernoulli numbers (DLMF 25.11.5 / 2.10.1).
inline double zeta(double s, double q) {
  if (s != s || q != q) return kNaN;
  if (s == 1) return kInf;
  if (s < 1) return kNaN;
  if (q == -kInf) return kNaN;
  if (q <= 0) {
    if (q == std::floor(q)) return kInf;
    if (s != std::floor(s)) return kNaN;  // (negative q)^-s is complex
  }
  static const double b2k_over_fact[] = {  // B_2k / (2k)!
      0.08333333333333333, -0.001388888888888889, 3.306878306878307e-05, -8.267195767195768e-07,
      2.08767569878681e-08, -5.284190138687493e-10, 1.3382536530684679e-11, -3.3896802963225827e-13,
      8.586062056277845e-15, -2.174868698558062e-16, 5.5090028283602295e-18, -1.3954464685812522e-19};
  double sum = 0, a = q;
  const double bound = std::max(10.0, std::min(s, 1e4));
  while (a < bound) {
    double t = std::pow(a, -s);
    sum += t;
    a += 1;
    if (a > 10 && std::fabs(t) < 1e-18 * std::fabs(sum)) return sum;
  }
  double tail = std::pow(a, 1 - s) / (s - 1) + 0.5 * std::pow(a, -s);
  double fac = s * std::pow(a, -s - 1);  // s (s+1) ... (s+2k-2) a^(-s-2k+1)
  for (int k = 0; k < 12; ++k) {
    double t = b2k_over_fact[k] * fac;
    tail += t;
    if (std::fabs(t) < 1e-18 * std::fabs(sum + tail)) break;
    fac *= (s + 2 * k + 1) * (s + 2 * k + 2) / (a * a);
  }
  return sum + tail;
}

// polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x) for n >= 1.
inline double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  double fact = std::exp(lgamma(double(n) + 1));
  double sign = (n % 2) ? 1.0 : -1.0;
  return sign * fact * zeta(double(n + 1), x);
}

// erfcx(x) = exp(x^2) erfc(x); past x = 25 erfc underflows, so use the continued fraction
// erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))) (DLMF 7.9.2).
inline double erfcx(double x) {
  if (x != x) return x;
  if (x < 25) return std::exp(x * x) * std::erfc(x);
  double f = x;
  for (int k = 60; k >= 1; --k) f = x + (k * 0.5) / f;
  return 1 / (std::sqrt(kPi) * f);
}

inline double ndtr(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752440); }

// log of the standard normal CDF, accurate in both tails.
inline double log_ndtr(double x) {
  if (x > -1) return std::log1p(-0.5 * std::erfc(x * 0.70710678118654752440));
  double t = -x * 0.70710678118654752440;
  return std::log(0.5 * erfcx(t)) - t * t;
}

// Inverse of the normal CDF: Abramowitz & Stegun 26.2.23's rational guess (|error| < 4.5e-4),
// then Halley steps on ndtr(x) - p.
inline double ndtri(double p) {
  if (p != p || p < 0 || p > 1) return kNaN;
  if (p == 0) return -kInf;
  if (p == 1) return kInf;
  if (p == 0.5) return 0;
  if (p > 0.5) return -ndtri(1 - p);
  double t = std::sqrt(-2 * std::log(p));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  for (int i = 0; i < 2; ++i) {  // cubic convergence: 4.5e-4, 1e-10, below rounding
    double e = ndtr(x) - p;
    double u = e * std::sqrt(2 * kPi) * std::exp(0.5 * x * x);
    x -= u / (1 + 0.5 * x * u);
  }
  return x;
}

// Regularised incomplete gamma P(a, x): the power series for x < a + 1, else 1 - Q from the
// Legendre continued fraction (evaluated by the modified Lentz method).
inline double igamma_series(double a, double x) {
  double term = 1 / a, sum = term;
  for (int n = 1; n < 100000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::fabs(term) < std::fabs(sum) * 1e-17) break;
  }
  return sum * std::exp(-x + a * std::log(x) - lgamma(a));
}
inline double igammac_fraction(double a, double x) {
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < 1e-16) break;
  }
  return std::exp(-x + a * std::log(x) - lgamma(a)) * h;
}
inline double igamma(double a, double x) {  // as PyTorch (Cephes' conventions at the edges)
  if (a != a || x != x || a < 0 || x < 0) return kNaN;
  if (a == 0) return x > 0 ? 1 : kNaN;
  if (x == 0) return 0;
  if (std::isinf(a)) return std::isinf(x) ? kNaN : 0;
  if (std::isinf(x)) return 1;
  return x < a + 1 ? igamma_series(a, x) : 1 - igammac_fraction(a, x);
}
inline double igammac(double a, double x) {
  if (a != a || x != x || a < 0 || x < 0) return kNaN;
  if (a == 0) return x > 0 ? 0 : kNaN;
  if (x == 0) return 1;
  if (std::isinf(a)) return std::isinf(x) ? kNaN : 1;
  if (std::isinf(x)) return 0;
  return x < a + 1 ? 1 - igamma_series(a, x) : igammac_fraction(a, x);
}

// Bessel functions. J0, I0 are even; J1, I1 odd; Y and K are real only for x > 0.
inline double bessel_j(double nu, double x) {
  if (x != x) return x;
  double v = std::cyl_bessel_j(nu, std::fabs(x));
  return (x < 0 && nu == 1) ? -v : v;
}
// At +-inf the Bessel and Airy functions give NaN, as torch's (Cephes') do, not their limits.
inline double bessel_y(double nu, double x) {
  if (x != x || x == kInf) return kNaN;
  if (x < 0) return kNaN;
  if (x == 0) return -kInf;
  return std::cyl_neumann(nu, x);
}
// e^-|x| I_nu(|x|) from the large-argument expansion (DLMF 10.40.1) where I overflows.
inline double scaled_i_asymptotic(double nu, double x) {
  double mu = 4 * nu * nu, term = 1, sum = 1;
  for (int k = 1; k < 30; ++k) {
    term *= -(mu - (2 * k - 1) * (2 * k - 1)) / (k * 8 * x);
    sum += term;
    if (std::fabs(term) < 1e-17) break;
  }
  return sum / std::sqrt(2 * kPi * x);
}
inline double bessel_i(double nu, double x, bool scaled) {
  if (x != x) return x;
  double a = std::fabs(x), v;
  if (a == kInf) v = scaled ? 0 : kNaN;
  else if (a > 700) v = scaled ? scaled_i_asymptotic(nu, a) : kInf;
  else v = scaled ? std::exp(-a) * std::cyl_bessel_i(nu, a) : std::cyl_bessel_i(nu, a);
  return (x < 0 && nu == 1) ? -v : v;
}
// e^x K_nu(x) for large x (DLMF 10.40.2), where K underflows.
inline double scaled_k_asymptotic(double nu, double x) {
  double mu = 4 * nu * nu, term = 1, sum = 1;
  for (int k = 1; k < 30; ++k) {
    term *= (mu - (2 * k - 1) * (2 * k - 1)) / (k * 8 * x);
    sum += term;
    if (std::fabs(term) < 1e-17) break;
  }
  return sum * std::sqrt(kPi / (2 * x));
}
inline double bessel_k(double nu, double x, bool scaled) {
  if (x != x) return x;
  if (x < 0) return kNaN;
  if (x == 0) return kInf;
  if (x == kInf) return 0;
  if (x > 700) return scaled ? scaled_k_asymptotic(nu, x) : 0;
  double k = std::cyl_bessel_k(nu, x);
  return scaled ? k * std::exp(x) : k;
}
inline double spherical_bessel_j0(double x) {
  if (std::isinf(x)) return 0;
  if (std::fabs(x) < 1e-4) return 1 - x * x / 6;
  return std::sin(x) / x;
}
// Airy Ai through Bessel functions of order 1/3 (DLMF 9.6.1, 9.6.6), zeta = 2/3 |x|^(3/2).
inline double airy_ai(double x) {
  if (x != x) return x;
  if (std::isinf(x)) return kNaN;
  if (x == 0) return 0.355028053887817239;
  double ax = std::fabs(x), zeta = 2.0 / 3.0 * ax * std::sqrt(ax);
  if (x > 0) {
    if (zeta > 700) return 0;
    return std::sqrt(ax / 3) / kPi * std::cyl_bessel_k(1.0 / 3, zeta);
  }
  return std::sqrt(ax) / 2 * (std::cyl_bessel_j(1.0 / 3, zeta) - std::cyl_neumann(1.0 / 3, zeta) / std::sqrt(3.0));
}

inline double entr(double x) {
  if (x != x) return x;
  if (x > 0) return -x * std::log(x);
  return x == 0 ? 0 : -kInf;
}

inline double xlog1py(double x, double y) {
  if (y != y) return y;
  if (x == 0) return 0;
  return x * std::log1p(y);
}

// Orthogonal polynomials of integer degree n (n < 0 gives 0), by their three-term recurrences
// (DLMF 18.9.1), with the trigonometric forms of Chebyshev's on [-1, 1] for large n.
enum class Poly { ChebT, ChebU, ChebV, ChebW, HermiteH, HermiteHe, LaguerreL, LegendreP };
inline double orthogonal_poly(Poly kind, double x, double nd) {
  if (nd != nd || x != x) return kNaN;
  int64_t n = int64_t(nd);
  if (n < 0) return 0;
  if (n == 0) return 1;
  bool cheb = kind == Poly::ChebT || kind == Poly::ChebU || kind == Poly::ChebV || kind == Poly::ChebW;
  if (cheb && n > 6 && std::fabs(x) < 1) {
    double t = std::acos(x);
    switch (kind) {
      case Poly::ChebT: return std::cos(n * t);
      case Poly::ChebU: return std::sin(t) != 0 ? std::sin((n + 1) * t) / std::sin(t) : (n + 1) * std::cos((n + 1) * t) / std::cos(t);
      case Poly::ChebV: return std::cos(t / 2) != 0 ? std::cos((n + 0.5) * t) / std::cos(t / 2) : kNaN;
      default: return std::sin(t / 2) != 0 ? std::sin((n + 0.5) * t) / std::sin(t / 2) : double(2 * n + 1);
    }
  }
  double p0 = 1, p1;
  switch (kind) {
    case Poly::ChebT: p1 = x; break;
    case Poly::ChebU: p1 = 2 * x; break;
    case Poly::ChebV: p1 = 2 * x - 1; break;
    case Poly::ChebW: p1 = 2 * x + 1; break;
    case Poly::HermiteH: p1 = 2 * x; break;
    case Poly::HermiteHe: p1 = x; break;
    case Poly::LaguerreL: p1 = 1 - x; break;
    default: p1 = x; break;
  }
  for (int64_t k = 1; k < n; ++k) {
    double p2;
    switch (kind) {
      case Poly::HermiteH: p2 = 2 * x * p1 - 2 * double(k) * p0; break;
      case Poly::HermiteHe: p2 = x * p1 - double(k) * p0; break;
      case Poly::LaguerreL: p2 = ((2 * double(k) + 1 - x) * p1 - double(k) * p0) / double(k + 1); break;
      case Poly::LegendreP: p2 = ((2 * double(k) + 1) * x * p1 - double(k) * p0) / double(k + 1); break;
      default: p2 = 2 * x * p1 - p0; break;
    }
    p0 = p1, p1 = p2;
    if (!std::isfinite(p1)) break;
  }
  return p1;
}

}  // namespace kindle::cpu::sm
