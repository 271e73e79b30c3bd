"""kindle.cuda: torch.cuda's API over Kindle's CUDA backend (csrc/cuda/).

In a build without CUDA, or on a machine without a GPU, it behaves as PyTorch's CPU build does:
queries answer "no GPU" (is_available() is False, device_count() is 0, memory counters are 0);
seeding, synchronising and cache control do nothing; anything that needs a device raises
PyTorch's error."""
import contextlib as _contextlib

from .. import _C
from . import amp  # noqa: F401

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "get_device_name",
    "get_device_capability", "get_device_properties", "synchronize", "manual_seed",
    "manual_seed_all", "seed", "seed_all", "initial_seed", "empty_cache", "memory_allocated",
    "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
    "reset_max_memory_allocated", "memory_stats", "memory_summary", "is_initialized", "init",
    "device", "Stream", "Event", "stream", "current_stream", "default_stream", "is_bf16_supported",
    "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all", "ipc_collect",
    "get_arch_list", "mem_get_info", "set_per_process_memory_fraction", "nvtx", "OutOfMemoryError",
]

OutOfMemoryError = _C.OutOfMemoryError
_HAS_GPU = _C._cuda_is_available()

_NO_CUDA = ("Torch not compiled with CUDA enabled (Kindle was built without a CUDA backend)" if not _C._cuda_is_built()
            else "Found no NVIDIA driver on your system (Kindle was built with CUDA, but this machine has no GPU)")


def _lazy_init():
    # PyTorch raises AssertionError (CPU build) or RuntimeError (no GPU) here; so does Kindle, with its reason.
    if not _HAS_GPU:
        if _C._cuda_is_built():
            raise RuntimeError(_NO_CUDA)
        raise AssertionError(_NO_CUDA)


def _index(device):
    """The device index of an int, 'cuda:1', kindle.device or None (the current device)."""
    _lazy_init()
    if device is None:
        return _C._cuda_current_device()
    if isinstance(device, int):
        return device
    text = str(device)
    if text == "cuda":
        return _C._cuda_current_device()
    if not text.startswith("cuda:"):
        raise ValueError(f"Expected a cuda device, but got: {device}")
    return int(text[5:])


def is_available():
    return _HAS_GPU


def is_initialized():
    return _HAS_GPU


def init():
    _lazy_init()


def device_count():
    return _C._cuda_device_count()


def current_device():
    _lazy_init()
    return _C._cuda_current_device()


def set_device(device):
    if device is None or (isinstance(device, int) and device < 0):
        return
    _C._cuda_set_device(_index(device))


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    p = get_device_properties(device)
    return (p.major, p.minor)


class _DeviceProperties:
    def __init__(self, name, total_memory, major, minor, multi_processor_count):
        self.name, self.total_memory, self.major, self.minor = name, total_memory, major, minor
        self.multi_processor_count = multi_processor_count

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None):
    return _DeviceProperties(*_C._cuda_get_device_properties(_index(device)))


def get_arch_list():
    return ["sm_90"] if _C._cuda_is_built() else []


def is_bf16_supported(including_emulation=True):  # noqa: ARG001
    return _HAS_GPU


def synchronize(device=None):
    _C._cuda_synchronize(_index(device))


def ipc_collect():
    _lazy_init()


def mem_get_info(device=None):  # noqa: ARG001
    _lazy_init()


def set_per_process_memory_fraction(fraction, device=None):  # noqa: ARG001
    _lazy_init()


# Seeding the (absent) CUDA generators is harmless, as in torch: scripts call these
# unconditionally next to torch.manual_seed.
def manual_seed(seed):  # noqa: ARG001
    pass


def manual_seed_all(seed):  # noqa: ARG001
    pass


def seed():
    pass


def seed_all():
    pass


def initial_seed():
    _lazy_init()


def get_rng_state(device="cuda"):  # noqa: ARG001
    _lazy_init()


def set_rng_state(new_state, device="cuda"):  # noqa: ARG001
    _lazy_init()


def get_rng_state_all():
    return []


def set_rng_state_all(new_states):  # noqa: ARG001
    pass


def empty_cache():
    _C._cuda_empty_cache()


# Memory counters read 0 without a device, as torch's CPU build reports them.
def _stat(key, device):
    return _C._cuda_memory_stats(_index(device))[key] if _HAS_GPU else 0


def memory_allocated(device=None):
    return _stat("allocated_bytes.all.current", device)


def max_memory_allocated(device=None):
    return _stat("allocated_bytes.all.peak", device)


def memory_reserved(device=None):
    return _stat("reserved_bytes.all.current", device)


def max_memory_reserved(device=None):
    return _stat("reserved_bytes.all.peak", device)


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def reset_peak_memory_stats(device=None):
    if _HAS_GPU:
        _C._cuda_reset_peak_memory_stats(_index(device))


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None):  # noqa: ARG001
    pass


