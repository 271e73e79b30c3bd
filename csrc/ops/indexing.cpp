// Indexing with a list of TensorIndex (include/kindle/indexing.h): Python's t[...] and
// libtorch's t.index({...}) both come here.
#include "kindle/indexing.h"

#include "kindle/ops.h"

namespace kindle::indexing {

TensorIndex::TensorIndex(const char* s) : kind_(Kind::Ellipsis) {
  KINDLE_CHECK_INDEX(std::string(s) == "...", "Expected \"...\" to represent an ellipsis index, but got \"", s, "\"");
}

namespace {

bool is_mask(const Tensor& t) { return t.dtype() == kBool || t.dtype() == kUInt8; }

struct Parsed {
  Tensor view;                                 // after the basic indices
  std::vector<std::optional<Tensor>> indices;  // one per dim of `view`; set where advanced
  bool advanced = false;
};

Parsed parse(const Tensor& self, ArrayRef<TensorIndex> items) {
  // Dims each item consumes, to size the Ellipsis.
  int64_t consumed = 0;
  int ellipses = 0;
  for (const TensorIndex& it : items) {
    switch (it.kind()) {
      case TensorIndex::Kind::None: break;
      case TensorIndex::Kind::Boolean: break;  // a 0-d mask: adds a dim of size 1 or 0
      case TensorIndex::Kind::Ellipsis: ++ellipses; break;
      case TensorIndex::Kind::Integer:
      case TensorIndex::Kind::Slice: ++consumed; break;
      case TensorIndex::Kind::Tensor: {
        const Tensor& t = it.tensor();
        KINDLE_CHECK_INDEX(t.defined(), "an undefined tensor is not a valid index");
        consumed += is_mask(t) ? t.dim() : 1;
        break;
      }
    }
  }
  KINDLE_CHECK_INDEX(ellipses <= 1, "an index can only have a single ellipsis ('...')");
  KINDLE_CHECK_INDEX(consumed <= self.dim(), "too many indices for tensor of dimension ", self.dim());
  Parsed p;
  Tensor v = self;
  int64_t d = 0;
  std::vector<std::pair<int64_t, Tensor>> adv;  // (dim in v, index tensor)
  for (const TensorIndex& it : items) {
    switch (it.kind()) {
      case TensorIndex::Kind::None:
        v = v.unsqueeze(d);
        ++d;
        break;
      case TensorIndex::Kind::Ellipsis: d += self.dim() - consumed; break;
      case TensorIndex::Kind::Boolean:
      case TensorIndex::Kind::Tensor: {
        Tensor t = it.kind() == TensorIndex::Kind::Boolean ? scalar_tensor_of(Scalar(it.boolean()), kBool) : it.tensor();
        adv.emplace_back(d, t);
        d += is_mask(t) ? t.dim() : 1;
        break;
      }
      case TensorIndex::Kind::Slice: {
        const Slice& s = it.slice();
        KINDLE_CHECK_VALUE(s.step() > 0, "step must be greater than zero");
        bool full = s.start() == 0 && s.stop() == INT64_MAX && s.step() == 1;
        if (!full) v = slice(v, d, s.start(), s.stop(), s.step());
        ++d;
        break;
      }
      case TensorIndex::Kind::Integer: {
        int64_t k = it.integer();
        KINDLE_CHECK_INDEX(v.dim() > 0,
                           "invalid index of a 0-dim tensor. Use `tensor.item()` to convert a 0-dim tensor to a number");
        int64_t n = v.sizes()[d];
        KINDLE_CHECK_INDEX(k >= -n && k < n, "index ", k, " is out of bounds for dimension ", d, " with size ", n);
        v = v.select(d, k);
        break;
      }
    }
  }
  p.view = v;
  if (!adv.empty()) {
    p.advanced = true;
    // One entry per index item: a mask covering k dims is one entry that consumes k dims.
    int64_t cur = 0;
    for (auto& [dim, t] : adv) {
      for (; cur < dim; ++cur) p.indices.emplace_back();
      p.indices.emplace_back(t);
      cur += is_mask(t) ? t.dim() : 1;
    }
    for (; cur < v.dim(); ++cur) p.indices.emplace_back();
  }
  return p;
}

}  // namespace

Tensor get(const Tensor& self, ArrayRef<TensorIndex> indices) {
  Parsed p = parse(self, indices);
  if (!p.advanced) return p.view.is_same(self) ? self.view(self.sizes()) : p.view;
  return index(p.view, p.indices);
}

void set_(const Tensor& self, ArrayRef<TensorIndex> indices, const Tensor& value, bool check_dtype) {
  // PyTorch drops the value's leading size-1 dims, then broadcasts it to the indexed view.
  Tensor v = value;
  while (v.dim() > 0 && v.size(0) == 1) v = v.squeeze(IntArrayRef{0});
  Parsed p = parse(self, indices);
  if (!p.advanced) {
    p.view.copy_(v);
    return;
  }
  // PyTorch's order: an index into a size-0 dim, then the dtypes, then the index values.
  for (size_t d = 0; d < p.indices.size(); ++d)
    if (p.indices[d] && !is_mask(*p.indices[d]) && p.indices[d]->numel() && int64_t(d) < p.view.dim() &&
        p.view.size(int64_t(d)) == 0)
      throw IndexError("index is out of bounds for dimension with size 0");
  KINDLE_CHECK(!check_dtype || v.dtype() == self.dtype(), "Index put requires the source and destination dtypes match, ",
               "got ", self.dtype(), " for the destination and ", v.dtype(), " for the source.");
  index_put_(p.view, p.indices, v, false);
  self.bump_version();
}

}  // namespace kindle::indexing

namespace kindle {

Tensor Tensor::index(ArrayRef<indexing::TensorIndex> indices) const { return indexing::get(*this, indices); }
Tensor Tensor::index(std::initializer_list<indexing::TensorIndex> indices) const {
  return indexing::get(*this, ArrayRef<indexing::TensorIndex>(indices.begin(), indices.size()));
}
const Tensor& Tensor::index_put_(ArrayRef<indexing::TensorIndex> indices, const Tensor& value) const {
  indexing::set_(*this, indices, value);
  return *this;
}
const Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& value) const {
  return index_put_(ArrayRef<indexing::TensorIndex>(indices.begin(), indices.size()), value);
}
const Tensor& Tensor::index_put_(ArrayRef<indexing::TensorIndex> indices, const Scalar& value) const {
  indexing::set_(*this, indices, scalar_tensor_of(value, dtype()), false);
  return *this;
}
const Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value) const {
  return index_put_(ArrayRef<indexing::TensorIndex>(indices.begin(), indices.size()), value);
}

}  // namespace kindle
