"""torch.distributions.mixture_same_family: MixtureSameFamily (defined in kindle.distributions.transformed)."""
from .transformed import MixtureSameFamily

__all__ = ["MixtureSameFamily"]
