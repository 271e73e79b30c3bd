// Indexing ops. index / index_put_ implement PyTorch's advanced indexing; gather, scatter,
// index_select, index_add, take, ... are expressed through the same two kernels.
#include "native_ops.h"
#include "kindle/operators.h"
#include "ops/kernels.h"
#include "ops/value_checks.h"

namespace kindle {
namespace {

Tensor as_long_index(const Tensor& idx, const char* op) {
  KINDLE_CHECK_INDEX(idx.dtype() == kInt64 || idx.dtype() == kInt32 || idx.dtype() == kUInt8 || idx.dtype() == kBool,
                     op, ": tensors used as indices must be long, int, byte or bool tensors, got ", idx.dtype());
  return idx.dtype() == kInt64 ? idx : idx.to(kInt64);
}

// The shared core: self restrided to the result shape, indices broadcast and viewed likewise.
struct IndexPlan {
  Tensor src;                 // self (maybe permuted) restrided to `shape`
  std::vector<Tensor> idx;    // each viewed to `shape`
  IndexDims dims;
  DimVector shape;
};

IndexPlan plan_index(const Tensor& self_in, const std::vector<std::optional<Tensor>>& indices_in, const char* op) {
  int64_t consumed = 0;
  for (const auto& o : indices_in)
    consumed += (o && o->defined() && (o->dtype() == kBool || o->dtype() == kUInt8)) ? o->dim() : 1;
  KINDLE_CHECK_INDEX(consumed <= self_in.dim(), op, ": too many indices for tensor of dimension ", self_in.dim(),
                     " (got ", indices_in.size(), ")");
  // Bool masks become one long index per masked dim.
  std::vector<Tensor> idx;  // undefined = full slice
  Tensor self = self_in;
  for (const auto& o : indices_in) {
    if (!o || !o->defined()) { idx.emplace_back(); continue; }
    if (o->dtype() == kBool || o->dtype() == kUInt8) {
      size_t d0 = idx.size();
      KINDLE_CHECK_INDEX(int64_t(d0 + size_t(o->dim())) <= std::max<int64_t>(self.dim(), 0) || (self.dim() == 0 && o->dim() == 0),
                         op, ": too many indices for tensor of dimension ", self.dim());
      for (int64_t k = 0; k < o->dim(); ++k)
        KINDLE_CHECK_INDEX(o->sizes()[k] == self.sizes()[d0 + size_t(k)], op, ": the shape of the mask ", o->sizes(),
                           " at index ", k, " does not match the shape of the indexed tensor ", self.sizes(),
                           " at index ", d0 + size_t(k));
      if (o->dim() == 0) {  // x[True] adds a dim of size 1 (or 0)
        self = self.unsqueeze(int64_t(d0));
        idx.push_back(o->item().to_bool() ? zeros({1}, kInt64, self.device()) : empty_tensor({0}, kInt64, self.device()));
        continue;
      }
      Tensor nz = nonzero(o->to(kBool));
      if (nz.device() != self.device() && nz.is_cpu()) nz = nz._to_device(self.device());
      for (int64_t k = 0; k < o->dim(); ++k) idx.push_back(nz.select(1, k));
    } else {
      // CPU indices serve a tensor on any device (as in torch); they move to its device here
      Tensor t = as_long_index(*o, op);
      idx.push_back(t.device() != self.device() && t.is_cpu() ? t._to_device(self.device()) : t);
    }
  }
  KINDLE_CHECK_INDEX(int64_t(idx.size()) <= self.dim(), op, ": too many indices for tensor of dimension ", self.dim());
  while (int64_t(idx.size()) < self.dim()) idx.emplace_back();
  // Broadcast the index tensors.
  DimVector b;
  std::vector<int64_t> adv;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (!idx[d].defined()) continue;
    try {
      b = broadcast_shapes(b, idx[d].sizes(), op);
    } catch (const Error&) {
      throw IndexError(detail::str_cat(op, ": shape mismatch: indexing tensors could not be broadcast together "
                                           "with shapes ", b, " and ", idx[d].sizes()));
    }
    adv.push_back(int64_t(d));
  }
  KINDLE_INTERNAL_ASSERT(!adv.empty());
  KINDLE_CHECK_NOT_IMPLEMENTED(adv.size() <= size_t(kMaxOperands - 2), op, ": at most ", kMaxOperands - 2,
                               " index tensors are supported, got ", adv.size());
  bool adjacent = adv.back() - adv.front() + 1 == int64_t(adv.size());
  if (!adjacent) {  // advanced dims go first
    DimVector perm;
    std::vector<Tensor> nidx;
    for (int64_t d : adv) { perm.push_back(d); nidx.push_back(idx[d]); }
    for (int64_t d = 0; d < self.dim(); ++d)
      if (!idx[d].defined()) { perm.push_back(d); nidx.emplace_back(); }
    self = self.permute(perm);
    idx = nidx;
    adv.clear();
    for (size_t k = 0; k < nidx.size(); ++k) if (nidx[k].defined()) adv.push_back(int64_t(k));
  }
  int64_t s = adv.front(), k = int64_t(adv.size());
  IndexPlan pl;
  DimVector src_strides;
  for (int64_t d = 0; d < s; ++d) { pl.shape.push_back(self.sizes()[d]); src_strides.push_back(self.strides()[d]); }
  for (int64_t v : b) { pl.shape.push_back(v); src_strides.push_back(0); }
  for (int64_t d = s + k; d < self.dim(); ++d) { pl.shape.push_back(self.sizes()[d]); src_strides.push_back(self.strides()[d]); }
  // Any index into a dimension of size 0 is out of range (the kernel would see no storage at all).
  // (PyTorch checks whenever the index is nonempty, even where the result is empty anyway.)
  if (numel_of(b) > 0)
    for (int64_t j = 0; j < k; ++j)
      KINDLE_CHECK_INDEX(self.sizes()[s + j] > 0, op, ": index ", idx[s + j].reshape({-1}).select(0, 0).item(),
                         " is out of bounds for dimension ", s + j, " with size 0");
  pl.src = make_view(self, pl.shape, src_strides, self.storage_offset());
  int64_t nb = int64_t(b.size());
  for (int64_t j = 0; j < k; ++j) {
    Tensor t = idx[s + j].expand(b);
    DimVector st;
    for (int64_t d = 0; d < s; ++d) st.push_back(0);
    for (int64_t d = 0; d < nb; ++d) st.push_back(t.strides()[d]);
    for (int64_t d = s + k; d < self.dim(); ++d) st.push_back(0);
    pl.idx.push_back(make_view(t, pl.shape, st, t.storage_offset()));
    pl.dims.sizes[j] = self.sizes()[s + j];
    pl.dims.strides[j] = self.strides()[s + j] * int64_t(self.element_size());
  }
  pl.dims.n = int(k);
  return pl;
}

}  // namespace

