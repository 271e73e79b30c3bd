// libtorch's TensorAccessor: t.accessor<float, 2>()[i][j] reads and writes one element through
// the tensor's strides. Every index is checked against its dimension (IndexError): an accessor
// never reaches outside the tensor's memory. It borrows the tensor's sizes and strides, so it
// must not outlive the tensor (Tensor::accessor refuses a temporary, as libtorch does).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kindle/error.h"

namespace kindle {

template <typename T, size_t N>
class TensorAccessor {
  static_assert(N > 0, "TensorAccessor: use item() for a 0-d tensor");

 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}

  // A TensorAccessor of one dimension fewer, or (N == 1) the element itself.
  decltype(auto) operator[](int64_t i) const {
    KINDLE_CHECK_INDEX(i >= 0 && i < sizes_[0], "TensorAccessor: index ", i, " is out of bounds for a dimension of size ",
                       sizes_[0]);
    if constexpr (N == 1) return static_cast<T&>(data_[i * strides_[0]]);
    else return TensorAccessor<T, N - 1>(data_ + i * strides_[0], sizes_ + 1, strides_ + 1);
  }
  int64_t size(size_t d) const { return sizes_[d]; }
  int64_t stride(size_t d) const { return strides_[d]; }
  T* data() const { return data_; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

}  // namespace kindle
