"""Resilient backpropagation (torch.optim.Rprop)."""
import kindle
from kindle import Tensor

from .optimizer import (Optimizer, _check_capturable, _check_hyper, _sparse_check, _step_tensor,
                        _to_scalar, _use_grad)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop: every coordinate has its own step size, grown by etas[1] while the gradient keeps
    its sign and shrunk by etas[0] when it flips (that step then skips the coordinate); only
    the gradient's sign moves the parameter.

    foreach changes nothing here; capturable=True fails the step on CPU parameters as torch's
    does; differentiable=True runs the step under autograd."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_hyper(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
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
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                _sparse_check(p.grad, "Rprop")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["prev"] = kindle.zeros_like(p)
                    state["step_size"] = kindle.full_like(p.grad, _to_scalar(group["lr"]))
            if group["capturable"] and params:
                _check_capturable(params)
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p in params:
                state = self.state[p]
                prev, step_size = state["prev"], state["step_size"]
                grad = p.grad.neg() if group["maximize"] else p.grad
                state["step"].add_(1)
                agreement = grad.mul(prev.clone() if group["differentiable"] else prev).sign()
                flipped = agreement.lt(0)
                # The factor per coordinate: etaplus where the sign held, etaminus where it
                # flipped, 1 where either gradient is 0 (a NaN stays NaN, as in torch).
                factor = (agreement.masked_fill(agreement.gt(0), etaplus)
                          .masked_fill_(flipped, etaminus).masked_fill_(agreement.eq(0), 1))
                step_size.mul_(factor).clamp_(step_size_min, step_size_max)
                # A flipped coordinate does not move, and is remembered with gradient 0 so that
                # the next step neither grows nor shrinks its step size.
                grad = grad.masked_fill(flipped, 0)
                p.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
