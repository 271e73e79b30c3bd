// The vectorised transcendental functions (cpu/vec_math.h: SLEEF, or glibc's
// libmvec without SLEEF) measured against float64 libm over their usual domains, through the ops
// users call: the largest error in float32 ULPs must stay within the bound the README documents.
// Contiguous inputs of a few thousand elements run the vectorised loops; the first elements (and a
// ragged tail) the scalar remainder.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <kindle/kindle.h>

#include "cpu/blas.h"  // vector_math_library()

using namespace kindle;

namespace {

// |got - want| in units of the float32 spacing at want (the ULP of the correctly rounded result).
double ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : INFINITY;
  if (std::isinf(want)) return got == float(want) ? 0.0 : INFINITY;
  const float w = float(want);
  if (std::isinf(w)) return std::isinf(got) && std::signbit(got) == std::signbit(w) ? 0.0 : INFINITY;
  float a = std::fabs(w);
  double ulp = double(std::nextafter(a, INFINITY)) - double(a);
  if (a == 0.0f) ulp = double(std::numeric_limits<float>::denorm_min());
  return std::fabs(double(got) - want) / ulp;
}

std::vector<float> uniform(float lo, float hi, int n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// Log-uniform positive values in [lo, hi].
std::vector<float> log_uniform(float lo, float hi, int n, unsigned seed) {
  std::vector<float> e = uniform(std::log(lo), std::log(hi), n, seed);
  for (float& x : e) x = std::exp(x);
  return e;
}

Tensor from(const std::vector<float>& v) { return tensor(v, kFloat32); }

double max_error(const Tensor& got, const std::vector<float>& x, const std::function<double(double)>& ref) {
  Tensor g = got.contiguous();
  const float* p = g.data_ptr<float>();
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, ulp_error(p[i], ref(double(x[i]))));
  return worst;
}

double max_error2(const Tensor& got, const std::vector<float>& x, const std::vector<float>& y,
                  const std::function<double(double, double)>& ref) {
  Tensor g = got.contiguous();
  const float* p = g.data_ptr<float>();
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, ulp_error(p[i], ref(double(x[i]), double(y[i]))));
  return worst;
}

struct Unary {
  const char* name;
  Tensor (*op)(const Tensor&);
  double (*ref)(double);
  std::vector<float> inputs;
  double bound;  // ULPs (float32), SLEEF's
};

// glibc's libmvec (a build without SLEEF) documents up to 4 ULP for its functions.
double library_bound(double sleef_bound) {
  return std::string(cpu::vector_math_library()) == "sleef" ? sleef_bound : std::max(sleef_bound, 4.0);
}

constexpr int kN = 20003;  // a ragged tail after every vector width

}  // namespace

TEST(VectorMath, UnaryFunctionsStayWithinTheirDocumentedErrorBounds) {
  // Bounds: SLEEF's 1-ULP functions (measured here: at most 1.0) with a rounding to spare; tanh in
  // float32 under AVX2/AVX-512 is Kindle's own formula over SLEEF's exp (cpu/vec_math.h: 1.8).
  std::vector<Unary> cases = {
      {"exp", [](const Tensor& t) { return exp(t); }, [](double x) { return std::exp(x); }, uniform(-87, 88, kN, 1), 2},
      {"exp2", [](const Tensor& t) { return exp2(t); }, [](double x) { return std::exp2(x); }, uniform(-125, 127, kN, 2), 2},
      {"expm1", [](const Tensor& t) { return expm1(t); }, [](double x) { return std::expm1(x); }, uniform(-20, 20, kN, 3), 2},
      {"log", [](const Tensor& t) { return log(t); }, [](double x) { return std::log(x); }, log_uniform(1e-30f, 1e30f, kN, 4), 2},
      {"log2", [](const Tensor& t) { return log2(t); }, [](double x) { return std::log2(x); }, log_uniform(1e-30f, 1e30f, kN, 5), 2},
      {"log10", [](const Tensor& t) { return log10(t); }, [](double x) { return std::log10(x); }, log_uniform(1e-30f, 1e30f, kN, 6), 2},
      {"log1p", [](const Tensor& t) { return log1p(t); }, [](double x) { return std::log1p(x); }, uniform(-0.99f, 1e4f, kN, 7), 2},
      {"sin", [](const Tensor& t) { return sin(t); }, [](double x) { return std::sin(x); }, uniform(-1000, 1000, kN, 8), 2},
      {"cos", [](const Tensor& t) { return cos(t); }, [](double x) { return std::cos(x); }, uniform(-1000, 1000, kN, 9), 2},
      {"tan", [](const Tensor& t) { return tan(t); }, [](double x) { return std::tan(x); }, uniform(-10, 10, kN, 10), 2},
      {"asin", [](const Tensor& t) { return asin(t); }, [](double x) { return std::asin(x); }, uniform(-1, 1, kN, 11), 2},
      {"acos", [](const Tensor& t) { return acos(t); }, [](double x) { return std::acos(x); }, uniform(-1, 1, kN, 12), 2},
      {"atan", [](const Tensor& t) { return atan(t); }, [](double x) { return std::atan(x); }, uniform(-100, 100, kN, 13), 2},
      {"sinh", [](const Tensor& t) { return sinh(t); }, [](double x) { return std::sinh(x); }, uniform(-88, 88, kN, 14), 2},
      {"cosh", [](const Tensor& t) { return cosh(t); }, [](double x) { return std::cosh(x); }, uniform(-88, 88, kN, 15), 2},
      {"tanh", [](const Tensor& t) { return tanh(t); }, [](double x) { return std::tanh(x); }, uniform(-10, 10, kN, 16), 4},
      {"erf", [](const Tensor& t) { return erf(t); }, [](double x) { return std::erf(x); }, uniform(-5, 5, kN, 17), 2},
  };
  for (const Unary& c : cases) {
    const double err = max_error(c.op(from(c.inputs)), c.inputs, c.ref);
    EXPECT_LE(err, library_bound(c.bound)) << c.name << ": " << err << " ULPs";
    std::printf("  %-6s max %.2f ULP (bound %.1f)\n", c.name, err, library_bound(c.bound));
  }
}

