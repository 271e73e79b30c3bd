"""torch.distributions.cauchy: Cauchy (defined in kindle.distributions.continuous)."""
from .continuous import Cauchy

__all__ = ["Cauchy"]
