"""The generalized Pareto distribution (torch.distributions.generalized_pareto)."""
import math
from numbers import Number, Real

import kindle
from . import constraints
from .distribution import Distribution
from .utils import _dtype_name, _require_floating, broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution with location `loc`, scale `scale` > 0 and shape
    `concentration` (xi): with z = (x - loc) / scale its survival function is
    (1 + xi z)^(-1/xi), and exp(-z) at xi = 0. xi = 0 gives the exponential distribution,
    xi > 0 a (shifted) Pareto, xi = -1 the uniform on [loc, loc + scale]; for xi < 0 the
    support ends at loc - scale / xi.

    xi counts as 0 where |xi| <= 1e-8 (isclose to 0), as in torch."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if isinstance(loc, Number) and isinstance(scale, Number) and isinstance(concentration, Number):
            batch_shape = kindle.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = kindle.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = kindle.where(self.concentration < 0, lower - self.scale / self.concentration, math.inf)
        return constraints.interval(lower, upper)

    def _xi_is_zero(self):
        """(mask of xi == 0, xi with the zeros replaced by 1), the latter safe to divide by."""
        xi = self.concentration
        if not xi.dtype.is_floating_point:
            # torch compares the shape with a float32 zero, which fails for integer parameters
            raise RuntimeError(f"{_dtype_name(xi.dtype)} did not match Float")
        is_zero = xi.abs() <= 1e-8
        return is_zero, kindle.where(is_zero, kindle.ones_like(xi), xi)

    def _z(self, x):
        return (x - self.loc) / self.scale

    def rsample(self, sample_shape=kindle.Size()):
        shape = self._extended_shape(sample_shape)
        _require_floating(self.loc.dtype, "check_uniform_bounds")
        u = kindle.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        is_zero, xi = self._xi_is_zero()
        # -log(scale) - (1 / xi + 1) log1p(xi z); at xi = -1 (the uniform) the second term is 0
        power = 1 / xi + kindle.ones_like(z)
        nonzero = kindle.where(power == 0, power, power * kindle.log1p(xi * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - kindle.where(is_zero, z, nonzero)

    def log_survival_function(self, value):
        """log P(X > value)."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        is_zero, xi = self._xi_is_zero()
        return kindle.where(is_zero, -z, -kindle.log1p(xi * z) / xi)

    def log_cdf(self, value):
        return kindle.log1p(-kindle.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return kindle.exp(self.log_cdf(value))

    def icdf(self, value):
        xi = self.concentration
        is_zero = kindle.isclose(xi, kindle.zeros_like(xi))
        safe_xi = kindle.where(is_zero, kindle.ones_like(xi), xi)
        log1m_u = kindle.log1p(-value)
        # the inverse of 1 - (1 + xi z)^(-1/xi): z = expm1(-xi log(1 - u)) / xi, or -log(1 - u) at xi = 0
        nonzero = self.loc + self.scale / safe_xi * kindle.expm1(-safe_xi * log1m_u)
        zero = self.loc - self.scale * log1m_u
        return kindle.where(is_zero, zero, nonzero)

    @property
    def mean(self):
        xi = self.concentration
        valid = xi < 1
        safe_xi = kindle.where(valid, xi, 0.5)
        return kindle.where(valid, self.loc + self.scale / (1 - safe_xi), math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        xi = self.concentration
        valid = xi < 0.5
        safe_xi = kindle.where(valid, xi, 0.25)
        return kindle.where(valid, self.scale ** 2 / ((1 - safe_xi) ** 2 * (1 - 2 * safe_xi)), math.nan)

    def entropy(self):
        return kindle.broadcast_to(kindle.log(self.scale) + self.concentration + 1, self._batch_shape)
