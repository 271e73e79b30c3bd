"""unflatten(): an exported program as a module tree with the original's submodule names.

torch rebuilds one graph per submodule call; Kindle's version keeps the whole program in the
root's forward and gives it the original tree of submodules holding the parameters and
buffers under their original names (so state_dict() keys, named_modules() and attribute
access like m.encoder.layer0.weight match the eager module). The submodules are plain
Modules: only the root can be called.
"""
from ..nn.modules.module import Module
from ..utils import _pytree as pytree
from .exported_program import _ExportedModule, _unlift

__all__ = ["FlatArgsAdapter", "UnflattenedModule", "unflatten"]


class FlatArgsAdapter:
    """Adapts a call's flattened inputs to the exported ones when their structure differs:
    override adapt(target_spec, input_spec, input_args) to return the flat inputs to use."""

    def adapt(self, target_spec, input_spec, input_args, metadata=None, obj=None):
        raise NotImplementedError

    def get_flat_arg_paths(self):
        return []


class UnflattenedModule(_ExportedModule):
    """unflatten()'s module: unlike ep.module(), train()/eval() only set the flags (the
    graph keeps the mode it was exported in)."""

    def train(self, mode=True):
        return Module.train(self, mode)

    def eval(self):
        return Module.train(self, False)

    def _flat_inputs(self, args, kwargs):
        adapter = getattr(self, "_adapter", None)
        if adapter is not None:
            flat, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
            if spec != self._in_spec:
                flat = adapter.adapt(target_spec=self._in_spec, input_spec=spec, input_args=flat)
                if self._checker is not None:
                    self._checker(flat)
                return flat
        return super()._flat_inputs(args, kwargs)


def unflatten(module, flat_args_adapter=None):
    """Returns an UnflattenedModule running the program `module` (an ExportedProgram)."""
    m = _unlift(module, UnflattenedModule)
    m._adapter = flat_args_adapter
    return m
