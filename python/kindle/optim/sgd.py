"""Stochastic gradient descent, optionally with momentum (torch.optim.SGD)."""
import kindle

from kindle._C import _optim
from .optimizer import (_real_views, Optimizer, _check_hyper, _check_not_differentiable, _sparse_check,
                        _split_by_dtype, _to_scalar, _use_grad)

__all__ = ["SGD"]


class SGD(Optimizer):
    """SGD with momentum, dampening, Nesterov momentum, weight decay and maximize; each
    parameter group is updated by one fused kernel call."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        _check_hyper(lr=lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_not_differentiable(differentiable, fused)
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @_use_grad
    def step(self, closure=None):
        """Performs one step; closure (optional) re-evaluates the model and returns the loss."""
        loss = None
        if closure is not None:
            with kindle.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params, grads, bufs = [], [], []
            momentum = group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                _sparse_check(p.grad, "SGD")
                params.append(p)
                grads.append(p.grad)
                bufs.append(self.state[p].get("momentum_buffer") if momentum != 0 else None)
            if not params:
                continue
            for ps, gs, bs in _split_by_dtype(params, grads, bufs):
                bs = _optim.sgd_step(*_real_views((ps, gs, bs)), float(_to_scalar(group["lr"])), float(momentum),
                                     float(group["dampening"]),
                                     float(_to_scalar(group["weight_decay"])),
                                     bool(group["nesterov"]), bool(group["maximize"]))
                if momentum != 0:  # the kernel creates the buffers on the first step
                    for p, buf in zip(ps, bs):
                        self.state[p]["momentum_buffer"] = kindle.view_as_complex(buf) if p.is_complex() else buf
        return loss

