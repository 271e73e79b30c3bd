"""torch.distributions.relaxed_categorical: ExpRelaxedCategorical and RelaxedOneHotCategorical
(defined in kindle.distributions.transformed)."""
from .transformed import ExpRelaxedCategorical, RelaxedOneHotCategorical

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]