Tensor native_index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
  IndexPlan pl = plan_index(self, indices, "index");
  TensorIterConfig cfg;
  cfg.add_output(Tensor()).add_input(pl.src);
  for (auto& t : pl.idx) cfg.add_input(t);
  cfg.promote_inputs = false;
  cfg.compute_dtype = self.dtype();
  TensorIter it = cfg.build("index");
  if (it.numel) index_stub[it.device()](it, pl.dims);
  return it.output();
}

const Tensor& native_index_put_(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                         bool accumulate) {
  if (self.is_meta() && std::any_of(indices.begin(), indices.end(), [](const std::optional<Tensor>& t) {
        return t && t->defined() && (t->dtype() == kBool || t->dtype() == kUInt8);
      })) {
    return self;  // which elements a mask selects is a question of values; nothing is written on meta
  }
  IndexPlan pl = plan_index(self, indices, "index_put_");
  KINDLE_CHECK(values.dtype() == self.dtype(), "Index put requires the source and destination dtypes match, got ",
               self.dtype(), " for the destination and ", values.dtype(), " for the source.");
  const Tensor& v = values;
  KINDLE_CHECK(broadcast_shapes(pl.shape, v.sizes(), "index_put_") == pl.shape, "index_put_: shape mismatch: value tensor of shape ",
               values.sizes(), " cannot be broadcast to indexing result of shape ", pl.shape);
  TensorIterConfig cfg;
  cfg.add_output(pl.src).add_input(v);
  for (auto& t : pl.idx) cfg.add_input(t);
  cfg.check_internal_overlap = false;
  cfg.promote_inputs = false;
  cfg.compute_dtype = self.dtype();
  TensorIter it = cfg.build("index_put_");
  if (it.numel) index_put_stub[it.device()](it, pl.dims, accumulate ? PutReduce::Add : PutReduce::Assign);
  self.bump_version();
  return self;
}
Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values, bool accumulate) {
  Tensor out = self.clone();
  index_put_(out, indices, values, accumulate);
  return out;
}

