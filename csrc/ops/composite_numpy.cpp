// NumPy-style and alias ops PyTorch programs call (ravel, atleast_nd, tensor_split, isin, cov,
// gcd, the *_scatter family, unique_consecutive, histogram, ...), composed of other ops as in
// composite.cpp: their gradients come from the ops they call.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "autograd/forward_ad.h"
#include "kindle/autograd.h"
#include "kindle/operators.h"
#include "ops/composite_util.h"
#include "ops/value_checks.h"
#include "ops/tensor_iter.h"

namespace kindle {
namespace {

using detail::assign_result;
using detail::input_of;

// A Python-style slice bound: negative counts from the end, then clamped into [0, n].
int64_t clamp_bound(int64_t i, int64_t n) { return std::clamp(i < 0 ? i + n : i, int64_t(0), n); }

void check_integral(const Tensor& t, const char* kernel) {
  KINDLE_CHECK_NOT_IMPLEMENTED(is_integral(t.dtype(), false), "\"", kernel, "\" not implemented for '",
                               scalar_type_name(t.dtype()), "'");
}

// beta * self + alpha * prod, with self broadcast to prod's shape; beta == 0 ignores self's
// values (NaN included), as addmm does.
Tensor beta_plus_alpha(const Tensor& self, const Tensor& prod, const Scalar& beta, const Scalar& alpha, const char* op) {
  bool integral = is_integral(result_type({self, prod}), true);
  KINDLE_CHECK(!integral || !(beta.is_floating_point() || beta.is_complex()),
               "For integral input tensors, argument beta must not be a floating point number.");
  KINDLE_CHECK(!integral || !(alpha.is_floating_point() || alpha.is_complex()),
               "For integral input tensors, argument alpha must not be a floating point number.");
  DimVector b = broadcast_shapes(self.sizes(), prod.sizes(), op);
  KINDLE_CHECK(IntArrayRef(b) == prod.sizes(),
               op, ": the input of shape ", self.sizes(), " cannot be broadcast to the product's shape ", prod.sizes());
  DType dt = result_type({self, prod});
  if (dt == kBool) {  // logical: (beta and self) or (alpha and prod)
    Tensor s = beta.to_bool() ? self.expand(prod.sizes()) : zeros(prod.sizes(), kBool, prod.device());
    return logical_or(s, alpha.to_bool() ? prod : zeros(prod.sizes(), kBool, prod.device()));
  }
  Tensor p = alpha.to_double() == 1.0 && !alpha.is_complex() ? prod : prod * alpha;
  if (beta.to_double() == 0.0 && !beta.is_complex()) {
    // self's values are ignored (NaN included); autograd still gives it a zero gradient, as torch
    if (self.requires_grad()) return where(scalar_tensor_of(true, kBool, self.device()), p, self.expand(prod.sizes()));
    return p.to(dt).expand(prod.sizes()).contiguous();
  }
  Tensor s = beta.to_double() == 1.0 && !beta.is_complex() ? self : self * beta;
  return add(s, p);
}

}  // namespace

// ---- aliases

Tensor absolute(const Tensor& self) { return abs(self); }
const Tensor& absolute_(const Tensor& self) { return abs_(self); }
Tensor negative(const Tensor& self) { return neg(self); }
const Tensor& negative_(const Tensor& self) { return neg_(self); }
Tensor fix(const Tensor& self) { return trunc(self); }
const Tensor& fix_(const Tensor& self) { return trunc_(self); }
Tensor positive(const Tensor& self) {
  KINDLE_CHECK(self.dtype() != kBool, "The `+` operator, on a bool tensor is not supported.");
  return self;
}
const Tensor& divide_(const Tensor& self, const Tensor& other, std::optional<std::string_view> rounding_mode) {
  return div_(self, other, rounding_mode);
}
const Tensor& clamp_min_(const Tensor& self, const Scalar& min) { return clamp_(self, min, std::nullopt); }
const Tensor& clamp_max_(const Tensor& self, const Scalar& max) { return clamp_(self, std::nullopt, max); }
const Tensor& swapaxes_(const Tensor& self, int64_t axis0, int64_t axis1) { return transpose_(self, axis0, axis1); }
const Tensor& swapdims_(const Tensor& self, int64_t dim0, int64_t dim1) { return transpose_(self, dim0, dim1); }
// The kernels under cumsum_/cumprod_ (their autograd wrappers are generated from cumsum/cumprod).
// (torch's kernels copy a 0-d or empty result without the dtype check.)
namespace {
void check_same_dtype(const Tensor& self, std::optional<DType> dtype) {
  KINDLE_CHECK(!dtype || *dtype == self.dtype(), "Bad in-place call: input tensor dtype ", self.dtype(),
               " and output tensor dtype ", *dtype, " should match");
}
}  // namespace
const Tensor& native_cumsum_(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  check_same_dtype(self, dtype);
  Tensor r = cumsum(self, dim, dtype);
  return self.dim() == 0 || self.numel() == 0 ? self.copy_(r) : assign_result(self, r, "cumsum_");
}
const Tensor& native_cumprod_(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  check_same_dtype(self, dtype);
  Tensor r = cumprod(self, dim, dtype);
  return self.dim() == 0 || self.numel() == 0 ? self.copy_(r) : assign_result(self, r, "cumprod_");
}
Tensor row_stack(TensorList tensors) { return vstack(tensors); }
Tensor msort(const Tensor& self) { return std::get<0>(sort(self, 0)); }
Tensor ravel(const Tensor& self) { return self.reshape({-1}); }
Tensor diagflat(const Tensor& self, int64_t offset) { return diag(self.reshape({-1}), offset); }

// ---- elementwise

Tensor isposinf(const Tensor& self) {
  KINDLE_CHECK(!self.is_complex(), "isposinf does not support complex inputs.");
  if (!self.is_floating_point()) return zeros(self.sizes(), kBool, self.device());
  return eq(self, scalar_tensor_of(std::numeric_limits<double>::infinity(), self.dtype()));
}
Tensor isneginf(const Tensor& self) {
  KINDLE_CHECK(!self.is_complex(), "isneginf does not support complex inputs.");
  if (!self.is_floating_point()) return zeros(self.sizes(), kBool, self.device());
  return eq(self, scalar_tensor_of(-std::numeric_limits<double>::infinity(), self.dtype()));
}

// Euclid's algorithm on whole tensors: every element steps until its divisor is zero.
Tensor gcd(const Tensor& self, const Tensor& other) {
  DType dt = result_type({self, other});
  check_integral(self, "gcd_cpu");
  check_integral(other, "gcd_cpu");
  std::vector<Tensor> ab = broadcast_tensors({self.to(dt), other.to(dt)});
  Tensor a = abs(ab[0]), b = abs(ab[1]);
  Tensor zero = scalar_tensor_of(0, dt), one = scalar_tensor_of(1, dt);
  for (;;) {
    Tensor nz = ne(b, zero);
    if (!detail::any_value(nz)) break;  // (meta: one step gives the result's shape and dtype)
    Tensor r = remainder(a, where(nz, b, one));
    a = where(nz, b, a);
    b = where(nz, r, zero);
  }
  return a.contiguous();
}
Tensor lcm(const Tensor& self, const Tensor& other) {
  Tensor g = gcd(self, other);
  DType dt = g.dtype();
  Tensor zero = scalar_tensor_of(0, dt);
  Tensor safe = where(eq(g, zero), scalar_tensor_of(1, dt), g);
  // in int64, then narrowed: a product that overflows the dtype wraps after abs, as torch's
  // kernel (C++'s int arithmetic) does
  Tensor l = abs(div(self.to(kInt64), safe.to(kInt64), "trunc") * other.to(kInt64));
  return where(eq(g, zero), zero, l.to(dt));
}
const Tensor& gcd_(const Tensor& self, const Tensor& other) { return assign_result(self, gcd(self, other), "gcd_"); }
const Tensor& lcm_(const Tensor& self, const Tensor& other) { return assign_result(self, lcm(self, other), "lcm_"); }

// Membership by binary search in the sorted test elements.
Tensor isin(const Tensor& elements, const Tensor& test_elements, bool assume_unique, bool invert) {
  (void)assume_unique;  // a hint only: the search does not need it
  DType dt = result_type({elements, test_elements});
  KINDLE_CHECK(elements.dtype() != kBool && test_elements.dtype() != kBool && !is_complex(dt),
               "Unsupported input type encountered for isin(): ", scalar_type_name(dt));
  // a Python number (a CPU scalar) joins the other argument's device
  Device dev = elements.is_cpu() && elements.dim() == 0 ? test_elements.device() : elements.device();
  Tensor e = elements.to(dt)._to_device(dev), t = test_elements.reshape({-1}).to(dt)._to_device(dev);
  Tensor found;
  if (t.numel() == 0) {
    found = zeros(elements.sizes(), kBool, elements.device());
  } else {
    Tensor s = std::get<0>(sort(t, 0));
    Tensor pos = clamp_max(searchsorted(s, e.contiguous()), Scalar(t.numel() - 1));
    found = eq(s.index_select(0, pos.reshape({-1})).reshape(e.sizes()), e);
  }
  return invert ? logical_not(found) : found;
}

// ---- shape

Tensor atleast_1d(const Tensor& self) { return self.dim() == 0 ? self.reshape({1}) : self; }
Tensor atleast_2d(const Tensor& self) {
  if (self.dim() == 0) return self.reshape({1, 1});
  return self.dim() == 1 ? self.unsqueeze(0) : self;
}
Tensor atleast_3d(const Tensor& self) {
  if (self.dim() == 0) return self.reshape({1, 1, 1});
  if (self.dim() == 1) return self.unsqueeze(0).unsqueeze(-1);
  return self.dim() == 2 ? self.unsqueeze(-1) : self;
}

std::vector<Tensor> tensor_split(const Tensor& self, int64_t sections, int64_t dim) {
  KINDLE_CHECK(self.dim() > 0, "tensor_split expected at least a 1-dimensional tensor, but got a tensor with ",
               self.dim(), " dims");
  KINDLE_CHECK(sections > 0, "number of sections must be larger than 0, got ", sections);
  int64_t d = wrap_dim(dim, self.dim(), "tensor_split");
  int64_t n = self.size(d), base = n / sections, extra = n % sections, start = 0;
  std::vector<Tensor> out;
  for (int64_t i = 0; i < sections; ++i) {
    int64_t len = base + (i < extra ? 1 : 0);
    out.push_back(slice(self, d, start, start + len, 1));
    start += len;
  }
  return out;
}
std::vector<Tensor> tensor_split(const Tensor& self, IntArrayRef indices, int64_t dim) {
  KINDLE_CHECK(self.dim() > 0, "tensor_split expected at least a 1-dimensional tensor, but got a tensor with ",
               self.dim(), " dims");
  int64_t d = wrap_dim(dim, self.dim(), "tensor_split");
  int64_t n = self.size(d), start = 0;
  std::vector<Tensor> out;
  for (int64_t idx : indices) {
    int64_t s = clamp_bound(start, n), e = clamp_bound(idx, n);
    out.push_back(slice(self, d, s, std::max(s, e), 1));
    start = idx;
  }
  int64_t s = clamp_bound(start, n);
  out.push_back(slice(self, d, s, n, 1));
  return out;
}

namespace {
// hsplit / vsplit / dsplit: tensor_split along a fixed dim; a section count must divide it.
std::vector<Tensor> split_along(const Tensor& self, int64_t sections, int64_t min_dim, int64_t dim, const char* op) {
  KINDLE_CHECK(self.dim() >= min_dim, "torch.", op, " requires a tensor with at least ", min_dim,
               " dimension, but got a tensor with ", self.dim(), " dimensions!");
  KINDLE_CHECK(sections != 0 && self.size(dim) % sections == 0, "torch.", op,
               " attempted to split along dimension ", dim, ", but the size of the dimension ", self.size(dim),
               " is not divisible by the split_size ", sections, "!");
  return tensor_split(self, sections, dim);
}
std::vector<Tensor> split_along(const Tensor& self, IntArrayRef indices, int64_t min_dim, int64_t dim, const char* op) {
  KINDLE_CHECK(self.dim() >= min_dim, "torch.", op, " requires a tensor with at least ", min_dim,
               " dimension, but got a tensor with ", self.dim(), " dimensions!");
  return tensor_split(self, indices, dim);
}
}  // namespace

std::vector<Tensor> hsplit(const Tensor& self, int64_t sections) {
  return split_along(self, sections, 1, self.dim() == 1 ? 0 : 1, "hsplit");
}
std::vector<Tensor> hsplit(const Tensor& self, IntArrayRef indices) {
  return split_along(self, indices, 1, self.dim() == 1 ? 0 : 1, "hsplit");
}
std::vector<Tensor> vsplit(const Tensor& self, int64_t sections) { return split_along(self, sections, 2, 0, "vsplit"); }
std::vector<Tensor> vsplit(const Tensor& self, IntArrayRef indices) { return split_along(self, indices, 2, 0, "vsplit"); }
std::vector<Tensor> dsplit(const Tensor& self, int64_t sections) { return split_along(self, sections, 3, 2, "dsplit"); }
std::vector<Tensor> dsplit(const Tensor& self, IntArrayRef indices) { return split_along(self, indices, 3, 2, "dsplit"); }

Tensor column_stack(TensorList tensors) {
  KINDLE_CHECK(!tensors.empty(), "column_stack expects a non-empty TensorList");
  std::vector<Tensor> cols;
  for (const Tensor& t : tensors) cols.push_back(t.dim() <= 1 ? t.reshape({t.numel(), 1}) : t);
  return hstack(cols);
}
Tensor dstack(TensorList tensors) {
  KINDLE_CHECK(!tensors.empty(), "dstack expects a non-empty TensorList");
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(atleast_3d(t));
  return cat(parts, 2);
}

Tensor sum_to_size(const Tensor& self, IntArrayRef size) {
  int64_t lead = self.dim() - int64_t(size.size());
  bool ok = lead >= 0;
  for (size_t i = 0; ok && i < size.size(); ++i) {
    int64_t s = self.size(lead + int64_t(i));
    ok = size[i] == s || size[i] == 1;
  }
  KINDLE_CHECK(ok, "size {", size, "} is not expandable to size {", self.sizes(), "}.");
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < lead; ++i) dims.push_back(i);
  Tensor r = dims.empty() ? self : sum(self, IntArrayRef(dims));
  dims.clear();
  for (size_t i = 0; i < size.size(); ++i)
    if (size[i] == 1 && r.size(int64_t(i)) != 1) dims.push_back(int64_t(i));
  return dims.empty() ? r : sum(r, IntArrayRef(dims), true);
}

