// Cross entropy over class indices as one row kernel each way (csrc/cpu/loss.cpp), for
// contiguous (N, C) float32/float64 logits and int64 targets already checked to be in range.
#pragma once
#include "ops/kernels.h"

namespace kindle {

// lse[r] = logsumexp of row r; loss[r] = lse[r] - x[r, target[r]], or 0 where target[r] is
// ignore_index.
extern KernelStub<void (*)(const Tensor& x, const Tensor& target, int64_t ignore_index, const Tensor& lse,
                           const Tensor& loss)>
    cross_entropy_stub;
// dx[r, j] = coef[r] * (exp(x[r, j] - lse[r]) - (j == target[r])); coef is 0 on ignored rows.
extern KernelStub<void (*)(const Tensor& x, const Tensor& target, const Tensor& lse, const Tensor& coef,
                           const Tensor& dx)>
    cross_entropy_backward_stub;

}  // namespace kindle
