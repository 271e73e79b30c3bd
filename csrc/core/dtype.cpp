#include <sstream>
#include "kindle/dtype.h"
#include "kindle/device.h"
#include "kindle/scalar.h"

#include <atomic>
#include <cmath>
#include <string>

#include "kindle/error.h"

namespace kindle {

const char* dtype_name(DType t) {
  static const char* names[] = {"bool",  "uint8",   "int8",     "int16",   "int32",
                                "int64", "float16", "bfloat16", "float32", "float64",
                                "complex64", "complex128"};
  return names[int(t)];
}

const char* scalar_type_name(DType t) {
  static const char* names[] = {"Bool", "Byte", "Char",     "Short", "Int",
                                "Long", "Half", "BFloat16", "Float", "Double",
                                "ComplexFloat", "ComplexDouble"};
  return names[int(t)];
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == kBool) return b;
  if (b == kBool) return a;
  if (is_complex(a) || is_complex(b)) {
    // complex128 when either side holds double precision (complex64 with float64 included)
    auto wide = [](DType t) { return t == kComplex128 || t == kFloat64; };
    return wide(a) || wide(b) ? kComplex128 : kComplex64;
  }
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
  if (str == "meta") return kMeta;
  throw Error(detail::str_cat("Expected one of cpu, cuda, meta device type at start of device string: ", str));
}

std::string Device::str() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, Device d) {
  static const char* names[kNumDeviceTypes] = {"cpu", "cuda", "meta"};
  os << names[int(d.type())];
  if (d.index() >= 0) os << ':' << int(d.index());
  return os;
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_bool()) return os << (s.to_bool() ? "True" : "False");
  if (s.is_integral()) return os << s.to_int();
  if (s.is_complex()) {
    c128 c = s.to_complex();
    return os << '(' << c.real() << (std::signbit(c.imag()) ? "-" : "+") << std::abs(c.imag()) << "j)";
  }
  return os << s.to_double();
}

namespace detail {
void complex_not_implemented(DType t, const char* op) {
  throw NotImplementedError(str_cat("\"", op, "\" not implemented for '", scalar_type_name(t), "'"));
}
}  // namespace detail

void check_kernel_dtype(DType t, const char* kernel, bool ints, bool boolean) {
  bool ok = t == kBool ? boolean : is_integral(t, false) ? ints : !is_complex(t);
  if (!ok) throw NotImplementedError(detail::str_cat("\"", kernel, "\" not implemented for '", scalar_type_name(t), "'"));
}

void check_scalar_fits(const Scalar& s, DType dtype, const char* op) {
  if (dtype == kBool || s.is_bool()) return;
  double lo = 0, hi = 0;  // an integer target's range; a float target's overflow threshold in hi
  const char* name = "";
  switch (dtype) {
    case kUInt8: lo = -255; hi = 255; name = "uint8_t"; break;
    case kInt8: lo = -128; hi = 127; name = "int8_t"; break;
    case kInt16: lo = -32768; hi = 32767; name = "int16_t"; break;
    case kInt32: lo = -2147483648.0; hi = 2147483647.0; name = "int"; break;
    case kInt64: name = "int64_t"; break;
    // Beyond these a finite value rounds to infinity (half way past the largest finite value).
    case kFloat16: hi = 65520.0; name = "c10::Half"; break;
    case kBFloat16: hi = 3.3961775292304e38; name = "c10::BFloat16"; break;
    case kFloat32: hi = 3.4028235677973366e38; name = "float"; break;
    default: return;  // float64 holds every Scalar
  }
  bool fits;
  if (is_floating_point(dtype)) {
    double v = s.to_double();
    fits = !std::isfinite(v) || (v > -hi && v < hi);
  } else if (s.is_integral()) {
    double v = double(s.to_int());
    fits = dtype == kInt64 || (v >= lo && v <= hi);
  } else {  // a float into an integer type: within the range before truncation (-0.5 does not fit uint8)
    double v = s.to_double();
    // (compared as doubles, as PyTorch does: 2**63 - 1 as a double is 2**63 and fits)
    if (dtype == kInt64) fits = std::isfinite(v) && v >= -9223372036854775808.0 && v <= 9223372036854775808.0;
    else fits = std::isfinite(v) && v >= (dtype == kUInt8 ? 0 : lo) && v <= hi;
  }
  KINDLE_CHECK(fits, op, ": value cannot be converted to type ", name, " without overflow (got ", s, ")");
}

}  // namespace kindle
