"""torch.distributions.transformed_distribution: TransformedDistribution
(defined in kindle.distributions.transformed)."""
from .transformed import TransformedDistribution

__all__ = ["TransformedDistribution"]
