// Fused optimizer steps: one call updates every parameter of a group in a single pass over its
// memory (the Python and C++ optimizers both call these; the algorithms are PyTorch's
// single-tensor ones, step for step, so trajectories match torch's within rounding).
// State tensors (moments, buffers) are created by the caller except SGD's momentum buffers,
// which appear on the first step as in PyTorch. Grads must have their parameter's shape.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kindle/tensor.h"

namespace kindle::optim {

struct SGDHyper {
  double lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false;
};
// momentum_buffers[i] undefined on the first step: created from the gradient.
void sgd_step(TensorList params, TensorList grads, std::vector<Tensor>& momentum_buffers, const SGDHyper& h);

struct AdamHyper {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool amsgrad = false, maximize = false, decoupled_weight_decay = false;  // decoupled: AdamW
};
// steps[i]: parameter i's step count, already incremented (>= 1). max_exp_avg_sqs: empty
// unless amsgrad.
void adam_step(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
               TensorList max_exp_avg_sqs, const std::vector<int64_t>& steps, const AdamHyper& h);

struct RMSpropHyper {
  double lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0;
  bool centered = false, maximize = false;
};
// grad_avgs: empty unless centered; momentum_buffers: empty unless momentum > 0.
void rmsprop_step(TensorList params, TensorList grads, TensorList square_avgs, TensorList grad_avgs,
                  TensorList momentum_buffers, const RMSpropHyper& h);

struct AdagradHyper {
  double lr = 1e-2, lr_decay = 0, weight_decay = 0, eps = 1e-10;
  bool maximize = false;
};
void adagrad_step(TensorList params, TensorList grads, TensorList state_sums, const std::vector<int64_t>& steps,
                  const AdagradHyper& h);

// L-BFGS (csrc/optim/lbfgs.cpp): PyTorch's algorithm, its state kept between steps.
struct LBFGSHyper {
  double lr = 1, tolerance_grad = 1e-7, tolerance_change = 1e-9;
  int64_t max_iter = 20, history_size = 100;
  std::optional<int64_t> max_eval;               // default max_iter * 5 / 4
  std::optional<std::string> line_search_fn;     // none or "strong_wolfe"
};
// PyTorch's state entries; a Python number (t, H_diag) is a wrapped-number tensor, undefined is
// None. al holds history_size entries once the second iteration ran.
struct LBFGSState {
  int64_t func_evals = 0, n_iter = 0;
  Tensor d, t, H_diag, prev_flat_grad;
  std::vector<Tensor> old_dirs, old_stps, ro, al;
  std::optional<double> prev_loss;
};
// Up to max_iter iterations; closure (called with grad mode on) zeroes the grads, computes the
// loss, calls backward and returns the loss. Returns the loss of the first evaluation.
Tensor lbfgs_step(std::vector<Tensor>& params, LBFGSState& state, const LBFGSHyper& h,
                  const std::function<Tensor()>& closure);

}  // namespace kindle::optim
