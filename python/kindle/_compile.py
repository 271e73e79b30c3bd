"""kindle.compile: torch.compile's signature; inference fusions for modules.

compile() checks its arguments as torch.compile does and returns an OptimizedModule (for a
module) or a wrapper (for a function). Everything that works on the model keeps working on the
result: training, .parameters(), attribute access, and state_dict(), whose keys carry torch's
"_orig_mod." prefix.

What runs: a function, and a module in training mode or with gradients on, run as written
(torch.compile(backend="eager") without its graph capture). A module in eval mode with
gradients off (inference: no_grad or inference_mode) is traced once (kindle.fx) and its
convolution + batch norm + clamping activation chains run fused (kindle/_fusion.py); a model the
tracer cannot follow (data-dependent control flow), one with forward hooks, and calls under
autocast run as written (a fused module whose modules have since gained hooks, or gone back to
training mode, calls them in turn).
The traced graph is dropped and retraced when a child module is added, replaced or removed
anywhere (structure_epoch); parameters and buffers are read at every call, so in-place updates
and replaced tensors are seen. As with torch.compile's traced graphs, Python-level branches on
plain attributes are taken as they were when the graph was traced.
"""
import functools

from . import _C
from .amp import autocast_mode as _autocast_mode
from .nn.modules import module as _module
from .nn.modules.module import Module

_FUSING_BACKENDS = ("inductor",)

__all__ = ["compile", "OptimizedModule", "list_backends"]

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
_BACKENDS = ("cudagraphs", "eager", "aot_eager", "inductor", "onnxrt", "openxla", "tvm", "tensorrt",
             "aot_eager_decomp_partition", "aot_ts_nvfuser")


class InvalidBackend(RuntimeError):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for available backends.")


def list_backends(exclude_tags=("debug", "experimental")):
    return sorted(b for b in _BACKENDS if exclude_tags is None or b not in ("eager", "aot_eager"))


class _CompileOptions:
    """What compile() was asked for; kept for introspection (get_compiler_config)."""

    def __init__(self, fullgraph, dynamic, backend, mode, options, disable):
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.backend = backend
        self.mode = mode
        self.options = dict(options or {})
        self.disable = disable


