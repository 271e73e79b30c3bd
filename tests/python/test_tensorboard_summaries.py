"""SummaryWriter's remaining summaries (PR curves, raw histograms, audio, video, boxes, meshes,
custom scalars, embeddings, ONNX graphs, the add_images grid): the event files and projector
files Kindle writes, read back with TensorBoard's own readers, and compared with what
torch.utils.tensorboard writes for the same inputs (those comparisons skip without torch)."""
import glob
import io
import os
import types
import wave

import numpy as np
import pytest

pytest.importorskip("tensorboard")
PIL_Image = pytest.importorskip("PIL.Image")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader  # noqa: E402
from tensorboard.compat.proto.attr_value_pb2 import AttrValue  # noqa: E402
from tensorboard.plugins.custom_scalar import layout_pb2  # noqa: E402
from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData  # noqa: E402
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData  # noqa: E402

import kindle  # noqa: E402
from kindle.utils.tensorboard import SummaryWriter  # noqa: E402
from kindle.utils.tensorboard._onnx_graph import parse as kindle_onnx_parse  # noqa: E402

RNG = np.random.default_rng(0)
IMG = RNG.random((3, 32, 48)).astype(np.float32)
BOXES = np.array([[2, 3, 20, 25], [10.5, 5, 40, 30]], dtype=np.float32)
# a clip whose colours GIF's 256-colour palette keeps exactly: 4 grey levels and 4 reds
VIDEO = (RNG.integers(0, 4, (3, 4, 3, 8, 6)) * 85).astype(np.uint8)
VIDEO[:, :, 1:] = np.where(VIDEO[:, :, :1] > 100, 0, VIDEO[:, :, 1:])
SOUND = (0.5 * np.sin(np.linspace(0, 40, 800))).astype(np.float32)[None]
PR_LABELS = RNG.integers(0, 2, 100)
PR_PREDS = RNG.random(100).astype(np.float32)
HIST_VALUES = np.repeat(np.arange(10) + 0.5, np.arange(10) + 1)
MESH_V = np.array([[[1, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]], dtype=np.float32)
MESH_C = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 0, 255]]], dtype=np.int32)
MESH_F = np.array([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]], dtype=np.int32)
BATCH4 = RNG.random((4, 3, 8, 8)).astype(np.float32)
BATCH10_GREY = (RNG.random((10, 1, 5, 6)) * 255).astype(np.uint8)
BATCH_NHWC = RNG.random((9, 4, 5, 3))
GREY_WH, GREY_HWC = RNG.random((7, 5)), RNG.random((6, 5, 1))
EMB_MAT = RNG.standard_normal((20, 5)).astype(np.float32)
EMB_IMAGES = RNG.random((20, 3, 6, 8)).astype(np.float32)
LAYOUT = {"Taiwan": {"twse": ["Multiline", ["twse/0050", "twse/2330"]]},
          "USA": {"dow": ["Margin", ["dow/aaa", "dow/bbb", "dow/ccc"]],
                  "nasdaq": ["Margin", ["nasdaq/aaa", "nasdaq/bbb", "nasdaq/ccc"]]}}


def _torch_writer():
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    return torch, TorchWriter


def _values(logdir):
    """[(step, Summary.Value)] of the event files directly in logdir, in the order written."""
    out = []
    for path in sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*"))):
        for event in LegacyEventFileLoader(path).Load():
            out.extend((event.step, v) for v in event.summary.value)
    return out


def _pixels(encoded):
    return np.asarray(PIL_Image.open(io.BytesIO(encoded)).convert("RGBA"))


def _same_values(k, t):
    """Kindle's records equal torch's: protos exactly, images by their decoded pixels."""
    assert [(s, v.tag) for s, v in k] == [(s, v.tag) for s, v in t]
    for (_, kv), (_, tv) in zip(k, t):
        if tv.HasField("image"):
            ki, ti = kv.image, tv.image
            assert (ki.height, ki.width, ki.colorspace) == (ti.height, ti.width, ti.colorspace)
            np.testing.assert_array_equal(_pixels(ki.encoded_image_string), _pixels(ti.encoded_image_string))
        else:
            assert kv == tv


