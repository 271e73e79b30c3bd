"""torch.distributions.pareto: Pareto (defined in kindle.distributions.transformed)."""
from .transformed import Pareto

__all__ = ["Pareto"]
