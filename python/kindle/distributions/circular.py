"""VonMises (a circular normal) and ContinuousBernoulli (Loaiza-Ganem & Cunningham, 2019)."""
import math
from numbers import Number

import kindle
from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["VonMises", "ContinuousBernoulli"]


def _log_i0(x):
    return kindle.special.i0e(x).log() + x


def _log_i1(x):
    return kindle.special.i1e(x).log() + x


class VonMises(Distribution):
    """The von Mises distribution on the circle, with mean direction `loc` and `concentration`."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        batch_shape = self.loc.shape
        super().__init__(batch_shape, kindle.Size(), validate_args=validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * kindle.cos(value - self.loc)
        return log_prob - math.log(2 * math.pi) - _log_i0(self.concentration)

    @lazy_property
    def _loc(self):
        return self.loc.to(kindle.float64)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(kindle.float64)

    @lazy_property
    def _proposal_r(self):
        """Best & Fisher's r, in float64 (also for float32 or integer parameters)."""
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        r = (1 + rho ** 2) / (2 * rho)
        # for tiny kappa the formula cancels: its limit 1/kappa + kappa
        return kindle.where(kappa < 1e-5, 1 / kappa + kappa, r)

    def sample(self, sample_shape=kindle.Size()):
        """Best & Fisher's rejection sampler in float64. Each round draws three uniforms for every
        element and takes the accepted proposals (an element accepted again takes the newer one),
        until every element has been accepted once: the draws torch makes, so a seed gives torch's
        samples."""
        shape = self._extended_shape(sample_shape)
        with kindle.no_grad():
            loc, kappa, r = self._loc, self._concentration, self._proposal_r
            x = kindle.zeros(shape, dtype=kindle.float64)
            done = kindle.zeros(shape, dtype=kindle.bool)
            while not bool(done.all()):
                u = kindle.rand((3,) + tuple(shape), dtype=kindle.float64)
                u1, u2, u3 = u.unbind()
                z = kindle.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                if bool(accept.any()):
                    x = kindle.where(accept, (u3 - 0.5).sign() * f.clamp(-1, 1).acos(), x)
                    done = done | accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(VonMises, _instance)
        batch_shape = kindle.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance, 1 - I1(kappa) / I0(kappa)."""
        return 1 - (_log_i1(self.concentration) - _log_i0(self.concentration)).exp()


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1], by `probs` or `logits`; near probs = 1/2
    the normaliser and moments use their Taylor expansions (inside `lims`)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = kindle.Size() if is_scalar else self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = kindle.Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return kindle.where(self._outside_unstable_region(), self.probs,
                            self._lims[0] * kindle.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """The log of the normaliser C(p) = 2 atanh(1 - 2p) / (1 - 2p)."""
        cut = self._cut_probs()
        below = kindle.where(cut <= 0.5, cut, kindle.zeros_like(cut))
        above = kindle.where(cut >= 0.5, cut, kindle.ones_like(cut))
        log_norm = kindle.log(kindle.abs(kindle.log1p(-cut) - kindle.log(cut))) - kindle.where(
            cut <= 0.5, kindle.log1p(-2.0 * below), kindle.log(2.0 * above - 1.0))
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return kindle.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (kindle.log1p(-cut) - kindle.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x
        return kindle.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut = self._cut_probs()
        vars_ = cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2 + 1.0 / (kindle.log1p(-cut) - kindle.log(cut)) ** 2
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return kindle.where(self._outside_unstable_region(), vars_, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=kindle.Size()):
        shape = self._extended_shape(sample_shape)
        u = kindle.rand(shape, dtype=self.probs.dtype)
        with kindle.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=kindle.Size()):
        shape = self._extended_shape(sample_shape)
        u = kindle.rand(shape, dtype=self.probs.dtype)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -kindle.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none") + \
            self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut ** value * (1.0 - cut) ** (1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = kindle.where(self._outside_unstable_region(), cdfs, value)
        return kindle.where(value <= 0.0, kindle.zeros_like(value),
                            kindle.where(value >= 1.0, kindle.ones_like(value), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        return kindle.where(self._outside_unstable_region(),
                            (kindle.log1p(-cut + value * (2.0 * cut - 1.0)) - kindle.log1p(-cut))
                            / (kindle.log(cut) - kindle.log1p(-cut)), value)

    def entropy(self):
        log_probs0 = kindle.log1p(-self.probs)
        log_probs1 = kindle.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """F(eta) = log((e^eta - 1) / eta) for the natural parameter eta = logit(p); near eta = 0
        (the band of `lims` shifted by 1/2, as torch) its Taylor expansion."""
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = kindle.where(outside, x, (self._lims[0] - 0.5) * kindle.ones_like(x))
        log_norm = kindle.log(kindle.abs(kindle.exp(cut) - 1.0)) - kindle.log(kindle.abs(cut))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return kindle.where(outside, log_norm, taylor)
