// Ops composed of other ops (PyTorch's CompositeImplicitAutograd ones): their gradients come
// from the ops they call, so none has a derivative formula or a kernel of its own, and every
// device that has the underlying ops has these.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "kindle/autograd.h"
#include "kindle/operators.h"
#include "ops/composite_util.h"
#include "ops/kernels.h"
#include "ops/tensor_iter.h"

namespace kindle {
namespace {

using detail::assign_result;
using detail::input_of;

constexpr double kPi = std::numbers::pi;

bool is_reduced_float(DType t) { return t == kFloat16 || t == kBFloat16; }

// Integer and bool inputs of float-valued ops compute in the default dtype, as PyTorch does.
Tensor to_floating(const Tensor& t) { return t.is_floating_point() || t.is_complex() ? t : t.to(default_dtype()); }

// Transcendental composites run in float32 for float16/bfloat16 and round once at the end, as a
// fused kernel would (several rounded half steps lose more than the kernel's one).
template <class F>
Tensor in_opmath(const Tensor& x, F f) {
  if (!is_reduced_float(x.dtype())) return f(x);
  return f(x.to(kFloat32)).to(x.dtype());
}

void check_floating(const Tensor& t, const char* op) {
  KINDLE_CHECK_NOT_IMPLEMENTED(t.is_floating_point(), "\"", op, "\" not implemented for '", t.dtype(), "'");
}

Tensor ones_of(DType dt) { return scalar_tensor_of(1, dt); }

}  // namespace

// ---- elementwise

Tensor deg2rad(const Tensor& self) {
  KINDLE_CHECK(!self.is_complex(), "deg2rad is not supported for complex tensors.");
  return to_floating(self) * Scalar(kPi / 180.0);
}
const Tensor& deg2rad_(const Tensor& self) { return assign_result(self, deg2rad(input_of(self)), "deg2rad_"); }
Tensor rad2deg(const Tensor& self) {
  KINDLE_CHECK(!self.is_complex(), "rad2deg is not supported for complex tensors.");
  return to_floating(self) * Scalar(180.0 / kPi);
}
const Tensor& rad2deg_(const Tensor& self) { return assign_result(self, rad2deg(input_of(self)), "rad2deg_"); }

// log(e^a + e^b) = max + log1p(e^-|a-b|); where the max is infinite the sum is the max (the
// difference of two equal infinities is NaN).
static Tensor logaddexp_impl(const Tensor& self, const Tensor& other, bool base2, const char* op) {
  DType dt = result_type({self, other});
  if (is_complex(dt) && !base2) {
    // the operand with the larger real part leads: log(e^a + e^b) = a + log1p(e^(b - a))
    Tensor a = self.to(dt), b = other.to(dt);
    Tensor first = real(a) >= real(b);
    Tensor hi = where(first, a, b), lo = where(first, b, a);
    return where(isinf(real(hi)), hi, hi + log1p(exp(lo - hi)));
  }
  KINDLE_CHECK_NOT_IMPLEMENTED(is_floating_point(dt), "\"", op, "_cpu\" not implemented for '", dt, "'");
  Tensor a = self.to(dt), b = other.to(dt);
  return in_opmath(a, [&](const Tensor& af) {
    Tensor bf = b.to(af.dtype());
    Tensor m = maximum(af, bf);
    Tensor d = (af - bf).abs().neg();
    Tensor r = base2 ? m + log1p(exp2(d)) * Scalar(1.0 / std::numbers::ln2) : m + log1p(exp(d));
    return where(isinf(m), m, r);
  });
}
Tensor logaddexp(const Tensor& self, const Tensor& other) { return logaddexp_impl(self, other, false, "logaddexp"); }
Tensor logaddexp2(const Tensor& self, const Tensor& other) { return logaddexp_impl(self, other, true, "logaddexp2"); }

// The p-norm of the (broadcast) difference.
Tensor dist(const Tensor& self, const Tensor& other, const Scalar& p) {
  KINDLE_CHECK((self.is_floating_point() || self.is_complex()) && (other.is_floating_point() || other.is_complex()),
               "norm(): input dtype should be either floating point or complex. Got ",
               scalar_type_name(self.is_floating_point() || self.is_complex() ? other.dtype() : self.dtype()),
               " instead.");
  return norm(self - other, p);
}

// Each slice along dim whose p-norm exceeds maxnorm is scaled to norm maxnorm (torch's 1e-7 guard).
Tensor renorm(const Tensor& self, const Scalar& p, int64_t dim, const Scalar& maxnorm) {
  KINDLE_CHECK(self.dim() > 1, "renorm: input needs at least 2 dimensions, got ", self.dim(), " dimensions");
  KINDLE_CHECK(p.to_double() > 0, "renorm: non-positive-norm not supported");
  KINDLE_CHECK(maxnorm.to_double() >= 0, "renorm: expected maxnorm to be >= 0 but got ", maxnorm.to_double());
  KINDLE_CHECK(self.is_floating_point() || self.is_complex(), "linalg.vector_norm: Expected a floating point or "
               "complex tensor as input. Got ", scalar_type_name(self.dtype()));
  int64_t d = wrap_dim(dim, self.dim(), "renorm");
  DimVector others;
  for (int64_t i = 0; i < self.dim(); ++i)
    if (i != d) others.push_back(i);
  Tensor norms = norm(self, p, IntArrayRef(others), true);
  Tensor limit = scalar_tensor_of(maxnorm, norms.dtype());
  Tensor factor = where(norms > limit, limit / (norms + Scalar(1e-7)), ones_of(norms.dtype()));
  return self * factor;
}
const Tensor& renorm_(const Tensor& self, const Scalar& p, int64_t dim, const Scalar& maxnorm) {
  return assign_result(self, renorm(input_of(self), p, dim, maxnorm), "renorm_");
}

// sin(pi x) / (pi x), 1 at 0. The quotient is taken at a safe point where x is 0 so that its
// gradient there is 0, not NaN (the untaken branch of `where` still runs its backward).
Tensor sinc(const Tensor& self) {
  return in_opmath(to_floating(self), [](const Tensor& x) {
    Tensor zero = x == Scalar(0);
    Tensor one = ones_of(x.dtype());
    Tensor pix = where(zero, one, x * Scalar(kPi));
    return where(zero, one, pix.sin() / pix);
  });
}
const Tensor& sinc_(const Tensor& self) { return assign_result(self, sinc(input_of(self)), "sinc_"); }

// self * 2^other in the operands' common floating type.
Tensor ldexp(const Tensor& self, const Tensor& other) {
  if (is_floating_point(self.dtype())) check_kernel_dtype(other.dtype(), "ldexp_cpu_exp", true, false);
  DType dt = result_type({self, other});
  KINDLE_CHECK_NOT_IMPLEMENTED(!is_complex(dt) || (other.dtype() != kFloat16 && other.dtype() != kBFloat16),
                               "ldexp: a complex tensor with a ", other.dtype(), " exponent needs complex32, which "
                               "Kindle does not support");
  if (!is_floating_point(dt) && !is_complex(dt)) dt = default_dtype();
  return in_opmath(self.to(dt), [&](const Tensor& x) { return x * other.to(x.dtype()).exp2(); });
}
const Tensor& ldexp_(const Tensor& self, const Tensor& other) {
  DimVector b = broadcast_shapes(self.sizes(), other.sizes(), "ldexp_");
  KINDLE_CHECK(IntArrayRef(b) == self.sizes(), "ldexp_: output with shape ", self.sizes(),
               " doesn't match the broadcast shape ", IntArrayRef(b));
  return assign_result(self, ldexp(input_of(self), other), "ldexp_");
}

Tensor heaviside(const Tensor& self, const Tensor& values) {
  KINDLE_CHECK(self.dtype() == values.dtype(), "heaviside is not yet implemented for tensors with different dtypes.");
  return where(self == Scalar(0), values, (self > Scalar(0)).to(self.dtype()));
}
const Tensor& heaviside_(const Tensor& self, const Tensor& values) {
  return assign_result(self, heaviside(input_of(self), values), "heaviside_");
}

// float_power computes in double (complex128 when either side is complex) whatever the dtypes.
Tensor float_power(const Tensor& self, const Tensor& exponent) {
  DType dt = self.is_complex() || exponent.is_complex() ? kComplex128 : kFloat64;
  return pow(self.to(dt), exponent.to(dt));
}
Tensor float_power(const Tensor& self, const Scalar& exponent) {
  DType dt = self.is_complex() || exponent.is_complex() ? kComplex128 : kFloat64;
  return pow(self.to(dt), scalar_tensor_of(exponent, dt));
}
Tensor float_power(const Scalar& self, const Tensor& exponent) {
  DType dt = self.is_complex() || exponent.is_complex() ? kComplex128 : kFloat64;
  return pow(scalar_tensor_of(self, dt), exponent.to(dt));
}
const Tensor& float_power_(const Tensor& self, const Tensor& exponent) {
  DType want = self.is_complex() || exponent.is_complex() ? kComplex128 : kFloat64;
  KINDLE_CHECK(self.dtype() == want, "the base given to float_power_ has dtype ", self.dtype(),
               " but the operation's result requires dtype ", want);
  return assign_result(self, float_power(input_of(self), exponent), "float_power_");
}

// ---- reductions

Tensor nanmean(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  KINDLE_CHECK(self.is_floating_point(), "nanmean(): expected input to have floating point or complex dtype but got ",
               self.dtype());
  Tensor count = self.isnan().logical_not().sum(dim, keepdim);
  return nansum(self, dim, keepdim, dtype) / count;
}

// ---- creation

Tensor scalar_tensor(const Scalar& s, std::optional<DType> dtype, std::optional<Device> device, bool requires_grad) {
  return full({}, s, dtype.value_or(default_dtype()), device, requires_grad);
}

static Tensor tri_indices(int64_t row, int64_t col, int64_t offset, std::optional<DType> dtype,
                          std::optional<Device> device, bool lower, const char* op) {
  KINDLE_CHECK(row >= 0, op, ": row must be non-negative, got ", row);
  KINDLE_CHECK(col >= 0, op, ": col must be non-negative, got ", col);
  DType dt = dtype.value_or(kInt64);
  KINDLE_CHECK_NOT_IMPLEMENTED(dt == kInt64 || dt == kInt32, "\"", op, "\" not implemented for '", dt, "'");
  if (device && device->is_meta()) {  // the count, row by row: (i, j) with j - i <= offset (lower) or >= offset
    int64_t count = 0;
    for (int64_t i = 0; i < row; ++i)
      count += lower ? std::clamp<int64_t>(i + offset + 1, 0, col) : col - std::clamp<int64_t>(i + offset, 0, col);
    return empty_tensor({2, count}, dt, *device);
  }
  Tensor i = arange(0, row, 1, kInt64, device).unsqueeze(1);
  Tensor j = arange(0, col, 1, kInt64, device);
  Tensor keep = lower ? (j - i) <= Scalar(offset) : (j - i) >= Scalar(offset);
  return keep.nonzero().t().contiguous().to(dt);
}
Tensor tril_indices(int64_t row, int64_t col, int64_t offset, std::optional<DType> dtype, std::optional<Device> device) {
  return tri_indices(row, col, offset, dtype, device, true, "tril_indices");
}
Tensor triu_indices(int64_t row, int64_t col, int64_t offset, std::optional<DType> dtype, std::optional<Device> device) {
  return tri_indices(row, col, offset, dtype, device, false, "triu_indices");
}

// Powers of x by repeated multiplication (a cumulative product), so that they round as
// PyTorch's do; int and bool inputs give int64.
Tensor vander(const Tensor& x, std::optional<int64_t> N, bool increasing) {
  KINDLE_CHECK(x.dim() == 1, "vander: x must be a one-dimensional tensor.");
  int64_t n = N.value_or(x.size(0));
  KINDLE_CHECK(n >= 0, "vander: N must be non-negative.");
  DType dt = promote_types(x.dtype(), kInt64);
  if (n <= 1) return ones({x.size(0), n}, dt, x.device());
  Tensor xs = x.to(dt);
  Tensor cols = cat({ones({x.size(0), 1}, dt, x.device()), xs.unsqueeze(1).expand({x.size(0), n - 1})}, 1);
  Tensor r = cols.cumprod(1);
  return increasing ? r : r.flip({1});
}

// ---- shape

Tensor narrow_copy(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  KINDLE_CHECK(self.dim() > 0 && dim >= -self.dim() && dim < self.dim(), "narrow_copy: dim ", dim,
               " out of range for a tensor of dimension ", self.dim());
  Tensor v = self.narrow(dim, start, length);
  return v.is_contiguous() ? v.clone() : v.contiguous();
}

Tensor rot90(const Tensor& self, int64_t k, IntArrayRef dims) {
  KINDLE_CHECK(dims.size() == 2, "rot90: expected total rotation dims == 2, but got dims = ", dims.size());
  KINDLE_CHECK(self.dim() >= 2, "rot90: expected total dims >= 2, but got total dims = ", self.dim());
  int64_t d0 = wrap_dim(dims[0], self.dim(), "rot90"), d1 = wrap_dim(dims[1], self.dim(), "rot90");
  KINDLE_CHECK(d0 != d1, "rot90: expected rotation dims to be different, but got dim0 = ", dims[0],
               " and dim1 = ", dims[1]);
  switch (((k % 4) + 4) % 4) {
    case 1: return self.flip({d1}).transpose(d0, d1);
    case 2: return self.flip({d0, d1});
    case 3: return self.flip({d0}).transpose(d0, d1);
    default: return self.clone();
  }
}

std::vector<Tensor> meshgrid(TensorList tensors, std::optional<std::string_view> indexing) {
  KINDLE_CHECK(!tensors.empty(), "meshgrid expects a non-empty TensorList");
  std::string_view mode = indexing.value_or("ij");
  KINDLE_CHECK(mode == "ij" || mode == "xy", "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ", mode);
  size_t n = tensors.size();
  for (size_t i = 0; i < n; ++i) {
    KINDLE_CHECK(tensors[i].dim() <= 1, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: ",
                 tensors[i].sizes());
    KINDLE_CHECK(tensors[i].dtype() == tensors[0].dtype(), "torch.meshgrid: expects all tensors to have the same dtype");
  }
  // "xy" is "ij" over the first two inputs swapped, its first two outputs swapped back.
  bool swap = mode == "xy" && n >= 2;
  std::vector<Tensor> in(tensors.begin(), tensors.end());
  if (swap) std::swap(in[0], in[1]);
  DimVector shape;
  for (const Tensor& t : in) shape.push_back(t.numel());
  std::vector<Tensor> out;
  for (size_t i = 0; i < n; ++i) {
    DimVector view(n, 1);
    view[i] = shape[i];
    out.push_back(in[i].reshape(view).expand(shape));
  }
  if (swap) std::swap(out[0], out[1]);
  return out;
}

Tensor cartesian_prod(TensorList tensors) {
  for (const Tensor& t : tensors)
    KINDLE_CHECK(t.dim() == 1, "cartesian_prod: Expect a 1D vector, but got shape ", t.sizes());
  KINDLE_CHECK(!tensors.empty(), "cartesian_prod expects a non-empty TensorList");
  if (tensors.size() == 1) return tensors[0];
  std::vector<Tensor> grids = meshgrid(tensors, "ij");
  for (Tensor& g : grids) g = g.flatten();
  return stack(grids, 1);
}

// All r-element combinations of a 1-D tensor's elements in lexicographic order of positions:
// the grid of r position tuples, kept where they increase (or do not decrease).
Tensor combinations(const Tensor& self, int64_t r, bool with_replacement) {
  KINDLE_CHECK(self.dim() == 1, "combinations: Expect a 1D vector, but got shape ", self.sizes());
  KINDLE_CHECK(r >= 0, "combinations: Expect a non-negative number, but got ", r);
  if (r == 0) return empty_tensor({0}, self.dtype(), self.device());
  Tensor pos = arange(0, self.size(0), 1, kInt64, self.device());
  std::vector<Tensor> grids = meshgrid(std::vector<Tensor>(size_t(r), pos), "ij");
  Tensor keep = ones(grids[0].sizes(), kBool, self.device());
  for (int64_t i = 0; i + 1 < r; ++i)
    keep = logical_and(keep, with_replacement ? grids[i] <= grids[i + 1] : grids[i] < grids[i + 1]);
  std::vector<Tensor> cols;
  for (const Tensor& g : grids) cols.push_back(self.index_select(0, g.masked_select(keep)));
  return stack(cols, 1);
}

// Each block padded with zero columns to the full width, then the rows stacked.
Tensor block_diag(TensorList tensors) {
  DType dt = kBool;
  int64_t width = 0;
  std::vector<Tensor> blocks;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    KINDLE_CHECK(t.dim() <= 2, "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input ", i,
                 " has ", t.dim(), " dimensions");
    dt = i == 0 ? t.dtype() : promote_types(dt, t.dtype());
    blocks.push_back(t.dim() == 2 ? t : t.reshape({1, t.numel()}));
    width += blocks.back().size(1);
  }
  if (blocks.empty()) return empty_tensor({1, 0}, default_dtype());
  Device dev = tensors[0].device();
  std::vector<Tensor> rows;
  int64_t left = 0;
  for (const Tensor& b : blocks) {
    int64_t r = b.size(0), c = b.size(1);
    rows.push_back(cat({zeros({r, left}, dt, dev), b.to(dt), zeros({r, width - left - c}, dt, dev)}, 1));
    left += c;
  }
  return cat(rows, 0);
}

