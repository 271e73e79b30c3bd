"""kl_divergence(p, q) and the closed forms registered for pairs of families."""
import math
import warnings
from functools import total_ordering

import kindle
import kindle.nn.functional as F
from .circular import ContinuousBernoulli
from .continuous import Beta, Cauchy, Dirichlet, Exponential, Gamma, Laplace, Normal, Uniform
from .discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .multivariate import LowRankMultivariateNormal, MultivariateNormal
from .transformed import Gumbel, HalfNormal, Independent, Pareto, TransformedDistribution
from .utils import _sum_rightmost, euler_constant

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY = {}
_KL_MEMOIZE = {}


def register_kl(type_p, type_q):
    """Decorator: registers fn(p, q) as KL(p || q) for instances of (subclasses of) type_p, type_q."""
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun
    return decorator


@total_ordering
class _Match:
    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    """The most specific registered implementation for (type_p, type_q)."""
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please register_kl("
                      f"{left_p.__name__}, {right_q.__name__})", RuntimeWarning)
    return left_fun


def _infinite_like(tensor):
    return kindle.full_like(tensor, math.inf)


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the distributions' batch shape."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fun(p, q)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1[q.probs == 0] = math.inf
    t1[p.probs == 0] = 0
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2[q.probs == 1] = math.inf
    t2[p.probs == 1] = 0
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_params_p = p.concentration1 + p.concentration0
    sum_params_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_params_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_params_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * kindle.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * kindle.digamma(p.concentration0)
    t5 = (sum_params_q - sum_params_p) * kindle.digamma(sum_params_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    inf_idxs = p.total_count > q.total_count
    kl[inf_idxs] = _infinite_like(kl[inf_idxs])
    return kl


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t[(q.probs == 0).expand_as(t)] = math.inf
    t[(p.probs == 0).expand_as(t)] = 0
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p_concentration = p.concentration.sum(-1)
    sum_q_concentration = q.concentration.sum(-1)
    t1 = sum_p_concentration.lgamma() - sum_q_concentration.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p_concentration.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    t1 = -rate_ratio.log()
    return t1 + rate_ratio - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * kindle.log(p.rate / q.rate)
    t2 = kindle.lgamma(q.concentration) - kindle.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * kindle.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * euler_constant
    t3 = kindle.exp(ct2 + (1 + ct1).lgamma() - ct3)
    return t1 + t2 + t3 - (1 + euler_constant)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - kindle.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * kindle.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    extra_event_dim = len(p.event_shape) - len(p.base_dist.event_shape)
    base_kl_divergence = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(base_kl_divergence, extra_event_dim)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    result[(q.low > p.low) | (q.high < p.high)] = math.inf
    return result


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)


# ---- pairs of different families

