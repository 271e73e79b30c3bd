"""kindle.utils.tensorboard.SummaryWriter: the event files read back with TensorBoard's own
EventAccumulator, every value checked, and compared with what torch.utils.tensorboard writes for
the same calls."""
import os

import numpy as np
import pytest

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402

import kindle  # noqa: E402
from kindle.utils.tensorboard import SummaryWriter  # noqa: E402

GUIDANCE = {"images": 0, "histograms": 0, "tensors": 0, "scalars": 0}


def _read(path):
    ea = EventAccumulator(str(path), size_guidance=GUIDANCE)
    ea.Reload()
    return ea


def _log(lib, writer_cls, d):
    rng = np.random.default_rng(0)
    values = rng.standard_normal(1000)
    with writer_cls(str(d)) as w:
        for step in range(5):
            w.add_scalar("train/loss", 1.0 / (step + 1), step)
        w.add_scalar("tensor_value", lib.tensor(2.5), 7)
        w.add_histogram("weights", lib.tensor(values), 3)
        w.add_histogram("weights_auto", lib.tensor(values), 3, bins="auto", max_bins=10)
        w.add_image("img", lib.tensor(np.linspace(0, 1, 3 * 4 * 5).reshape(3, 4, 5)), 1)
        w.add_images("imgs", lib.tensor(np.linspace(0, 1, 2 * 1 * 4 * 5).reshape(2, 1, 4, 5)), 1)
        w.add_text("notes", "hello **world**", 2)
        w.add_scalars("run", {"a": 1.0, "b": 2.0}, 4)
        w.add_hparams({"lr": 0.1, "bs": 32, "opt": "sgd", "flag": True}, {"hparam/acc": 0.9}, run_name="hp")
    return values


