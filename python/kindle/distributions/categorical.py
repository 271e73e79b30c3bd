"""torch.distributions.categorical: Categorical (defined in kindle.distributions.discrete)."""
from .discrete import Categorical

__all__ = ["Categorical"]
