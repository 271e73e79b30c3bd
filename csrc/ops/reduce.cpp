// Reductions: the reduced dims are folded into one (strided) dim and the kept dims into M
// outputs; the kernel does the rest (deterministic blocking, see cpu/reduce.cpp).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kindle/operators.h"
#include "kindle/warning.h"
#include "native_ops.h"
#include "ops/kernels.h"
#include "ops/scan_kernels.h"

namespace kindle {
namespace {

std::vector<bool> reduced_mask(const Tensor& self, OptionalIntArrayRef dim, const char* op) {
  int64_t nd = self.dim();
  std::vector<bool> mask(size_t(std::max<int64_t>(nd, 1)), !dim || dim->empty());
  if (dim)
    for (int64_t d : *dim) {
      int64_t w = wrap_dim(d, nd, op);
      KINDLE_CHECK(!mask[w], op, ": dim ", w, " appears multiple times in the list of dims");
      mask[w] = true;
    }
  return mask;
}

DimVector out_shape(const Tensor& self, const std::vector<bool>& mask, bool keepdim) {
  DimVector s;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (!mask[i]) s.push_back(self.sizes()[i]);
    else if (keepdim) s.push_back(1);
  }
  return s;
}

// Runs one reduction; returns a tensor of the output shape.
Tensor reduce(const Tensor& self_in, OptionalIntArrayRef dim, bool keepdim, ReduceOp op, DType out_dtype, const char* name) {
  auto mask = reduced_mask(self_in, dim, name);
  DimVector oshape = out_shape(self_in, mask, keepdim);
  Tensor self = self_in;
  if (self.numel() == 0) {  // nothing to read: the identity of the reduction
    Tensor out = empty_tensor(oshape, out_dtype, self.device());
    out.fill_(op == ReduceOp::All ? Scalar(true) : op == ReduceOp::Any ? Scalar(false)
              : op == ReduceOp::Prod ? Scalar(1) : Scalar(0));
    return out;
  }
  ReducePlan pl;
  for (int attempt = 0; attempt < 2; ++attempt) {
    pl.kept_sizes.clear(); pl.kept_strides.clear();
    DimVector rs, rst;
    for (int64_t i = 0; i < self.dim(); ++i) {
      int64_t sz = self.sizes()[i], st = self.strides()[i];
      bool red = attempt == 0 ? mask[i] : i >= self.dim() - int64_t(std::count(mask.begin(), mask.end(), true));
      auto& S = red ? rs : pl.kept_sizes;
      auto& T = red ? rst : pl.kept_strides;
      if (sz == 1) continue;
      if (!S.empty() && T.back() == st * sz) { S.back() *= sz; T.back() = st; continue; }
      S.push_back(sz); T.push_back(st);
    }
    if (rs.size() <= 1) {
      pl.R = rs.empty() ? 1 : rs[0];
      pl.rstride = rs.empty() ? 1 : rst[0];
      break;
    }
    KINDLE_INTERNAL_ASSERT(attempt == 0);
    // The reduced dims do not fold into one: lay them out last and contiguous.
    DimVector perm;
    for (int64_t i = 0; i < self.dim(); ++i) if (!mask[i]) perm.push_back(i);
    for (int64_t i = 0; i < self.dim(); ++i) if (mask[i]) perm.push_back(i);
    self = contiguous(permute(self, perm));
  }
  pl.M = numel_of(pl.kept_sizes);
  if (pl.kept_sizes.empty()) { pl.kept_sizes.push_back(1); pl.kept_strides.push_back(0); }
  pl.input = &self;
  pl.out = empty_tensor({pl.M}, out_dtype, self.device());
  reduce_stub[self.device()](pl, op);  // non-empty input: M >= 1 and R >= 1
  return pl.out.view(oshape);
}

DType sum_dtype(const Tensor& self, std::optional<DType> dtype) {
  if (dtype) return *dtype;
  return is_integral(self.dtype(), true) ? kInt64 : self.dtype();
}

int64_t reduced_count(const Tensor& self, OptionalIntArrayRef dim) {
  auto mask = reduced_mask(self, dim, "mean");
  int64_t n = 1;
  for (int64_t i = 0; i < self.dim(); ++i) if (mask[i]) n *= self.sizes()[i];
  return n;
}

// Moves `dim` last and makes the tensor contiguous, for the row kernels.
Tensor rows_last(const Tensor& self, int64_t d) {
  if (self.dim() == 0) return self.reshape({1});
  return contiguous(movedim(self, {d}, {-1}));
}
Tensor rows_back(const Tensor& t, const Tensor& like, int64_t d) {
  if (like.dim() == 0) return t.reshape({});
  return movedim(t, {-1}, {d});
}

}  // namespace