def test_event_files_read_back(tmp_path):
    values = _log(kindle, SummaryWriter, tmp_path)
    ea = _read(tmp_path)
    assert [(e.step, e.value) for e in ea.Scalars("train/loss")] == [
        (i, pytest.approx(1.0 / (i + 1), rel=1e-7)) for i in range(5)]
    assert ea.Scalars("tensor_value")[0].value == 2.5 and ea.Scalars("tensor_value")[0].step == 7
    h = ea.Histograms("weights")[0].histogram_value
    assert h.num == 1000 and h.min == values.min() and h.max == values.max()
    assert h.sum == pytest.approx(values.sum()) and h.sum_squares == pytest.approx((values ** 2).sum())
    assert sum(h.bucket) == 1000 and len(h.bucket) == len(h.bucket_limit)
    n_auto = len(np.histogram_bin_edges(values, "auto")) - 1  # merged k = n // max_bins at a time
    assert len(ea.Histograms("weights_auto")[0].histogram_value.bucket) <= -(-n_auto // (n_auto // 10)) + 1
    img = ea.Images("img")[0]
    assert (img.width, img.height, img.step) == (5, 4, 1)
    grid = ea.Images("imgs")[0]
    assert (grid.width, grid.height) == (10, 4)  # two images side by side
    assert ea.Tensors("notes/text_summary")[0].tensor_proto.string_val == [b"hello **world**"]
    for tag, v in (("a", 1.0), ("b", 2.0)):
        sub = _read(tmp_path / f"run_{tag}")
        assert [(e.step, e.value) for e in sub.Scalars("run")] == [(4, v)]
    hp = _read(tmp_path / "hp")
    assert hp.Scalars("hparam/acc")[0].value == pytest.approx(0.9)
    content = hp.SummaryMetadata("_hparams_/session_start_info").plugin_data.content
    start = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
    assert start.hparams["lr"].number_value == 0.1 and start.hparams["bs"].number_value == 32
    assert start.hparams["opt"].string_value == "sgd" and start.hparams["flag"].bool_value


def test_same_records_as_torch(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    _log(kindle, SummaryWriter, tmp_path / "k")
    _log(torch, TorchWriter, tmp_path / "t")
    k, t = _read(tmp_path / "k"), _read(tmp_path / "t")
    assert k.Tags()["scalars"] == t.Tags()["scalars"] and k.Tags()["histograms"] == t.Tags()["histograms"]
    assert sorted(k.Tags()["images"]) == sorted(t.Tags()["images"])
    assert sorted(k.Tags()["tensors"]) == sorted(t.Tags()["tensors"])
    for tag in t.Tags()["scalars"]:
        assert [(e.step, e.value) for e in k.Scalars(tag)] == [(e.step, e.value) for e in t.Scalars(tag)]
    for tag in t.Tags()["histograms"]:
        kh, th = k.Histograms(tag)[0].histogram_value, t.Histograms(tag)[0].histogram_value
        assert (kh.num, kh.min, kh.max) == (th.num, th.min, th.max)
        assert kh.sum == pytest.approx(th.sum) and kh.sum_squares == pytest.approx(th.sum_squares)
        assert list(kh.bucket) == list(th.bucket)
        np.testing.assert_allclose(kh.bucket_limit, th.bucket_limit, rtol=1e-12)
    for tag in t.Tags()["images"]:
        ki, ti = k.Images(tag)[0], t.Images(tag)[0]
        assert (ki.width, ki.height) == (ti.width, ti.height)
    assert sorted(os.listdir(tmp_path / "k")).count("run_a") == 1


def test_figure_and_errors(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(2, 1), dpi=50)
    plt.plot([0, 1], [1, 0])
    with SummaryWriter(tmp_path) as w:
        w.add_figure("fig", fig, 0)
        with pytest.raises(ValueError, match="scalar should be 0D"):
            w.add_scalar("bad", kindle.ones(3))
        with pytest.raises(ValueError, match="no element"):
            w.add_histogram("empty", kindle.ones(0))
        with pytest.raises(TypeError, match="dictionary"):
            w.add_hparams([1], {})
        with pytest.raises(ValueError, match="input_to_model"):
            w.add_graph(kindle.nn.Linear(2, 2))
    img = _read(tmp_path).Images("fig")[0]
    assert (img.width, img.height) == (100, 50)


def test_default_log_dir_and_purge(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_exp")
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_exp")
    w.add_scalar("x", 1.0, 0)
    w.close()
    assert os.listdir(w.get_logdir())
    w2 = SummaryWriter(tmp_path / "p", purge_step=3)
    w2.add_scalar("x", 1.0, 3)
    w2.close()
    assert [e.step for e in _read(tmp_path / "p").Scalars("x")] == [3]


def _graph_net(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            return lib.relu(self.fc(x)) + x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.act, self.block, self.fc2 = nn.Linear(4, 8), nn.ReLU(), Block(), nn.Linear(8, 2)

        def forward(self, x):
            return lib.softmax(self.fc2(self.block(self.act(self.fc1(x)))) * 2, dim=1)
    lib.manual_seed(0)
    return Net()


def _graph_summary(graph):
    ops = sorted(n.op for n in graph.node if n.op.startswith("aten::"))
    by_name = {n.name: n for n in graph.node}
    io = {n.name: [[d.size for d in s.dim] for s in n.attr["_output_shapes"].list.shape]
          for n in graph.node if n.op == "IO Node"}
    edges = set()  # (consumer op, producer op) between ops, through the parameters' reads
    for n in graph.node:
        for i in n.input:
            if n.op.startswith("aten::") and by_name[i].op.startswith("aten::"):
                edges.add((n.op, by_name[i].op))
    return ops, io, edges


def test_add_graph_read_back(tmp_path):
    with SummaryWriter(tmp_path / "k") as w:
        w.add_graph(_graph_net(kindle), kindle.randn(3, 4))
    graph = _read(tmp_path / "k").Graph()
    ops, io, edges = _graph_summary(graph)
    assert ops == ["aten::add", "aten::linear", "aten::linear", "aten::linear", "aten::mul", "aten::relu",
                   "aten::relu", "aten::softmax"]
    assert io == {"input/x": [[3, 4]], "output/output.1": [[3, 2]]}
    nodes = {n.name: n for n in graph.node}
    fc1 = [n for n in graph.node if n.name.startswith("Net/Linear[fc1]/") and n.op == "aten::linear"][0]
    assert fc1.input[0] == "input/x" and nodes[fc1.input[1]].op == "prim::GetAttr"
    assert [d.size for d in nodes[fc1.input[1]].attr["_output_shapes"].list.shape[0].dim] == [8, 4]
    assert any(n.name.startswith("Net/Block[block]/Linear[fc]/") for n in graph.node)  # nested scopes
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    with TorchWriter(str(tmp_path / "t")) as w:
        w.add_graph(_graph_net(torch), torch.randn(3, 4))
    t_ops, t_io, t_edges = _graph_summary(_read(tmp_path / "t").Graph())
    assert ops == t_ops and list(io.values()) == list(t_io.values()) and edges == t_edges
