"""The DataLoader worker process: its loop, its identity (get_worker_info) and how its
failures travel to the main process (ExceptionWrapper).

A worker takes (task index, sampler entry) pairs from its own index queue, fetches and
collates the batch, and puts (task index, payload) on the shared result queue. The payload is
pickled here, in the worker, by kindle.multiprocessing's ForkingPickler: tensors go into shared
memory and only a file descriptor travels (see kindle/multiprocessing/reductions.py), and a
batch that cannot be pickled becomes an error in the main process instead of a silent hang.
Each worker runs one thread and seeds Python's random and Kindle with base_seed + id, and
NumPy from the same two numbers, as PyTorch does.
"""
import os
import queue
import random
import sys
import traceback

import kindle

from . import WORKER_IDLE_POLL_INTERVAL

_worker_info = None


class WorkerInfo:
    """What get_worker_info() returns inside a worker: its id (0 .. num_workers - 1), the
    number of workers, the seed it was given (base_seed + id) and its copy of the dataset."""
    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{type(self).__name__}({items})"


def get_worker_info():
    """The WorkerInfo of the current DataLoader worker process, or None in the main process."""
    return _worker_info


class _IterableDatasetStopIteration:
    """Sent by a worker whose copy of an iterable dataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch (and echoed back)."""


class KeyErrorMessage(str):
    """KeyError repr()s its argument; this keeps the traceback text readable."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker: its type and formatted traceback (the traceback object
    itself cannot cross processes). reraise() raises the same type in the main process."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            # An exception type whose constructor wants other arguments.
            raise RuntimeError(msg) from None
        raise exception


class ManagerWatchdog:
    """Notices that the main process died (the worker is then re-parented)."""

    def __init__(self):
        self.manager_pid = os.getppid()
        self.manager_dead = False

    def is_alive(self):
        if not self.manager_dead:
            self.manager_dead = os.getppid() != self.manager_pid
        return not self.manager_dead


def _to_int64(seed):
    # kindle.manual_seed takes an int64 (wrapping negatives to uint64, as PyTorch does).
    seed &= (1 << 64) - 1
    return seed - (1 << 64) if seed >= 1 << 63 else seed


def _generate_state(base_seed, worker_id):
    """PyTorch's NumPy seed for a worker (a port of NumPy's SeedSequence mixing over
    [worker_id, base_seed low, base_seed high, 0]): the four 32-bit words it returns make each
    worker's NumPy stream distinct, and equal to PyTorch's for the same base seed."""
    mask32 = 0xFFFFFFFF
    mult_a, mult_b = 0x931E8875, 0x58F38DED
    entropy = [worker_id, base_seed & mask32, base_seed >> 32, 0]
    hash_const_a = 0x43B0D7E5

    def hashmix(value):
        nonlocal hash_const_a
        value = (value ^ hash_const_a) & mask32
        hash_const_a = (hash_const_a * mult_a) & mask32
        value = (value * hash_const_a) & mask32
        return (value ^ (value >> 16)) & mask32

    def mix(x, y):
        r = ((0xCA01F9DD * x) & mask32) - ((0x4973F715 * y) & mask32)
        r &= mask32
        return (r ^ (r >> 16)) & mask32

    pool = [hashmix(e) for e in entropy]
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hashmix(pool[i_src]))
    hash_const_b = 0x8B51F9DD
    state = []
    for value in pool:
        value = (value ^ hash_const_b) & mask32
        hash_const_b = (hash_const_b * mult_b) & mask32
        value = (value * hash_const_b) & mask32
        state.append((value ^ (value >> 16)) & mask32)
    return state


def _pack(data, worker_id):
    # Pickled here rather than by the queue's feeder thread, so that a failure is reported.
    from kindle.multiprocessing.reductions import dumps
    try:
        return dumps(data)
    except Exception:
        if not isinstance(data, ExceptionWrapper):
            data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
    try:
        return dumps(data)
    except Exception:
        data.exc_type = RuntimeError  # the exception's own class cannot be pickled
        return dumps(data)


def _worker_loop(dataset_kind, dataset, index_queue, data_queue, done_event, auto_collation,
                 collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers,
                 persistent_workers):
    from ..dataloader import _DatasetKind
    global _worker_info
    try:
        # One thread per worker: the workers are the parallelism (and an OpenMP pool inherited
        # through fork is not safe to use).
        kindle.set_num_threads(1)
        seed = base_seed + worker_id
        random.seed(seed)
        kindle.manual_seed(_to_int64(seed))
        try:  # as PyTorch does: otherwise every worker repeats the parent's NumPy stream
            import numpy as np
            np.random.seed(_generate_state(base_seed, worker_id))
        except ImportError:
            pass
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)

        # An error here is reported with the first batch this worker is asked for.
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation,
                                                  collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")

        iteration_end = False
        watchdog = ManagerWatchdog()
        while watchdog.is_alive():
            try:
                r = index_queue.get(timeout=WORKER_IDLE_POLL_INTERVAL)
            except queue.Empty:
                if done_event.is_set():
                    break
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation,
                                                      collate_fn, drop_last)
                continue
            if r is None:  # shut down
                break
            if done_event.is_set() or iteration_end:
                continue  # drain the queue until the None arrives
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, _pack(data, worker_id)))
            del data, idx, index, r  # free the batch before waiting for the next index
    except KeyboardInterrupt:
        pass  # the main process sees it too and shuts the workers down
    if done_event.is_set():
        # Nobody reads the results any more: do not block exit on flushing them.
        data_queue.cancel_join_thread()
        data_queue.close()