// ---- products and differences

Tensor linalg_cross(const Tensor& self, const Tensor& other, int64_t dim) {
  KINDLE_CHECK(self.dtype() == other.dtype(), "linalg.cross: expected scalar type ", self.dtype(), " but found ",
               other.dtype());
  DType dt = self.dtype();
  KINDLE_CHECK_NOT_IMPLEMENTED(dt != kBool, "\"cross\" not implemented for 'Bool'");
  KINDLE_CHECK(self.dim() == other.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  DimVector shape = broadcast_shapes(self.sizes(), other.sizes(), "linalg.cross");
  int64_t d = wrap_dim(dim, int64_t(shape.size()), "linalg.cross");
  KINDLE_CHECK(self.size(d) == 3 && other.size(d) == 3, "linalg.cross: inputs dimension ", dim,
               " must have length 3. Got ", self.size(d), " and ", other.size(d));
  Tensor a = self.to(dt).expand(shape), b = other.to(dt).expand(shape);
  auto at = [&](const Tensor& t, int64_t i) { return t.narrow(d, i, 1); };
  return cat({at(a, 1) * at(b, 2) - at(a, 2) * at(b, 1), at(a, 2) * at(b, 0) - at(a, 0) * at(b, 2),
              at(a, 0) * at(b, 1) - at(a, 1) * at(b, 0)}, d);
}

// torch.cross without a dim takes the first dimension of size 3 (a deprecated default).
Tensor cross(const Tensor& self, const Tensor& other, std::optional<int64_t> dim) {
  if (dim) return linalg_cross(self, other, *dim);
  KINDLE_CHECK(self.dim() == other.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  DimVector shape = broadcast_shapes(self.sizes(), other.sizes(), "cross");
  for (int64_t i = 0; i < int64_t(shape.size()); ++i)
    if (shape[i] == 3) return linalg_cross(self, other, i);
  KINDLE_CHECK(false, "no dimension of size 3 in input");
  return {};
}

Tensor diff(const Tensor& self, int64_t n, int64_t dim, const std::optional<Tensor>& prepend,
            const std::optional<Tensor>& append) {
  KINDLE_CHECK(self.dim() >= 1, "diff expects input to be at least one-dimensional");
  KINDLE_CHECK(n >= 0, "order must be non-negative but got ", n);
  int64_t d = wrap_dim(dim, self.dim(), "diff");
  Tensor x = self;
  if (prepend || append) {
    std::vector<Tensor> parts;
    if (prepend) {
      KINDLE_CHECK(prepend->dim() == self.dim(), "diff expects prepend or append to be the same dimension as input");
      parts.push_back(*prepend);
    }
    parts.push_back(self);
    if (append) {
      KINDLE_CHECK(append->dim() == self.dim(), "diff expects prepend or append to be the same dimension as input");
      parts.push_back(*append);
    }
    x = cat(parts, d);
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t len = std::max<int64_t>(x.size(d) - 1, 0);
    Tensor hi = x.narrow(d, x.size(d) - len, len), lo = x.narrow(d, 0, len);
    x = x.dtype() == kBool ? logical_xor(hi, lo) : hi - lo;
  }
  return n == 0 ? x.clone() : x;
}

// The trapezoid rule along dim, with spacing dx (a number, or per-interval spacings that
// broadcast against the intervals).
// With a constant spacing the sum is dx * (sum(y) - (y_first + y_last) / 2): one reduction,
// which accumulates in float for half inputs.
static Tensor trapezoid_sum(const Tensor& y, const Tensor* dx, double dx_scalar, int64_t d, bool cumulative) {
  int64_t n = y.size(d);
  if (n == 0 && !cumulative) {
    DimVector shape(y.sizes());
    shape.erase(size_t(d));
    return zeros(shape, y.dtype(), y.device());
  }
  int64_t len = std::max<int64_t>(n - 1, 0);
  if (!dx && !cumulative)
    return (y.sum(IntArrayRef{d}) - (y.select(d, 0) + y.select(d, n - 1)) * Scalar(0.5)) * Scalar(dx_scalar);
  Tensor pair = y.narrow(d, std::min<int64_t>(n, 1), len) + y.narrow(d, 0, len);
  Tensor area = dx ? (*dx * pair) / Scalar(2.0) : pair * Scalar(dx_scalar / 2.0);
  return cumulative ? area.cumsum(d) : area.sum(IntArrayRef{d});
}

static Tensor trapezoid_x(const Tensor& y, const Tensor& x, int64_t dim, bool cumulative, const char* op) {
  KINDLE_CHECK(y.dtype() != kBool && x.dtype() != kBool, op, ": received a bool input for `",
               y.dtype() == kBool ? "y" : "x", "`, but bool is not supported");
  int64_t d = wrap_dim(dim, y.dim(), op);
  Tensor dx;
  if (x.dim() == 1) {
    KINDLE_CHECK(x.size(0) == y.size(d), op, ": There must be one `x` value for each sample point");
    DimVector view(size_t(y.dim()), 1);
    view[d] = std::max<int64_t>(x.size(0) - 1, 0);
    dx = x.diff(1, 0).reshape(view);
  } else {
    dx = x.diff(1, dim);
  }
  return trapezoid_sum(y, &dx, 0, d, cumulative);
}

static Tensor trapezoid_dx(const Tensor& y, const Scalar& dx, int64_t dim, bool cumulative, const char* op) {
  KINDLE_CHECK(y.dtype() != kBool, op, ": received a bool input for `y`, but bool is not supported");
  return trapezoid_sum(y, nullptr, dx.to_double(), wrap_dim(dim, y.dim(), op), cumulative);
}

Tensor trapezoid(const Tensor& y, const Tensor& x, int64_t dim) { return trapezoid_x(y, x, dim, false, "trapezoid"); }
Tensor trapezoid(const Tensor& y, const Scalar& dx, int64_t dim) { return trapezoid_dx(y, dx, dim, false, "trapezoid"); }
Tensor trapz(const Tensor& y, const Tensor& x, int64_t dim) { return trapezoid_x(y, x, dim, false, "trapezoid"); }
Tensor trapz(const Tensor& y, double dx, int64_t dim) { return trapezoid_dx(y, dx, dim, false, "trapezoid"); }
Tensor cumulative_trapezoid(const Tensor& y, const Tensor& x, int64_t dim) {
  return trapezoid_x(y, x, dim, true, "cumulative_trapezoid");
}
Tensor cumulative_trapezoid(const Tensor& y, const Scalar& dx, int64_t dim) {
  return trapezoid_dx(y, dx, dim, true, "cumulative_trapezoid");
}

// Pairwise p-norm distances between the rows of x1 and x2 (batched). For p = 2 on large inputs
// (or when asked) the squared distance is expanded as |a|^2 - 2 a.b + |b|^2 and taken as one
// matrix product, as PyTorch does: faster, less exact for nearly equal rows.
Tensor cdist(const Tensor& x1, const Tensor& x2, double p, std::optional<std::string_view> compute_mode) {
  KINDLE_CHECK(x1.is_floating_point(), "cdist only supports floating-point dtypes, X1 got: ", x1.dtype());
  KINDLE_CHECK(x2.is_floating_point(), "cdist only supports floating-point dtypes, X2 got: ", x2.dtype());
  for (const Tensor* t : {&x1, &x2})
    KINDLE_CHECK_NOT_IMPLEMENTED(!is_reduced_float(t->dtype()), "\"cdist\" not implemented for '", t->dtype(), "'");
  KINDLE_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  KINDLE_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  KINDLE_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
               " X2: ", x2.size(-1));
  KINDLE_CHECK(p >= 0, "cdist only supports non-negative p values");
  std::string_view mode = compute_mode.value_or("use_mm_for_euclid_dist_if_necessary");
  KINDLE_CHECK_VALUE(mode == "use_mm_for_euclid_dist_if_necessary" || mode == "use_mm_for_euclid_dist" ||
                         mode == "donot_use_mm_for_euclid_dist",
                     mode, " is not a valid value for compute_mode");
  DType dt = result_type({x1, x2});
  Tensor a = x1.to(dt), b = x2.to(dt);
  int64_t r1 = a.size(-2), r2 = b.size(-2);
  bool use_mm = p == 2 && (mode == "use_mm_for_euclid_dist" ||
                           (mode == "use_mm_for_euclid_dist_if_necessary" && (r1 > 25 || r2 > 25)));
  if (use_mm) {
    Tensor an = a.square().sum(IntArrayRef{-1}, true), bn = b.square().sum(IntArrayRef{-1}, true);
    Tensor a_aug = cat({a * Scalar(-2), an, ones_like(an)}, -1);
    Tensor b_aug = cat({b, ones_like(bn), bn}, -1);
    return a_aug.matmul(b_aug.transpose(-2, -1)).clamp_min(1e-30).sqrt();
  }
  Tensor diffs = a.unsqueeze(-2) - b.unsqueeze(-3);
  // p = 0 counts the differing coordinates; sign keeps it differentiable (a zero gradient).
  if (p == 0) return diffs.abs().sign().sum(IntArrayRef{-1});
  return diffs.norm(p, IntArrayRef{-1});
}

// ---- counting

Tensor histc(const Tensor& self, int64_t bins, const Scalar& min, const Scalar& max) {
  KINDLE_CHECK_NOT_IMPLEMENTED(self.is_floating_point(), "\"histogram_cpu\" not implemented for '", self.dtype(), "'");
  KINDLE_CHECK(bins > 0, "torch.histc: bins must be > 0, but got ", bins, " for bins");
  double lo = min.to_double(), hi = max.to_double();
  KINDLE_CHECK(lo <= hi, "torch.histc: max must be larger than min");
  Tensor x = self.detach().flatten();
  if (x.is_meta()) return empty_tensor({bins}, self.dtype(), x.device());  // the counts are values
  if (lo == hi && x.numel() > 0) {
    lo = x.min().item().to_double();
    hi = x.max().item().to_double();
  }
  if (lo == hi) { lo -= 1; hi += 1; }
  KINDLE_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histc: range of [", lo, ", ", hi, "] is not finite");
  // The bin of x is (x - min) * bins / (max - min), each step rounded in the input's dtype as
  // PyTorch computes it, so that values near a bin edge land in the same bin.
  Tensor lo_t = scalar_tensor_of(lo, x.dtype()), hi_t = scalar_tensor_of(hi, x.dtype());
  Tensor in = x.masked_select(logical_and(x >= lo_t, x <= hi_t));
  Tensor bin = ((in - lo_t) * Scalar(bins) / (hi_t - lo_t)).floor().to(kInt64).clamp(Scalar(0), Scalar(bins - 1));
  return bincount(bin, std::nullopt, bins).to(self.dtype());
}

// ---- repeat_interleave: the output position i takes input element j while i lies in j's
// run; the run starts are marked and a cumulative sum turns marks into element numbers.
Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size) {
  KINDLE_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  KINDLE_CHECK(repeats.dtype() == kInt64 || repeats.dtype() == kInt32, "repeats has to be Long or Int tensor");
  if (repeats.numel() == 0) return empty_tensor({0}, repeats.dtype(), repeats.device());
  KINDLE_CHECK(repeats.min().item().to_int() >= 0, "repeats can not be negative");
  Tensor ends = repeats.to(kInt64).cumsum(0);
  int64_t total = ends.select(0, -1).item().to_int();
  KINDLE_CHECK(!output_size || *output_size == total, "allocated size does not match required size");
  Tensor starts = ends.narrow(0, 0, repeats.numel() - 1);
  return bincount(starts, std::nullopt, total + 1).cumsum(0).narrow(0, 0, total).to(repeats.dtype());
}

