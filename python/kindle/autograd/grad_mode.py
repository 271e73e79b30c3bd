"""Grad modes: context managers that are also decorators. The mode is per thread."""
import functools

from .. import _C


class _DecoratorContextManager:
    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)

        return wrapper

    _args = ()


class no_grad(_DecoratorContextManager):
    """Disables gradient recording inside the block (or the decorated function)."""

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)


class enable_grad(_DecoratorContextManager):
    """Enables gradient recording inside the block, e.g. within no_grad."""

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)


class set_grad_enabled(_DecoratorContextManager):
    """set_grad_enabled(mode): sets the mode now (as a function) or for a block (as a context)."""

    def __init__(self, mode):
        self._args = (mode,)
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(bool(mode))

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)

    def __call__(self, fn):
        _C._set_grad_enabled(self._prev)  # as a decorator, applying it must not change the mode
        return super().__call__(fn)


_inference = __import__("threading").local()


class inference_mode(_DecoratorContextManager):
    """Like no_grad, for code that never needs gradients (Kindle treats it as no_grad)."""

    def __init__(self, mode=True):
        self._args = (mode,)
        self.mode = mode

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        self._prev_inf = getattr(_inference, "on", False)
        if self.mode:
            _C._set_grad_enabled(False)
            _inference.on = True

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        _inference.on = self._prev_inf


def is_grad_enabled():
    return _C.is_grad_enabled()


def is_inference_mode_enabled():
    return getattr(_inference, "on", False)
