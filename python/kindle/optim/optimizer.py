"""The Optimizer base class: parameter groups, per-parameter state, state_dict in torch's format,
step hooks. The update rules live in the subclasses (and their numerics in kindle._C._optim)."""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from itertools import chain

import kindle
from kindle import Tensor

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Marks a default that every parameter group must set (torch.optim.optimizer.required)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class _RemovableHandle:
    """Removes a hook from the OrderedDict it was registered in (torch.utils.hooks.RemovableHandle)."""

    _next_id = 0

    def __init__(self, hooks_dict):
        self._hooks = hooks_dict
        self.id = _RemovableHandle._next_id
        _RemovableHandle._next_id += 1

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_global_step_pre_hooks = OrderedDict()
_global_step_post_hooks = OrderedDict()


def _register(hooks_dict, hook, prepend=False):
    handle = _RemovableHandle(hooks_dict)
    hooks_dict[handle.id] = hook
    if prepend:
        hooks_dict.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook):
    """A hook(optimizer, args, kwargs) run before every optimizer's step."""
    return _register(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """A hook(optimizer, args, kwargs) run after every optimizer's step."""
    return _register(_global_step_post_hooks, hook)


def _to_scalar(x):
    """A hyperparameter as a Python number (a 1-element tensor is read once, here)."""
    return x.item() if isinstance(x, Tensor) else x


def _typename(obj):
    if isinstance(obj, Tensor):
        return "kindle.Tensor"
    t = type(obj)
    if t.__module__ == "builtins":
        return t.__qualname__
    return f"{t.__module__}.{t.__qualname__}"


def _use_grad(step):
    """Runs `step` with grad mode off (on only for differentiable=True), as torch does."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with kindle.set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            return step(self, *args, **kwargs)

    return wrapper


def _check_hyper(lr=None, eps=None, betas=None, weight_decay=None, momentum=None):
    """The range checks torch's constructors share, with torch's ValueError messages."""
    if lr is not None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
    if eps is not None and not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if betas is not None:
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if momentum is not None and not 0.0 <= momentum:
        raise ValueError(f"Invalid momentum value: {momentum}")
    if weight_decay is not None and not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _check_not_differentiable(differentiable, fused=None):
    if fused and differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported by kindle.optim: the "
                                  "updates run in fused kernels outside autograd")


def _check_capturable(params, what="params and state_steps"):
    """capturable=True keeps the step counts on the device for CUDA-graph capture; torch allows
    it only on accelerators and fails the step with this AssertionError for CPU parameters, so
    Kindle does too. (On an accelerator Kindle would run its ordinary update.)"""
    if any(p.is_cpu for p in params):
        raise AssertionError(f"If capturable=True, {what} must be on supported devices: "
                             "['cuda'].")


def _step_tensor(value=0.0):
    """state['step'] as torch keeps it: a 0-d float32 tensor on the CPU."""
    return kindle.tensor(float(value), dtype=kindle.float32)


def _split_by_dtype(params, *lists):
    """Yields (params, *lists) restricted to one dtype and device at a time: a fused kernel call
    takes one of each, while a torch parameter group may mix them. Empty lists stay empty."""
    # p.device builds a Python object (~1 us); CPU tensors are told apart by dtype alone.
    keys = [p.dtype if p.is_cpu else (p.dtype, str(p.device)) for p in params]
    if all(k == keys[0] for k in keys):
        yield (params, *lists)
        return
    buckets = {}
    for i, k in enumerate(keys):
        buckets.setdefault(k, []).append(i)
    for idx in buckets.values():
        yield ([params[i] for i in idx], *([seq[i] for i in idx] if seq else seq for seq in lists))


def _real_views(lists):
    """A complex parameter steps as its real view ([..., 2]), with its gradient and state, as torch
    steps it: every elementwise update rule then treats the two parts as two parameters."""
    def conv(x):
        if isinstance(x, list):
            return [conv(t) for t in x]
        return kindle.view_as_real(x) if isinstance(x, kindle.Tensor) and x.is_complex() else x
    return tuple(conv(seq) for seq in lists)


def _sparse_check(grad, name):
    if grad.is_sparse:
        raise RuntimeError(f"{name} does not support sparse gradients")


class Optimizer:
    """Base class of all optimizers (torch.optim.Optimizer).

    params: an iterable of Tensors, of (name, Tensor) pairs, or of dicts defining parameter
    groups; defaults: the hyperparameters a group gets unless it sets its own.
    """

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        self._patch_step_function()

        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # ----------------------------------------------------------------------------- pickling, repr
    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    # ----------------------------------------------------------------------------- step hooks
    @staticmethod
    def profile_hook_step(func):
        """Wraps a class's step: runs the pre/post hooks and marks the optimizer as stepped
        (the LR schedulers read that to warn about a scheduler step before the first one)."""

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self = args[0]
            for pre_hook in chain(_global_step_pre_hooks.values(),
                                  self._optimizer_step_pre_hooks.values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(f"{func} must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {result}.")
            out = func(*args, **kwargs)
            self._opt_called = True
            for post_hook in chain(self._optimizer_step_post_hooks.values(),
                                   _global_step_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out

        return wrapper

    def _patch_step_function(self):
        # Wrap the most derived class's step once (a subclass calling super().step() would
        # otherwise run the hooks twice).
        cls = self.__class__
        if not getattr(cls.step, "hooked", False):
            cls.step = self.profile_hook_step(cls.step)
            cls.step.hooked = True

    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None or (args, kwargs), run before step()."""
        return _register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None, run after step()."""
        return _register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        return _register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        return _register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        return _register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        return _register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ----------------------------------------------------------------------------- state_dict
    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]}: parameters
        are numbered in group order; the state tensors are the live ones, not copies."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, key):
        # state['step'] keeps its dtype; other floating state follows the parameter's dtype.
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict):
        """Loads a state_dict() of an optimizer over the same parameters (in the same order)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = _copy_groups(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, key)
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
                return type(value)(cast(param, v) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # ----------------------------------------------------------------------------- groups, grads
    def zero_grad(self, set_to_none=True):
        """Sets every parameter's grad to None (or, with set_to_none=False, zeroes it in place)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def step(self, closure=None):
        """Performs one optimization step; subclasses implement it."""
        raise NotImplementedError

    def add_param_group(self, param_group):
        """Adds a group of parameters (a dict with 'params' and optional hyperparameters)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see github.com/pytorch/pytorch/"
                          "issues/40967 for more information", stacklevel=3)

        param_set = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not param_set.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)


def _copy_groups(value):
    """A deep copy of saved param_groups (torch uses copy.deepcopy; tensors are cloned here)."""
    if isinstance(value, Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {k: _copy_groups(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_groups(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_copy_groups(v) for v in value)
    return value
