"""kindle.nn.parallel. DataParallel on a machine without GPUs is what PyTorch's is there: a
transparent wrapper (the wrapped module is its `module` child, so state_dict keys gain the
`module.` prefix) that runs the module on the CPU. DistributedDataParallel averages gradients
across processes (kindle.distributed)."""
from ..modules.module import Module

from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "data_parallel", "DistributedDataParallel"]


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if device_ids:
            raise RuntimeError(f"DataParallel: device_ids {list(device_ids)} name GPUs, but Kindle was built "
                               "without CUDA (only cpu is available)")
        self.module = module
        self.device_ids = []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):  # noqa: ARG001
    if device_ids:
        raise RuntimeError("data_parallel: Kindle was built without CUDA (only cpu is available)")
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
