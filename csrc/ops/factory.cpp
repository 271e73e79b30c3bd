// Tensor factories and random sampling.
#include <cmath>
#include <numeric>

#include "kindle/random_guard.h"
#include "native_ops.h"
#include "ops/kernels.h"

namespace kindle {
namespace {

int g_random_guard = 0;  // (set only by vmap, from Python's thread)

Tensor finish_factory(Tensor t, bool requires_grad, const char* op) {
  if (requires_grad) {
    KINDLE_CHECK(is_floating_point(t.dtype()) || is_complex(t.dtype()), op,
                 ": only Tensors of floating point and complex dtype can require gradients, got ", t.dtype());
    t.impl()->requires_grad = true;
  }
  return t;
}

Device dev(std::optional<Device> d) { return d.value_or(kCPU); }

GeneratorImpl& gen_or_default(const std::optional<Generator>& g) {
  KINDLE_CHECK(g_random_guard == 0, "vmap: called random operation while in randomness error mode. Please either use "
               "the 'same' or 'different' randomness flags on vmap or perform the randomness operation out of vmap");
  return g && g->defined() ? **g : *default_generator();
}

// torch draws a strided tensor's elements in memory order (its iterator puts the smallest stride
// innermost), so the draws go to a contiguous temporary laid out in that order.
void fill_random(const Tensor& self, RandomArgs args, const std::optional<Generator>& g) {
  if (self.numel() == 0) return;
  if (!random_stub.has(self.device())) {
    // A device without its own generator kernels draws on the CPU (the numbers a CPU tensor
    // gets from the same seed) and copies them over: correct, not fast.
    Tensor host = empty_tensor(self.sizes(), self.dtype(), kCPU);
    fill_random(host, args, g);
    self.copy_(host);
    return;
  }
  GeneratorImpl& gen = gen_or_default(g);
  if (self.is_contiguous()) {
    random_stub[self.device()](self, args, gen);
  } else {
    DimVector perm = dims_by_stride(self);
    Tensor view = self.permute(perm);
    Tensor tmp = empty_tensor(view.sizes(), self.dtype(), self.device());
    random_stub[self.device()](tmp, args, gen);
    view.copy_(tmp);
  }
  self.bump_version();
}

RandomArgs uniform_args(double a, double b) { RandomArgs r{RandomKind::Uniform}; r.a = a; r.b = b; return r; }
// torch's vectorised normal_ takes contiguous tensors of 16 elements or more; others draw one by one.
RandomArgs normal_args(const Tensor& self, double mean, double std) {
  RandomArgs r{self.is_contiguous() && self.numel() >= 16 ? RandomKind::Normal : RandomKind::NormalSerial};
  r.a = mean;
  r.b = std;
  return r;
}
RandomArgs integer_args(int64_t from, uint64_t range) {
  RandomArgs r{RandomKind::Integer};
  r.from = from;
  r.range = range;
  return r;
}

}  // namespace

void random_guard(int delta) { g_random_guard += delta; }

Tensor empty(IntArrayRef size, std::optional<DType> dtype, std::optional<Device> device, bool requires_grad) {
  return finish_factory(empty_tensor(size, dtype.value_or(default_dtype()), dev(device)), requires_grad, "empty");
}
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, std::optional<DType> dtype, std::optional<Device> device,
                     bool requires_grad) {
  return finish_factory(empty_strided_tensor(size, stride, dtype.value_or(default_dtype()), dev(device)),
                        requires_grad, "empty_strided");
}
Tensor full(IntArrayRef size, const Scalar& fill_value, std::optional<DType> dtype, std::optional<Device> device,
            bool requires_grad) {
  Tensor t = empty_tensor(size, dtype.value_or(fill_value.dtype()), dev(device));
  t.fill_(fill_value);
  return finish_factory(t, requires_grad, "full");
}
Tensor zeros(IntArrayRef size, std::optional<DType> dtype, std::optional<Device> device, bool requires_grad) {
  return full(size, 0, dtype.value_or(default_dtype()), device, requires_grad);
}
Tensor ones(IntArrayRef size, std::optional<DType> dtype, std::optional<Device> device, bool requires_grad) {
  return full(size, 1, dtype.value_or(default_dtype()), device, requires_grad);
}
Tensor empty_like(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device, bool requires_grad) {
  return empty(self.sizes(), dtype.value_or(self.dtype()), device.value_or(self.device()), requires_grad);
}
Tensor zeros_like(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device, bool requires_grad) {
  return zeros(self.sizes(), dtype.value_or(self.dtype()), device.value_or(self.device()), requires_grad);
}
Tensor ones_like(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device, bool requires_grad) {
  return ones(self.sizes(), dtype.value_or(self.dtype()), device.value_or(self.device()), requires_grad);
}
Tensor full_like(const Tensor& self, const Scalar& v, std::optional<DType> dtype, std::optional<Device> device,
                 bool requires_grad) {
  return full(self.sizes(), v, dtype.value_or(self.dtype()), device.value_or(self.device()), requires_grad);
}

