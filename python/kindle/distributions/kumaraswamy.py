"""torch.distributions.kumaraswamy: Kumaraswamy (defined in kindle.distributions.transformed)."""
from .transformed import Kumaraswamy

__all__ = ["Kumaraswamy"]
