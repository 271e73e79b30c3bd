"""Activation checkpointing (torch.utils.checkpoint): run a segment without keeping its
intermediate results, and run it again in backward to get its gradients.

Both variants are an autograd.Function whose forward runs the segment under no_grad and whose
backward reruns it with grad enabled on detached copies of its inputs, then backpropagates
through that recomputation (a nested backward, which accumulates into the `.grad` of the leaves
the segment uses, parameters included). The default generator's state is saved before the
forward and restored around the recomputation, so dropout draws the same mask twice.

The non-reentrant variant (use_reentrant=False) differs as in PyTorch where Kindle can: keyword
arguments reach the function, tensors nested in lists, tuples and dicts (arguments and results)
take part in autograd, parameters get gradients even when no input requires grad, and
context_fn / determinism_check are honoured. Unlike PyTorch's, it recomputes the whole segment
and, being a nested backward, it suits .backward() and not torch.autograd.grad (see Note
[Checkpoint and autograd.grad]).
"""
import contextlib
import warnings

from .. import _C
from ..autograd import backward as _autograd_backward
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad
from ..random import fork_rng

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "detach_variable",
           "check_backward_validity", "noop_context_fn", "set_checkpoint_early_stop",
           "set_checkpoint_debug_enabled"]

# Note [Checkpoint and autograd.grad]: the recomputed graph's leaves (a module's parameters) are
# not inputs of the checkpoint node, so the nested backward accumulates their gradients into
# .grad instead of handing them to the outer call. With .backward() (the common case) this is
# exactly what happens without checkpointing; with autograd.grad(outputs, inputs) the gradients
# for `inputs` are right, but parameters used inside the segment also get .grad updated.


class CheckpointError(RuntimeError):
    """The recomputation in backward did not reproduce the forward (determinism_check)."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


_DETERMINISM_MODES = ("default", "none")


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Accepted for compatibility: Kindle always recomputes the whole segment."""
    yield


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Accepted for compatibility: Kindle's checkpoint has no operator trace to print."""
    yield


def detach_variable(inputs):
    """Detached copies of the tensors in a tuple, requiring grad as the originals do."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, _C.Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad_(inp.requires_grad)
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(isinstance(inp, _C.Tensor) and inp.requires_grad for inp in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")


def _generator_state(preserve):
    return _C.default_generator().get_state() if preserve else None


@contextlib.contextmanager
def _forward_rng(state):
    """The generator as it was at the forward pass, for the block; the caller's state after."""
    with fork_rng(enabled=state is not None):
        if state is not None:
            _C.default_generator().set_state(state)
        yield


def _backprop(outputs, grads, require_some):
    """Backpropagates `grads` through the recomputed `outputs` that require grad."""
    pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, _C.Tensor) and o.requires_grad]
    if not pairs:
        if require_some:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        return
    outs = [o for o, _ in pairs]
    gs = [g if g is not None else _C.zeros_like(o) for o, g in pairs]
    _autograd_backward(outs, gs)


