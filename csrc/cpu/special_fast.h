// float32 kernels of kindle.special's hottest functions: branch-free double-precision formulas
// that GCC vectorises (the logs and exps through libmvec, vec_math.h), valid on the usual domain;
// the kernel sends the other inputs (negative, infinite, NaN) through the scalar double functions
// of special_math.h. Each result is rounded once to float, and stays within a few units of
// float32's last place of the double functions (tests/python/test_special.py checks it).
#pragma once
#include <cmath>

#include "cpu/special_math.h"
#include "cpu/vec_math.h"

namespace kindle::cpu::fast {

// Chebyshev interpolant of degree N - 1 on [lo, hi], its coefficients computed once from f at
// the Chebyshev points (f: an accurate scalar function of special_math.h). Clenshaw's recurrence
// evaluates it; the loop has a fixed trip count, so an `omp simd` caller vectorises across x.
template <int N>
struct Chebyshev {
  double c[N];
  double mid, inv_half;

  template <typename F>
  Chebyshev(F f, double lo, double hi) : mid(0.5 * (lo + hi)), inv_half(2 / (hi - lo)) {
    double fx[N];
    for (int k = 0; k < N; ++k) fx[k] = f(mid + std::cos(sm::kPi * (k + 0.5) / N) / inv_half);
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int k = 0; k < N; ++k) s += fx[k] * std::cos(sm::kPi * j * (k + 0.5) / N);
      c[j] = 2.0 / N * s;
    }
  }

  double operator()(double x) const {
    double u = (x - mid) * inv_half, u2 = 2 * u, b1 = 0, b2 = 0;
#pragma GCC unroll 64
    for (int j = N - 1; j > 0; --j) {
      double b = c[j] + u2 * b1 - b2;
      b2 = b1, b1 = b;
    }
    return c[0] * 0.5 + u * b1 - b2;
  }
};

// lgamma for 0 < x < inf: x shifted to z >= 8, where Stirling's series with five terms is exact
// to 1e-11; log Gamma(x) = log Gamma(z) - log(x (x+1) ... (x+7)).
inline double lgamma(double x) {
  bool small = x < 8;
  double p = small ? x * (x + 1) * (x + 2) * (x + 3) * (x + 4) * (x + 5) * (x + 6) * (x + 7) : 1.0;
  double z = small ? x + 8 : x;
  double r = 1 / z, r2 = r * r;
  double series = r * (1.0 / 12 - r2 * (1.0 / 360 - r2 * (1.0 / 1260 - r2 * (1.0 / 1680 - r2 * (1.0 / 1188)))));
  double v = (z - 0.5) * vm::log(z) - z + 0.91893853320467274178 + series - vm::log(p);
  return (x == 1) | (x == 2) ? 0.0 : v;  // (no short circuit: the loop stays branch-free)  // its zeros exactly (elsewhere the cancellation costs 1e-13)
}
inline bool lgamma_valid(float x) { return x > 0 && x < INFINITY; }

// digamma for 0 < x < inf: the recurrence psi(x) = psi(x + 8) - sum 1/(x+k), then the asymptotic
// series at z >= 8 (DLMF 5.11.2; the next term is 2e-11).
inline double digamma(double x) {
  bool small = x < 8;
  double s = small ? 1 / x + 1 / (x + 1) + 1 / (x + 2) + 1 / (x + 3) + 1 / (x + 4) + 1 / (x + 5) + 1 / (x + 6) +
                         1 / (x + 7)
                   : 0.0;
  double z = small ? x + 8 : x;
  double r2 = 1 / (z * z);
  double series = r2 * (1.0 / 12 - r2 * (1.0 / 120 - r2 * (1.0 / 252 - r2 * (1.0 / 240 - r2 * (1.0 / 132)))));
  return vm::log(z) - 0.5 / z - series - s;
}
inline bool digamma_valid(float x) { return x > 0 && x < INFINITY; }

// i0e(x) = exp(-|x|) I0(|x|): the power series sum (x^2/4)^k / k!^2 (positive terms: no
// cancellation) up to |x| = 12, beyond it the asymptotic series sum c_k / |x|^k / sqrt(2 pi |x|)
// with c_k = prod_j (2j - 1)^2 / (8j) (its smallest term, near the 20th, is 3e-11 of the sum at 12).
struct I0eTables {
  double near[49], far[19];
  constexpr I0eTables() : near(), far() {
    double a = 1, c = 1;
    for (int k = 0; k <= 48; ++k) {
      if (k) a /= double(k) * double(k);
      near[k] = a;
    }
    for (int k = 0; k <= 18; ++k) {
      if (k) c *= double((2 * k - 1) * (2 * k - 1)) / double(8 * k);
      far[k] = c;
    }
  }
};
inline constexpr I0eTables kI0e{};

inline double i0e(double x) {
  double a = std::fabs(x);
  double t = 0.25 * a * a, sum = kI0e.near[48];
#pragma GCC unroll 64
  for (int k = 47; k >= 0; --k) sum = sum * t + kI0e.near[k];
  double r = 1 / a, asym = kI0e.far[18];
#pragma GCC unroll 64
  for (int k = 17; k >= 0; --k) asym = asym * r + kI0e.far[k];
  double near = sum * vm::exp(-a);
  double far = asym / std::sqrt(2 * sm::kPi * a);
  return a <= 12 ? near : far;
}
inline bool i0e_valid(float x) { return x == x; }

// ndtri for 0 < p < 1, in the variables where it is smooth: q * G(q^2) for |q| = |p - 1/2| <=
// 0.425, and -/+H(t) with t = sqrt(-2 log(min(p, 1 - p))) in the tails (t <= 14.5 covers the
// smallest float32). G and H interpolate special_math's ndtri (exact to an ulp of double).
inline const Chebyshev<20>& ndtri_center() {
  static const Chebyshev<20> g([](double r) { return sm::ndtri(0.5 + std::sqrt(r)) / std::sqrt(r); }, 0, 0.180625);
  return g;
}
inline const Chebyshev<26>& ndtri_tail() {
  static const Chebyshev<26> h([](double t) { return -sm::ndtri(std::exp(-0.5 * t * t)); }, 2.2, 14.5);
  return h;
}
inline bool ndtri_central(double p) { return std::fabs(p - 0.5) <= 0.425; }
inline double ndtri_center_value(double p, const Chebyshev<20>& g) {
  double q = p - 0.5;
  return q * g(q * q);
}
inline double ndtri_tail_value(double p, const Chebyshev<26>& h) {
  double q = p - 0.5;
  double t = std::sqrt(-2 * vm::log(q < 0 ? p : 1 - p));
  double v = h(t);
  return q < 0 ? -v : v;
}
inline bool ndtri_valid(float p) { return p > 0 && p < 1; }

}  // namespace kindle::cpu::fast
