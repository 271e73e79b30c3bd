"""torch.distributions.normal: Normal (defined in kindle.distributions.continuous)."""
from .continuous import Normal

__all__ = ["Normal"]
