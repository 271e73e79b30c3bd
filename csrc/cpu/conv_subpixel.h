// The input gradient of a convolution (the forward pass of a transposed convolution) by sub-pixel
// phases (csrc/cpu/conv_subpixel.cpp), for conv2d's backward_input.
#pragma once
#include <cstdint>

namespace kindle {
struct ConvGeom;
}

namespace kindle::cpu {

// Ungrouped, undilated, strided, or stride 1 on a plane of under 256 positions (but not 1x1 stride
// 1, a plain GEMM): the shapes where the phases beat a GEMM followed by col2im's scatter-adds.
bool subpixel_adjoint_applies(const ConvGeom& g);

// dx (N, C, H, W) = the input gradient of the convolution g (weight w: O, C, kh, kw) for the
// output gradient gy (N, O, oh, ow); dx is overwritten. Each element of dx is one sum computed by
// one thread in an order fixed by the shapes, so the result does not depend on the thread count.
void subpixel_adjoint(const float* gy, const float* w, float* dx, const ConvGeom& g);
void subpixel_adjoint(const double* gy, const double* w, double* dx, const ConvGeom& g);

}  // namespace kindle::cpu
