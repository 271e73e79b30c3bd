#include "kindle/dtype.h"
#include "kindle/device.h"
#include "kindle/scalar.h"

#include <atomic>
#include <string>

namespace kindle {

const char* dtype_name(DType t) {
  static const char* names[] = {"bool",  "uint8",   "int8",     "int16",   "int32",
                                "int64", "float16", "bfloat16", "float32", "float64"};
  return names[int(t)];
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == kBool) return b;
  if (b == kBool) return a;
  bool fa = is_floating_point(a), fb = is_floating_point(b);
  if (fa != fb) return fa ? a : b;
  if (fa) {  // two different float types
    if ((a == kFloat16 && b == kBFloat16) || (a == kBFloat16 && b == kFloat16)) return kFloat32;
    return itemsize(a) >= itemsize(b) ? a : b;
  }
  // two different integer types: uint8 with int8 needs int16 to hold both ranges
  if ((a == kUInt8 && b == kInt8) || (a == kInt8 && b == kUInt8)) return kInt16;
  return itemsize(a) >= itemsize(b) ? a : b;
}

static std::atomic<DType> g_default_dtype{kFloat32};
DType default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }
void set_default_dtype(DType t) {
  KINDLE_CHECK_TYPE(t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kBFloat16,
                    "set_default_dtype: only floating point types are supported as the default "
                    "type, got ", t);
  g_default_dtype = t;
}

Device Device::parse(std::string_view s) {
  std::string str(s);
  if (str == "cpu") return kCPU;
  if (str.rfind("cpu:", 0) == 0) return Device(DeviceType::CPU, int8_t(std::stoi(str.substr(4))));
  if (str == "cuda" || str.rfind("cuda:", 0) == 0)
    return Device(DeviceType::CUDA, str.size() > 5 ? int8_t(std::stoi(str.substr(5))) : int8_t(-1));
  throw Error(detail::str_cat("Expected one of cpu, cuda device type at start of device string: ", str));
}

std::ostream& operator<<(std::ostream& os, Device d) {
  os << (d.type == DeviceType::CPU ? "cpu" : "cuda");
  if (d.index >= 0) os << ':' << int(d.index);
  return os;
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_bool()) return os << (s.to_bool() ? "True" : "False");
  if (s.is_integral()) return os << s.to_int();
  return os << s.to_double();
}

}  // namespace kindle
