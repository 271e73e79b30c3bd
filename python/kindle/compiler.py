"""kindle.compiler: torch.compiler's public helpers; Kindle runs eagerly (see kindle.compile)."""
from ._compile import compile, list_backends  # noqa: F401
from ._dynamo import allow_in_graph, assume_constant_result, disable, reset  # noqa: F401

__all__ = ["compile", "list_backends", "allow_in_graph", "assume_constant_result", "disable", "reset",
           "is_compiling", "is_dynamo_compiling", "is_exporting", "cudagraph_mark_step_begin"]


def is_compiling():
    return False


def is_dynamo_compiling():
    return False


def is_exporting():
    return False


def cudagraph_mark_step_begin():
    pass
