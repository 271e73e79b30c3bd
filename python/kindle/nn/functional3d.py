"""The 3-d layers of torch.nn.functional (conv3d, conv_transpose3d, max/avg/adaptive/lp pooling,
dropout3d) composed from the 2-d kernels: the depth dimension folds into the batch for the 2-d
op, and the kernel's depth taps are summed (convolutions) or reduced over windows (pooling).
Autograd flows through the composition; max pooling gathers the window's argmax, so ties give
the whole gradient to one element, as torch's kernels do."""
import functools
import math

from .. import _C
from . import functional as F

__all__ = ["conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
           "lp_pool3d", "dropout3d"]


def _named(op):
    """Errors raised inside (by the 2-d ops) name the 3-d op, keeping their exception type."""
    def deco(fn):
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except (RuntimeError, ValueError, IndexError, TypeError) as e:
                if str(e).startswith(op):
                    raise
                raise type(e)(f"{op}: {e}") from None
        wrapper.__name__ = wrapper.__qualname__ = fn.__name__
        wrapper.__doc__ = fn.__doc__
        return wrapper
    return deco


def _reduced(x):
    """float16/bfloat16 inputs are computed in float32 and rounded once, as torch accumulates."""
    return x.dtype in (_C.float16, _C.bfloat16)


def _triple(x, name="argument"):
    if isinstance(x, int):
        return [x] * 3
    x = list(x)
    if len(x) == 1:
        return x * 3
    if len(x) != 3:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of 3 values to match the "
                           f"convolution dimensions, but got {name}={x}")
    return x


def _batched(input, op, channels_first=True):  # noqa: A002
    if input.dim() == 5:
        return input, True
    if input.dim() == 4:
        return input.unsqueeze(0), False
    raise RuntimeError(f"{op}: Expected 4D (unbatched) or 5D (batched) input to {op}, but got input of size: "
                       f"{list(input.shape)}")


def _depth_taps(x, k, stride, dilation, n_out):
    """For each kernel depth tap kd, the input depth slices it meets: x[:, :, kd*dil :: stride]."""
    for kd in range(k):
        start = kd * dilation
        yield kd, x[:, :, start:start + stride * (n_out - 1) + 1:stride]


def _fold_depth(x):
    """(N, C, D, H, W) -> (N*D, C, H, W), depth into the batch."""
    n, c, d, h, w = x.shape
    return x.transpose(1, 2).reshape(n * d, c, h, w)


def _unfold_depth(y, n, d):
    """(N*D, C, H, W) -> (N, C, D, H, W)."""
    _, c, h, w = y.shape
    return y.reshape(n, d, c, h, w).transpose(1, 2)


def _autocast_lower(fn):
    """In a CPU autocast region the convolution runs in the autocast dtype (PyTorch's
    lower-precision list), its body with autocast off: these compose 2-d kernels in Python,
    above the bindings that cast the 2-d ops."""
    @functools.wraps(fn)
    def wrapper(input, weight, bias=None, *args, **kwargs):  # noqa: A002
        if not _C._autocast_is_enabled():
            return fn(input, weight, bias, *args, **kwargs)
        dt = _C._autocast_get_dtype()
        cast = [t.to(dt) if isinstance(t, _C.Tensor) and t.dtype in (_C.float32, _C.float16, _C.bfloat16) else t
                for t in (input, weight, bias)]
        _C._autocast_set_enabled(False)
        try:
            return fn(*cast, *args, **kwargs)
        finally:
            _C._autocast_set_enabled(True)
    return wrapper


