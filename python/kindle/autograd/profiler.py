"""Profiler annotations (torch.autograd.profiler). Kindle has no profiler yet, so
record_function marks nothing; it accepts PyTorch's arguments and works as a context manager
and as a decorator, so annotated programs run unchanged."""
import contextlib

__all__ = ["record_function"]


class record_function(contextlib.ContextDecorator):  # noqa: N801
    """Labels a block (`with record_function("name"):`) or a function (`@record_function("name")`)."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True
        self.record = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        return False

    def _call_end_callbacks_on_future(self, fut):
        """Ends the range when `fut` completes; with nothing recorded, returns `fut` itself."""
        self.run_callbacks_on_exit = False
        return fut
