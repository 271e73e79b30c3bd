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


def rebuild_tensor(cls, df, nbytes, dtype, size, stride, storage_offset, requires_grad,
                   state=None):
    fd = df.detach()  # our own duplicate of the sender's descriptor
    try:
        t = _C._tensor_from_fd(fd, nbytes, dtype, size, stride, storage_offset)
    finally:
        os.close(fd)  # the mapping keeps the memory alive
    return _finish(t, cls, requires_grad, state)


def rebuild_empty_tensor(cls, dtype, size, stride, requires_grad, state=None):
    return _finish(kindle.empty_strided(size, stride, dtype=dtype), cls, requires_grad, state)


def _finish(t, cls, requires_grad, state):
    if cls is not kindle.Tensor:
        # A subclass (nn.Parameter, nn.Buffer): the same data, its class and its attributes.
        t = kindle.Tensor._make_subclass(cls, t, requires_grad)
        if state:
            t.__dict__.update(state)
        return t
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
    cls = type(t)
    state = None
    if cls is not kindle.Tensor:
        state = dict(getattr(t, "__dict__", {})) or None  # e.g. Buffer.persistent
    meta = (t.dtype, tuple(t.shape), tuple(t.stride()))
    if t.numel() == 0:  # nothing to share (and an empty mapping is not a mapping)
        return rebuild_empty_tensor, (cls,) + meta + (t.requires_grad, state)
    fd, nbytes = _C._share_fd(t)  # moves the storage into shared memory if it is not there
    # DupFd sends a duplicate of the descriptor: over the spawning pipe while a child starts,
    # otherwise through multiprocessing's resource sharer (SCM_RIGHTS on a Unix socket).
    return rebuild_tensor, (cls, reduction.DupFd(fd), nbytes) + meta + (
        t.storage_offset(), t.requires_grad, state)


def dumps(obj):
    """Pickles obj as multiprocessing does (tensors by shared memory), to bytes."""
    buf = io.BytesIO()
    ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


def init_reductions():
    # The pickler's table is keyed by exact type: each subclass known now (nn.Parameter,
    # nn.Buffer) is registered too; a subclass defined later is pickled by value.
    todo = [kindle.Tensor]
    while todo:
        cls = todo.pop()
        ForkingPickler.register(cls, reduce_tensor)
        todo.extend(cls.__subclasses__())
