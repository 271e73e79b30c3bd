"""nn.Parameter and nn.Buffer: tensor subclasses that a Module registers on attribute assignment."""
from .. import _C
from ..overrides import _disabled_torch_function_impl

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"]


class Parameter(_C.Tensor):
    """A tensor that is a module parameter: assigning one as a Module attribute registers it.

    Parameter(data=None, requires_grad=True) shares data's storage and is a leaf; requires_grad
    is True even under no_grad (as in torch)."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        return _C.Tensor._make_subclass(cls, data, requires_grad)

    def __init__(self, *args, **kwargs):
        pass  # __new__ built the instance; Tensor.__init__ would try to build it again

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __torch_function__ = _disabled_torch_function_impl  # ops on a Parameter return plain tensors


class Buffer(_C.Tensor):
    """Marks a tensor to be registered as a buffer when assigned as a Module attribute:
    Buffer(data, persistent=True). The module stores it as a plain tensor."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C.empty(0)
        t = _C.Tensor._make_subclass(cls, data, data.requires_grad)
        t.persistent = persistent
        return t

    def __init__(self, *args, **kwargs):
        pass

    __torch_function__ = _disabled_torch_function_impl


def __getattr__(name):  # torch.nn.parameter.UninitializedParameter: defined with the lazy modules
    if name in ("UninitializedParameter", "UninitializedBuffer"):
        from .modules import lazy
        return getattr(lazy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
