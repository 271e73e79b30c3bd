"""L-BFGS with an optional strong-Wolfe line search (torch.optim.LBFGS). The algorithm runs in C++
(csrc/optim/lbfgs.cpp, shared with kindle::optim::LBFGS): PyTorch's, step for step, keeping the
scalars PyTorch keeps as 0-d float32 tensors (y.s, 1/y.s, H_diag, the step t) as tensors, so the
iterates round the same way. Its state lives here under torch's names."""
from .. import _C
from .optimizer import Optimizer, _to_scalar

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    """L-BFGS (torch.optim.LBFGS). One parameter group only; step(closure) requires a closure
    that clears the gradients, recomputes the loss, calls backward and returns the loss."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if isinstance(lr, _C.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {"lr": lr, "max_iter": max_iter, "max_eval": max_eval,
                    "tolerance_grad": tolerance_grad, "tolerance_change": tolerance_change,
                    "history_size": history_size, "line_search_fn": line_search_fn}
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def step(self, closure):
        """Runs up to max_iter L-BFGS iterations; returns the loss of the first evaluation."""
        if closure is None:
            raise RuntimeError("LBFGS requires a closure that reevaluates the model and returns the loss")
        group = self.param_groups[0]
        # The state lives on the first parameter (there is one group).
        state = self.state[self._params[0]]
        return _C._optim.lbfgs_step(self._params, closure, state, _to_scalar(group["lr"]), group["max_iter"],
                                    group["max_eval"], group["tolerance_grad"], group["tolerance_change"],
                                    group["history_size"], group["line_search_fn"])
