"""Tensor.__deepcopy__ and pickling, installed onto kindle.Tensor by kindle/__init__.py.

A pickled tensor carries its values (as a NumPy array), dtype, requires_grad, its Python class
(so a Parameter comes back a Parameter) and any attributes set on it. Gradients and hooks are not
pickled (as in torch); views are materialised, so two views of one storage unpickle as two
independent tensors."""
import copy

from . import _C
from .autograd.grad_mode import no_grad

Tensor = _C.Tensor


def _as_subclass(cls, t, requires_grad):
    if cls is Tensor:
        return t.requires_grad_(requires_grad) if requires_grad else t
    return Tensor._make_subclass(cls, t, requires_grad)


def _deepcopy(self, memo):
    if id(self) in memo:
        return memo[id(self)]
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol "
                           "at the moment. (deepcopy of a tensor with grad_fn "
                           f"{self.grad_fn.name()}: detach() it first, or copy the leaf it was computed from)")
    with no_grad():
        new = _as_subclass(type(self), self.clone(), self.requires_grad)
    memo[id(self)] = new  # before the grad and attributes, which may refer back to self
    grad = self.grad
    if grad is not None:
        new.grad = copy.deepcopy(grad, memo)
    for k, v in getattr(self, "__dict__", {}).items():
        setattr(new, k, copy.deepcopy(v, memo))
    return new


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _reduce_ex(self, proto):
    t = self.detach()
    dtype = _dtype_name(t.dtype)
    if dtype == "bfloat16":  # NumPy has no bfloat16; float32 holds every bfloat16 value exactly
        t = t.float()
    values = t.clone().contiguous().numpy()  # (a copy: exporting t itself would mark it, Note [Derived data cache])
    state = dict(getattr(self, "__dict__", {}))
    return _rebuild_tensor, (type(self), values, dtype, self.requires_grad, state)


def _rebuild_tensor(cls, values, dtype, requires_grad, state):
    import kindle

    t = _C.from_numpy(values)
    target = getattr(kindle, dtype)
    if t.dtype != target:
        t = t.to(target)
    t = _as_subclass(cls, t, requires_grad)
    for k, v in state.items():
        setattr(t, k, v)
    return t


Tensor.__deepcopy__ = _deepcopy
Tensor.__reduce_ex__ = _reduce_ex
