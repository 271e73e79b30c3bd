"""Neural-network building blocks (torch.nn): Module, Parameter, the layers, init, utils and the
functional interface."""
from . import functional  # noqa: F401
from . import init  # noqa: F401
from .parameter import Buffer, Parameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from . import utils  # noqa: F401
from . import attention  # noqa: F401  (torch.nn.attention: sdpa_kernel, SDPBackend)
from . import parallel  # noqa: F401
from .parallel import DataParallel  # noqa: F401
from . import grad  # noqa: F401,E402  (torch.nn.grad: conv*_input / conv*_weight)
from . import common_types  # noqa: F401,E402  (torch.nn.common_types: the layers' argument type aliases)


def factory_kwargs(kwargs):
    """The device/dtype/memory_format entries of kwargs, with a 'factory_kwargs' dict merged in
    (torch.nn.factory_kwargs, for modules that pass them on to their parameters)."""
    if kwargs is None:
        return {}
    simple = {"device", "dtype", "memory_format"}
    expected = simple | {"factory_kwargs"}
    if not kwargs.keys() <= expected:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r
