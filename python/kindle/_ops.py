"""kindle.ops (torch.ops): operators by namespace. `kindle.ops.aten.<name>` is Kindle's op of
that name (its overloads, `.default`, `.Tensor`, ..., are the same callable: Kindle's bindings
resolve overloads themselves); other namespaces hold the custom ops that kindle.library
defines (`kindle.ops.mylib.my_op`)."""
import ctypes
import types

__all__ = ["ops"]


class _OpPacket:
    """An operator and its overloads (every overload name is the operator itself)."""

    def __init__(self, qualname, fn):
        self._qualname = qualname
        self._fn = fn
        self.__name__ = qualname.split("::")[-1]

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        return self

    def overloads(self):
        return ["default"]

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._qualname.replace('::', '.')}')>"


def _aten(name):
    import kindle
    from kindle import _C
    from kindle.nn import functional as F
    for where in (kindle, _C, getattr(_C, "_nn", None), F):
        fn = getattr(where, name, None) if where is not None else None
        if callable(fn):
            return fn
    method = getattr(kindle.Tensor, name, None)
    if callable(method):
        return method
    return None


class _OpNamespace(types.ModuleType):
    def __init__(self, name):
        super().__init__(f"kindle.ops.{name}")
        self._ns = name

    def __getattr__(self, op):
        if op.startswith("__"):
            raise AttributeError(op)
        from . import library
        custom = library._REGISTRY.get(f"{self._ns}::{op}")
        if custom is not None:
            return _OpPacket(f"{self._ns}::{op}", custom)
        fn = _aten(op) if self._ns in ("aten", "prims") else None
        if fn is None:
            raise AttributeError(f"'_OpNamespace' '{self._ns}' object has no attribute '{op}'")
        packet = _OpPacket(f"{self._ns}::{op}", fn)
        setattr(self, op, packet)
        return packet


class _Ops(types.ModuleType):
    def __init__(self):
        super().__init__("kindle.ops")
        self.loaded_libraries = set()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        ns = _OpNamespace(name)
        setattr(self, name, ns)
        return ns

    def load_library(self, path):
        """Loads a shared library into the process (its static initialisers may register C++
        code with Kindle)."""
        ctypes.CDLL(path)
        self.loaded_libraries.add(path)

    def import_module(self, module):
        import importlib
        importlib.import_module(module)


ops = _Ops()
