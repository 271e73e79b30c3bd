"""torch.nn.functional for Kindle: PyTorch's names, arguments and defaults. Every op is C++
(kindle._C and kindle._C._nn); this module only maps PyTorch's Python signatures onto them."""
import sys as _sys
import warnings

from .. import _C
from ._reduction import legacy_get_string as _legacy_get_string

try:
    from numpy import ndarray as _ndarray
except ImportError:  # pragma: no cover
    class _ndarray:  # noqa: N801
        pass

_nn = _C._nn


def _reduction(size_average, reduce, reduction):
    """The legacy size_average/reduce arguments, as PyTorch maps them (warning with the reduction
    they amount to); the deprecated reduction='elementwise_mean' is 'mean' (with a warning)."""
    if size_average is None and reduce is None:
        if reduction == "elementwise_mean":
            warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                          stacklevel=2)
            return "mean"
        return reduction
    return _legacy_get_string(size_average, reduce)


# torch's names of the dtypes in its kernels' messages ("Found dtype Double but expected Float")
_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                 "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
                 "complex64": "ComplexFloat", "complex128": "ComplexDouble", "complex32": "ComplexHalf"}


def _scalar_name(dtype):
    name = str(dtype).rpartition(".")[2]
    return _SCALAR_NAMES.get(name, name)


def _from_aten():
    """Whether the F function calling this was called by kindle._aten_nn (torch.kl_div,
    torch.group_norm, ...: the ATen ops, which lack some of torch.nn.functional's Python-level
    warnings and checks). Frames: this, the F function, its _name_errors wrapper, the caller."""
    try:
        return _sys._getframe(3).f_globals.get("__name__") == "kindle._aten_nn"
    except ValueError:  # a shallower stack: not called from there
        return False


def _warn_size_mismatch(input, target):  # noqa: A002
    """mse/l1/smooth_l1/huber: a target that only broadcasts to the input is most likely a bug."""
    if target.size() != input.size():
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
                      f"This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      f"same size.", stacklevel=4)


def _inplace(fn, input, *args):  # noqa: A002
    """inplace=True: the op runs on a copy (which it may save for backward), then the result is
    written back, so autograd sees one in-place write of the input."""
    return input.copy_(fn(input.clone(), *args))


def _act(fn, input, inplace, *args):  # noqa: A002
    return _inplace(fn, input, *args) if inplace else fn(input, *args)


# ---- activations

def relu(input, inplace=False):  # noqa: A002
    return input.relu_() if inplace else input.relu()


def relu6(input, inplace=False):  # noqa: A002
    return _C.hardtanh_(input, 0.0, 6.0) if inplace else _nn.relu6(input)


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    return _act(_C.elu, input, inplace, alpha)


def selu(input, inplace=False):  # noqa: A002
    return _act(_nn.selu, input, inplace)


def celu(input, alpha=1.0, inplace=False):  # noqa: A002
    return _act(_nn.celu, input, inplace, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    return _act(_C.leaky_relu, input, inplace, negative_slope)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002
    if min_val > max_val:
        raise ValueError("hardtanh: min_val cannot be greater than max_val")
    return _C.hardtanh_(input, min_val, max_val) if inplace else _C.hardtanh(input, min_val, max_val)


def gelu(input, approximate="none"):  # noqa: A002
    return _C.gelu(input, approximate=approximate)


def silu(input, inplace=False):  # noqa: A002
    return _C.silu_(input) if inplace else _C.silu(input)


def mish(input, inplace=False):  # noqa: A002
    return _act(_nn.mish, input, inplace)


def hardswish(input, inplace=False):  # noqa: A002
    return _act(_nn.hardswish, input, inplace)


def hardsigmoid(input, inplace=False):  # noqa: A002
    return _act(_nn.hardsigmoid, input, inplace)


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    return _C.softplus(input, beta, threshold)


def softsign(input):  # noqa: A002
    return _nn.softsign(input)


def tanhshrink(input):  # noqa: A002
    return _nn.tanhshrink(input)


def threshold(input, threshold, value, inplace=False):  # noqa: A002
    return _act(_C.threshold, input, inplace, threshold, value)


def logsigmoid(input):  # noqa: A002
    return _nn.logsigmoid(input)


def sigmoid(input):  # noqa: A002
    return input.sigmoid()


def tanh(input):  # noqa: A002
    return input.tanh()


def _softmax_dim(ndim, stacklevel=3, name="softmax"):
    # one frame more than torch's: the wrapper that names errors (_name_errors)
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=stacklevel + 1)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    if dim is None:
        dim = _softmax_dim(input.dim(), _stacklevel)
    return _C.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    if dim is None:
        dim = _softmax_dim(input.dim(), _stacklevel, "log_softmax")
    return _C.log_softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    if dim is None:
        dim = _softmax_dim(input.dim(), _stacklevel, "softmin")
    return _nn.softmin(input, dim, dtype)