Tensor rand(IntArrayRef size, const std::optional<Generator>& generator, std::optional<DType> dtype,
            std::optional<Device> device, bool requires_grad) {
  DType dt = dtype.value_or(default_dtype());
  KINDLE_CHECK_NOT_IMPLEMENTED(is_floating_point(dt) || is_complex(dt), "rand: \"check_uniform_bounds\" not "
                               "implemented for '", scalar_type_name(dt), "' (expected a floating point or complex "
                               "dtype, got ", dt, ")");
  Tensor t = empty_tensor(size, dt, dev(device));
  // complex: the real and the imaginary part each uniform on [0, 1), drawn in memory order
  Tensor parts = is_complex(dt) ? view_as_real(t) : t;
  fill_random(parts, uniform_args(0, 1), generator);
  return finish_factory(t, requires_grad, "rand");
}
Tensor randn(IntArrayRef size, const std::optional<Generator>& generator, std::optional<DType> dtype,
             std::optional<Device> device, bool requires_grad) {
  DType dt = dtype.value_or(default_dtype());
  KINDLE_CHECK_NOT_IMPLEMENTED(is_floating_point(dt) || is_complex(dt), "randn: \"normal_kernel_cpu\" not "
                               "implemented for '", scalar_type_name(dt), "' (expected a floating point or complex "
                               "dtype, got ", dt, ")");
  Tensor t = empty_tensor(size, dt, dev(device));
  // complex: a standard complex normal, each part of variance 1/2 (as torch draws it)
  Tensor parts = is_complex(dt) ? view_as_real(t) : t;
  fill_random(parts, normal_args(parts, 0, is_complex(dt) ? std::sqrt(0.5) : 1.0), generator);
  return finish_factory(t, requires_grad, "randn");
}
Tensor normal(double mean, double std, IntArrayRef size, const std::optional<Generator>& generator,
              std::optional<DType> dtype, std::optional<Device> device, bool requires_grad) {
  KINDLE_CHECK(std >= 0, "normal: expects std >= 0.0, but found std ", std);
  Tensor t = empty_tensor(size, dtype.value_or(default_dtype()), dev(device));
  fill_random(t, normal_args(t, mean, std), generator);
  return finish_factory(t, requires_grad, "normal");
}
// [from, to) must lie in an integer dtype's range, or the values would wrap (PyTorch raises).
static void check_random_range(int64_t from, int64_t to, DType dt, const char* op) {
  if (is_floating_point(dt) || dt == kInt64) return;
  int64_t lo = 0, hi = 1;
  switch (dt) {
    case kUInt8: hi = 255; break;
    case kInt8: lo = -128; hi = 127; break;
    case kInt16: lo = -32768; hi = 32767; break;
    case kInt32: lo = INT32_MIN; hi = INT32_MAX; break;
    default: break;  // bool: [0, 1]
  }
  KINDLE_CHECK(from >= lo && from <= hi, op, ": from is out of bounds for ", dt, " (from=", from, ", range [", lo, ", ",
               hi, "])");
  KINDLE_CHECK(to - 1 >= lo && to - 1 <= hi, op, ": to - 1 is out of bounds for ", dt, " (to=", to, ", range [", lo,
               ", ", hi, "])");
}

