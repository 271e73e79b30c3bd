"""kindle.utils: data loading (kindle.utils.data), mirroring torch.utils."""
from . import data  # noqa: F401