def memory_stats(device=None):
    return dict(sorted(_C._cuda_memory_stats(_index(device)).items())) if _HAS_GPU else {}


def memory_summary(device=None, abbreviated=False):  # noqa: ARG001
    return _C._cuda_memory_summary(_index(device)) if _HAS_GPU else ""


class device:  # noqa: N801  (torch.cuda.device, a context manager)
    def __init__(self, device):
        self.idx = device
        self.prev = None

    def __enter__(self):
        if self.idx is None or (isinstance(self.idx, int) and self.idx < 0):
            return
        idx = _index(self.idx)
        self.prev = _C._cuda_current_device()
        _C._cuda_set_device(idx)

    def __exit__(self, *exc):
        if self.prev is not None:
            _C._cuda_set_device(self.prev)
        return False


class Stream:
    """A CUDA stream: kernels queued on it run in order; different streams may overlap."""

    def __init__(self, device=None, priority=0, **kwargs):
        if not _HAS_GPU:
            raise RuntimeError("kindle.cuda.Stream requires CUDA support (" + _NO_CUDA + ")")
        handle = kwargs.get("_handle")
        if handle is not None:
            self.cuda_stream, self._device = handle
            self._owned = False
        else:
            self.cuda_stream, self._device = _C._cuda_create_stream(_index(device), priority)
            self._owned = True

    @property
    def device(self):
        from .. import device as _device
        return _device("cuda", self._device)

    def synchronize(self):
        _C._cuda_stream_synchronize(self.cuda_stream, self._device)

    def query(self):
        return _C._cuda_stream_query(self.cuda_stream, self._device)

    def wait_event(self, event):
        _C._cuda_stream_wait_event(self.cuda_stream, self._device, event._handle)

    def wait_stream(self, stream):
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream) and (self.cuda_stream, self._device) == (other.cuda_stream, other._device)

    def __hash__(self):
        return hash((self.cuda_stream, self._device))

    def __repr__(self):
        return f"<kindle.cuda.Stream device=cuda:{self._device} cuda_stream={self.cuda_stream:#x}>"

    def __del__(self):
        if getattr(self, "_owned", False):
            _C._cuda_destroy_stream(self.cuda_stream, self._device)


class Event:
    """A CUDA event: a point in a stream's work, to wait for or to time against another."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):  # noqa: ARG002
        if not _HAS_GPU:
            raise RuntimeError("kindle.cuda.Event requires CUDA support (" + _NO_CUDA + ")")
        self._handle = _C._cuda_create_event(bool(enable_timing))

    def record(self, stream=None):
        stream = current_stream() if stream is None else stream
        _C._cuda_record_event(self._handle, stream.cuda_stream, stream._device)

    def wait(self, stream=None):
        stream = current_stream() if stream is None else stream
        stream.wait_event(self)

    def query(self):
        return _C._cuda_event_query(self._handle)

    def synchronize(self):
        _C._cuda_event_synchronize(self._handle)

    def elapsed_time(self, end_event):
        return _C._cuda_event_elapsed_ms(self._handle, end_event._handle)

    def __del__(self):
        if getattr(self, "_handle", None):
            _C._cuda_destroy_event(self._handle)


class _StreamContext:
    def __init__(self, stream):
        self.stream = stream
        self.prev = None

    def __enter__(self):
        if self.stream is None:
            return None
        self.prev = current_stream(self.stream._device)
        _C._cuda_set_stream(self.stream.cuda_stream, self.stream._device)
        return self.stream

    def __exit__(self, *exc):
        if self.prev is not None:
            _C._cuda_set_stream(self.prev.cuda_stream, self.prev._device)
        return False


def stream(stream):
    """Context manager: kernels launched inside are queued on `stream`."""
    if stream is None:
        return _contextlib.nullcontext()
    _lazy_init()
    return _StreamContext(stream)


def set_stream(stream):
    _C._cuda_set_stream(stream.cuda_stream, stream._device)


def current_stream(device=None):
    return Stream(_handle=_C._cuda_current_stream(_index(device)))


def default_stream(device=None):
    return Stream(_handle=_C._cuda_default_stream(_index(device)))


class _Nvtx:
    """torch.cuda.nvtx markers: no-ops without CUDA."""

    @staticmethod
    def range_push(msg):  # noqa: ARG004
        return 0

    @staticmethod
    def range_pop():
        return 0

    @staticmethod
    def mark(msg):  # noqa: ARG004
        pass

    @staticmethod
    @_contextlib.contextmanager
    def range(msg, *args, **kwargs):  # noqa: ARG004
        yield


nvtx = _Nvtx()
