"""torch.distributions.multivariate_normal: MultivariateNormal (defined in kindle.distributions.multivariate)."""
from .multivariate import MultivariateNormal

__all__ = ["MultivariateNormal"]
