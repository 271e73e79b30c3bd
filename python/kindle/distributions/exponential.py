"""torch.distributions.exponential: Exponential (defined in kindle.distributions.continuous)."""
from .continuous import Exponential

__all__ = ["Exponential"]
