"""torch.distributions.laplace: Laplace (defined in kindle.distributions.continuous)."""
from .continuous import Laplace

__all__ = ["Laplace"]