@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    t1 = -q.concentration * kindle.log(ratio)
    return t1 + ratio + q.concentration.lgamma() + q.concentration * euler_constant - (1 + euler_constant)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    var_normal = q.scale.pow(2)
    rate_sqr = p.rate.pow(2)
    t1 = 0.5 * kindle.log(rate_sqr * var_normal * 2 * math.pi)
    t2 = rate_sqr.reciprocal()
    t3 = q.loc / p.rate
    t4 = q.loc.pow(2) * 0.5
    return t1 - 1 + (t2 - t3 + t4) / var_normal


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    loc_diff = p.loc - q.loc
    scale_ratio = p.scale / q.scale
    loc_diff_scale_ratio = loc_diff / p.scale
    t1 = kindle.log(scale_ratio)
    t2 = math.sqrt(2 / math.pi) * p.scale * kindle.exp(-0.5 * loc_diff_scale_ratio.pow(2))
    t3 = loc_diff * kindle.erf(math.sqrt(0.5) * loc_diff_scale_ratio)
    return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    common_term = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / common_term).log()
    t2 = (common_term).pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    result[p.low < q.support.lower_bound] = math.inf
    return result


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    common_term = p.high - p.low
    t1 = common_term.log()
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - common_term) / common_term
    t4 = q.rate * (p.high + p.low) / 2
    result = -t1 + t2 + t3 + t4
    result[p.low < q.support.lower_bound] = math.inf
    return result


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    half_term1 = (q._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - p._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    combined_batch_shape = kindle.broadcast_shapes(tuple(q._unbroadcasted_scale_tril.shape[:-2]),
                                                   tuple(p._unbroadcasted_scale_tril.shape[:-2]))
    n = p.event_shape[0]
    q_scale_tril = q._unbroadcasted_scale_tril.expand(tuple(combined_batch_shape) + (n, n))
    p_scale_tril = p._unbroadcasted_scale_tril.expand(tuple(combined_batch_shape) + (n, n))
    term2 = kindle.linalg.solve_triangular(q_scale_tril, p_scale_tril, upper=False).pow(2).sum((-2, -1))
    from .multivariate import _batch_mahalanobis
    term3 = _batch_mahalanobis(q._unbroadcasted_scale_tril, (q.loc - p.loc))
    return half_term1 + 0.5 * (term2 + term3 - n)


# ---- multivariate normals in either parameterisation
#
# KL(p || q) = 1/2 [log|S_q| - log|S_p| + tr(S_q^-1 S_p) + (m_q - m_p)^T S_q^-1 (m_q - m_p) - n]. With
# S_q = L L^T (L lower triangular) and S_p = F F^T for any factor F, tr(S_q^-1 S_p) = |L^-1 F|^2
# (Frobenius). A low-rank S = W W^T + D has the factor [W, D^1/2] and, by the matrix determinant
# lemma, log|S| = log|C| + sum(log D) with C = I + W^T D^-1 W (its Cholesky factor is kept as
# _capacitance_tril).

def _gaussian_factor(d):
    """(F, log|S|) for a (low-rank) multivariate normal with covariance S = F F^T."""
    if isinstance(d, LowRankMultivariateNormal):
        W, D = d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag
        batch = kindle.broadcast_shapes(tuple(W.shape[:-2]), tuple(D.shape[:-1]))
        n = D.shape[-1]
        W = W.expand(tuple(batch) + tuple(W.shape[-2:]))
        sqrt_D = kindle.diag_embed(D.sqrt()).expand(tuple(batch) + (n, n))
        log_det = 2 * d._capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)
        return kindle.cat([W, sqrt_D], -1), log_det
    L = d._unbroadcasted_scale_tril
    return L, 2 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _gaussian_tril(d):
    """(lower Cholesky factor of S, log|S|) for a (low-rank) multivariate normal."""
    if isinstance(d, LowRankMultivariateNormal):
        W, D = d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag
        cov = kindle.matmul(W, W.transpose(-2, -1)) + kindle.diag_embed(D)
        log_det = 2 * d._capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)
        return kindle.linalg.cholesky(cov), log_det
    L = d._unbroadcasted_scale_tril
    return L, 2 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _kl_gaussian_gaussian(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with different event shapes "
                         "cannot be computed")
    from .multivariate import _batch_mahalanobis
    n = p.event_shape[0]
    F, p_log_det = _gaussian_factor(p)
    L, q_log_det = _gaussian_tril(q)
    batch = tuple(kindle.broadcast_shapes(tuple(L.shape[:-2]), tuple(F.shape[:-2])))
    trace = kindle.linalg.solve_triangular(L.expand(batch + (n, n)), F.expand(batch + tuple(F.shape[-2:])),
                                           upper=False).pow(2).sum((-2, -1))
    mahalanobis = _batch_mahalanobis(L, q.loc - p.loc)
    return 0.5 * (q_log_det - p_log_det + trace + mahalanobis - n)


for _p, _q in ((LowRankMultivariateNormal, LowRankMultivariateNormal),
               (LowRankMultivariateNormal, MultivariateNormal),
               (MultivariateNormal, LowRankMultivariateNormal)):
    register_kl(_p, _q)(_kl_gaussian_gaussian)


# ---- same exponential family: the Bregman divergence of the log normaliser

@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """KL(p || q) = F(theta_q) - F(theta_p) - <theta_q - theta_p, grad F(theta_p)>, F the family's log
    normaliser and theta the natural parameters (grad F by autograd)."""
    if type(p) is not type(q):
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type {q.__class__.__name__}: "
            "the cross KL-divergence between different exponential families cannot be computed using Bregman "
            "divergences")
    p_thetas = [t.detach().requires_grad_() for t in p._natural_params]
    q_thetas = q._natural_params
    p_log_norm = p._log_normalizer(*p_thetas)
    grad_log_norm = kindle.autograd.grad(p_log_norm.sum(), p_thetas, create_graph=True)
    result = q._log_normalizer(*q_thetas) - p_log_norm
    for p_theta, q_theta, g in zip(p_thetas, q_thetas, grad_log_norm):
        result = result - _sum_rightmost((q_theta - p_theta) * g, len(q.event_shape))
    return result


# ---- the rest of the same-family pairs

