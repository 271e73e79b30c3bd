"""torch.distributions.one_hot_categorical: OneHotCategorical and OneHotCategoricalStraightThrough
(defined in kindle.distributions.discrete)."""
from .discrete import OneHotCategorical, OneHotCategoricalStraightThrough

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]
