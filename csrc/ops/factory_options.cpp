// libtorch's factory spellings over the op table's factories (include/kindle/factories.h).
#include "kindle/factories.h"

#include "kindle/autograd.h"

namespace kindle {

namespace {
bool rg(const TensorOptions& o) { return o.requires_grad(); }
}  // namespace

Tensor empty(IntArrayRef size, const TensorOptions& o) { return empty(size, o.dtype_opt(), o.device_opt(), rg(o)); }
Tensor zeros(IntArrayRef size, const TensorOptions& o) { return zeros(size, o.dtype_opt(), o.device_opt(), rg(o)); }
Tensor ones(IntArrayRef size, const TensorOptions& o) { return ones(size, o.dtype_opt(), o.device_opt(), rg(o)); }
Tensor full(IntArrayRef size, const Scalar& v, const TensorOptions& o) {
  return full(size, v, o.dtype_opt(), o.device_opt(), rg(o));
}
Tensor rand(IntArrayRef size, const TensorOptions& o) {
  return rand(size, std::nullopt, o.dtype_opt(), o.device_opt(), rg(o));
}
Tensor randn(IntArrayRef size, const TensorOptions& o) {
  return randn(size, std::nullopt, o.dtype_opt(), o.device_opt(), rg(o));
}
Tensor randint(int64_t high, IntArrayRef size, const TensorOptions& o) {
  return randint(high, size, std::nullopt, o.dtype_opt(), o.device_opt(), rg(o));
}
Tensor randint(int64_t low, int64_t high, IntArrayRef size, const TensorOptions& o) {
  return randint(low, high, size, std::nullopt, o.dtype_opt(), o.device_opt(), rg(o));
}
Tensor randperm(int64_t n, const TensorOptions& o) {
  return randperm(n, std::nullopt, o.dtype_opt(), o.device_opt(), rg(o));
}
Tensor arange(const Scalar& end, const TensorOptions& o) {
  return arange(Scalar(int64_t(0)), end, Scalar(int64_t(1)), o.dtype_opt(), o.device_opt(), rg(o));
}
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& o) {
  return arange(start, end, Scalar(int64_t(1)), o.dtype_opt(), o.device_opt(), rg(o));
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o) {
  return arange(start, end, step, o.dtype_opt(), o.device_opt(), rg(o));
}
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o) {
  return linspace(start, end, steps, o.dtype_opt(), o.device_opt(), rg(o));
}
Tensor eye(int64_t n, const TensorOptions& o) { return eye(n, std::nullopt, o.dtype_opt(), o.device_opt(), rg(o)); }
Tensor eye(int64_t n, int64_t m, const TensorOptions& o) { return eye(n, m, o.dtype_opt(), o.device_opt(), rg(o)); }
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, const TensorOptions& o) {
  return empty_strided(size, stride, o.dtype_opt(), o.device_opt(), rg(o));
}
Tensor scalar_tensor(const Scalar& s, const TensorOptions& o) {
  return scalar_tensor(s, o.dtype_opt(), o.device_opt(), rg(o));
}
Tensor empty_like(const Tensor& t, const TensorOptions& o) { return empty_like(t, o.dtype_opt(), o.device_opt(), rg(o)); }
Tensor zeros_like(const Tensor& t, const TensorOptions& o) { return zeros_like(t, o.dtype_opt(), o.device_opt(), rg(o)); }
Tensor ones_like(const Tensor& t, const TensorOptions& o) { return ones_like(t, o.dtype_opt(), o.device_opt(), rg(o)); }
Tensor full_like(const Tensor& t, const Scalar& v, const TensorOptions& o) {
  return full_like(t, v, o.dtype_opt(), o.device_opt(), rg(o));
}
Tensor rand_like(const Tensor& t, const TensorOptions& o) { return rand_like(t, o.dtype_opt(), o.device_opt(), rg(o)); }
Tensor randn_like(const Tensor& t, const TensorOptions& o) { return randn_like(t, o.dtype_opt(), o.device_opt(), rg(o)); }

// ---- kindle::tensor

TensorData::TensorData(std::initializer_list<TensorData> list) : kind_(Kind::Bool) {
  sizes_.push_back(int64_t(list.size()));
  const TensorData* first = list.size() ? list.begin() : nullptr;
  for (const TensorData& e : list) {
    KINDLE_CHECK_VALUE(e.sizes_ == first->sizes_, "tensor: expected all elements of a nested list to have the same ",
                       "shape, got ", first->sizes_, " and ", e.sizes_);
    // The widest kind wins: bool < int < float; a typed vector fixes the dtype.
    if (e.kind_ == Kind::Typed) {
      kind_ = Kind::Typed;
      typed_ = e.typed_;
    } else if (kind_ != Kind::Typed && int(e.kind_) > int(kind_)) {
      kind_ = e.kind_;
    }
    values_.insert(values_.end(), e.values_.begin(), e.values_.end());
  }
  if (first)
    for (int64_t s : first->sizes_) sizes_.push_back(s);
  if (!first) kind_ = Kind::Float;  // tensor({}) is an empty float tensor
}

