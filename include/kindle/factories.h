// libtorch's spellings of the factories: a TensorOptions (kindle::dtype(kFloat64).requires_grad())
// where the op table's factories take dtype, device and requires_grad separately; kindle::tensor
// from braced lists and vectors; from_blob over memory the caller owns.
#pragma once
#include <functional>
#include <initializer_list>
#include <vector>

#include "kindle/ops.h"

namespace kindle {

Tensor empty(IntArrayRef size, const TensorOptions& options);
Tensor zeros(IntArrayRef size, const TensorOptions& options);
Tensor ones(IntArrayRef size, const TensorOptions& options);
Tensor full(IntArrayRef size, const Scalar& fill_value, const TensorOptions& options);
Tensor rand(IntArrayRef size, const TensorOptions& options);
Tensor randn(IntArrayRef size, const TensorOptions& options);
Tensor randint(int64_t high, IntArrayRef size, const TensorOptions& options);
Tensor randint(int64_t low, int64_t high, IntArrayRef size, const TensorOptions& options);
Tensor randperm(int64_t n, const TensorOptions& options);
Tensor arange(const Scalar& end, const TensorOptions& options);
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& options);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options);
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& options);
Tensor eye(int64_t n, const TensorOptions& options);
Tensor eye(int64_t n, int64_t m, const TensorOptions& options);
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, const TensorOptions& options);
Tensor scalar_tensor(const Scalar& s, const TensorOptions& options);
Tensor empty_like(const Tensor& self, const TensorOptions& options);
Tensor zeros_like(const Tensor& self, const TensorOptions& options);
Tensor ones_like(const Tensor& self, const TensorOptions& options);
Tensor full_like(const Tensor& self, const Scalar& fill_value, const TensorOptions& options);
Tensor rand_like(const Tensor& self, const TensorOptions& options);
Tensor randn_like(const Tensor& self, const TensorOptions& options);

// A dtype alone matches these exactly (it would convert equally well to std::optional<DType> and
// to TensorOptions).
inline Tensor empty(IntArrayRef size, DType d) { return empty(size, TensorOptions(d)); }
inline Tensor zeros(IntArrayRef size, DType d) { return zeros(size, TensorOptions(d)); }
inline Tensor ones(IntArrayRef size, DType d) { return ones(size, TensorOptions(d)); }
inline Tensor full(IntArrayRef size, const Scalar& v, DType d) { return full(size, v, TensorOptions(d)); }
inline Tensor linspace(const Scalar& s, const Scalar& e, int64_t n, DType d) { return linspace(s, e, n, TensorOptions(d)); }
inline Tensor arange(const Scalar& end, DType d) { return arange(end, TensorOptions(d)); }
inline Tensor arange(const Scalar& start, const Scalar& end, DType d) { return arange(start, end, TensorOptions(d)); }
inline Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, DType d) {
  return arange(start, end, step, TensorOptions(d));
}
inline Tensor scalar_tensor(const Scalar& s, DType d) { return scalar_tensor(s, TensorOptions(d)); }
inline Tensor empty_strided(IntArrayRef size, IntArrayRef stride, DType d) {
  return empty_strided(size, stride, TensorOptions(d));
}
inline Tensor empty_like(const Tensor& t, DType d) { return empty_like(t, TensorOptions(d)); }
inline Tensor zeros_like(const Tensor& t, DType d) { return zeros_like(t, TensorOptions(d)); }
inline Tensor ones_like(const Tensor& t, DType d) { return ones_like(t, TensorOptions(d)); }
inline Tensor full_like(const Tensor& t, const Scalar& v, DType d) { return full_like(t, v, TensorOptions(d)); }
inline Tensor rand_like(const Tensor& t, DType d) { return rand_like(t, TensorOptions(d)); }
inline Tensor randn_like(const Tensor& t, DType d) { return randn_like(t, TensorOptions(d)); }

// The values of kindle::tensor: a number, or a (nested) braced list of numbers, or a vector.
// Floating-point numbers in braces take the default dtype (float32), integers int64, bools
// bool, as in Python; a std::vector<T> keeps T's dtype.
class TensorData {
 public:
  TensorData(double v) : values_{v}, kind_(Kind::Float) {}
  TensorData(float v) : values_{double(v)}, kind_(Kind::Float) {}
  TensorData(int v) : values_{int64_t(v)}, kind_(Kind::Int) {}
  TensorData(long v) : values_{int64_t(v)}, kind_(Kind::Int) {}
  TensorData(long long v) : values_{int64_t(v)}, kind_(Kind::Int) {}
  TensorData(bool v) : values_{v}, kind_(Kind::Bool) {}
  TensorData(std::initializer_list<TensorData> list);
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>>>
  TensorData(const std::vector<T>& v) : sizes_{int64_t(v.size())}, kind_(Kind::Typed), typed_(dtype_of_v<T>) {
    values_.reserve(v.size());
    for (const T& x : v) values_.emplace_back(x);
  }
  TensorData(const std::vector<bool>& v);
  template <typename T>
  TensorData(ArrayRef<T> v) : TensorData(v.vec()) {}

  Tensor to_tensor(const TensorOptions& options) const;

 private:
  enum class Kind { Bool, Int, Float, Typed };
  std::vector<Scalar> values_;
  DimVector sizes_;
  Kind kind_;
  DType typed_ = kFloat32;
};
Tensor tensor(const TensorData& data, const TensorOptions& options = {});

// A tensor over `data`, which the caller owns and keeps alive (no copy); `deleter(data)` runs
// when the last view of it goes, if given.
Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, const std::function<void(void*)>& deleter,
                 const TensorOptions& options = {});

}  // namespace kindle
