"""MultivariateNormal and LowRankMultivariateNormal, over kindle.linalg's Cholesky and triangular
solves."""
import math

import kindle
from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import _require_floating, _standard_normal, broadcast_all, lazy_property

__all__ = ["MultivariateNormal", "LowRankMultivariateNormal", "LKJCholesky"]


def _batch_mv(bmat, bvec):
    return kindle.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """x^T (L L^T)^-1 x for batches of lower-triangular L and vectors x (broadcast)."""
    n = bx.size(-1)
    _require_floating(bL.dtype, "triangular_solve_cpu")
    batch = kindle.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bx.shape[:-1]))
    L = bL.expand(tuple(batch) + (n, n))
    x = bx.expand(tuple(batch) + (n,))
    sol = kindle.linalg.solve_triangular(L, x.unsqueeze(-1), upper=False).squeeze(-1)
    return sol.pow(2).sum(-1)


def _precision_to_scale_tril(P):
    Lf = kindle.linalg.cholesky(kindle.flip(P, (-2, -1)))
    L_inv = kindle.transpose(kindle.flip(Lf, (-2, -1)), -2, -1)
    Id = kindle.eye(P.shape[-1], dtype=P.dtype)
    return kindle.linalg.solve_triangular(L_inv, Id, upper=False)


class MultivariateNormal(Distribution):
    """The multivariate normal distribution, by covariance, precision or scale_tril."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        if scale_tril is not None:
            if scale_tril.dim() < 2:
                raise ValueError("scale_tril matrix must be at least two-dimensional, with optional leading batch "
                                 "dimensions")
            batch_shape = kindle.broadcast_shapes(tuple(scale_tril.shape[:-2]), tuple(loc.shape[:-1]))
            self.scale_tril = scale_tril.expand(tuple(batch_shape) + (-1, -1))
        elif covariance_matrix is not None:
            if covariance_matrix.dim() < 2:
                raise ValueError("covariance_matrix must be at least two-dimensional, with optional leading batch "
                                 "dimensions")
            batch_shape = kindle.broadcast_shapes(tuple(covariance_matrix.shape[:-2]), tuple(loc.shape[:-1]))
            self.covariance_matrix = covariance_matrix.expand(tuple(batch_shape) + (-1, -1))
        else:
            if precision_matrix.dim() < 2:
                raise ValueError("precision_matrix must be at least two-dimensional, with optional leading batch "
                                 "dimensions")
            batch_shape = kindle.broadcast_shapes(tuple(precision_matrix.shape[:-2]), tuple(loc.shape[:-1]))
            self.precision_matrix = precision_matrix.expand(tuple(batch_shape) + (-1, -1))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = kindle.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = kindle.Size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        cov_shape = batch_shape + self.event_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        if "covariance_matrix" in self.__dict__:
            new.covariance_matrix = self.covariance_matrix.expand(cov_shape)
        if "scale_tril" in self.__dict__:
            new.scale_tril = self.scale_tril.expand(cov_shape)
        if "precision_matrix" in self.__dict__:
            new.precision_matrix = self.precision_matrix.expand(cov_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return kindle.matmul(L, L.transpose(-2, -1)).expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        return kindle.cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            self._batch_shape + self._event_shape + self._event_shape)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=kindle.Size()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self):
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        if len(self._batch_shape) == 0:
            return H
        return H.expand(self._batch_shape)


class LowRankMultivariateNormal(Distribution):
    """N(loc, cov_factor cov_factor^T + diag(cov_diag)), through the capacitance matrix."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {tuple(event_shape)}")
        loc_ = loc.unsqueeze(-1)
        cov_diag_ = cov_diag.unsqueeze(-1)
        loc_, self.cov_factor, cov_diag_ = kindle.broadcast_tensors(loc_, cov_factor, cov_diag_)
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = self._capacitance(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    @staticmethod
    def _capacitance(W, D):
        m = W.size(-1)
        Wt_Dinv = W.transpose(-2, -1) / D.unsqueeze(-2)
        K = kindle.matmul(Wt_Dinv, W) + kindle.eye(m, dtype=W.dtype)
        return kindle.linalg.cholesky(K)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = kindle.Size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + self.cov_factor.shape[-1:])
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
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
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(
            self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        cov = kindle.matmul(W, W.transpose(-2, -1)) + kindle.diag_embed(self._unbroadcasted_cov_diag)
        return cov.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        return kindle.linalg.cholesky(self.covariance_matrix)

    @lazy_property
    def precision_matrix(self):
        return kindle.linalg.inv(self.covariance_matrix)

    def rsample(self, sample_shape=kindle.Size()):
        shape = self._extended_shape(sample_shape)
        W_shape = shape[:-1] + self.cov_factor.shape[-1:]
        eps_W = _standard_normal(W_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_D = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W) + \
            self._unbroadcasted_cov_diag.sqrt() * eps_D

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        # Woodbury: x^T (W W^T + D)^-1 x = x^T D^-1 x - |C^-1 W^T D^-1 x|^2, C the capacitance factor
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        Dinv_x = diff / D
        Wt_Dinv_x = _batch_mv(W.transpose(-2, -1), Dinv_x)
        C = self._capacitance_tril
        batch = kindle.broadcast_shapes(tuple(C.shape[:-2]), tuple(Wt_Dinv_x.shape[:-1]))
        m = C.shape[-1]
        sol = kindle.linalg.solve_triangular(C.expand(tuple(batch) + (m, m)),
                                             Wt_Dinv_x.expand(tuple(batch) + (m,)).unsqueeze(-1),
                                             upper=False).squeeze(-1)
        M = (diff * Dinv_x).sum(-1) - sol.pow(2).sum(-1)
        log_det = 2 * C.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M + log_det)

    def entropy(self):
        C = self._capacitance_tril
        log_det = 2 * C.diagonal(dim1=-2, dim2=-1).log().sum(-1) + self._unbroadcasted_cov_diag.log().sum(-1)
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        if len(self._batch_shape) == 0:
            return H
        return H.expand(self._batch_shape)


