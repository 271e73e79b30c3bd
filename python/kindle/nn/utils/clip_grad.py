"""Gradient clipping: clip_grad_norm_, clip_grad_value_, get_total_norm, clip_grads_with_norm_."""
from ... import _C
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _tensors(parameters):
    return [parameters] if isinstance(parameters, _C.Tensor) else list(parameters)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (the norm of their concatenation). foreach is accepted
    and ignored: each norm is already one C++ reduction."""
    tensors = [t for t in _tensors(tensors) if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return _C.tensor(0.0)
    with no_grad():
        norms = [t.norm(norm_type) for t in tensors]
        total_norm = _C.stack(norms).norm(norm_type)
    if error_if_nonfinite and not bool(total_norm.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           f"it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           f"norm anyway, set `error_if_nonfinite=False`")
    return total_norm


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scales the gradients by min(1, max_norm / (total_norm + 1e-6)) in place."""
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        clip_coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(clip_coef.to(g.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Clips the gradients of `parameters` so that their total norm is at most max_norm; returns
    the total norm before clipping."""
    parameters = _tensors(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    import warnings

    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient of `parameters` to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _tensors(parameters):
            g = p.grad
            if g is not None:
                g.clamp_(min=-clip_value, max=clip_value)
