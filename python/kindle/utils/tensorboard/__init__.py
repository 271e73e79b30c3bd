"""torch.utils.tensorboard for Kindle: SummaryWriter writes TensorBoard event files.

The records are TensorBoard's own protocol buffers, written by the `tensorboard` package's event
file writer (TFRecord framing with masked CRC32C), so TensorBoard and its EventAccumulator read
them as they read PyTorch's. Install it with `pip install tensorboard` (or kindle[tensorboard]).
"""
try:
    import tensorboard  # noqa: F401
except ImportError as e:  # as torch.utils.tensorboard
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above") from e

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["SummaryWriter", "FileWriter"]