Tensor repeat_interleave(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  Tensor x = dim ? self : self.flatten();
  int64_t d = dim ? wrap_dim(*dim, self.dim(), "repeat_interleave") : 0;
  Tensor reps = repeats;
  if (reps.dim() == 0 || (reps.dim() == 1 && reps.size(0) == 1)) reps = reps.reshape({1}).expand({x.size(d)});
  KINDLE_CHECK(reps.dim() == 1 && reps.size(0) == x.size(d), "repeats must have the same size as input along dim, but got "
               "repeats.size(0) = ", reps.dim() ? reps.size(0) : 1, " and input.size(", d, ") = ", x.size(d));
  return x.index_select(d, repeat_interleave(reps.contiguous(), output_size).to(kInt64));
}

Tensor repeat_interleave(const Tensor& self, int64_t repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  KINDLE_CHECK(repeats >= 0, "repeats can not be negative");
  return repeat_interleave(self, scalar_tensor_of(repeats, kInt64), dim, output_size);
}

}  // namespace kindle

namespace kindle {

// ---- clamp with tensor bounds: below min takes min, then above max takes max (so min > max
// gives max); x equal to a bound keeps x's gradient; a NaN operand gives NaN with no gradient.
Tensor clamp(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  KINDLE_CHECK(min || max, "torch.clamp: At least one of 'min' or 'max' must not be None");
  std::vector<Tensor> operands{self};
  if (min) operands.push_back(*min);
  if (max) operands.push_back(*max);
  DType dt = result_type(operands);
  KINDLE_CHECK_NOT_IMPLEMENTED(dt != kBool, "\"clamp\" not implemented for 'Bool'");
  Tensor r = self.to(dt);
  if (min) { Tensor lo = min->to(dt); r = where(r < lo, lo, r); }
  if (max) { Tensor hi = max->to(dt); r = where(r > hi, hi, r); }
  if (is_floating_point(dt)) {
    Tensor nan = self.isnan();
    if (min) nan = logical_or(nan, min->isnan());
    if (max) nan = logical_or(nan, max->isnan());
    r = where(nan, full({}, Scalar(std::numeric_limits<double>::quiet_NaN()), dt), r);
  }
  return r;
}
const Tensor& clamp_(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return assign_result(self, clamp(input_of(self), min, max), "clamp_");
}
Tensor clip(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return clamp(self, min, max);
}
const Tensor& clip_(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return assign_result(self, clamp(input_of(self), min, max), "clip_");
}

Tensor clamp_min(const Tensor& self, const Tensor& min) { return clamp(self, min, std::nullopt); }
Tensor clamp_max(const Tensor& self, const Tensor& max) { return clamp(self, std::nullopt, max); }
const Tensor& clamp_min_(const Tensor& self, const Tensor& min) {
  return assign_result(self, clamp(input_of(self), min, std::nullopt), "clamp_min_");
}
const Tensor& clamp_max_(const Tensor& self, const Tensor& max) {
  return assign_result(self, clamp(input_of(self), std::nullopt, max), "clamp_max_");
}

const Tensor& copy_(const Tensor& self, const Tensor& src, bool /*non_blocking*/) { return copy_(self, src); }

// ---- normal with tensor parameters: standard normal draws scaled and shifted, as PyTorch draws
// them. Like PyTorch's, the result is differentiable with a zero gradient (not reparameterised).
static Tensor normal_impl(const Tensor& mean, const Tensor& std, const std::optional<Generator>& generator) {
  DType dt = result_type({mean, std});
  KINDLE_CHECK(is_floating_point(dt), "normal expects floating-point mean and std, got ", mean.dtype(), " and ", std.dtype());
  KINDLE_CHECK(std.numel() == 0 || !(std < Scalar(0)).any().item().to_bool(),
               "normal expects all elements of std >= 0.0");
  DimVector shape = broadcast_shapes(mean.sizes(), std.sizes(), "normal");
  Tensor out = empty_tensor(shape, dt, mean.device());
  out.normal_(0, 1, generator);
  out = out * std.detach() + mean.detach();
  if (mean.requires_grad() || std.requires_grad() || autograd::forward_ad::is_dual(mean) ||
      autograd::forward_ad::is_dual(std)) {
    Tensor never = zeros({}, kBool);
    out = where(never, mean, where(never, std, out));
  }
  return out;
}
Tensor normal(const Tensor& mean, const Tensor& std, const std::optional<Generator>& generator) {
  return normal_impl(mean, std, generator);
}
Tensor normal(const Tensor& mean, double std, const std::optional<Generator>& generator) {
  return normal_impl(mean, scalar_tensor_of(std, mean.is_floating_point() ? mean.dtype() : default_dtype()), generator);
}
Tensor normal(double mean, const Tensor& std, const std::optional<Generator>& generator) {
  return normal_impl(scalar_tensor_of(mean, std.is_floating_point() ? std.dtype() : default_dtype()), std, generator);
}

// where(condition) is nonzero(condition, as_tuple=True): one index tensor per dimension.
// (A 0-d condition counts as 1-d, as in PyTorch.)
std::vector<Tensor> where(const Tensor& condition) {
  Tensor nz = (condition.dim() == 0 ? condition.reshape({1}) : condition).nonzero();
  std::vector<Tensor> out;
  for (int64_t d = 0; d < nz.size(1); ++d) out.push_back(nz.select(1, d));
  return out;
}

// The Frobenius norm (p='fro') and the nuclear norm (the sum of the singular values over two dims).
Tensor norm(const Tensor& self, std::string_view p, OptionalIntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  KINDLE_CHECK(p == "fro" || p == "nuc", "norm: invalid norm type '", p, "'; expected 'fro' or 'nuc' (or a number)");
  if (p == "fro") return norm(self, Scalar(2), dim, keepdim, dtype);
  Tensor x = dtype ? self.to(*dtype) : self;
  DimVector dims = dim ? DimVector(*dim) : DimVector{0, 1};
  KINDLE_CHECK(dims.size() == 2 && (dim || x.dim() == 2), "norm(p='nuc'): the nuclear norm is over two dims: a matrix, "
               "or dim= naming two dims (got a ", x.dim(), "-d input and ", dims.size(), " dims)");
  int64_t d0 = wrap_dim(dims[0], x.dim(), "norm"), d1 = wrap_dim(dims[1], x.dim(), "norm");
  KINDLE_CHECK(d0 != d1, "norm(p='nuc'): dims must be different, got (", dims[0], ", ", dims[1], ")");
  Tensor s = std::get<1>(linalg_svd(x.movedim(IntArrayRef{d0, d1}, IntArrayRef{-2, -1}), false)).sum(IntArrayRef{-1});
  if (keepdim) s = s.unsqueeze(std::min(d0, d1)).unsqueeze(std::max(d0, d1));
  return s;
}

}  // namespace kindle