def glu(input, dim=-1):  # noqa: A002
    return _nn.glu(input, dim)


def prelu(input, weight):  # noqa: A002
    return _nn.prelu(input, weight)


# ---- linear

def linear(input, weight, bias=None):  # noqa: A002
    return _nn.linear(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    return _nn.bilinear(input1, input2, weight, bias)


# ---- losses

def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):  # noqa: A002
    _warn_size_mismatch(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if weight is None:
        dtype = _C.promote_types(input.dtype, target.dtype)
        if not (dtype.is_floating_point or dtype.is_complex):  # torch's mse kernel has no integer version
            raise NotImplementedError(f"\"mse_cpu\" not implemented for '{_scalar_name(dtype)}'")
    return _nn.mse_loss(input, target, reduction, weight)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):  # noqa: A002
    _warn_size_mismatch(input, target)
    return _nn.l1_loss(input, target, _reduction(size_average, reduce, reduction), weight)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):  # noqa: A002
    _warn_size_mismatch(input, target)
    return _nn.smooth_l1_loss(input, target, _reduction(size_average, reduce, reduction), beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):  # noqa: A002
    _warn_size_mismatch(input, target)
    return _nn.huber_loss(input, target, _reduction(None, None, reduction), delta, weight)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
             reduction="mean"):
    return _nn.nll_loss(input, target, weight, ignore_index, _reduction(size_average, reduce, reduction))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
                  reduction="mean", label_smoothing=0.0):
    return _nn.cross_entropy(input, target, weight, ignore_index, _reduction(size_average, reduce, reduction),
                             label_smoothing)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    reduction = _reduction(size_average, reduce, reduction)
    # (a target of another size is the C++ op's ValueError, as in torch, which checks that first)
    if isinstance(input, _C.Tensor) and isinstance(target, _C.Tensor) and target.size() == input.size():
        if target.dtype != input.dtype:
            raise RuntimeError(f"Found dtype {_scalar_name(target.dtype)} but expected {_scalar_name(input.dtype)}")
        # torch's kernel checks every target (NaN included) as it checks every input
        if target.numel() and target.device.type != "meta" and not bool(((target >= 0) & (target <= 1)).all()):
            raise RuntimeError("all elements of target should be between 0 and 1")
    return _nn.binary_cross_entropy(input, target, weight, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                     reduction="mean", pos_weight=None):
    reduction = _reduction(size_average, reduce, reduction)
    if (isinstance(input, _C.Tensor) and isinstance(target, _C.Tensor) and target.size() == input.size()
            and not (target.is_floating_point() or target.is_complex()) and target.dtype != _C.bool):
        # torch computes into a tensor of the target's dtype: an integer target cannot hold the loss
        raise RuntimeError(f"result type {_scalar_name(_C.promote_types(input.dtype, target.dtype))} can't be cast "
                           f"to the desired output type {_scalar_name(target.dtype)}")
    return _nn.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):  # noqa: A002
    if size_average is None and reduce is None and reduction == "mean" and not _from_aten():
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=3)
    return _nn.kl_div(input, target, _reduction(size_average, reduce, reduction), log_target)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,  # noqa: A002
                     reduction="mean"):
    return _nn.poisson_nll_loss(input, target, log_input, full, eps, _reduction(size_average, reduce, reduction))


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):  # noqa: A002
    if not isinstance(var, _C.Tensor):
        var = _C.full_like(input, float(var))
    return _nn.gaussian_nll_loss(input, target, var, full, eps, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    return _nn.margin_ranking_loss(input1, input2, target, margin, _reduction(size_average, reduce, reduction))


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    return _nn.hinge_embedding_loss(input, target, margin, _reduction(size_average, reduce, reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    return _nn.cosine_embedding_loss(input1, input2, target, margin, _reduction(size_average, reduce, reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    return _nn.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                   _reduction(size_average, reduce, reduction))


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,  # noqa: A002
                      reduction="mean"):
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    return _nn.multi_margin_loss(input, target, int(p), float(margin), weight,
                                 _reduction(size_average, reduce, reduction))


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    return _nn.multilabel_margin_loss(input, target, _reduction(size_average, reduce, reduction))


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """The triplet loss with any distance (a Python callable, so composed here); the default is
    pairwise_distance, which makes it triplet_margin_loss."""
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got {margin} instead")
    if distance_function is None:
        return _nn.triplet_margin_loss(anchor, positive, negative, float(margin), 2.0, 1e-6, swap, reduction)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    d_pos = distance_function(anchor, positive)
    d_neg = distance_function(anchor, negative)
    if swap:
        d_neg = _C.minimum(d_neg, distance_function(positive, negative))
    loss = _C.clamp_min(margin + d_pos - d_neg, 0.0)
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return _nn.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _nn.pairwise_distance(x1, x2, p, eps, keepdim)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):  # noqa: A002
    r = _nn.normalize(input, p, dim, eps)
    return out.copy_(r) if out is not None else r


# ---- normalisation

def _shape(s):
    return [s] if isinstance(s, int) else list(s)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    return _nn.layer_norm(input, _shape(normalized_shape), weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    return _nn.rms_norm(input, _shape(normalized_shape), weight, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    if not _from_aten():  # torch.group_norm (the ATen op) skips the Python-level check
        # torch's _verify_batch_size (num_groups=0 divides by zero here, as in torch)
        size = [input.size(0) * input.size(1) // num_groups, num_groups] + list(input.size()[2:])
        prod = size[0]
        for s in size[2:]:
            prod *= s
        if prod == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
    if num_groups <= 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {num_groups}")
    return _nn.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,  # noqa: A002
               eps=1e-5):
    return _nn.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,  # noqa: A002
                  momentum=0.1, eps=1e-5):
    return _nn.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


# ---- dropout

def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    if not training or p == 0:
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        return input
    return _act(_nn.dropout, input, inplace, p, training)


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    if not training or p == 0:
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        return input
    return _act(_nn.dropout1d, input, inplace, p, training)


def _warn_deprecated_rank(name, input, dims):  # noqa: A002
    warnings.warn(f"{name}: Received a {input.dim()}-D input to {name}, which is deprecated and will result in an "
                  "error in a future release. To retain the behavior and silence this warning, please use dropout "
                  f"instead. Note that {name} exists to provide channel-wise dropout on inputs with {dims} spatial "
                  f"dimensions, a channel dimension, and an optional batch dimension (i.e. {dims + 1}D or "
                  f"{dims + 2}D inputs).", stacklevel=4)


def _deprecated_feature_dropout(name, input, p, training, inplace, dims):  # noqa: A002
    """torch's dropout2d on inputs of other ranks: a warning, then channel-wise dropout with dim 0
    as the batch and dim 1 as the channels (1-D input: torch's error)."""
    _warn_deprecated_rank(name, input, dims)
    from ._composed import _feature_dropout
    return _feature_dropout(input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.dim() not in (3, 4):
        return _deprecated_feature_dropout("dropout2d", input, p, training, inplace, 2)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=2)
    if not training or p == 0:
        return input
    return _act(_nn.dropout2d, input, inplace, p, training)


def alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    if not training or p == 0:
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        return input
    return _act(_nn.alpha_dropout, input, inplace, p, training)


# ---- sparse

def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,  # noqa: A002
              sparse=False):
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported")
    return _nn.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)


def one_hot(tensor, num_classes=-1):
    return _nn.one_hot(tensor, num_classes)


# ---- vision

def pad(input, pad, mode="constant", value=None):  # noqa: A002
    # torch takes the value as a float (an int64 fill of 2**53 + 1 gives 2**53 there too)
    return _nn.pad(input, list(pad), mode, None if value is None else float(value))


def pixel_shuffle(input, upscale_factor):  # noqa: A002
    return _nn.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):  # noqa: A002
    return _nn.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups):  # noqa: A002
    return _nn.channel_shuffle(input, groups)


