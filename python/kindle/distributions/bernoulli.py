"""torch.distributions.bernoulli: Bernoulli (defined in kindle.distributions.discrete)."""
from .discrete import Bernoulli

__all__ = ["Bernoulli"]
