"""kindle.compiler: torch.compiler's public helpers; Kindle runs eagerly (see kindle.compile).

is_compiling() / is_exporting() / is_dynamo_compiling() answer as torch's do: True while
kindle.compile runs or traces a model (is_compiling, is_dynamo_compiling) and while kindle.export
traces one (is_compiling, is_exporting; torch.export does not go through dynamo's frame
evaluation, so is_dynamo_compiling stays False there). torch.jit.trace and torch.fx.symbolic_trace
set none of them, and neither do kindle.jit.trace and kindle.fx. The state is per thread: a
model compiled or exported in one thread does not change what eager code in another sees.
"""
import threading

from ._compile import compile, list_backends  # noqa: F401
from ._dynamo import allow_in_graph, assume_constant_result, disable, reset  # noqa: F401

__all__ = ["compile", "list_backends", "allow_in_graph", "assume_constant_result", "disable", "reset",
           "is_compiling", "is_dynamo_compiling", "is_exporting", "cudagraph_mark_step_begin"]


class _State(threading.local):
    compiling = 0  # nesting depths
    dynamo = 0
    exporting = 0


_state = _State()


class _compiling:  # noqa: N801  (used as a function: `with _compiling(dynamo=True):`)
    """The extent of one compilation (dynamo=True: a kindle.compile call) or export
    (exporting=True). A plain class rather than a generator: it wraps every compiled call."""

    __slots__ = ("_dynamo", "_exporting")

    def __init__(self, *, exporting=False, dynamo=False):
        self._dynamo, self._exporting = int(bool(dynamo)), int(bool(exporting))

    def __enter__(self):
        _state.compiling += 1
        _state.dynamo += self._dynamo
        _state.exporting += self._exporting
        return self

    def __exit__(self, *exc):
        _state.compiling -= 1
        _state.dynamo -= self._dynamo
        _state.exporting -= self._exporting
        return False


def is_compiling():
    """True while kindle.compile or kindle.export runs the model (torch.compiler.is_compiling)."""
    return _state.compiling > 0


def is_dynamo_compiling():
    """True while kindle.compile runs the model (torch's: while TorchDynamo traces it)."""
    return _state.dynamo > 0


def is_exporting():
    """True while kindle.export traces the model."""
    return _state.exporting > 0


def cudagraph_mark_step_begin():
    pass
