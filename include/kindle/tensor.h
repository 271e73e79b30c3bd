// Tensor: a cheap, reference-counted handle to a TensorImpl (sizes, strides, storage offset,
// dtype, device). Views share the Storage, and with it the version counter.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "kindle/accessor.h"
#include "kindle/array_ref.h"
#include "kindle/dtype.h"
#include "kindle/scalar.h"
#include "kindle/random.h"
#include "kindle/storage.h"
#include "kindle/tensor_options.h"

namespace kindle {

class Tensor;
class Generator;
namespace autograd {
struct Node;
}
namespace indexing {
class TensorIndex;
}
using TensorList = ArrayRef<Tensor>;
namespace detail {
[[noreturn]] void throw_not_host_memory(Device device);
}
// An optional list of dims: nothing, a list, or one dim (t.sum(0), as libtorch). Only these
// constructors exist, so that no implicit conversion makes a view of a temporary that dies
// before the call it is passed to.
class OptionalIntArrayRef : public std::optional<IntArrayRef> {
  using Base = std::optional<IntArrayRef>;

 public:
  constexpr OptionalIntArrayRef() = default;
  constexpr OptionalIntArrayRef(std::nullopt_t) {}
  OptionalIntArrayRef(const Base& b) : Base(b) {}
  OptionalIntArrayRef(IntArrayRef a) : Base(a) {}
  // The list's array lives until the end of the caller's full expression, as the view does.
  OptionalIntArrayRef(std::initializer_list<int64_t> il) : Base(IntArrayRef(il.begin(), il.size())) {}
  OptionalIntArrayRef(const std::vector<int64_t>& v) : Base(IntArrayRef(v)) {}
  template <size_t N>
  OptionalIntArrayRef(const SmallVector<int64_t, N>& v) : Base(IntArrayRef(v)) {}
  OptionalIntArrayRef(const int64_t& one) : Base(IntArrayRef(one)) {}
};

// Autograd state is owned by the autograd layer; the core only keeps a pointer to it.
struct AutogradMetaInterface {
  virtual ~AutogradMetaInterface() = default;
};

class TensorImpl : public RefCounted<TensorImpl> {
 public:
  TensorImpl(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides, int64_t offset);

  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t dim() const { return int64_t(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  const Storage& storage() const { return storage_; }
  bool is_contiguous() const { return contiguous_; }
  // Null for a meta tensor (no bytes behind it), whatever its offset.
  char* data() const {
    char* base = static_cast<char*>(storage_->data());
    return base ? base + offset_ * int64_t(itemsize(dtype_)) : nullptr;
  }
  void set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t offset);
  // Makes this tensor look at o's storage with o's geometry and dtype (Python's `t.data = o`).
  void set_data(const TensorImpl& o) {
    storage_ = o.storage_;
    dtype_ = o.dtype_;
    set_sizes_and_strides(o.sizes_, o.strides_, o.offset_);
  }

  bool requires_grad = false;
  // A tensor made from a Python number: it takes part in type promotion as a lower category.
  bool wrapped_number = false;
  std::unique_ptr<AutogradMetaInterface> autograd_meta;

 private:
  void refresh();
  Storage storage_;
  DimVector sizes_, strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 1;
  DType dtype_;
  bool contiguous_ = true;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return bool(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const intrusive_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef shape() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  int64_t size(int64_t dim) const;    // dim may be negative
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return impl_->dim(); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return impl_->numel(); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  DType dtype() const { return impl_->dtype(); }
  DType scalar_type() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  size_t element_size() const { return itemsize(dtype()); }
  size_t nbytes() const { return size_t(numel()) * element_size(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  bool is_floating_point() const { return kindle::is_floating_point(dtype()); }
  bool is_complex() const { return kindle::is_complex(dtype()); }
  bool requires_grad() const { return impl_->requires_grad; }
  uint32_t version() const { return impl_->storage()->version(); }
  // Made in inference mode (its storage was allocated there): see storage.h.
  bool is_inference() const { return impl_->storage()->is_inference(); }
  void bump_version() const { impl_->storage()->bump_version(); }

  // Host code reads and writes a tensor's elements through data_ptr(), which refuses a tensor
  // whose memory is not the host's (a CUDA tensor: dereferencing it would crash the process).
  void* data_ptr() const {
    if (!impl_->device().is_cpu()) [[unlikely]] detail::throw_not_host_memory(impl_->device());
    return impl_->data();
  }
  // The typed pointer is what host code outside Kindle's kernels writes through (libtorch's
  // data_ptr<T>, accessor, mutable_data_ptr), bypassing the version counter: the storage is
  // marked exported so that nothing derived from its bytes is cached (csrc/core/derived_cache.h).
  template <typename T>
  T* data_ptr() const {
    T* p = const_data_ptr_unmarked<T>();
    if (!impl_->storage()->exported()) impl_->storage()->mark_exported();
    return p;
  }
  // The address on the tensor's own device, for that device's kernels and for stub arguments
  // that only pass it on (never dereferenced by host code unless the device is the CPU).
  void* raw_data_ptr() const { return impl_->data(); }
  Scalar item() const;
  template <typename T>
  T item() const { return item().to<T>(); }

  std::string to_string() const;  // the same text as Python's repr

  // ---- libtorch's conveniences
  TensorOptions options() const { return TensorOptions().dtype(dtype()).device(device()).requires_grad(requires_grad()); }
  Tensor operator[](int64_t index) const;       // select(0, index)
  Tensor operator[](const Tensor& index) const;  // advanced indexing along dim 0
  // The same data on `device` (as `dtype`); `this` when nothing changes and copy is false.
  Tensor to(Device device, std::optional<DType> dtype = std::nullopt, bool non_blocking = false, bool copy = false) const;
  Tensor to(const TensorOptions& options, bool non_blocking = false, bool copy = false) const;
  Tensor to(const Tensor& other, bool non_blocking = false, bool copy = false) const;
  Tensor cpu() const;
  Tensor cuda() const;
  bool is_cuda() const { return device().is_cuda(); }
  bool is_cpu() const { return device().is_cpu(); }
  // A meta tensor has no values: checks that read values (index bounds) do not apply to it.
  bool is_meta() const { return device().is_meta(); }
  // t.accessor<float, 2>()[i][j] (kindle/accessor.h): TypeError unless the dtype is T,
  // RuntimeError unless the tensor has N dimensions; indices are checked (IndexError).
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() const& {
    KINDLE_CHECK(size_t(dim()) == N, "accessor: expected a ", N, "-dimensional tensor, got ", dim(), " dimensions");
    return TensorAccessor<T, N>(data_ptr<T>(), sizes().data(), strides().data());
  }
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() && = delete;
  template <typename T>
  T* mutable_data_ptr() const { return data_ptr<T>(); }
  template <typename T>
  const T* const_data_ptr() const { return const_data_ptr_unmarked<T>(); }
  Tensor toType(DType dtype) const;
  // Elements start..end (step apart) along dim: a view, as x[start:end:step] in Python.
  Tensor slice(int64_t dim = 0, std::optional<int64_t> start = std::nullopt, std::optional<int64_t> end = std::nullopt,
               int64_t step = 1) const;
  // The same data without autograd history (libtorch's Tensor::data()).
  Tensor data() const;
  // t.index({Slice(), 0}) is Python's t[:, 0]; index_put_ is t[...] = value (kindle/indexing.h).
  Tensor index(ArrayRef<indexing::TensorIndex> indices) const;
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  const Tensor& index_put_(ArrayRef<indexing::TensorIndex> indices, const Tensor& value) const;
  const Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& value) const;
  const Tensor& index_put_(ArrayRef<indexing::TensorIndex> indices, const Scalar& value) const;
  const Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value) const;

  // Autograd (csrc/autograd/variable.cpp).
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  std::shared_ptr<autograd::Node> grad_fn() const;
  bool is_leaf() const;
  uint32_t output_nr() const;
  const Tensor& requires_grad_(bool requires_grad = true) const;
  void retain_grad() const;
  bool retains_grad() const;
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  // The hook gets the gradient and returns a replacement (or an undefined Tensor to keep it).
  uint64_t register_hook(std::function<Tensor(const Tensor&)> hook) const;
  void remove_hook(uint64_t handle) const;
  const Tensor& detach_() const;
  bool is_view() const;   // made as a view while grad mode was on
  Tensor base() const;

#include "kindle/tensor_methods.inc"

 private:
  template <typename T>
  T* const_data_ptr_unmarked() const {
    KINDLE_CHECK_TYPE(dtype_of_v<T> == dtype(), "data_ptr: tensor has dtype ", dtype(),
                      ", asked for ", dtype_of_v<T>);
    return reinterpret_cast<T*>(data_ptr());
  }

  intrusive_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// How tensors print (torch.set_printoptions): digits after the point, the element count above
// which only edgeitems per dimension are shown, the line width, and scientific notation forced
// on or off (unset: chosen from the values).
struct PrintOptions {
  int64_t precision = 4;
  double threshold = 1000;
  int64_t edgeitems = 3;
  int64_t linewidth = 80;
  std::optional<bool> sci_mode;
};
void set_printoptions(const PrintOptions& options);
PrintOptions get_printoptions();

// Wraps a dimension index that may be negative; raises IndexError naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
DimVector contiguous_strides(IntArrayRef sizes);
int64_t numel_of(IntArrayRef sizes);

// Note [Checked sizes]: every size, stride, offset and byte count that reaches memory goes
// through these. A product that overflows int64, a negative size, stride or offset, or a view
// whose extent leaves its storage raises RuntimeError naming `op` and the values; nothing is
// ever allocated or read with a wrapped size.
int64_t checked_numel(IntArrayRef sizes, const char* op = "numel");
// Bytes a tensor of these sizes/strides (elements of `itemsize` bytes) needs from its storage
// offset on: 0 when empty, else (1 + sum (size-1)*stride) * itemsize, checked.
size_t checked_storage_nbytes(IntArrayRef sizes, IntArrayRef strides, size_t itemsize,
                              const char* op);
// Raises unless a view (sizes, strides, offset) of `storage` stays inside it. Negative strides
// are for Kindle's own views (flip); as_strided and empty_strided refuse them, as PyTorch does.
void check_view_in_storage(const StorageImpl& storage, size_t itemsize, IntArrayRef sizes,
                           IntArrayRef strides, int64_t offset, const char* op,
                           bool allow_negative_strides = false);

// A tensor of the given shape, uninitialised, with contiguous strides.
Tensor empty_tensor(IntArrayRef sizes, DType dtype, Device device = kCPU);
// The dims of `t` in the order its memory is laid out, outermost (largest stride) first; size-1
// dims, which order nothing, come first. PyTorch's iterators visit elements in this order.
DimVector dims_by_stride(const Tensor& t);
// A dense uninitialised tensor of `like`'s shape laid out in `like`'s memory order (empty_like
// with preserve_format).
Tensor empty_tensor_like_layout(const Tensor& like, DType dtype);
Tensor empty_tensor_like_layout(const Tensor& like, DType dtype, Device device);  // (on `device`)
// A tensor with the given strides over a fresh storage big enough for them.
Tensor empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device = kCPU);
// A new TensorImpl viewing `base`'s storage (shares the version counter).
Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset);
// Tensor.view(dtype): the same bytes read as another dtype (the last dimension scales when the
// element sizes differ, as in PyTorch). Not differentiable.
Tensor view_dtype(const Tensor& self, DType dtype);
// A 0-d tensor holding `s`, flagged as a wrapped number for type promotion.
Tensor scalar_to_tensor(const Scalar& s, Device device = kCPU);
Tensor scalar_tensor_of(const Scalar& s, DType dtype, Device device = kCPU);

}  // namespace kindle
