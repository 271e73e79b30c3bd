"""RMSprop (torch.optim.RMSprop)."""
import kindle
from kindle import Tensor

from kindle._C import _optim
from .optimizer import (_real_views, Optimizer, _check_capturable, _check_hyper, _check_not_differentiable,
                        _sparse_check, _split_by_dtype, _step_tensor, _to_scalar, _use_grad)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (optionally centered, with momentum); each parameter group is updated by one
    fused kernel call."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_hyper(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay)
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay, "capturable": capturable,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
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
            params, grads, square_avgs, grad_avgs, bufs = [], [], [], [], []
            momentum, centered = group["momentum"], group["centered"]
            if group["capturable"]:
                _check_capturable([p for p in group["params"] if p.grad is not None])
            for p in group["params"]:
                if p.grad is None:
                    continue
                _sparse_check(p.grad, "RMSprop")
                params.append(p)
                grads.append(p.grad)
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = kindle.zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = kindle.zeros_like(p)
                    if centered:
                        state["grad_avg"] = kindle.zeros_like(p)
                square_avgs.append(state["square_avg"])
                if momentum > 0:
                    bufs.append(state["momentum_buffer"])
                if centered:
                    grad_avgs.append(state["grad_avg"])
                state["step"].add_(1)  # bookkeeping only: RMSprop's update does not read it
            if not params:
                continue
            for lists in _split_by_dtype(params, grads, square_avgs, grad_avgs, bufs):
                _optim.rmsprop_step(*_real_views(lists), float(_to_scalar(group["lr"])), float(group["alpha"]),
                                    float(group["eps"]), float(group["weight_decay"]),
                                    float(momentum), bool(centered), bool(group["maximize"]))
        return loss
