"""kindle.cpu: the CPU device, as torch.cpu, plus the CPU allocator's cache.

Kindle caches large freed blocks (1 MiB and up) so that a fresh large result does not pay a page
fault per page. The cache holds at most the peak of live large blocks over the last couple of
seconds of allocator activity (at least 64 MiB) and never more than a hard limit (1/8 of RAM by
default): see Note [CPU block cache] in csrc/core/allocator.cpp.
"""
from .. import _C
from . import amp  # noqa: E402,F401  (torch.cpu.amp)

__all__ = ["is_available", "device_count", "current_device", "synchronize", "empty_cache",
           "memory_stats", "memory_allocated", "max_memory_allocated", "set_cache_limit"]


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """CPU ops run synchronously: nothing to wait for."""


def empty_cache():
    """Returns every cached block to the system (and drops the data derived from weights)."""
    _C.empty_cache()


def memory_stats():
    """Counters of the CPU allocator's large blocks (1 MiB and up), in bytes: allocated_bytes
    (live now), peak_allocated_bytes, cached_bytes, cache_limit, cache_hits, cache_misses; and of
    the data kept derived from weights (Winograd's transformed filters): derived_entries,
    derived_bytes, derived_hits, derived_misses."""
    return dict(_C.cpu_memory_stats())


def memory_allocated():
    return _C.cpu_memory_stats()["allocated_bytes"]


def max_memory_allocated():
    return _C.cpu_memory_stats()["peak_allocated_bytes"]


def set_cache_limit(nbytes):
    """Caps the cache at `nbytes` (0 disables caching and empties it)."""
    if nbytes < 0:
        raise ValueError(f"set_cache_limit: expected a non-negative number of bytes, got {nbytes}")
    _C.cpu_cache_set_limit(int(nbytes))