@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuousbernoulli_continuousbernoulli(p, q):
    return -p.entropy() + _cb_cross_entropy(p.mean, q)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    result = -p.entropy() + _pareto_cross_entropy(p.scale.log() + p.alpha.reciprocal(), q)
    return _inf_where(p.scale < q.scale, result)


# ---- pairs of different families, as KL(p || q) = -H(p) + E_p[-log q(x)]: the cross-entropy
# E_p[-log q] is q's log density averaged through the moments of p it needs (E[x], E[x^2],
# E[log x], ...). Where q's support does not cover p's, the divergence is infinite.

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _x_log_x(t):
    """t log t, with its limit 0 at t = 0."""
    return kindle.xlogy(t, t)


def _inf_where(mask, result):
    return kindle.where(mask, kindle.full_like(result, math.inf), result)


def _normal_cross_entropy(mean, var, q):
    """E[-log N(x; loc, scale)] for x of mean `mean` and variance `var`."""
    return (var + (mean - q.loc).pow(2)) / (2 * q.scale.pow(2)) + q.scale.log() + _HALF_LOG_2PI


def _exponential_cross_entropy(mean, q):
    """E[-log Exp(x; rate)] = rate E[x] - log rate (x >= 0)."""
    return q.rate * mean - q.rate.log()


def _gamma_cross_entropy(mean, mean_log, q):
    """E[-log Gamma(x; a, b)] = lgamma(a) - a log b - (a - 1) E[log x] + b E[x]."""
    a, b = q.concentration, q.rate
    return kindle.lgamma(a) - a * b.log() - (a - 1) * mean_log + b * mean


def _gumbel_cross_entropy(mean, mean_exp_neg_z, q):
    """E[-log Gumbel(x; loc, scale)] = log scale + E[z] + E[exp(-z)], z = (x - loc) / scale."""
    return q.scale.log() + (mean - q.loc) / q.scale + mean_exp_neg_z


def _pareto_cross_entropy(mean_log, q):
    """E[-log Pareto(x; scale, alpha)] = (alpha + 1) E[log x] - log alpha - alpha log scale (x >= scale)."""
    return (q.alpha + 1) * mean_log - q.alpha.log() - q.alpha * q.scale.log()


def _beta_cross_entropy(mean_log, mean_log1m, q):
    """E[-log Beta(x; a, b)] = log B(a, b) - (a - 1) E[log x] - (b - 1) E[log(1 - x)]."""
    a, b = q.concentration1, q.concentration0
    log_beta = kindle.lgamma(a) + kindle.lgamma(b) - kindle.lgamma(a + b)
    return log_beta - (a - 1) * mean_log - (b - 1) * mean_log1m


def _cb_cross_entropy(mean, q):
    """E[-log CB(x; lambda)]: log CB(x) = x logit(lambda) + log(1 - lambda) + log C(lambda)."""
    return -(mean * q.logits + kindle.log1p(-q.probs) + q._cont_bern_log_norm())


def _infinite_like_param(name):
    def _kl_infinite(p, q):
        return _infinite_like(getattr(p, name))
    _kl_infinite.__name__ = f"_kl_infinite_by_support_{name}"
    return _kl_infinite


# p's support is not inside q's: infinite whatever the parameters
for _p, _qs, _param in (
        (Beta, (Pareto,), "concentration1"),
        (ContinuousBernoulli, (Pareto,), "probs"),
        (Exponential, (Beta, ContinuousBernoulli, Pareto, Uniform), "rate"),
        (Gamma, (Beta, ContinuousBernoulli, Pareto, Uniform), "concentration"),
        (Gumbel, (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform), "loc"),
        (Laplace, (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform), "loc"),
        (Normal, (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform), "loc"),
        (Pareto, (Beta, ContinuousBernoulli, Uniform), "scale"),
        (Poisson, (Bernoulli, Binomial), "rate")):
    _fun = _infinite_like_param(_param)
    for _q in _qs:
        register_kl(_p, _q)(_fun)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    # log k! = 0 on {0, 1}: E[-log Poisson(k; rate)] = rate - E[k] log rate
    return -p.entropy() + q.rate - p.probs * q.rate.log()


