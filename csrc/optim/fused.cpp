// Fused optimizer steps (see kindle/optim.h): the checks, the staging of tensors the kernel
// cannot take directly, and the kernel (ops/optim_kernels.h: one elementwise pass over all the
// parameters of a group, split across threads as one flat range, so many small tensors
// parallelise as well as one large one). Tensors that are not contiguous float32/float64 (half
// precision, strided) are staged through contiguous float copies. A device without the kernel
// (CUDA) takes the same steps written with ops.
#include "kindle/optim.h"

#include <cmath>

#include "kindle/autograd.h"
#include "kindle/error.h"
#include "ops/optim_kernels.h"

namespace kindle::optim {
namespace {

// The tensors of one parameter that a step reads and writes: slot 0 is the parameter, slot 1
// the gradient, the rest its state. Fast when every slot is contiguous and of the parameter's
// float32/float64 dtype; otherwise the slots are staged in contiguous copies and copied back.
struct Group {
  const char* op;
  std::vector<std::vector<Tensor>> slots;  // [param][slot]
  std::vector<std::vector<Tensor>> staged;
  DType dtype = kFloat32;

  Group(const char* op_, TensorList params, TensorList grads, std::initializer_list<TensorList> states) : op(op_) {
    const size_t n = params.size();
    KINDLE_CHECK(grads.size() == n, op, ": got ", n, " parameters but ", grads.size(), " gradients");
    for (TensorList s : states)
      KINDLE_CHECK(s.empty() || s.size() == n, op, ": got ", n, " parameters but ", s.size(), " state tensors");
    if (n) dtype = params[0].dtype();
    for (size_t i = 0; i < n; ++i) {
      std::vector<Tensor> row{params[i], grads[i]};
      for (TensorList s : states)
        if (!s.empty()) row.push_back(s[i]);
      for (size_t k = 1; k < row.size(); ++k)
        KINDLE_CHECK(row[k].sizes() == params[i].sizes(), op, ": parameter ", i, " has shape ", params[i].sizes(),
                     " but its ", k == 1 ? "gradient" : "state", " has shape ", row[k].sizes());
      KINDLE_CHECK(params[i].is_floating_point(), op, ": parameter ", i, " has dtype ", params[i].dtype(),
                   "; optimizers step floating-point parameters only");
      KINDLE_CHECK(params[i].dtype() == dtype, op, ": parameters of one call must share a dtype (",
                   dtype, " and ", params[i].dtype(), "); call once per dtype");
      slots.push_back(std::move(row));
    }
    bool direct = dtype == kFloat32 || dtype == kFloat64;
    for (auto& row : slots)
      for (auto& t : row) direct = direct && t.is_contiguous() && t.dtype() == dtype;
    if (!direct) {
      DType compute = dtype == kFloat64 ? kFloat64 : kFloat32;
      for (auto& row : slots) {
        std::vector<Tensor> s;
        for (auto& t : row) s.push_back(t.to(compute).contiguous().clone());
        staged.push_back(std::move(s));
      }
      dtype = compute;
    }
  }
  // What the kernel reads and writes (ops/optim_kernels.h).
  const std::vector<std::vector<Tensor>>& rows() const { return staged.empty() ? slots : staged; }
  // Writes staged results back (every slot but the gradient) and bumps the versions.
  void finish() {
    autograd::NoGradGuard g;
    for (size_t i = 0; i < slots.size(); ++i) {
      for (size_t k = 0; k < slots[i].size(); ++k) {
        if (k == 1) continue;
        if (!staged.empty()) slots[i][k].copy_(staged[i][k]);
        else slots[i][k].bump_version();
      }
    }
  }
};

// The same steps written with ops, for a device without the fused kernel (CUDA): each line is one
// elementwise kernel on the device. (Tested on a GPU by scripts/gpu_check.sh.)
Tensor scalar_for(const Tensor& p, double v) { return scalar_tensor_of(v, p.dtype(), p.device()); }
// The gradient a step follows: negated to maximize, plus `decay` * p (coupled weight decay).
Tensor step_grad(const Tensor& p, const Tensor& grad, bool maximize, double decay) {
  Tensor g = maximize ? grad.neg() : grad;
  return decay != 0 ? g.add(p, decay) : g;
}

void sgd_step_ops(TensorList params, TensorList grads, std::vector<Tensor>& bufs, const SGDHyper& h) {
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    auto c = [&](double v) { return scalar_for(p, v); };
    Tensor g = step_grad(p, grads[i], h.maximize, h.weight_decay);
    if (h.momentum != 0) {
      if (!bufs[i].defined()) bufs[i] = g.clone();
      else bufs[i].mul_(c(h.momentum)).add_(g, 1 - h.dampening);
      g = h.nesterov ? g.add(bufs[i], h.momentum) : bufs[i];
    }
    p.add_(g, -h.lr);
  }
}

void adam_step_ops(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                   TensorList max_exp_avg_sqs, const std::vector<int64_t>& steps, const AdamHyper& h) {
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    auto c = [&](double v) { return scalar_for(p, v); };
    if (h.weight_decay != 0 && h.decoupled_weight_decay) p.mul_(c(1 - h.lr * h.weight_decay));
    Tensor g = step_grad(p, grads[i], h.maximize, h.decoupled_weight_decay ? 0.0 : h.weight_decay);
    exp_avgs[i].mul_(c(h.beta1)).add_(g, 1 - h.beta1);
    exp_avg_sqs[i].mul_(c(h.beta2)).add_(g.mul(g), 1 - h.beta2);
    const double bc1 = 1 - std::pow(h.beta1, double(steps[i])), bc2 = 1 - std::pow(h.beta2, double(steps[i]));
    Tensor v = exp_avg_sqs[i];
    if (h.amsgrad) {
      max_exp_avg_sqs[i].copy_(max_exp_avg_sqs[i].maximum(v));
      v = max_exp_avg_sqs[i];
    }
    Tensor denom = v.sqrt().div(c(std::sqrt(bc2))).add(c(h.eps));
    p.add_(exp_avgs[i].div(denom), -h.lr / bc1);
  }
}

