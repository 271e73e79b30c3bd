"""torch.distributions.half_normal: HalfNormal (defined in kindle.distributions.transformed)."""
from .transformed import HalfNormal

__all__ = ["HalfNormal"]
