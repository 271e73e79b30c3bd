// Devices. The CPU has kernels; CUDA when built with it (csrc/cuda/ registering kernels); `meta`
// tensors have shapes, strides and dtypes but no data: every op computes its result's metadata
// (and raises its shape and dtype errors) and its kernels do nothing (ops/kernels.h).
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace kindle {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1, Meta = 2 };
constexpr int kNumDeviceTypes = 3;

// libtorch's Device: type() and index() (-1: the current device of that type), built from a
// DeviceType, a DeviceType and an index, or a string ("cpu", "cuda:1").
class Device {
 public:
  constexpr Device() = default;
  constexpr Device(DeviceType t, int8_t i = -1) : type_(t), index_(i) {}
  // Device(kCUDA, 1): libtorch's kCUDA is a DeviceType, Kindle's a Device.
  constexpr Device(Device d, int8_t i) : type_(d.type_), index_(i) {}
  Device(const std::string& s) : Device(parse(s)) {}  // NOLINT: implicit, as libtorch's
  Device(const char* s) : Device(parse(s)) {}         // NOLINT
  // Parses "cpu", "cuda", "cuda:1", "meta"; raises for anything else.
  static Device parse(std::string_view s);
  constexpr DeviceType type() const { return type_; }
  constexpr int8_t index() const { return index_; }
  void set_index(int8_t i) { index_ = i; }
  constexpr bool is_cpu() const { return type_ == DeviceType::CPU; }
  constexpr bool is_cuda() const { return type_ == DeviceType::CUDA; }
  constexpr bool is_meta() const { return type_ == DeviceType::Meta; }
  constexpr bool has_index() const { return index_ >= 0; }
  std::string str() const;
  friend constexpr bool operator==(Device a, Device b) { return a.type_ == b.type_ && a.index_ == b.index_; }

 private:
  DeviceType type_ = DeviceType::CPU;
  int8_t index_ = -1;
};
constexpr Device kCPU{DeviceType::CPU};
constexpr Device kCUDA{DeviceType::CUDA};
constexpr Device kMeta{DeviceType::Meta};

std::ostream& operator<<(std::ostream& os, Device d);

}  // namespace kindle
