"""The random ops the distributions sample with: kindle._standard_gamma (with the implicit
reparameterisation gradient), kindle.poisson, kindle.binomial and kindle._sample_dirichlet.
Each draws from kindle's generator (poisson and binomial: or the one given) with vectorised rejection loops over the elements still
pending, so a seed reproduces a run."""
import kindle
from kindle.autograd import Function
from .utils import _dtype_name, _require_floating


def _draw_gamma(alpha):
    """Gamma(alpha, 1) samples (Marsaglia & Tsang's squeeze method; alpha < 1 through
    Gamma(alpha + 1) * U^(1/alpha)), computed in float64."""
    a = alpha.detach().to(kindle.float64).reshape(-1)
    out = kindle.full_like(a, float("nan"))
    out[a == 0] = 0.0
    out[a == float("inf")] = float("inf")
    valid = (a > 0) & (a < float("inf"))
    boost = valid & (a < 1)
    a1 = kindle.where(boost, a + 1, a)
    d = a1 - 1.0 / 3.0
    c = (9.0 * d).rsqrt()
    pending = kindle.nonzero(valid).reshape(-1)
    while pending.numel():
        dd, cc = d[pending], c[pending]
        x = kindle.randn(pending.shape, dtype=kindle.float64)
        v = (1 + cc * x) ** 3
        u = kindle.rand(pending.shape, dtype=kindle.float64)
        ok = (v > 0) & (u.log() < 0.5 * x * x + dd - dd * v + dd * v.clamp(min=1e-300).log())
        out[pending[ok]] = (dd * v)[ok]
        pending = pending[~ok]
    idx = kindle.nonzero(boost).reshape(-1)
    if idx.numel():
        u = kindle.rand(idx.shape, dtype=kindle.float64)
        out[idx] = out[idx] * u.pow(1.0 / a[idx])
    return out.reshape(alpha.shape)


def _gamma_sample_grad(alpha, z):
    """dz/dalpha for z ~ Gamma(alpha, 1) with z held at its quantile: -(dP/dalpha) / (dP/dz),
    P the regularised lower incomplete gamma. dP/dalpha by central differences in float64
    (P is computed to double precision); above alpha = 1e4 the normal limit 1 + (z - a)/(2a)."""
    a = alpha.detach().to(kindle.float64)
    x = z.detach().to(kindle.float64).clamp(min=1e-300)
    h = a * 1e-5
    dp_da = (kindle.igamma(a + h, x) - kindle.igamma(a - h, x)) / (2 * h)
    dp_dz = ((a - 1) * x.log() - x - kindle.lgamma(a)).exp()
    g = -dp_da / dp_dz
    g = kindle.where(a > 1e4, 1 + (x - a) / (2 * a), g)
    g = kindle.where(kindle.isfinite(g), g, kindle.zeros_like(g))
    return g.to(alpha.dtype)


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx, alpha):
        z = _draw_gamma(alpha).to(alpha.dtype)
        ctx.save_for_backward(alpha, z)
        return z

    @staticmethod
    def backward(ctx, grad):
        alpha, z = ctx.saved_tensors
        return grad * _gamma_sample_grad(alpha, z)


def _standard_gamma(alpha):
    """Samples of Gamma(alpha, 1), differentiable in alpha (implicit reparameterisation)."""
    _require_floating(alpha.dtype, "gamma_cpu")
    return _StandardGamma.apply(alpha)


def _standard_gamma_grad(alpha, z):
    return _gamma_sample_grad(alpha, z)


def _sample_dirichlet(concentration):
    """Dirichlet samples along the last dim: normalised Gamma draws, differentiable."""
    _require_floating(concentration.dtype, "dirichlet")
    g = _standard_gamma(concentration)
    return g / g.sum(-1, keepdim=True)


def poisson(rates, generator=None):
    """Poisson(rates) counts, in the dtype of rates: products of uniforms below rate 10, Hörmann's
    transformed rejection (PTRS) above."""
    _require_floating(rates.dtype, "poisson_cpu")
    r = rates.detach().to(kindle.float64).reshape(-1)
    if bool((r < 0).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    out = kindle.zeros_like(r)
    out[r != r] = float("nan")
    # small rates: count uniforms until their product drops below exp(-rate)
    pending = kindle.nonzero((r > 0) & (r < 10)).reshape(-1)
    limit = (-r[pending]).exp()
    prod = kindle.rand(pending.shape, dtype=kindle.float64, generator=generator)
    while pending.numel():
        going = prod > limit
        out[pending[going]] += 1
        pending, limit, prod = pending[going], limit[going], prod[going]
        prod = prod * kindle.rand(pending.shape, dtype=kindle.float64, generator=generator)
    # large rates: PTRS
    pending = kindle.nonzero(r >= 10).reshape(-1)
    while pending.numel():
        lam = r[pending]
        slam, loglam = lam.sqrt(), lam.log()
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        u = kindle.rand(pending.shape, dtype=kindle.float64, generator=generator) - 0.5
        v = kindle.rand(pending.shape, dtype=kindle.float64, generator=generator)
        us = 0.5 - u.abs()
        k = ((2 * a / us + b) * u + lam + 0.43).floor()
        quick = (us >= 0.07) & (v <= vr)
        log_accept = (v * inv_alpha / (a / (us * us) + b)).log() <= -lam + k * loglam - kindle.lgamma(k + 1)
        ok = quick | ((k >= 0) & ~((us < 0.013) & (v > us)) & log_accept)
        out[pending[ok]] = k[ok]
        pending = pending[~ok]
    return out.reshape(rates.shape).to(rates.dtype)


def binomial(count, prob, generator=None):
    """Binomial(count, prob) draws as sums of Bernoulli trials (chunks of 256 trials at a time)."""
    if not count.dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {_dtype_name(count.dtype)}")
    if not prob.dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for prob, got: {_dtype_name(prob.dtype)}")
    count, prob = kindle.broadcast_tensors(count, prob)
    n = count.detach().to(kindle.float64).reshape(-1)
    p = prob.detach().to(kindle.float64).reshape(-1)
    out = kindle.zeros_like(n)
    n_max = int(n.max().item()) if n.numel() else 0
    for start in range(0, n_max, 256):
        rows = min(256, n_max - start)
        trial = kindle.arange(start, start + rows, dtype=kindle.float64).unsqueeze(1)
        hits = (kindle.rand((rows, n.numel()), dtype=kindle.float64, generator=generator) < p) & (trial < n)
        out += hits.sum(0).to(kindle.float64)
    out[(p != p) | (n != n)] = float("nan")
    return out.reshape(count.shape).to(prob.dtype)
