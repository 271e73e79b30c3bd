"""Adafactor: Adam-like steps whose second moment of a matrix is kept as a row and a column
factor (torch.optim.Adafactor)."""
import kindle
from kindle import Tensor

from .optimizer import Optimizer, _sparse_check, _step_tensor, _to_scalar, _use_grad

__all__ = ["Adafactor"]

# torch.finfo(dtype).eps, the default for eps[0].
_MACHINE_EPS = {kindle.float16: 2.0 ** -10, kindle.bfloat16: 2.0 ** -7,
                kindle.float32: 2.0 ** -23, kindle.float64: 2.0 ** -52}


class Adafactor(Optimizer):
    """Adafactor as torch implements it: a tensor of two or more dimensions keeps row_var and
    col_var (its mean square over the last and over the second-to-last dimension), a vector or
    scalar keeps a full variance; the relative step min(lr, 1/sqrt(t)) is scaled by the
    parameter's RMS (at least eps[1]) and the update is clipped to RMS <= d.

    foreach only picks torch's implementation, so it changes nothing here."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = _step_tensor(p_state["step"])

    def _init_state(self, p):
        state = self.state[p]
        if len(state) != 0:
            return state
        state["step"] = _step_tensor()
        grad = p.grad
        if grad.dim() > 1:
            row_shape, col_shape = list(grad.shape), list(grad.shape)
            row_shape[-1] = 1
            col_shape[-2] = 1
            state["row_var"] = grad.new_zeros(row_shape)
            state["col_var"] = grad.new_zeros(col_shape)
        else:
            state["variance"] = kindle.zeros_like(grad)
        return state

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
                    raise RuntimeError("Adafactor does not support complex parameters")
                _sparse_check(p.grad, "Adafactor")
                self._init_state(p)
            lr, beta2_decay, d = _to_scalar(group["lr"]), group["beta2_decay"], group["d"]
            eps1, eps2 = group["eps"]
            weight_decay = group["weight_decay"]
            for p in params:
                state = self.state[p]
                grad = p.grad.neg() if group["maximize"] else p.grad
                # torch fills a missing eps1 from the first parameter's dtype and keeps it for
                # the rest of the group; so does this.
                if eps1 is None:
                    eps1 = _MACHINE_EPS[p.dtype]
                state["step"].add_(1)
                step = state["step"].item()
                one_minus_beta2 = step ** beta2_decay
                rho = min(lr, 1 / (step ** 0.5))
                alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho
                if weight_decay != 0:
                    p.mul_(1 - lr * weight_decay)
                if grad.dim() > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    # The mean squares along the last two dimensions, as squared norms.
                    row_var.lerp_(grad.norm(2, dim=-1, keepdim=True).square_()
                                  .div_(grad.size(-1)), one_minus_beta2)
                    col_var.lerp_(grad.norm(2, dim=-2, keepdim=True).square_()
                                  .div_(grad.size(-2)), one_minus_beta2)
                    # The rank-1 estimate R C / mean(R) of the full second moment.
                    var_estimate = row_var @ col_var
                    var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
                else:
                    variance = state["variance"]
                    variance.lerp_(grad * grad, one_minus_beta2)
                    var_estimate = variance.clone()
                # eps1 bounds the variance from below, hence squared.
                update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
                update.mul_(grad)
                denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
                p.add_(update, alpha=-alpha / denom)
        return loss
