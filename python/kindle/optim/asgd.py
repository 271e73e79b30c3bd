"""Averaged stochastic gradient descent (torch.optim.ASGD)."""
import kindle
from kindle import Tensor

from .optimizer import (Optimizer, _check_capturable, _check_hyper, _sparse_check, _step_tensor,
                        _to_scalar, _use_grad)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """ASGD: SGD with a decaying step size eta and a running average ax of the iterates (the
    average starts after t0 steps). eta and mu are 0-d float32 tensors in the state, as in
    torch, so the step sizes round the same way.

    foreach changes nothing here; capturable=True fails the step on CPU parameters as torch's
    does; differentiable=True runs the step under autograd."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        _check_hyper(lr=lr, weight_decay=weight_decay)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
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
                if len(p_state) != 0:
                    for key in ("step", "eta", "mu"):
                        if not isinstance(p_state[key], Tensor):
                            p_state[key] = _step_tensor(p_state[key])

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
                _sparse_check(p.grad, "ASGD")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["eta"] = _step_tensor(_to_scalar(group["lr"]))
                    state["mu"] = _step_tensor(1.0)
                    state["ax"] = kindle.zeros_like(p)
            if group["capturable"] and params:
                _check_capturable(params, "params, mus, etas, and state_steps")
            lr, lambd, alpha, t0 = (_to_scalar(group["lr"]), group["lambd"], group["alpha"],
                                    group["t0"])
            weight_decay = group["weight_decay"]
            for p in params:
                state = self.state[p]
                eta, mu, ax, step_t = state["eta"], state["mu"], state["ax"], state["step"]
                grad = p.grad.neg() if group["maximize"] else p.grad
                step_t.add_(1)
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                eta_value = eta.item()
                p.mul_(1 - lambd * eta_value)
                p.add_(grad, alpha=-eta_value)
                # Averaging: ax += mu * (p - ax); while mu is 1 (before t0) that is a copy.
                if mu.item() != 1:
                    ax.add_(p.sub(ax).mul_(mu))
                else:
                    ax.copy_(p)
                # The new values pass through a tensor of the default dtype, as torch's do: a
                # loaded float64 eta still takes float32-rounded step sizes.
                step = step_t.item()
                eta.copy_(kindle.tensor(lr / ((1 + lambd * lr * step) ** alpha)))
                mu.copy_(kindle.tensor(1 / max(1, step - t0)))
        return loss
