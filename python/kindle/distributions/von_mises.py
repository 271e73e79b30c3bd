"""torch.distributions.von_mises: VonMises (defined in kindle.distributions.circular)."""
from .circular import VonMises

__all__ = ["VonMises"]
