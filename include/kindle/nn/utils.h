// kindle::nn::utils: gradient clipping, as torch::nn::utils (and Python's torch.nn.utils).
#pragma once
#include <vector>

#include "kindle/tensor.h"

namespace kindle::nn::utils {

// Scales the gradients of `parameters` in place so that their total norm (the norm of the
// per-parameter norms) is at most max_norm; returns the total norm before clipping. norm_type
// may be infinity. error_if_nonfinite: a NaN or infinite total norm raises instead.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
inline double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                              bool error_if_nonfinite = false) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}
// Clamps every gradient element to [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace kindle::nn::utils
