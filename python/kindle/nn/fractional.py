"""F.fractional_max_pool2d/3d (Graham, 2014): max pooling over windows whose starts follow a
pseudo-random sequence per (batch, channel) plane, generated from `_random_samples` (drawn with
kindle.rand when not given, as torch draws them, so a seed gives torch's windows). The windows
are gathered from the flattened planes; the window's first maximum (NaN first) is the output, and
its flat index the returned index, as in torch's kernels."""
from .. import _C


def _intervals(sample, in_size, out_size, pool):
    """Window starts (N, C, out_size) for one dim: torch's generate_intervals, in the input dtype."""
    if out_size == 1:
        return _C.full(tuple(sample.shape) + (1,), in_size - pool, dtype=_C.int64, device=sample.device)
    alpha = _C.tensor(float(in_size - pool), dtype=sample.dtype, device=sample.device) / float(out_size - 1)
    i = _C.arange(out_size - 1, dtype=sample.dtype, device=sample.device)
    s = sample.unsqueeze(-1)
    seq = ((i + s) * alpha).to(_C.int64) - (s * alpha).to(_C.int64)
    last = _C.full(tuple(sample.shape) + (1,), in_size - pool, dtype=_C.int64, device=sample.device)
    return _C.cat([seq, last], -1)


def _fractional(input, kernel_size, output_size, output_ratio, return_indices, samples, nd):  # noqa: A002
    op = f"fractional_max_pool{nd}d"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    k = [kernel_size] * nd if isinstance(kernel_size, int) else list(kernel_size)
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    sizes = list(x.shape[2:])
    if output_size is None:
        if not isinstance(output_ratio, (list, tuple)):  # torch's functional form takes a tuple only
            raise TypeError(f"object of type '{type(output_ratio).__name__}' has no len()")
        ratio = list(output_ratio) * (nd if len(output_ratio) == 1 else 1)
        out = [int(s * r) for s, r in zip(sizes, ratio)]
    else:
        out = [output_size] * nd if isinstance(output_size, int) else list(output_size)
    names = ["time", "height", "width"][3 - nd:]
    for o, kk, s, name in zip(out, k, sizes, names):
        if o + kk - 1 > s:
            raise RuntimeError(f"{op}(): pool {name} {kk} too large relative to input {name} {s}")
        if o <= 0 or kk <= 0:
            raise RuntimeError(f"{op}(): kernel_size and output_size must be greater than 0")
    n, c = x.shape[:2]
    if samples is None:
        samples = _C.rand(n, c, nd, dtype=x.dtype)
    elif tuple(samples.shape) != (n, c, nd):
        raise RuntimeError(f"{op}(): expected _random_samples of shape ({n}, {c}, {nd}), got {list(samples.shape)}")
    # torch's sample order: (w, h) for 2-d, (t, h, w) for 3-d
    order = [1, 0] if nd == 2 else [0, 1, 2]
    starts = [_intervals(samples[:, :, order[d]], sizes[d], out[d], k[d]) for d in range(nd)]
    # flat index of every window element: (N, C, *out, *k)
    strides = [1] * nd
    for d in range(nd - 2, -1, -1):
        strides[d] = strides[d + 1] * sizes[d + 1]
    flat = None
    for d in range(nd):
        offs = starts[d].unsqueeze(-1) + _C.arange(k[d], device=starts[d].device)  # (N, C, out_d, k_d)
        shape = [n, c] + [1] * nd + [1] * nd
        shape[2 + d], shape[2 + nd + d] = out[d], k[d]
        term = (offs * strides[d]).reshape(shape)
        flat = term if flat is None else flat + term
    full = [n, c] + out + k
    flat = flat.expand(full).reshape(n, c, -1)
    values = x.reshape(n, c, -1).gather(2, flat).reshape(n, c, *out, -1)
    pick = values.argmax(-1, keepdim=True)
    result = values.gather(-1, pick).squeeze(-1)
    indices = flat.reshape(n, c, *out, -1).gather(-1, pick).squeeze(-1)
    if not batched:
        result, indices = result.squeeze(0), indices.squeeze(0)
    return (result, indices) if return_indices else result


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,  # noqa: A002
                          _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,  # noqa: A002
                          _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3)
