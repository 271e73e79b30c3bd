"""kindle.utils.dlpack (torch.utils.dlpack): DLPack capsules in and out, for interchange with
NumPy, CuPy, JAX, torch and the other array libraries."""
import enum

__all__ = ["DLDeviceType", "from_dlpack"]


# (kindle's own functions, looked up at call time: this module loads before them)
def from_dlpack(ext_tensor):
    """A tensor sharing the memory of `ext_tensor`: an object with __dlpack__ or a DLPack capsule."""
    from .. import from_dlpack as f
    return f(ext_tensor)


def to_dlpack(tensor):
    """The legacy interface: a DLPack capsule for `tensor`, to be consumed once by from_dlpack."""
    from .. import to_dlpack as f
    return f(tensor)


class DLDeviceType(enum.IntEnum):
    """DLPack's device codes (dlpack.h)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


del enum
