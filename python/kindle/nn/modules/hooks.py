"""Hook handles and the full backward hook machinery of nn.Module (torch.utils.hooks)."""
import warnings
import weakref

from ... import _C
from ...autograd.function import Function


class RemovableHandle:
    """Returned by every register_*_hook: .remove() unregisters the hook; also a context manager.

    It holds only weak references to the hook dicts, so a handle never keeps a module alive."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref = ()
        if extra_dict is not None:
            extras = extra_dict if isinstance(extra_dict, list) else [extra_dict]
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self):
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.remove()


class BackwardHookFunction(Function):
    """Identity on a group of tensors whose backward hands the group's gradients to `ctx.hook`.

    One node sits on the module's outputs (it sees grad_output) and one on its inputs (it sees
    grad_input), which is how torch's BackwardHookFunction brackets a module."""

    @staticmethod
    def forward(ctx, hook, materialize, *tensors):
        ctx.hook = hook
        ctx.set_materialize_grads(materialize)
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tensors  # the C++ side turns an input returned as an output into a view of it

    @staticmethod
    def backward(ctx, *grads):
        # torch's hooks sit on the autograd node: on the outputs' node they see the gradients as
        # they arrive (None for an output that no loss used), on the inputs' node the gradients
        # it computed (zeros for an input tensor that got none), hence materialize only there.
        return (None, None) + tuple(ctx.hook(grads))


class BackwardHook:
    """Runs a module's full backward pre-hooks when the gradients of its outputs are known and its
    full backward hooks when the gradients of its inputs are; either may replace the gradients."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_index = None
        self.n_outputs = 0
        self.output_index = None

    @staticmethod
    def _pack(index, values, size):
        res = [None] * size
        for i, v in zip(index, values):
            res[i] = v
        return tuple(res)

    def _wrap(self, args, on_grads, materialize):
        """Routes the tensors of `args` through one BackwardHookFunction node; returns (args, tensor indices),
        or (args, None) when nothing needs a gradient."""
        index = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        if not (_C.is_grad_enabled() and any(args[i].requires_grad for i in index)):
            return args, None
        wrapped = BackwardHookFunction.apply(on_grads, materialize, *(args[i] for i in index))
        out = list(args)
        for i, t in zip(index, wrapped):
            out[i] = t
        return tuple(out), index

    def _on_grad_inputs(self, grads):
        if self.grad_outputs is None:  # the gradient reached the inputs without passing the outputs
            return grads
        res = self._pack(self.input_index, grads, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(out)}, but "
                                   f"expected {len(res)}")
            res = tuple(out)
        self.grad_outputs = None
        return [res[i] for i in self.input_index]

    def _on_grad_outputs(self, grads):
        self.grad_outputs = self._pack(self.output_index, grads, self.n_outputs)
        for hook in self.user_pre_hooks:
            out = hook(self.module, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(self.grad_outputs):
                raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got {len(out)}, "
                                   f"but expected {len(self.grad_outputs)}")
            self.grad_outputs = tuple(out)
        local = self.grad_outputs
        if self.input_index is None:
            # No input needs a gradient: the hooks fire now, with grad_input all None.
            if self.user_hooks:
                warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                              "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/main/"
                              "generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more "
                              "details.", stacklevel=6)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.user_hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return [local[i] for i in self.output_index]

    def setup_input_hook(self, args):
        res, self.input_index = self._wrap(args, self._on_grad_inputs, True)
        self.n_inputs = len(args)
        return res

    def setup_output_hook(self, result):
        single = not isinstance(result, tuple)
        args = (result,) if single else result
        res, self.output_index = self._wrap(args, self._on_grad_outputs, False)
        self.n_outputs = len(args)
        return res[0] if single else res