def _write_both(tmp_path, log):
    """Runs log(writer, lib) with Kindle and with torch; the two logs' records."""
    torch, TorchWriter = _torch_writer()
    with SummaryWriter(tmp_path / "k") as w:
        log(w, kindle)
    with TorchWriter(str(tmp_path / "t")) as w:
        log(w, torch)
    return _values(tmp_path / "k"), _values(tmp_path / "t")


def _t(lib, a):
    return lib.tensor(np.asarray(a))


# ---- histograms and PR curves


def _log_hist_raw(w, lib):
    counts, edges = np.histogram(HIST_VALUES, bins=np.arange(12))
    # torch hands the buckets to the protobuf as they come: lists there; Kindle takes tensors too
    conv = (lambda a: a.tolist()) if lib.__name__ == "torch" else (lambda a: _t(lib, a))
    w.add_histogram_raw("raw", HIST_VALUES.min(), HIST_VALUES.max(), len(HIST_VALUES), HIST_VALUES.sum(),
                        HIST_VALUES.dot(HIST_VALUES), conv(edges[1:]), conv(counts), global_step=3)


def test_histogram_raw(tmp_path):
    with SummaryWriter(tmp_path) as w:
        _log_hist_raw(w, kindle)
        with pytest.raises(ValueError, match="bucket_limits"):
            w.add_histogram_raw("bad", 0, 1, 1, 1, 1, [1.0, 2.0], [1.0])
    ea = EventAccumulator(str(tmp_path))
    ea.Reload()
    h = ea.Histograms("raw")[0]
    assert h.step == 3 and h.histogram_value.num == 55 and h.histogram_value.max == 9.5
    assert list(h.histogram_value.bucket) == list(range(1, 11)) + [0]
    assert list(h.histogram_value.bucket_limit) == list(range(1, 12))


def test_histogram_raw_matches_torch(tmp_path):
    _same_values(*_write_both(tmp_path, _log_hist_raw))


def _log_pr(w, lib):
    w.add_pr_curve("pr", _t(lib, PR_LABELS), _t(lib, PR_PREDS), 1)
    w.add_pr_curve("pr_coarse", PR_LABELS, PR_PREDS, 2, num_thresholds=11, weights=0.5)
    w.add_pr_curve("pr_capped", _t(lib, PR_LABELS), _t(lib, PR_PREDS), 3, num_thresholds=500)
    tp, fp = np.array([50.0, 40, 30, 10, 0]), np.array([50.0, 20, 10, 5, 0])
    raw = [tp, fp, 50 - fp, 50 - tp, tp / np.maximum(tp + fp, 1), tp / 50]
    w.add_pr_curve_raw("pr_raw", *[_t(lib, a) for a in raw], global_step=4, num_thresholds=5)


def test_pr_curves(tmp_path):
    with SummaryWriter(tmp_path) as w:
        _log_pr(w, kindle)
    ea = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    ea.Reload()
    meta = PrCurvePluginData.FromString(ea.SummaryMetadata("pr").plugin_data.content)
    assert ea.SummaryMetadata("pr").plugin_data.plugin_name == "pr_curves" and meta.num_thresholds == 127
    data = np.array(ea.Tensors("pr")[0].tensor_proto.float_val).reshape(6, 127)
    tp, fp, tn, fn, precision, recall = data
    assert tp[0] == PR_LABELS.sum() and fp[0] == (1 - PR_LABELS).sum() and tn[0] == fn[0] == 0
    for i in (0, 40, 100):  # threshold i/126: a prediction counts as positive from its bin up
        positive = np.floor(PR_PREDS * 126) >= i
        assert tp[i] == (positive & (PR_LABELS == 1)).sum() and fp[i] == (positive & (PR_LABELS == 0)).sum()
        assert tn[i] + fp[i] == (PR_LABELS == 0).sum() and precision[i] == pytest.approx(tp[i] / (tp[i] + fp[i]))
    np.testing.assert_allclose(recall, tp / tp[0], rtol=1e-6)
    assert PrCurvePluginData.FromString(ea.SummaryMetadata("pr_capped").plugin_data.content).num_thresholds == 127
    coarse = ea.Tensors("pr_coarse")[0].tensor_proto
    assert [d.size for d in coarse.tensor_shape.dim] == [6, 11] and coarse.float_val[0] == PR_LABELS.sum() / 2
    assert [d.size for d in ea.Tensors("pr_raw")[0].tensor_proto.tensor_shape.dim] == [6, 5]


