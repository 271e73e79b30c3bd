"""torch.nn.functional ops composed in Python from Kindle's ops (the in-place activation forms,
feature dropout), and the Python signatures of those that moved into the core (csrc/nn:
shrinkage, local_response_norm, the soft-margin losses, rrelu, max_unpool, gumbel_softmax, pdist,
feature_alpha_dropout). Autograd flows through
the ops they call. Random ones draw as torch's CPU kernels do (the same distributions over the
same elements in the same order), so a seed gives torch's values."""
import warnings

from .. import _C
from . import functional as F

__all__ = ["softshrink", "hardshrink", "gumbel_softmax", "local_response_norm", "soft_margin_loss",
           "multilabel_soft_margin_loss", "rrelu", "rrelu_", "pdist", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "feature_alpha_dropout", "upsample_bilinear", "upsample_nearest", "relu_", "elu_", "leaky_relu_",
           "hardtanh_", "threshold_", "selu_", "celu_", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "max_pool3d_with_indices", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]


def softshrink(input, lambd=0.5):  # noqa: A002
    return _C._nn.softshrink(input, lambd)


def hardshrink(input, lambd=0.5):  # noqa: A002
    return _C._nn.hardshrink(input, lambd)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):  # noqa: ARG001  (eps: deprecated, unused, as torch)
    return _C._nn.gumbel_softmax(logits, float(tau), hard, dim)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):  # noqa: A002
    return _C._nn.local_response_norm(input, size, alpha, beta, k)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    if isinstance(input, _C.Tensor) and isinstance(target, _C.Tensor) and input.shape != target.shape:
        input, target = _C.broadcast_tensors(input, target)  # torch's kernel broadcasts  # noqa: A001
    return _C._nn.soft_margin_loss(input, target, F._reduction(size_average, reduce, reduction))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                reduction="mean"):
    return _C._nn.multilabel_soft_margin_loss(input, target, weight, F._reduction(size_average, reduce, reduction))


def _rrelu(input, lower, upper, training, inplace, generator=None):  # noqa: A002
    """The C++ op draws torch's slopes (see ops.yaml); inplace writes the result back."""
    if inplace:
        return input.copy_(_C._nn.rrelu(input.clone(), lower, upper, training, generator=generator))
    return _C._nn.rrelu(input, lower, upper, training, generator=generator)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):  # noqa: A002
    return _rrelu(input, lower, upper, training, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):  # noqa: A002
    return _rrelu(input, lower, upper, training, True)


def pdist(input, p=2):  # noqa: A002
    return _C._nn.pdist(input, float(p))


def _unpool(fn, input, indices, kernel_size, stride, padding, output_size, n):  # noqa: A002
    return fn(input, indices, F._pair(kernel_size, n), [] if stride is None else F._pair(stride, n),
              F._pair(padding, n), None if output_size is None else [int(v) for v in output_size])


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _unpool(_C._nn.max_unpool1d, input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _unpool(_C._nn.max_unpool2d, input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _unpool(_C._nn.max_unpool3d, input, indices, kernel_size, stride, padding, output_size, 3)


def _feature_noise(input, p):  # noqa: A002
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = list(input.shape[:2]) + [1] * (input.dim() - 2)
    return _C.empty(shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)


def _check_p(p):
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _feature_dropout(input, p, train, inplace):  # noqa: A002
    """torch.feature_dropout: whole channels zeroed with probability p, the rest scaled by 1/(1-p)."""
    _check_p(p)
    if not train or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0) if inplace else input * 0
    noise = _feature_noise(input, p).div_(1 - p)
    return input.mul_(noise) if inplace else input * noise


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    """Alpha dropout of whole channels (the core's op); inplace writes the result back."""
    out = _C._nn.feature_alpha_dropout(input, p, training)
    return input.copy_(out) if inplace and out is not input else out


def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=3)
    return F.interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=3)
    return F.interpolate(input, size, scale_factor, mode="nearest")


def relu_(input):  # noqa: A002
    return F.relu(input, inplace=True)


def elu_(input, alpha=1.0):  # noqa: A002
    return F.elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01):  # noqa: A002
    return F.leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):  # noqa: A002
    return F.hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold, value):  # noqa: A002
    return F.threshold(input, threshold, value, inplace=True)


def selu_(input):  # noqa: A002
    return F.selu(input, inplace=True)


def celu_(input, alpha=1.0):  # noqa: A002
    return F.celu(input, alpha, inplace=True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
                            return_indices=False):  # noqa: ARG001
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
                            return_indices=False):  # noqa: ARG001
    return F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
                            return_indices=False):  # noqa: ARG001
    return F.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):  # noqa: A002,ARG001
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):  # noqa: A002,ARG001
    return F.adaptive_max_pool2d(input, output_size, return_indices=True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):  # noqa: A002,ARG001
    return F.adaptive_max_pool3d(input, output_size, return_indices=True)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                                       return_indices=False, _random_samples=None):  # noqa: ARG001
    return F.fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                                       return_indices=False, _random_samples=None):  # noqa: ARG001
    return F.fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)
