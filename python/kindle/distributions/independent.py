"""torch.distributions.independent: Independent (defined in kindle.distributions.transformed)."""
from .transformed import Independent

__all__ = ["Independent"]