TEST(VectorMath, BinaryFunctionsStayWithinTheirDocumentedErrorBounds) {
  const std::vector<float> base = log_uniform(1e-3f, 100, kN, 21), expo = uniform(-15, 15, kN, 22);
  const double pow_err = max_error2(pow(from(base), from(expo)), base, expo, [](double a, double b) { return std::pow(a, b); });
  EXPECT_LE(pow_err, library_bound(2)) << "pow: " << pow_err << " ULPs";
  const std::vector<float> y = uniform(-100, 100, kN, 23), x = uniform(-100, 100, kN, 24);
  const double atan2_err = max_error2(atan2(from(y), from(x)), y, x, [](double a, double b) { return std::atan2(a, b); });
  EXPECT_LE(atan2_err, library_bound(2)) << "atan2: " << atan2_err << " ULPs";
  const double hypot_err = max_error2(hypot(from(y), from(x)), y, x, [](double a, double b) { return std::hypot(a, b); });
  EXPECT_LE(hypot_err, library_bound(2)) << "hypot: " << hypot_err << " ULPs";
  std::printf("  pow max %.2f ULP, atan2 %.2f, hypot %.2f\n", pow_err, atan2_err, hypot_err);
}

TEST(VectorMath, CallsKeepTheCallersVectorRegisters) {
  // A vector math call inside a loop that holds a broadcast operand in a register across it: on
  // aarch64 the callee must preserve q8-q23 (the vector PCS), or lanes come back wrong.
  std::vector<float> v = uniform(0.5f, 4.0f, 1003, 31);
  Tensor x = from(v);
  EXPECT_TRUE(equal(pow(x, scalar_to_tensor(Scalar(1.0))), x));
  Tensor cube = pow(x, scalar_to_tensor(Scalar(3.0)));
  EXPECT_LE(max_error(cube, v, [](double a) { return a * a * a; }), 2.0);
  EXPECT_TRUE(allclose(atan2(x, full({1003}, 1.0)), atan(x), 1e-6, 1e-6));
}

TEST(VectorMath, SpecialValuesFollowC99) {
  // NaN propagates, infinities and signed zeros map as libm's do, in the vector loops too.
  std::vector<float> v(64, NAN);
  v[1] = INFINITY; v[2] = -INFINITY; v[3] = 0.0f; v[4] = -0.0f;
  Tensor t = from(v);
  auto at = [](const Tensor& r, int i) { return r.contiguous().data_ptr<float>()[i]; };
  Tensor e = exp(t), l = log(t), th = tanh(t), s = sin(t);
  EXPECT_TRUE(std::isnan(at(e, 0)));
  EXPECT_EQ(at(e, 1), INFINITY);
  EXPECT_EQ(at(e, 2), 0.0f);
  EXPECT_EQ(at(e, 3), 1.0f);
  EXPECT_EQ(at(l, 1), INFINITY);
  EXPECT_TRUE(std::isnan(at(l, 2)));
  EXPECT_EQ(at(l, 3), -INFINITY);
  EXPECT_EQ(at(th, 1), 1.0f);
  EXPECT_EQ(at(th, 2), -1.0f);
  EXPECT_TRUE(std::signbit(at(th, 4)));
  EXPECT_TRUE(std::isnan(at(s, 1)));
  EXPECT_TRUE(std::signbit(at(s, 4)));
}