def test_pr_curves_match_torch(tmp_path):
    _same_values(*_write_both(tmp_path, _log_pr))


# ---- images


def _log_images(w, lib):
    w.add_images("batch4", _t(lib, BATCH4), 0)
    w.add_images("batch10_grey", _t(lib, BATCH10_GREY), 0)
    w.add_images("batch_nhwc", BATCH_NHWC, 0, dataformats="NHWC")
    w.add_image("wh", GREY_WH, 0, dataformats="WH")
    w.add_image("hwc_grey", GREY_HWC, 0, dataformats="HWC")


def test_images_grid(tmp_path):
    with SummaryWriter(tmp_path) as w:
        _log_images(w, kindle)
    sizes = {v.tag: (v.image.width, v.image.height) for _, v in _values(tmp_path)}
    # rows of up to 8 images (torch's make_grid), not a square grid
    assert sizes == {"batch4": (32, 8), "batch10_grey": (48, 10), "batch_nhwc": (40, 8), "wh": (7, 5),
                     "hwc_grey": (5, 6)}
    grid = _pixels(dict((v.tag, v) for _, v in _values(tmp_path))["batch_nhwc"].image.encoded_image_string)
    assert (grid[4:, 5:] == [0, 0, 0, 255]).all()  # the second row's empty cells


def test_images_match_torch(tmp_path):
    _same_values(*_write_both(tmp_path, _log_images))


def _log_boxes(w, lib):
    w.add_image_with_boxes("boxes", _t(lib, IMG), _t(lib, BOXES), 0, labels=["cat", "dog"])
    w.add_image_with_boxes("boxes_hwc", IMG.transpose(1, 2, 0), BOXES, 1, dataformats="HWC")
    w.add_image_with_boxes("one_label", _t(lib, IMG), _t(lib, BOXES[:1]), 2, labels="cat")
    w.add_image_with_boxes("labels_dropped", _t(lib, IMG), _t(lib, BOXES), 3, labels=["cat"])


def test_image_with_boxes(tmp_path):
    with SummaryWriter(tmp_path) as w:
        _log_boxes(w, kindle)
        w.add_image_with_boxes("scaled", IMG, BOXES, 4, rescale=2)
    v = dict((v.tag, v.image) for _, v in _values(tmp_path))
    assert (v["boxes"].width, v["boxes"].height) == (48, 32)
    px = _pixels(v["boxes_hwc"].encoded_image_string)
    assert (px[3, 2:21, :3] == [255, 0, 0]).all()  # the first box's top edge, red
    assert not (_pixels(v["boxes"].encoded_image_string) == px).all()  # the labels were drawn
    np.testing.assert_array_equal(_pixels(v["labels_dropped"].encoded_image_string), px)
    assert (v["scaled"].width, v["scaled"].height) == (96, 64) == _pixels(v["scaled"].encoded_image_string).shape[1::-1]


def test_image_with_boxes_matches_torch(tmp_path):
    _same_values(*_write_both(tmp_path, _log_boxes))
    # rescale: the same pixels; torch records the size before scaling, Kindle the PNG's
    k, t = _write_both(tmp_path / "scaled", lambda w, lib: w.add_image_with_boxes("s", IMG, BOXES, rescale=2))
    np.testing.assert_array_equal(_pixels(k[0][1].image.encoded_image_string),
                                  _pixels(t[0][1].image.encoded_image_string))
    assert (k[0][1].image.width, t[0][1].image.width) == (96, 48)


