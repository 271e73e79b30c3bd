// IValue: a value of one of a few kinds (none, bool, int, double, string, tensor, lists), as
// libtorch's custom autograd functions keep non-tensor state: ctx->saved_data["k"] = 2.5; ...
// ctx->saved_data["k"].toDouble(). Asking for the wrong kind raises TypeError naming both.
#pragma once
#include <string>
#include <variant>
#include <vector>

#include "kindle/tensor.h"

namespace kindle {

class IValue {
 public:
  IValue() = default;
  IValue(bool v) : v_(v) {}
  IValue(int v) : v_(int64_t(v)) {}
  IValue(long v) : v_(int64_t(v)) {}
  IValue(long long v) : v_(int64_t(v)) {}
  IValue(double v) : v_(v) {}
  IValue(float v) : v_(double(v)) {}
  IValue(std::string v) : v_(std::move(v)) {}
  IValue(const char* v) : v_(std::string(v)) {}
  IValue(Tensor v) : v_(std::move(v)) {}
  IValue(std::vector<int64_t> v) : v_(std::move(v)) {}
  IValue(IntArrayRef v) : v_(v.vec()) {}
  IValue(std::vector<double> v) : v_(std::move(v)) {}
  IValue(std::vector<Tensor> v) : v_(std::move(v)) {}
  IValue(const Scalar& s) {
    if (s.is_floating_point()) v_ = s.to<double>();
    else if (s.is_bool()) v_ = s.to<bool>();
    else v_ = s.to<int64_t>();
  }

  bool isNone() const { return v_.index() == 0; }
  bool isBool() const { return std::holds_alternative<bool>(v_); }
  bool isInt() const { return std::holds_alternative<int64_t>(v_); }
  bool isDouble() const { return std::holds_alternative<double>(v_); }
  bool isString() const { return std::holds_alternative<std::string>(v_); }
  bool isTensor() const { return std::holds_alternative<Tensor>(v_); }
  bool isIntList() const { return std::holds_alternative<std::vector<int64_t>>(v_); }
  bool isDoubleList() const { return std::holds_alternative<std::vector<double>>(v_); }
  bool isTensorList() const { return std::holds_alternative<std::vector<Tensor>>(v_); }

  bool toBool() const { return get<bool>("Bool"); }
  int64_t toInt() const { return get<int64_t>("Int"); }
  double toDouble() const { return get<double>("Double"); }
  const std::string& toStringRef() const { return get<std::string>("String"); }
  const Tensor& toTensor() const { return get<Tensor>("Tensor"); }
  const std::vector<int64_t>& toIntVector() const { return get<std::vector<int64_t>>("IntList"); }
  IntArrayRef toIntList() const { return toIntVector(); }
  const std::vector<double>& toDoubleVector() const { return get<std::vector<double>>("DoubleList"); }
  const std::vector<Tensor>& toTensorVector() const { return get<std::vector<Tensor>>("TensorList"); }
  Scalar toScalar() const {
    if (isDouble()) return toDouble();
    if (isBool()) return toBool();
    return toInt();
  }
  std::string tagKind() const;

 private:
  template <typename T>
  const T& get(const char* want) const {
    const T* p = std::get_if<T>(&v_);
    if (!p) [[unlikely]] detail::throw_as<TypeError>(std::string("Expected ") + want + " but got " + tagKind());
    return *p;
  }
  std::variant<std::monostate, bool, int64_t, double, std::string, Tensor, std::vector<int64_t>,
               std::vector<double>, std::vector<Tensor>>
      v_;
};

inline std::string IValue::tagKind() const {
  static const char* names[] = {"None", "Bool", "Int", "Double", "String", "Tensor", "IntList", "DoubleList",
                                "TensorList"};
  return names[v_.index()];
}

}  // namespace kindle
