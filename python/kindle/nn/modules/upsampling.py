"""Upsample, UpsamplingNearest2d and UpsamplingBilinear2d (torch.nn.modules.upsampling): the
classes of .shape, re-exported under torch's module name."""
from .shape import Upsample, UpsamplingNearest2d, UpsamplingBilinear2d  # noqa: F401

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
