"""RAdam: Adam with a rectified adaptive learning rate (torch.optim.RAdam)."""
import kindle
from kindle import Tensor

from .optimizer import (Optimizer, _check_capturable, _check_hyper, _check_not_differentiable,
                        _sparse_check, _step_tensor, _to_scalar, _use_grad)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam (optionally with decoupled weight decay), written with kindle ops after torch's
    single-tensor algorithm."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_hyper(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("capturable", False)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = _step_tensor(p_state["step"])

    @_use_grad
    def step(self, closure=None):
        """Performs one step; closure (optional) re-evaluates the model and returns the loss."""
        loss = None
        if closure is not None:
            with kindle.enable_grad():
                loss = closure()
        for group in self.param_groups:
            if group["capturable"]:
                _check_capturable([p for p in group["params"] if p.grad is not None])
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = _to_scalar(group["lr"]), group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                _sparse_check(p.grad, "RAdam")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = kindle.zeros_like(p)
                    state["exp_avg_sq"] = kindle.zeros_like(p)
                grad = p.grad.neg() if group["maximize"] else p.grad
                exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
                step_t.add_(1)
                step = step_t.item()
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                bias_corrected_exp_avg = exp_avg / bias_correction1
                # rho: the length of the approximated simple moving average; the variance is
                # rectified only once it exceeds 5.
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
                    p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
                else:
                    p.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
        return loss