void rmsprop_step_ops(TensorList params, TensorList grads, TensorList square_avgs, TensorList grad_avgs,
                      TensorList momentum_buffers, const RMSpropHyper& h) {
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    auto c = [&](double v) { return scalar_for(p, v); };
    Tensor g = step_grad(p, grads[i], h.maximize, h.weight_decay);
    square_avgs[i].mul_(c(h.alpha)).add_(g.mul(g), 1 - h.alpha);
    Tensor avg;
    if (h.centered) {
      grad_avgs[i].add_(g.sub(grad_avgs[i]), 1 - h.alpha);
      avg = square_avgs[i].sub(grad_avgs[i].mul(grad_avgs[i])).sqrt().add(c(h.eps));
    } else {
      avg = square_avgs[i].sqrt().add(c(h.eps));
    }
    if (h.momentum > 0) {
      momentum_buffers[i].mul_(c(h.momentum)).add_(g.div(avg));
      p.add_(momentum_buffers[i], -h.lr);
    } else {
      p.add_(g.div(avg), -h.lr);
    }
  }
}

void adagrad_step_ops(TensorList params, TensorList grads, TensorList state_sums, const std::vector<int64_t>& steps,
                      const AdagradHyper& h) {
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    auto c = [&](double v) { return scalar_for(p, v); };
    Tensor g = step_grad(p, grads[i], h.maximize, h.weight_decay);
    state_sums[i].add_(g.mul(g));
    const double clr = h.lr / (1 + double(steps[i] - 1) * h.lr_decay);
    p.add_(g.div(state_sums[i].sqrt().add(c(h.eps))), -clr);
  }
}

}  // namespace

