// Shared by the functional ops of csrc/nn: they are composites of the core ops, so autograd
// differentiates them through the ops they call (no backward code of their own).
#pragma once
#include <string_view>
#include <vector>

#include "kindle/operators.h"

namespace kindle::nn_detail {

// reduction='none'|'mean'|'sum', as in torch.nn.functional
Tensor reduce_loss(const Tensor& loss, std::string_view reduction, const char* op);
void check_reduction(std::string_view reduction, const char* op);
inline Tensor zero_like_scalar(const Tensor& t) { return scalar_tensor_of(0, t.dtype()); }

// A convolution's input (N, C, *spatial) against its weight and groups: ranks, channel counts.
void check_conv(const Tensor& input, const Tensor& weight, int64_t groups, int64_t spatial, const char* op);
// A size argument with one value for every dim, or n values (RuntimeError otherwise).
DimVector expand_param(IntArrayRef v, size_t n, const char* name, const char* op);

// A convolution's padding='valid' / 'same' over n spatial dims: the (maybe end-padded) input and
// the symmetric padding to convolve it with (csrc/nn/conv.cpp).
std::pair<Tensor, DimVector> padding_from_string(const Tensor& input, const Tensor& weight, IntArrayRef stride,
                                                 std::string_view padding, IntArrayRef dilation, size_t n,
                                                 const char* op);

// A packed sequence's batch_sizes as numbers: a 1-D CPU int64 tensor of positive, non-increasing
// counts (RuntimeError naming `op` otherwise; csrc/nn/packed.cpp).
std::vector<int64_t> packed_batch_sizes(const Tensor& batch_sizes, const char* op);

}  // namespace kindle::nn_detail
