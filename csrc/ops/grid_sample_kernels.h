// grid_sample's kernels (csrc/cpu/grid_sample.cpp): input (N, C, *in) and grid (N, *out, nd)
// contiguous and of one floating dtype (float32 or float64), nd 2 or 3. The conventions are
// torch's grid_sampler: coordinates in [-1, 1] unnormalised by align_corners, the padding
// modes' clipping and reflection (whose gradient is 0 where a coordinate is clipped), bilinear
// (trilinear) weights, nearest by round-half-even, bicubic with A = -0.75 and padding per tap.
#pragma once
#include "ops/kernels.h"

namespace kindle {

struct GridSampleArgs {
  int interpolation = 0;  // 0 bilinear, 1 nearest, 2 bicubic (torch's enum values)
  int padding = 0;        // 0 zeros, 1 border, 2 reflection
  bool align_corners = false;
  int round16 = 0;  // a 16-bit input computed in float32: coordinates rounded as torch's (1 half, 2 bfloat16)
};
// out: (N, C, *out). With grid_tangent (the grid's shape) defined, out gets the forward-mode
// derivative along it instead: sum over coordinates of d(sample)/d(grid value) * tangent.
extern KernelStub<void (*)(const Tensor& out, const Tensor& input, const Tensor& grid, const Tensor& grid_tangent,
                           const GridSampleArgs&)>
    grid_sample_stub;
// Either gradient may be undefined (not wanted). grad_input is zeroed by the kernel; each of its
// planes is written by one task, in a fixed order (deterministic, thread-count independent).
extern KernelStub<void (*)(const Tensor& grad_input, const Tensor& grad_grid, const Tensor& grad_out,
                           const Tensor& input, const Tensor& grid, const GridSampleArgs&)>
    grid_sample_backward_stub;

}  // namespace kindle
