// Order statistics (kthvalue, median, nanmedian) read off a stable sort along the dimension:
// differentiable through sort, NaN sorting above every number as in PyTorch.
#include <limits>
#include <tuple>

#include "kindle/autograd.h"
#include "kindle/operators.h"
#include "ops/scan_kernels.h"
#include "ops/value_checks.h"

namespace kindle {
namespace {

struct Sorted {
  Tensor values, indices;
  int64_t dim;
  bool scalar;  // the input was 0-d (sorted as one element)
};

Sorted sort_along(const Tensor& self, int64_t dim, const char* op) {
  bool scalar = self.dim() == 0;
  Tensor x = scalar ? self.reshape({1}) : self;
  int64_t d = wrap_dim(dim, x.dim(), op);
  KINDLE_CHECK_INDEX(x.size(d) > 0, op, "(): Expected reduction dim ", d, " to have non-zero size.");
  auto [v, i] = x.sort(d, false, true);
  return {v, i, d, scalar};
}

// The entries at sorted positions `pos` (keepdim shape), reduced as the op's keepdim asks.
std::tuple<Tensor, Tensor> pick(const Sorted& s, const Tensor& pos, bool keepdim) {
  Tensor v = s.values.gather(s.dim, pos), i = s.indices.gather(s.dim, pos);
  if (s.scalar) return {v.reshape({}), i.reshape({})};
  if (!keepdim) return {v.squeeze(IntArrayRef{s.dim}), i.squeeze(IntArrayRef{s.dim})};
  return {v, i};
}

// The lower median's sorted position; with NaNs present, median takes the first NaN (NaN is
// the median) and nanmedian the lower median of the other values.
Tensor median_position(const Tensor& self, const Sorted& s, bool ignore_nan) {
  Tensor x = s.scalar ? self.reshape({1}) : self;
  int64_t n = x.size(s.dim);
  if (!x.is_floating_point()) return full(s.values.narrow(s.dim, 0, 1).sizes(), Scalar((n - 1) / 2), kInt64, x.device());
  Tensor valid = x.isnan().logical_not().sum(IntArrayRef{s.dim}, true);
  if (ignore_nan) return (valid - 1).clamp_min(0).div(scalar_tensor_of(2, kInt64), "floor");
  return where(valid < Scalar(n), valid, full({}, Scalar((n - 1) / 2), kInt64));
}

std::tuple<Tensor, Tensor> median_dim_impl(const Tensor& self, int64_t dim, bool keepdim, bool ignore_nan) {
  check_kernel_dtype(self.dtype(), "median_cpu", true, false);
  Sorted s = sort_along(self, dim, "median");
  return pick(s, median_position(self, s, ignore_nan), keepdim);
}

// The median of all elements. Its gradient is shared evenly by the elements equal to it (the
// NaNs when it is NaN), as PyTorch defines it, rather than given to one of them: the result is
// m + sum(where(equal, x - m, 0)) / count, whose value is exactly m.
Tensor median_all_impl(const Tensor& self, bool ignore_nan) {
  check_kernel_dtype(self.dtype(), "median_cpu", true, false);
  if (self.numel() == 0) {
    KINDLE_CHECK(self.is_floating_point(), "median(): cannot compute the median of an empty ", self.dtype(), " tensor");
    return self.sum() * Scalar(std::numeric_limits<double>::quiet_NaN());
  }
  Tensor m = std::get<0>(median_dim_impl(self.detach().flatten(), 0, false, ignore_nan));
  if (!self.requires_grad() && !autograd::forward_ad::is_dual(self)) return m;
  Tensor equal = m.isnan().item().to_bool() ? self.isnan() : self == m;
  Tensor share = where(equal, self - m, zeros({}, self.dtype())).sum() / equal.sum();
  return m + share;
}

}  // namespace

std::tuple<Tensor, Tensor> kthvalue(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  check_kernel_dtype(self.dtype(), "kthvalue_cpu", true, false);
  Sorted s = sort_along(self, dim, "kthvalue");
  KINDLE_CHECK(k >= 1 && k <= s.values.size(s.dim), "kthvalue(): selected number k out of range for dimension ", dim);
  DimVector at(s.values.sizes());
  at[s.dim] = 1;
  return pick(s, full(at, Scalar(k - 1), kInt64, self.device()), keepdim);
}

Tensor median(const Tensor& self) { return median_all_impl(self, false); }
Tensor nanmedian(const Tensor& self) { return median_all_impl(self, true); }
std::tuple<Tensor, Tensor> median(const Tensor& self, int64_t dim, bool keepdim) {
  return median_dim_impl(self, dim, keepdim, false);
}
std::tuple<Tensor, Tensor> nanmedian(const Tensor& self, int64_t dim, bool keepdim) {
  return median_dim_impl(self, dim, keepdim, true);
}

}  // namespace kindle

