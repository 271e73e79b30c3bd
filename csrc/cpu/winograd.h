// Winograd F(2x2, 3x3) convolution for float32 (csrc/cpu/winograd.cpp), used by conv2d for 3x3,
// stride-1, undilated, ungrouped convolutions with enough channels to be GEMM-bound.
#pragma once
#include <cstdint>

namespace kindle {
class Tensor;
}

namespace kindle::cpu {

// y (N, O, H + 2ph - 2, W + 2pw - 2) = the 3x3 cross-correlation of x (N, C, H, W), zero-padded
// by ph/pw, with w, plus bias (may be null). With `adjoint`, w is a forward convolution's
// (C, O, 3, 3) weight and is used flipped and transposed: the input gradient of that convolution.
// y's images are y_image_stride elements apart (0: O * oh * ow; more: a channel slice of a larger tensor).
// `weight` (contiguous float32): (O, C, 3, 3), or with `adjoint` the (C, O, 3, 3) filters of the
// convolution whose input gradient this is (flipped and transposed here). Its transform is cached
// across calls while the weight is unchanged (Note [Derived data cache]).
void winograd_conv3x3(const float* x, const Tensor& weight, bool adjoint, const float* bias, float* y, int64_t N,
                      int64_t C, int64_t H, int64_t W, int64_t O, int64_t ph, int64_t pw, int64_t y_image_stride = 0);

}  // namespace kindle::cpu
