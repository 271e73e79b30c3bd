// Scalar: a number passed to an op (alpha, fill values, Python numbers). Remembers whether it
// was a bool, an integer or a float, which matters for type promotion.
#pragma once
#include <cstdint>
#include <ostream>
#include <type_traits>

#include "kindle/dtype.h"

namespace kindle {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };
  Scalar() : Scalar(int64_t(0)) {}
  Scalar(bool b) : kind_(Kind::Bool) { v_.i = b; }
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T i) : kind_(Kind::Int) { v_.i = int64_t(i); }
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T d) : kind_(Kind::Float) { v_.d = double(d); }
  Scalar(Half h) : Scalar(float(h)) {}
  Scalar(BFloat16 h) : Scalar(float(h)) {}

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating_point() const { return kind_ == Kind::Float; }
  double to_double() const { return kind_ == Kind::Float ? v_.d : double(v_.i); }
  int64_t to_int() const { return kind_ == Kind::Float ? int64_t(v_.d) : v_.i; }
  bool to_bool() const { return kind_ == Kind::Float ? v_.d != 0 : v_.i != 0; }
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return T(to_int());
    else return T(to_double());
  }
  // The dtype a tensor made from this scalar alone gets (PyTorch: bool, int64, default float).
  DType dtype() const {
    return kind_ == Kind::Bool ? kBool : kind_ == Kind::Int ? kInt64 : default_dtype();
  }

 private:
  Kind kind_;
  union { int64_t i; double d; } v_;
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace kindle
