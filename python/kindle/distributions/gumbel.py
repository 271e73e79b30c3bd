"""torch.distributions.gumbel: Gumbel (defined in kindle.distributions.transformed)."""
from .transformed import Gumbel

__all__ = ["Gumbel"]