void sgd_step(TensorList params, TensorList grads, std::vector<Tensor>& momentum_buffers, const SGDHyper& h) {
  const size_t n = params.size();
  KINDLE_CHECK(momentum_buffers.size() == n, "sgd_step: got ", n, " parameters but ", momentum_buffers.size(),
               " momentum buffers");
  if (n && !fused_step_stub.has(params[0].device())) return sgd_step_ops(params, grads, momentum_buffers, h);
  std::vector<bool> first(n, false);
  if (h.momentum != 0) {
    // A missing buffer starts as the (decayed) gradient: stage it as zeros and flag the element.
    for (size_t i = 0; i < n; ++i)
      if (!momentum_buffers[i].defined()) {
        momentum_buffers[i] = zeros_like(params[i]);
        first[i] = true;
      }
  }
  std::vector<Tensor> bufs = h.momentum != 0 ? momentum_buffers : std::vector<Tensor>{};
  Group grp("sgd_step", params, grads, {TensorList(bufs)});
  FusedStepArgs args{FusedStep::Sgd, grp.dtype, &grp.rows(), &h};
  args.fresh = &first;
  if (!params.empty()) fused_step_stub[params[0].device()](args);
  grp.finish();
}

void adam_step(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
               TensorList max_exp_avg_sqs, const std::vector<int64_t>& steps, const AdamHyper& h) {
  KINDLE_CHECK(steps.size() == params.size(), "adam_step: got ", params.size(), " parameters but ", steps.size(),
               " step counts");
  KINDLE_CHECK(!h.amsgrad || max_exp_avg_sqs.size() == params.size(), "adam_step: amsgrad needs max_exp_avg_sqs");
  for (int64_t s : steps) KINDLE_CHECK(s >= 1, "adam_step: step counts start at 1, got ", s);
  if (!params.empty() && !fused_step_stub.has(params[0].device()))
    return adam_step_ops(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, h);
  Group grp("adam_step", params, grads, {exp_avgs, exp_avg_sqs, h.amsgrad ? max_exp_avg_sqs : TensorList{}});
  FusedStepArgs args{FusedStep::Adam, grp.dtype, &grp.rows(), &h};
  args.steps = &steps;
  if (!params.empty()) fused_step_stub[params[0].device()](args);
  grp.finish();
}

void rmsprop_step(TensorList params, TensorList grads, TensorList square_avgs, TensorList grad_avgs,
                  TensorList momentum_buffers, const RMSpropHyper& h) {
  KINDLE_CHECK(!h.centered || grad_avgs.size() == params.size(), "rmsprop_step: centered needs grad_avgs");
  KINDLE_CHECK(h.momentum <= 0 || momentum_buffers.size() == params.size(),
               "rmsprop_step: momentum needs momentum_buffers");
  TensorList ga = h.centered ? grad_avgs : TensorList{}, mb = h.momentum > 0 ? momentum_buffers : TensorList{};
  if (!params.empty() && !fused_step_stub.has(params[0].device()))
    return rmsprop_step_ops(params, grads, square_avgs, grad_avgs, momentum_buffers, h);
  Group grp("rmsprop_step", params, grads, {square_avgs, ga, mb});
  FusedStepArgs args{FusedStep::Rmsprop, grp.dtype, &grp.rows(), &h};
  if (!params.empty()) fused_step_stub[params[0].device()](args);
  grp.finish();
}

void adagrad_step(TensorList params, TensorList grads, TensorList state_sums, const std::vector<int64_t>& steps,
                  const AdagradHyper& h) {
  KINDLE_CHECK(steps.size() == params.size(), "adagrad_step: got ", params.size(), " parameters but ",
               steps.size(), " step counts");
  if (!params.empty() && !fused_step_stub.has(params[0].device())) return adagrad_step_ops(params, grads, state_sums, steps, h);
  Group grp("adagrad_step", params, grads, {state_sums});
  FusedStepArgs args{FusedStep::Adagrad, grp.dtype, &grp.rows(), &h};
  args.steps = &steps;
  if (!params.empty()) fused_step_stub[params[0].device()](args);
  grp.finish();
}

}  // namespace kindle::optim
