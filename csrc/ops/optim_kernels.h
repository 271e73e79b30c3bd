// Fused optimizer steps (kindle/optim.h) as one kernel family (csrc/cpu/optim.cpp): one pass
// over every parameter of a group, the group's elements split over threads as one flat range.
#pragma once
#include <vector>

#include "kindle/optim.h"
#include "ops/kernels.h"

namespace kindle {

enum class FusedStep : uint8_t { Sgd, Adam, Rmsprop, Adagrad };

// rows[i]: parameter i's tensors, all contiguous of `dtype` (float32 or float64): the parameter,
// its gradient, then its state in the order the kind's step lists it (SGD: the momentum buffer;
// Adam: exp_avg, exp_avg_sq, max_exp_avg_sq; RMSprop: square_avg, grad_avg, momentum buffer;
// Adagrad: the sum), only the slots the hyperparameters use. The kernel updates the parameter
// and the state in place.
struct FusedStepArgs {
  FusedStep kind;
  DType dtype;
  const std::vector<std::vector<Tensor>>* rows;
  const void* hyper;                            // the kind's optim::*Hyper
  const std::vector<int64_t>* steps = nullptr;  // Adam, Adagrad: each parameter's step count
  const std::vector<bool>* fresh = nullptr;     // SGD: the momentum buffers that start as the gradient
};
extern KernelStub<void (*)(const FusedStepArgs&)> fused_step_stub;

}  // namespace kindle
