"""torch.nn.utils.parametrizations: weight_norm, spectral_norm and orthogonal as parametrizations
(see parametrize.py), with torch's state-dict layout:
  weight_norm    parametrizations.weight.original0 (g), .original1 (v)
  spectral_norm  parametrizations.weight.original, parametrizations.weight.0._u / ._v
  orthogonal     parametrizations.weight.original, parametrizations.weight.0.base"""
from enum import Enum, auto

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from .spectral_norm import _is_transposed_conv
from .weight_norm import _norm_except_dim, _weight_norm

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ---- orthogonal

class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _householder_product(a, tau):
    """linalg.householder_product(a, tau) for real a of shape (..., n, k): the first k columns of
    H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^T, v_i the i-th column of a below the diagonal
    with an implicit 1 on it. One rank-1 update per reflector, each a batched matrix op."""
    n, k = a.size(-2), a.size(-1)
    eye = _C.eye(n, k, dtype=a.dtype)
    vs = a.tril(-1) + eye
    q = eye.expand(*a.shape).clone() if a.dim() > 2 else eye
    for i in reversed(range(k)):
        v = vs[..., :, i:i + 1]
        q = q - tau[..., i:i + 1].unsqueeze(-1) * (v @ (v.mT @ q))
    return q


def _qr_q(a):
    """Q of the QR decomposition of a real (..., n, k), n >= k, with R's diagonal made positive,
    as torch's _make_orthogonal does (called without gradient: right_inverse)."""
    from ... import linalg  # lazily: kindle.nn is imported before kindle.linalg
    q, r = linalg.qr(a.detach())
    d = r.diagonal(dim1=-2, dim2=-1).sign()
    d = _C.where(d == 0, _C.ones_like(d), d)
    return q * d.unsqueeze(-2)


def _is_orthogonal(q):
    n, k = q.size(-2), q.size(-1)
    eye = _C.eye(k, dtype=q.dtype)
    from ..._torch_api import finfo  # lazily: kindle.nn is imported before it
    eps = 10.0 * n * finfo(q.dtype).eps
    return bool(_C.allclose(q.mT @ q, eye.expand_as(q.mT @ q), atol=eps))


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex():
            raise NotImplementedError("orthogonal: complex tensors are not supported by Kindle yet")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):  # noqa: N803
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT  # noqa: N806
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            # the lower triangle of X (embedded in an n x n matrix) gives a skew-symmetric A
            X = X.tril()  # noqa: N806
            if n != k:
                X = _C.cat([X, _C.zeros(*(tuple(X.shape[:-2]) + (n, n - k)), dtype=X.dtype)], dim=-1)  # noqa: N806
            A = X - X.mT  # noqa: N806
            from ... import linalg  # lazily: kindle.nn is imported before kindle.linalg
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                q = linalg.matrix_exp(A)
            else:  # the Cayley retraction (I + A/2)(I - A/2)^-1
                eye = _C.eye(n, dtype=A.dtype)
                q = linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                q = q[..., :k]
        else:
            a = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = _householder_product(a, tau)
            # X's diagonal holds signs (+-1); casting keeps them out of the gradient, as in torch
            q = q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            q = self.base @ q
        if transposed:
            q = q.mT
        return q

    def right_inverse(self, Q):  # noqa: N803
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT  # noqa: N806
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                raise NotImplementedError("orthogonal: use_trivialization=False with householder needs geqrf, "
                                          "which Kindle does not have yet")  # orthogonal() refuses it earlier
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _qr_q(Q)  # noqa: N806
            else:
                # complete Q to a full n x n orthogonal matrix with random columns, as torch does
                N = _C.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype)  # noqa: N806
                Q = _qr_q(_C.cat([Q, N], dim=-1))  # noqa: N806
            self.base = Q
            # -Id: householder(zeros) is then the identity times the signs on the diagonal
            neg_id = _C.zeros_like(q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrains `module.<name>` to (semi-)orthogonal matrices through torch's maps:
    'matrix_exp' (the default for square matrices), 'cayley' and 'householder'."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    if orth_enum == _OrthMaps.householder and not use_trivialization:
        # torch starts from geqrf(weight); silently starting elsewhere would change the result
        raise NotImplementedError("orthogonal: householder with use_trivialization=False needs geqrf, which Kindle "
                                  "does not have yet")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ---- weight_norm

class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """weight = g * v / ||v|| (norm over every dim but `dim`; dim=None: the whole tensor), with
    g = original0 and v = original1. Old checkpoints with weight_g / weight_v keys still load."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# ---- spectral_norm

class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # start from a reasonable estimate, as torch does
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        with no_grad():
            # in place: the buffers carry the estimate from one forward to the next
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(_C.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_C.mv(weight_mat.H, self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # clones, so that backward sees the u and v of this forward, not later updates
        u = self._u.clone()
        v = self._v.clone()
        sigma = _C.vdot(u, _C.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """weight / sigma(weight), sigma the largest singular value estimated by power iteration;
    the estimate (buffers _u, _v) advances in training mode only."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _is_transposed_conv(module) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
