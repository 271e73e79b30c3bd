"""User-defined differentiable functions (torch.autograd.Function)."""
import functools

from .. import _C
from .grad_mode import no_grad

FunctionCtx = _C.FunctionCtx


class Function:
    """Subclass with static `forward(ctx, *args)` and `backward(ctx, *grad_outputs)`, then call
    `MyFunction.apply(*args)`. `backward` returns one gradient (or None) per forward argument."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__}: autograd.Function is used through its class: call "
                           f"{type(self).__name__}.apply(...), not an instance")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement the backward function for custom autograd.Function.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, _C.Tensor) and a.requires_grad for a in args)
        ctx.materialize_grads = True
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        with no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(outputs, tuple)
        outs = [outputs] if single else list(outputs)
        name = cls.__name__ + "Backward"
        nargs = len(args)

        def call_backward(c, grads):
            result = cls.backward(c, *grads)
            if not isinstance(result, tuple):
                result = (result,)
            if len(result) < nargs or any(r is not None for r in result[nargs:]):
                raise RuntimeError(f"function {name} returned an incorrect number of gradients (expected {nargs}, "
                                   f"got {len(result)})")
            out = []
            for i in tensor_pos:
                g = result[i]
                if g is not None and not isinstance(g, _C.Tensor):
                    raise TypeError(f"function {name} returned a gradient of type {type(g).__name__} for "
                                    f"argument {i}; expected a Tensor or None")
                out.append(g)
            return out

        wrapped = _C._function_apply(name, ctx, [args[i] for i in tensor_pos], outs, call_backward)
        return wrapped[0] if single else tuple(wrapped)


def once_differentiable(fn):
    """Marks a backward as not differentiable itself: it runs without recording, and
    differentiating its result again raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not _C.is_grad_enabled():
            return outputs
        if not any(isinstance(a, _C.Tensor) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        grads = [a for a in args if isinstance(a, _C.Tensor)]
        wrapped = tuple(_DelayedError.apply(o, *grads) if isinstance(o, _C.Tensor) else o for o in outs)
        return wrapped[0] if single else wrapped

    return wrapper


class _DelayedError(Function):
    @staticmethod
    def forward(ctx, x, *grads):
        return x.clone()

    @staticmethod
    def backward(ctx, *g):
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


class InplaceFunction(Function):
    pass
