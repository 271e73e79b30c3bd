#include "kindle/ops.h"

namespace kindle {

TensorImpl::TensorImpl(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides,
                       int64_t offset)
    : storage_(std::move(storage)), sizes_(sizes), strides_(strides), offset_(offset),
      dtype_(dtype) {
  refresh();
}

void TensorImpl::set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  sizes_ = sizes;
  strides_ = strides;
  offset_ = offset;
  refresh();
}

void TensorImpl::refresh() {
  numel_ = 1;
  for (int64_t s : sizes_) numel_ *= s;
  contiguous_ = true;
  if (numel_ == 0) return;
  int64_t expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (sizes_[d] == 1) continue;
    if (strides_[d] != expected) { contiguous_ = false; return; }
    expected *= sizes_[d];
  }
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = ndim > 0 ? ndim : 1;  // a 0-d tensor accepts dim 0 and -1, as in PyTorch
  KINDLE_CHECK_INDEX(dim >= -n && dim < n, op, ": dimension out of range (expected to be in range of [",
                     -n, ", ", n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

int64_t Tensor::size(int64_t d) const {
  if (dim() == 0) wrap_dim(d, 0, "size");  // raises: a 0-d tensor has no sizes
  return sizes()[wrap_dim(d, dim(), "size")];
}
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector st(sizes.size());
  int64_t s = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    st[d] = s;
    s *= std::max<int64_t>(sizes[d], 1);
  }
  return st;
}

int64_t numel_of(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

static void check_sizes(IntArrayRef sizes) {
  for (int64_t s : sizes)
    KINDLE_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", sizes);
}

Tensor empty_tensor(IntArrayRef sizes, DType dtype, Device device) {
  check_sizes(sizes);
  int64_t n = numel_of(sizes);
  Storage st = make_storage(size_t(n) * itemsize(dtype), device);
  return Tensor(intrusive_ptr<TensorImpl>::make(std::move(st), dtype, sizes,
                                                contiguous_strides(sizes), 0));
}

Tensor empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device) {
  check_sizes(sizes);
  KINDLE_CHECK(sizes.size() == strides.size(), "empty_strided: sizes ", sizes, " and strides ",
               strides, " must have the same length");
  int64_t span = 1;
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) empty = true;
    span += (sizes[i] - 1) * strides[i];
  }
  Storage st = make_storage(empty ? 0 : size_t(span) * itemsize(dtype), device);
  return Tensor(intrusive_ptr<TensorImpl>::make(std::move(st), dtype, sizes, strides, 0));
}

Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  auto impl = intrusive_ptr<TensorImpl>::make(base.impl()->storage(), base.dtype(), sizes, strides,
                                              offset);
  return Tensor(std::move(impl));
}

Tensor scalar_tensor_of(const Scalar& s, DType dtype, Device device) {
  Tensor t = empty_tensor({}, dtype, device);
  dispatch_all(dtype, "scalar_tensor", [&](auto tag) {
    using T = typename decltype(tag)::type;
    *reinterpret_cast<T*>(t.data_ptr()) = s.to<T>();
  });
  return t;
}

Tensor scalar_to_tensor(const Scalar& s, Device device) {
  DType dt = s.is_bool() ? kBool : s.is_integral() ? kInt64 : kFloat64;
  Tensor t = scalar_tensor_of(s, dt, device);
  t.impl()->wrapped_number = true;
  return t;
}

Scalar Tensor::item() const {
  KINDLE_CHECK(numel() == 1, "a Tensor with ", numel(),
               " elements cannot be converted to Scalar (item() needs exactly one element)");
  return dispatch_all(dtype(), "item", [&](auto tag) -> Scalar {
    using T = typename decltype(tag)::type;
    return Scalar(*reinterpret_cast<const T*>(impl_->data()));
  });
}

}  // namespace kindle
