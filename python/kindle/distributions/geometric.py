"""torch.distributions.geometric: Geometric (defined in kindle.distributions.discrete)."""
from .discrete import Geometric

__all__ = ["Geometric"]
