// grid_sampler (nn.functional.grid_sample's core, torch.grid_sampler) and its two gradients: the
// arguments checked, 16-bit inputs computed in float32, the kernels in csrc/cpu/grid_sample.cpp.
#include "kindle/operators.h"
#include "ops/grid_sample_kernels.h"

namespace kindle {
namespace {

GridSampleArgs check_grid_sampler(const Tensor& input, const Tensor& grid, int64_t interpolation, int64_t padding,
                                  bool align_corners) {
  KINDLE_CHECK(input.dim() == 4 || input.dim() == 5, "grid_sampler(): expected 4D or 5D input and grid with same "
               "number of dimensions, but got input with sizes ", input.sizes(), " and grid with sizes ", grid.sizes());
  const int64_t nd = input.dim() - 2;
  KINDLE_CHECK(grid.dim() == input.dim() && grid.size(-1) == nd, "grid_sampler(): expected grid to have size ", nd,
               " in last dimension, but got grid with sizes ", grid.sizes());
  KINDLE_CHECK(grid.size(0) == input.size(0), "grid_sampler(): expected grid and input to have same batch size, but "
               "got input with sizes ", input.sizes(), " and grid with sizes ", grid.sizes());
  KINDLE_CHECK(input.dtype() == grid.dtype(), "grid_sampler(): expected input and grid to have same dtype, but input "
               "has ", input.dtype(), " and grid has ", grid.dtype());
  KINDLE_CHECK(input.device() == grid.device(), "grid_sampler(): expected input and grid to be on same device, but "
               "input is on ", input.device(), " and grid is on ", grid.device());
  KINDLE_CHECK_NOT_IMPLEMENTED(input.is_floating_point(), "\"grid_sampler_", nd, "d_cpu\" not implemented for '",
                               scalar_type_name(input.dtype()), "'");
  for (int64_t d = 2; d < input.dim(); ++d)
    KINDLE_CHECK(input.size(d) > 0, "grid_sampler(): expected input to have non-empty spatial dimensions, but input "
                 "has sizes ", input.sizes(), " with dimension ", d, " being empty");
  KINDLE_CHECK(interpolation >= 0 && interpolation <= 2, "grid_sampler(): interpolation_mode must be 0 (bilinear), 1 "
               "(nearest) or 2 (bicubic), got ", interpolation);
  KINDLE_CHECK(padding >= 0 && padding <= 2, "grid_sampler(): padding_mode must be 0 (zeros), 1 (border) or 2 "
               "(reflection), got ", padding);
  KINDLE_CHECK(interpolation != 2 || nd == 2, "grid_sampler(): bicubic interpolation only supports 4D input");
  const int round16 = input.dtype() == kFloat16 ? 1 : input.dtype() == kBFloat16 ? 2 : 0;
  return {int(interpolation), int(padding), align_corners, round16};
}

DType compute_type(const Tensor& t) { return t.dtype() == kFloat64 ? kFloat64 : kFloat32; }

DimVector output_shape(const Tensor& input, const Tensor& grid) {
  DimVector shape{input.size(0), input.size(1)};
  for (int64_t d = 1; d < grid.dim() - 1; ++d) shape.push_back(grid.size(d));
  return shape;
}

}  // namespace

Tensor native_grid_sampler(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                           bool align_corners) {
  GridSampleArgs a = check_grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners);
  const DType ct = compute_type(input);
  Tensor in = input.to(ct).contiguous(), g = grid.to(ct).contiguous();
  Tensor out = empty_tensor(output_shape(input, grid), ct, input.device());
  if (out.numel()) grid_sample_stub[input.device()](out, in, g, Tensor(), a);
  return out.to(input.dtype());
}

Tensor _grid_sampler_jvp_grid(const Tensor& input, const Tensor& grid, const Tensor& grid_tangent,
                              int64_t interpolation_mode, int64_t padding_mode, bool align_corners) {
  GridSampleArgs a = check_grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners);
  KINDLE_CHECK(grid_tangent.sizes() == grid.sizes(), "grid_sampler: the grid's tangent has shape ",
               grid_tangent.sizes(), ", expected ", grid.sizes());
  const DType ct = compute_type(input);
  Tensor in = input.to(ct).contiguous(), g = grid.to(ct).contiguous(), gt = grid_tangent.to(ct).contiguous();
  Tensor out = empty_tensor(output_shape(input, grid), ct, input.device());
  if (out.numel()) grid_sample_stub[input.device()](out, in, g, gt, a);
  return out.to(input.dtype());
}

static std::pair<Tensor, Tensor> grid_sampler_gradients(const Tensor& grad_output, const Tensor& input,
                                                        const Tensor& grid, int64_t interpolation_mode,
                                                        int64_t padding_mode, bool align_corners, bool want_input,
                                                        bool want_grid) {
  GridSampleArgs a = check_grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners);
  const DType ct = compute_type(input);
  Tensor in = input.to(ct).contiguous(), g = grid.to(ct).contiguous(), go = grad_output.to(ct).contiguous();
  Tensor gi = want_input ? empty_tensor(input.sizes(), ct, input.device()) : Tensor();
  Tensor gg = want_grid ? empty_tensor(grid.sizes(), ct, grid.device()) : Tensor();
  if (go.numel() && in.numel()) {
    grid_sample_backward_stub[input.device()](gi, gg, go, in, g, a);
  } else {
    if (gi.defined()) gi.zero_();
    if (gg.defined()) gg.zero_();
  }
  return {gi.defined() ? gi.to(input.dtype()) : gi, gg.defined() ? gg.to(grid.dtype()) : gg};
}

Tensor grid_sampler_backward_input(const Tensor& grad_output, const Tensor& input, const Tensor& grid,
                                   int64_t interpolation_mode, int64_t padding_mode, bool align_corners) {
  return grid_sampler_gradients(grad_output, input, grid, interpolation_mode, padding_mode, align_corners, true, false)
      .first;
}

Tensor grid_sampler_backward_grid(const Tensor& grad_output, const Tensor& input, const Tensor& grid,
                                  int64_t interpolation_mode, int64_t padding_mode, bool align_corners) {
  return grid_sampler_gradients(grad_output, input, grid, interpolation_mode, padding_mode, align_corners, false, true)
      .second;
}

}  // namespace kindle