class OptimizedModule(Module):
    """A module returned by kindle.compile: it owns the original as `_orig_mod` (hence the
    "_orig_mod." prefix of its state_dict keys), forwards calls to it (hooks included), and
    reads and writes attributes on it. `training` mirrors the original's."""

    _own_attributes = {"_orig_mod", "dynamo_ctx", "_torchdynamo_orig_callable", "forward", "_initialized",
                       "get_compiler_config", "_inference"}

    def __init__(self, mod, dynamo_ctx=None):
        object.__setattr__(self, "_orig_mod", mod)  # attribute reads during Module.__init__ reach mod
        object.__setattr__(self, "_initialized", False)
        super().__init__()
        object.__setattr__(self, "_initialized", True)
        self._modules["_orig_mod"] = mod
        object.__setattr__(self, "dynamo_ctx", dynamo_ctx)
        object.__setattr__(self, "_torchdynamo_orig_callable", mod.forward)
        # (structure epoch, graph module or None where tracing failed); None before the first use
        object.__setattr__(self, "_inference", None)

    def forward(self, *args, **kwargs):
        mod = self._modules["_orig_mod"]
        ctx = self.dynamo_ctx
        if ctx is not None and ctx.disable:
            return mod(*args, **kwargs)
        # What the model's code sees is what it would see under torch.compile, whose compiled
        # frames answer True to torch.compiler.is_compiling() (and is_dynamo_compiling()).
        with _compiler()._compiling(dynamo=True):
            if not mod.training and not kwargs and not _C.is_grad_enabled() and self._fuses():
                gm = self._inference_graph(mod, len(args))
                if gm is not None:
                    return gm(*args)
            return mod(*args, **kwargs)

    def _fuses(self):
        ctx = self.dynamo_ctx
        if ctx is not None and (ctx.disable or ctx.backend not in _FUSING_BACKENDS):
            return False
        # Under autocast the convolutions compute in the lower dtype; the fused ops have no
        # autocast policy, so such calls run as written.
        return not any(_autocast_mode._state.enabled.values())

    def _inference_graph(self, mod, nargs):
        """The fused graph for eval-mode calls, traced on first use; None where it cannot be used."""
        if mod._forward_hooks or mod._forward_pre_hooks or _module._global_call_hooks:
            return None
        cached = self._inference
        epoch = _module.structure_epoch()
        if cached is None or cached[0] != epoch:
            gm = _trace_fused(mod)
            cached = (_module.structure_epoch(), gm)  # tracing itself builds modules
            object.__setattr__(self, "_inference", cached)
        gm = cached[1]
        if gm is None or gm._kindle_nargs != nargs:
            return None
        return gm

    def get_compiler_config(self):
        return self.dynamo_ctx

    @property
    def training(self):
        return self._modules["_orig_mod"].training if "_modules" in self.__dict__ else True

    @training.setter
    def training(self, value):
        if self.__dict__.get("_initialized"):
            self._modules["_orig_mod"].training = value

    def __getattr__(self, name):
        d = self.__dict__
        if name == "_orig_mod":
            return d["_modules"]["_orig_mod"] if "_modules" in d else d["_orig_mod"]
        return getattr(d["_orig_mod"], name)

    def __setattr__(self, name, value):
        if hasattr(type(self), name) or name in OptimizedModule._own_attributes:
            return super().__setattr__(name, value)
        return setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if hasattr(type(self), name) or name in OptimizedModule._own_attributes:
            return super().__delattr__(name)
        return delattr(self._orig_mod, name)

    def __len__(self):
        return len(self._orig_mod)

    def __dir__(self):
        own = super().__dir__()
        return sorted(set(dir(self._orig_mod)) | set(own))

    def __reduce__(self):
        return (type(self), (self._orig_mod, self.dynamo_ctx))


def _compiler():
    # kindle.compiler imports this module: import it at first use
    from . import compiler
    return compiler


def _trace_fused(mod):
    from . import _fusion
    from .fx import symbolic_trace
    try:
        gm = symbolic_trace(mod)
    except Exception:  # data-dependent control flow, untraceable calls: run as written
        return None
    gm._kindle_nargs = sum(1 for n in gm.graph.nodes if n.op == "placeholder")
    _fusion.fuse_for_inference(gm)
    return gm


def _check_arguments(backend, mode, options):
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if isinstance(backend, str):
        if backend not in _BACKENDS:
            raise InvalidBackend(backend)
    elif not callable(backend):
        raise TypeError(f"kindle.compile: backend must be a name or a callable, got {type(backend).__name__}")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,  # noqa: A001
            disable=False):
    """Accepts torch.compile's arguments and returns `model` ready to run, eagerly.

    Kindle has no graph compiler yet: the result runs the original module or function
    unchanged, as PyTorch's backend="eager" would (a callable backend is accepted but not
    called, since no graph is captured). For a module the result is an OptimizedModule (its
    state_dict keys start with "_orig_mod.", exactly as torch's; parameters, attributes and
    training are the original's); for a function, a wrapper with the function's name and
    docstring. Without `model` it returns a decorator, so both @kindle.compile and
    @kindle.compile(mode="max-autotune") work.
    """
    _check_arguments(backend, mode, options)
    ctx = _CompileOptions(fullgraph, dynamic, backend, mode, options, disable)
    if model is None:
        def decorator(m):
            return compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           disable=disable)
        return decorator
    if isinstance(model, Module):
        return OptimizedModule(model, ctx)
    if not callable(model):
        raise RuntimeError("model must be a callable")

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        if disable:
            return model(*args, **kwargs)
        with _compiler()._compiling(dynamo=True):  # see OptimizedModule.forward
            return model(*args, **kwargs)

    compiled._torchdynamo_orig_callable = model
    compiled._kindle_compile_options = ctx
    return compiled
