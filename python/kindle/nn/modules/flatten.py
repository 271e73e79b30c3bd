"""Flatten and Unflatten (torch.nn.modules.flatten): the classes of .shape, re-exported under
torch's module name."""
from .shape import Flatten, Unflatten  # noqa: F401

__all__ = ["Flatten", "Unflatten"]
