"""torch.distributions.gamma: Gamma (defined in kindle.distributions.continuous)."""
from .continuous import Gamma

__all__ = ["Gamma"]
