"""nn.Module: the base class of every layer, with torch's registration, state-dict, hook and
conversion semantics."""
import copyreg
import functools
import itertools
import warnings
import weakref
from collections import OrderedDict, namedtuple

from ... import _C
from ...autograd.grad_mode import no_grad
from ..parameter import Buffer, Parameter
from .hooks import BackwardHook, RemovableHandle


def _reduce_builtin(f):
    """kindle's built-in ops (kindle.tanh, ...) are nanobind functions: like Python's builtins,
    copy and deepcopy give them back as they are and pickle stores them by name, so a module
    holding one (TransformerEncoderLayer(activation=kindle.tanh)) can be cloned and saved."""
    return getattr(f, "__qualname__", f.__name__)


copyreg.pickle(type(_C.tanh), _reduce_builtin)

__all__ = ["Module"]  # (the register_module_* functions are reached as torch's are: nn.modules.module.X)

# Hooks for every module (torch.nn.modules.module.register_module_*): they run before each
# module's own hooks of the same kind.
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_with_kwargs = OrderedDict()
_global_forward_hooks_always_called = OrderedDict()
_global_backward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()
_global_call_hooks = OrderedDict()  # every forward/backward hook above, by id: one test per module call
# Whether _global_backward_hooks are full (register_module_full_backward_hook) or the legacy kind
# (register_module_backward_hook): None until one is registered; the two cannot be mixed.
_global_is_full_backward_hook = None
_global_buffer_registration_hooks = OrderedDict()
_global_module_registration_hooks = OrderedDict()
_global_parameter_registration_hooks = OrderedDict()


def register_module_forward_pre_hook(hook):
    """hook(module, args) -> None or new args, before every module's forward."""
    handle = RemovableHandle(_global_forward_pre_hooks, extra_dict=_global_call_hooks)
    _global_forward_pre_hooks[handle.id] = _global_call_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """hook(module, args, output) (or (module, args, kwargs, output)) -> None or a new output,
    after every module's forward; with always_call, also when forward raised."""
    handle = RemovableHandle(_global_forward_hooks, extra_dict=[_global_forward_hooks_with_kwargs,
                                                                _global_forward_hooks_always_called,
                                                                _global_call_hooks])
    _global_forward_hooks[handle.id] = _global_call_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook):
    handle = RemovableHandle(_global_backward_pre_hooks, extra_dict=_global_call_hooks)
    _global_backward_pre_hooks[handle.id] = _global_call_hooks[handle.id] = hook
    return handle


def _register_global_backward_hook(hook, full):
    # The global hooks are all full or all legacy, as torch's
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                           "Please use only one of them.")
    _global_is_full_backward_hook = full
    handle = RemovableHandle(_global_backward_hooks, extra_dict=_global_call_hooks)
    _global_backward_hooks[handle.id] = _global_call_hooks[handle.id] = hook
    return handle


def register_module_full_backward_hook(hook):
    return _register_global_backward_hook(hook, True)


def register_module_backward_hook(hook):
    """The deprecated global form of Module.register_backward_hook (the legacy, non-full hook on
    the autograd node that made each module's output)."""
    return _register_global_backward_hook(hook, False)


