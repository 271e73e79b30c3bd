"""torch.distributions.poisson: Poisson (defined in kindle.distributions.discrete)."""
from .discrete import Poisson

__all__ = ["Poisson"]
