"""Summary protocol buffers from Kindle tensors, NumPy arrays and Python values (the records
torch.utils.tensorboard.summary makes)."""
import io
import json
import warnings

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import metadata as hp_metadata
from tensorboard.plugins.hparams import plugin_data_pb2
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ._utils import ShapeError, convert_to_hwc, prepare_video

__all__ = ["scalar", "histogram", "histogram_raw", "image", "image_boxes", "make_image", "video", "make_video",
           "audio", "text", "hparams", "custom_scalars", "pr_curve", "pr_curve_raw", "compute_curve", "mesh",
           "make_np"]


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
        if str(getattr(x, "dtype", "")).endswith("bfloat16"):  # NumPy has no bfloat16; float32 holds it exactly
            x = x.float()
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


def _number(x):
    """A Python number from a number, a one-element array or a tensor."""
    return x if isinstance(x, (int, float)) else make_np(x).reshape(-1)[0].item()


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    """A histogram given as its statistics and buckets (each bucket's right edge and count)."""
    hist = HistogramProto(min=float(_number(min)), max=float(_number(max)), num=int(_number(num)),
                          sum=float(_number(sum)), sum_squares=float(_number(sum_squares)),
                          bucket_limit=make_np(bucket_limits).astype(np.float64).reshape(-1).tolist(),
                          bucket=make_np(bucket_counts).astype(np.float64).reshape(-1).tolist())
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def _to_uint8(a):
    """Pixels as uint8: uint8 input is taken as 0..255, anything else as 0..1 (then clipped)."""
    scale = 1 if a.dtype == np.uint8 else 255
    return (a.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def image(tag, tensor, rescale=1, dataformats="CHW"):
    a = convert_to_hwc(make_np(tensor), dataformats)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(_to_uint8(a), rescale))])


def image_boxes(tag, tensor_image, tensor_boxes, rescale=1, dataformats="CHW", labels=None):
    """An image with (xmin, ymin, xmax, ymax) boxes drawn on it in red, each with its label."""
    a = convert_to_hwc(make_np(tensor_image), dataformats)
    boxes = make_np(tensor_boxes).reshape(-1, 4)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(_to_uint8(a), rescale, boxes, labels))])


def _draw_box(draw, font, box, label, color="Red", text_color="black", thickness=2):
    # The outline, then the label on a filled band along the box's bottom edge: the drawing
    # calls torch makes, so that the pixels come out the same.
    x0, y0, x1, y1 = (float(v) for v in box)
    draw.line([(x0, y0), (x0, y1), (x1, y1), (x1, y0), (x0, y0)], width=thickness, fill=color)
    if label:
        left, top, right, bottom = font.getbbox(label)
        tw, th = right - left, bottom - top
        margin = np.ceil(0.05 * th)
        draw.rectangle([(x0, y1 - th - 2 * margin), (x0 + tw, y1)], fill=color)
        draw.text((x0 + margin, y1 - th - margin), label, fill=text_color, font=font)


def make_image(a, rescale=1, rois=None, labels=None):
    """A PNG Summary.Image from an (H, W, C) uint8 array, with boxes `rois` (N, 4) drawn first.
    The height and width recorded are the PNG's (torch records the size before `rescale`)."""
    from PIL import Image, ImageDraw, ImageFont
    h, w, c = a.shape
    img = Image.fromarray(a)
    if rois is not None and len(rois):
        draw, font = ImageDraw.Draw(img), ImageFont.load_default()
        for i, box in enumerate(rois):
            _draw_box(draw, font, box, None if labels is None else str(labels[i]))
    if rescale != 1:
        img = img.resize((int(w * rescale), int(h * rescale)), Image.Resampling.LANCZOS)
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



def video(tag, tensor, fps=4):
    """An animated GIF of an (N, T, C, H, W) batch of clips, laid out as torch lays them out."""
    frames = _to_uint8(prepare_video(make_np(tensor)))
    return Summary(value=[Summary.Value(tag=tag, image=make_video(frames, fps))])


def make_video(frames, fps):
    """A GIF Summary.Image of (T, H, W, C) uint8 frames, looping, `fps` frames a second.

    torch encodes with moviepy and, without it, prints a note and records the tag with no
    image; Pillow (already needed for images) writes animated GIFs itself, so Kindle always
    records the clip. (GIF keeps frame times in hundredths of a second, and merges identical
    consecutive frames into one longer frame.)"""
    try:
        from PIL import Image
    except ImportError:  # as torch without moviepy: the tag, no image
        print("add_video needs package Pillow")
        return None
    t, h, w, c = frames.shape
    if t == 0:
        raise ShapeError("video has no frames")
    images = [Image.fromarray(f[:, :, 0] if c == 1 else f) for f in frames]
    out = io.BytesIO()
    images[0].save(out, format="GIF", save_all=True, append_images=images[1:], duration=1000.0 / fps, loop=0)
    return Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=out.getvalue())