class LKJCholesky(Distribution):
    """The LKJ distribution over the Cholesky factors of correlation matrices (Lewandowski,
    Kurowicka & Joe, 2009), sampled by the onion method."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = kindle.Size((dim, dim))
        # the onion method's Beta draws: row i's squared norm off the diagonal
        from .continuous import Beta
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = kindle.arange(self.dim - 1, dtype=self.concentration.dtype)
        offset = kindle.cat([kindle.zeros((1,), dtype=offset.dtype), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = kindle.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=kindle.Size()):
        with kindle.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = kindle.randn(self._extended_shape(sample_shape), dtype=y.dtype).tril(-1)
            norm = u_normal.norm(dim=-1, keepdim=True)
            u_hypersphere = u_normal / norm
            u_hypersphere[..., 0, :] = 0.0  # the first row is 0/0
            w = y.sqrt() * u_hypersphere
            eps = kindle.finfo(w.dtype).tiny
            diag = (1 - (w ** 2).sum(-1)).clamp(min=eps).sqrt()
            return w + kindle.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = kindle.arange(2, self.dim + 1, dtype=self.concentration.dtype)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = kindle.lgamma(alpha) * dm1
        numerator = kindle.mvlgamma(alpha - 0.5, dm1)
        # the normaliser's pi term is D (D - 1)/4 log(pi); mvlgamma holds (D - 1)(D - 2)/4 of it
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized - (pi_constant + numerator - denominator)


def _mvdigamma(x, p):
    """The multivariate digamma: sum over i < p of digamma(x - i/2)."""
    return kindle.digamma(x.unsqueeze(-1) - kindle.arange(p, dtype=x.dtype).div(2).expand(tuple(x.shape) + (-1,))).sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution over positive-definite p x p matrices with df degrees of freedom,
    parameterised by the covariance, precision or Cholesky factor of the scale; rsample by the
    Bartlett decomposition (chi-squared diagonal, normal below it), reparameterised in df and the
    scale as torch's."""

    arg_constraints = {"covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky, "df": constraints.greater_than(0)}
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, (int, float)):
            batch_shape = tuple(param.shape[:-2])
            self.df = kindle.tensor(float(df), dtype=param.dtype).expand(batch_shape)
        else:
            batch_shape = tuple(kindle.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        event_shape = tuple(param.shape[-2:])
        p = event_shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        if scale_tril is not None:
            self.scale_tril = param.expand(batch_shape + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(batch_shape + (-1, -1))
        else:
            self.precision_matrix = param.expand(batch_shape + (-1, -1))
        if self.df.lt(p).any():
            import warnings
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < ndim.")
        super().__init__(kindle.Size(batch_shape), kindle.Size(event_shape), validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = kindle.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        from .continuous import Chi2
        self._dist_chi2 = Chi2(df=self.df.unsqueeze(-1) - kindle.arange(p, dtype=self._unbroadcasted_scale_tril.dtype)
                               .expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = kindle.Size(batch_shape)
        cov_shape = batch_shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        new._dist_chi2 = self._dist_chi2.expand(batch_shape + self.event_shape[-1:])
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        identity = kindle.eye(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype)
        return kindle.cholesky_solve(identity, self._unbroadcasted_scale_tril).expand(
            self._batch_shape + self._event_shape)

    @property
    def mean(self):
        return self.df.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self._event_shape[-1] - 1
        factor = kindle.where(factor <= 0, kindle.full_like(factor, float("nan")), factor)
        return factor.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self.df.view(self._batch_shape + (1, 1)) * (V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=kindle.Size()):
        p = self._event_shape[-1]
        noise = kindle.diag_embed(self._dist_chi2.rsample(sample_shape).sqrt())
        i, j = kindle.tril_indices(p, p, offset=-1)
        below = _standard_normal(tuple(self._extend_shape_for(sample_shape)) + (i.shape[0],),
                                 dtype=noise.dtype, device=None)
        noise = _fill_below(noise, i, j, below)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def _extend_shape_for(self, sample_shape):
        return kindle.Size(sample_shape) + self._batch_shape

    def rsample(self, sample_shape=kindle.Size(), max_try_correction=None):
        """Resamples the draws whose matrix came out singular (possible for df < p), up to
        max_try_correction times (default: none, as torch's default of None means 0 retries)."""
        sample = self._bartlett_sampling(sample_shape)
        tries = max_try_correction or 0
        for _ in range(tries):
            ok = constraints.positive_definite.check(sample)
            if bool(ok.all()):
                break
            fresh = self._bartlett_sampling(sample_shape)
            sample = kindle.where(ok.view(tuple(ok.shape) + (1, 1)), sample, fresh)
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (-nu * (p * math.log(2) / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                - kindle.mvlgamma(nu / 2, p=p)
                + (nu - (p + 1)) / 2 * kindle.linalg.slogdet(value).logabsdet
                - kindle.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return ((p + 1) * (p * math.log(2) / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                + kindle.mvlgamma(nu / 2, p=p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        # the sufficient statistics are X and log|X|
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        # x = -V^-1 / 2, y = (nu - p - 1) / 2: F = nu/2 (p log 2 + log|V|) + mvlgamma(nu / 2, p)
        p = self._event_shape[-1]
        half_nu = y + (p + 1) / 2
        return half_nu * (-kindle.linalg.slogdet(-2 * x).logabsdet + p * math.log(2)) + kindle.mvlgamma(half_nu, p=p)


def _fill_below(noise, i, j, values):
    """noise with the strictly lower triangle (positions i, j) set to values (out of place, so
    the chi-squared diagonal keeps its gradient)."""
    p = noise.shape[-1]
    flat_index = (i * p + j)
    lower = kindle.zeros(tuple(values.shape[:-1]) + (p * p,), dtype=noise.dtype)
    lower = lower.index_copy_(-1, flat_index, values).view(tuple(values.shape[:-1]) + (p, p))
    return noise + lower
