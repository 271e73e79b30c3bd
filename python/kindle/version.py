"""kindle.version (torch.version): what this build is. Kindle's CPU build has no CUDA, HIP or XPU
toolkit, so those are None, as in torch's CPU wheels."""
from typing import Optional

from .torch_version import __version__  # noqa: F401

__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]

debug = False
cuda: Optional[str] = None
hip: Optional[str] = None
rocm: Optional[str] = None
xpu: Optional[str] = None
git_version = "unknown"
