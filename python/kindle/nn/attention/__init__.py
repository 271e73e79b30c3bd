"""torch.nn.attention: SDPBackend and the sdpa_kernel context manager.

Kindle has one scaled_dot_product_attention implementation; on CPU torch's backends give the same
results, so choosing one here is accepted (and validated as torch validates it) but changes
nothing."""
import contextlib
from enum import IntEnum

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(IntEnum):
    """The attention backends torch names, with torch's values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __repr__(self):
        return f"<SDPBackend.{self.name}: {self.value}>"

    def __str__(self):
        return f"SDPBackend.{self.name}"


_current_backends = [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                     SDPBackend.MATH, SDPBackend.OVERRIDEABLE]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Within the context, scaled_dot_product_attention may use only `backends` (one SDPBackend or
    a list); set_priority=True also orders them. Kindle records the choice and restores it."""
    global _current_backends
    assert isinstance(backends, (list, SDPBackend)), \
        "Backend must be an instance of SDPBackend or a list of SDPBackend instances"
    if isinstance(backends, SDPBackend):
        backends = [backends]
    for b in backends:
        if not isinstance(b, SDPBackend):
            raise TypeError(f"sdpa_kernel: expected SDPBackend values, got {type(b).__name__}")
    previous = _current_backends
    _current_backends = list(dict.fromkeys(backends))
    try:
        yield {}
    finally:
        _current_backends = previous


from . import bias  # noqa: E402,F401  (torch.nn.attention.bias: CausalBias, causal_upper_left/lower_right)
from . import flex_attention  # noqa: E402,F401  (torch.nn.attention.flex_attention: flex_attention, BlockMask)