namespace kindle {

// ---- scatter_reduce / index_reduce. The values scattered to one position combine with
// `reduce`, and with self's own value unless include_self is false (a position nothing is
// scattered to keeps self). sum and mean are scatter_add compositions; amax, amin and prod run
// the reducing scatter on detached values, then attach the gradient by adding terms that are
// exactly zero in value: amax/amin share it evenly among the elements equal to the result (as
// PyTorch does), prod gives each factor result / factor.
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                      bool include_self) {
  if (reduce == "max" || reduce == "min") reduce = reduce == "max" ? "amax" : "amin";  // accepted by PyTorch too
  KINDLE_CHECK(reduce == "sum" || reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
               "scatter_reduce(): reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
  KINDLE_CHECK(src.dtype() == self.dtype(), "scatter_reduce(): Expected self.dtype to be equal to src.dtype (got ",
               self.dtype(), " and ", src.dtype(), ")");
  DType dt = self.dtype();
  if (reduce == "mean") check_kernel_dtype(dt, index.numel() ? "scatter_gather_tensor_cpu_reduce_mean" : "div_floor_cpu", true, false);
  auto excluded = [&](const Tensor& fill) {
    Tensor out = self.clone();
    return include_self ? out : out.scatter(dim, index, fill);
  };
  if (reduce == "sum" || reduce == "mean") {
    Tensor out = excluded(zeros_like(src)).scatter_add(dim, index, src);
    if (reduce == "sum") return out;
    Tensor count = (include_self ? ones_like(self) : zeros_like(self)).scatter_add(dim, index, ones_like(src)).clamp_min(1);
    return is_floating_point(dt) ? out / count : out.div(count, "floor").to(dt);
  }
  bool is_max = reduce == "amax", is_min = reduce == "amin";
  Scalar identity = is_max ? Scalar(-INFINITY) : is_min ? Scalar(INFINITY) : Scalar(1);  // floats; 1 for prod
  Tensor r;
  {
    Tensor base = self.detach().clone();
    if (!include_self) {
      // The identity of the reduction where something lands; integer amax/amin start from the
      // first value scattered instead (there is no integer infinity), so scatter src first.
      if (is_floating_point(dt) || reduce == "prod") base.scatter_(dim, index, full_like(src.detach(), identity));
      else base.scatter_(dim, index, src.detach());
    }
    r = scatter_reduce_raw_(base, dim, index, src.detach(),
                            is_max ? PutReduce::Max : is_min ? PutReduce::Min : PutReduce::Multiply);
  }
  if (!is_floating_point(dt) || !(self.requires_grad() || src.requires_grad() || autograd::forward_ad::is_dual(self) ||
                                  autograd::forward_ad::is_dual(src)))
    return r;
  Tensor src_v = src;  // the part of src the index reaches
  for (int64_t k = 0; k < index.dim(); ++k) src_v = src_v.narrow(k, 0, index.size(k));
  Tensor r_at = r.gather(dim, index);
  Tensor landed = zeros_like(self, kBool).scatter(dim, index, ones_like(index, kBool));
  Tensor self_counts = include_self ? ones_like(self, kBool) : landed.logical_not();
  Tensor zero = zeros({}, dt);
  if (reduce == "prod") {
    KINDLE_CHECK_NOT_IMPLEMENTED(!(logical_and(self.detach() == Scalar(0), self_counts).any().item().to_bool() ||
                                   (src_v.detach() == Scalar(0)).any().item().to_bool()),
                                 "scatter_reduce(reduce='prod'): the gradient with a zero factor is not implemented");
    // r * exp(sum log(x / x.detach())): the value r, and every derivative of the product (of any
    // order: gradients of gradients, forward over reverse)
    Tensor log_self = where(self_counts, (self / self.detach()).log(), zero);
    Tensor log_src = (src_v / src_v.detach()).log();
    return r * (log_self + zeros_like(r).scatter_add(dim, index, log_src)).exp();
  }
  Tensor on_self = logical_and(self_counts, self.detach() == r);
  Tensor on_src = src_v.detach() == r_at;
  Tensor count = on_self.to(dt) + zeros_like(r).scatter_add(dim, index, on_src.to(dt));
  Tensor share = where(on_self, self - r, zero) + zeros_like(r).scatter_add(dim, index, where(on_src, src_v - r_at, zero));
  return r + share / count.clamp_min(1);
}

const Tensor& scatter_reduce_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                              std::string_view reduce, bool include_self) {
  return assign_result(self, scatter_reduce(input_of(self), dim, index, src, reduce, include_self), "scatter_reduce_");
}

