"""kindle.cuda on a machine (or a build) without CUDA, behaving as PyTorch's CPU build does.

Queries answer "no GPU" (is_available() is False, device_count() is 0, memory counters are 0);
seeding, synchronising and cache control do nothing; anything that needs a device raises
PyTorch's error. Kindle has no CUDA backend yet (issue 22)."""
import contextlib as _contextlib

from . import amp  # noqa: F401

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "get_device_name",
    "get_device_capability", "get_device_properties", "synchronize", "manual_seed",
    "manual_seed_all", "seed", "seed_all", "initial_seed", "empty_cache", "memory_allocated",
    "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
    "reset_max_memory_allocated", "memory_stats", "memory_summary", "is_initialized", "init",
    "device", "Stream", "Event", "stream", "current_stream", "default_stream", "is_bf16_supported",
    "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all", "ipc_collect",
    "get_arch_list", "mem_get_info", "set_per_process_memory_fraction", "nvtx",
]

_NO_CUDA = "Torch not compiled with CUDA enabled (Kindle was built without a CUDA backend)"


def _lazy_init():
    # PyTorch's CPU build raises AssertionError here; so does Kindle, with its reason.
    raise AssertionError(_NO_CUDA)


def is_available():
    return False


def is_initialized():
    return False


def init():
    _lazy_init()


def device_count():
    return 0


def current_device():
    _lazy_init()


def set_device(device):  # noqa: ARG001
    _lazy_init()


def get_device_name(device=None):  # noqa: ARG001
    _lazy_init()


def get_device_capability(device=None):  # noqa: ARG001
    _lazy_init()


def get_device_properties(device=None):  # noqa: ARG001
    _lazy_init()


def get_arch_list():
    return []


def is_bf16_supported(including_emulation=True):  # noqa: ARG001
    return False


def synchronize(device=None):  # noqa: ARG001
    _lazy_init()


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
    pass


# Memory counters read 0 without a device, as torch's CPU build reports them.
def memory_allocated(device=None):  # noqa: ARG001
    return 0


def max_memory_allocated(device=None):  # noqa: ARG001
    return 0


def memory_reserved(device=None):  # noqa: ARG001
    return 0


def max_memory_reserved(device=None):  # noqa: ARG001
    return 0


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def reset_peak_memory_stats(device=None):  # noqa: ARG001
    pass


def reset_max_memory_allocated(device=None):  # noqa: ARG001
    pass


def reset_accumulated_memory_stats(device=None):  # noqa: ARG001
    pass


def memory_stats(device=None):  # noqa: ARG001
    return {}


def memory_summary(device=None, abbreviated=False):  # noqa: ARG001
    return ""


class device:  # noqa: N801  (torch.cuda.device, a context manager)
    def __init__(self, device):
        self.idx = device

    def __enter__(self):
        _lazy_init()

    def __exit__(self, *exc):
        return False


class Stream:
    def __init__(self, device=None, priority=0, **kwargs):  # noqa: ARG002
        raise RuntimeError("kindle.cuda.Stream requires CUDA support (Kindle was built without CUDA)")


class Event:
    def __init__(self, enable_timing=False, blocking=False, interprocess=False):  # noqa: ARG002
        raise RuntimeError("kindle.cuda.Event requires CUDA support (Kindle was built without CUDA)")


def stream(stream):  # noqa: ARG001
    if stream is None:
        return _contextlib.nullcontext()
    _lazy_init()


def current_stream(device=None):  # noqa: ARG001
    _lazy_init()


def default_stream(device=None):  # noqa: ARG001
    _lazy_init()


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
