"""torch.distributions.lkj_cholesky: LKJCholesky (defined in kindle.distributions.multivariate)."""
from .multivariate import LKJCholesky

__all__ = ["LKJCholesky"]