// index_reduce is scatter_reduce with the 1-D index spread over source's other dimensions.
Tensor index_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, std::string_view reduce,
                    bool include_self) {
  check_kernel_dtype(self.dtype(), "index_reduce", true, true);  // no complex kernel
  KINDLE_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
               "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got ", reduce, ".");
  KINDLE_CHECK(index.dim() <= 1, "index_reduce_(): Index is supposed to be a vector, but got dim: ", index.dim(),
               " with type: ", index.dtype(), " and size: ", index.sizes());
  KINDLE_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, "index_reduce_(): Expected dtype int32/int64 for index but got: ",
               index.dtype());
  KINDLE_CHECK(self.dtype() == source.dtype(), "index_reduce_(): self (", self.dtype(), ") and source (", source.dtype(),
               ") must have the same scalar type");
  if (!include_self && index.numel()) check_kernel_dtype(self.dtype(), "index_reduce_func_exclude_input_init", true, false);
  int64_t nd = std::max<int64_t>(self.dim(), 1);
  int64_t d = wrap_dim(dim, nd, "index_reduce");
  Tensor s = self.dim() == 0 ? self.reshape({1}) : self;
  Tensor src = source.dim() == 0 ? source.reshape({1}) : source;
  KINDLE_CHECK(src.dim() == s.dim(), "index_reduce_(): Source and self must have the same number of dimensions");
  KINDLE_CHECK(src.size(d) == index.numel(), "index_reduce_(): Number of indices (", index.numel(),
               ") should be equal to source.size(dim) (", src.size(d), ")");
  for (int64_t k = 0; k < s.dim(); ++k)
    KINDLE_CHECK(k == d || s.size(k) == src.size(k), "index_reduce_(): self and source must have the same size in every "
                 "dimension but ", d, ", got self ", s.sizes(), " and source ", src.sizes());
  if (index.numel() == 0) {  // nothing to reduce into (any dtype, as in PyTorch); source still gets a (zero) gradient
    if (!is_floating_point(self.dtype())) return self.clone();
    return self.clone() + source.sum().to(self.dtype()) * Scalar(0);
  }
  DimVector view(size_t(s.dim()), 1);
  view[d] = index.numel();
  Tensor idx = index.to(kInt64).reshape(view).expand(src.sizes());
  Tensor r = scatter_reduce(s, d, idx, src, reduce, include_self);
  return self.dim() == 0 ? r.reshape({}) : r;
}

