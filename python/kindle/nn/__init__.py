"""Neural-network building blocks (torch.nn). Today: the functional interface."""
from . import functional  # noqa: F401
