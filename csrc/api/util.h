// Helpers shared by the front end's implementation files (not installed).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "serialize/json.h"
#include "kindle/nn/options.h"
#include "kindle/serialize.h"
#include "kindle/tensor.h"

namespace kindle::nn::detail {

// An undefined tensor is Python's None for the ops' optional tensor arguments.
inline std::optional<Tensor> opt(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}

// Python's spelling of values in reprs and messages.
inline std::string py_float(double d) {
  std::string s;
  if (d != d) return "nan";
  if (d == 1.0 / 0.0) return "inf";
  if (d == -1.0 / 0.0) return "-inf";
  json::write_double(s, d);
  return s;
}
inline const char* py_bool(bool b) { return b ? "True" : "False"; }
inline std::string py_tuple(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

// A size argument as Python usually holds it: one int when all dimensions agree, else a tuple.
template <size_t D>
std::string py_arg(const ExpandingArray<D>& a) {
  return a.all_equal(a[0]) ? std::to_string(a[0]) : a.str();
}

// padding_idx in [-n, n), made non-negative (ValueError otherwise); Embedding and EmbeddingBag.
std::optional<int64_t> check_padding_idx(std::optional<int64_t> idx, int64_t n);
// N(0, 1) draws with the padding row zeroed: an embedding table's initial weight.
void init_embedding_(const Tensor& weight, std::optional<int64_t> padding_idx);

// A fresh parameter-to-be of the given shape (filled by the caller's initialiser).
inline Tensor new_weight(IntArrayRef sizes, std::optional<DType> dtype) {
  return empty_tensor(sizes, dtype.value_or(default_dtype()));
}

}  // namespace kindle::nn::detail

namespace kindle::optim::detail {
// A list of floats in a state dict, and back (TypeError naming `what` on a non-number).
inline Value doubles(const std::vector<double>& xs) {
  Value::Items items;
  for (double x : xs) items.emplace_back(x);
  return Value::list(std::move(items));
}
inline std::vector<double> to_doubles(const Value& v, const char* what) {
  std::vector<double> out;
  for (const Value& x : v.items(what)) out.push_back(x.to_double(what));
  return out;
}
}  // namespace kindle::optim::detail
