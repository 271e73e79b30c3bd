"""torch.distributions.beta: Beta (defined in kindle.distributions.continuous)."""
from .continuous import Beta

__all__ = ["Beta"]
