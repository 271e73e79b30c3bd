"""Grad modes: context managers that are also decorators (with or without parentheses, and on
generator functions). The mode is per thread."""
import functools
import inspect

from .. import _C


class _DecoratorContextManager:
    """Base: `with mode(...)`, `@mode(...)` and, for modes without arguments, bare `@mode`."""

    _args = ()

    def __new__(cls, *args, **kwargs):
        if cls._bare_decorator and len(args) == 1 and callable(args[0]) and not kwargs:
            return cls()(args[0])  # @no_grad without parentheses
        return super().__new__(cls)

    _bare_decorator = False

    def clone(self):
        return self.__class__(*self._args)

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with self.clone():
                    request = None
                    try:
                        request = next(gen)
                    except StopIteration as e:
                        return e.value
                while True:
                    try:
                        sent = yield request
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:
                        with self.clone():
                            try:
                                request = gen.throw(exc)
                            except StopIteration as e:
                                return e.value
                        continue
                    with self.clone():
                        try:
                            request = gen.send(sent)
                        except StopIteration as e:
                            return e.value

            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_DecoratorContextManager):
    """Disables gradient recording inside the block (or the decorated function)."""

    _bare_decorator = True

    def __init__(self, *args):
        pass

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)


class enable_grad(_DecoratorContextManager):
    """Enables gradient recording inside the block, e.g. within no_grad."""

    _bare_decorator = True

    def __init__(self, *args):
        pass

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

    def clone(self):
        prev = _C.is_grad_enabled()
        c = set_grad_enabled(self._args[0])
        _C._set_grad_enabled(prev)  # cloning for a decorator must not change the mode by itself
        c._prev = prev
        return c

    def __enter__(self):
        self._prev_enter = _C.is_grad_enabled()
        _C._set_grad_enabled(bool(self._args[0]))

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)

    def __call__(self, fn):
        _C._set_grad_enabled(self._prev)  # as a decorator, applying it must not change the mode
        return super().__call__(fn)


class inference_mode(_DecoratorContextManager):
    """Grad mode off, and tensors allocated inside are inference tensors (`is_inference()`):
    autograd refuses to save them for backward, and they cannot be modified in place or made to
    require grad outside inference mode. `inference_mode(False)` turns it off (and grad mode on)."""

    _bare_decorator = True

    def __init__(self, mode=True):
        self._args = (mode,)
        self.mode = bool(mode)

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        self._prev_inf = _C._is_inference_mode_enabled()
        _C._set_grad_enabled(not self.mode)
        _C._set_inference_mode_enabled(self.mode)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        _C._set_inference_mode_enabled(self._prev_inf)


def is_grad_enabled():
    return _C.is_grad_enabled()


def is_inference_mode_enabled():
    return _C._is_inference_mode_enabled()
