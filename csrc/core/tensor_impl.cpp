#include <algorithm>

#include "kindle/tensor.h"

namespace kindle {

namespace {
thread_local bool inference_mode = false;
}  // namespace
bool inference_mode_enabled() { return inference_mode; }
void set_inference_mode_enabled(bool enabled) { inference_mode = enabled; }

namespace {
// The first and last element (lo, hi) a view with non-negative sizes reaches from `offset`;
// false when it is empty (it reaches nothing). Raises on a negative stride unless allowed, and
// reports int64 overflow through `overflow`.
bool view_extent(IntArrayRef sizes, IntArrayRef strides, int64_t offset, bool allow_negative_strides,
                 const char* op, int64_t& lo, int64_t& hi, bool& overflow) {
  KINDLE_CHECK(sizes.size() == strides.size(), op, ": sizes ", sizes, " and strides ", strides,
               " must have the same length");
  for (int64_t s : sizes)
    if (s == 0) return false;
  lo = hi = offset;
  for (size_t i = 0; i < sizes.size(); ++i) {
    KINDLE_CHECK(strides[i] >= 0 || allow_negative_strides, op,
                 ": negative strides are not supported, got sizes=", sizes, " and strides=", strides);
    int64_t span;
    overflow |= __builtin_mul_overflow(sizes[i] - 1, strides[i], &span);
    overflow |= __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi);
  }
  return true;
}
}  // namespace

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
  numel_ = checked_numel(sizes_);
  contiguous_ = true;
  if (numel_ == 0) return;
  // Every view, whoever made it, stays inside its storage (Note [Checked sizes]). Sizes are
  // checked and non-zero here; on failure check_view_in_storage raises with the full message.
  if (storage_) {
    int64_t lo, hi, end;
    bool overflow = false;
    view_extent(sizes_, strides_, offset_, true, "view", lo, hi, overflow);
    overflow |= __builtin_add_overflow(hi, 1, &end);
    overflow |= __builtin_mul_overflow(end, int64_t(itemsize(dtype_)), &end);
    if (overflow || lo < 0 || size_t(end) > storage_->nbytes())
      check_view_in_storage(*storage_, itemsize(dtype_), sizes_, strides_, offset_, "view", true);
  }
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
    // Wraps only when the sizes overflow: checked_numel rejects those, or an empty tensor
    // (a zero size) never reads its strides.
    __builtin_mul_overflow(s, std::max<int64_t>(sizes[d], 1), &s);
  }
  return st;
}

int64_t numel_of(IntArrayRef sizes) { return checked_numel(sizes); }

// Note [Checked sizes]
int64_t checked_numel(IntArrayRef sizes, const char* op) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) {
    KINDLE_CHECK(s >= 0, op, ": Trying to create tensor with negative dimension ", s, ": ", sizes);
    overflow |= __builtin_mul_overflow(n, s, &n);
  }
  // A zero anywhere makes the tensor empty whatever the other sizes, as in PyTorch's
  // safe_compute_numel (an overflowed partial product is then irrelevant).
  if (overflow) {
    for (int64_t s : sizes)
      if (s == 0) return 0;
    KINDLE_ERROR(op, ": integer multiplication overflow (sizes ", sizes,
                 " have more than 2^63 - 1 elements)");
  }
  return n;
}


size_t checked_storage_nbytes(IntArrayRef sizes, IntArrayRef strides, size_t itemsize,
                              const char* op) {
  checked_numel(sizes, op);  // negative sizes
  int64_t lo, hi, nbytes;
  bool overflow = false;
  if (!view_extent(sizes, strides, 0, false, op, lo, hi, overflow)) return 0;
  overflow |= __builtin_mul_overflow(hi + 1, int64_t(itemsize), &nbytes);
  KINDLE_CHECK(!overflow, op, ": Storage size calculation overflowed with sizes=", sizes,
               " and strides=", strides);
  return size_t(nbytes);
}

void check_view_in_storage(const StorageImpl& storage, size_t itemsize, IntArrayRef sizes,
                           IntArrayRef strides, int64_t offset, const char* op, bool allow_negative_strides) {
  KINDLE_CHECK(offset >= 0, op, ": Tensor: invalid storage offset ", offset);
  checked_numel(sizes, op);  // negative sizes
  int64_t lo, hi, end;
  bool overflow = false;
  if (!view_extent(sizes, strides, offset, allow_negative_strides, op, lo, hi, overflow)) return;
  overflow |= __builtin_add_overflow(hi, 1, &end);
  overflow |= __builtin_mul_overflow(end, int64_t(itemsize), &end);
  KINDLE_CHECK(!overflow && lo >= 0 && size_t(end) <= storage.nbytes(), op, ": setStorage: sizes ", sizes,
               ", strides ", strides, ", storage offset ", offset, ", and itemsize ", itemsize,
               " requiring a storage size of ", overflow ? std::string("more than 2^63") : std::to_string(end),
               " are out of bounds for storage of size ", storage.nbytes());
}

