"""The autograd graph's node type (torch.autograd.graph)."""
from .. import _C

Node = _C.Node

__all__ = ["Node", "increment_version"]


def increment_version(tensor):
    """Marks `tensor` as modified in place (for writes made outside Kindle's ops, through
    data_ptr or NumPy): backward then refuses stale saved values, and cached derived data is
    recomputed. A list or tuple of tensors is accepted, as torch's."""
    for t in (tensor if isinstance(tensor, (list, tuple)) else (tensor,)):
        _C._increment_version(t)
