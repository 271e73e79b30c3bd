"""Array layout helpers shared by the image, video and embedding summaries.

They reproduce torch.utils.tensorboard's layouts, so that a batch logged with Kindle looks the
same in TensorBoard as one logged with PyTorch: a batch of images becomes rows of up to 8
images (make_grid), a batch of videos a power-of-two grid of clips (prepare_video).
"""
import numpy as np

__all__ = ["make_grid", "convert_to_hwc", "prepare_video", "ShapeError"]


class ShapeError(ValueError, AssertionError):
    """A bad input shape or length. torch.utils.tensorboard raises AssertionError for these and
    Kindle's own checks raise ValueError; this is both, so either `except` clause catches it."""


def make_grid(images, ncols=8):
    """(C, rows*H, cols*W) canvas from an (N, C, H, W) array: images left to right, top to
    bottom, `ncols` per row (fewer when N is smaller), unused cells zero. One channel is
    repeated to three (RGB); four (RGBA) is kept, where torch only accepts one or three."""
    if not isinstance(images, np.ndarray) or images.ndim != 4:
        raise ShapeError(f"make_grid expects an (N, C, H, W) array, got {getattr(images, 'shape', images)}")
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, axis=1)
    n, c, h, w = images.shape
    if c not in (3, 4):
        raise ShapeError(f"images should have 1, 3 or 4 channels, got {c}")
    ncols = max(1, min(n, ncols))
    nrows = -(-n // ncols)
    canvas = np.zeros((c, nrows * h, ncols * w), dtype=images.dtype)
    for i in range(n):
        r, col = divmod(i, ncols)
        canvas[:, r * h:(r + 1) * h, col * w:(col + 1) * w] = images[i]
    return canvas


def convert_to_hwc(a, dataformats):
    """An (H, W, C) image from `a` laid out as `dataformats` (letters N, C, H, W in any order):
    four letters make a grid of the batch, "HW"/"WH" a grey image repeated to three channels.
    Kindle also accepts "NHW"-style batches of grey images, which torch rejects."""
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt) or set(fmt) - set("NCHW"):
        raise ShapeError(f"dataformats {dataformats!r}: use each of the letters N, C, H, W at most once")
    if len(fmt) != a.ndim:
        raise ShapeError(f"size of input tensor and input format are different: tensor shape {a.shape}, "
                         f"input_format {dataformats!r}")
    if "N" in fmt:
        if "C" not in fmt:  # a batch of grey images
            a, fmt = np.expand_dims(a, a.ndim), fmt + "C"
        return make_grid(a.transpose([fmt.index(ch) for ch in "NCHW"])).transpose(1, 2, 0)
    if "C" not in fmt:
        if fmt not in ("HW", "WH"):
            raise ShapeError(f"dataformats {dataformats!r} does not describe an image")
        a = a.transpose([fmt.index(ch) for ch in "HW"])
        return np.stack([a, a, a], axis=2)
    if len(fmt) != 3:
        raise ShapeError(f"dataformats {dataformats!r} does not describe an image")
    a = a.transpose([fmt.index(ch) for ch in "HWC"])
    return np.concatenate([a, a, a], axis=2) if a.shape[2] == 1 else a


def prepare_video(v):
    """(T, rows*H, cols*W, C) frames from an (N, T, C, H, W) batch of clips, values in [0, 1]:
    the batch is zero-padded to a power of two and laid out as a grid of 2**k rows (4 clips:
    2x2, 8 clips: 2x4), every clip playing in its own cell."""
    if v.ndim != 5:
        raise ShapeError(f"video should be (N, T, C, H, W), got shape {v.shape}")
    b, t, c, h, w = v.shape
    if b == 0:
        raise ShapeError("video batch is empty")
    if v.dtype == np.uint8:
        v = np.float32(v) / 255.0
    padded = 1 << (b - 1).bit_length()
    if padded != b:
        v = np.concatenate([v, np.zeros((padded - b, t, c, h, w))], axis=0)
    n_rows = 2 ** ((b.bit_length() - 1) // 2)
    n_cols = padded // n_rows
    v = v.reshape(n_rows, n_cols, t, c, h, w).transpose(2, 0, 4, 1, 5, 3)
    return v.reshape(t, n_rows * h, n_cols * w, c)
