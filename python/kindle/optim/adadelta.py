"""Adadelta: step sizes from running averages of squared gradients and of squared updates
(torch.optim.Adadelta)."""
import kindle
from kindle import Tensor

from .optimizer import (Optimizer, _check_capturable, _check_hyper, _sparse_check, _step_tensor,
                        _to_scalar, _use_grad)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta, written with in-place kindle ops after torch's single-tensor algorithm.

    foreach only picks torch's implementation, so it changes nothing here; capturable=True
    fails the step on CPU parameters as torch's does; differentiable=True runs the step under
    autograd (the parameters must then be non-leaf tensors, as in torch)."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_hyper(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_hyper(eps=eps, weight_decay=weight_decay)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
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
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                _sparse_check(p.grad, "Adadelta")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = kindle.zeros_like(p)
                    state["acc_delta"] = kindle.zeros_like(p)
            if group["capturable"] and params:
                _check_capturable(params)
            lr, rho, eps = _to_scalar(group["lr"]), group["rho"], group["eps"]
            weight_decay = group["weight_decay"]
            for p in params:
                state = self.state[p]
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                state["step"].add_(1)
                grad = p.grad.neg() if group["maximize"] else p.grad
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_()
                if group["differentiable"]:
                    delta = delta.clone()  # sqrt_ saved its output for backward
                # The update: sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) * g.
                delta.div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
