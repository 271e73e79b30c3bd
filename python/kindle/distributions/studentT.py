"""torch.distributions.studentT: StudentT (defined in kindle.distributions.continuous)."""
from .continuous import StudentT

__all__ = ["StudentT"]