static std::vector<std::optional<Tensor>> at_dim(int64_t d, const Tensor& index) {
  std::vector<std::optional<Tensor>> v(static_cast<size_t>(d));
  v.push_back(index);
  return v;
}

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  KINDLE_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector, got a ", index.dim(), "-d tensor");
  KINDLE_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32,
               "index_select(): Expected dtype int32 or int64 for index, got ", index.dtype());
  Tensor idx = index.reshape({-1});
  if (idx.numel()) {
    int64_t n = self.dim() == 0 ? 1 : self.sizes()[wrap_dim(dim, self.dim(), "index_select")];
    // (PyTorch: IndexError for a 1-d self, RuntimeError otherwise)
    if (self.dim() > 1)
      KINDLE_CHECK(n > 0, "index_select(): self indexing axis dim should be positive (dimension ", dim, " has size 0)");
    if (!idx.is_meta()) {
      int64_t lo = amin(idx.to(kInt64), {}, false).item().to_int(), hi = amax(idx.to(kInt64), {}, false).item().to_int();
      KINDLE_CHECK_INDEX(lo >= 0 && hi < n, "index_select(): index out of range in self (index ", lo < 0 ? lo : hi,
                         " for a dimension of size ", n, ")");
    }
  }
  if (self.dim() == 0) return kindle::index(self.reshape({1}), {idx}).reshape({});
  int64_t d = wrap_dim(dim, self.dim(), "index_select");
  return kindle::index(self, at_dim(d, index.reshape({-1})));
}

Tensor take(const Tensor& self, const Tensor& idx) {
  KINDLE_CHECK(idx.dtype() == kInt64, "take(): Expected a long tensor for index, but got ", idx.dtype());
  return index(self.reshape({-1}), {as_long_index(idx, "take")});
}

// gather/scatter: self restrided to index's shape with 0 along dim; the index adds idx * stride.
static void check_gather_index(const Tensor& index, const char* op) {
  KINDLE_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op, "(): Expected dtype int32/int64 for index, got ",
               index.dtype());
}

static IndexPlan plan_gather(const Tensor& self, int64_t dim, const Tensor& index_in, const char* op) {
  check_gather_index(index_in, op);
  Tensor index = index_in.dtype() == kInt64 ? index_in : index_in.to(kInt64);  // the kernel reads int64
  int64_t nd = std::max<int64_t>(self.dim(), 1);
  KINDLE_CHECK(std::max<int64_t>(index.dim(), 1) == nd, op, "(): Index tensor must have the same number of dimensions as input tensor (",
               index.dim(), " vs ", self.dim(), ")");
  Tensor s = self.dim() == 0 ? self.reshape({1}) : self;
  Tensor ix = index.dim() == 0 ? index.reshape({1}) : index;
  int64_t d = wrap_dim(dim, nd, op);
  for (int64_t k = 0; k < nd; ++k)
    KINDLE_CHECK(k == d || ix.sizes()[k] <= s.sizes()[k], op, "(): Size does not match at dimension ", k,
                 " expected index ", ix.sizes(), " to be smaller than self ", s.sizes(), " apart from dimension ", d);
  KINDLE_CHECK(s.sizes()[d] > 0 || ix.numel() == 0, op, "(): index ", ix.reshape({-1}).select(0, 0).item(),
               " is out of bounds for dimension ", d, " with size 0");
  IndexPlan pl;
  pl.shape = DimVector(ix.sizes());
  DimVector st(s.strides());
  st[d] = 0;
  pl.src = make_view(s, pl.shape, st, s.storage_offset());
  pl.idx.push_back(ix);
  pl.dims.n = 1;
  pl.dims.index_error = false;
  pl.dims.sizes[0] = s.sizes()[d];
  pl.dims.strides[0] = s.strides()[d] * int64_t(s.element_size());
  return pl;
}

