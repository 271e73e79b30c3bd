"""torch.distributions.lowrank_multivariate_normal: LowRankMultivariateNormal
(defined in kindle.distributions.multivariate)."""
from .multivariate import LowRankMultivariateNormal

__all__ = ["LowRankMultivariateNormal"]
