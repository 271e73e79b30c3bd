"""Adam and its decoupled-weight-decay form AdamW (torch.optim.Adam)."""
import kindle
from kindle import Tensor

from kindle._C import _optim
from .optimizer import (_real_views, Optimizer, _check_capturable, _check_hyper, _check_not_differentiable,
                        _sparse_check, _split_by_dtype, _step_tensor, _to_scalar, _use_grad)

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam (with amsgrad, maximize, L2 or decoupled weight decay); each parameter group is
    updated by one fused kernel call."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        _check_hyper(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, b in enumerate(betas):
            if isinstance(b, Tensor) and b.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
        _check_not_differentiable(differentiable, fused)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = _step_tensor(p_state["step"])

    def _init_group(self, group, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps):
        for p in group["params"]:
            if p.grad is None:
                continue
            _sparse_check(p.grad, "Adam")
            params.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _step_tensor()
                state["exp_avg"] = kindle.zeros_like(p)
                state["exp_avg_sq"] = kindle.zeros_like(p)
                if group["amsgrad"]:
                    state["max_exp_avg_sq"] = kindle.zeros_like(p)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if group["amsgrad"]:
                max_exp_avg_sqs.append(state["max_exp_avg_sq"])
            # The step count stays a tensor in the state (torch's format); the kernel gets ints.
            steps.append(int(state["step"].add_(1).item()))

    @_use_grad
    def step(self, closure=None):
        """Performs one step; closure (optional) re-evaluates the model and returns the loss."""
        loss = None
        if closure is not None:
            with kindle.enable_grad():
                loss = closure()
        for group in self.param_groups:
            # params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps
            lists = ([], [], [], [], [], [])
            if group["capturable"]:
                _check_capturable([p for p in group["params"] if p.grad is not None])
            self._init_group(group, *lists)
            if not lists[0]:
                continue
            beta1, beta2 = group["betas"]
            for sub in _split_by_dtype(*lists):
                _optim.adam_step(*_real_views(sub), float(_to_scalar(group["lr"])), float(_to_scalar(beta1)),
                                 float(_to_scalar(beta2)), float(group["eps"]),
                                 float(group["weight_decay"]), bool(group["amsgrad"]),
                                 bool(group["maximize"]), bool(group["decoupled_weight_decay"]))
        return loss
