"""Spatial transformers: affine_grid (sampling locations from affine matrices) and grid_sample
(input values read at those locations), in 2-d (4-d input) and 3-d (5-d input). grid_sample
checks its arguments here with torch's messages and runs the grid_sampler op (C++ kernels,
csrc/cpu/grid_sample.cpp), whose conventions (align_corners, the padding modes' clipping and
reflection, bicubic's A = -0.75 kernel with padding applied to each tap) are torch's."""
import warnings

from .. import _C

__all__ = ["affine_grid", "grid_sample"]

# torch's grid_sampler enums
_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}


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
    return _C.grid_sampler(input, grid, _MODES[mode], _PADDINGS[padding_mode], align_corners)
