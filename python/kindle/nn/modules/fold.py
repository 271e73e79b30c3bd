"""Fold and Unfold (torch.nn.modules.fold): the classes of .shape, re-exported under torch's module
name."""
from .shape import Fold, Unfold  # noqa: F401

__all__ = ["Fold", "Unfold"]
