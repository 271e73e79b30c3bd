"""torch.amp's autocast: the per-thread autocast state and the autocast context manager.

On the CPU the state drives Kindle's autocast (kindle/autocast.h): in an enabled region, the ops
of PyTorch's lower-precision list (matmul, linear, convolutions, attention, ...) run in the
autocast dtype, those of its float32 list (losses, reductions such as prod, linalg, fft) in
float32, cat and stack in their inputs' widest type; casts of weights are cached for the region.
The state behaves as PyTorch's (is_autocast_enabled, get_autocast_dtype, nesting, custom_fwd/
custom_bwd see it). CUDA autocast disables itself (no GPU), as on PyTorch's CPU build."""
import collections.abc
import functools
import threading
import warnings

from .. import _C

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

# Device types torch's device strings accept, and those autocast knows (with torch's default
# autocast dtype for each).
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
                 "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_DEFAULT_DTYPES = {"cpu": _C.bfloat16, "cuda": _C.float16, "mps": _C.float16, "xpu": _C.float16,
                   "hpu": _C.bfloat16, "xla": _C.bfloat16, "ipu": _C.float16, "mtia": _C.float16,
                   "maia": _C.bfloat16}
_SUPPORTED_DTYPES = (_C.bfloat16, _C.float16)


class _State(threading.local):
    # Autocast state is per thread, as in PyTorch.
    def __init__(self):
        self.enabled = dict.fromkeys(_DEFAULT_DTYPES, False)
        self.dtype = dict(_DEFAULT_DTYPES)
        self.cache_enabled = True
        self.nesting = 0


_state = _State()


def _check_device(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    kind = device_type.split(":", 1)[0]
    if kind not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: "
                           f"{device_type}")
    if kind not in _DEFAULT_DTYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return kind


def is_autocast_available(device_type):
    """Whether autocast knows `device_type` (True for 'cuda' even without a GPU, as in torch)."""
    return isinstance(device_type, str) and device_type in _DEFAULT_DTYPES


def is_autocast_enabled(device_type=None):
    """is_autocast_enabled() asks about CUDA (torch's legacy form); pass 'cpu' for the CPU."""
    return _state.enabled[_check_device("cuda" if device_type is None else device_type)]


def _sync_cpu():
    # the C++ state the op bindings read (per thread, as this one)
    dtype = _state.dtype["cpu"]
    supported = dtype in _SUPPORTED_DTYPES
    if supported:
        _C._autocast_set_dtype(dtype)
    _C._autocast_set_enabled(bool(_state.enabled["cpu"]) and supported)
    _C._autocast_set_cache_enabled(bool(_state.cache_enabled))


def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:  # torch's legacy one-argument form sets CUDA's state
        device_type, enabled = "cuda", device_type
    _state.enabled[_check_device(device_type)] = bool(enabled)
    _sync_cpu()


def get_autocast_dtype(device_type):
    return _state.dtype[_check_device(device_type)]


def set_autocast_dtype(device_type, dtype):
    if not isinstance(dtype, _C.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    device = _check_device(device_type)
    _state.dtype[device] = dtype
    _sync_cpu()


def is_autocast_cache_enabled():
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled):
    _state.cache_enabled = bool(enabled)
    _C._autocast_set_cache_enabled(bool(enabled))


def autocast_increment_nesting():
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting():
    _state.nesting -= 1
    return _state.nesting


def clear_autocast_cache():
    """Drops the casts of weights cached in this thread's autocast regions."""
    _C._autocast_clear_cache()


# The deprecated per-device spellings torch still has.
def is_autocast_cpu_enabled():
    return _state.enabled["cpu"]


def set_autocast_cpu_enabled(enabled):
    _state.enabled["cpu"] = bool(enabled)
    _sync_cpu()


def get_autocast_cpu_dtype():
    return _state.dtype["cpu"]


def set_autocast_cpu_dtype(dtype):
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    return _state.dtype["cuda"]


def set_autocast_gpu_dtype(dtype):
    set_autocast_dtype("cuda", dtype)


class autocast:  # noqa: N801  (torch's name)
    """autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a context manager and
    decorator that sets the autocast state of `device_type` for its region, as torch.autocast.

    'cuda' without a GPU warns and disables itself, as on PyTorch's CPU build. On the CPU the
    region's ops follow PyTorch's autocast lists; leaving the outermost region drops the cached
    casts of weights."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self.device = _check_device(device_type)
        self.fast_dtype = get_autocast_dtype(self.device) if dtype is None else dtype
        if not isinstance(self.fast_dtype, _C.dtype):
            raise TypeError(f"autocast(): dtype must be a torch.dtype, got {type(self.fast_dtype).__name__}")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        if enabled:
            if self.device == "cuda":
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype not in _SUPPORTED_DTYPES:
                name = self.device.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of "
                              + ", ".join(map(str, _SUPPORTED_DTYPES)) + " currently.", stacklevel=2)
                enabled = False
        self._enabled = bool(enabled)
        self._saved = []  # one entry per active __enter__, so a decorated function may recurse

    def __enter__(self):
        self._saved.append((is_autocast_cache_enabled(), _state.enabled[self.device], _state.dtype[self.device]))
        _state.enabled[self.device] = self._enabled
        _state.dtype[self.device] = self.fast_dtype
        autocast_increment_nesting()
        _state.cache_enabled = self._cache_enabled
        _sync_cpu()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        cache, enabled, dtype = self._saved.pop()
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        _state.enabled[self.device] = enabled
        _state.dtype[self.device] = dtype
        _state.cache_enabled = cache
        _sync_cpu()
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                            "Did you mean to use autocast as a context manager? For example:\n"
                            "    with torch.autocast(device_type=...):\n"
                            "        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _cast(value, device_type, dtype):
    # torch's rule: floating tensors on the device, except float64, are cast; containers recursively.
    if isinstance(value, _C.Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype != _C.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)) or type(value).__module__ == "numpy":
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        items = (_cast(v, device_type, dtype) for v in value)
        return type(value)(items) if isinstance(value, (list, tuple)) else items
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorates an autograd.Function's forward: records the autocast state for custom_bwd and, with
    cast_inputs, casts floating inputs to that dtype and runs forward with autocast disabled."""
    _check_device(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        in_autocast = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if not in_autocast:
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorates an autograd.Function's backward: runs it with the autocast state forward saw."""
    _check_device(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
