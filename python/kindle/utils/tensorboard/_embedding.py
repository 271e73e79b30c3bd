"""SummaryWriter.add_embedding: the files TensorBoard's Projector reads.

Embeddings are not events: each one is a folder <log_dir>/<step:05d>/<tag, %-escaped> holding
tensors.tsv (one row a point), optionally metadata.tsv (its labels) and sprite.png (its
thumbnails), and <log_dir>/projector_config.pbtxt lists them all. Files are written through
the same gfile layer as TensorBoard's event writer, so they can go wherever the events go.
"""
import math

import numpy as np
from tensorboard.compat import tf
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo

from ._utils import ShapeError, make_grid

__all__ = ["write_embedding"]


def _join(a, b):
    # TensorBoard's TF stub has no gfile.join; real TensorFlow does (tensorboard issue 6080)
    gfile = tf.io.gfile
    return gfile.join(a, b) if hasattr(gfile, "join") else gfile.get_filesystem(a).join(a, b)


def _write(path, data):
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(data)


def encode_tag(tag):
    """The tag as one folder name: %, / and \\ escaped as %25, %2f, %5c (as torch does)."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def _metadata_tsv(metadata, header):
    if header:
        if len(header) != len(metadata[0]):
            raise ShapeError("len of header must be equal to the number of columns in metadata")
        lines = ["\t".join(str(e) for e in row) for row in [header, *metadata]]
    else:
        lines = [str(x) for x in metadata]
    return ("\n".join(lines) + "\n").encode("utf8")


def _tensors_tsv(mat):
    # str() of each value as a Python number: float32 values printed as the doubles they are
    return "".join("\t".join(str(v) for v in row) + "\n" for row in mat.tolist()).encode("utf8")


def _sprite_png(images):
    """The thumbnails of (N, C, H, W) images in a ceil(sqrt(N))-wide grid, values 0..1, on a
    canvas at least as tall as it is wide (the Projector expects a square sprite: torch pads
    the grid to width x width; a grid taller than that, which torch cannot write, keeps its
    height)."""
    import io

    from PIL import Image
    grid = make_grid(images, ncols=math.ceil(images.shape[0] ** 0.5)).transpose(1, 2, 0)
    gh, gw, c = grid.shape
    canvas = np.zeros((max(gh, gw), gw, c))
    canvas[:gh] = grid
    out = io.BytesIO()
    Image.fromarray(np.uint8((canvas * 255).clip(0, 255))).save(out, format="PNG")
    return out.getvalue()


def write_embedding(log_dir, mat, metadata=None, label_img=None, global_step=None, tag="default",
                    metadata_header=None):
    """Writes one embedding's folder under log_dir; returns its EmbeddingInfo for the config.

    mat: (N, D) array; metadata: N labels (or N rows of len(metadata_header) columns);
    label_img: (N, C, H, W) array of thumbnails."""
    step = 0 if global_step is None else global_step
    subdir = f"{str(step).zfill(5)}/{encode_tag(tag)}"
    save_path = _join(log_dir, subdir)
    gfile = tf.io.gfile
    if not gfile.exists(save_path):
        gfile.makedirs(save_path)
    elif gfile.isdir(save_path):  # its files are overwritten
        print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
    else:
        raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. Cannot proceed.")

    info = EmbeddingInfo(tensor_name=f"{tag}:{str(step).zfill(5)}", tensor_path=_join(subdir, "tensors.tsv"))
    if metadata is not None:
        if mat.shape[0] != len(metadata):
            raise ShapeError("#labels should equal with #data points")
        _write(_join(save_path, "metadata.tsv"), _metadata_tsv(metadata, metadata_header))
        info.metadata_path = _join(subdir, "metadata.tsv")
    if label_img is not None:
        if mat.shape[0] != label_img.shape[0]:
            raise ShapeError("#images should equal with #data points")
        if label_img.ndim != 4:
            raise ShapeError(f"label_img should be (N, C, H, W), got shape {label_img.shape}")
        _write(_join(save_path, "sprite.png"), _sprite_png(label_img))
        info.sprite.image_path = _join(subdir, "sprite.png")
        info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])  # width, height
    if mat.ndim != 2:
        raise ShapeError("mat should be 2D, where mat.size(0) is the number of data points")
    _write(_join(save_path, "tensors.tsv"), _tensors_tsv(mat))
    return info


def write_projector_config(log_dir, config):
    """Rewrites <log_dir>/projector_config.pbtxt (file systems gfile reaches may not append)."""
    from google.protobuf import text_format
    _write(_join(log_dir, "projector_config.pbtxt"), text_format.MessageToString(config).encode("utf8"))