Tensor native_gather(const Tensor& self, int64_t dim, const Tensor& index) {
  if (index.numel() == 0) {  // PyTorch checks nothing more for an empty index
    check_gather_index(index, "gather");
    return empty_tensor(index.sizes(), self.dtype(), self.device());
  }
  IndexPlan pl = plan_gather(self, dim, index, "gather");
  TensorIterConfig cfg;
  cfg.add_output(Tensor()).add_input(pl.src).add_input(pl.idx[0]);
  cfg.promote_inputs = false;
  cfg.compute_dtype = self.dtype();
  TensorIter it = cfg.build("gather");
  if (it.numel) index_stub[it.device()](it, pl.dims);
  return index.dim() == 0 ? it.output().reshape({}) : it.output();
}

static const Tensor& scatter_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, PutReduce acc, const char* op) {
  KINDLE_CHECK(src.impl()->wrapped_number || src.dtype() == self.dtype(), op, "(): Expected self.dtype to be equal to src.dtype (got ",
               self.dtype(), " and ", src.dtype(), ")");
  if (index.numel() == 0) {
    check_gather_index(index, op);
    return self;
  }
  IndexPlan pl = plan_gather(self, dim, index, op);
  const Tensor& s = src;
  Tensor v = s.dtype() == self.dtype() ? s : s.to(self.dtype());
  if (v.dim() > 0) {
    for (int64_t k = 0; k < v.dim(); ++k)
      KINDLE_CHECK(pl.shape[k] <= v.sizes()[k], op, "(): Expected index ", index.sizes(), " to be smaller than src ",
                   src.sizes(), " in every dimension");
    v = make_view(v, pl.shape, v.strides(), v.storage_offset());
  }
  TensorIterConfig cfg;
  cfg.add_output(pl.src).add_input(v).add_input(pl.idx[0]);
  cfg.check_internal_overlap = false;
  cfg.promote_inputs = false;
  cfg.compute_dtype = self.dtype();
  TensorIter it = cfg.build(op);
  if (it.numel) index_put_stub[it.device()](it, pl.dims, acc);
  self.bump_version();
  return self;
}
const Tensor& native_scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) { return scatter_impl(self, dim, index, src, PutReduce::Assign, "scatter_"); }
const Tensor& native_scatter_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) { return scatter_impl(self, dim, index, src, PutReduce::Add, "scatter_add_"); }
const Tensor& scatter_reduce_raw_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, PutReduce reduce) {
  return scatter_impl(self, dim, index, src, reduce, "scatter_reduce");
}
// The out-of-place forms write into a contiguous copy of self, as PyTorch's do.
static Tensor contiguous_copy(const Tensor& t) { return t.is_contiguous() ? t.clone() : t.contiguous(); }
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) { Tensor o = contiguous_copy(self); scatter_(o, dim, index, src); return o; }
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  if (index.numel()) check_scalar_fits(value, self.dtype(), "scatter_");
  return scatter_(self, dim, index, scalar_to_tensor(value));
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  if (index.numel()) check_scalar_fits(value, self.dtype(), "scatter");
  return scatter(self, dim, index, scalar_to_tensor(value));
}
static PutReduce scatter_reduce_kind(std::string_view reduce) {
  KINDLE_CHECK(reduce == "add" || reduce == "multiply", "scatter(): reduce argument must be either add or multiply, got '",
               reduce, "'");
  return reduce == "add" ? PutReduce::Add : PutReduce::Multiply;
}
const Tensor& native_scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) {
  return scatter_impl(self, dim, index, src, scatter_reduce_kind(reduce), "scatter_");
}
Tensor native_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) {
  Tensor o = contiguous_copy(self);
  native_scatter_(o, dim, index, src, reduce);
  return o;
}
const Tensor& native_scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) {
  if (index.numel()) check_scalar_fits(value, self.dtype(), "scatter_");
  return scatter_impl(self, dim, index, scalar_to_tensor(value), scatter_reduce_kind(reduce), "scatter_");
}
Tensor native_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) {
  Tensor o = contiguous_copy(self);
  native_scatter_(o, dim, index, value, reduce);
  return o;
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) { Tensor o = contiguous_copy(self); scatter_add_(o, dim, index, src); return o; }