Tensor native_sum(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  DType dt = sum_dtype(self, dtype);
  Tensor in = dtype && *dtype != self.dtype() && !(is_integral(self.dtype(), true) && *dtype == kInt64) ? self.to(*dtype) : self;
  return reduce(in, dim, keepdim, ReduceOp::Sum, dt, "sum");
}
Tensor nansum(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  KINDLE_CHECK(!self.is_complex(), "nansum on CPU does not support complex inputs");
  if (!self.is_floating_point()) return sum(self, dim, keepdim, dtype);
  return sum(where(isnan(self), scalar_tensor_of(0, self.dtype()), self), dim, keepdim, dtype);
}

Tensor native_mean(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  DType dt = dtype.value_or(self.dtype());
  KINDLE_CHECK(is_floating_point(dt) || is_complex(dt), "mean(): could not infer output dtype. Input dtype must be either a floating "
               "point or complex dtype. Got: ", self.dtype());
  if (is_floating_point(self.dtype()) && itemsize(dt) < itemsize(self.dtype()))
    return mean(self, dim, keepdim, std::nullopt).to(dt);  // averaged, then rounded once (PyTorch)
  Tensor s = sum(self.to(dt), dim, keepdim, dt);
  int64_t n = reduced_count(self, dim);
  return div(s, scalar_tensor_of(double(n), dt));
}

Tensor native_prod(const Tensor& self, std::optional<int64_t> dim, bool keepdim, std::optional<DType> dtype) {
  DType dt = sum_dtype(self, dtype);
  Tensor in = dtype && *dtype != self.dtype() && !(is_integral(self.dtype(), true) && *dtype == kInt64) ? self.to(*dtype) : self;
  if (!dim) return reduce(in, std::nullopt, false, ReduceOp::Prod, dt, "prod");
  return reduce(in, IntArrayRef{*dim}, keepdim, ReduceOp::Prod, dt, "prod");
}

static Tensor minmax_reduce(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, bool is_max, const char* name) {
  KINDLE_CHECK(!self.is_complex(), name, "(): does not support complex input");
  KINDLE_CHECK(self.numel() > 0 || (dim && !dim->empty()), name, "(): Expected reduction dim to be specified for "
               "input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  if (self.numel() == 0) {
    auto mask = reduced_mask(self, dim, name);
    for (int64_t i = 0; i < self.dim(); ++i)
      KINDLE_CHECK_AS(IndexError, !mask[i] || self.sizes()[i] != 0, name, "(): Expected reduction dim ", i,
                         " to have non-zero size (the input has shape ", self.sizes(), ")");
  }
  return reduce(self, dim, keepdim, is_max ? ReduceOp::Max : ReduceOp::Min, self.dtype(), name);
}
Tensor native_amax(const Tensor& self, IntArrayRef dim, bool keepdim) { return minmax_reduce(self, dim, keepdim, true, "amax"); }
Tensor native_amin(const Tensor& self, IntArrayRef dim, bool keepdim) { return minmax_reduce(self, dim, keepdim, false, "amin"); }
Tensor native_max(const Tensor& self) {
  KINDLE_CHECK(self.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() == 0. "
               "Specify the reduction dim with the 'dim' argument.");
  return minmax_reduce(self, std::nullopt, false, true, "max");
}
Tensor native_min(const Tensor& self) {
  KINDLE_CHECK(self.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() == 0. "
               "Specify the reduction dim with the 'dim' argument.");
  return minmax_reduce(self, std::nullopt, false, false, "min");
}
Tensor max(const Tensor& self, const Tensor& other) { return maximum(self, other); }
Tensor min(const Tensor& self, const Tensor& other) { return minimum(self, other); }

