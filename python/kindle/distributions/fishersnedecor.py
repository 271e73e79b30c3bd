"""torch.distributions.fishersnedecor: FisherSnedecor (defined in kindle.distributions.continuous)."""
from .continuous import FisherSnedecor

__all__ = ["FisherSnedecor"]
