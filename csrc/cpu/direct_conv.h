// Direct convolution for large kernels (float32, AVX-512; csrc/cpu/direct_conv.cpp), used by
// conv2d for stride-1, undilated, ungrouped layers with 5x5 kernels and up, where im2col's column
// matrix (C*kh*kw rows: 2592 for fast-neural-style's 32-channel 9x9 layer) is too large to stay
// in cache between the unfolding and the GEMM.
#pragma once
#include <cstdint>

namespace kindle::cpu {

// Whether direct_conv runs this shape on this build and is the faster form; C and O are its own
// input and output channels (with `adjoint`, the forward convolution's O and C).
bool direct_conv_applies(int64_t C, int64_t O, int64_t kh, int64_t kw, int64_t ow, int64_t ph, int64_t pw,
                         bool adjoint);

// y (N, O, H + 2ph - kh + 1, W + 2pw - kw + 1) = the stride-1 cross-correlation of x (N, C, H, W),
// zero-padded by ph/pw, with w (O, C, kh, kw), plus bias (may be null). With `adjoint`, w is a
// forward convolution's (C, O, kh, kw) weight and is used flipped and transposed: called on the
// output gradient with padding kh - 1 - ph, kw - 1 - pw, it gives that convolution's input gradient.
void direct_conv(const float* x, const float* w, bool adjoint, const float* bias, float* y, int64_t N, int64_t C,
                 int64_t H, int64_t W, int64_t O, int64_t kh, int64_t kw, int64_t ph, int64_t pw);

// Whether direct_conv_weight runs this shape on this build and is the faster form (kernel widths
// 5 to 14, 16 to 64 input channels, at most 64 output channels).
bool direct_conv_weight_applies(int64_t C, int64_t O, int64_t kh, int64_t kw, int64_t ow);

// dw (O, C, kh, kw) = the weight gradient of that convolution (stride 1, padding ph/pw) of x
// (N, C, H, W) for the output gradient gy (N, O, oh, ow); dw is overwritten.
void direct_conv_weight(const float* x, const float* gy, float* dw, int64_t N, int64_t C, int64_t H, int64_t W,
                        int64_t O, int64_t kh, int64_t kw, int64_t ph, int64_t pw);

}  // namespace kindle::cpu