static std::tuple<Tensor, Tensor> arg_reduce(const Tensor& self, int64_t dim, bool keepdim, bool is_max, bool want_values,
                                             const char* name) {
  KINDLE_CHECK(!self.is_complex(), name, "(): does not support complex input");
  KINDLE_CHECK(want_values || self.dtype() != kBool, name, ": \"", name, "_cpu\" not implemented for 'Bool'");
  int64_t d = wrap_dim(dim, self.dim(), name);
  KINDLE_CHECK_INDEX(self.dim() == 0 || self.sizes()[d] > 0, name, "(): Expected reduction dim ", d,
                     " to have non-zero size (the input has shape ", self.sizes(), ")");
  Tensor rows = rows_last(self, d);
  DimVector shape(rows.sizes());
  shape.pop_back();
  Tensor values = want_values ? empty_tensor(shape, self.dtype(), self.device()) : Tensor();
  Tensor indices = empty_tensor(shape, kInt64, self.device());
  if (indices.numel()) arg_reduce_stub[self.device()](rows, values, indices, is_max);
  if (keepdim && self.dim() > 0) {
    if (values.defined()) values = values.unsqueeze(d);
    indices = indices.unsqueeze(d);
  }
  return {values, indices};
}
std::tuple<Tensor, Tensor> native_max(const Tensor& self, int64_t dim, bool keepdim) { return arg_reduce(self, dim, keepdim, true, true, "max"); }
std::tuple<Tensor, Tensor> native_min(const Tensor& self, int64_t dim, bool keepdim) { return arg_reduce(self, dim, keepdim, false, true, "min"); }
std::tuple<Tensor, Tensor> aminmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  KINDLE_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"aminmax_cpu\" not implemented for '", scalar_type_name(self.dtype()), "'");
  if (!dim) return {amin(self, {}, keepdim), amax(self, {}, keepdim)};
  return {amin(self, IntArrayRef{*dim}, keepdim), amax(self, IntArrayRef{*dim}, keepdim)};
}
Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return std::get<1>(arg_reduce(self.reshape({-1}), 0, false, true, false, "argmax")).reshape(keepdim ? DimVector(size_t(self.dim()), 1) : DimVector());
  return std::get<1>(arg_reduce(self, *dim, keepdim, true, false, "argmax"));
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return std::get<1>(arg_reduce(self.reshape({-1}), 0, false, false, false, "argmin")).reshape(keepdim ? DimVector(size_t(self.dim()), 1) : DimVector());
  return std::get<1>(arg_reduce(self, *dim, keepdim, false, false, "argmin"));
}

