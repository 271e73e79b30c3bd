"""Adagrad (torch.optim.Adagrad)."""
import kindle
from kindle import Tensor

from kindle._C import _optim
from .optimizer import (_real_views, Optimizer, _check_hyper, _check_not_differentiable, _sparse_check,
                        _split_by_dtype, _step_tensor, _to_scalar, _use_grad)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad with learning-rate decay; the state (step, sum) is created for every parameter
    at construction, as torch does. Each parameter group is updated by one fused kernel call."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_hyper(lr=lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_not_differentiable(differentiable, fused)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _step_tensor()
                state["sum"] = kindle.full_like(p, initial_accumulator_value)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
        for s in self.state.values():
            if isinstance(s, dict) and "step" in s and not isinstance(s["step"], Tensor):
                s["step"] = _step_tensor(s["step"])

    def share_memory(self):
        """Moves the accumulators to shared memory (for Hogwild-style training)."""
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    @_use_grad
    def step(self, closure=None):
        """Performs one step; closure (optional) re-evaluates the model and returns the loss."""
        loss = None
        if closure is not None:
            with kindle.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params, grads, sums, steps = [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                _sparse_check(p.grad, "Adagrad")
                params.append(p)
                grads.append(p.grad)
                state = self.state[p]
                if len(state) == 0:  # a parameter added by add_param_group after construction
                    state["step"] = _step_tensor()
                    state["sum"] = kindle.full_like(p, self.defaults["initial_accumulator_value"])
                sums.append(state["sum"])
                steps.append(int(state["step"].add_(1).item()))
            if not params:
                continue
            for lists in _split_by_dtype(params, grads, sums, steps):
                _optim.adagrad_step(*_real_views(lists), float(_to_scalar(group["lr"])),
                                    float(group["lr_decay"]), float(group["weight_decay"]),
                                    float(group["eps"]), bool(group["maximize"]))
        return loss
