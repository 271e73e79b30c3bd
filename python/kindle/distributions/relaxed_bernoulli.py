"""torch.distributions.relaxed_bernoulli: LogitRelaxedBernoulli and RelaxedBernoulli
(defined in kindle.distributions.transformed)."""
from .transformed import LogitRelaxedBernoulli, RelaxedBernoulli

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]