namespace kindle {

// Quantiles by sorting: the q-th quantile of n sorted values sits at rank q * (n - 1), between
// two neighbours that `interpolation` combines. quantile gives NaN for a row with a NaN (the
// rank moves to the last value, a NaN: NaN sorts last); nanquantile ranks among the others.
static Tensor quantile_impl(const Tensor& self, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                            std::string_view interpolation, bool ignore_nan, const char* op) {
  KINDLE_CHECK(self.numel() > 0, op, "() input tensor must be non-empty");
  KINDLE_CHECK(q.dim() <= 1, op, "() q must be a scalar or 1D tensor");
  KINDLE_CHECK(self.dtype() == kFloat32 || self.dtype() == kFloat64, op,
               "() input tensor must be either float or double dtype");
  KINDLE_CHECK(q.dtype() == self.dtype(), op, "() q tensor must be same dtype as the input tensor");
  KINDLE_CHECK(interpolation == "linear" || interpolation == "lower" || interpolation == "higher" ||
                   interpolation == "midpoint" || interpolation == "nearest",
               op, "() interpolation must be one of linear, lower, higher, midpoint or nearest, but got ", interpolation);
  KINDLE_CHECK(detail::all_values(logical_and(q >= Scalar(0), q <= Scalar(1))), op,
               "() q values must be in the range [0, 1]");
  Tensor x = dim ? (self.dim() == 0 ? self.reshape({1}) : self) : self.flatten();
  int64_t d = dim ? wrap_dim(*dim, x.dim(), op) : 0;
  Tensor sorted = std::get<0>(x.sort(d, false, false)).movedim({d}, {-1});  // (..., n)
  int64_t n = sorted.size(-1);
  Tensor qs = q.reshape({-1});
  if (q.impl()->wrapped_number) qs = qs._to_device(self.device());  // a Python number: on self's device
  Tensor ranks;
  if (ignore_nan) {
    Tensor valid = sorted.isnan().logical_not().sum(IntArrayRef{-1}, true).to(self.dtype());
    ranks = (qs * (valid - Scalar(1))).clamp_min(0);
  } else {
    Tensor has_nan = sorted.isnan().any(IntArrayRef{-1}, true);
    ranks = where(has_nan, full({}, Scalar(n - 1), self.dtype()), qs * Scalar(n - 1));
  }
  Tensor lo = ranks.floor(), hi = ranks.ceil();
  auto at = [&](const Tensor& r) { return sorted.gather(-1, r.to(kInt64)); };
  Tensor r;
  if (interpolation == "lower") r = at(lo);
  else if (interpolation == "higher") r = at(hi);
  else if (interpolation == "nearest") r = at(ranks.round());
  else r = lerp(at(lo), at(hi), interpolation == "midpoint" ? full({}, Scalar(0.5), self.dtype()) : ranks - lo);
  r = r.movedim({-1}, {0});  // (Q, ...)
  if (keepdim) {
    DimVector shape{qs.size(0)};
    for (int64_t i = 0; i < std::max<int64_t>(self.dim(), 1); ++i)
      shape.push_back(dim ? (i == d ? 1 : x.size(i)) : 1);
    if (self.dim() == 0) shape.pop_back();
    r = r.reshape(shape);
  }
  return q.dim() == 0 ? r.select(0, 0) : r;
}

Tensor quantile(const Tensor& self, const Tensor& q, std::optional<int64_t> dim, bool keepdim, std::string_view interpolation) {
  return quantile_impl(self, q, dim, keepdim, interpolation, false, "quantile");
}
Tensor quantile(const Tensor& self, double q, std::optional<int64_t> dim, bool keepdim, std::string_view interpolation) {
  KINDLE_CHECK(q >= 0 && q <= 1, "quantile() q must be in the range [0, 1] but got ", q);
  return quantile_impl(self, scalar_tensor_of(q, self.dtype(), self.device()), dim, keepdim, interpolation, false, "quantile");
}
Tensor nanquantile(const Tensor& self, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                   std::string_view interpolation) {
  return quantile_impl(self, q, dim, keepdim, interpolation, true, "nanquantile");
}
Tensor nanquantile(const Tensor& self, double q, std::optional<int64_t> dim, bool keepdim, std::string_view interpolation) {
  KINDLE_CHECK(q >= 0 && q <= 1, "nanquantile() q must be in the range [0, 1] but got ", q);
  return quantile_impl(self, scalar_tensor_of(q, self.dtype(), self.device()), dim, keepdim, interpolation, true, "nanquantile");
}

}  // namespace kindle

