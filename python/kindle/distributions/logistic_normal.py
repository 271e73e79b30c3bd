"""torch.distributions.logistic_normal: LogisticNormal (defined in kindle.distributions.transformed)."""
from .transformed import LogisticNormal

__all__ = ["LogisticNormal"]
