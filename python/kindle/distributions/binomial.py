"""torch.distributions.binomial: Binomial (defined in kindle.distributions.discrete)."""
from .discrete import Binomial

__all__ = ["Binomial"]
