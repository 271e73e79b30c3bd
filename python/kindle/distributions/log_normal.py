"""torch.distributions.log_normal: LogNormal (defined in kindle.distributions.transformed)."""
from .transformed import LogNormal

__all__ = ["LogNormal"]
