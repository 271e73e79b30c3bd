// Element types, the two 16-bit float formats, type promotion and the dtype dispatcher.
#pragma once
#include <complex>
#include <cstdint>
#include <cstring>
#include <ostream>

#include "kindle/error.h"

namespace kindle {

// Order matters: promote_types and the Python dtype objects index by it.
enum class DType : int8_t {
  Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64, Complex64, Complex128
};
constexpr int kNumDTypes = 12;
constexpr DType kBool = DType::Bool, kUInt8 = DType::UInt8, kInt8 = DType::Int8,
                kInt16 = DType::Int16, kInt32 = DType::Int32, kInt64 = DType::Int64,
                kFloat16 = DType::Float16, kBFloat16 = DType::BFloat16,
                kFloat32 = DType::Float32, kFloat64 = DType::Float64,
                kComplex64 = DType::Complex64, kComplex128 = DType::Complex128;
// libtorch's names for the same dtypes.
using ScalarType = DType;
using Dtype = DType;
constexpr DType kFloat = kFloat32, kDouble = kFloat64, kHalf = kFloat16, kLong = kInt64, kInt = kInt32,
                kShort = kInt16, kChar = kInt8, kByte = kUInt8, kComplexFloat = kComplex64,
                kComplexDouble = kComplex128;

// Complex elements are std::complex (two floats, real first: the layout of C99, NumPy and PyTorch).
using c64 = std::complex<float>;
using c128 = std::complex<double>;

namespace detail {
inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
}  // namespace detail

// IEEE binary16, converted with round-to-nearest-even; arithmetic happens in float.
struct Half {
  uint16_t x = 0;
  Half() = default;
  Half(float f) : x(from_float(f)) {}
  operator float() const { return to_float(x); }
  static uint16_t from_float(float f) {
    uint32_t u = detail::f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return uint16_t(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow to inf
    if (a < 0x38800000u) {  // subnormal or zero in half
      float v = detail::bits_f32(a) + 0.5f;  // adding 0.5 rounds the mantissa into place
      return uint16_t(sign | (detail::f32_bits(v) - 0x3f000000u));
    }
    uint32_t mant_odd = (a >> 13) & 1u;
    a += 0xc8000fffu + mant_odd;  // rebias exponent and round to nearest even
    return uint16_t(sign | (a >> 13));
  }
  static float to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t a = uint32_t(h & 0x7fffu) << 13;
    uint32_t exp = a & 0x0f800000u;
    a += 0x38000000u;  // exponent rebias
    if (exp == 0x0f800000u) a += 0x38000000u;  // inf / nan
    else if (exp == 0) {  // subnormal
      a += 1u << 23;
      a = detail::f32_bits(detail::bits_f32(a) - detail::bits_f32(113u << 23));
    }
    return detail::bits_f32(sign | a);
  }
};

// bfloat16: the top half of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  BFloat16(float f) {
    uint32_t u = detail::f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) x = uint16_t((u >> 16) | 0x40u);
    else x = uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  operator float() const { return detail::bits_f32(uint32_t(x) << 16); }
};

constexpr size_t itemsize(DType t) {
  constexpr size_t s[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};
  return s[int(t)];
}
constexpr bool is_floating_point(DType t) { return t >= DType::Float16 && t <= DType::Float64; }
constexpr bool is_complex(DType t) { return t >= DType::Complex64; }
// complex64 <-> float32, complex128 <-> float64 (the part type, and back).
constexpr DType to_real_value_type(DType t) {
  return t == DType::Complex64 ? DType::Float32 : t == DType::Complex128 ? DType::Float64 : t;
}
constexpr DType to_complex_type(DType t) { return t == DType::Float64 || t == DType::Complex128 ? DType::Complex128 : DType::Complex64; }
constexpr bool is_integral(DType t, bool include_bool) {
  return t == DType::Bool ? include_bool : t <= DType::Int64;
}
constexpr bool is_signed(DType t) { return t != DType::Bool && t != DType::UInt8; }
const char* dtype_name(DType t);  // "float32"
const char* scalar_type_name(DType t);  // "Float": PyTorch's C++ name, as its error messages print it
// The dtypes a kernel has, as PyTorch declares them: NotImplementedError ("<kernel>" not implemented
// for 'Long') for an integer dtype unless `ints`, for bool unless `boolean`.
void check_kernel_dtype(DType t, const char* kernel, bool ints, bool boolean);
inline std::ostream& operator<<(std::ostream& os, DType t) { return os << "kindle." << dtype_name(t); }

// PyTorch's promotion lattice for two dtypes of the same participation level.
DType promote_types(DType a, DType b);
// The default float type for factories and for promoting integers in true division etc.
DType default_dtype();
void set_default_dtype(DType t);

