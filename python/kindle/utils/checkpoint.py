"""Activation checkpointing (torch.utils.checkpoint): run a segment without keeping its
intermediate results, and run it again in backward to get its gradients.

The reentrant variant (use_reentrant=True) is an autograd.Function whose forward runs the
segment under no_grad and whose backward reruns it with grad enabled on detached copies of its
inputs, then backpropagates through that recomputation (a nested backward, which accumulates
into the `.grad` of the leaves the segment uses, parameters included: see Note [Checkpoint and
autograd.grad]).

The non-reentrant variant (use_reentrant=False, recommended) keeps the ordinary graph and
recomputes only the tensors it saved (Note [Non-reentrant checkpoint]): keyword arguments,
nested structures, autograd.grad and double backward work as without checkpointing, and
context_fn / determinism_check are honoured. Both save the default generator's state before the
forward and restore it around the recomputation, so dropout draws the same mask twice.
"""
import contextlib
import warnings
import weakref

from .. import _C
from ..autograd import backward as _autograd_backward
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad
from ..autograd.graph import saved_tensors_hooks
from ..random import fork_rng

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "detach_variable",
           "check_backward_validity", "noop_context_fn", "set_checkpoint_early_stop",
           "set_checkpoint_debug_enabled"]

# Note [Checkpoint and autograd.grad] (reentrant variant): the recomputed graph's leaves (a module's parameters) are
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


class _Holder:
    """Stands in for one tensor the segment saved for backward; the tensor itself is not kept."""
    __slots__ = ("index", "meta", "__weakref__")


class _StopRecomputation(Exception):
    pass


def _meta(x):
    return (tuple(x.shape), x.dtype, str(x.device))


class _Frame:
    """One checkpointed call (Note [Non-reentrant checkpoint]): holders for what its forward
    saved, and the values a recomputation gives them during a backward pass."""

    def __init__(self, recompute, determinism_check):
        self.recompute = recompute
        self.determinism_check = determinism_check
        self.holders = []      # weak references, in the order the forward saved
        self.recomputed = {}   # graph task id -> {holder: value}

    def pack(self, x):
        h = _Holder()
        h.index = len(self.holders)
        h.meta = _meta(x)
        self.holders.append(weakref.ref(h))
        return h

    def unpack(self, h):
        task = _C._current_graph_task_id()
        values = self.recomputed.get(task)
        if values is None:
            values = weakref.WeakKeyDictionary()
            if task != -1:  # kept for the rest of this pass; each value goes with its holder
                self.recomputed[task] = values
                _C._queue_callback(lambda: self.recomputed.pop(task, None))
            self._recompute_into(values)
        if h not in values:
            raise CheckpointError("torch.utils.checkpoint: the recomputation did not produce the tensor saved as "
                                  f"number {h.index} by the forward pass")
        return values[h]

    def _recompute_into(self, values):
        count = 0
        wanted = len(self.holders)
        check = self.determinism_check == "default"

        def pack(x):
            nonlocal count
            i = count
            count += 1
            if i >= wanted:
                raise CheckpointError("torch.utils.checkpoint: the recomputation saved more tensors for backward "
                                      f"than the forward pass did ({wanted})")
            h = self.holders[i]()
            if h is not None:
                if check and _meta(x) != h.meta:
                    raise CheckpointError(
                        "torch.utils.checkpoint: Recomputed values for the following tensors have different "
                        f"metadata than during the forward pass.\ntensor at position {i}:\nsaved metadata: "
                        f"{h.meta}\nrecomputed metadata: {_meta(x)}")
                values[h] = x.detach()
            if count == wanted:
                raise _StopRecomputation  # everything is back: the rest of the segment need not run
            return None

        def unpack(_):
            raise AssertionError("checkpoint: a recomputation's own saved tensors are never unpacked")

        if wanted == 0:
            return
        try:
            with saved_tensors_hooks(pack, unpack), enable_grad():
                self.recompute()
        except _StopRecomputation:
            pass
        if check and count < wanted:
            raise CheckpointError("torch.utils.checkpoint: the recomputation saved fewer tensors for backward "
                                  f"({count}) than the forward pass did ({wanted})")


# Note [Non-reentrant checkpoint]: the segment runs once, with grad enabled, under saved-tensor
# hooks that keep a small holder in place of each tensor an op saves for backward (the tensor
# itself is freed once nothing else uses it). The graph is the ordinary one, so gradients reach
# parameters, nested structures and autograd.grad's inputs as without checkpointing, and double
# backward works. The first unpack in a backward pass reruns the segment (same generator state,
# the recompute context) under hooks that hand each saved tensor, in order, to its holder, and
# stops it as soon as the last one is back.
def _checkpoint_non_reentrant(function, preserve, context_fn, determinism_check, args, kwargs):
    if determinism_check not in _DETERMINISM_MODES:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM_MODES)}, but got "
                         f"{determinism_check}")
    forward_ctx, recompute_ctx = context_fn()
    if not _C.is_grad_enabled():  # nothing will be differentiated: just run it
        with forward_ctx:
            return function(*args, **kwargs)
    rng_state = _generator_state(preserve)

    def recompute():
        with _forward_rng(rng_state), recompute_ctx:
            function(*args, **kwargs)

    frame = _Frame(recompute, determinism_check)
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_ctx:
        return function(*args, **kwargs)


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