// ---- scatters: a copy of self with one part replaced

Tensor index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  Tensor o = self.clone();
  o.index_copy_(dim, index, source);
  return o;
}
Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  Tensor o = self.clone();
  o.index_fill_(dim, index, value);
  return o;
}
Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  Tensor o = self.clone();
  o.index_fill_(dim, index, value);
  return o;
}
Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  KINDLE_CHECK(mask.dtype() == kBool, "masked_scatter_ only supports boolean masks, but got mask with dtype ", mask.dtype());
  DimVector b = broadcast_shapes(self.sizes(), mask.sizes(), "masked_scatter");
  Tensor o = self.expand(b).clone().contiguous();
  o.masked_scatter_(mask, source);
  return o;
}

namespace {
Tensor scatter_into(const Tensor& self, const Tensor& src, const Tensor& part, const char* op) {
  KINDLE_CHECK(src.sizes() == part.sizes(), op, ": expected src to have a size equal to the slice of self. src size = ",
               src.sizes(), ", slice size = ", part.sizes());
  part.copy_(src);
  return part;
}
}  // namespace

Tensor select_scatter(const Tensor& self, const Tensor& src, int64_t dim, int64_t index) {
  Tensor o = self.clone();
  scatter_into(o, src, o.select(dim, index), "select_scatter");
  return o;
}
Tensor slice_scatter(const Tensor& self, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> end, int64_t step) {
  Tensor o = self.clone();
  scatter_into(o, src, slice(o, dim, start, end, step), "slice_scatter");
  return o;
}
Tensor diagonal_scatter(const Tensor& self, const Tensor& src, int64_t offset, int64_t dim1, int64_t dim2) {
  Tensor o = self.clone();
  scatter_into(o, src, o.diagonal(offset, dim1, dim2), "diagonal_scatter");
  return o;
}

