"""kindle.export: torch.export's API on Kindle's tracer.

export(module, args, kwargs, dynamic_shapes=...) runs forward once on the example inputs,
recording every tensor operation (through Kindle's nn modules too) into a kindle.fx Graph
whose parameters, buffers and constant tensors are lifted to inputs, as torch.export does.
Python control flow is resolved on the example, sizes read from tensors stay graph values,
and dynamic dimensions (Dim, Dim.AUTO/DYNAMIC/STATIC) are checked by running the graph at other
sizes (_probe.py) and on every call of ep.module() (torch's "Guard failed: ..." assertions).

What differs from torch.export:
- The graph holds Kindle calls (kindle.nn.functional.linear, Tensor methods), not ATen ops;
  run_decompositions() rewrites some of them into simpler Kindle ops (_decompositions.py).
- In-place buffer updates (batch norm statistics in training mode) stay in-place calls, as
  in torch's pre-dispatch IR; no BUFFER_MUTATION outputs are produced.
- Shape reasoning is empirical (probes at other sizes plus runtime assertions), not symbolic:
  an upper bound the code needs is found when a call violates it, not at export time.
- save()/load() use Kindle's own format (data only, like kindle.jit.save): files written by
  torch.export.save cannot be read, and loading never runs code from the file.
- unflatten() mirrors the module tree and its state; its submodules cannot be called alone.
- isinstance(x, Tensor) is False for traced values inside forward (as in kindle.jit.trace).
"""
from ..utils import _pytree as pytree
from ._decompositions import CustomDecompTable, default_decompositions
from ._export import export
from ._serialize import load, save
from .dynamic_shapes import (AdditionalInputs, Constraint, ConstraintViolationError, Dim,  # noqa: F401
                             GuardOnDataDependentSymNode, ShapesCollection, UserError, dims)
from .exported_program import ExportedProgram, ModuleCallEntry, ModuleCallSignature
from .graph_signature import ExportBackwardSignature, ExportGraphSignature
from .unflatten import FlatArgsAdapter, UnflattenedModule, unflatten

__all__ = ["AdditionalInputs", "Constraint", "CustomDecompTable", "default_decompositions", "Dim", "dims",
           "draft_export", "export", "ExportBackwardSignature", "ExportedProgram", "ExportGraphSignature",
           "FlatArgsAdapter", "load", "ModuleCallEntry", "ModuleCallSignature", "register_dataclass", "save",
           "ShapesCollection", "unflatten", "UnflattenedModule"]


def draft_export(mod, args, kwargs=None, *, dynamic_shapes=None, preserve_module_call_signature=(), strict=False,
                 prefer_deferred_runtime_asserts_over_guards=False):
    """torch.export.draft_export: Kindle has no separate soundness report, so this is export()."""
    return export(mod, args, kwargs, dynamic_shapes=dynamic_shapes,
                  preserve_module_call_signature=preserve_module_call_signature, strict=strict)


def register_dataclass(cls, *, serialized_type_name=None):
    """Lets a dataclass be an export input or output (its fields are flattened as a pytree)."""
    pytree.register_dataclass(cls, serialized_type_name=serialized_type_name)