Tensor take_along_dim(const Tensor& self, const Tensor& indices_in, std::optional<int64_t> dim) {
  KINDLE_CHECK(indices_in.dtype() == kInt64, "take_along_dim(): dtype of indices should be int64 but got ", indices_in.dtype());
  if (!dim) return gather(self.reshape({-1}), 0, indices_in.reshape({-1}));
  KINDLE_CHECK(self.dim() == indices_in.dim(), "take_along_dim(): input and indices should have the same number of "
               "dimensions, but got ", self.dim(), " dimensions for input, and ", indices_in.dim(), " dimensions for indices");
  int64_t d = wrap_dim(*dim, self.dim(), "take_along_dim");
  // Along a dimension PyTorch counts negative indices from the end (and wraps every index modulo
  // the size; an index outside [-size, size) raises here instead of wrapping silently).
  Tensor indices = indices_in;
  if (indices.numel() && self.dim() && detail::any_value(indices < Scalar(0)))
    indices = where(indices < Scalar(0), indices + Scalar(self.size(d)), indices);
  DimVector ss(self.sizes()), is(indices.sizes());
  ss[d] = 1;
  is[d] = 1;
  DimVector b = broadcast_shapes(ss, is, "take_along_dim");
  DimVector sb(b), ib(b);
  sb[d] = self.sizes()[d];
  ib[d] = indices.sizes()[d];
  return gather(self.expand(sb), d, indices.expand(ib));
}