template <typename T> struct dtype_of;
#define KINDLE_DTYPE_OF(T, D) template <> struct dtype_of<T> { static constexpr DType value = D; };
KINDLE_DTYPE_OF(bool, kBool)
KINDLE_DTYPE_OF(uint8_t, kUInt8)
KINDLE_DTYPE_OF(int8_t, kInt8)
KINDLE_DTYPE_OF(int16_t, kInt16)
KINDLE_DTYPE_OF(int32_t, kInt32)
KINDLE_DTYPE_OF(int64_t, kInt64)
KINDLE_DTYPE_OF(Half, kFloat16)
KINDLE_DTYPE_OF(BFloat16, kBFloat16)
KINDLE_DTYPE_OF(float, kFloat32)
KINDLE_DTYPE_OF(double, kFloat64)
KINDLE_DTYPE_OF(c64, kComplex64)
KINDLE_DTYPE_OF(c128, kComplex128)
#undef KINDLE_DTYPE_OF
template <typename T> constexpr DType dtype_of_v = dtype_of<T>::value;

// The type arithmetic on T is carried out in: 16-bit floats compute in float.
template <typename T> struct opmath { using type = T; };
template <> struct opmath<Half> { using type = float; };
template <> struct opmath<BFloat16> { using type = float; };
template <typename T> using opmath_t = typename opmath<T>::type;

template <typename T> struct TypeTag { using type = T; };
template <typename T> constexpr bool is_complex_v = std::is_same_v<T, c64> || std::is_same_v<T, c128>;

namespace detail {
// The kernels that have no complex version say so, as PyTorch does: NotImplementedError
// ("op" not implemented for 'ComplexFloat'), never a silent cast to a real type.
[[noreturn]] void complex_not_implemented(DType t, const char* op);
}  // namespace detail

// Calls f(TypeTag<T>{}) for the C++ type of `t`. The variants restrict the set of dtypes and
// raise a TypeError naming the op for the others.
template <typename F>
decltype(auto) dispatch_all(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Bool: return f(TypeTag<bool>{});
    case DType::UInt8: return f(TypeTag<uint8_t>{});
    case DType::Int8: return f(TypeTag<int8_t>{});
    case DType::Int16: return f(TypeTag<int16_t>{});
    case DType::Int32: return f(TypeTag<int32_t>{});
    case DType::Int64: return f(TypeTag<int64_t>{});
    case DType::Float16: return f(TypeTag<Half>{});
    case DType::BFloat16: return f(TypeTag<BFloat16>{});
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    case DType::Complex64:
    case DType::Complex128: detail::complex_not_implemented(t, op);
  }
  KINDLE_ERROR(op, ": invalid dtype");
}
// Every dtype, the complex ones included (copies, fills, element access).
template <typename F>
decltype(auto) dispatch_all_and_complex(DType t, const char* op, F&& f) {
  if (t == DType::Complex128) return f(TypeTag<c128>{});
  if (t == DType::Complex64) return f(TypeTag<c64>{});
  return dispatch_all(t, op, f);
}
// The complex dtypes only (kernels written for them).
template <typename F>
decltype(auto) dispatch_complex(DType t, const char* op, F&& f) {
  if (t == DType::Complex128) return f(TypeTag<c128>{});
  if (t == DType::Complex64) return f(TypeTag<c64>{});
  throw Error(detail::str_cat(op, ": expected a complex tensor, got ", t));
}
template <typename F>
decltype(auto) dispatch_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float16: return f(TypeTag<Half>{});
    case DType::BFloat16: return f(TypeTag<BFloat16>{});
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    case DType::Complex64:
    case DType::Complex128: detail::complex_not_implemented(t, op);
    default: break;
  }
  throw Error(detail::str_cat(op, ": expected a floating point tensor, got ", t));
}
template <typename F>
decltype(auto) dispatch_numeric(DType t, const char* op, F&& f) {  // all but bool
  KINDLE_CHECK(t != DType::Bool, op, ": not supported for kindle.bool tensors");
  return dispatch_all(t, op, f);
}
template <typename F>
decltype(auto) dispatch_integral(DType t, const char* op, F&& f, bool include_bool = true) {
  switch (t) {
    case DType::Bool: if (include_bool) return f(TypeTag<bool>{}); break;
    case DType::UInt8: return f(TypeTag<uint8_t>{});
    case DType::Int8: return f(TypeTag<int8_t>{});
    case DType::Int16: return f(TypeTag<int16_t>{});
    case DType::Int32: return f(TypeTag<int32_t>{});
    case DType::Int64: return f(TypeTag<int64_t>{});
    default: break;
  }
  throw Error(detail::str_cat(op, ": expected an integer", include_bool ? " or bool" : "",
                                  " tensor, got ", t));
}

}  // namespace kindle