native_channel_shuffle = channel_shuffle


# ---- convolution and pooling (im2col + GEMM in C++)

def _pair(x, n=2):
    if isinstance(x, int):
        return [x] * n
    x = list(x)
    if len(x) == 1 and n > 1:
        return x * n
    return x


_same_padding_warned = [False]


def _warn_same_padding(padding, weight, dilation, n):
    """torch warns (once a process) when padding='same' needs more padding on one side."""
    if padding != "same" or _same_padding_warned[0] or not isinstance(weight, _C.Tensor) or weight.dim() != n + 2:
        return
    dil = _pair(dilation, n)
    if any(d * (k - 1) % 2 for d, k in zip(dil, weight.shape[2:])):
        _same_padding_warned[0] = True
        warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require a zero-padded copy "
                      "of the input be created", stacklevel=4)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    if isinstance(padding, str):  # 'same' / 'valid', resolved by the op
        _warn_same_padding(padding, weight, dilation, 1)
        return _nn._conv1d_padding(input, weight, bias, _pair(stride, 1), padding, _pair(dilation, 1), groups)
    return _nn.conv1d(input, weight, bias, _pair(stride, 1), _pair(padding, 1), _pair(dilation, 1), groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    if isinstance(padding, str):
        _warn_same_padding(padding, weight, dilation, 2)
        return _nn._conv2d_padding(input, weight, bias, _pair(stride), padding, _pair(dilation), groups)
    return _nn.conv2d(input, weight, bias, _pair(stride), _pair(padding), _pair(dilation), groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    return _nn.conv_transpose1d(input, weight, bias, _pair(stride, 1), _pair(padding, 1), _pair(output_padding, 1),
                                groups, _pair(dilation, 1))


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    return _nn.conv_transpose2d(input, weight, bias, _pair(stride), _pair(padding), _pair(output_padding), groups,
                                _pair(dilation))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    if input.dim() < 3:
        raise IndexError(f"unfold: expected a 3-D (unbatched) or 4-D (batched) input, got shape {list(input.shape)}")
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    cols = _nn.im2col(x, _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)).transpose(1, 2)
    return cols if batched else cols.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    if input.dim() not in (2, 3):
        raise RuntimeError(f"fold: Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions, but got: {list(input.shape)}")
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    img = _nn.col2im(x.transpose(1, 2), _pair(output_size), _pair(kernel_size), _pair(dilation), _pair(padding),
                     _pair(stride))
    return img if batched else img.squeeze(0)


def _stride(stride, kernel_size, n=2):
    return _pair(kernel_size, n) if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else _pair(stride, n)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    if not return_indices:
        return _nn._max_pool2d_values(input, _pair(kernel_size), _stride(stride, kernel_size), _pair(padding),
                                      _pair(dilation), ceil_mode)
    values, indices = _nn.max_pool2d_with_indices(input, _pair(kernel_size), _stride(stride, kernel_size),
                                                  _pair(padding), _pair(dilation), ceil_mode)
    return (values, indices) if return_indices else values


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    if not input.is_floating_point():  # torch's 1-d max pooling has float kernels only (2-d has more)
        raise NotImplementedError(f'"max_pool1d_impl" not implemented for {input.dtype}')
    values, indices = _nn.max_pool2d_with_indices(input.unsqueeze(-2), [1, _pair(kernel_size, 1)[0]],
                                                  [1, _stride(stride, kernel_size, 1)[0]], [0, _pair(padding, 1)[0]],
                                                  [1, _pair(dilation, 1)[0]], ceil_mode)
    values, indices = values.squeeze(-2), indices.squeeze(-2)
    return (values, indices) if return_indices else values


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    if input.dim() < 3:
        raise IndexError(f"avg_pool2d: expected a 3-D or 4-D input, got shape {list(input.shape)}")
    return _nn.avg_pool2d(input, _pair(kernel_size), _stride(stride, kernel_size), _pair(padding), ceil_mode,
                          count_include_pad, divisor_override)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    return _nn.lp_pool2d(input, float(norm_type), list(_pair(kernel_size)),
                         [] if stride is None else list(_pair(stride)), ceil_mode)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    k = _pair(kernel_size, 1)[0]
    s = k if stride is None else _pair(stride, 1)[0]
    return _nn.lp_pool2d(input.unsqueeze(-2), float(norm_type), [1, k], [1, s], ceil_mode).squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):  # noqa: A002
    return _nn.avg_pool2d(input.unsqueeze(-2), [1, _pair(kernel_size, 1)[0]], [1, _stride(stride, kernel_size, 1)[0]],
                          [0, _pair(padding, 1)[0]], ceil_mode, count_include_pad, None).squeeze(-2)


