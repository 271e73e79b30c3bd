"""kindle._dynamo: the knobs programs set on torch._dynamo. Kindle captures no graphs (see
kindle.compile), so these configure nothing; they exist so that such programs run."""
import contextlib
import functools

from .._compile import OptimizedModule, list_backends
from .._compile import compile as _compile

__all__ = ["config", "reset", "disable", "is_compiling", "list_backends", "optimize", "mark_dynamic", "mark_static",
           "maybe_mark_dynamic", "allow_in_graph", "disallow_in_graph", "graph_break", "assume_constant_result",
           "OptimizedModule", "explain"]


class _Config:
    """torch._dynamo.config: any attribute can be set; the usual ones have torch's defaults."""

    def __init__(self):
        defaults = dict(suppress_errors=False, verbose=False, cache_size_limit=8, accumulated_cache_size_limit=256,
                        recompile_limit=8, accumulated_recompile_limit=256, capture_scalar_outputs=False,
                        capture_dynamic_output_shape_ops=False, automatic_dynamic_shapes=True,
                        assume_static_by_default=True, optimize_ddp=True, specialize_int=False,
                        inline_inbuilt_nn_modules=True, guard_nn_modules=False, error_on_recompile=False,
                        force_parameter_static_shapes=True, log_level=30)
        self.__dict__.update(defaults)

    def patch(self, arg=None, **changes):
        """config.patch(name=value) / config.patch({name: value}): a context manager and decorator."""
        if isinstance(arg, dict):
            changes.update(arg)
        config = self

        class _Patch(contextlib.ContextDecorator):
            def __enter__(self):
                self._old = {k: getattr(config, k, None) for k in changes}
                config.__dict__.update(changes)
                return self

            def __exit__(self, *exc):
                config.__dict__.update(self._old)
                return False

        return _Patch()

    def __repr__(self):
        return f"kindle._dynamo.config({', '.join(f'{k}={v!r}' for k, v in sorted(self.__dict__.items()))})"


config = _Config()


def reset():
    """Forgets compiled code: there is none in Kindle."""


def is_compiling():
    """kindle.compiler.is_compiling() (torch._dynamo.is_compiling is the same question)."""
    from .. import compiler
    return compiler.is_compiling()


def disable(fn=None, recursive=True, *, reason=None):
    """@disable / disable(fn): the function runs as it is (it always does in Kindle)."""
    if fn is None:
        return lambda f: f
    return fn


def optimize(backend="inductor", *, nopython=False, guard_export_fn=None, guard_fail_fn=None, disable=False,
             dynamic=None):
    return functools.partial(_compile, backend=backend, fullgraph=nopython, dynamic=dynamic, disable=disable)


def mark_dynamic(t, index, *, min=None, max=None, **kwargs):  # noqa: A002
    pass


def maybe_mark_dynamic(t, index):
    pass


def mark_static(t, index=None):
    pass


def mark_static_address(t, guard=True):
    pass


def allow_in_graph(fn):
    return fn


def disallow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def graph_break(msg=""):
    pass


def explain(f, *extra_args, **extra_kwargs):
    raise NotImplementedError("kindle._dynamo.explain: Kindle captures no graphs (kindle.compile runs eagerly)")
