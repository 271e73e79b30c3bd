"""torch.distributions.dirichlet: Dirichlet (defined in kindle.distributions.continuous)."""
from .continuous import Dirichlet

__all__ = ["Dirichlet"]
