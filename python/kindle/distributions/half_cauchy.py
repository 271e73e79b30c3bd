"""torch.distributions.half_cauchy: HalfCauchy (defined in kindle.distributions.transformed)."""
from .transformed import HalfCauchy

__all__ = ["HalfCauchy"]
