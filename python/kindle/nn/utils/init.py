"""torch.nn.utils.init: skip_init."""
import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) with its parameters and buffers left uninitialised (as torch.empty
    would leave them): the module is built on the meta device, then to_empty() on `device` (default
    cpu). The class must take a `device` argument and compute nothing from its parameters while
    constructing them other than nn.init."""
    from ..modules.module import Module
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
