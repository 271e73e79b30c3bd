"""torch.distributions.wishart: Wishart (defined in kindle.distributions.multivariate)."""
from .multivariate import Wishart

__all__ = ["Wishart"]
