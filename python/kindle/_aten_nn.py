"""The torch.* names of neural-network ops (torch.conv2d, torch.batch_norm, torch.embedding,
torch.kl_div, ...) with ATen's argument orders, which differ from torch.nn.functional's in places
(embedding takes the weight first, batch_norm the affine parameters before the running stats,
losses an integer reduction). Each maps onto the same op as its nn.functional form."""
from . import _C
from .nn import functional as F

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "layer_norm", "group_norm", "batch_norm", "instance_norm", "rms_norm", "dropout", "dropout_",
           "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_", "feature_alpha_dropout",
           "feature_alpha_dropout_", "embedding", "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d", "pixel_shuffle", "pixel_unshuffle",
           "channel_shuffle", "native_channel_shuffle", "prelu", "selu", "selu_", "celu", "celu_", "rrelu",
           "rrelu_", "hardshrink", "threshold_", "bilinear", "cosine_similarity", "pairwise_distance", "pdist",
           "kl_div", "binary_cross_entropy_with_logits", "cosine_embedding_loss", "hinge_embedding_loss",
           "margin_ranking_loss", "poisson_nll_loss", "triplet_margin_loss", "ctc_loss", "constant_pad_nd",
           "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "rsub", "native_layer_norm",
           "native_batch_norm", "native_dropout", "conv_tbc"]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(r):
    """ATen's integer reduction (0 none, 1 mean, 2 sum); the string forms are accepted too."""
    if isinstance(r, str):
        return r
    if r not in _REDUCTIONS:
        raise ValueError(f"{r} is not a valid value for reduction")
    return _REDUCTIONS[r]


conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d
pixel_shuffle, pixel_unshuffle, channel_shuffle = F.pixel_shuffle, F.pixel_unshuffle, F.channel_shuffle
native_channel_shuffle = F.channel_shuffle
prelu, bilinear, cosine_similarity, pairwise_distance = F.prelu, F.bilinear, F.cosine_similarity, F.pairwise_distance
adaptive_avg_pool1d = F.adaptive_avg_pool1d


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):  # noqa: A002,ARG001
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def native_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):  # noqa: A002
    """(output, mean, rstd), the statistics with the normalised dims kept as size 1."""
    n = len(normalized_shape) if not isinstance(normalized_shape, int) else 1
    dims = list(range(input.dim() - n, input.dim()))
    x = input.to(_C.float32) if input.dtype in (_C.float16, _C.bfloat16) else input
    mean = x.mean(dims, keepdim=True)
    rstd = _C.rsqrt(x.var(dims, unbiased=False, keepdim=True) + eps)
    return F.layer_norm(input, normalized_shape, weight, bias, eps), mean, rstd


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):  # noqa: A002,ARG001
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):  # noqa: A002,ARG001
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):  # noqa: A002
    """(output, save_mean, save_invstd): the batch statistics in training, empty tensors otherwise."""
    out = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = _C.empty(0, dtype=input.dtype, device=input.device)
        return out, empty, empty
    dims = [0] + list(range(2, input.dim()))
    mean = input.mean(dims)
    invstd = _C.rsqrt(input.var(dims, unbiased=False) + eps)
    return out, mean, invstd


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,  # noqa: A002
                  cudnn_enabled):  # noqa: ARG001
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    return F.rms_norm(input, normalized_shape, weight, eps)


def dropout(input, p, train):  # noqa: A002
    return F.dropout(input, p, train)


def dropout_(input, p, train):  # noqa: A002
    return F.dropout(input, p, train, inplace=True)


def native_dropout(input, p, train):  # noqa: A002
    """(output, mask): the kept elements scaled by 1/(1-p), and where they were kept."""
    if not train or p == 0:
        return input.clone(), _C.ones_like(input, dtype=_C.bool)
    if p == 1:
        return input * 0, _C.zeros_like(input, dtype=_C.bool)
    mask = _C.empty_like(input).bernoulli_(1 - p).to(_C.bool)
    return input * mask / (1 - p), mask


def alpha_dropout(input, p, train):  # noqa: A002
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):  # noqa: A002
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_dropout(input, p, train):  # noqa: A002
    return F._feature_dropout(input, p, train, False)


def feature_dropout_(input, p, train):  # noqa: A002
    return F._feature_dropout(input, p, train, True)


def feature_alpha_dropout(input, p, train):  # noqa: A002
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):  # noqa: A002
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def _default_stride(stride):
    return None if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else stride


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):  # noqa: A002
    return F.max_pool1d(input, kernel_size, _default_stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):  # noqa: A002
    return F.max_pool1d(input, kernel_size, _default_stride(stride), padding, dilation, ceil_mode, return_indices=True)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):  # noqa: A002
    return F.max_pool2d(input, kernel_size, _default_stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):  # noqa: A002
    return F.max_pool3d(input, kernel_size, _default_stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):  # noqa: A002
    return F.avg_pool1d(input, kernel_size, _default_stride(stride), padding, ceil_mode, count_include_pad)


def adaptive_max_pool1d(input, output_size):  # noqa: A002
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def selu(input):  # noqa: A002
    return F.selu(input)


def selu_(input):  # noqa: A002
    return F.selu(input, inplace=True)


def celu(input, alpha=1.0):  # noqa: A002
    return F.celu(input, alpha)


def celu_(input, alpha=1.0):  # noqa: A002
    return F.celu(input, alpha, inplace=True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):  # noqa: A002
    return F._rrelu(input, lower, upper, training, False, generator)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):  # noqa: A002
    return F._rrelu(input, lower, upper, training, True, generator)


def hardshrink(input, lambd=0.5):  # noqa: A002
    return F.hardshrink(input, lambd)


def threshold_(input, threshold, value):  # noqa: A002
    return F.threshold(input, threshold, value, inplace=True)


def pdist(input, p=2):  # noqa: A002
    return F.pdist(input, p)


def kl_div(input, target, reduction=1, *, log_target=False):  # noqa: A002
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):  # noqa: A002
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):  # noqa: A002
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):  # noqa: A002
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, reduction=1):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction), zero_infinity)


def constant_pad_nd(input, pad, value=0):  # noqa: A002
    return F.pad(input, pad, "constant", value)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """hx is (h, c), as torch.lstm_cell takes it; returns (h', c')."""
    h, c = hx
    return tuple(_C._nn.lstm_cell(input, h, c, w_ih, w_hh, b_ih, b_hh))


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    return _C._nn.gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    return _C._nn.rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    return _C._nn.rnn_relu_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


def rsub(input, other, alpha=1):  # noqa: A002
    """other - alpha * input (torch.rsub)."""
    return _C.sub(other, input, alpha=alpha)


def conv_tbc(input, weight, bias, pad=0):  # noqa: A002
    """A 1-d convolution over (time, batch, channels) input with a (width, in, out) weight."""
    out = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)