// put_: index into self as if it were flattened (row-major), whatever its strides.
const Tensor& put_(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  KINDLE_CHECK(index.dtype() == kInt64, "put_(): Expected a long tensor for index, but got ", index.dtype());
  KINDLE_CHECK(source.dtype() == self.dtype(), "put_(): self and source expected to have the same dtype, but got self.dtype = ",
               self.dtype(), " and source.dtype = ", source.dtype());
  KINDLE_CHECK_INDEX(index.numel() == source.numel(), "put_(): Expected source and index to have the same number of elements, but got source.numel() = ",
               source.numel(), ", index.numel() = ", index.numel());
  int64_t n = self.numel();
  Tensor idx = index.reshape({-1});
  if (idx.numel() > 0) {
    KINDLE_CHECK_INDEX(n > 0, "put_(): Tried to put elements into an empty tensor");
  }
  if (idx.numel() > 0 && !idx.is_meta()) {
    int64_t lo = amin(idx).item().to_int(), hi = amax(idx).item().to_int();
    KINDLE_CHECK_INDEX(lo >= -n && hi < n, "out of range: tried to access index ", lo < -n ? lo : hi, " on a tensor of ",
                       n, " elements.");
  }
  if (self.is_contiguous()) {
    index_put_(self.view({-1}), {std::optional<Tensor>(idx)}, source.reshape({-1}), accumulate);
    return self;
  }
  Tensor flat = self.reshape({-1}).clone();
  index_put_(flat, {std::optional<Tensor>(idx)}, source.reshape({-1}), accumulate);
  self.copy_(flat.view(self.sizes()));
  return self;
}
Tensor put(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  Tensor o = self.clone();
  put_(o, index, source, accumulate);
  return o;
}

