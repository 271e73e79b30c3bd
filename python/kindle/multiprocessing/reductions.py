"""How a kindle.Tensor crosses a process boundary through multiprocessing (a Queue, a Pipe,
a spawned Process's arguments): its storage moves into shared memory (an anonymous memfd) and
only a file descriptor travels, so both processes see the same bytes; sizes, strides, storage
offset, dtype and requires_grad travel with it. This is PyTorch's 'file_descriptor' sharing
strategy, registered with multiprocessing's ForkingPickler; plain pickle is unaffected.
"""
import io
import os
import pickle
from multiprocessing import reduction
from multiprocessing.reduction import ForkingPickler

import kindle
from kindle import _C

__all__ = ["reduce_tensor", "rebuild_tensor", "init_reductions", "dumps", "ForkingPickler"]


def rebuild_tensor(cls, df, nbytes, dtype, size, stride, storage_offset, requires_grad):
    fd = df.detach()  # our own duplicate of the sender's descriptor
    try:
        t = _C._tensor_from_fd(fd, nbytes, dtype, size, stride, storage_offset)
    finally:
        os.close(fd)  # the mapping keeps the memory alive
    return _finish(t, cls, requires_grad)


def rebuild_empty_tensor(cls, dtype, size, stride, requires_grad):
    return _finish(kindle.empty_strided(size, stride, dtype=dtype), cls, requires_grad)


def _finish(t, cls, requires_grad):
    if cls is not kindle.Tensor:
        return cls(t, requires_grad)  # nn.Parameter(data, requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_tensor(t):
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the "
            "queue).")
    meta = (type(t), t.dtype, tuple(t.shape), tuple(t.stride()))
    if t.numel() == 0:  # nothing to share (and an empty mapping is not a mapping)
        return rebuild_empty_tensor, meta + (t.requires_grad,)
    fd, nbytes = _C._share_fd(t)  # moves the storage into shared memory if it is not there
    # DupFd sends a duplicate of the descriptor: over the spawning pipe while a child starts,
    # otherwise through multiprocessing's resource sharer (SCM_RIGHTS on a Unix socket).
    return rebuild_tensor, (meta[0], reduction.DupFd(fd), nbytes) + meta[1:] + (
        t.storage_offset(), t.requires_grad)


def dumps(obj):
    """Pickles obj as multiprocessing does (tensors by shared memory), to bytes."""
    buf = io.BytesIO()
    ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


def init_reductions():
    ForkingPickler.register(kindle.Tensor, reduce_tensor)
    # The pickler's table is keyed by exact type: subclasses register on their own.
    parameter = getattr(getattr(kindle, "nn", None), "Parameter", None)
    if isinstance(parameter, type) and parameter is not kindle.Tensor:
        ForkingPickler.register(parameter, reduce_tensor)