@_named("conv3d")
@_autocast_lower
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    x, batched = _batched(input, "conv3d")
    if weight.dim() != 5:
        raise RuntimeError(f"Expected 5-dimensional weight for 5-dimensional input {list(x.shape)}, but got "
                           f"{weight.dim()}-dimensional weight of size {list(weight.shape)} instead")
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {x.shape[1]} "
                           f"channels instead")
    s, d = _triple(stride, "stride"), _triple(dilation, "dilation")
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    if any(v <= 0 for v in d):
        raise RuntimeError("dilation should be greater than zero")
    if _reduced(x) and x.dtype == weight.dtype:
        out = conv3d(x.float(), weight.float(), None if bias is None else bias.float(), stride, padding, dilation,
                     groups).to(x.dtype)
        return out if batched else out.squeeze(0)
    k = list(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            p = [0, 0, 0]
        elif padding == "same":
            if any(v != 1 for v in s):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = [dd * (kk - 1) for dd, kk in zip(d, k)]
            # an odd total pads the extra element at the end, as torch
            pads = []
            for t in reversed(total):
                pads += [t // 2, t - t // 2]
            x = F.pad(x, pads)
            p = [0, 0, 0]
        else:
            raise RuntimeError(f"conv: Invalid padding string '{padding}', should be one of ['valid', 'same']")
    else:
        p = _triple(padding, "padding")
    if p[0]:
        x = F.pad(x, [0, 0, 0, 0, p[0], p[0]])
    n, depth = x.shape[0], x.shape[2]
    span = [dd * (kk - 1) + 1 for dd, kk in zip(d, k)]
    padded = [depth, x.shape[3] + 2 * p[1], x.shape[4] + 2 * p[2]]
    if any(ps < sp for ps, sp in zip(padded, span)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, span))}). Kernel size can't be greater than actual input "
                           "size")
    d_out = (depth - span[0]) // s[0] + 1
    out = None
    for kd, xs in _depth_taps(x, k[0], s[0], d[0], d_out):
        y = F.conv2d(_fold_depth(xs), weight[:, :, kd], None, s[1:], p[1:], d[1:], groups)
        out = y if out is None else out + y
    out = _unfold_depth(out, n, d_out)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    out = out.contiguous()
    return out if batched else out.squeeze(0)


@_named("conv_transpose3d")
@_autocast_lower
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    x, batched = _batched(input, "conv_transpose3d")
    if weight.dim() != 5:
        raise RuntimeError(f"conv_transpose3d: expected a 5-dimensional weight, got {list(weight.shape)}")
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(x.shape)} "
                           f"to have {weight.shape[0]} channels, but got {x.shape[1]} channels instead")
    s, p, op, d = (_triple(stride, "stride"), _triple(padding, "padding"), _triple(output_padding, "output_padding"),
                   _triple(dilation, "dilation"))
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    if _reduced(x) and x.dtype == weight.dtype:
        out = conv_transpose3d(x.float(), weight.float(), None if bias is None else bias.float(), stride, padding,
                               output_padding, groups, dilation).to(x.dtype)
        return out if batched else out.squeeze(0)
    for o, ss, dd in zip(op, s, d):
        if o >= ss and o >= dd:
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={op}, stride={s}, dilation={d}")
    n, _, depth = x.shape[:3]
    kd_n = weight.shape[2]
    full_depth = (depth - 1) * s[0] + d[0] * (kd_n - 1) + 1 + op[0]
    d_out = full_depth - 2 * p[0]
    if d_out <= 0:
        raise RuntimeError(f"conv_transpose3d: the output depth would be {d_out}")
    xf = _fold_depth(x)
    full = None
    for kd in range(kd_n):
        y = F.conv_transpose2d(xf, weight[:, :, kd], None, s[1:], p[1:], op[1:], groups, d[1:])
        y = y.reshape(n, depth, *y.shape[1:])  # (N, D, O, Ho, Wo)
        if full is None:
            full = _C.zeros((n, full_depth) + tuple(y.shape[2:]), dtype=y.dtype, device=y.device)
        start = kd * d[0]
        full[:, start:start + s[0] * (depth - 1) + 1:s[0]] += y
    out = full[:, p[0]:p[0] + d_out].transpose(1, 2)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    out = out.contiguous()
    return out if batched else out.squeeze(0)