# ---- video and audio


def _expected_frames():
    # the clips in a grid: 3 clips padded to 4 with a black one, 1 row of 4
    v = np.concatenate([VIDEO, np.zeros((1, *VIDEO.shape[1:]), np.uint8)])
    return v.transpose(1, 3, 0, 4, 2).reshape(4, 8, 24, 3)


def _gif_frames(encoded):
    from PIL import ImageSequence
    gif = PIL_Image.open(io.BytesIO(encoded))
    return np.stack([np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(gif)]), gif.info


def test_video(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_video("clip", _t(kindle, VIDEO), 5, fps=10)
        w.add_video("clip_float", VIDEO[:2, :, :1].astype(np.float32) / 255, 6)
    v = dict((v.tag, v.image) for _, v in _values(tmp_path))
    assert (v["clip"].height, v["clip"].width, v["clip"].colorspace) == (8, 24, 3)
    frames, info = _gif_frames(v["clip"].encoded_image_string)
    np.testing.assert_array_equal(frames, _expected_frames())
    assert info["duration"] == 100 and info["loop"] == 0
    grey, _ = _gif_frames(v["clip_float"].encoded_image_string)  # 2 clips side by side, one channel
    assert grey.shape == (4, 8, 12, 3) and (v["clip_float"].colorspace == 1)
    np.testing.assert_array_equal(grey[:, :, 6:, 0], VIDEO[1, :, 0])


def test_video_matches_torch(tmp_path):
    torch, _ = _torch_writer()
    from torch.utils.tensorboard._utils import _prepare_video
    k, t = _write_both(tmp_path, lambda w, lib: w.add_video("clip", _t(lib, VIDEO), 5, fps=10))
    assert [(s, v.tag) for s, v in k] == [(s, v.tag) for s, v in t] == [(5, "clip")]
    frames = (_prepare_video(VIDEO).astype(np.float32) * 255).clip(0, 255).astype(np.uint8)
    np.testing.assert_array_equal(_gif_frames(k[0][1].image.encoded_image_string)[0], frames)
    if t[0][1].HasField("image"):  # torch with moviepy: the same clip size
        ti, ki = t[0][1].image, k[0][1].image
        assert (ki.height, ki.width, ki.colorspace) == (ti.height, ti.width, ti.colorspace)
    # (without moviepy torch records the tag and no image; Kindle encodes the GIF with Pillow)


def _log_audio(w, lib):
    w.add_audio("sound", _t(lib, SOUND), 2, sample_rate=8000)
    w.add_audio("sound_1d", SOUND[0, :100], 3)


def test_audio(tmp_path):
    with SummaryWriter(tmp_path) as w:
        _log_audio(w, kindle)
        with pytest.warns(UserWarning, match="clipped"):
            w.add_audio("loud", SOUND * 4, 4)
        with pytest.raises(ValueError, match="1 dimensional"):
            w.add_audio("stereo", np.zeros((2, 10)))
    ea = EventAccumulator(str(tmp_path), size_guidance={"audio": 0})
    ea.Reload()
    a = ea.Audio("sound")[0]
    assert (a.step, a.sample_rate, a.length_frames, a.content_type) == (2, 8000, 800, "audio/wav")
    with wave.open(io.BytesIO(a.encoded_audio_string)) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate(), wav.getnframes()) == (1, 2, 8000, 800)
        pcm = np.frombuffer(wav.readframes(800), "<i2")
    np.testing.assert_array_equal(pcm, (SOUND[0] * 32767).astype("<i2"))
    with wave.open(io.BytesIO(ea.Audio("loud")[0].encoded_audio_string)) as wav:
        assert np.abs(np.frombuffer(wav.readframes(800), "<i2")).max() == 32767


def test_audio_matches_torch(tmp_path):
    _same_values(*_write_both(tmp_path, _log_audio))


# ---- mesh and custom scalars


