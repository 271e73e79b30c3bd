"""Adamax: Adam with an infinity-norm second moment (torch.optim.Adamax)."""
import kindle
from kindle import Tensor

from .optimizer import (Optimizer, _check_capturable, _check_hyper, _check_not_differentiable,
                        _sparse_check, _step_tensor, _to_scalar, _use_grad)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax, written with in-place kindle ops after torch's single-tensor algorithm."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_hyper(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
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
                _sparse_check(p.grad, "Adamax")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = kindle.zeros_like(p)
                    state["exp_inf"] = kindle.zeros_like(p)
                grad = p.grad.neg() if group["maximize"] else p.grad
                exp_avg, exp_inf, step_t = state["exp_avg"], state["exp_inf"], state["step"]
                step_t.add_(1)
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                exp_avg.lerp_(grad, 1 - beta1)
                # The exponentially weighted infinity norm: max(beta2 * u, |g| + eps).
                exp_inf.copy_(kindle.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
                clr = lr / (1 - beta1 ** step_t.item())
                p.addcdiv_(exp_avg, exp_inf, value=-clr)
        return loss