def audio(tag, tensor, sample_rate=44100):
    """A mono 16-bit PCM WAV clip of values in [-1, 1] (squeezed to one dimension)."""
    import wave
    a = make_np(tensor).squeeze()
    if a.size and np.abs(a).max() > 1:
        warnings.warn("audio amplitude out of range, auto clipped.", UserWarning, stacklevel=3)
        a = a.clip(-1, 1)
    if a.ndim != 1:
        raise ShapeError(f"input tensor should be 1 dimensional, got shape {a.shape}")
    pcm = (a * np.iinfo(np.int16).max).astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(sample_rate)
        wav.writeframes(pcm.tobytes())
    clip = Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=pcm.shape[-1],
                         encoded_audio_string=out.getvalue(), content_type="audio/wav")
    return Summary(value=[Summary.Value(tag=tag, audio=clip)])


def custom_scalars(layout):
    """The Custom Scalars plugin's layout: {category: {chart title: ["Multiline", [tags]] or
    ["Margin", [value tag, lower tag, upper tag]]}}, as the fixed tag custom_scalars__config__."""
    categories = []
    for category, charts in layout.items():
        protos = []
        for title, (kind, tags, *_) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise ShapeError(f"a Margin chart takes 3 tags (value, lower, upper), got {len(tags)}")
                series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])
                protos.append(layout_pb2.Chart(title=title, margin=layout_pb2.MarginChartContent(series=[series])))
            else:  # torch makes any other kind a multiline chart
                protos.append(layout_pb2.Chart(title=title, multiline=layout_pb2.MultilineChartContent(tag=tags)))
        categories.append(layout_pb2.Category(title=category, chart=protos))
    tensor = TensorProto(dtype="DT_STRING", tensor_shape=TensorShapeProto(),
                         string_val=[layout_pb2.Layout(category=categories).SerializeToString()])
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="custom_scalars"))
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=tensor, metadata=meta)])


def _float_tensor_summary(tag, data, meta):
    tensor = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(),
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in data.shape]))
    return Summary.Value(tag=tag, tensor=tensor, metadata=meta)


def _pr_summary(tag, data, num_thresholds):
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="pr_curves", content=content))
    return Summary(value=[_float_tensor_summary(tag, data, meta)])


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127, weights=None):
    """A PR curve given as its six rows of per-threshold values (`weights` unused, as in torch).
    num_thresholds is capped at 127, as torch caps it."""
    data = np.stack([make_np(x) for x in (tp, fp, tn, fn, precision, recall)])
    return _pr_summary(tag, data, min(num_thresholds, 127))


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    """A PR curve from binary labels and predicted probabilities (num_thresholds capped at 127)."""
    num_thresholds = min(num_thresholds, 127)
    data = compute_curve(make_np(labels), make_np(predictions), num_thresholds, weights)
    return _pr_summary(tag, data, num_thresholds)


def compute_curve(labels, predictions, num_thresholds=None, weights=None):
    """(6, num_thresholds): TP, FP, TN, FN, precision, recall at thresholds i / (num_thresholds - 1)
    (TensorBoard's pr_curve plugin's computation: predictions binned, then reverse cumulative sums)."""
    weights = 1.0 if weights is None else make_np(weights)
    bins = np.floor(predictions * (num_thresholds - 1)).astype(np.int32)
    positive = labels.astype(np.float64)
    span = (0, num_thresholds - 1)
    tp_bins, _ = np.histogram(bins, bins=num_thresholds, range=span, weights=positive * weights)
    fp_bins, _ = np.histogram(bins, bins=num_thresholds, range=span, weights=(1.0 - positive) * weights)
    tp = np.cumsum(tp_bins[::-1])[::-1]  # predicted positive at threshold i: the bins from i up
    fp = np.cumsum(fp_bins[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    tiny = 1e-7  # keeps precision and recall 0 (not NaN) where nothing was predicted or present
    return np.stack((tp, fp, tn, fn, tp / np.maximum(tiny, tp + fp), tp / np.maximum(tiny, tp + fn)))


def mesh(tag, vertices, colors, faces, config_dict, display_name=None, description=None):
    """The Mesh plugin's records: one (B, N, 3) float tensor each for the vertices, faces and
    colors given, tagged <tag>_VERTEX, <tag>_FACE, <tag>_COLOR, sharing a components bitmask."""
    from tensorboard.plugins.mesh import metadata
    from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData
    json_config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [(np.asarray(make_np(t)), kind) for t, kind in
             ((vertices, MeshPluginData.VERTEX), (faces, MeshPluginData.FACE), (colors, MeshPluginData.COLOR))
             if t is not None]
    components = metadata.get_components_bitmask([kind for _, kind in parts])
    values = []
    for data, kind in parts:
        meta = metadata.create_summary_metadata(tag, display_name, kind, components, list(data.shape), description,
                                                json_config=json_config)
        values.append(_float_tensor_summary(metadata.get_instance_name(tag, kind), data, meta))
    return Summary(value=values)
