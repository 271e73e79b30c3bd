"""PixelShuffle and PixelUnshuffle (torch.nn.modules.pixelshuffle): the classes of .shape, re-
exported under torch's module name."""
from .shape import PixelShuffle, PixelUnshuffle  # noqa: F401

__all__ = ["PixelShuffle", "PixelUnshuffle"]