// The main diagonal of a matrix (or of an n-cube), and with wrap, its continuation below a
// tall matrix's first square (every width+1 elements of the row-major storage).
const Tensor& fill_diagonal_(const Tensor& self, const Scalar& fill_value, bool wrap) {
  int64_t nd = self.dim();
  KINDLE_CHECK(nd >= 2, "dimensions must larger than 1");
  int64_t h = self.size(0), w = self.size(1);
  if (nd > 2)
    for (int64_t i = 1; i < nd; ++i)
      KINDLE_CHECK(self.size(i) == h, "all dimensions of input must be of equal length");
  if (autograd::forward_ad::active() && autograd::forward_ad::any_tangent(self)) {
    // one write of the whole tensor, so that its tangent (zero on the diagonal) follows
    Tensor marked = zeros(self.sizes(), kBool, self.device());
    fill_diagonal_(marked, true, wrap);
    return self.copy_(where(marked, scalar_tensor_of(fill_value, self.dtype(), self.device()), self));
  }
  int64_t stride = 0;
  for (int64_t i = 0; i < nd; ++i) stride += self.stride(i);
  int64_t n = std::min(h, w), offset = self.storage_offset();
  self.as_strided({n}, {stride}, offset).fill_(fill_value);
  if (wrap && nd == 2 && h > w + 1) {
    int64_t step = w + 1, more = (self.numel() + step - 1) / step - n;
    self.as_strided({more}, {stride}, offset + self.stride(0) * (w + 1)).fill_(fill_value);
  }
  return self;
}

