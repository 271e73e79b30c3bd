// Scalar: a number passed to an op (alpha, fill values, Python numbers). Remembers whether it
// was a bool, an integer, a float or a complex number, which matters for type promotion.
#pragma once
#include <cstdint>
#include <ostream>
#include <type_traits>

#include "kindle/dtype.h"

namespace kindle {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float, Complex };
  Scalar() : Scalar(int64_t(0)) {}
  Scalar(bool b) : kind_(Kind::Bool) { v_.i = b; }
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T i) : kind_(Kind::Int) { v_.i = int64_t(i); }
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T d) : kind_(Kind::Float) { v_.d = double(d); }
  Scalar(Half h) : Scalar(float(h)) {}
  Scalar(BFloat16 h) : Scalar(float(h)) {}
  template <typename T>
  Scalar(std::complex<T> c) : kind_(Kind::Complex), im_(double(c.imag())) { v_.d = double(c.real()); }

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating_point() const { return kind_ == Kind::Float; }
  bool is_complex() const { return kind_ == Kind::Complex; }
  // A complex number's real part (the imaginary part is dropped, as a cast to a real type does).
  double to_double() const { return kind_ >= Kind::Float ? v_.d : double(v_.i); }
  c128 to_complex() const { return {to_double(), kind_ == Kind::Complex ? im_ : 0.0}; }
  // A float outside int64's range (or NaN) gives INT64_MIN, as x86 does, without the undefined
  // behaviour of the plain conversion; ops that must refuse it call check_scalar_fits.
  int64_t to_int() const {
    if (kind_ < Kind::Float) return v_.i;
    return v_.d >= -9223372036854775808.0 && v_.d < 9223372036854775808.0 ? int64_t(v_.d) : INT64_MIN;
  }
  bool to_bool() const {
    return kind_ == Kind::Complex ? (v_.d != 0 || im_ != 0) : kind_ == Kind::Float ? v_.d != 0 : v_.i != 0;
  }
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (is_complex_v<T>) return T(to_complex());
    else if constexpr (std::is_integral_v<T>) return T(to_int());
    else return T(to_double());
  }
  // The dtype a tensor made from this scalar alone gets (PyTorch: bool, int64, default float).
  DType dtype() const {
    return kind_ == Kind::Bool ? kBool : kind_ == Kind::Int ? kInt64
         : kind_ == Kind::Float ? default_dtype() : to_complex_type(default_dtype());
  }

 private:
  Kind kind_;
  union { int64_t i; double d; } v_;
  double im_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

// Raises RuntimeError naming `op` unless `s` converts to `dtype` without overflow, by PyTorch's
// rule (c10::checked_convert): integers must be in range (for unsigned types, negatives down to
// -max wrap as in C), NaN and infinities never go into an integer type, and a finite value beyond
// a float type's range overflows it. Bool takes anything.
void check_scalar_fits(const Scalar& s, DType dtype, const char* op);

}  // namespace kindle
