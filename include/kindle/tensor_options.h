// TensorOptions: the dtype, device and requires_grad of a tensor to create, as libtorch spells
// them: kindle::zeros({2, 2}, kindle::dtype(kFloat64).requires_grad(true)), t.options().
#pragma once
#include <optional>

#include "kindle/device.h"
#include "kindle/dtype.h"

namespace kindle {

enum class Layout : int8_t { Strided = 0, Sparse = 1 };
constexpr Layout kStrided = Layout::Strided;
constexpr Layout kSparse = Layout::Sparse;
enum class MemoryFormat : int8_t { Contiguous = 0, Preserve = 1, ChannelsLast = 2 };

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}
  TensorOptions(Device d) : device_(d) {}
  TensorOptions(DeviceType t) : device_(Device(t)) {}
  TensorOptions(Layout l) : layout_(l) {}

  // Each setter returns a copy with one field set (the libtorch builder style).
  TensorOptions dtype(std::optional<DType> d) const { auto o = *this; o.dtype_ = d; return o; }
  TensorOptions device(std::optional<Device> d) const { auto o = *this; o.device_ = d; return o; }
  TensorOptions device_index(int8_t index) const { return device(Device(DeviceType::CUDA, index)); }
  TensorOptions requires_grad(std::optional<bool> r) const { auto o = *this; o.requires_grad_ = r; return o; }
  TensorOptions layout(std::optional<Layout> l) const { auto o = *this; o.layout_ = l; return o; }
  TensorOptions pinned_memory(std::optional<bool> p) const { auto o = *this; o.pinned_ = p; return o; }
  TensorOptions memory_format(std::optional<MemoryFormat> m) const { auto o = *this; o.memory_format_ = m; return o; }

  DType dtype() const { return dtype_ ? *dtype_ : ::kindle::default_dtype(); }
  Device device() const { return device_.value_or(kCPU); }
  bool requires_grad() const { return requires_grad_.value_or(false); }
  Layout layout() const { return layout_.value_or(kStrided); }
  bool pinned_memory() const { return pinned_.value_or(false); }
  bool has_dtype() const { return dtype_.has_value(); }
  bool has_device() const { return device_.has_value(); }
  bool has_requires_grad() const { return requires_grad_.has_value(); }
  std::optional<DType> dtype_opt() const { return dtype_; }
  std::optional<Device> device_opt() const { return device_; }
  std::optional<bool> requires_grad_opt() const { return requires_grad_; }
  std::optional<MemoryFormat> memory_format_opt() const { return memory_format_; }

 private:
  std::optional<DType> dtype_;
  std::optional<Device> device_;
  std::optional<bool> requires_grad_;
  std::optional<Layout> layout_;
  std::optional<bool> pinned_;
  std::optional<MemoryFormat> memory_format_;
};

inline TensorOptions dtype(DType d) { return TensorOptions().dtype(d); }
template <typename T>
TensorOptions dtype() { return TensorOptions().dtype(dtype_of_v<T>); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions device_index(int8_t index) { return TensorOptions().device_index(index); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }
inline TensorOptions layout(Layout l) { return TensorOptions().layout(l); }

std::ostream& operator<<(std::ostream& os, const TensorOptions& o);

}  // namespace kindle