Tensor randint(int64_t low, int64_t high, IntArrayRef size, const std::optional<Generator>& generator,
               std::optional<DType> dtype, std::optional<Device> device, bool requires_grad) {
  KINDLE_CHECK(low < high, "randint: expected 'low' to be less than 'high', but got low=", low, " and high=", high);
  check_random_range(low, high, dtype.value_or(kInt64), "randint");
  Tensor t = empty_tensor(size, dtype.value_or(kInt64), dev(device));
  fill_random(t, integer_args(low, uint64_t(high) - uint64_t(low)), generator);
  return finish_factory(t, requires_grad, "randint");
}
Tensor randint(int64_t high, IntArrayRef size, const std::optional<Generator>& generator, std::optional<DType> dtype,
               std::optional<Device> device, bool requires_grad) {
  return randint(0, high, size, generator, dtype, device, requires_grad);
}
Tensor rand_like(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device, bool requires_grad) {
  return rand(self.sizes(), std::nullopt, dtype.value_or(self.dtype()), device.value_or(self.device()), requires_grad);
}
Tensor randn_like(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device, bool requires_grad) {
  return randn(self.sizes(), std::nullopt, dtype.value_or(self.dtype()), device.value_or(self.device()), requires_grad);
}
Tensor randint_like(const Tensor& self, int64_t low, int64_t high, std::optional<DType> dtype,
                    std::optional<Device> device, bool requires_grad) {
  return randint(low, high, self.sizes(), std::nullopt, dtype.value_or(self.dtype()), device.value_or(self.device()), requires_grad);
}
Tensor randperm(int64_t n, const std::optional<Generator>& generator, std::optional<DType> dtype,
                std::optional<Device> device, bool requires_grad) {
  KINDLE_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  Tensor idx = empty_tensor({n}, kInt64, kCPU);  // drawn on the host (as for ranges), then moved
  randperm_stub[kCPU](idx, gen_or_default(generator));
  idx = idx._to_device(dev(device));
  return finish_factory(dtype && *dtype != kInt64 ? idx.to(*dtype) : idx, requires_grad, "randperm");
}

const Tensor& native_uniform_(const Tensor& self, double from, double to, const std::optional<Generator>& generator) {
  KINDLE_CHECK(from <= to, "uniform_: expects to return a [from, to) range, but found from=", from, " > to=", to);
  if (self.is_complex()) {  // torch: each part uniform, drawn in memory order
    native_uniform_(view_as_real(self), from, to, generator);
    return self;
  }
  KINDLE_CHECK_NOT_IMPLEMENTED(self.is_floating_point(), "uniform_: \"check_uniform_bounds\" not implemented for '",
                               scalar_type_name(self.dtype()), "' (expected a floating point tensor, got ",
                               self.dtype(), ")");
  fill_random(self, uniform_args(from, to), generator);
  return self;
}
const Tensor& native_normal_(const Tensor& self, double mean, double std, const std::optional<Generator>& generator) {
  KINDLE_CHECK(std >= 0, "normal_: expects std >= 0.0, but found std ", std);
  if (self.is_complex()) {  // torch: each part N(mean, std^2 / 2), so that |z - mean| has variance std^2
    native_normal_(view_as_real(self), mean, std / std::sqrt(2.0), generator);
    return self;
  }
  KINDLE_CHECK_NOT_IMPLEMENTED(self.is_floating_point(), "normal_: \"normal_kernel_cpu\" not implemented for '",
                               scalar_type_name(self.dtype()), "' (expected a floating point tensor, got ",
                               self.dtype(), ")");
  fill_random(self, normal_args(self, mean, std), generator);
  return self;
}
const Tensor& native_exponential_(const Tensor& self, double lambd, const std::optional<Generator>& generator) {
  KINDLE_CHECK(self.is_floating_point(), "Exponential distribution is a continuous probability distribution. dtype "
               "must be a floating point but you specified ", scalar_type_name(self.dtype()));
  KINDLE_CHECK(lambd > 0, "exponential_: expects lambda > 0.0, but found lambda=", lambd);
  RandomArgs args{RandomKind::Exponential};
  args.a = lambd;
  fill_random(self, args, generator);
  return self;
}
const Tensor& native_random_(const Tensor& self, std::optional<int64_t> from, std::optional<int64_t> to,
                             const std::optional<Generator>& generator) {
  if (!from && !to) {
    // [0, 2^digits] for floats (every integer the type holds exactly), [0, max] for integers.
    uint64_t range = 0;
    switch (self.dtype()) {
      case kFloat32: range = (uint64_t(1) << 24) + 1; break;
      case kFloat64: range = (uint64_t(1) << 53) + 1; break;
      case kFloat16: range = (uint64_t(1) << 11) + 1; break;
      case kBFloat16: range = (uint64_t(1) << 8) + 1; break;
      case kBool: range = 2; break;
      case kUInt8: range = 256; break;
      case kInt8: range = 128; break;
      case kInt16: range = 32768; break;
      case kInt32: range = uint64_t(1) << 31; break;
      case kInt64: range = uint64_t(1) << 63; break;
    }
    fill_random(self, integer_args(0, range), generator);
    return self;
  }
  int64_t lo = to ? from.value_or(0) : 0, hi = to ? *to : *from;
  KINDLE_CHECK(lo < hi, "random_: expects 'from' to be less than 'to', but got from=", lo, " >= to=", hi);
  check_random_range(lo, hi, self.dtype(), "random_");
  fill_random(self, integer_args(lo, uint64_t(hi) - uint64_t(lo)), generator);
  return self;
}
const Tensor& native_bernoulli_(const Tensor& self, double p, const std::optional<Generator>& generator) {
  KINDLE_CHECK(p >= 0 && p <= 1, "bernoulli_: expects p to be in [0, 1], but got p=", p);
  RandomArgs args{RandomKind::Bernoulli};
  args.a = p;
  fill_random(self, args, generator);
  return self;
}
Tensor bernoulli(const Tensor& self, const std::optional<Generator>& generator) {
  KINDLE_CHECK(self.is_floating_point(), "bernoulli: expected a floating point tensor of probabilities, got ", self.dtype());
  KINDLE_CHECK(all(logical_and(ge(self, scalar_to_tensor(0)), le(self, scalar_to_tensor(1)))).item().to_bool(),
               "bernoulli: all elements of input must be in [0, 1]");
  Tensor u = empty_tensor(self.sizes(), self.dtype(), self.device());
  fill_random(u, uniform_args(0, 1), generator);
  return lt(u, self).to(self.dtype());
}