def _log_mesh(w, lib):
    config = {"camera": {"cls": "PerspectiveCamera", "fov": 75}, "lights": [{"cls": "AmbientLight"}]}
    w.add_mesh("mesh", _t(lib, MESH_V), colors=_t(lib, MESH_C), faces=_t(lib, MESH_F), config_dict=config,
               global_step=1)
    w.add_mesh("cloud", _t(lib, MESH_V), global_step=2)


def test_mesh(tmp_path):
    with SummaryWriter(tmp_path) as w:
        _log_mesh(w, kindle)
        with pytest.raises(ValueError, match="BxNx3"):
            w.add_mesh("flat", MESH_V[0])
    values = _values(tmp_path)
    assert [v.tag for _, v in values] == ["mesh_VERTEX", "mesh_FACE", "mesh_COLOR", "cloud_VERTEX"]
    data = {v.tag: MeshPluginData.FromString(v.metadata.plugin_data.content) for _, v in values}
    assert data["mesh_COLOR"].components == 0b1110 and data["cloud_VERTEX"].components == 0b10
    assert list(data["mesh_FACE"].shape) == [1, 4, 3] and data["mesh_FACE"].name == "mesh"
    assert '"fov": 75' in data["mesh_VERTEX"].json_config and data["cloud_VERTEX"].json_config == "{}"
    np.testing.assert_array_equal(values[2][1].tensor.float_val, MESH_C.reshape(-1))


def test_mesh_matches_torch(tmp_path):
    _same_values(*_write_both(tmp_path, _log_mesh))


def _log_custom_scalars(w, lib):
    w.add_custom_scalars(LAYOUT)
    w.add_custom_scalars_multilinechart(["loss/a", "loss/b"], category="losses", title="both")
    w.add_custom_scalars_marginchart(["acc", "acc_lo", "acc_hi"])


def test_custom_scalars(tmp_path):
    with SummaryWriter(tmp_path) as w:
        _log_custom_scalars(w, kindle)
        with pytest.raises(AssertionError, match="3 tags"):
            w.add_custom_scalars_marginchart(["a", "b"])
    values = _values(tmp_path)
    assert {v.tag for _, v in values} == {"custom_scalars__config__"}
    assert values[0][1].metadata.plugin_data.plugin_name == "custom_scalars"
    layout = layout_pb2.Layout.FromString(values[0][1].tensor.string_val[0])
    assert [c.title for c in layout.category] == ["Taiwan", "USA"]
    assert list(layout.category[0].chart[0].multiline.tag) == ["twse/0050", "twse/2330"]
    series = layout.category[1].chart[1].margin.series[0]
    assert (layout.category[1].chart[1].title, series.value, series.lower, series.upper) == (
        "nasdaq", "nasdaq/aaa", "nasdaq/bbb", "nasdaq/ccc")
    margin = layout_pb2.Layout.FromString(values[2][1].tensor.string_val[0]).category[0]
    assert (margin.title, margin.chart[0].title, margin.chart[0].margin.series[0].upper) == (
        "default", "untitled", "acc_hi")


def test_custom_scalars_match_torch(tmp_path):
    _same_values(*_write_both(tmp_path, _log_custom_scalars))


# ---- embeddings


def _log_embedding(w, lib):
    mat, images = EMB_MAT, EMB_IMAGES
    w.add_embedding(_t(lib, mat), metadata=[f"p{i}" for i in range(20)], label_img=_t(lib, images))
    w.add_embedding(_t(lib, mat[:6]), metadata=[[i, i % 2] for i in range(6)], global_step=3, tag="a/b%c",
                    metadata_header=["id", "parity"])
    w.add_embedding(mat[:4, :2], global_step=3, tag="plain")


def _projector_files(logdir):
    files = {}
    for path in glob.glob(os.path.join(str(logdir), "**", "*.*"), recursive=True):
        rel = os.path.relpath(path, logdir)
        if not rel.startswith("events.out"):
            with open(path, "rb") as f:
                files[rel] = f.read()
    return files


