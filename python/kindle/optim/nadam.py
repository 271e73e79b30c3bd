"""NAdam: Adam with Nesterov momentum (torch.optim.NAdam)."""
import kindle
from kindle import Tensor

from .optimizer import (Optimizer, _check_capturable, _check_hyper, _check_not_differentiable,
                        _sparse_check, _step_tensor, _to_scalar, _use_grad)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam (with momentum decay, optionally decoupled weight decay), written with in-place
    kindle ops after torch's single-tensor algorithm."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_hyper(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable, "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0:
                    if not isinstance(p_state["step"], Tensor):
                        p_state["step"] = _step_tensor(p_state["step"])
                    if not isinstance(p_state["mu_product"], Tensor):
                        p_state["mu_product"] = _step_tensor(p_state["mu_product"])

    @_use_grad
    def step(self, closure=None):
        """Performs one step; closure (optional) re-evaluates the model and returns the loss."""
        loss = None
        if closure is not None:
            with kindle.enable_grad():
                loss = closure()
        for group in self.param_groups:
            if group["capturable"]:
                _check_capturable([p for p in group["params"] if p.grad is not None],
                                  "params, mu_products and state_steps")
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = _to_scalar(group["lr"]), group["eps"], group["weight_decay"]
            momentum_decay = group["momentum_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                _sparse_check(p.grad, "NAdam")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["mu_product"] = _step_tensor(1.0)
                    state["exp_avg"] = kindle.zeros_like(p)
                    state["exp_avg_sq"] = kindle.zeros_like(p)
                grad = p.grad.neg() if group["maximize"] else p.grad
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                mu_product, step_t = state["mu_product"], state["step"]
                step_t.add_(1)
                step = step_t.item()
                bias_correction2 = 1 - beta2 ** step
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                # The momentum cache mu_t and mu_{t+1}; mu_product stays a float32 tensor so the
                # running product rounds as torch's does.
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_product.mul_(mu)
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt()
                mu_product_now = mu_product.item()
                mu_product_next = mu_product_now * mu_next
                denom.add_(eps)
                p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product_now))
                p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))
        return loss