TensorData::TensorData(const std::vector<bool>& v) : sizes_{int64_t(v.size())}, kind_(Kind::Bool) {
  for (bool b : v) values_.emplace_back(b);
}

Tensor TensorData::to_tensor(const TensorOptions& options) const {
  DType natural = kind_ == Kind::Typed ? typed_
                  : kind_ == Kind::Float ? default_dtype()
                  : kind_ == Kind::Int   ? kInt64
                                         : kBool;
  DType d = options.has_dtype() ? options.dtype() : natural;
  // One buffer of the natural kind, then one cast: not one fill per element.
  Tensor out;
  if (is_floating_point(natural)) {
    std::vector<double> buf;
    buf.reserve(values_.size());
    for (const Scalar& v : values_) buf.push_back(v.to<double>());
    out = from_blob(buf.data(), sizes_, kFloat64).to(d, /*copy=*/true);
  } else {
    std::vector<int64_t> buf;
    buf.reserve(values_.size());
    for (const Scalar& v : values_) buf.push_back(v.to<int64_t>());
    out = from_blob(buf.data(), sizes_, kInt64).to(d, /*copy=*/true);
  }
  if (options.has_device() && !options.device().is_cpu()) out = out._to_device(options.device());
  if (options.requires_grad()) out.requires_grad_(true);
  return out;
}

Tensor tensor(const TensorData& data, const TensorOptions& options) {
  autograd::NoGradGuard no_grad;
  Tensor t = data.to_tensor(options.requires_grad(false));
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

// ---- from_blob

namespace {
Tensor blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options,
            std::function<void(void*)>* deleter) {
  KINDLE_CHECK(!options.has_device() || options.device().is_cpu(), "from_blob: only host memory can be wrapped, got ",
               "device ", options.device());
  DType d = options.dtype();
  size_t nbytes = checked_storage_nbytes(sizes, strides, itemsize(d), "from_blob");
  DataPtr ptr{data, nullptr, nullptr};
  if (deleter && *deleter) {
    ptr.ctx = new std::function<void(void*)>(*deleter);
    ptr.free_fn = [](void* ctx, void* p, size_t) {
      auto* fn = static_cast<std::function<void(void*)>*>(ctx);
      (*fn)(p);
      delete fn;
    };
  }
  Storage storage(new StorageImpl(ptr, nbytes, kCPU));
  check_view_in_storage(*storage, itemsize(d), sizes, strides, 0, "from_blob");
  Tensor t(intrusive_ptr<TensorImpl>(new TensorImpl(storage, d, sizes, strides, 0)));
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}
}  // namespace

Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options) {
  return blob(data, sizes, contiguous_strides(sizes), options, nullptr);
}
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options) {
  return blob(data, sizes, strides, options, nullptr);
}
Tensor from_blob(void* data, IntArrayRef sizes, const std::function<void(void*)>& deleter,
                 const TensorOptions& options) {
  std::function<void(void*)> d = deleter;
  return blob(data, sizes, contiguous_strides(sizes), options, &d);
}

// ---- Tensor conveniences (include/kindle/tensor.h)

Tensor Tensor::operator[](int64_t index) const { return select(0, index); }
Tensor Tensor::operator[](const Tensor& index) const { return kindle::index(*this, {index}); }

Tensor Tensor::to(Device device, std::optional<DType> dtype, bool non_blocking, bool copy) const {
  Tensor t = *this;
  if (dtype && *dtype != t.dtype()) {
    t = t.to(*dtype, copy);
    copy = false;
  }
  if (device != t.device()) return t._to_device(device, non_blocking);
  return copy ? t.clone() : t;
}
Tensor Tensor::to(const TensorOptions& o, bool non_blocking, bool copy) const {
  return to(o.has_device() ? o.device() : device(), o.dtype_opt(), non_blocking, copy);
}
Tensor Tensor::to(const Tensor& other, bool non_blocking, bool copy) const {
  return to(other.device(), other.dtype(), non_blocking, copy);
}
Tensor Tensor::cpu() const { return to(kCPU); }
Tensor Tensor::cuda() const { return to(Device(DeviceType::CUDA, 0)); }
Tensor Tensor::toType(DType d) const { return to(d); }
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  return kindle::slice(*this, dim, start, end, step);
}
Tensor Tensor::data() const { return detach(); }

std::ostream& operator<<(std::ostream& os, const TensorOptions& o) {
  return os << "TensorOptions(dtype=" << o.dtype() << ", device=" << o.device()
            << ", requires_grad=" << (o.requires_grad() ? "true" : "false") << ")";
}

}  // namespace kindle
