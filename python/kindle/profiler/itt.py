"""kindle.profiler.itt: torch.profiler.itt's API. Kindle has no Intel ITT (VTune) instrumentation,
so is_available() is False; the range and mark calls do nothing and return None, as torch's do
when no VTune collector is attached, so instrumented code runs unchanged."""
from contextlib import contextmanager

__all__ = ["is_available", "range_push", "range_pop", "mark", "range"]


def is_available():
    """Whether ITT is available: never in Kindle."""
    return False


def range_push(msg):
    """Would push an ITT range named msg; nothing to push to."""


def range_pop():
    """Would pop the innermost ITT range; nothing to pop."""


def mark(msg):
    """Would mark an instant named msg; nothing to mark."""


@contextmanager
def range(msg, *args, **kwargs):  # noqa: A001  (torch's name)
    """`with itt.range("step {}", i):` -- the message is formatted as torch formats it."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