static double correction_of(std::optional<bool> unbiased, const std::optional<Scalar>& correction, const char* name) {
  KINDLE_CHECK(!(unbiased && correction), name, ": cannot specify both unbiased and correction");
  if (correction) return correction->to_double();
  return unbiased.value_or(true) ? 1.0 : 0.0;
}
// var and mean in float64, the dtype every floating input is reduced in: 16-bit intermediates
// overflow, and a float32 mean is not exact, so identical values would get a tiny nonzero variance
// (PyTorch's Welford pass gives exactly 0). std takes the root before rounding to the input
// dtype, so a variance past the dtype's range still gives a finite deviation, as in PyTorch.
static std::tuple<Tensor, Tensor> var_mean_f64(const Tensor& self_in, OptionalIntArrayRef dim, std::optional<bool> unbiased,
                                               bool keepdim, const std::optional<Scalar>& correction, const char* op,
                                               bool warned_dof = false) {
  double c = correction_of(unbiased, correction, op);
  const double count = double(reduced_count(self_in, dim));
  // torch's warning (the result is nan or inf); not for the population statistics the norms take
  // internally over empty groups
  if (count - c <= 0 && !warned_dof && !(c == 0 && count == 0))
    warn(std::string(op) + "(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
         "factor (input numel divided by output numel).");
  if (self_in.is_complex()) {  // the variance of the real parts plus that of the imaginary parts
    auto [vr, mr] = var_mean_f64(real(self_in), dim, unbiased, keepdim, correction, op, true);
    auto [vi, mi] = var_mean_f64(imag(self_in), dim, unbiased, keepdim, correction, op, true);
    return {add(vr, vi), complex(mr, mi)};
  }
  KINDLE_CHECK(self_in.is_floating_point(), op, "(): expected a floating point tensor, got ", self_in.dtype());
  Tensor self = self_in.to(kFloat64);
  // float64 input: shifted by each slice's first element, so that a slice of equal values has a
  // mean of exactly that value and a variance of exactly 0 (float32 input is exact enough in float64)
  Tensor pivot;
  if (self_in.dtype() == kFloat64 && self.numel()) {
    pivot = self;
    for (int64_t d = 0; d < self.dim(); ++d) {
      bool reduced = !dim || dim->empty();
      if (!reduced)
        for (int64_t r : *dim) reduced = reduced || wrap_dim(r, self.dim(), op) == d;
      if (reduced) pivot = pivot.narrow(d, 0, 1);
    }
    self = sub(self, pivot);
  }
  Tensor m = mean(self, dim, true);
  Tensor dev = sub(self, m);
  if (pivot.defined()) m = add(m, pivot);
  Tensor ss = reduce(dev, dim, keepdim, ReduceOp::SumSq, kFloat64, op);
  double n = double(reduced_count(self, dim));
  Tensor v = div(ss, scalar_tensor_of(std::max(0.0, n - c), kFloat64));
  return {v, m.reshape(v.sizes())};
}
std::tuple<Tensor, Tensor> native_var_mean(const Tensor& self, OptionalIntArrayRef dim, std::optional<bool> unbiased, bool keepdim,
                                    const std::optional<Scalar>& correction) {
  auto [v, m] = var_mean_f64(self, dim, unbiased, keepdim, correction, "var");
  return {v.to(to_real_value_type(self.dtype())), m.to(self.dtype())};
}
Tensor var(const Tensor& self, OptionalIntArrayRef dim, std::optional<bool> unbiased, bool keepdim, const std::optional<Scalar>& correction) {
  return std::get<0>(var_mean(self, dim, unbiased, keepdim, correction));
}
Tensor native_std(const Tensor& self, OptionalIntArrayRef dim, std::optional<bool> unbiased, bool keepdim, const std::optional<Scalar>& correction) {
  return sqrt(std::get<0>(var_mean_f64(self, dim, unbiased, keepdim, correction, "std"))).to(to_real_value_type(self.dtype()));
}
std::tuple<Tensor, Tensor> native_std_mean(const Tensor& self, OptionalIntArrayRef dim, std::optional<bool> unbiased, bool keepdim,
                                    const std::optional<Scalar>& correction) {
  auto [v, m] = var_mean_f64(self, dim, unbiased, keepdim, correction, "std_mean");
  return {sqrt(v).to(to_real_value_type(self.dtype())), m.to(self.dtype())};
}

Tensor native_norm(const Tensor& self, const std::optional<Scalar>& p, OptionalIntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  KINDLE_CHECK(!self.is_complex() || !dtype || is_complex(*dtype), "linalg.vector_norm: dtype should be complex for "
               "complex inputs, but got ", *dtype);
  Tensor x = dtype ? self.to(*dtype) : self;
  if (x.is_complex()) x = abs(x);  // a norm of complex numbers is that of their magnitudes
  KINDLE_CHECK(x.is_floating_point(), "norm(): input dtype should be floating point, but got ", x.dtype());
  if (x.dtype() == kFloat16 || x.dtype() == kBFloat16) return norm(x.to(kFloat32), p, dim, keepdim, std::nullopt).to(x.dtype());
  double pv = p ? p->to_double() : 2.0;
  if (pv == 2.0) return sqrt(reduce(x, dim, keepdim, ReduceOp::SumSq, x.dtype(), "norm"));
  if (pv == 1.0) return sum(abs(x), dim, keepdim);
  if (std::isinf(pv)) return pv > 0 ? amax(abs(x), dim ? *dim : IntArrayRef(), keepdim) : amin(abs(x), dim ? *dim : IntArrayRef(), keepdim);
  if (pv == 0.0) return sum(ne(x, scalar_tensor_of(0, x.dtype())).to(x.dtype()), dim, keepdim);
  return pow(sum(pow(abs(x), scalar_tensor_of(pv, x.dtype())), dim, keepdim), scalar_tensor_of(1.0 / pv, x.dtype()));
}