const Tensor& index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  if (self.dim() == 0) { index_add_(self.view({1}), 0, index, source.reshape({-1}), alpha); return self; }
  int64_t d = wrap_dim(dim, self.dim(), "index_add_");
  KINDLE_CHECK_INDEX(index.dim() <= 1, "index_add_(): Index is supposed to be a vector");
  if (index.numel() && !index.is_meta()) {
    int64_t lo = amin(index, {}, false).item().to_int(), hi = amax(index, {}, false).item().to_int();
    // PyTorch raises IndexError for a vector and RuntimeError otherwise; both name the index.
    int64_t bad = hi >= self.size(d) ? hi : lo;
    if (self.dim() == 1)
      KINDLE_CHECK_INDEX(lo >= 0 && hi < self.size(d), "index_add_(): index out of range in self (index ", bad,
                         " for dimension ", d, " with size ", self.size(d), ")");
    KINDLE_CHECK(lo >= 0 && hi < self.size(d), "index_add_(): index ", bad, " is out of bounds for dimension ", d,
                 " with size ", self.size(d));
  }
  Tensor src = (alpha.to_double() == 1.0) ? source : mul(source, scalar_to_tensor(alpha));
  if (src.dtype() != self.dtype()) src = src.to(self.dtype());  // (bool * alpha is an integer)
  return index_put_(self, at_dim(d, index.reshape({-1})), src, true);
}
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  Tensor o = self.clone();
  index_add_(o, dim, index, source, alpha);
  return o;
}
const Tensor& index_fill_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  if (self.dim() == 0) { index_fill_(self.view({1}), 0, index, value); return self; }
  int64_t d = wrap_dim(dim, self.dim(), "index_fill_");
  check_scalar_fits(value, self.dtype(), "index_fill_");
  return index_put_(self, at_dim(d, index.reshape({-1})), scalar_tensor_of(value, self.dtype()), false);
}
const Tensor& native_index_fill_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  KINDLE_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
               value.dim(), " dimension(s).");
  // (meta: the checks alone; nothing is written)
  if (value.is_meta() && self.is_meta()) return index_fill_(self, dim, index, Scalar(0));
  return index_fill_(self, dim, index, value.item());
}
const Tensor& index_copy_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  if (self.dim() == 0) { index_copy_(self.view({1}), 0, index, source.reshape({-1})); return self; }
  int64_t d = wrap_dim(dim, self.dim(), "index_copy_");
  KINDLE_CHECK_INDEX(index.numel() == (source.dim() ? source.size(d) : 1), "index_copy_(): Number of indices (", index.numel(),
                     ") should be equal to source.size(dim) (", source.dim() ? source.size(d) : 1, ")");
  return index_put_(self, at_dim(d, index.reshape({-1})), source, false);
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  if (value.dim() == 0 && value.numel() == 1 && !value.is_meta()) check_scalar_fits(value.item(), self.dtype(), "masked_fill");
  KINDLE_CHECK(mask.dtype() == kBool, "masked_fill: expected the mask to be a bool tensor, got ", mask.dtype());
  KINDLE_CHECK(value.dim() == 0, "masked_fill: only supports a 0-dimensional value tensor, but got tensor with ",
               value.dim(), " dimension(s).");
  return where(mask, value.to(self.dtype()), self).contiguous();  // contiguous, as PyTorch's result
}
const Tensor& masked_fill_(const Tensor& self, const Tensor& mask, const Tensor& value) {
  Tensor r = masked_fill(self, mask, value);
  KINDLE_CHECK(r.sizes() == self.sizes(), "masked_fill_: the mask of shape ", mask.sizes(),
               " cannot be broadcast to the in-place tensor of shape ", self.sizes());
  return self.copy_(r);
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  KINDLE_CHECK(mask.dtype() == kBool, "masked_select: expected the mask to be a bool tensor, got ", mask.dtype());
  DimVector b = broadcast_shapes(self.sizes(), mask.sizes(), "masked_select");
  return index(self.expand(b), {std::optional<Tensor>(mask.expand(b))});
}
const Tensor& masked_scatter_(const Tensor& self, const Tensor& mask, const Tensor& source) {
  Tensor m = mask.expand(self.sizes());
  if (self.is_meta()) {  // how many elements the mask selects is a question of values
    KINDLE_CHECK(mask.dtype() == kBool, "masked_scatter_: expected the mask to be a bool tensor, got ", mask.dtype());
    return index_put_(self, {std::optional<Tensor>(m)}, source.reshape({-1}), false);
  }
  int64_t n = sum(m).item().to_int();
  KINDLE_CHECK(source.numel() >= n, "masked_scatter_: expected source to have at least ", n, " elements, got ", source.numel());
  return index_put_(self, {std::optional<Tensor>(m)}, source.reshape({-1}).narrow(0, 0, n), false);
}

Tensor nonzero(const Tensor& self) {
  Tensor x = contiguous(self);
  int64_t n = x.numel(), nd = x.dim();
  std::vector<int64_t> hits;
  dispatch_all_and_complex(x.dtype(), "nonzero", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(x.data_ptr());
    for (int64_t i = 0; i < n; ++i) if (opmath_t<T>(p[i]) != opmath_t<T>(0)) hits.push_back(i);
  });
  // Written as (ndim, hits) and returned transposed: PyTorch's layout, so that views of the
  // result (flatten, view) alias it exactly where they do in PyTorch.
  int64_t nh = int64_t(hits.size());
  Tensor out = empty_tensor({nd, nh}, kInt64, self.device());
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t h = 0; h < nh; ++h) {
    int64_t rem = hits[size_t(h)];
    for (int64_t d = nd - 1; d >= 0; --d) { o[d * nh + h] = rem % x.sizes()[d]; rem /= x.sizes()[d]; }
  }
  return out.t();
}
Tensor argwhere(const Tensor& self) { return nonzero(self); }

}  // namespace kindle
