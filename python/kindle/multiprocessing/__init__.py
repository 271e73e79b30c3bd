"""kindle.multiprocessing: a drop-in for the standard multiprocessing module, as
torch.multiprocessing is. Everything multiprocessing offers is re-exported (Process, Queue,
Pipe, Pool, get_context, ...); importing this module also registers how tensors are pickled by
multiprocessing, so a tensor put on a Queue shares its storage with the receiver instead of
being copied: a write in one process is seen by the other (see reductions.py).

Only the 'file_descriptor' sharing strategy exists (PyTorch also has 'file_system'). Each
shared tensor in flight holds a descriptor: raise `ulimit -n` if a program keeps thousands.
"""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from .reductions import init_reductions
from .spawn import (ProcessContext, ProcessExitedException, ProcessRaisedException, spawn,  # noqa: F401
                    start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
           "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException"]
__all__ += multiprocessing.__all__

_sharing_strategy = "file_descriptor"
_all_sharing_strategies = {"file_descriptor"}


def set_sharing_strategy(new_strategy):
    """Sets how tensors are shared between processes; only 'file_descriptor' exists."""
    if new_strategy not in _all_sharing_strategies:
        raise ValueError(f"set_sharing_strategy: unknown or unsupported strategy "
                         f"{new_strategy!r}; Kindle supports {sorted(_all_sharing_strategies)}")
    global _sharing_strategy
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    return _sharing_strategy


def get_all_sharing_strategies():
    return set(_all_sharing_strategies)


init_reductions()
