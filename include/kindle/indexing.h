// Indexing with ints, slices, None, Ellipsis, bools and index/mask tensors: Python's t[...] and
// libtorch's t.index({...}) / t.index_put_({...}, v), one implementation for both.
//
//   using namespace kindle::indexing;
//   t.index({Slice(), 0});                   // t[:, 0]
//   t.index({Slice(None, 2), Ellipsis});     // t[:2, ...]
//   t.index_put_({mask}, 0.0);               // t[mask] = 0
//
// Basic indices (ints, slices, None, Ellipsis) make views; tensor indices go through
// kindle::index / index_put_, exactly as in PyTorch.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kindle/tensor.h"

namespace kindle::indexing {

struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};
inline constexpr std::nullopt_t None = std::nullopt;

// start:stop:step; a missing start or stop is the end of the dim, a missing step 1.
class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start_(start.value_or(0)), stop_(stop.value_or(INT64_MAX)), step_(step.value_or(1)) {}
  int64_t start() const { return start_; }
  int64_t stop() const { return stop_; }
  int64_t step() const { return step_; }

 private:
  int64_t start_, stop_, step_;
};

class TensorIndex {
 public:
  enum class Kind { None, Ellipsis, Integer, Boolean, Slice, Tensor };
  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}
  TensorIndex(const char* s);  // "..." only
  TensorIndex(int64_t i) : kind_(Kind::Integer), integer_(i) {}
  TensorIndex(int i) : kind_(Kind::Integer), integer_(i) {}
  TensorIndex(bool b) : kind_(Kind::Boolean), boolean_(b) {}
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}
  TensorIndex(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
};

// self[indices]: a view when every index is basic.
Tensor get(const Tensor& self, ArrayRef<TensorIndex> indices);
// self[indices] = value (value broadcast to the indexed part; its leading size-1 dims dropped).
// check_dtype: a tensor value must have self's dtype (Python's rule for tensors; numbers are
// converted by the caller).
void set_(const Tensor& self, ArrayRef<TensorIndex> indices, const Tensor& value, bool check_dtype = true);

}  // namespace kindle::indexing