def _beta_mean_log(p):
    """(E[log x], E[log(1 - x)]) for x ~ Beta."""
    digamma_total = kindle.digamma(p.concentration1 + p.concentration0)
    return kindle.digamma(p.concentration1) - digamma_total, kindle.digamma(p.concentration0) - digamma_total


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuousbernoulli(p, q):
    return -p.entropy() + _cb_cross_entropy(p.mean, q)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() + _exponential_cross_entropy(p.mean, q)


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    return -p.entropy() + _gamma_cross_entropy(p.mean, _beta_mean_log(p)[0], q)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    return -p.entropy() + _normal_cross_entropy(p.mean, p.variance, q)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where((q.low > 0) | (q.high < 1), result)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuousbernoulli_exponential(p, q):
    return -p.entropy() + _exponential_cross_entropy(p.mean, q)


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuousbernoulli_normal(p, q):
    return -p.entropy() + _normal_cross_entropy(p.mean, p.variance, q)


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuousbernoulli_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    # torch counts the divergence infinite as soon as an end of q touches [0, 1] (low >= 0 or
    # high <= 1), also where q is exactly U(0, 1): kept for identical results
    return _inf_where((q.low >= 0) | (q.high <= 1), result)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    # E[exp(-x / s)] = rate / (rate + 1 / s) for x ~ Exp(rate)
    mean_exp_neg_z = (q.loc / q.scale).exp() * p.rate / (p.rate + q.scale.reciprocal())
    return -p.entropy() + _gumbel_cross_entropy(p.rate.reciprocal(), mean_exp_neg_z, q)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() + _exponential_cross_entropy(p.mean, q)


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    # E[exp(-x / s)] = (b / (b + 1 / s))^a for x ~ Gamma(a, b)
    a, b = p.concentration, p.rate
    log_mgf = a * (b.log() - (b + q.scale.reciprocal()).log())
    mean_exp_neg_z = (q.loc / q.scale + log_mgf).exp()
    return -p.entropy() + _gumbel_cross_entropy(a / b, mean_exp_neg_z, q)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    return -p.entropy() + _normal_cross_entropy(p.mean, p.variance, q)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    return -p.entropy() + _normal_cross_entropy(p.mean, p.variance, q)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    return -p.entropy() + _normal_cross_entropy(p.loc, 2 * p.scale.pow(2), q)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    # E[exp(-z)] for z = (x - loc_q) / s, x ~ N(m, sigma^2): exp(-(m - loc_q) / s + sigma^2 / (2 s^2))
    mean_exp_neg_z = (-(p.loc - q.loc) / q.scale + 0.5 * (p.scale / q.scale).pow(2)).exp()
    return -p.entropy() + _gumbel_cross_entropy(p.loc, mean_exp_neg_z, q)


def _pareto_moments(p):
    """(E[x] where alpha > 1, Var[x] where alpha > 2, E[log x]) for x ~ Pareto(scale, alpha);
    the moments are not finite elsewhere (the caller masks those entries)."""
    a, s = p.alpha, p.scale
    mean = a * s / (a - 1)
    var = a * s.pow(2) / ((a - 1).pow(2) * (a - 2))
    return mean, var, s.log() + a.reciprocal()


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    mean, _, _ = _pareto_moments(p)
    return _inf_where(p.alpha <= 1, -p.entropy() + _exponential_cross_entropy(mean, q))


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    mean, _, mean_log = _pareto_moments(p)
    return _inf_where(p.alpha <= 1, -p.entropy() + _gamma_cross_entropy(mean, mean_log, q))


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    mean, var, _ = _pareto_moments(p)
    return _inf_where(p.alpha <= 2, -p.entropy() + _normal_cross_entropy(mean, var, q))


def _uniform_mean_log(low, high):
    """E[log x] for x ~ U(low, high), 0 <= low < high."""
    return (_x_log_x(high) - _x_log_x(low)) / (high - low) - 1


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    mean_log = _uniform_mean_log(p.low, p.high)
    mean_log1m = _uniform_mean_log(1 - p.high, 1 - p.low)
    result = -p.entropy() + _beta_cross_entropy(mean_log, mean_log1m, q)
    return _inf_where((p.high > 1) | (p.low < 0), result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuousbernoulli(p, q):
    result = -p.entropy() + _cb_cross_entropy(p.mean, q)
    # as torch: infinite as soon as p reaches an end of [0, 1] (high >= 1 or low <= 0)
    return _inf_where((p.high >= 1) | (p.low <= 0), result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    # E[exp(-z)] = s / (high - low) (exp(-z_low) - exp(-z_high)), z = (x - loc) / s
    z_low, z_high = (p.low - q.loc) / q.scale, (p.high - q.loc) / q.scale
    mean_exp_neg_z = q.scale / (p.high - p.low) * ((-z_low).exp() - (-z_high).exp())
    return -p.entropy() + _gumbel_cross_entropy(p.mean, mean_exp_neg_z, q)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    result = -p.entropy() + _pareto_cross_entropy(_uniform_mean_log(p.low, p.high), q)
    return _inf_where(p.low < q.scale, result)