// ---- matrix products with an input term

Tensor addr(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const Scalar& beta, const Scalar& alpha) {
  KINDLE_CHECK(vec1.dim() == 1, "addr: Expected 1-D argument vec1, but got ", vec1.dim(), "-D");
  KINDLE_CHECK(vec2.dim() == 1, "addr: Expected 1-D argument vec2, but got ", vec2.dim(), "-D");
  return beta_plus_alpha(self, outer(vec1, vec2), beta, alpha, "addr");
}
const Tensor& addr_(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const Scalar& beta, const Scalar& alpha) {
  return assign_result(self, addr(input_of(self), vec1, vec2, beta, alpha), "addr_");
}
// The sum of the batch of products is one product of the batches laid side by side.
Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta, const Scalar& alpha) {
  KINDLE_CHECK(batch1.dim() == 3, "batch1 must be a 3D tensor");
  KINDLE_CHECK(batch2.dim() == 3, "batch2 must be a 3D tensor");
  KINDLE_CHECK(batch1.size(0) == batch2.size(0), "batch1 and batch2 must have same number of batches, got ",
               batch1.size(0), " and ", batch2.size(0));
  KINDLE_CHECK(batch1.size(2) == batch2.size(1), "Incompatible matrix sizes for bmm (", batch1.size(1), "x",
               batch1.size(2), " and ", batch2.size(1), "x", batch2.size(2), ")");
  int64_t b = batch1.size(0), n = batch1.size(1), m = batch1.size(2), p = batch2.size(2);
  Tensor prod = mm(batch1.transpose(0, 1).reshape({n, b * m}), batch2.reshape({b * m, p}));
  return beta_plus_alpha(self, prod, beta, alpha, "addbmm");
}
const Tensor& addbmm_(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta, const Scalar& alpha) {
  return assign_result(self, addbmm(input_of(self), batch1, batch2, beta, alpha), "addbmm_");
}

