"""User-defined differentiable functions (torch.autograd.Function)."""
import functools
import sys

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
        vm = sys.modules.get("kindle.func._vmap")
        if vm is not None and vm.levels and any(type(a) is vm.BatchedTensor for a in args):
            return _apply_under_vmap(cls, vm, args, kwargs)
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

    def __delattr__(self, name):
        delattr(self._ctx, name)


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


# ---- autograd.Function under vmap (kindle.func)

class _VmapCtx:
    """The ctx a Function's forward, setup_context, backward and jvp see under vmap: they run on
    batched values, which are kept here as they are."""

    def __init__(self, needs_input_grad):
        self.saved_tensors = ()
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self._saved_for_forward = None

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def save_for_forward(self, *tensors):
        self._saved_for_forward = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = value

    def mark_non_differentiable(self, *outputs):
        self._non_differentiable = outputs

    def mark_dirty(self, *tensors):
        raise NotImplementedError("autograd.Function under vmap: in-place outputs (mark_dirty) are not supported")


class _Levels:
    """Re-enters the vmap levels a Function ran under (its backward may run after the vmap, from
    a backward() call on the results)."""

    def __init__(self, vm, lv):
        self.vm, self.lv = vm, lv

    def __enter__(self):
        self.added = [lvl for lvl in self.lv if lvl not in self.vm.levels]
        self.vm.levels.extend(self.added)
        return self

    def __exit__(self, *exc):
        for lvl in self.added:
            self.vm.levels.remove(lvl)
        return False


def _apply_under_vmap(cls, vm, args, kwargs):
    """A Function called on batched values: with a `vmap` staticmethod, that rule; with
    generate_vmap_rule=True, forward, backward and jvp run on the batched values (each op through
    its batching rule) inside a Function over the physical tensors, which the autograd engine
    and forward mode see. torch requires one of the two, and so does Kindle."""
    if cls.setup_context is Function.setup_context:
        raise RuntimeError("In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, "
                           "...), it must override the setup_context staticmethod. For more details, please see "
                           f"https://pytorch.org/docs/main/notes/extending.func.html ({cls.__name__})")
    if "vmap" in _own_members(cls) and not getattr(cls, "generate_vmap_rule", False):
        return _apply_vmap_staticmethod(cls, vm, args, kwargs)
    if not getattr(cls, "generate_vmap_rule", False):
        raise RuntimeError("To use autograd.Function with vmap, you must either override the vmap staticmethod or "
                           f"set generate_vmap_rule=True. ({cls.__name__})")
    lv = list(vm.levels)
    pos = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
    phys = list(args)
    for i in pos:
        phys[i] = vm.to_levels(args[i], lv)
    user = _VmapCtx(tuple(isinstance(a, _C.Tensor) and a.requires_grad for a in args))
    shape = {}

    def logical(values):
        return [vm.from_levels(v, lv) if isinstance(v, _C.Tensor) else v for v in values]

    def physical(values):
        return tuple(vm.to_levels(v, lv) if isinstance(v, _C.Tensor) else v for v in values)

    class _OnPhysical(Function):
        @staticmethod
        def forward(ctx, *p):
            with _Levels(vm, lv):
                xs = logical(p)
                out = cls.forward(*xs, **kwargs)
                cls.setup_context(user, tuple(xs), out)
                shape["single"] = not isinstance(out, tuple)
                outs = physical([out] if shape["single"] else out)
                nondiff = getattr(user, "_non_differentiable", ())
                if nondiff:
                    ctx.mark_non_differentiable(*physical(nondiff))
                return outs[0] if shape["single"] else outs

        @staticmethod
        def backward(ctx, *grads):
            with _Levels(vm, lv):
                res = cls.backward(user, *logical(grads))
                res = res if isinstance(res, tuple) else (res,)
                return physical(res)

        @staticmethod
        def jvp(ctx, *tangents):
            with _Levels(vm, lv):
                res = cls.jvp(_JvpContext(user), *logical(tangents))
                res = res if isinstance(res, tuple) else (res,)
                out = physical(res)
                return out[0] if len(out) == 1 else out

    _OnPhysical.__name__ = cls.__name__
    out = _OnPhysical.apply(*phys)
    outs = logical([out] if shape["single"] else list(out))
    return outs[0] if shape["single"] else tuple(outs)


def _own_members(cls):
    names = set()
    for k in cls.__mro__:
        if k is Function:
            break
        names |= set(vars(k))
    return names


class _VmapInfo:
    def __init__(self, batch_size, randomness):
        self.batch_size = batch_size
        self.randomness = randomness


def _apply_vmap_staticmethod(cls, vm, args, kwargs):
    """The Function's own batching rule: vmap(info, in_dims, *args) -> (outputs, out_dims), for
    the innermost level among the arguments."""
    lvl = max((a._lvl for a in args if type(a) is vm.BatchedTensor), key=lambda x: x.id)
    in_dims, unwrapped = [], []
    for a in args:
        p, batched = vm.unwrap(a, lvl)
        in_dims.append(0 if batched else None)
        unwrapped.append(p)
    out, out_dims = cls.vmap(_VmapInfo(lvl.size, lvl.randomness), tuple(in_dims), *unwrapped, **kwargs)
    single = not isinstance(out, tuple)
    outs = [out] if single else list(out)
    dims = [out_dims] * len(outs) if not isinstance(out_dims, (tuple, list)) else list(out_dims)
    if len(dims) != len(outs):
        raise RuntimeError(f"{cls.__name__}.vmap returned {len(outs)} outputs and {len(dims)} out_dims")
    res = [o if d is None or not isinstance(o, _C.Tensor) else vm.wrap(o.movedim(d, 0) if d else o, lvl)
           for o, d in zip(outs, dims)]
    return res[0] if single else tuple(res)
