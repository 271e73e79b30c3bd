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
