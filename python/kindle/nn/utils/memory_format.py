"""torch.nn.utils.memory_format: convert the weights of the convolutions in a module to a memory
format (channels_last / channels_last_3d), so that their outputs are in it too."""

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, classes):
    if isinstance(module, classes):
        # (torch follows the clone with resize_(..., memory_format=...), which keeps the strides
        # the clone already has)
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, classes)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Every Conv2d / ConvTranspose2d weight in `module` (recursively) in memory_format; returns
    module."""
    from ..modules.conv import Conv2d, ConvTranspose2d
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Every Conv3d / ConvTranspose3d weight in `module` (recursively) in memory_format; returns
    module."""
    from ..modules.conv import Conv3d, ConvTranspose3d
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
