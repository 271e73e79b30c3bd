"""torch.utils.hooks: the handle returned by every register_*_hook."""
from ..nn.modules.hooks import RemovableHandle  # noqa: F401
