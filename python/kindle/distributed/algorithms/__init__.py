"""torch.distributed.algorithms: DDP communication hooks and Join."""
from .join import Join, Joinable, JoinHook  # noqa: F401
