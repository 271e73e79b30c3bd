"""InstanceNorm1d/2d/3d and their lazy forms (torch.nn.modules.instancenorm): the classes of
.batchnorm and .lazy, re-exported under torch's module name."""
from .batchnorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
from .lazy import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d  # noqa: F401

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]