Tensor native_logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  if (self.is_complex()) {  // shifted by the largest real part
    if (self.numel() == 0) return log(sum(exp(self), dim, keepdim));
    Tensor m = amax(real(self), dim, true);
    m = where(isinf(m), zeros_like(m), m);
    Tensor r = add(log(sum(exp(sub(self, m)), dim, true)), m);
    return keepdim ? r : r.squeeze(dim.empty() ? OptionalIntArrayRef(std::nullopt) : OptionalIntArrayRef(dim));
  }
  Tensor x = self.is_floating_point() ? self : self.to(default_dtype());
  if (x.numel() == 0) return log(sum(exp(x), dim, keepdim));
  Tensor m = amax(x, dim, true);
  m = where(isinf(m), scalar_tensor_of(0, x.dtype()), m);
  Tensor r = add(log(sum(exp(sub(x, m)), dim, true)), m);
  return keepdim ? r : r.squeeze(dim.empty() ? OptionalIntArrayRef(std::nullopt) : OptionalIntArrayRef(dim));
}

static Tensor softmax_impl(const Tensor& self, int64_t dim, std::optional<DType> dtype, bool log, const char* name) {
  Tensor x = dtype ? self.to(*dtype) : self;
  int64_t d = wrap_dim(dim, x.dim(), name);
  if (x.numel() == 0) return empty_tensor(x.sizes(), x.dtype(), x.device());  // any dtype, as in PyTorch
  KINDLE_CHECK_NOT_IMPLEMENTED(x.is_floating_point(), name, ": expected a floating point tensor, got ", x.dtype());
  Tensor rows = rows_last(x, d);
  Tensor out = empty_tensor(rows.sizes(), x.dtype(), x.device());
  if (out.numel()) softmax_stub[x.device()](rows, out, log);
  return contiguous(rows_back(out, x, d));
}
Tensor native_softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype) { return softmax_impl(self, dim, dtype, false, "softmax"); }
Tensor native_log_softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype) { return softmax_impl(self, dim, dtype, true, "log_softmax"); }

static Tensor scan(const Tensor& self, int64_t dim, std::optional<DType> dtype, bool prod, const char* name) {
  if (!prod && self.is_complex() && !dtype)  // sums of the parts
    return complex(scan(real(self), dim, dtype, false, name), scan(imag(self), dim, dtype, false, name));
  if (prod && (self.is_complex() || (dtype && is_complex(*dtype)))) {
    // complex products: one multiplication per step along dim (the scan kernels are real)
    Tensor out = (dtype ? self.to(*dtype) : self).clone();
    if (out.dim() == 0) return out;
    int64_t d = wrap_dim(dim, out.dim(), name);
    for (int64_t i = 1; i < out.size(d); ++i) out.select(d, i).mul_(out.select(d, i - 1));
    return out;
  }
  int64_t d = wrap_dim(dim, self.dim(), name);
  DType dt = sum_dtype(self, dtype);
  KINDLE_CHECK_NOT_IMPLEMENTED(dt != kBool || self.dim() == 0 || self.numel() == 0, name, ": \"", name, "_out_cpu\" not implemented for 'Bool'");
  Tensor x = dtype && *dtype != self.dtype() ? self.to(*dtype) : self;
  Tensor rows = rows_last(x, d);
  Tensor out = empty_tensor(rows.sizes(), dt, x.device());
  if (out.numel()) scan_stub[x.device()](rows, out, prod);
  return contiguous(rows_back(out, x, d));
}
Tensor native_cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) { return scan(self, dim, dtype, false, "cumsum"); }
Tensor native_cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype) { return scan(self, dim, dtype, true, "cumprod"); }

static std::tuple<Tensor, Tensor> cum_extreme(const Tensor& self, int64_t dim, bool is_max, const char* name) {
  int64_t d = wrap_dim(dim, self.dim(), name);
  Tensor rows = rows_last(self, d);
  Tensor values = empty_tensor(rows.sizes(), self.dtype(), self.device());
  Tensor indices = empty_tensor(rows.sizes(), kInt64, self.device());
  if (values.numel()) cum_extreme_stub[self.device()](rows, values, indices, is_max);
  return {contiguous(rows_back(values, self, d)), contiguous(rows_back(indices, self, d))};
}
std::tuple<Tensor, Tensor> native_cummax(const Tensor& self, int64_t dim) { return cum_extreme(self, dim, true, "cummax"); }
std::tuple<Tensor, Tensor> native_cummin(const Tensor& self, int64_t dim) { return cum_extreme(self, dim, false, "cummin"); }

