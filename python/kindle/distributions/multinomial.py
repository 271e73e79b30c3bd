"""torch.distributions.multinomial: Multinomial (defined in kindle.distributions.discrete)."""
from .discrete import Multinomial

__all__ = ["Multinomial"]
