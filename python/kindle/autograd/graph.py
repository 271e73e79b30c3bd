"""The autograd graph's node type (torch.autograd.graph)."""
from .. import _C

Node = _C.Node
