"""kindle.distributions: probability distributions and sampling (torch.distributions).
Pure Python over kindle's ops; the random draws come from kindle's generator."""
from . import constraints, transforms  # noqa: F401
from .circular import ContinuousBernoulli, VonMises  # noqa: F401
from .constraint_registry import biject_to, transform_to  # noqa: F401
from .continuous import (Beta, Cauchy, Chi2, Dirichlet, Exponential, FisherSnedecor, Gamma, Laplace,  # noqa: F401
                         Normal, StudentT, Uniform)
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial, NegativeBinomial,  # noqa: F401
                       OneHotCategorical, OneHotCategoricalStraightThrough, Poisson)
from .distribution import Distribution, ExponentialFamily  # noqa: F401
from .kl import kl_divergence, register_kl  # noqa: F401
from .multivariate import LKJCholesky, LowRankMultivariateNormal, MultivariateNormal, Wishart  # noqa: F401
from .transformed import (ExpRelaxedCategorical, Gumbel, HalfCauchy, HalfNormal, Independent,  # noqa: F401
                          Kumaraswamy, LogisticNormal, LogitRelaxedBernoulli, LogNormal, MixtureSameFamily, Pareto,
                          RelaxedBernoulli, RelaxedOneHotCategorical, TransformedDistribution, Weibull)
from .transforms import *  # noqa: F401,F403

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli", "Dirichlet",
    "Distribution", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "Geometric", "Gumbel",
    "HalfCauchy", "HalfNormal", "Independent", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal",
    "LowRankMultivariateNormal", "Multinomial", "MixtureSameFamily", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical",
    "StudentT", "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to", "kl_divergence", "register_kl",
    "transform_to",
]
__all__ += transforms.__all__
