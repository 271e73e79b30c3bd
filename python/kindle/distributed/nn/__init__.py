"""torch.distributed.nn: collectives that autograd differentiates through."""
from . import functional  # noqa: F401
from .functional import all_gather, all_reduce, broadcast  # noqa: F401
