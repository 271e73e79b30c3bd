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

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, _C.Tensor) and a.requires_grad for a in args)
        ctx.materialize_grads = True
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        dual = _C._fw_active() and any(_C._fw_tangent(args[i]) is not None for i in tensor_pos)
        if dual and cls.jvp is Function.jvp:
            raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                      "with forward mode AD.")
        # forward runs on the primal values: the outputs' tangents come from jvp
        suspended = _C._fw_set_suspended(True)
        try:
            with no_grad():
                if cls.setup_context is not Function.setup_context:
                    outputs = cls.forward(*args, **kwargs)
                    cls.setup_context(ctx, args, outputs)
                else:
                    outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            _C._fw_set_suspended(suspended)
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
        if dual:
            _apply_jvp(cls, ctx, args, wrapped)
        return wrapped[0] if single else tuple(wrapped)


class _JvpContext:
    """The ctx jvp sees: saved_tensors are those given to save_for_forward."""

    def __init__(self, ctx):
        object.__setattr__(self, "_ctx", ctx)

    @property
    def saved_tensors(self):
        saved = getattr(self._ctx, "_saved_for_forward", None)
        return saved if saved is not None else self._ctx.saved_tensors

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def __setattr__(self, name, value):
        setattr(self._ctx, name, value)


def _save_for_forward(ctx, *tensors):
    for t in tensors:
        if t is not None and not isinstance(t, _C.Tensor):
            raise TypeError(f"save_for_forward expects Tensors or None, got {type(t).__name__}")
    ctx._saved_for_forward = tuple(tensors)


FunctionCtx.save_for_forward = _save_for_forward


def _apply_jvp(cls, ctx, args, outputs):
    tangents = [_C._fw_tangent(a) if isinstance(a, _C.Tensor) else None for a in args]
    result = cls.jvp(_JvpContext(ctx), *tangents)
    if not isinstance(result, tuple):
        result = (result,)
    tensor_outs = [o for o in outputs if isinstance(o, _C.Tensor)]
    if len(result) != len(tensor_outs):
        raise RuntimeError(f"function {cls.__name__}.jvp returned an incorrect number of tangents (expected "
                           f"{len(tensor_outs)}, got {len(result)})")
    ins = [t for t in tangents if t is not None]
    for o, t in zip(tensor_outs, result):
        if t is None:
            continue
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"function {cls.__name__}.jvp returned a tangent of type {type(t).__name__}; "
                            f"expected a Tensor or None")
        if tuple(t.shape) != tuple(o.shape):
            raise RuntimeError(f"function {cls.__name__}.jvp returned a tangent of shape {tuple(t.shape)} for an "
                               f"output of shape {tuple(o.shape)}")
        _C._fw_set_output_tangent(o, t, ins)


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
