"""The ExponentialFamily base class (torch.distributions.exp_family.ExponentialFamily)."""
import kindle
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """A distribution of an exponential family, p(x; theta) = exp(<t(x), theta> - F(theta) + k(x)).

    A subclass gives its natural parameters theta (`_natural_params`), the log normaliser F
    (`_log_normalizer`) and, for the entropy, the expected carrier measure E[k(x)]
    (`_mean_carrier_measure`). From them the entropy and the KL divergence between two members of
    one family follow as Bregman divergences of F, whose gradient (the mean of t(x)) is taken by
    autograd (Nielsen & Nock, "Entropies and cross-entropies of exponential families")."""

    @property
    def _natural_params(self):
        """The natural parameters, a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """F(theta), the log normaliser, at the given natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """E[k(x)], the expected carrier measure."""
        raise NotImplementedError

    def entropy(self):
        """H = F(theta) - <theta, grad F(theta)> - E[k(x)]."""
        result = -self._mean_carrier_measure
        thetas = [t.detach().requires_grad_() for t in self._natural_params]
        log_norm = self._log_normalizer(*thetas)
        grads = kindle.autograd.grad(log_norm.sum(), thetas, create_graph=True)
        result = result + log_norm
        for theta, g in zip(thetas, grads):
            result = result - (theta * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
