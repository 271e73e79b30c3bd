"""ChannelShuffle (torch.nn.modules.channelshuffle): the classes of .shape, re-exported under
torch's module name."""
from .shape import ChannelShuffle  # noqa: F401

__all__ = ["ChannelShuffle"]
