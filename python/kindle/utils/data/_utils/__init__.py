"""Internals of kindle.utils.data: collation, fetchers and the worker loop."""
import atexit

# How long a worker waits on its index queue before checking that the main process is alive.
MP_STATUS_CHECK_INTERVAL = 5.0
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
