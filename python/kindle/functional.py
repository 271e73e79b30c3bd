"""kindle.functional (torch.functional): the tensor functions torch defines in Python, under the
module name scripts import them from (`from torch.functional import F`-style imports)."""
from . import (atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes, broadcast_tensors,  # noqa: F401
               cartesian_prod, cdist, chain_matmul, einsum, istft, lu, meshgrid, norm, split, stft, tensordot,
               unique, unique_consecutive, unravel_index)
from ._lowrank import pca_lowrank, svd_lowrank  # noqa: F401

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors", "cartesian_prod",
           "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu", "norm", "meshgrid", "pca_lowrank",
           "split", "stft", "svd_lowrank", "tensordot", "unique", "unique_consecutive", "unravel_index"]