def _out_size(output_size, input, n):  # noqa: A002
    sizes = _pair(output_size, n) if not isinstance(output_size, int) else [output_size] * n
    return [input.shape[-n + i] if s is None else s for i, s in enumerate(sizes)]


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    return _nn.adaptive_avg_pool2d(input, _out_size(output_size, input, 2))


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    return _nn.adaptive_avg_pool2d(input.unsqueeze(-2), [1] + _out_size(output_size, input, 1)).squeeze(-2)


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    values, indices = _nn.adaptive_max_pool2d(input, _out_size(output_size, input, 2))
    return (values, indices) if return_indices else values


def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    values, indices = _nn.adaptive_max_pool2d(input.unsqueeze(-2), [1] + _out_size(output_size, input, 1))
    values, indices = values.squeeze(-2), indices.squeeze(-2)
    return (values, indices) if return_indices else values


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,  # noqa: A002
                recompute_scale_factor=None, antialias=False):
    n = input.dim() - 2
    if n not in (1, 2, 3):
        raise NotImplementedError(f"interpolate: input of {input.dim()} dimensions is not supported (3-D, 4-D and "
                                  f"5-D inputs are: (N, C, spatial...))")
    if size is not None and not isinstance(size, int) and len(size) != n:
        raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                         f"spatial dimensions of {list(input.shape[2:])} and output size of {list(size)}. Please "
                         f"provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                         f"format.")
    if (size is None) == (scale_factor is None):
        raise ValueError("either size or scale_factor should be defined (and not both)")
    if align_corners is not None and mode in ("nearest", "nearest-exact", "area"):
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    scales = [None] * n
    if size is not None:
        out = list(size) if not isinstance(size, int) else [size] * n
    else:
        sf = [float(s) for s in (list(scale_factor) if isinstance(scale_factor, (list, tuple))
                                 else [scale_factor] * n)]
        out = [int(input.shape[2 + i] * sf[i]) for i in range(n)]
        if not recompute_scale_factor:
            scales = sf
    scales = [None] * (3 - n) + scales
    return _nn.interpolate(input, out, mode, align_corners, scales[0], scales[1], scales[2], bool(antialias))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):  # noqa: A002
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=3)
    return interpolate(input, size, scale_factor, mode, align_corners)


