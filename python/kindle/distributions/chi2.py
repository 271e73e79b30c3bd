"""torch.distributions.chi2: Chi2 (defined in kindle.distributions.continuous)."""
from .continuous import Chi2

__all__ = ["Chi2"]
