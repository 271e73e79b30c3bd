// Kernels of the fused normalisation ops (csrc/nn/normalization.cpp, csrc/cpu/norm.cpp). All
// tensors are contiguous and float32 or float64; statistics are kept in the input's dtype.
#pragma once
#include <vector>
#include "ops/kernels.h"

namespace kindle {

// layer_norm: the rows of an (M, D) matrix, each normalised over its D values.
struct RowsGeom {
  int64_t M, D;
  double eps;
};
extern KernelStub<void (*)(const Tensor& x, const Tensor* w, const Tensor* b, const Tensor& y, const Tensor& mean,
                           const Tensor& rstd, const RowsGeom&)> layer_norm_stub;
// dx; and with dw / db (not null), the weight and bias gradients from the same pass.
extern KernelStub<void (*)(const Tensor& grad, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                           const Tensor* w, const Tensor& dx, const Tensor* dw, const Tensor* db, const RowsGeom&)>
    layer_norm_backward_input_stub;
// dparam[d] = sum over rows of grad * xhat (weight) or of grad (bias).
extern KernelStub<void (*)(const Tensor& grad, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                           const Tensor& dparam, bool weight, const RowsGeom&)> layer_norm_backward_param_stub;

// batch_norm: an (N, C, S) tensor normalised per channel over N*S values.
struct ChannelsGeom {
  int64_t N, C, S;
};
// Per channel: the mean and the biased variance.
extern KernelStub<void (*)(const Tensor& x, const Tensor& mean, const Tensor& var, const ChannelsGeom&)>
    batch_norm_stats_stub;
// y = (x - mean) * invstd * w + b
extern KernelStub<void (*)(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor* w,
                           const Tensor* b, const Tensor& y, const ChannelsGeom&)> batch_norm_apply_stub;
// y = clamp((x - mean) * invstd * w + b, lo, hi) where x is `parts` concatenated along dim 1 (each
// (N, C_i, S), contiguous; g.C = the sum of the C_i): _cat_batch_norm_clamp, kindle.compile's
// eval-mode cat + batch norm + ReLU in one pass.
extern KernelStub<void (*)(const std::vector<Tensor>& parts, const Tensor& mean, const Tensor& invstd, const Tensor* w,
                           const Tensor* b, const Tensor& y, const ChannelsGeom&, double lo, double hi)>
    batch_norm_apply_parts_stub;
// Per channel: sum of grad and sum of grad * xhat.
extern KernelStub<void (*)(const Tensor& grad, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                           const Tensor& sum_g, const Tensor& sum_gx, const ChannelsGeom&)> batch_norm_reduce_stub;
// dx = w * invstd * (grad - sum_g / n - xhat * sum_gx / n); sum_g/sum_gx null in eval mode.
extern KernelStub<void (*)(const Tensor& grad, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                           const Tensor* w, const Tensor* sum_g, const Tensor* sum_gx, const Tensor& dx,
                           const ChannelsGeom&)> batch_norm_backward_input_stub;

}  // namespace kindle
