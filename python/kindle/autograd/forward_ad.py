"""Forward-mode automatic differentiation (torch.autograd.forward_ad).

A dual tensor carries a tangent; every op propagates it as it runs (the tangent formulas are in
the op table beside the backward ones), so one forward pass gives a Jacobian-vector product:

    with forward_ad.dual_level():
        y = f(forward_ad.make_dual(x, v))
        jvp = forward_ad.unpack_dual(y).tangent
"""
from typing import NamedTuple, Optional

from .. import _C
from .grad_mode import _DecoratorContextManager

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_current_level = -1


def enter_dual_level():
    """Enters a new forward grad level (only one may be entered at a time) and returns it."""
    global _current_level
    new_level = _C._enter_dual_level()
    _current_level = new_level
    return new_level


def exit_dual_level(*, level=None):
    """Exits the forward grad level: every tangent of that level is dropped."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _C._exit_dual_level(level)
    _current_level = level - 1


def make_dual(tensor, tangent, *, level=None):
    """Returns a new tensor aliasing `tensor` that carries `tangent` as its forward gradient.
    Differentiable in reverse mode (gradients flow to `tensor`)."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not isinstance(tensor, _C.Tensor) or not isinstance(tangent, _C.Tensor):
        raise TypeError(f"make_dual(): expected Tensor arguments, got {type(tensor).__name__} and "
                        f"{type(tangent).__name__}")
    return _C._make_dual(tensor, tangent, level)


class UnpackedDualTensor(NamedTuple):
    """(primal, tangent) of a dual tensor; tangent is None for a tensor without one."""
    primal: _C.Tensor
    tangent: Optional[_C.Tensor]


def unpack_dual(tensor, *, level=None):
    """Returns (primal, tangent): a view of the value without the tangent, and the tangent
    (None when `tensor` has none at `level`)."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    primal, tangent = _C._unpack_dual(tensor, level)
    return UnpackedDualTensor(primal, tangent)


class dual_level(_DecoratorContextManager):
    """Context manager for forward AD: every dual tensor made inside loses its tangent at exit.
    Nested levels are not supported (as in PyTorch); use kindle.func.jvp for higher orders."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()