def _pool_out(size, k, s, p, d, ceil_mode):
    """torch's pooling output size for one dim."""
    span = d * (k - 1) + 1
    num = size + 2 * p - span
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _check_pool(k, s, p, d, op):
    for kk, ss, pp, dd in zip(k, s, p, d):
        if kk <= 0 or ss <= 0 or dd <= 0:
            raise RuntimeError(f"{op}: kernel_size, stride and dilation must be greater than zero, but got "
                               f"kernel_size={k}, stride={s}, dilation={d}")
        if pp < 0 or pp > kk // 2:
            raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k}")


def _depth_windows(t, k, s, p, d, d_out, fill):
    """(N, C, D, ...) -> (N, C, d_out, ..., k): the k (dilated) depth taps of every output window,
    padding with `fill` (-inf for max, 0 for sums)."""
    depth = t.shape[2]
    need = (d_out - 1) * s + d * (k - 1) + 1
    right = max(0, need - depth - p)
    if p or right:
        t = F.pad(t.movedim(2, -1), [p, right], value=fill).movedim(-1, 2)
    taps = [t[:, :, kd * d:kd * d + s * (d_out - 1) + 1:s] for kd in range(k)]
    return _C.stack(taps, -1)


@_named("max_pool3d")
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    x, batched = _batched(input, "max_pool3d")
    k = _triple(kernel_size, "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _triple(stride, "stride")
    p, d = _triple(padding, "padding"), _triple(dilation, "dilation")
    _check_pool(k, s, p, d, "max_pool3d")
    n, c, depth, h, w = x.shape
    d_out = _pool_out(depth, k[0], s[0], p[0], d[0], ceil_mode)
    if d_out <= 0:
        raise RuntimeError(f"max_pool3d: Given input size: ({c}x{depth}x{h}x{w}). Calculated output size is too small")
    v2, i2 = F.max_pool2d(_fold_depth(x), k[1:], s[1:], p[1:], d[1:], ceil_mode, return_indices=True)
    v2, i2 = _unfold_depth(v2, n, depth), _unfold_depth(i2, n, depth)
    # index into the whole volume: depth * H * W + the 2-d index within the slice
    di = _C.arange(depth, device=x.device).reshape(1, 1, depth, 1, 1) * (h * w)
    i3 = i2 + di
    from .._torch_api import iinfo  # lazily: kindle.nn is imported before it
    lowest = float("-inf") if x.is_floating_point() else iinfo(x.dtype).min
    vw = _depth_windows(v2, k[0], s[0], p[0], d[0], d_out, lowest)
    iw = _depth_windows(i3, k[0], s[0], p[0], d[0], d_out, 0)
    pick = vw.argmax(-1, keepdim=True)
    values = vw.gather(-1, pick).squeeze(-1)
    indices = iw.gather(-1, pick).squeeze(-1)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


@_named("avg_pool3d")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    if input.dtype not in (_C.float32, _C.float64):  # torch has float32/float64 kernels only
        name = {"float16": "Half", "bfloat16": "BFloat16"}.get(str(input.dtype).split(".")[-1],
                                                               str(input.dtype).split(".")[-1])
        raise NotImplementedError(f'"avg_pool3d_out_frame" not implemented for \'{name}\'')
    x, batched = _batched(input, "avg_pool3d")
    k = _triple(kernel_size, "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _triple(stride, "stride")
    p = _triple(padding, "padding")
    _check_pool(k, s, p, [1, 1, 1], "avg_pool3d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    n, c, depth, h, w = x.shape
    d_out = _pool_out(depth, k[0], s[0], p[0], 1, ceil_mode)
    # window sums: the 2-d sums per slice, then the depth taps added
    sums2 = F.avg_pool2d(_fold_depth(x), k[1:], s[1:], p[1:], ceil_mode, True, 1)
    sums2 = _unfold_depth(sums2, n, depth)
    total = _depth_windows(sums2, k[0], s[0], p[0], 1, d_out, 0.0).sum(-1)
    if divisor_override is not None:
        out = total / divisor_override
    else:
        sizes = [depth, h, w]
        outs = [d_out, total.shape[3], total.shape[4]]
        counts = []
        for dim in range(3):
            idx = _C.arange(outs[dim], device=total.device) * s[dim] - p[dim]
            end_pad = _C.clamp(idx + k[dim], max=sizes[dim] + p[dim])
            if count_include_pad:
                cnt = end_pad - idx
            else:
                cnt = _C.clamp(idx + k[dim], max=sizes[dim]) - _C.clamp(idx, min=0)
            counts.append(cnt.to(x.dtype))
        div = counts[0].reshape(-1, 1, 1) * counts[1].reshape(1, -1, 1) * counts[2].reshape(1, 1, -1)
        out = total / div
    out = out.contiguous()
    return out if batched else out.squeeze(0)


def _adaptive_ranges(size, out):
    return [(math.floor(i * size / out), math.ceil((i + 1) * size / out)) for i in range(out)]


def _sizes3(output_size, x, op="adaptive_pool3d"):
    for i in range(2, 5):
        if x.shape[i] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                               f"sizes {list(x.shape)} with dimension {i} being empty")
    sizes = [output_size] * 3 if isinstance(output_size, int) else list(output_size)
    if len(sizes) != 3:
        raise RuntimeError(f"adaptive_pool3d: output_size must be 3, got {len(sizes)}")
    return [x.shape[2 + i] if v is None else v for i, v in enumerate(sizes)]


@_named("adaptive_avg_pool3d")
def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    x, batched = _batched(input, "adaptive_avg_pool3d")
    od, oh, ow = _sizes3(output_size, x)
    n, depth = x.shape[0], x.shape[2]
    y = _unfold_depth(F.adaptive_avg_pool2d(_fold_depth(x), [oh, ow]), n, depth)
    out = _C.stack([y[:, :, a:b].mean(2) for a, b in _adaptive_ranges(depth, od)], 2)
    return out if batched else out.squeeze(0)


@_named("adaptive_max_pool3d")
def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002
    x, batched = _batched(input, "adaptive_max_pool3d")
    od, oh, ow = _sizes3(output_size, x)
    n, _, depth, h, w = x.shape
    v2, i2 = F.adaptive_max_pool2d(_fold_depth(x), [oh, ow], return_indices=True)
    v2, i2 = _unfold_depth(v2, n, depth), _unfold_depth(i2, n, depth)
    i3 = i2 + _C.arange(depth, device=x.device).reshape(1, 1, depth, 1, 1) * (h * w)
    vals, idxs = [], []
    for a, b in _adaptive_ranges(depth, od):
        win = v2[:, :, a:b]
        pick = win.argmax(2, keepdim=True)
        vals.append(win.gather(2, pick).squeeze(2))
        idxs.append(i3[:, :, a:b].gather(2, pick).squeeze(2))
    values, indices = _C.stack(vals, 2), _C.stack(idxs, 2)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


@_named("lp_pool3d")
def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    k = _triple(kernel_size, "kernel_size")
    kw = k[0] * k[1] * k[2]
    out = avg_pool3d(input.pow(norm_type), k, stride, 0, ceil_mode)
    return (out.sign() * F.relu(out.abs())).mul(kw).pow(1.0 / norm_type)


def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.dim() not in (4, 5):  # torch: a warning, then dim 0 as the channels of one example
        F._warn_deprecated_rank("dropout3d", input, 3)
    if not training or p == 0:
        return input
    batched = input.dim() == 5
    x = input if batched else input.unsqueeze(0)
    shape = tuple(x.shape[:2]) + (1,) * (x.dim() - 2)
    if p == 1:
        mask = _C.zeros(shape, dtype=x.dtype, device=x.device)
    else:
        mask = _C.empty(shape, dtype=x.dtype, device=x.device).bernoulli_(1 - p) / (1 - p)
    out = x.mul_(mask) if inplace else x * mask
    if inplace:
        return input
    return out if batched else out.squeeze(0)
