"""SparseAdam: Adam for dense parameters with sparse gradients (torch.optim.SparseAdam)."""
import math

import kindle

from .optimizer import Optimizer, _check_hyper, _to_scalar, _use_grad

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam restricted to the entries a sparse gradient holds: the moments and the parameter
    change only there (for nn.Embedding(sparse=True) and the like).

    Kindle has no sparse tensors yet, so every gradient it produces is dense and step() raises
    torch's RuntimeError for it. The update below is written against torch's COO interface
    (coalesce, _indices, _values) and runs as soon as sparse gradients exist."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        _check_hyper(lr=lr)
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_hyper(betas=betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        sparse_params, complex_params = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if p.is_sparse:
                    sparse_params.append([index, d_index])
                if p.is_complex():
                    complex_params.append([index, d_index])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires "
                             "dense parameter tensors")
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not "
                             "support complex parameters")

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
                if not p.grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
            beta1, beta2 = group["betas"]
            for p in params:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0  # a Python int, as torch keeps it for SparseAdam
                    state["exp_avg"] = kindle.zeros_like(p)
                    state["exp_avg_sq"] = kindle.zeros_like(p)
                state["step"] += 1
                # The update is not linear in the gradient: duplicate indices are summed first.
                grad = p.grad.coalesce()
                values = grad._values()
                _sparse_adam_update(p, grad._indices(),
                                    values.neg() if group["maximize"] else values,
                                    state["exp_avg"], state["exp_avg_sq"], state["step"],
                                    lr=_to_scalar(group["lr"]), beta1=beta1, beta2=beta2,
                                    eps=group["eps"])
        return loss


def _sparse_adam_update(param, indices, values, exp_avg, exp_avg_sq, step, *, lr, beta1, beta2,
                        eps):
    """One SparseAdam step on the entries of a coalesced sparse gradient: indices is the
    (sparse_dim, nnz) integer tensor, values the (nnz, *dense_dims) gradient values. Rounds as
    torch's update does (moment update values first, then the moments)."""
    if values.numel() == 0:
        return
    where = tuple(indices[i] for i in range(indices.shape[0]))
    old_avg, old_sq = exp_avg[where], exp_avg_sq[where]
    avg = values.sub(old_avg).mul_(1 - beta1).add_(old_avg)
    sq = values.pow(2).sub_(old_sq).mul_(1 - beta2).add_(old_sq)
    exp_avg.index_put_(where, avg)
    exp_avg_sq.index_put_(where, sq)
    denom = sq.sqrt().add_(eps)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr * math.sqrt(bias_correction2) / bias_correction1
    param.index_put_(where, avg.div_(denom).mul_(-step_size), accumulate=True)
