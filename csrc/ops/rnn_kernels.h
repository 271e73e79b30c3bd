// The LSTM cell's pointwise part (csrc/cpu/lstm.cpp): from the pre-activation gates (B, 4H)
// [input, forget, cell, output] and the cell state (B, H), the new hidden and cell states, and
// its backward. Contiguous float32/float64 tensors.
#pragma once
#include "ops/kernels.h"

namespace kindle {

extern KernelStub<void (*)(const Tensor& gates, const Tensor& cx, const Tensor& hy, const Tensor& cy)>
    lstm_pointwise_stub;
// grad_hy / grad_cy may be null (zero). Writes the gradient of the gates and of cx.
extern KernelStub<void (*)(const Tensor* grad_hy, const Tensor* grad_cy, const Tensor& gates, const Tensor& cx,
                           const Tensor& cy, const Tensor& grad_gates, const Tensor& grad_cx)>
    lstm_pointwise_backward_stub;

}  // namespace kindle

namespace kindle {
// max_pool2d over contiguous (P, H, W) planes: values and flat indices into each plane, for the
// window geometry g (g.N * g.C planes). The first maximum wins; NaN beats every number.
struct WindowGeom;
extern KernelStub<void (*)(const Tensor& x, const Tensor& values, const Tensor& indices, const WindowGeom& g)>
    max_pool2d_stub;
}  // namespace kindle
