"""kindle.overrides: PyTorch's __torch_function__ protocol.

A Tensor subclass, or any object whose type defines ``__torch_function__``, takes over the Kindle
functions and Tensor methods it is passed to: the bindings (python/torch_function.h) see it
among the call's arguments and hand the call to ``_dispatch`` here, which tries the active
TorchFunctionMode first and then each overriding type in PyTorch's order (subclasses before
their parents, otherwise left to right) until one does not return NotImplemented. A program that
defines no subclass, passes no such object and enters no mode pays one load per call.

Tensor's own ``__torch_function__`` (the default that subclasses inherit) runs the function
with subclass dispatch disabled and returns its tensors as instances of the subclass, as torch's
does; ``nn.Parameter`` and ``nn.Buffer`` opt out with ``_disabled_torch_function_impl``.
"""
import contextlib
import functools

from . import _C

__all__ = [
    "get_ignored_functions", "get_overridable_functions", "get_testing_overrides", "handle_torch_function",
    "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic", "is_tensor_like",
    "is_tensor_method_or_property", "resolve_name", "wrap_torch_function", "TorchFunctionMode",
    "enable_reentrant_dispatch",
]


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """__torch_function__ of the Tensor subclasses that opt out (nn.Parameter): the plain call."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


_C._set_disabled_torch_function_impl(_disabled_torch_function_impl)
_C._disabled_torch_function_impl = _disabled_torch_function_impl


# Mirrors of the bindings' switches (kindle._C keeps the ones its bindings read; only these
# context managers change them).
_subclass_disabled = [0]


class DisableTorchFunctionSubclass:
    """Within it, subclasses and objects with __torch_function__ run as the plain tensors they
    wrap (modes still run)."""

    def __enter__(self):
        _C._torch_function_disable(True, 1)
        _subclass_disabled[0] += 1
        return self

    def __exit__(self, *exc):
        _C._torch_function_disable(True, -1)
        _subclass_disabled[0] -= 1
        return False


class DisableTorchFunction:
    """Within it, neither modes nor subclasses take over calls."""

    def __enter__(self):
        _C._torch_function_disable(False, 1)
        return self

    def __exit__(self, *exc):
        _C._torch_function_disable(False, -1)
        return False


def _tf_of_type(t):
    """The __torch_function__ that overrides for instances of t, or None (plain tensors,
    opted-out subclasses and types without one)."""
    if t is _C.Tensor:
        return None
    impl = getattr(t, "__torch_function__", None)
    return None if impl is None or impl is _disabled_torch_function_impl else impl


def _overloaded_args(values):
    """The overriding arguments among values (and in the lists and tuples among them), one per type,
    subclasses before their parents, otherwise in order of appearance (PyTorch's order); none
    while subclass dispatch is off (inside Tensor's default __torch_function__)."""
    if _subclass_disabled[0] or not _C._is_torch_function_enabled():
        return []
    found, seen = [], set()

    def visit(v, depth):
        if isinstance(v, (list, tuple)) and depth == 0:
            for item in v:
                visit(item, 1)
            return
        t = type(v)
        if t in seen or _tf_of_type(t) is None:
            return
        seen.add(t)
        at = len(found)
        for i, other in enumerate(found):
            if issubclass(t, type(other)):
                at = i
                break
        found.insert(at, v)

    for v in values:
        visit(v, 0)
    return found


def _call_tf(obj, func, types, args, kwargs):
    tf = getattr(obj, "__torch_function__")  # a classmethod binds to the type, a method to obj
    return tf(func, types, args, kwargs)


def _dispatch(func, args, kwargs):
    """Called by the bindings for a call that must go to __torch_function__."""
    return handle_torch_function(func, list(args) + list(kwargs.values()), *args, **kwargs)


def has_torch_function(relevant_args):
    """Whether any of relevant_args overrides __torch_function__ (or a mode is active)."""
    if not _C._is_torch_function_enabled():
        return False
    return bool(_mode_stack) or bool(_overloaded_args(relevant_args))


def has_torch_function_unary(obj):
    return has_torch_function((obj,))


def has_torch_function_variadic(*args):
    return has_torch_function(args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """For a Python function that takes tensors: hand the call to the overrides among relevant_args
    (and the active mode), as torch.overrides.handle_torch_function."""
    overloaded = _overloaded_args(relevant_args)
    types = tuple(type(a) for a in overloaded)
    mode = None
    if _mode_stack and _C._is_torch_function_enabled():
        mode = _mode_stack[-1]
        with _pop_mode_temporarily():
            ret = mode.__torch_function__(public_api, types, args, kwargs)
        if ret is not NotImplemented:
            return ret
    for a in overloaded:
        ret = _call_tf(a, public_api, types, args, kwargs)
        if ret is not NotImplemented:
            return ret
    raise _all_declined(public_api, overloaded, mode)


def _all_declined(func, overloaded, mode=None):
    lines = f"  - mode object {mode!r}\n" if mode is not None else ""
    lines += "".join(f"  - tensor subclass {type(a)}\n" if isinstance(a, _C.Tensor) else f"  - {type(a)}\n"
                     for a in overloaded)
    return TypeError(f"Multiple dispatch failed for '{resolve_name(func) or func}'; all __torch_function__ handlers "
                     f"returned NotImplemented:\n\n{lines}")


def wrap_torch_function(dispatcher):
    """Decorates a Python function so that it takes part in __torch_function__: dispatcher(*args,
    **kwargs) returns the arguments to look at."""
    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


def is_tensor_like(inp):
    """A Tensor, or an object that defines __torch_function__ (a duck-typed tensor)."""
    return type(inp) is _C.Tensor or hasattr(inp, "__torch_function__")


def is_tensor_method_or_property(func):
    return getattr(func, "__qualname__", "").startswith("Tensor.") or (
        getattr(func, "__objclass__", None) is _C.Tensor) or (
        hasattr(_C.Tensor, getattr(func, "__name__", "")) and
        getattr(_C.Tensor, func.__name__, None) is func)


def resolve_name(f):
    """The public name of a function handed to __torch_function__ (kindle.add, Tensor.add)."""
    name = getattr(f, "__name__", None)
    if name is None:
        return None
    if is_tensor_method_or_property(f):
        return f"torch.Tensor.{name}"
    module = getattr(f, "__module__", None) or "torch"
    module = module.replace("kindle._C._nn", "torch.nn.functional").replace("kindle._C", "torch").replace(
        "kindle", "torch")
    return f"{module}.{name}"


def _public_functions():
    import kindle
    import kindle.nn.functional as F
    out = {}
    for ns, name in ((kindle, "torch"), (F, "torch.nn.functional")):
        out[ns] = [getattr(ns, n) for n in dir(ns) if not n.startswith("_") and callable(getattr(ns, n, None))
                   and not isinstance(getattr(ns, n), type)]
    out[_C.Tensor] = [getattr(_C.Tensor, n) for n in dir(_C.Tensor)
                      if not n.startswith("_") and callable(getattr(_C.Tensor, n, None))]
    return out


def get_overridable_functions():
    """The namespaces' functions that take part in __torch_function__, by namespace."""
    ignored = get_ignored_functions()
    return {ns: [f for f in fs if f not in ignored] for ns, fs in _public_functions().items()}


def get_ignored_functions():
    """Public functions that take no tensor and so never dispatch (factories from sizes, settings)."""
    import kindle
    names = ("manual_seed", "seed", "initial_seed", "set_num_threads", "get_num_threads", "set_default_dtype",
             "get_default_dtype", "set_printoptions", "is_grad_enabled", "set_grad_enabled", "no_grad",
             "enable_grad", "inference_mode", "use_deterministic_algorithms", "compile", "save", "load")
    return {getattr(kindle, n) for n in names if hasattr(kindle, n)}


def get_testing_overrides():
    """A dummy override for each overridable function (it returns -1), keyed by function."""
    return {f: (lambda *args, **kwargs: -1) for fs in get_overridable_functions().values() for f in fs}


def get_default_nowrap_functions():
    return set()


# ---- modes
_mode_stack = []


class TorchFunctionMode:
    """A context manager whose __torch_function__ sees every Kindle call made inside it (factories
    included); inside its own __torch_function__ the mode is off, so calling func runs normally."""

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError  # abstract, as torch's: a mode defines its own

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _pop_mode()
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs)


def _push_mode(mode):
    _mode_stack.append(mode)
    _C._torch_function_mode_depth(1)


def _pop_mode():
    if not _mode_stack:
        raise RuntimeError("Trying to pop from an empty mode stack")
    _C._torch_function_mode_depth(-1)
    return _mode_stack.pop()


@contextlib.contextmanager
def _pop_mode_temporarily():
    mode = _pop_mode()
    try:
        yield mode
    finally:
        _push_mode(mode)


def _get_current_function_mode():
    return _mode_stack[-1] if _mode_stack else None


def _get_current_function_mode_stack():
    return list(_mode_stack)


def _len_torch_function_stack():
    return len(_mode_stack)


@contextlib.contextmanager
def enable_reentrant_dispatch():
    yield


# ---- Tensor's default __torch_function__ and the subclass hook
def _convert(ret, cls):
    if cls is _C.Tensor:
        return ret
    if isinstance(ret, _C.Tensor) and not isinstance(ret, cls):
        return ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        if hasattr(ret, "_fields"):  # a named tuple (max, sort, ...)
            return type(ret)(*items)
        return type(ret)(items)
    return ret


def _tensor_torch_function(cls, func, types, args=(), kwargs=None):
    """Tensor's __torch_function__: the call with subclass dispatch off, tensors returned as cls."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        return _convert(ret, cls)


def _tensor_init_subclass(cls, **kwargs):
    # a subclass that overrides (its own __torch_function__ or the default) makes the bindings scan;
    # one whose instances live only inside a scope (_scoped_torch_function) opens and closes it
    if _tf_of_type(cls) is not None and not cls.__dict__.get("_scoped_torch_function", False):
        _C._torch_function_hint(True)


_C.Tensor.__torch_function__ = classmethod(_tensor_torch_function)
_C.Tensor.__init_subclass__ = classmethod(_tensor_init_subclass)
_C.DisableTorchFunctionSubclass = DisableTorchFunctionSubclass
_C.DisableTorchFunction = DisableTorchFunction
