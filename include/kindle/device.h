// Devices. Only the CPU has kernels today; every factory and dispatch already takes a Device so
// that a CUDA backend is an addition (csrc/cuda/ registering kernels), not an edit of call sites.
#pragma once
#include <cstdint>
#include <ostream>
#include <string_view>

namespace kindle {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int8_t index = -1;
  constexpr Device() = default;
  constexpr Device(DeviceType t, int8_t i = -1) : type(t), index(i) {}
  // Device(kCUDA, 1): libtorch's kCUDA is a DeviceType, Kindle's a Device.
  constexpr Device(Device d, int8_t i) : type(d.type), index(i) {}
  // Parses "cpu", "cuda", "cuda:1"; raises for anything else.
  static Device parse(std::string_view s);
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool has_index() const { return index >= 0; }
  friend bool operator==(Device a, Device b) { return a.type == b.type && a.index == b.index; }
};
constexpr Device kCPU{DeviceType::CPU};
constexpr Device kCUDA{DeviceType::CUDA};

std::ostream& operator<<(std::ostream& os, Device d);

}  // namespace kindle
