"""Muon: momentum SGD whose update matrix is orthogonalised by a Newton-Schulz iteration
(torch.optim.Muon)."""
import math

import kindle
from kindle import Tensor

from .optimizer import Optimizer, _sparse_check, _to_scalar, _use_grad

__all__ = ["Muon"]


def _orthogonalize(grad, ns_coefficients, ns_steps, eps):
    """About U V^T of grad = U S V^T: ns_steps quintic Newton-Schulz iterations in bfloat16
    (with torch's coefficients the singular values land near 1, not exactly on it)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = grad.bfloat16()
    tall = grad.size(0) > grad.size(1)
    if tall:  # iterate on the wide orientation: its Gram matrix is the smaller one
        x = x.T
    x.div_(x.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = x @ x.T
        poly = kindle.addmm(gram, gram, gram, beta=b, alpha=c)
        x = kindle.addmm(x, poly, x, beta=a)
    return x.T if tall else x


def _adjusted_lr(lr, adjust_lr_fn, shape):
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(Optimizer):
    """Muon for 2-D parameters (hidden-layer weight matrices; optimize the others with AdamW):
    Nesterov or plain momentum, the update orthogonalised in bfloat16, decoupled weight decay,
    and the step scaled for rectangular shapes by adjust_lr_fn ("original" or
    "match_rms_adamw")."""

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-7, ns_steps=5,
                 adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

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
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                _sparse_check(p.grad, "Muon")
                if "momentum_buffer" not in self.state[p]:
                    self.state[p]["momentum_buffer"] = kindle.zeros_like(p.grad)
            lr, momentum = _to_scalar(group["lr"]), group["momentum"]
            for p in params:
                grad = p.grad
                if grad.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                buf = self.state[p]["momentum_buffer"]
                buf.lerp_(grad, 1 - momentum)
                update = grad.lerp(buf, momentum) if group["nesterov"] else buf
                update = _orthogonalize(update, group["ns_coefficients"], group["ns_steps"],
                                        group["eps"])
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(update, alpha=-_adjusted_lr(lr, group["adjust_lr_fn"], p.shape))
        return loss
