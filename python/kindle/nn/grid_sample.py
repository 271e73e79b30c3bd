"""Spatial transformers: affine_grid (sampling locations from affine matrices) and grid_sample
(input values read at those locations), in 2-d (4-d input) and 3-d (5-d input), composed of
gathers and element-wise ops so that gradients reach both the input and the grid. The
coordinate conventions (align_corners, the padding modes' clipping and reflection, bicubic's
A = -0.75 kernel with padding applied to each tap) are torch's."""
import warnings

from .. import _C

__all__ = ["affine_grid", "grid_sample"]


def _base_coords(steps, align_corners, dtype, device):
    """The normalised coordinates of `steps` pixel centres (or corners) in [-1, 1]."""
    if steps <= 1:
        return _C.zeros(max(steps, 1), dtype=dtype, device=device)[:steps]
    r = _C.linspace(-1, 1, steps, dtype=dtype, device=device)
    return r if align_corners else r * (steps - 1) / steps  # torch's two roundings, not one


_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def affine_grid(theta, size, align_corners=None):
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
    align_corners = bool(align_corners)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or list(theta.shape[-2:]) != [2, 3]:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                             f"Got {list(theta.shape)}.")
        spatial = size[2:]
    elif len(size) == 5:
        if theta.dim() != 3 or list(theta.shape[-2:]) != [3, 4]:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                             f"Got {list(theta.shape)}.")
        spatial = size[2:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise ValueError(f"Expected theta batch size {theta.shape[0]} to match size[0] {size[0]}")
    dt = theta.dtype
    # coordinates in (x, y[, z]) order: x runs along the last spatial dim
    axes = [_base_coords(s, align_corners, dt, theta.device) for s in reversed(spatial)]
    grids = _C.meshgrid(*axes, indexing="ij")  # dims in (x, y, z) order
    nd = len(spatial)
    perm = list(reversed(range(nd)))  # back to (z, y, x) dim order
    coords = [g.permute(perm) for g in grids] + [_C.ones(spatial, dtype=dt, device=theta.device)]
    base = _C.stack(coords, -1).reshape(1, -1, nd + 1)
    out = base.matmul(theta.transpose(1, 2))  # (N, points, nd)
    return out.reshape([size[0]] + spatial + [nd])


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(x, twice_low, twice_high):
    if twice_low == twice_high:
        return _C.zeros_like(x)
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    x = (x - lo).abs()
    extra = _C.fmod(x, span)
    flips = _C.floor(x / span)
    return _C.where(_C.remainder(flips, 2) == 0, extra + lo, span - extra + lo)


def _pad_coords(x, size, padding_mode, align_corners):
    if padding_mode == "zeros":
        return x
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
    # A coordinate that clipping leaves NaN (NaN itself, or an infinite one reflected) reads as
    # outside the input, a zero, as torch's (where zero padding keeps the NaN)
    x = x.clamp(0, size - 1)
    return _C.where(x.isnan(), _C.full_like(x, -1.0), x)


class _Reader:
    """Values of input (N, C, *spatial) at integer positions (N, *out) per dim: zero outside."""

    def __init__(self, input):  # noqa: A002
        self.n, self.c = input.shape[0], input.shape[1]
        self.spatial = list(input.shape[2:])
        self.flat = input.reshape(self.n, self.c, -1)

    def __call__(self, pos):
        """pos: integer-valued float coordinates in (x, y[, z]) order (x along the last dim)."""
        sizes = list(reversed(self.spatial))
        inside = None
        lin = None
        stride = 1
        for p, s in zip(pos, sizes):
            ok = (p >= 0) & (p <= s - 1)
            inside = ok if inside is None else inside & ok
            # (a NaN coordinate, masked out by `inside`, still needs an index that exists)
            term = p.clamp(0, s - 1).nan_to_num(0.0).to(_C.int64) * stride
            lin = term if lin is None else lin + term
            stride *= s
        out_shape = list(lin.shape[1:])
        idx = lin.reshape(self.n, 1, -1).expand(self.n, self.c, lin[0].numel())
        vals = self.flat.gather(2, idx).reshape([self.n, self.c] + out_shape)
        return vals * inside.unsqueeze(1).to(vals.dtype)


def _cubic_weights(t):
    a = -0.75

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):  # noqa: A002
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
    align_corners = bool(align_corners)
    nd = input.dim() - 2
    if input.dim() not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.dim() != input.dim() or grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype} and grid has {grid.dtype}")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"grid_sampler_{nd}d_cpu\" not implemented for '{input.dtype}'")
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    for s in input.shape[2:]:
        if s <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {list(input.shape).index(s)} being empty")
    sizes = list(reversed(input.shape[2:]))  # per coordinate (x, y[, z])
    read = _Reader(input)
    if mode == "bicubic":
        ix, iy = (_unnormalize(grid[..., d], sizes[d], align_corners) for d in range(2))
        x0, y0 = ix.floor(), iy.floor()
        wx, wy = _cubic_weights(ix - x0), _cubic_weights(iy - y0)
        out = 0
        for j in range(4):
            y = _pad_coords(y0 + (j - 1), sizes[1], padding_mode, align_corners)
            row = 0
            for i in range(4):
                x = _pad_coords(x0 + (i - 1), sizes[0], padding_mode, align_corners)
                row = row + read([x, y]) * wx[i].unsqueeze(1)
            out = out + row * wy[j].unsqueeze(1)
        return out
    coords = [_pad_coords(_unnormalize(grid[..., d], sizes[d], align_corners), sizes[d], padding_mode,
                          align_corners) for d in range(nd)]
    if mode == "nearest":  # piecewise constant in the grid: a zero gradient for it (as torch's)
        return _C.where(_C.ones((), dtype=_C.bool), read([c.round() for c in coords]), grid.sum() * 0)
    lows = [c.floor() for c in coords]
    fracs = [c - lo for c, lo in zip(coords, lows)]
    out = 0
    for corner in range(2 ** nd):
        pos, w = [], 1
        for d in range(nd):
            up = (corner >> d) & 1
            pos.append(lows[d] + up)
            w = w * (fracs[d] if up else 1 - fracs[d])
        out = out + read(pos) * w.unsqueeze(1)
    return out