# ---- attention and recurrent kernels

def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    return _nn.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                                            enable_gqa=enable_gqa)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """torch.nn.functional.multi_head_attention_forward (it lives with MultiheadAttention, which imports F)."""
    from .modules.attention import multi_head_attention_forward as impl
    return impl(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
                add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training, key_padding_mask, need_weights,
                attn_mask, use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, static_k,
                static_v, average_attn_weights, is_causal)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,  # noqa: A002
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse gradients are not supported")
    if offsets is not None and mode != "max" and isinstance(offsets, _C.Tensor) and offsets.dim() == 1 \
            and offsets.numel() > 1 and offsets.device.type != "meta":
        # torch's sum/mean kernels reject bags that end before they start
        down = offsets[1:] < offsets[:-1]
        if bool(down.any()):
            if include_last_offset and not bool(down[:-1].any()):
                raise RuntimeError("Your input appears to be incorrect: the last offset value should be the size of "
                                   "the indices tensor, but it seems not to be the case.")
            raise RuntimeError("Expected i < index_size to be true, but got false. (offsets must be non-decreasing)")
    return _nn.embedding_bag(input, weight, offsets, mode, per_sample_weights, include_last_offset, padding_idx,
                             max_norm, norm_type)


def _name_errors(fn):
    """Errors raised inside an F function name it (an inner op's message names only that op)."""
    name = fn.__name__

    @__import__("functools").wraps(fn)
    def wrapper(*args, **kwargs):
        # __torch_function__ at the level torch has it (kindle.overrides): one C call otherwise
        if _C._has_torch_function(*args, **kwargs):
            from ..overrides import handle_torch_function
            return handle_torch_function(wrapper, list(args) + list(kwargs.values()), *args, **kwargs)
        if args and type(args[0]) is _ndarray:  # the C++ ops would take it; torch's take only tensors
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not numpy.ndarray")
        try:
            return fn(*args, **kwargs)
        except (RuntimeError, ValueError, IndexError, TypeError, NotImplementedError) as e:
            msg = str(e)
            if name in msg:
                raise
            raise type(e)(f"{name}: {msg}") from None

    return wrapper