Tensor multinomial(const Tensor& self, int64_t num_samples, bool replacement, const std::optional<Generator>& generator) {
  KINDLE_CHECK(self.dim() == 1 || self.dim() == 2, "multinomial: prob_dist must be 1 or 2 dim, got ", self.dim());
  KINDLE_CHECK(self.is_floating_point(), "multinomial: only floating point probabilities are supported, got ", self.dtype());
  KINDLE_CHECK(num_samples > 0, "multinomial: cannot sample num_samples <= 0 samples");
  int64_t n_dist = self.dim() == 1 ? 1 : self.size(0), n_cat = self.size(-1);
  KINDLE_CHECK(replacement || num_samples <= n_cat, "multinomial: cannot sample n_sample > prob_dist.size(-1) samples "
               "without replacement (", num_samples, " > ", n_cat, ")");
  if (!replacement || num_samples == 1) {
    // As torch samples it: the largest p / q with q ~ Exp(1) (the Gumbel-max trick, exponentiated),
    // so one exponential per category and row.
    KINDLE_CHECK(all(logical_and(isfinite(self), ge(self, scalar_to_tensor(0)))).item().to_bool(),
                 "multinomial: probability tensor contains either `inf`, `nan` or element < 0");
    KINDLE_CHECK(all(gt(sum(self, IntArrayRef{-1}), scalar_to_tensor(0))).item().to_bool(),
                 "multinomial: invalid multinomial distribution (sum of probabilities <= 0)");
    // (without replacement, zero-probability categories come last, as torch's: every category is
    // non-negative, and n_sample <= n_cat was checked above)
    Tensor q = empty_tensor(self.sizes(), self.dtype(), self.device());
    q.exponential_(1, generator);
    q = div(self, q);
    return num_samples == 1 ? argmax(q, -1, true) : std::get<1>(topk(q, num_samples));
  }
  DType dt = self.dtype() == kFloat64 ? kFloat64 : kFloat32;
  Tensor probs = self.reshape({n_dist, n_cat}).to(dt).contiguous();
  Tensor out = empty_tensor({n_dist, num_samples}, kInt64, self.device());
  multinomial_stub[self.device()](probs, out, gen_or_default(generator));
  return self.dim() == 1 ? out.reshape({num_samples}) : out;
}

