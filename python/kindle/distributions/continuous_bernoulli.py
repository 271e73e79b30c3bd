"""torch.distributions.continuous_bernoulli: ContinuousBernoulli (defined in kindle.distributions.circular)."""
from .circular import ContinuousBernoulli

__all__ = ["ContinuousBernoulli"]
