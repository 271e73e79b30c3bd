"""Running PyTorch programs on Kindle: `torch` and every `torch.*` module resolve to Kindle's.

kindle.install_as_torch() puts a finder first on sys.meta_path that answers an import of
torch[.X] with the module kindle[.X] itself (the same object, so torch.nn is kindle.nn and
isinstance checks agree). A torch module Kindle lacks fails to import with a message naming
it; the finder never falls back to a PyTorch installation."""
import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["install_as_torch", "uninstall_as_torch"]


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):  # noqa: ARG002
        return self.module

    def exec_module(self, module):
        pass


class _TorchFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):  # noqa: ARG002
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        kname = "kindle" + fullname[len("torch"):]
        try:
            module = importlib.import_module(kname)
        except ModuleNotFoundError as e:
            if e.name is not None and (kname == e.name or kname.startswith(e.name + ".")):
                raise ModuleNotFoundError(
                    f"No module named '{fullname}': {fullname} is not in Kindle yet "
                    f"(this program runs on Kindle, which answers imports of torch)", name=fullname) from None
            raise
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module))


_finder = _TorchFinder()


def install_as_torch():
    """Make `import torch` (and every `import torch.X`, `from torch.X import Y`) give Kindle's
    modules for the rest of this process. Raises RuntimeError if PyTorch itself is already
    imported here: the two cannot share the name."""
    existing = sys.modules.get("torch")
    if existing is not None and not getattr(existing, "_is_kindle", False):
        raise RuntimeError("kindle.install_as_torch(): PyTorch is already imported in this process; "
                           "call it before anything imports torch")
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    from . import _legacy
    _legacy.set_type_prefix("torch")
    import kindle
    sys.modules["torch"] = kindle
    for name, module in list(sys.modules.items()):  # Kindle's submodules already imported
        if name.startswith("kindle.") and module is not None:
            sys.modules.setdefault("torch" + name[len("kindle"):], module)


def uninstall_as_torch():
    """Undo install_as_torch(): forget the torch names that point at Kindle's modules."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    from . import _legacy
    _legacy.set_type_prefix("kindle")
    for name, module in list(sys.modules.items()):
        if (name == "torch" or name.startswith("torch.")) and getattr(module, "__name__", "").startswith("kindle"):
            del sys.modules[name]