Tensor arange(const Scalar& start, const std::optional<Scalar>& end, const Scalar& step,
              std::optional<DType> dtype, std::optional<Device> device, bool requires_grad) {
  Scalar s0 = end ? start : Scalar(0), s1 = end ? *end : start;
  double a = s0.to_double(), b = s1.to_double(), st = step.to_double();
  KINDLE_CHECK(st != 0, "arange: step must be nonzero");
  KINDLE_CHECK(std::isfinite(a) && std::isfinite(b), "arange: unsupported range: ", a, " -> ", b);
  KINDLE_CHECK((st > 0 && b >= a) || (st < 0 && b <= a), "arange: upper bound and larger bound inconsistent with step sign");
  bool any_float = s0.is_floating_point() || s1.is_floating_point() || step.is_floating_point();
  DType dt = dtype.value_or(any_float ? default_dtype() : kInt64);
  check_kernel_dtype(dt, "arange_cpu", true, false);
  double count = std::ceil((b - a) / st);
  KINDLE_CHECK(count >= 0 && count < 9223372036854775808.0, "arange: invalid size, possible overflow? (start ", a,
               ", end ", b, ", step ", st, " give ", count, " elements)");
  if (is_integral(dt, false)) {
    // PyTorch computes integer ranges from start and step truncated to integers (the length of
    // an int64 range too; other integer dtypes take it from the unrounded values).
    auto trunc64 = [](const Scalar& v) {
      return v.is_floating_point() ? std::trunc(v.to_double()) : double(v.to_int());
    };
    double ia = trunc64(s0), ist = trunc64(step);
    if (dt == kInt64) {
      double ib = trunc64(s1);
      if (ist == 0) throw ValueError("arange: step must be nonzero (after truncating the step " +
                                     std::to_string(st) + " to an integer for dtype int64)");
      count = std::trunc((ib - ia + ist - (ist > 0 ? 1 : -1)) / ist);
      count = std::max(count, 0.0);
    }
    a = ia;
    st = ist;
  }
  int64_t n = int64_t(count);
  Tensor t = empty_tensor({n}, dt, kCPU);  // on the host, then to the device (ranges are filled once)
  if (n) range_stub[kCPU](t, a, st, b, false);
  t = t._to_device(dev(device));
  return finish_factory(t, requires_grad, "arange");
}
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, std::optional<DType> dtype,
                std::optional<Device> device, bool requires_grad) {
  KINDLE_CHECK(steps >= 0, "linspace: number of steps must be non-negative, got ", steps);
  DType want = dtype.value_or(start.is_complex() || end.is_complex() ? to_complex_type(default_dtype())
                                                                     : default_dtype());
  if (is_complex(want)) {  // the real and imaginary parts are two real ranges
    DType rt = to_real_value_type(want);
    c128 a = start.to_complex(), b = end.to_complex();
    Tensor t = complex(linspace(a.real(), b.real(), steps, rt, device, false),
                       linspace(a.imag(), b.imag(), steps, rt, device, false));
    return finish_factory(t, requires_grad, "linspace");
  }
  Tensor t = empty_tensor({steps}, want, kCPU);
  double a = start.to_double(), b = end.to_double();
  double st = steps > 1 ? (b - a) / double(steps - 1) : 0.0;
  if (steps) range_stub[kCPU](t, a, st, b, true);
  t = t._to_device(dev(device));
  return finish_factory(t, requires_grad, "linspace");
}
Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base, std::optional<DType> dtype,
                std::optional<Device> device, bool requires_grad) {
  DType dt = dtype.value_or(start.is_complex() || end.is_complex() ? to_complex_type(default_dtype())
                                                                  : default_dtype());
  if (is_complex(dt)) {  // base ** (a complex range)
    Tensor e = linspace(start, end, steps, kComplex128, device, false);
    Tensor r = pow(scalar_tensor_of(base, kComplex128), e).to(dt);
    return finish_factory(r, requires_grad, "logspace");
  }
  check_kernel_dtype(dt, "logspace_cpu", true, false);
  KINDLE_CHECK(steps >= 0, "logspace: number of steps must be non-negative, got ", steps);
  Tensor r = empty_tensor({steps}, dt, kCPU);
  if (steps) logspace_stub[kCPU](r, start.to_double(), end.to_double(), base);
  return finish_factory(r._to_device(dev(device)), requires_grad, "logspace");
}
Tensor eye(int64_t n, std::optional<int64_t> m, std::optional<DType> dtype, std::optional<Device> device,
           bool requires_grad) {
  int64_t cols = m.value_or(n);
  KINDLE_CHECK(n >= 0 && cols >= 0, "eye: n and m must be non-negative, got n=", n, ", m=", cols);
  Tensor t = zeros({n, cols}, dtype, device, false);
  t.diagonal(0, 0, 1).fill_(1);
  return finish_factory(t, requires_grad, "eye");
}

}  // namespace kindle
