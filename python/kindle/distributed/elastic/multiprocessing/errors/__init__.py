"""@record (torch.distributed.elastic.multiprocessing.errors): a worker's uncaught exception is
written, with its traceback, to the file the launcher names (TORCHELASTIC_ERROR_FILE), so that
the launcher's failure report shows it; then it propagates as usual."""
import functools
import json
import os
import time
import traceback

__all__ = ["record", "ChildFailedError", "ErrorHandler"]


class ChildFailedError(Exception):
    """Raised by the launcher when a worker failed: names each failed rank and its exit code."""

    def __init__(self, name, failures):
        self.name = name
        self.failures = failures
        lines = [f"{name} FAILED"]
        for rank, (code, message) in sorted(failures.items()):
            lines.append(f"  rank {rank}: exitcode {code}" + (f"\n{message}" if message else ""))
        super().__init__("\n".join(lines))


class ErrorHandler:
    def initialize(self):
        pass

    def record_exception(self, e):
        path = os.environ.get("TORCHELASTIC_ERROR_FILE")
        if not path:
            return
        payload = {"message": {"message": f"{type(e).__name__}: {e}", "extraInfo": {
            "py_callstack": traceback.format_exc(), "timestamp": str(int(time.time()))}}}
        with open(path, "w") as f:
            json.dump(payload, f)


def record(fn=None, error_handler=None):
    handler = error_handler or ErrorHandler()

    def wrap(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            try:
                return f(*args, **kwargs)
            except SystemExit:
                raise
            except BaseException as e:
                handler.record_exception(e)
                raise
        return wrapper

    return wrap(fn) if fn is not None else wrap