namespace kindle {

// searchsorted: sequence and values compare in their common dtype; a 1-D sequence serves every
// value, an N-D one row by row (its leading dims must equal the values' leading dims).
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& self, bool out_int32, bool right,
                    std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
  KINDLE_CHECK_NOT_IMPLEMENTED(!sorted_sequence.is_complex() && !self.is_complex(), "\"searchsorted_out_cpu\" not implemented for '", scalar_type_name(self.is_complex() ? self.dtype() : sorted_sequence.dtype()), "'");
  check_kernel_dtype(sorted_sequence.dtype(), "searchsorted_out_cpu", true, false);
  const char* op = "torch.searchsorted()";
  KINDLE_CHECK(sorted_sequence.dim() > 0, op, ": boundaries tensor should have positive dimension, but got 0 dimension");
  KINDLE_CHECK(!side || *side == "left" || *side == "right", op, ": side can only be 'left' or 'right' but got ", *side);
  KINDLE_CHECK(!side || (*side == "right") == right || !right, op,
               ": side and right can't be set to opposites, got side of ", *side, " while right was True");
  bool use_right = right || (side && *side == "right");
  bool one_row = sorted_sequence.dim() == 1;
  if (!one_row) {
    bool match = self.dim() == sorted_sequence.dim();
    for (int64_t i = 0; match && i + 1 < self.dim(); ++i) match = self.size(i) == sorted_sequence.size(i);
    KINDLE_CHECK(match, op, ": boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and "
                 "input value tensor must match, but we got boundaries tensor ", sorted_sequence.sizes(),
                 " and input value tensor ", self.sizes());
  }
  if (sorter) {
    KINDLE_CHECK(sorter->sizes() == sorted_sequence.sizes(), op, ": boundary and sorter must have the same size, but got "
                 "boundary tensor ", sorted_sequence.sizes(), " and got sorter tensor ", sorter->sizes());
    KINDLE_CHECK(sorter->dtype() == kInt64, op, ": sorter must be a tensor of long dtype but got dtype ", sorter->dtype());
    KINDLE_CHECK(detail::all_values(logical_and(*sorter >= Scalar(0), *sorter < Scalar(sorted_sequence.size(-1)))),
                 op, ": sorter index out of range");
  }
  DType dt = promote_types(sorted_sequence.dtype(), self.dtype());
  Tensor seq = sorted_sequence.to(dt).contiguous(), values = self.to(dt).contiguous();
  Tensor order = sorter ? sorter->contiguous() : Tensor();
  Tensor out = empty_tensor(self.sizes(), kInt64, self.device());
  if (out.numel() && seq.numel())
    searchsorted_stub[self.device()](one_row ? seq.reshape({1, -1}) : seq, values, sorter ? &order : nullptr, out, use_right);
  else if (out.numel())
    out.zero_();
  return out_int32 ? out.to(kInt32) : out;
}

Tensor searchsorted(const Tensor& sorted_sequence, const Scalar& self, bool out_int32, bool right,
                    std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
  KINDLE_CHECK(sorted_sequence.dim() == 1, "torch.searchsorted(): input value can be a scalar only when boundaries tensor "
               "dimension is 1, but we got boundaries tensor dim(", sorted_sequence.dim(), ") and input value's dim(0) numel(1)");
  return searchsorted(sorted_sequence, scalar_to_tensor(self, sorted_sequence.device()), out_int32, right, side, sorter);
}

Tensor bucketize(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right) {
  KINDLE_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  return searchsorted(boundaries, self, out_int32, right, std::nullopt, std::nullopt);
}
Tensor bucketize(const Scalar& self, const Tensor& boundaries, bool out_int32, bool right) {
  KINDLE_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  return searchsorted(boundaries, scalar_to_tensor(self, boundaries.device()), out_int32, right, std::nullopt, std::nullopt);
}

}  // namespace kindle

namespace kindle {

// The mode along dim: the value seen most often (the smallest of equally frequent ones) and the
// index of its last occurrence, read off a stable sort: equal values form runs, whose lengths
// are counted; each NaN is a run of its own (NaN != NaN), as in PyTorch.
std::tuple<Tensor, Tensor> mode(const Tensor& self, int64_t dim, bool keepdim) {
  Sorted s = sort_along(self, dim, "mode");
  Tensor v = s.values.movedim({s.dim}, {-1}), ix = s.indices.movedim({s.dim}, {-1});
  int64_t n = v.size(-1);
  DimVector one(v.sizes());
  one.back() = 1;
  Tensor first = ones(one, kBool, self.device()), differs = v.narrow(-1, 1, n - 1) != v.narrow(-1, 0, n - 1);
  Tensor starts = cat({first, differs}, -1), ends = cat({differs, first}, -1);
  Tensor run = starts.to(kInt64).cumsum(-1) - Scalar(1);
  Tensor length = zeros_like(run).scatter_add(-1, run, ones_like(run)).gather(-1, run);
  Tensor best = logical_and(length == length.amax(IntArrayRef{-1}, true), ends);
  Tensor pos = best.to(kInt64).argmax(-1, true);  // the first such run: the smallest value
  Tensor values = v.gather(-1, pos).movedim({-1}, {s.dim}), indices = ix.gather(-1, pos).movedim({-1}, {s.dim});
  if (s.scalar) return {values.reshape({}), indices.reshape({})};
  if (!keepdim) return {values.squeeze(IntArrayRef{s.dim}), indices.squeeze(IntArrayRef{s.dim})};
  return {values, indices};
}

}  // namespace kindle
