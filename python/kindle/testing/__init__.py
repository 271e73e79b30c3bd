"""Test helpers (torch.testing): assert_close compares tensors, numbers and nested containers
with per-dtype tolerances; make_tensor builds random tensors over torch's default value ranges."""
from ._comparison import assert_close
from ._creation import make_tensor

__all__ = ["assert_close", "make_tensor"]