// ---- statistics

// Rows are variables, columns observations; fweights (integer repeat counts) and aweights
// (importance) weight the observations, as numpy.cov.
Tensor cov(const Tensor& self, int64_t correction, const std::optional<Tensor>& fweights,
           const std::optional<Tensor>& aweights) {
  KINDLE_CHECK(self.dim() < 3, "cov(): expected input to have two or fewer dimensions but got an input with ",
               self.dim(), " dimensions");
  KINDLE_CHECK(self.dtype() != kBool, "cov(): bool dtype is not supported for input");
  Tensor x = self.dim() < 2 ? self.reshape({1, -1}) : self;
  if (!x.is_floating_point() && !x.is_complex()) x = x.to(default_dtype());
  int64_t n = x.size(1);
  std::optional<Tensor> w;
  if (fweights) {
    const Tensor& f = *fweights;
    KINDLE_CHECK(f.dim() <= 1, "cov(): expected fweights to have one or fewer dimensions but got fweights with ", f.dim(), " dimensions");
    KINDLE_CHECK(is_integral(f.dtype(), false), "cov(): expected fweights to have integral dtype but got fweights with ",
                 scalar_type_name(f.dtype()), " dtype");
    KINDLE_CHECK(f.numel() == n, "cov(): expected fweights to have the same numel as there are observations in the input but got ",
                 f.numel(), " != ", n);
    KINDLE_CHECK(n == 0 || amin(f).item().to_int() >= 0, "cov(): fweights cannot be negative");
    w = f;
  }
  if (aweights) {
    const Tensor& a = *aweights;
    KINDLE_CHECK(a.dim() <= 1, "cov(): expected aweights to have one or fewer dimensions but got aweights with ", a.dim(), " dimensions");
    KINDLE_CHECK(a.is_floating_point(), "cov(): expected aweights to have floating point dtype but got aweights with ",
                 scalar_type_name(a.dtype()), " dtype");
    KINDLE_CHECK(a.numel() == n, "cov(): expected aweights to have the same numel as there are observations in the input but got ",
                 a.numel(), " != ", n);
    KINDLE_CHECK(n == 0 || amin(a).item().to_double() >= 0, "cov(): aweights cannot be negative");
    w = w ? *w * a : a;
  }
  Tensor w_sum = w ? sum(*w) : scalar_tensor_of(n, kInt64);
  Tensor avg = w ? sum(x * *w, IntArrayRef{1}) / w_sum : mean(x, IntArrayRef{1});
  Tensor norm;
  if (w && aweights && correction != 0)
    norm = w_sum - sum(*w * *aweights) * Scalar(correction) / w_sum;
  else
    norm = w_sum - Scalar(correction);
  if (norm.item().to_double() <= 0) norm = zeros_like(norm);  // inf/nan, as torch (which also warns)
  Tensor xc = x - avg.unsqueeze(1);
  Tensor xw = w ? xc * *w : xc;
  Tensor c = mm(xc, xw.transpose(0, 1).conj());
  return (c / norm).squeeze();
}