Tensor native_logcumsumexp(const Tensor& self, int64_t dim) {
  KINDLE_CHECK_NOT_IMPLEMENTED(self.is_floating_point() || self.is_complex(),
                               "\"logcumsumexp_out_cpu\" not implemented for '", self.dtype(), "'");
  int64_t d = wrap_dim(dim, self.dim(), "logcumsumexp");
  Tensor rows = rows_last(self, d);
  Tensor out = empty_tensor(rows.sizes(), self.dtype(), self.device());
  if (out.numel()) logcumsumexp_stub[self.device()](rows, out);
  return contiguous(rows_back(out, self, d));
}

// all/any give bool, except for uint8 input, which gives uint8 (as in PyTorch).
Tensor all(const Tensor& self, OptionalIntArrayRef dim, bool keepdim) {
  if (self.is_complex()) return all(ne(self, scalar_tensor_of(0, self.dtype())), dim, keepdim);
  Tensor r = reduce(self, dim, keepdim, ReduceOp::All, kBool, "all");
  return self.dtype() == kUInt8 ? r.to(kUInt8) : r;
}
Tensor any(const Tensor& self, OptionalIntArrayRef dim, bool keepdim) {
  if (self.is_complex()) return any(ne(self, scalar_tensor_of(0, self.dtype())), dim, keepdim);
  Tensor r = reduce(self, dim, keepdim, ReduceOp::Any, kBool, "any");
  return self.dtype() == kUInt8 ? r.to(kUInt8) : r;
}
Tensor count_nonzero(const Tensor& self, OptionalIntArrayRef dim) {
  return reduce(ne(self, scalar_tensor_of(0, self.dtype())), dim, false, ReduceOp::Sum, kInt64, "count_nonzero");
}

std::tuple<Tensor, Tensor> native_sort(const Tensor& self, int64_t dim, bool descending, bool stable) {
  KINDLE_CHECK(!self.is_complex(), "Sort does not support complex dtypes on CPU");
  int64_t d = wrap_dim(dim, self.dim(), "sort");
  Tensor rows = rows_last(self, d);
  Tensor values = empty_tensor(rows.sizes(), self.dtype(), self.device());
  Tensor indices = empty_tensor(rows.sizes(), kInt64, self.device());
  if (values.numel()) sort_stub[self.device()](rows, values, indices, descending);
  return {contiguous(rows_back(values, self, d)), contiguous(rows_back(indices, self, d))};
}
Tensor argsort(const Tensor& self, int64_t dim, bool descending, bool stable) {
  return std::get<1>(sort(self, dim, descending, stable));
}
std::tuple<Tensor, Tensor> native_topk(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  KINDLE_CHECK(!self.is_complex(), "Sort does not support complex dtypes on CPU");
  int64_t d = wrap_dim(dim, self.dim(), "topk");
  int64_t n = self.dim() == 0 ? 1 : self.sizes()[d];
  KINDLE_CHECK(self.dtype() != kBool, "topk: \"topk_cpu\" not implemented for 'Bool'");
  KINDLE_CHECK(k >= 0 && k <= n, "topk(): selected index k out of range (k=", k, ", dimension ", d, " has size ", n, ")");
  auto [v, i] = sort(self, d, largest, true);
  if (self.dim() == 0) return {v, i};
  return {contiguous(narrow(v, d, 0, k)), contiguous(narrow(i, d, 0, k))};
}

// unique and bincount are made of ops (sort, comparisons, cumsum, nonzero, index_put): their one
// host read is the size of the result, which nonzero and item() make; no tensor memory is read here.

// The runs of equal neighbours in a sorted sequence, given `starts` (bool: element i begins a
// run): each element's run number, where the runs begin, and their lengths.
static std::tuple<Tensor, Tensor, Tensor> runs_of(const Tensor& starts) {
  const int64_t n = starts.numel();
  Tensor run = starts.to(kInt64).cumsum(0) - Scalar(1);
  Tensor begin = nonzero(starts).reshape({-1});
  const int64_t u = begin.numel();
  Tensor end = u ? cat({begin.narrow(0, 1, u - 1), full({1}, Scalar(n), kInt64, starts.device())}, 0) : begin;
  return {run, begin, end - begin};
}

