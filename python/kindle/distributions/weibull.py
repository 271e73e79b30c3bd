"""torch.distributions.weibull: Weibull (defined in kindle.distributions.transformed)."""
from .transformed import Weibull

__all__ = ["Weibull"]
