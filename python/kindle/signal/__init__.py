"""kindle.signal (torch.signal): window functions in kindle.signal.windows."""
from . import windows  # noqa: F401

__all__ = ["windows"]
