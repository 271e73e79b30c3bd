"""Summary protocol buffers from Kindle tensors, NumPy arrays and Python values (the records
torch.utils.tensorboard.summary makes)."""
import io

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import metadata as hp_metadata
from tensorboard.plugins.hparams import plugin_data_pb2
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

__all__ = ["scalar", "histogram", "image", "text", "hparams", "make_np"]


def make_np(x):
    """A NumPy array from a Kindle (or torch) tensor, a NumPy array or a Python number."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        # (a copy: a weight logged every step would otherwise be marked as exported to NumPy and
        # lose its cached derived data, Note [Derived data cache] in csrc/core/derived_cache.cpp)
        x = x.detach().cpu() if hasattr(x, "cpu") else x.detach()
        return x.clone().numpy()
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    raise NotImplementedError(f"Got {type(x).__name__}, but numpy array or tensor are expected.")


def _scalar_value(v):
    a = make_np(v).squeeze()
    if a.ndim != 0 and a.size != 1:
        raise ValueError(f"scalar should be 0D, got a value of shape {a.shape}")
    return float(a.reshape(-1)[0]) if a.size else float("nan")


def scalar(name, value, new_style=False, double_precision=False):
    v = _scalar_value(value)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=v)])
    dtype = "DT_DOUBLE" if double_precision else "DT_FLOAT"
    tensor = TensorProto(dtype=dtype, tensor_shape=TensorShapeProto())
    if double_precision:
        tensor.double_val.append(v)
    else:
        tensor.float_val.append(v)
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=tensor, metadata=meta)])


def _tf_bucket_limits():
    # TensorFlow's default histogram buckets: 1e-12 * 1.1^k below 1e20, mirrored, and 0
    pos, v = [], 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return np.array([-x for x in reversed(pos)] + [0.0] + pos)


def histogram(name, values, bins, max_bins=None):
    v = make_np(values).astype(np.float64).reshape(-1)
    if v.size == 0:
        raise ValueError("The input has no element.")
    counts, edges = np.histogram(v, bins=_tf_bucket_limits() if isinstance(bins, str) and bins == "tensorflow"
                                 else bins)
    if max_bins is not None and len(counts) > max_bins:  # merge runs of k neighbouring bins
        k = len(counts) // max_bins
        pad = (-len(counts)) % k
        counts = np.pad(counts, (0, pad)).reshape(-1, k).sum(axis=1)
        edges = np.concatenate([edges[:-1:k], edges[-1:]])
    # TensorBoard keeps each bucket's right edge: the support's buckets, and the bucket before
    # them (empty) so that the support's left edge is kept too
    nz = np.nonzero(counts)[0]
    if nz.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    first, last = int(nz[0]), int(nz[-1])
    kept = np.concatenate([[0], counts[:last + 1]]) if first == 0 else counts[first - 1:last + 1]
    limits = edges[first:last + 2]
    hist = HistogramProto(min=float(v.min()), max=float(v.max()), num=int(v.size), sum=float(v.sum()),
                          sum_squares=float(v.dot(v)), bucket_limit=[float(x) for x in limits],
                          bucket=[float(c) for c in kept])
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def _to_hwc(a, dataformats):
    fmt = dataformats.upper()
    if len(fmt) != a.ndim or len(set(fmt)) != len(fmt):
        raise ValueError(f"dataformats {dataformats!r} does not match an image of shape {a.shape}")
    if "N" in fmt:  # a grid of images, as torchvision's make_grid lays them out
        a = np.transpose(a, [fmt.index(c) for c in "NCHW" if c in fmt]) if "C" in fmt else \
            np.expand_dims(np.transpose(a, [fmt.index(c) for c in "NHW"]), 1)
        n, c, h, w = a.shape
        if c == 1:
            a = np.concatenate([a, a, a], 1)
        cols = int(np.ceil(np.sqrt(n)))
        rows = int(np.ceil(n / cols))
        grid = np.zeros((a.shape[1], rows * h, cols * w), dtype=a.dtype)
        for i in range(n):
            r, col = divmod(i, cols)
            grid[:, r * h:(r + 1) * h, col * w:(col + 1) * w] = a[i]
        return np.transpose(grid, (1, 2, 0))
    if fmt == "HW":
        return a[:, :, None]
    order = [fmt.index(c) for c in "HWC"]
    a = np.transpose(a, order)
    return a


def image(tag, tensor, rescale=1, dataformats="CHW"):
    a = make_np(tensor)
    a = _to_hwc(a, dataformats)
    if a.shape[2] == 1:
        a = np.concatenate([a, a, a], 2)
    scale = 1 if a.dtype == np.uint8 else 255.0
    a = np.clip(a.astype(np.float32) * scale, 0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=_encode_png(a, rescale))])


def _encode_png(a, rescale=1):
    from PIL import Image
    h, w, c = a.shape
    img = Image.fromarray(a)
    if rescale != 1:
        img = img.resize((int(w * rescale), int(h * rescale)))
        w, h = img.size
    out = io.BytesIO()
    img.save(out, format="PNG")
    return Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=out.getvalue())


def figure_to_image(figure, close=True):
    """A matplotlib figure rendered to an (H, W, 3) uint8 array."""
    import matplotlib.backends.backend_agg as agg
    canvas = agg.FigureCanvasAgg(figure)
    canvas.draw()
    data = np.asarray(canvas.buffer_rgba())[:, :, :3].copy()
    if close:
        import matplotlib.pyplot as plt
        plt.close(figure)
    return data


def text(tag, text_string):
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=tensor)])


def _hp_summary(tag, plugin_data):
    content = plugin_data.SerializeToString()
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=hp_metadata.PLUGIN_NAME,
                                                                  content=content))
    return Summary(value=[Summary.Value(tag=tag, metadata=meta)])


def hparams(hparam_dict, metric_dict, hparam_domain_discrete=None):
    """The three records of the HParams plugin: the experiment, the session start and its end."""
    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError("parameter: hparam_dict and metric_dict should be dictionary.")
    hparam_domain_discrete = hparam_domain_discrete or {}
    infos, start = [], plugin_data_pb2.SessionStartInfo()
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, bool):
            start.hparams[k].bool_value = v
            dtype = api_pb2.DATA_TYPE_BOOL
        elif isinstance(v, (int, float)):
            start.hparams[k].number_value = float(v)
            dtype = api_pb2.DATA_TYPE_FLOAT64
        elif isinstance(v, str):
            start.hparams[k].string_value = v
            dtype = api_pb2.DATA_TYPE_STRING
        elif hasattr(v, "item"):
            start.hparams[k].number_value = float(make_np(v).reshape(-1)[0])
            dtype = api_pb2.DATA_TYPE_FLOAT64
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        info = api_pb2.HParamInfo(name=k, type=dtype)
        if k in hparam_domain_discrete:
            from google.protobuf import struct_pb2
            info.domain_discrete.CopyFrom(struct_pb2.ListValue(values=[
                struct_pb2.Value(bool_value=d) if isinstance(d, bool) else
                struct_pb2.Value(number_value=d) if isinstance(d, (int, float)) else
                struct_pb2.Value(string_value=str(d)) for d in hparam_domain_discrete[k]]))
        infos.append(info)
    metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k)) for k in metric_dict]
    exp = api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics)
    exp_s = _hp_summary(hp_metadata.EXPERIMENT_TAG,
                        plugin_data_pb2.HParamsPluginData(experiment=exp, version=hp_metadata.PLUGIN_DATA_VERSION))
    ssi = _hp_summary(hp_metadata.SESSION_START_INFO_TAG,
                      plugin_data_pb2.HParamsPluginData(session_start_info=start,
                                                        version=hp_metadata.PLUGIN_DATA_VERSION))
    end = plugin_data_pb2.SessionEndInfo(status=api_pb2.STATUS_SUCCESS)
    sei = _hp_summary(hp_metadata.SESSION_END_INFO_TAG,
                      plugin_data_pb2.HParamsPluginData(session_end_info=end, version=hp_metadata.PLUGIN_DATA_VERSION))
    return exp_s, ssi, sei

