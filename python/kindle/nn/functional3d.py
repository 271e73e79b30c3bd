"""The 3-d layers of torch.nn.functional: PyTorch's Python signatures mapped onto the C++ ops
(conv3d, conv_transpose3d, max/avg/adaptive/lp pooling: csrc/nn/conv3d.cpp; dropout3d:
csrc/nn/layers.cpp), which the C++ front end's Conv3d, MaxPool3d, ... call too."""
from .. import _C
from . import functional as F

__all__ = ["conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
           "lp_pool3d", "dropout3d"]

_nn = _C._nn


def _three(x):
    return F._pair(x, 3)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    if isinstance(padding, str):
        from .functional import _warn_same_padding
        _warn_same_padding(padding, weight, dilation, 3)
        return _nn._conv3d_padding(input, weight, bias, _three(stride), padding, _three(dilation), groups)
    return _nn.conv3d(input, weight, bias, _three(stride), _three(padding), _three(dilation), groups)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    return _nn.conv_transpose3d(input, weight, bias, _three(stride), _three(padding), _three(output_padding), groups,
                                _three(dilation))


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    values, indices = _nn.max_pool3d_with_indices(input, _three(kernel_size), F._stride(stride, kernel_size, 3),
                                                  _three(padding), _three(dilation), ceil_mode)
    return (values, indices) if return_indices else values


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    return _nn.avg_pool3d(input, _three(kernel_size), F._stride(stride, kernel_size, 3), _three(padding), ceil_mode,
                          count_include_pad, divisor_override)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    return _nn.lp_pool3d(input, float(norm_type), _three(kernel_size), [] if stride is None else _three(stride),
                         ceil_mode)


def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    return _nn.adaptive_avg_pool3d(input, F._out_size(output_size, input, 3))


def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002
    values, indices = _nn.adaptive_max_pool3d(input, F._out_size(output_size, input, 3))
    return (values, indices) if return_indices else values


def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    if not 0 <= p <= 1:
        raise ValueError(f"dropout3d: dropout probability has to be between 0 and 1, but got {p}")
    if input.dim() not in (4, 5):  # torch: a warning, then dim 0 as the channels of one example
        F._warn_deprecated_rank("dropout3d", input, 3)
        if not training or p == 0:
            return input
        x = input.unsqueeze(0)
        shape = tuple(x.shape[:2]) + (1,) * (x.dim() - 2)
        mask = (_C.zeros(shape, dtype=x.dtype, device=x.device) if p == 1 else
                _C.empty(shape, dtype=x.dtype, device=x.device).bernoulli_(1 - p) / (1 - p))
        return input.mul_(mask.squeeze(0)) if inplace else (x * mask).squeeze(0)
    if not training or p == 0:
        return input
    return F._act(_nn.dropout3d, input, inplace, p, training)