class _WrappedHook:
    """A hook bound to its module through a weak reference (torch's _WrappedHook): a hook stored on
    the module or on an autograd node does not keep the module alive."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = False
        if module is not None:
            self.module = weakref.ref(module)
            self.with_module = True

    def __call__(self, *args, **kwargs):
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self):
        result = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            result["module"] = self.module()
        return result

    def __setstate__(self, state):
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])


def register_module_buffer_registration_hook(hook):
    """hook(module, name, buffer) -> None or a new buffer, on every register_buffer."""
    handle = RemovableHandle(_global_buffer_registration_hooks)
    _global_buffer_registration_hooks[handle.id] = hook
    return handle


def register_module_module_registration_hook(hook):
    """hook(module, name, submodule) -> None or a new submodule, on every submodule registration."""
    handle = RemovableHandle(_global_module_registration_hooks)
    _global_module_registration_hooks[handle.id] = hook
    return handle


def register_module_parameter_registration_hook(hook):
    """hook(module, name, param) -> None or a new parameter, on every register_parameter."""
    handle = RemovableHandle(_global_parameter_registration_hooks)
    _global_parameter_registration_hooks[handle.id] = hook
    return handle


class _Children(dict):
    """A module's `_modules`. Every change to any module's children advances `structure_epoch`,
    which is what kindle.compile's traced graphs check before they run (a graph that called the
    module a submodule was replaced by would be silently wrong)."""

    __slots__ = ()

    def __setitem__(self, key, value):
        _epoch[0] += 1
        super().__setitem__(key, value)

    def __delitem__(self, key):
        _epoch[0] += 1
        super().__delitem__(key)

    def pop(self, *args):
        _epoch[0] += 1
        return super().pop(*args)

    def popitem(self):
        _epoch[0] += 1
        return super().popitem()

    def clear(self):
        _epoch[0] += 1
        super().clear()

    def update(self, *args, **kwargs):
        _epoch[0] += 1
        super().update(*args, **kwargs)

    def setdefault(self, key, default=None):
        _epoch[0] += 1
        return super().setdefault(key, default)

    def __ior__(self, other):
        self.update(other)
        return self

    def __reduce_ex__(self, protocol):
        # Pickled (and deep-copied) as the plain dict torch writes; Module.__setstate__ wraps it again.
        return dict, (dict(self),)


_epoch = [0]


def structure_epoch():
    """A number that changes whenever a child module is added, replaced or removed anywhere."""
    return _epoch[0]


def _module_registered(parent, name, module):
    for hook in _global_module_registration_hooks.values():
        out = hook(parent, name, module)
        if out is not None:
            module = out
    return module


def _merged(global_hooks, local_hooks):
    if not global_hooks:
        return local_hooks
    if not local_hooks:
        return global_hooks
    merged = OrderedDict(global_hooks)
    merged.update(local_hooks)
    return merged

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


def _device_arg(device):
    """A device argument as the bindings take it (None stays None; an int is a CUDA index)."""
    return None if device is None else f"cuda:{device}" if isinstance(device, int) else str(device)


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    return first + "\n" + "\n".join(num_spaces * " " + line for line in s)


def _typename(obj):
    if isinstance(obj, _C.Tensor):
        return type(obj).__module__ + "." + type(obj).__qualname__
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in (None, "builtins") else module + "." + name


def _forward_unimplemented(self, *input):  # noqa: A002
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module:
    """Base class for all neural network modules; subclasses define `forward` and assign their
    parameters, buffers and submodules as attributes."""

    dump_patches = False
    _version = 1
    training: bool
    forward = _forward_unimplemented
    # True once a full backward hook is registered, False once a legacy one is (they cannot mix)
    _is_full_backward_hook = None
    # set by Module.compile(): calls go through it
    _compiled_call_impl = None

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments {args} {kwargs}; "
                            f"Module.__init__() takes none")
        # object.__setattr__ skips Module.__setattr__'s checks (the dicts do not exist yet).
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", {})
        setattr_("_buffers", {})
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_backward_pre_hooks", OrderedDict())
        setattr_("_backward_hooks", OrderedDict())
        setattr_("_forward_hooks", OrderedDict())
        setattr_("_forward_hooks_with_kwargs", OrderedDict())
        setattr_("_forward_hooks_always_called", OrderedDict())
        setattr_("_forward_pre_hooks", OrderedDict())
        setattr_("_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_("_state_dict_hooks", OrderedDict())
        setattr_("_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_post_hooks", OrderedDict())
        setattr_("_modules", _Children())

    # ---- registration

    def register_buffer(self, name, tensor, persistent=True):
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' (torch Tensor or None "
                            f"required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = tensor.detach()  # a registered buffer is a plain tensor, as in torch
        for hook in _global_buffer_registration_hooks.values():
            out = hook(self, name, tensor)
            if out is not None:
                tensor = out
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' (torch.nn.Parameter "
                            f"or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, compute the "
                             f"value in the forward() method.")
        for hook in _global_parameter_registration_hooks.values():
            out = hook(self, name, param)
            if out is not None:
                param = out
        self._parameters[name] = param

    def add_module(self, name, module):
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = _module_registered(self, name, module)

    def register_module(self, name, module):
        self.add_module(name, module)

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError("`module` is not an nn.Module, found " + str(type(module)))
        mod = self.get_submodule(".".join(atoms[:-1])) if len(atoms) > 1 else self
        if strict and not hasattr(mod, atoms[-1]):
            raise AttributeError(mod._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(mod, atoms[-1]) and not isinstance(getattr(mod, atoms[-1]), Module):
            raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(mod, atoms[-1], module)

    def _get_owner(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        return mod, name

    def get_parameter(self, target):
        mod, name = self._get_owner(target)
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        mod, name = self._get_owner(target)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    def get_extra_state(self):
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    # ---- attribute protocol

    def __getattr__(self, name):
        # Only reached when normal lookup fails: parameters, buffers and submodules live in dicts.
        d = self.__dict__
        if "_parameters" in d:
            if name in d["_parameters"]:
                return d["_parameters"][name]
            if name in d["_buffers"]:
                return d["_buffers"][name]
            if name in d["_modules"]:
                return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' (torch.nn.Parameter or "
                                f"None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = _module_registered(self, name, value)
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                    f"(torch.nn.Module or None expected)")
                modules[name] = _module_registered(self, name, value)
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, _C.Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' (torch.nn.Buffer, "
                                        f"torch.Tensor or None expected)")
                    persistent = value.persistent if isinstance(value, Buffer) \
                        else name not in self._non_persistent_buffers_set
                    self.register_buffer(name, value, persistent)
                else:
                    super().__setattr__(name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self):
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters) + list(self._modules)
                + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    def __getstate__(self):
        state = self.__dict__
        if type(state.get("_modules")) is _Children or "_compiled_call_impl" in state:
            state = dict(state)
            state.pop("_compiled_call_impl", None)  # a compiled forward is not saved (nor deep-copied)
            if type(state.get("_modules")) is _Children:  # written as the plain dict torch writes
                state["_modules"] = dict(state["_modules"])
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if type(self.__dict__.get("_modules")) is dict:  # pickled before _Children, or by torch
            self.__dict__["_modules"] = _Children(self.__dict__["_modules"])
            _epoch[0] += 1

    # ---- calling

    def __call__(self, *args, **kwargs):
        # The common case: no hooks, straight to forward (one dict lookup per hook kind).
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or self._backward_pre_hooks
                or _global_call_hooks or self._compiled_call_impl is not None):
            return self.forward(*args, **kwargs)
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    _wrapped_call_impl = __call__

    def _call_impl(self, *args, **kwargs):
        """A call as __call__ makes it, without the compiled forward (what Module.compile compiles)."""
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or self._backward_pre_hooks
                or _global_call_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def compile(self, *args, **kwargs):
        """Compile this module's forward with kindle.compile(*args, **kwargs), in place: later calls
        run the compiled form (torch.nn.Module.compile). Returns None."""
        from ... import _compile
        object.__setattr__(self, "_compiled_call_impl", _compile.compile(self._call_impl, *args, **kwargs))

    def _call_with_hooks(self, args, kwargs):
        called_always = set()
        result = None
        forward_hooks = _merged(_global_forward_hooks, self._forward_hooks)
        hooks_with_kwargs = _merged(_global_forward_hooks_with_kwargs, self._forward_hooks_with_kwargs)
        always_called = _merged(_global_forward_hooks_always_called, self._forward_hooks_always_called)
        backward_hooks, non_full_backward_hooks = self._get_backward_hooks()
        backward_pre_hooks = _merged(_global_backward_pre_hooks, self._backward_pre_hooks)
        try:
            for hook in _global_forward_pre_hooks.values():
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
            for hook_id, hook in self._forward_pre_hooks.items():
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    r = hook(self, args, kwargs)
                    if r is not None:
                        if isinstance(r, tuple) and len(r) == 2:
                            args, kwargs = r
                        else:
                            raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {r}.")
                else:
                    r = hook(self, args)
                    if r is not None:
                        args = r if isinstance(r, tuple) else (r,)

            bw_hook = None
            if backward_hooks or backward_pre_hooks:
                bw_hook = BackwardHook(self, backward_hooks, list(backward_pre_hooks.values()))
                args = bw_hook.setup_input_hook(args)

            result = self.forward(*args, **kwargs)
            for hook_id, hook in forward_hooks.items():
                if hook_id in always_called:
                    called_always.add(hook_id)
                if hook_id in hooks_with_kwargs:
                    r = hook(self, args, kwargs, result)
                else:
                    r = hook(self, args, result)
                if r is not None:
                    result = r

            if bw_hook is not None:
                if not isinstance(result, (_C.Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                                  f"Tensors but received {type(result)}", stacklevel=2)
                else:
                    result = bw_hook.setup_output_hook(result)

            if non_full_backward_hooks:
                # the legacy hooks: on the autograd node that made the (first) output tensor
                var = result
                while not isinstance(var, _C.Tensor):
                    if isinstance(var, dict):
                        var = next(v for v in var.values() if isinstance(v, _C.Tensor))
                    else:
                        var = var[0]
                grad_fn = var.grad_fn
                if grad_fn is not None:
                    for hook in non_full_backward_hooks:
                        grad_fn.register_hook(_WrappedHook(hook, self))
                    self._maybe_warn_non_full_backward_hook(args, result, grad_fn)
            return result
        except Exception:
            # always_call forward hooks run even when forward raised; their own errors only warn.
            for hook_id, hook in forward_hooks.items():
                if hook_id in always_called and hook_id not in called_always:
                    try:
                        if hook_id in hooks_with_kwargs:
                            r = hook(self, args, kwargs, result)
                        else:
                            r = hook(self, args, result)
                        if r is not None:
                            result = r
                    except Exception as e:
                        warnings.warn("module forward hook with ``always_call=True`` raised an exception that was "
                                      f"silenced as another error was raised in forward: {e}", stacklevel=2)
            raise

    # ---- hooks

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        handle = RemovableHandle(self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs,
                                                                  self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook):
        """The deprecated (non-full) backward hook: hook(module, grad_input, grad_output) runs as a hook
        of the autograd node that produced the module's (first) output, so grad_input are that
        node's input gradients, not necessarily the module's. Use register_full_backward_hook."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = False
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def _get_backward_hooks(self):
        """(full backward hooks, legacy backward hooks) for a call: the global ones first."""
        full, non_full = [], []
        if _global_backward_hooks:
            (full if _global_is_full_backward_hook is not False else non_full).extend(_global_backward_hooks.values())
        if self._backward_hooks:
            (full if self._is_full_backward_hook is not False else non_full).extend(self._backward_hooks.values())
        return full, non_full

    def _maybe_warn_non_full_backward_hook(self, inputs, result, grad_fn):
        """torch's warnings for the cases where a legacy backward hook misses some gradients."""
        if not isinstance(result, _C.Tensor):
            if not (isinstance(result, tuple) and all(isinstance(r, _C.Tensor) for r in result)):
                warnings.warn("Using non-full backward hooks on a Module that does not return a single Tensor or a "
                              "tuple of Tensors is deprecated and will be removed in future versions. This hook will "
                              "be missing some of the grad_output. Please use register_full_backward_hook to get the "
                              "documented behavior.", FutureWarning, stacklevel=2)
                return
        else:
            result = (result,)
        if not isinstance(inputs, _C.Tensor):
            if not (isinstance(inputs, tuple) and all(isinstance(i, _C.Tensor) for i in inputs)):
                warnings.warn("Using non-full backward hooks on a Module that does not take as input a single Tensor "
                              "or a tuple of Tensors is deprecated and will be removed in future versions. This hook "
                              "will be missing some of the grad_input. Please use register_full_backward_hook to get "
                              "the documented behavior.", FutureWarning, stacklevel=2)
                return
        else:
            inputs = (inputs,)
        out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
        if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
            warnings.warn("Using a non-full backward hook when outputs are nested in python data structure is "
                          "deprecated and will be removed in future versions. This hook will be missing some "
                          "grad_output.", FutureWarning, stacklevel=2)
        elif len(out_grad_fn) > 1:
            warnings.warn("Using a non-full backward hook when outputs are generated by different autograd Nodes is "
                          "deprecated and will be removed in future versions. This hook will be missing some "
                          "grad_output. Please use register_full_backward_hook to get the documented behavior.",
                          FutureWarning, stacklevel=2)
        else:
            inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
            next_functions = {n[0] for n in grad_fn.next_functions}
            if inputs_grad_fn != next_functions:
                warnings.warn("Using a non-full backward hook when the forward contains multiple autograd Nodes is "
                              "deprecated and will be removed in future versions. This hook will be missing some "
                              "grad_input. Please use register_full_backward_hook to get the documented behavior.",
                              FutureWarning, stacklevel=2)

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) runs before this module's state_dict() collects its entries."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def _register_state_dict_hook(self, hook):
        """The private form of register_state_dict_post_hook that libraries use: hook(module, state_dict,
        prefix, local_metadata) may also return a new state_dict, which state_dict() returns when
        this module is the one it was called on."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was previously "
                               "registered via register_state_dict_post_hook")
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) runs after; it must return None."""
        hook._from_public_api = True  # (as torch marks it: its return value is not a new state_dict)
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """The private form of register_load_state_dict_pre_hook: without with_module the hook is
        called without the module, hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = _WrappedHook(hook, self if with_module else None)
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) may edit the key lists in place; it must return None."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # ---- iteration

    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()  # ids: a tensor's == is elementwise
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self, remove_duplicate=True):
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            submodule_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # ---- state dict

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if args:  # the positional form (destination, prefix, keep_vars) torch still accepts
            warnings.warn("Positional args are being deprecated, use kwargs instead.", FutureWarning, stacklevel=2)
            destination = args[0]
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            hook_result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if hook_result is not None:  # (only the module state_dict() was called on returns it)
                    destination = hook_result
            elif hook_result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, _C.Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(input_param)}")
                continue
            if param.dim() == 0 and input_param.dim() == 1 and input_param.shape[0] == 1:
                input_param = input_param[0]  # 1-element checkpoints of 0-d tensors, as torch accepts
            if input_param.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            if not isinstance(input_param, Parameter):
                                input_param = Parameter(input_param, requires_grad=param.requires_grad)
                            else:
                                input_param.requires_grad_(param.requires_grad)
                        setattr(self, name, input_param)
                    else:
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{param.size()} and whose dimensions in the checkpoint are {input_param.size()}, "
                                  f"an exception occurred : {ex.args}.")

        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)

        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # _load_from_state_dict may modify its copy

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)},
                         child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be modified, "
                                         "it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ---- modes and conversion

    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            g = p.grad
            if g is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def share_memory(self):
        """Moves every parameter and buffer into shared memory (for worker processes)."""
        return self._apply(lambda t: t.share_memory_())

    def _apply(self, fn, recurse=True):
        """Replaces every parameter's data (the Parameter object stays, so optimizers holding it keep
        working), its grad, and every buffer with fn(tensor)."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with no_grad():
                param_applied = fn(param)
            param.data = param_applied
            g = param.grad
            if g is not None:
                with no_grad():
                    param.grad = fn(g)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _float_apply(self, dtype):
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self):
        return self._float_apply(_C.float32)

    def double(self):
        return self._float_apply(_C.float64)

    def half(self):
        return self._float_apply(_C.float16)

    def bfloat16(self):
        return self._float_apply(_C.bfloat16)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        target = "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device)
        return self._apply(lambda t: t.cuda(target))

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def to_empty(self, *, device, recurse=True):
        """Parameters and buffers moved to `device` without their values (uninitialised memory):
        how a model built on the meta device gets real storage before its weights are loaded."""
        device = _device_arg(device)
        return self._apply(lambda t: _C.empty_like(t, device=device), recurse=recurse)

    def to(self, *args, **kwargs):
        """to(device=None, dtype=None, non_blocking=False), to(dtype), to(tensor): floating-point
        parameters and buffers take the dtype; integer ones keep theirs."""
        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        non_blocking = bool(kwargs.pop("non_blocking", False))
        fmt = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() received an invalid combination of arguments: unexpected {sorted(kwargs)}")
        for a in args:
            if isinstance(a, _C.Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, bool):
                continue  # non_blocking
            elif a is not None:
                device = a
        if dtype is not None:
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                f"dtype={dtype}")
            if dtype.is_complex:
                warnings.warn("Complex modules are a new feature under active development whose design may change, "
                              "and some modules might not work as expected when using complex tensors as "
                              "parameters or buffers. Please file an issue at "
                              "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml if a complex "
                              "module does not work as expected.")
        device = _device_arg(device)

        def convert(t):
            if device is not None:
                t = t.to(device, non_blocking=non_blocking)
            if dtype is not None and (t.is_floating_point() or t.is_complex()) and t.dtype != dtype:
                t = t.to(dtype)
            # torch: memory_format applies to the 4-d (5-d for channels_last_3d) parameters and buffers
            if fmt is not None and t.dim() == {"channels_last": 4, "channels_last_3d": 5}.get(repr(fmt)[6:], -1):
                t = t.contiguous(memory_format=fmt)
            return t

        return self._apply(convert)

    # ---- printing

    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            child_lines.append("(" + key + "): " + _addindent(repr(module), 2))
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"
