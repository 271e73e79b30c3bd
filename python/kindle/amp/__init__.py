"""kindle.amp (torch.amp): autocast and GradScaler. See autocast_mode.py for what autocast does
on Kindle (PyTorch's CPU autocast lists) and grad_scaler.py."""
from . import autocast_mode, grad_scaler  # noqa: F401
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]

# The autocast state functions torch has at its top level (torch.is_autocast_enabled, ...).
_STATE_FUNCTIONS = [
    "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
    "is_autocast_cache_enabled", "set_autocast_cache_enabled", "autocast_increment_nesting",
    "autocast_decrement_nesting", "clear_autocast_cache", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
    "get_autocast_cpu_dtype", "set_autocast_cpu_dtype", "get_autocast_gpu_dtype", "set_autocast_gpu_dtype",
]


def top_level_names():
    """{name: function} of the autocast state functions kindle (like torch) exports at its top level."""
    return {name: getattr(autocast_mode, name) for name in _STATE_FUNCTIONS}
