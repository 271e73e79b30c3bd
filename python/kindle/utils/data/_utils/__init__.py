"""Internals of kindle.utils.data: collation, fetchers and the worker loop."""
import atexit

# How long the main process waits for its workers to exit before terminating them.
MP_STATUS_CHECK_INTERVAL = 5.0
# How often an idle worker checks that the main process is alive and has not shut it down.
# The shutdown message alone is not enough: when the iterator dies in a garbage-collected
# cycle, its index queues' feeder threads may already be gone (weakref finalizers run before
# __del__), so the message is never sent; the done event always arrives.
WORKER_IDLE_POLL_INTERVAL = 0.5
# How often the main process checks its workers' liveness while it waits for a batch.
WORKER_POLL_INTERVAL = 0.25

# True once the interpreter is exiting: iterator finalizers then leave the workers to
# multiprocessing's own exit handler (module globals may already be gone).
python_exit_status = False


def _set_python_exit_flag():
    global python_exit_status
    python_exit_status = True


atexit.register(_set_python_exit_flag)

from . import collate, fetch, worker  # noqa: E402,F401
