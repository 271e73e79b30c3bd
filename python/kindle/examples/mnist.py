"""Readers for the IDX files that MNIST (and Fashion-MNIST, EMNIST, ...) ship in.

An IDX file is a 4-byte magic number (two zero bytes, a type code, the number of
dimensions), one big-endian uint32 per dimension, then the values in row-major order,
big-endian. MNIST's four files are

    train-images-idx3-ubyte  (60000, 28, 28) uint8     train-labels-idx1-ubyte  (60000,) uint8
    t10k-images-idx3-ubyte   (10000, 28, 28) uint8     t10k-labels-idx1-ubyte   (10000,) uint8

often gzipped (`.gz`) and sometimes spelled with a dot (`train-images.idx3-ubyte`). Both
spellings and both forms are accepted. Every header is checked against the data that follows
it before anything is allocated from it, so a truncated or mislabelled file raises ValueError
naming the file and what was wrong, never a crash or a silently short data set.
"""
import gzip
import os
import zlib

import numpy as np

import kindle

__all__ = ["read_idx", "load_mnist", "find_idx_file"]

# IDX type code -> (big-endian NumPy dtype, name used in messages).
_IDX_TYPES = {
    0x08: (np.dtype(">u1"), "uint8"),
    0x09: (np.dtype(">i1"), "int8"),
    0x0B: (np.dtype(">i2"), "int16"),
    0x0C: (np.dtype(">i4"), "int32"),
    0x0D: (np.dtype(">f4"), "float32"),
    0x0E: (np.dtype(">f8"), "float64"),
}
_CHUNK = 1 << 20


def _read_at_most(f, n):
    # Read in bounded chunks: a header may claim more than the file holds (or a gzip stream
    # may expand past what the header claims), and neither should decide our allocation.
    buf = bytearray()
    while len(buf) < n:
        chunk = f.read(min(_CHUNK, n - len(buf)))
        if not chunk:
            break
        buf += chunk
    return bytes(buf)


def read_idx(path):
    """Read one IDX file (plain or gzipped) into a kindle tensor of its own dtype and shape.

    Raises FileNotFoundError if `path` does not exist and ValueError if it is not a
    well-formed IDX file (bad magic number, unknown type code, data shorter or longer than
    the header's dimensions say, corrupt gzip stream).
    """
    path = os.fspath(path)
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            return _parse(f, path)
    except (OSError, EOFError, zlib.error) as e:
        if isinstance(e, FileNotFoundError):
            raise
        # gzip reports a corrupt stream as BadGzipFile (an OSError), EOFError or zlib.error.
        raise ValueError(f"read_idx: {path} could not be read: {e}") from e


def _parse(f, path):
    magic = f.read(4)
    if len(magic) < 4:
        raise ValueError(f"read_idx: {path} is {len(magic)} bytes long, too short for the "
                         f"4-byte IDX magic number")
    if magic[0] != 0 or magic[1] != 0:
        raise ValueError(f"read_idx: {path} is not an IDX file: its magic number "
                         f"0x{magic.hex()} does not start with two zero bytes")
    code, ndim = magic[2], magic[3]
    if code not in _IDX_TYPES:
        known = ", ".join(f"0x{c:02X} ({n})" for c, (_, n) in _IDX_TYPES.items())
        raise ValueError(f"read_idx: {path} has unknown IDX type code 0x{code:02X}; "
                         f"expected one of {known}")
    if ndim == 0:
        raise ValueError(f"read_idx: {path} declares 0 dimensions")
    header = f.read(4 * ndim)
    if len(header) < 4 * ndim:
        raise ValueError(f"read_idx: {path} ends inside its header: {ndim} dimensions need "
                         f"{4 * ndim} bytes after the magic number, found {len(header)}")
    shape = tuple(int.from_bytes(header[4 * i:4 * i + 4], "big") for i in range(ndim))
    dtype, _ = _IDX_TYPES[code]
    expected = dtype.itemsize
    for s in shape:
        expected *= s
    data = _read_at_most(f, expected + 1)
    if len(data) != expected:
        what = "more than" if len(data) > expected else f"{len(data)} bytes, not"
        raise ValueError(f"read_idx: {path} holds {what} the {expected} data bytes that its "
                         f"header's shape {shape} of {_IDX_TYPES[code][1]} needs")
    arr = np.frombuffer(data, dtype=dtype).reshape(shape)
    # NumPy's native byte order, and a copy that owns its memory, for kindle.from_numpy.
    return kindle.from_numpy(arr.astype(dtype.newbyteorder("="), copy=True))


def find_idx_file(root, prefix, kind, ndim):
    """The path of e.g. train-images-idx3-ubyte under `root`, in any of its usual spellings."""
    names = [f"{prefix}-{kind}-idx{ndim}-ubyte", f"{prefix}-{kind}.idx{ndim}-ubyte"]
    candidates = [os.path.join(root, n + ext) for n in names for ext in ("", ".gz")]
    for c in candidates:
        if os.path.isfile(c):
            return c
    raise FileNotFoundError(
        f"load_mnist: no {prefix} {kind} file in {root!r}; looked for "
        + ", ".join(os.path.basename(c) for c in candidates))


def load_mnist(root, train=True):
    """MNIST's training (`train=True`) or test split from the IDX files in folder `root`.

    Returns (images, labels): a uint8 tensor of shape (N, H, W) and an int64 tensor of shape
    (N,). Raises FileNotFoundError naming the files it looked for when one is missing and
    ValueError when a file is malformed or the images and labels do not match.
    """
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise FileNotFoundError(f"load_mnist: {root!r} is not a folder")
    prefix = "train" if train else "t10k"
    images_path = find_idx_file(root, prefix, "images", 3)
    labels_path = find_idx_file(root, prefix, "labels", 1)
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    if images.dim() != 3 or images.dtype != kindle.uint8:
        raise ValueError(f"load_mnist: {images_path} should hold uint8 images of shape "
                         f"(N, H, W), found {images.dtype} of shape {tuple(images.shape)}")
    if labels.dim() != 1 or labels.dtype != kindle.uint8:
        raise ValueError(f"load_mnist: {labels_path} should hold uint8 labels of shape (N,), "
                         f"found {labels.dtype} of shape {tuple(labels.shape)}")
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"load_mnist: {images_path} holds {images.shape[0]} images but "
                         f"{labels_path} holds {labels.shape[0]} labels")
    return images, labels.long()