def test_embedding(tmp_path):
    with SummaryWriter(tmp_path) as w:
        _log_embedding(w, kindle)
        with pytest.raises(AssertionError, match="#labels"):
            w.add_embedding(np.zeros((3, 2)), metadata=["a"], tag="bad")
    files = _projector_files(tmp_path)
    j = os.path.join
    assert sorted(files) == sorted(["projector_config.pbtxt", j("00000", "default", "tensors.tsv"),
                                    j("00000", "default", "metadata.tsv"), j("00000", "default", "sprite.png"),
                                    j("00003", "a%2fb%25c", "tensors.tsv"), j("00003", "a%2fb%25c", "metadata.tsv"),
                                    j("00003", "plain", "tensors.tsv")])
    from google.protobuf import text_format
    from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
    config = text_format.Parse(files["projector_config.pbtxt"].decode(), ProjectorConfig())
    assert [e.tensor_name for e in config.embeddings] == ["default:00000", "a/b%c:00003", "plain:00003"]
    first = config.embeddings[0]
    assert first.tensor_path == j("00000", "default", "tensors.tsv")
    assert (first.sprite.image_path, list(first.sprite.single_image_dim)) == (j("00000", "default", "sprite.png"),
                                                                             [8, 6])
    assert not config.embeddings[2].metadata_path and not config.embeddings[2].sprite.image_path
    rows = files[j("00000", "default", "tensors.tsv")].decode().splitlines()
    assert len(rows) == 20 and len(rows[0].split("\t")) == 5
    assert files[j("00003", "a%2fb%25c", "metadata.tsv")].decode().splitlines()[:2] == ["id\tparity", "0\t0"]
    sprite = _pixels(files[j("00000", "default", "sprite.png")])
    assert sprite.shape == (40, 40, 4)  # 5x5 cells of 8x6, padded to a square


def test_embedding_matches_torch(tmp_path):
    _write_both(tmp_path, _log_embedding)
    k, t = _projector_files(tmp_path / "k"), _projector_files(tmp_path / "t")
    assert sorted(k) == sorted(t)
    for name in t:
        if name.endswith(".png"):
            np.testing.assert_array_equal(_pixels(k[name]), _pixels(t[name]))
        else:
            assert k[name] == t[name], name


# ---- ONNX graphs


def _fake_onnx_graph():
    """Duck-typed onnx GraphProto (onnx may not be installed): inputs/outputs with a tensor
    type, nodes with attributes that have ListFields like onnx's AttributeProto."""
    def value(name, dims):
        shape = types.SimpleNamespace(dim=[types.SimpleNamespace(dim_value=d) for d in dims])
        return types.SimpleNamespace(name=name, type=types.SimpleNamespace(
            tensor_type=types.SimpleNamespace(elem_type=1, shape=shape)))
    gemm = types.SimpleNamespace(output=["y"], op_type="Gemm", input=["x", "w", "b"],
                                 attribute=[AttrValue(f=1.0), AttrValue(i=1)])
    relu = types.SimpleNamespace(output=["z"], op_type="Relu", input=["y"], attribute=[])
    return types.SimpleNamespace(input=[value("x", [2, 3])], output=[value("z", [2, 4])], node=[gemm, relu])


def test_onnx_graph(tmp_path):
    graph = kindle_onnx_parse(_fake_onnx_graph())
    assert [(n.name, n.op, list(n.input)) for n in graph.node] == [
        ("x", "Variable", []), ("z", "Variable", []), ("y", "Gemm", ["x", "w", "b"]), ("z", "Relu", ["y"])]
    assert [d.size for d in graph.node[0].attr["shape"].shape.dim] == [2, 3]
    assert graph.node[2].attr["parameters"].s == b"1.0, 1"
    try:
        import onnx  # noqa: F401
    except ImportError:  # as torch: the missing package named
        with SummaryWriter(tmp_path) as w, pytest.raises(ModuleNotFoundError, match="onnx"):
            w.add_onnx_graph("model.onnx")


def test_onnx_graph_matches_torch(tmp_path, capsys):
    _torch_writer()
    from torch.utils.tensorboard._onnx_graph import parse
    assert kindle_onnx_parse(_fake_onnx_graph()) == parse(_fake_onnx_graph())