// The elements of a sorted sequence (rows of a matrix when 2-d) that differ from their predecessor.
static Tensor run_starts(const Tensor& sorted) {
  const int64_t n = sorted.size(0);
  Tensor starts = ones({n}, kBool, sorted.device());
  if (n > 1) {
    Tensor differs = ne(sorted.narrow(0, 1, n - 1), sorted.narrow(0, 0, n - 1));
    if (differs.dim() > 1) differs = differs.any(IntArrayRef{1});
    starts.narrow(0, 1, n - 1).copy_(differs);
  }
  return starts;
}

// unique along a dim: the slices along `dim` are compared as rows, in lexicographic order (stable
// sorts by each column, the last first).
static std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& self, int64_t dim, bool return_inverse, bool return_counts) {
  KINDLE_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"unique_dim\" not implemented for '", scalar_type_name(self.dtype()), "'");
  int64_t d = wrap_dim(dim, self.dim(), "unique");
  Tensor moved = movedim(self, {d}, {0});
  int64_t n = moved.dim() ? moved.size(0) : 1, m = n ? moved.numel() / n : 0;
  Tensor rows = moved.reshape({n, m}).to(kFloat64);
  Tensor order = arange(0, n, 1, kInt64, self.device());
  for (int64_t j = m - 1; j >= 0; --j)
    order = order.index_select(0, std::get<1>(rows.select(1, j).index_select(0, order).sort(0, false, true)));
  auto [run, begin, counts] = runs_of(run_starts(rows.index_select(0, order)));
  Tensor inverse = zeros({n}, kInt64, self.device()).index_put_({order}, run, false);
  return {index_select(self, d, order.index_select(0, begin)), return_inverse ? inverse : empty_tensor({0}, kInt64),
          return_counts ? counts : empty_tensor({0}, kInt64)};
}

std::tuple<Tensor, Tensor, Tensor> _unique2(const Tensor& self, bool sorted, bool return_inverse, bool return_counts,
                                            std::optional<int64_t> dim) {
  if (dim) return unique_dim(self, *dim, return_inverse, return_counts);
  Tensor flat = contiguous(self.reshape({-1}));
  auto [sv, si] = sort(flat, 0, false, true);
  auto [run, begin, counts] = runs_of(run_starts(sv));
  Tensor inverse = zeros({flat.numel()}, kInt64, self.device()).index_put_({si}, run, false);
  return {index_select(sv, 0, begin), return_inverse ? inverse.view(self.sizes()) : empty_tensor({0}, kInt64),
          return_counts ? counts : empty_tensor({0}, kInt64)};
}

Tensor native_bincount(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength) {
  KINDLE_CHECK(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs, got a ", self.dim(), "-d tensor");
  KINDLE_CHECK_NOT_IMPLEMENTED(is_integral(self.dtype(), false), "\"bincount_cpu\" not implemented for '", self.dtype(),
                               "' (bincount only supports 1-d non-negative integral inputs)");
  KINDLE_CHECK(minlength >= 0, "bincount: minlength should be >= 0, got ", minlength);
  Tensor x = self.to(kInt64);
  const int64_t n = x.numel();
  int64_t len = minlength;
  if (n) {
    int64_t lo = amin(x, {}, false).item().to_int(), hi = amax(x, {}, false).item().to_int();
    KINDLE_CHECK(lo >= 0, "bincount only supports 1-d non-negative integral inputs, found ", lo);
    len = std::max(hi + 1, minlength);
  }
  // (the kernel adds in index order: the sums of float weights do not depend on the thread count)
  x = contiguous(x);
  if (weights) {
    KINDLE_CHECK(weights->dim() == 1 && weights->numel() == n, "bincount: weights should be 1-d and have the same length as input, got ",
                 weights->sizes(), " for input of length ", n);
    Tensor w = contiguous(weights->to(kFloat64));
    Tensor out = zeros({len}, kFloat64, self.device());
    if (n) bincount_stub[self.device()](x, &w, out);
    return weights->dtype() == kFloat32 ? out.to(kFloat32) : out;
  }
  Tensor out = zeros({len}, kInt64, self.device());
  if (n) bincount_stub[self.device()](x, nullptr, out);
  return out;
}

}  // namespace kindle