for _n, _f in list(globals().items()):
    if callable(_f) and not _n.startswith("_") and getattr(_f, "__module__", None) == __name__:
        globals()[_n] = _name_errors(_f)
del _n, _f


from .functional3d import (adaptive_avg_pool3d, adaptive_max_pool3d, avg_pool3d, conv3d,  # noqa: E402,F401
                           conv_transpose3d, dropout3d, lp_pool3d, max_pool3d)
from .ctc import ctc_loss  # noqa: E402,F401
from .fractional import fractional_max_pool2d, fractional_max_pool3d  # noqa: E402,F401


def _dispatching(fn):
    """__torch_function__ for the functions composed in other files (their errors name themselves)."""
    @__import__("functools").wraps(fn)
    def wrapper(*args, **kwargs):
        if _C._has_torch_function(*args, **kwargs):
            from ..overrides import handle_torch_function
            return handle_torch_function(wrapper, list(args) + list(kwargs.values()), *args, **kwargs)
        if args and type(args[0]) is _ndarray:
            raise TypeError(f"{fn.__name__}(): argument 'input' (position 1) must be Tensor, not numpy.ndarray")
        return fn(*args, **kwargs)
    return wrapper


for _n in ("adaptive_avg_pool3d", "adaptive_max_pool3d", "avg_pool3d", "conv3d", "conv_transpose3d", "dropout3d",
           "lp_pool3d", "max_pool3d", "ctc_loss", "fractional_max_pool2d", "fractional_max_pool3d"):
    globals()[_n] = _dispatching(globals()[_n])
del _n

from ._composed import *  # noqa: E402,F401,F403
from ._composed import _feature_dropout, _rrelu  # noqa: E402,F401  (torch.feature_dropout, torch.rrelu)
from . import _composed as _composed_mod  # noqa: E402
from .grid_sample import affine_grid, grid_sample  # noqa: E402,F401
for _n in _composed_mod.__all__ + ["affine_grid", "grid_sample"]:
    globals()[_n] = _name_errors(globals()[_n])
del _n

from ..overrides import (handle_torch_function, has_torch_function, has_torch_function_unary,  # noqa: E402,F401
                         has_torch_function_variadic)

from .._aten_nn import conv_tbc  # noqa: E402,F401
from .. import Tensor  # noqa: E402,F401  (torch.nn.functional.Tensor)


def __getattr__(name):  # torch.nn.functional.grad is the torch.nn.grad module
    if name == "grad":
        from . import grad
        return grad
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