const Tensor& index_reduce_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                            std::string_view reduce, bool include_self) {
  return assign_result(self, index_reduce(input_of(self), dim, index, source, reduce, include_self), "index_reduce_");
}

}  // namespace kindle

namespace kindle {

// ---- frexp: x = mantissa * 2^exponent with |mantissa| in [0.5, 1). The exponent comes from
// log2 in double and is corrected by one where log2 rounded across a power of two; the scaling
// by 2^-e goes in two halves so that subnormal inputs do not overflow the factor. 0, inf and
// NaN give themselves and exponent 0.
std::tuple<Tensor, Tensor> frexp(const Tensor& self) {
  KINDLE_CHECK(self.is_floating_point(), "torch.frexp() only supports floating-point dtypes");
  Tensor x = self.to(kFloat64);
  Tensor special = logical_or(x == Scalar(0), x.isfinite().logical_not());
  Tensor safe = where(special, ones_like(x), x);
  Tensor e = safe.abs().log2().floor() + Scalar(1);
  auto scale = [&](const Tensor& v, const Tensor& by) {
    Tensor half = (by / Scalar(2)).floor();
    return v * (-half).exp2() * (half - by).exp2();
  };
  Tensor m = scale(safe, e);
  Tensor big = m.abs() >= Scalar(1), small = m.abs() < Scalar(0.5);
  e = e + big.to(kFloat64) - small.to(kFloat64);
  m = where(big, m / Scalar(2), where(small, m * Scalar(2), m));
  Tensor mantissa = where(special, x, m).to(self.dtype());
  Tensor exponent = where(special, zeros({}, kFloat64), e).to(kInt32);
  return {mantissa, exponent};
}

// ---- nextafter: the neighbouring representable value of x in the direction of y, by stepping
// the bit pattern (read as a same-width integer) up or down by one.
Tensor native_nextafter(const Tensor& self_in, const Tensor& other_in) {
  Tensor self = self_in.detach(), other = other_in.detach();  // its derivative is PyTorch's: 1 for self
  DType dt = result_type({self, other});
  KINDLE_CHECK_NOT_IMPLEMENTED(dt == kFloat32 || dt == kFloat64 || dt == kBFloat16 || dt == kFloat16,
                               "\"nextafter_cpu\" not implemented for '", dt, "'");
  DimVector shape = broadcast_shapes(self.sizes(), other.sizes(), "nextafter");
  Tensor x = self.to(dt).expand(shape).contiguous(), y = other.to(dt).expand(shape).contiguous();
  DType bits = dt == kFloat64 ? kInt64 : dt == kFloat32 ? kInt32 : kInt16;
  Tensor xi = view_dtype(x, bits);
  Tensor step = where(logical_xor(y > x, x < Scalar(0)), ones({}, bits), full({}, Scalar(-1), bits));
  Tensor moved = view_dtype((xi + step).contiguous(), dt);
  // From zero the first step is the smallest subnormal, with y's sign.
  Tensor tiny = view_dtype(ones({}, bits), dt);
  Tensor from_zero = where(y > Scalar(0), tiny, tiny.neg());
  Tensor r = where(x == Scalar(0), from_zero, moved);
  r = where(x == y, y, r);
  return where(logical_or(x.isnan(), y.isnan()), x + y, r);
}

const Tensor& native_nextafter_(const Tensor& self, const Tensor& other) {
  return assign_result(self, native_nextafter(self, other), "nextafter_");
}

// ---- gradient along one dimension (torch.gradient: kindle.gradient normalises the arguments
// and calls this per dimension): second-order central differences inside, first- or
// second-order one-sided ones at the edges, with uniform spacing h or coordinates.
Tensor _gradient_along(const Tensor& self, int64_t dim, const std::optional<Tensor>& coordinates, double h,
                       int64_t edge_order) {
  KINDLE_CHECK(edge_order == 1 || edge_order == 2, "torch.gradient only supports edge_order=1 and edge_order=2.");
  KINDLE_CHECK(self.dtype() != kUInt8, "torch.gradient does not support uint8 input.");
  KINDLE_CHECK(self.dtype() != kBool, "torch.gradient: bool input is not supported (a difference of bools)");
  int64_t d = wrap_dim(dim, self.dim(), "gradient");
  int64_t n = self.size(d);
  KINDLE_CHECK(n >= edge_order + 1, "torch.gradient expected each dimension size to be at least edge_order+1");
  Tensor f = to_floating(self);
  auto at = [&](int64_t start, int64_t len) { return f.narrow(d, start, len); };
  Tensor hs;  // spacings h_i = x_{i+1} - x_i along d, shaped to broadcast
  if (coordinates) {
    KINDLE_CHECK(coordinates->dim() == 1 && coordinates->size(0) == n, "torch.gradient expected each tensor to be on the "
                 "same device and have the same length as the dimension it is for, got ", coordinates->sizes(), " for size ", n);
    DimVector view(size_t(f.dim()), 1);
    view[d] = n - 1;
    hs = coordinates->diff(1, 0).to(f.dtype()).reshape(view);
  } else {
    hs = full({}, Scalar(h), f.dtype());
  }
  auto hat = [&](int64_t start, int64_t len) { return coordinates ? hs.narrow(d, start, len) : hs; };
  std::vector<Tensor> parts;
  // left edge
  if (edge_order == 1) {
    parts.push_back((at(1, 1) - at(0, 1)) / hat(0, 1));
  } else {
    Tensor h1 = hat(0, 1), h2 = hat(1, 1);
    parts.push_back(at(0, 1) * (-(h1 * Scalar(2) + h2) / (h1 * (h1 + h2))) + at(1, 1) * ((h1 + h2) / (h1 * h2)) +
                    at(2, 1) * (-h1 / (h2 * (h1 + h2))));
  }
  // interior: weights of f_{i-1}, f_i, f_{i+1} for spacings h1 = h_{i-1}, h2 = h_i
  if (n > 2) {
    Tensor h1 = hat(0, n - 2), h2 = hat(1, n - 2);
    if (coordinates)
      parts.push_back(at(0, n - 2) * (-h2 / (h1 * (h1 + h2))) + at(1, n - 2) * ((h2 - h1) / (h1 * h2)) +
                      at(2, n - 2) * (h1 / (h2 * (h1 + h2))));
    else
      parts.push_back((at(2, n - 2) - at(0, n - 2)) / (hs * Scalar(2)));
  }
  // right edge
  if (edge_order == 1) {
    parts.push_back((at(n - 1, 1) - at(n - 2, 1)) / hat(n - 2, 1));
  } else {
    Tensor h1 = hat(n - 3, 1), h2 = hat(n - 2, 1);
    parts.push_back(at(n - 3, 1) * (h2 / (h1 * (h1 + h2))) + at(n - 2, 1) * (-(h2 + h1) / (h1 * h2)) +
                    at(n - 1, 1) * ((h2 * Scalar(2) + h1) / (h2 * (h1 + h2))));
  }
  return cat(parts, d);
}

}  // namespace kindle
