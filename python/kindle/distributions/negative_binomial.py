"""torch.distributions.negative_binomial: NegativeBinomial (defined in kindle.distributions.discrete)."""
from .discrete import NegativeBinomial

__all__ = ["NegativeBinomial"]