Tensor corrcoef(const Tensor& self) {
  KINDLE_CHECK(self.dim() <= 2, "corrcoef(): expected input to have two or fewer dimensions but got an input with ",
               self.dim(), " dimensions");
  Tensor c = cov(self);
  if (c.dim() == 0) return c / c;
  Tensor d = c.diagonal();
  Tensor sd = sqrt(d.is_complex() ? real(d) : d);
  c = c / sd.unsqueeze(1);
  c = c / sd.unsqueeze(0);
  if (c.is_complex()) return complex(clamp(real(c), Scalar(-1), Scalar(1)), clamp(imag(c), Scalar(-1), Scalar(1)));
  return clamp(c, Scalar(-1), Scalar(1));
}

// histogram: counts (or weight sums) per bin; a value on the last edge falls in the last bin.
namespace {
void check_histogram_dtype(const Tensor& self) {
  KINDLE_CHECK_NOT_IMPLEMENTED(!(self.dtype() == kFloat16 || self.dtype() == kBFloat16),
                               "\"histogramdd\" not implemented for '", scalar_type_name(self.dtype()), "'");
}
}  // namespace
std::tuple<Tensor, Tensor> _histogram(const Tensor& self, const Tensor& bins, const std::optional<Tensor>& weight, bool density) {
  check_histogram_dtype(self);
  KINDLE_CHECK(self.is_floating_point(), "torch.histogram: input tensor and bins tensors should have the same dtype, but got input ",
               self.dtype(), " and bins ", bins.dtype());
  KINDLE_CHECK(bins.dtype() == self.dtype(), "torch.histogram: input tensor and bins tensors should have the same dtype, but got input ",
               self.dtype(), " and bins ", bins.dtype());
  KINDLE_CHECK(bins.dim() == 1, "torch.histogram: bins tensor should have one dimension, but got ", bins.dim(), " dimensions in the bins tensor");
  KINDLE_CHECK(bins.numel() > 0, "torch.histogram: bins tensor should have at least 1 element, but got ", bins.numel(), " elements");
  if (weight) {
    KINDLE_CHECK(weight->dtype() == self.dtype(), "torch.histogram: if weight tensor is provided it should have the same dtype as the input tensor");
    KINDLE_CHECK(weight->sizes() == self.sizes(), "torch.histogram: if weight tensor is provided it should have the same shape as the input tensor");
  }
  int64_t nb = bins.numel() - 1;
  Tensor edges = bins.contiguous();
  Tensor x = self.reshape({-1});
  Tensor hist = zeros({std::max<int64_t>(nb, 0)}, self.dtype(), self.device());
  if (nb > 0 && x.numel() > 0) {
    Tensor lo = edges.select(0, 0), hi = edges.select(0, nb);
    Tensor inside = logical_and(ge(x, lo), le(x, hi));
    Tensor pos = clamp(searchsorted(edges, x.contiguous(), false, true) - Scalar(1), Scalar(0), Scalar(nb - 1));
    Tensor w = weight ? weight->reshape({-1}) : ones_like(x);
    hist = hist.index_add(0, pos.masked_select(inside), w.masked_select(inside));
  }
  if (density && nb > 0) {
    Tensor widths = edges.narrow(0, 1, nb) - edges.narrow(0, 0, nb);
    hist = hist / (sum(hist) * widths);
  }
  return {hist, edges};
}
std::tuple<Tensor, Tensor> _histogram(const Tensor& self, int64_t bins, std::optional<double> min, std::optional<double> max,
                                      const std::optional<Tensor>& weight, bool density) {
  check_histogram_dtype(self);
  KINDLE_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  KINDLE_CHECK(self.is_floating_point(), "torch.histogram: input tensor and bins tensors should have the same dtype, but got input ",
               self.dtype(), " and bins ", self.dtype());
  double lo = 0, hi = 0;
  if (min && max) {
    lo = *min;
    hi = *max;
  } else if (self.numel() > 0) {
    lo = amin(self).item().to_double();
    hi = amax(self).item().to_double();
  } else {
    hi = 1;  // an empty input: the unit interval, as torch
  }
  KINDLE_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histogram(): range of [", lo, ", ", hi, "] is not finite");
  KINDLE_CHECK(lo <= hi, "torch.histogram(): min should not exceed max, but got min ", lo, " max ", hi);
  if (lo == hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  return _histogram(self, linspace(lo, hi, bins + 1, self.dtype(), self.device()), weight, density);
}

// Runs of equal neighbours collapse to one value (along dim: equal slices).
std::tuple<Tensor, Tensor, Tensor> _unique_consecutive(const Tensor& self, bool return_inverse, bool return_counts,
                                                       std::optional<int64_t> dim) {
  (void)return_inverse;
  (void)return_counts;
  KINDLE_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"", dim ? "unique_dim" : "unique", "\" not implemented for '",
                               scalar_type_name(self.dtype()), "'");
  Tensor x = dim ? self : self.reshape({-1});
  int64_t d = dim ? wrap_dim(*dim, self.dim(), "unique_consecutive") : 0;
  KINDLE_CHECK(!dim || self.dim() > 0, "unique_consecutive: dim given for a 0-d tensor");
  int64_t n = x.size(d);
  if (n == 0) {
    Tensor inverse = dim ? zeros({0}, kInt64, self.device()) : zeros(self.sizes(), kInt64, self.device());
    return {x, inverse, zeros({0}, kInt64, self.device())};
  }
  Tensor diff_ = ne(x.narrow(d, 1, n - 1), x.narrow(d, 0, n - 1));
  if (dim && x.dim() > 1) diff_ = any(diff_.movedim(IntArrayRef{d}, IntArrayRef{0}).reshape({n - 1, -1}), IntArrayRef{1});
  Tensor starts = cat({ones({1}, kBool, self.device()), diff_.reshape({-1})}, 0);
  Tensor where_ = nonzero(starts).reshape({-1});
  Tensor out = x.index_select(d, where_);
  Tensor inverse = cumsum(starts, 0) - Scalar(1);
  if (!dim) inverse = inverse.reshape(self.sizes());
  Tensor counts = diff(cat({where_, scalar_tensor_of(n, kInt64, self.device()).reshape({1})}, 0));
  return {out, inverse, counts};
}

}  // namespace kindle