Tensor empty_tensor(IntArrayRef sizes, DType dtype, Device device) {
  int64_t numel = checked_numel(sizes, "empty"), nbytes;
  KINDLE_CHECK(!__builtin_mul_overflow(numel, int64_t(itemsize(dtype)), &nbytes),
               "Storage size calculation overflowed with sizes=", sizes);
  DimVector strides = contiguous_strides(sizes);
  Storage st = make_storage(nbytes, device);
  return Tensor(intrusive_ptr<TensorImpl>::make(std::move(st), dtype, sizes, strides, 0));
}

DimVector dims_by_stride(const Tensor& t) {
  DimVector perm, rest;
  for (int64_t d = 0; d < t.dim(); ++d) (t.size(d) == 1 ? perm : rest).push_back(d);
  std::stable_sort(rest.begin(), rest.end(), [&](int64_t x, int64_t y) { return t.stride(x) > t.stride(y); });
  for (int64_t d : rest) perm.push_back(d);
  return perm;
}

Tensor empty_tensor_like_layout(const Tensor& like, DType dtype) {
  return empty_tensor_like_layout(like, dtype, like.device());
}
Tensor empty_tensor_like_layout(const Tensor& like, DType dtype, Device device) {
  // contiguous in the order perm gives (outermost first), then each stride put back on its dim
  checked_numel(like.sizes(), "empty");  // (then no product below overflows)
  DimVector perm = dims_by_stride(like), strides(like.sizes());
  int64_t step = 1;
  for (size_t i = perm.size(); i-- > 0;) {
    strides[size_t(perm[i])] = step;
    step *= std::max<int64_t>(like.size(perm[i]), 1);
  }
  return empty_strided_tensor(like.sizes(), strides, dtype, device);
}

Tensor empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device) {
  size_t nbytes = checked_storage_nbytes(sizes, strides, itemsize(dtype), "empty_strided");
  Storage st = make_storage(nbytes, device);
  return Tensor(intrusive_ptr<TensorImpl>::make(std::move(st), dtype, sizes, strides, 0));
}

Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  auto impl = intrusive_ptr<TensorImpl>::make(base.impl()->storage(), base.dtype(), sizes, strides,
                                              offset);
  return Tensor(std::move(impl));
}

Tensor scalar_tensor_of(const Scalar& s, DType dtype, Device device) {
  Tensor t = empty_tensor({}, dtype, device);
  dispatch_all_and_complex(dtype, "scalar_tensor", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T value = s.to<T>();
    copy_bytes(t.raw_data_ptr(), device, &value, kCPU, sizeof(T));
  });
  return t;
}

Tensor scalar_to_tensor(const Scalar& s, Device device) {
  DType dt = s.is_bool() ? kBool : s.is_integral() ? kInt64 : s.is_complex() ? kComplex128 : kFloat64;
  Tensor t = scalar_tensor_of(s, dt, device);
  t.impl()->wrapped_number = true;
  return t;
}

Scalar Tensor::item() const {
  KINDLE_CHECK(numel() == 1, "a Tensor with ", numel(),
               " elements cannot be converted to Scalar (item() needs exactly one element)");
  KINDLE_CHECK(!device().is_meta(), "Tensor.item() cannot be called on meta tensors");
  return dispatch_all_and_complex(dtype(), "item", [&](auto tag) -> Scalar {
    using T = typename decltype(tag)::type;
    if (device().is_cpu()) return Scalar(*reinterpret_cast<const T*>(impl_->data()));
    T value;  // a device's element comes over to the host (and waits for the work that writes it)
    copy_bytes(&value, kCPU, impl_->data(), device(), sizeof(T));
    return Scalar(value);
  });
}

namespace detail {
void throw_not_host_memory(Device device) {
  if (device.is_meta())
    throw NotImplementedError("this operation depends on the values of a meta tensor, which has none (only a "
                              "shape, strides and a dtype); run it on real data");
  throw NotImplementedError(str_cat(
      "this operation reads the elements of a ", device, " tensor on the host and has no ", device,
      " kernel yet; move the tensor with .cpu() first"));
}
}  // namespace detail

}  // namespace kindle
