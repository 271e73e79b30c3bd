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
// The recurrence of one LSTM layer and direction over T steps (contiguous tensors, one dtype):
// G (T, B, 4H) holds the input projections (biases included) on entry and the gates on exit;
// out and cells (T, B, H) receive every step's h and c; h0, c0 (B, H); w_hh (4H, H).
extern KernelStub<void (*)(const Tensor& G, const Tensor& h0, const Tensor& c0, const Tensor& w_hh,
                           const Tensor& out, const Tensor& cells, bool reverse)>
    lstm_recurrence_stub;
// Its backward: dout (T, B, H) may be null; dh, dc (B, H) hold the gradients of the last step's h
// and c on entry and of h0 and c0 on exit; dG (T, B, 4H) receives the gates' gradients.
extern KernelStub<void (*)(const Tensor* dout, const Tensor& G, const Tensor& c0, const Tensor& cells,
                           const Tensor& w_hh, const Tensor& dG, const Tensor& dh, const Tensor& dc, bool reverse)>
    lstm_recurrence_backward_stub;

}  // namespace kindle

namespace kindle {
// max_pool2d over contiguous (P, H, W) planes: values and flat indices into each plane, for the
// window geometry g (g.N * g.C planes); values only where `indices` has no elements. The first
// maximum wins; NaN beats every number.
struct WindowGeom;
extern KernelStub<void (*)(const Tensor& x, const Tensor& values, const Tensor& indices, const WindowGeom& g)>
    max_pool2d_stub;
// avg_pool2d over contiguous planes (float dtypes): out = window sums / divisor, the divisor as
// torch counts it (padding and ceil_mode's overhang; `divisor` > 0 overrides); backward adds
// grad / divisor into every window element of grad_in (zeroed by the caller).
struct AvgPoolOptions {
  bool count_include_pad;
  int64_t divisor;  // 0: none
};
extern KernelStub<void (*)(const Tensor& x, const Tensor& out, const WindowGeom& g, AvgPoolOptions o)>
    avg_pool2d_stub;
extern KernelStub<void (*)(const Tensor& grad, const Tensor& grad_in, const WindowGeom& g, AvgPoolOptions o)>
    avg_pool2d_backward_stub;
}  // namespace kindle