class CheckpointFunction(Function):
    """The reentrant checkpoint: apply(run_function, preserve_rng_state, *args)."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.rng_state = _generator_state(preserve_rng_state)
        ctx.inputs = [None if isinstance(a, _C.Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_indices])
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        with _forward_rng(ctx.rng_state), enable_grad():
            outputs = ctx.run_function(*detached)
        if isinstance(outputs, _C.Tensor):
            outputs = (outputs,)
        tensor_outputs = [o for o in outputs if isinstance(o, _C.Tensor)]
        _backprop(tensor_outputs, grads, require_some=True)
        return (None, None) + tuple(d.grad if isinstance(d, _C.Tensor) else None for d in detached)


# The non-reentrant variant flattens its arguments and results: tensors anywhere in lists,
# tuples and dicts become inputs and outputs of the autograd node.

def _flatten(obj, leaves):
    if isinstance(obj, _C.Tensor):
        leaves.append(obj)
        return None
    if isinstance(obj, (list, tuple)):
        return (type(obj), [_flatten(o, leaves) for o in obj])
    if isinstance(obj, dict):
        return (type(obj), {k: _flatten(v, leaves) for k, v in obj.items()})
    return ("const", obj)


def _unflatten(spec, it):
    if spec is None:
        return next(it)
    kind, body = spec
    if kind == "const":
        return body
    if isinstance(body, dict):
        return kind((k, _unflatten(v, it)) for k, v in body.items())
    items = [_unflatten(s, it) for s in body]
    if kind in (list, tuple):
        return kind(items)
    if hasattr(kind, "_fields"):  # a namedtuple
        return kind(*items)
    return kind(items)


def _metadata(tensors):
    return [(tuple(t.shape), t.dtype, str(t.device)) for t in tensors]


def _may_need_grad(function, args):
    """Whether the segment could produce something to differentiate: an input requires grad, or
    the function may close over parameters (anything but a module whose parameters are frozen)."""
    if any(isinstance(a, _C.Tensor) and a.requires_grad for a in args):
        return True
    owner = getattr(function, "__self__", function)
    params = getattr(owner, "parameters", None)
    if callable(params) and hasattr(owner, "_parameters"):
        return any(p.requires_grad for p in params())
    return True


class _NonReentrantCheckpoint(Function):
    @staticmethod
    def forward(ctx, spec, _anchor, *tensors):
        ctx.spec = spec
        ctx.rng_state = _generator_state(spec["preserve"])
        ctx.save_for_backward(*tensors)
        args, kwargs = _unflatten(spec["inputs"], iter(tensors))
        forward_ctx, ctx.recompute_ctx = spec["context_fn"]()
        with forward_ctx:
            result = spec["function"](*args, **kwargs)
        leaves = []
        spec["outputs"] = _flatten(result, leaves)
        ctx.num_outputs = len(leaves)
        ctx.metadata = _metadata(leaves)
        spec["result_is_tensor"] = isinstance(result, _C.Tensor)
        return tuple(leaves)

    @staticmethod
    def backward(ctx, *grads):
        spec = ctx.spec
        saved = ctx.saved_tensors
        detached = detach_variable(tuple(saved))
        args, kwargs = _unflatten(spec["inputs"], iter(detached))
        with _forward_rng(ctx.rng_state), enable_grad(), ctx.recompute_ctx:
            result = spec["function"](*args, **kwargs)
        leaves = []
        _flatten(result, leaves)
        if spec["determinism_check"] == "default" and _metadata(leaves) != ctx.metadata:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values have different metadata than during the forward "
                f"pass.\nforward: {ctx.metadata}\nrecomputation: {_metadata(leaves)}")
        _backprop(leaves, grads, require_some=False)
        return (None, None) + tuple(d.grad if d.requires_grad else None for d in detached)


def _checkpoint_non_reentrant(function, preserve, context_fn, determinism_check, args, kwargs):
    if determinism_check not in _DETERMINISM_MODES:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM_MODES)}, but got "
                         f"{determinism_check}")
    if not _C.is_grad_enabled():  # nothing will be differentiated: just run it
        forward_ctx, _ = context_fn()
        with forward_ctx:
            return function(*args, **kwargs)
    tensors = []
    spec = {"function": function, "preserve": preserve, "context_fn": context_fn,
            "determinism_check": determinism_check, "inputs": _flatten((args, kwargs), tensors)}
    # An input that requires grad makes the node's outputs require grad, so that backward reaches
    # the recomputation even when only the segment's parameters need gradients.
    anchor = _C.empty([0], requires_grad=True) if _may_need_grad(function, tensors) else None
    outputs = _NonReentrantCheckpoint.apply(spec, anchor, *tensors)
    if spec["result_is_tensor"]:
        return outputs[0]
    return _unflatten(spec["outputs"], iter(outputs))


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """Runs `function(*args)` without keeping its intermediate results; backward runs it again.

    Pass use_reentrant explicitly (False is recommended); preserve_rng_state=False skips saving
    the generator state. Keyword arguments reach the function only when use_reentrant=False."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
            "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False "
            "is recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_non_reentrant(function, preserve, context_fn, determinism_check, args, kwargs)


def _run_segment(functions, start, end):
    def forward(x):
        for j in range(start, end + 1):
            x = functions[j](x)
        return x
    return forward


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):  # noqa: A002
    """Runs a sequence of modules or functions split into `segments` chunks, checkpointing every
    chunk but the last (whose results backward needs anyway)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
            "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
            "two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(_run_segment(functions, start, end), input, use_reentrant=use_reentrant,  # noqa: A001
                           preserve_rng_state=preserve)
    return _run_segment(functions, end + 1, len(functions) - 1)(input)
