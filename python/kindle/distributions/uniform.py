"""torch.distributions.uniform: Uniform (defined in kindle.distributions.continuous)."""
from .continuous import Uniform

__all__ = ["Uniform"]
