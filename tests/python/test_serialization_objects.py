"""kindle.save of whole objects (modules, optimizers, NumPy arrays) and kindle.load's
weights_only switch and safe globals, as torch 2.13 behaves; files cross to and from torch."""
import io
import pickle
import warnings

import numpy as np
import pytest

import kindle
import kindle.nn as nn
from kindle import serialization


def round_trip(obj, **load_kw):
    buf = io.BytesIO()
    kindle.save(obj, buf)
    return kindle.load(io.BytesIO(buf.getvalue()), **load_kw), buf.getvalue()


class Point:  # a user class, for the safe-globals tests
    def __init__(self, x, y):
        self.x, self.y = x, y


@pytest.fixture(autouse=True)
def no_safe_globals():
    serialization.clear_safe_globals()
    yield
    serialization.clear_safe_globals()


def _model():
    kindle.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.BatchNorm1d(4), nn.Linear(4, 2))


def test_whole_module_and_optimizer_round_trip():
    model = _model()
    opt = kindle.optim.Adam(model.parameters(), lr=0.01)
    x = kindle.arange(6.0).reshape(2, 3)
    model(x).sum().backward()
    opt.step()
    got, raw = round_trip({"model": model, "opt": opt, "epoch": 3}, weights_only=False)
    assert raw[:4] == b"PK\x03\x04"  # PyTorch's zip layout
    m2, o2 = got["model"], got["opt"]
    assert type(m2) is nn.Sequential and got["epoch"] == 3
    assert kindle.equal(m2(x), model(x)) and kindle.equal(m2[2].running_mean, model[2].running_mean)
    assert isinstance(m2[0].weight, nn.Parameter) and m2[0].weight.requires_grad
    # the optimizer holds the very Parameters of the loaded model, and its state
    assert o2.param_groups[0]["params"][0] is m2[0].weight
    sd, sd2 = opt.state_dict(), o2.state_dict()
    assert sd2["param_groups"] == sd["param_groups"]
    assert kindle.equal(sd2["state"][0]["exp_avg"], sd["state"][0]["exp_avg"])
    m2(x).sum().backward()
    o2.step()  # a loaded optimizer keeps training


def test_numpy_and_plain_objects_round_trip():
    obj = {"arr": np.arange(6, dtype=np.float32).reshape(2, 3), "point": Point(1, [2]), "t": kindle.ones(2)}
    got, _ = round_trip(obj, weights_only=False)
    np.testing.assert_array_equal(got["arr"], obj["arr"])
    assert (got["point"].x, got["point"].y) == (1, [2]) and kindle.equal(got["t"], obj["t"])
    plain, raw = round_trip({"a": [1, 2.5, None], "b": (kindle.zeros(2),)})  # torch's zip layout by default
    assert raw[:4] == b"PK\x03\x04" and plain["a"] == [1, 2.5, None]


def test_default_refuses_whole_objects_with_torchs_advice():
    buf = io.BytesIO()
    kindle.save(_model(), buf)
    with pytest.raises(pickle.UnpicklingError) as e:
        kindle.load(io.BytesIO(buf.getvalue()))
    msg = str(e.value)
    assert "Weights only load failed" in msg and "weights_only` set to `False`" in msg
    assert "GLOBAL torch.nn.Sequential was not an allowed global" in msg  # the public name torch resolves
    assert "add_safe_globals" in msg
    with pytest.raises(pickle.UnpicklingError):
        kindle.load(io.BytesIO(buf.getvalue()), weights_only=True)
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        kindle.load(io.BytesIO(buf.getvalue()), pickle_module=pickle, weights_only=True)
    # an explicit pickle_module without weights_only means a full load, as in torch
    assert type(kindle.load(io.BytesIO(buf.getvalue()), pickle_module=pickle)) is nn.Sequential


def test_environment_variables_force_the_mode(monkeypatch):
    buf = io.BytesIO()
    kindle.save(_model(), buf)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.warns(UserWarning, match="forcing weights_only=False"):
        assert type(kindle.load(io.BytesIO(buf.getvalue()))) is nn.Sequential
    with pytest.raises(pickle.UnpicklingError):  # an explicit choice wins
        kindle.load(io.BytesIO(buf.getvalue()), weights_only=True)
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(RuntimeError, match="both were set"):
        kindle.load(io.BytesIO(buf.getvalue()))


def test_safe_globals_allow_listed_classes_only():
    buf = io.BytesIO()
    kindle.save({"p": Point(1, 2), "w": kindle.ones(2)}, buf)
    raw = buf.getvalue()
    with pytest.raises(pickle.UnpicklingError, match="Point"):
        kindle.load(io.BytesIO(raw))
    with serialization.safe_globals([Point]):
        assert serialization.get_safe_globals() == [Point]
        got = kindle.load(io.BytesIO(raw))
    assert type(got["p"]) is Point and (got["p"].x, got["p"].y) == (1, 2)
    assert serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        kindle.load(io.BytesIO(raw))
    serialization.add_safe_globals([(Point, f"{__name__}.Point")])
    assert type(kindle.load(io.BytesIO(raw))["p"]) is Point
    serialization.clear_safe_globals()
    serialization.add_safe_globals([(Point, "a", "b")])
    with pytest.raises(ValueError, match="length 2"):
        kindle.load(io.BytesIO(raw))


def test_safe_globals_rebuild_a_kindle_module_by_its_torch_name():
    model = nn.Linear(2, 3)
    buf = io.BytesIO()
    kindle.save(model, buf)
    with serialization.safe_globals([nn.Linear]):
        got = kindle.load(io.BytesIO(buf.getvalue()))
    assert type(got) is nn.Linear and kindle.equal(got.weight, model.weight)


def test_hostile_whole_object_file_runs_nothing_by_default(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    buf = io.BytesIO()
    kindle.save({"x": Evil()}, buf)
    with pytest.raises(pickle.UnpicklingError, match="open"):
        kindle.load(io.BytesIO(buf.getvalue()))
    serialization.add_safe_globals([Point])  # listing other classes does not open the door
    with pytest.raises(pickle.UnpicklingError, match="open"):
        kindle.load(io.BytesIO(buf.getvalue()))
    assert not marker.exists()


def test_kindle_whole_model_loads_in_torch_and_back(tmp_path):
    torch = pytest.importorskip("torch")
    model = _model()
    opt = kindle.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = kindle.arange(6.0).reshape(2, 3)
    model(x).sum().backward()
    opt.step()
    kindle.save({"model": model, "opt": opt}, tmp_path / "k.pt")
    got = torch.load(tmp_path / "k.pt", weights_only=False)
    tm = got["model"].eval()
    assert type(tm) is torch.nn.Sequential and type(got["opt"]) is torch.optim.SGD
    ours = model.eval()(x).detach().numpy()
    np.testing.assert_allclose(tm(torch.from_numpy(x.numpy())).detach().numpy(), ours, rtol=1e-6, atol=1e-6)
    torch.save(tm, tmp_path / "t.pt")
    back = kindle.load(tmp_path / "t.pt", weights_only=False)
    assert type(back) is nn.Sequential
    np.testing.assert_allclose(back(x).detach().numpy(), ours, rtol=1e-6, atol=1e-6)


def test_torch_whole_objects_load_with_weights_only_false():
    torch = pytest.importorskip("torch")
    tmodel = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten(), torch.nn.LSTM(4, 5))
    buf = io.BytesIO()
    torch.save({"m": tmodel, "arr": np.ones(3), "dtype": torch.float16}, buf)
    got = kindle.load(io.BytesIO(buf.getvalue()), weights_only=False)
    assert type(got["m"][0]) is nn.Conv2d and type(got["m"][2]) is nn.LSTM
    assert got["dtype"] == kindle.float16 and got["arr"].tolist() == [1.0, 1.0, 1.0]
    np.testing.assert_array_equal(got["m"][0].weight.detach().numpy(), tmodel[0].weight.detach().numpy())
    buf = io.BytesIO()
    torch.save({"arr": np.ones(3)}, buf)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL numpy"):  # torch refuses NumPy arrays by default too
        kindle.load(io.BytesIO(buf.getvalue()))


def test_parameter_attributes_and_tensor_subclasses_survive():
    p = nn.Parameter(kindle.ones(2))
    p.tag = "decay"
    got, _ = round_trip({"p": p, "b": nn.Buffer(kindle.zeros(1))}, weights_only=False)
    assert isinstance(got["p"], nn.Parameter) and got["p"].tag == "decay"
    assert isinstance(got["b"], nn.Buffer)


def test_disabled_warning_free_by_default():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        round_trip({"w": kindle.ones(2)})


def test_default_format_is_torchs_and_torch_load_reads_it_with_weights_only(tmp_path):
    torch = pytest.importorskip("torch")
    model = kindle.nn.Sequential(kindle.nn.Linear(3, 2), kindle.nn.BatchNorm1d(2))
    opt = kindle.optim.Adam(model.parameters(), lr=0.1)
    model(kindle.ones(4, 3)).sum().backward()
    opt.step()
    for name, obj in (("state.pt", model.state_dict()), ("opt.pt", opt.state_dict()), ("t.pt", kindle.arange(6.0)),
                      ("nested.pt", {"model": model.state_dict(), "epoch": 3, "names": ["a", "b"]})):
        kindle.save(obj, tmp_path / name)
        assert (tmp_path / name).read_bytes()[:4] == b"PK\x03\x04"
        got = torch.load(tmp_path / name)  # torch's default: weights_only=True
        back = kindle.load(tmp_path / name)
        flat_k = _leaves(back)
        flat_t = _leaves(got)
        assert len(flat_k) == len(flat_t) > 0
        for a, b in zip(flat_k, flat_t):
            if isinstance(a, kindle.Tensor):
                np.testing.assert_array_equal(a.numpy(), b.numpy())
            else:
                assert a == b
    # safetensors on request: by the file name or format=
    kindle.save(model.state_dict(), tmp_path / "w.safetensors")
    kindle.save(model.state_dict(), tmp_path / "w.bin", format="safetensors")
    from safetensors.numpy import load_file
    for name in ("w.safetensors", "w.bin"):
        assert sorted(load_file(str(tmp_path / name))) == sorted(model.state_dict())


def _leaves(obj):
    if isinstance(obj, dict):
        return [x for k in sorted(obj, key=str) for x in _leaves(obj[k])]
    if isinstance(obj, (list, tuple)):
        return [x for v in obj for x in _leaves(v)]
    return [obj]


def _archive_of(pickle_bytes):
    import zipfile
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pickle_bytes)
        z.writestr("archive/byteorder", b"little")
    return out.getvalue()


def test_python_values_keep_their_types_through_the_core_reader():
    # What the core's reader builds for Python: bytes apart from str, OrderedDict apart from dict,
    # torch.Size, devices, frozensets, wide ints, tuple/float/None keys, shared objects kept shared.
    from collections import OrderedDict
    shared = [1, 2]
    obj = {"b": b"\x00\xffab", "s": "caf\u00e9", "od": OrderedDict(a=1), "size": kindle.Size([2, 3]),
           "dev": kindle.device("cpu"), "fs": frozenset({1, "x"}), "big": -2 ** 100, "keys": {(1, 2): 1, 2.5: 2, None: 3},
           "twice": [shared, shared], "p": nn.Parameter(kindle.ones(2))}
    got, raw = round_trip(obj)
    assert got["b"] == b"\x00\xffab" and type(got["b"]) is bytes and got["s"] == "caf\u00e9"
    assert round_trip({"empty": b""})[0] == {"empty": b""}  # bytes() (torch's weights_only refuses that global)
    assert type(got["od"]) is OrderedDict and type(got["size"]) is kindle.Size and got["size"] == (2, 3)
    assert got["dev"] == kindle.device("cpu") and got["fs"] == frozenset({1, "x"}) and got["big"] == -2 ** 100
    assert got["keys"] == {(1, 2): 1, 2.5: 2, None: 3}
    assert got["twice"][0] is got["twice"][1]
    assert type(got["p"]) is nn.Parameter and got["p"].requires_grad
    torch = pytest.importorskip("torch")
    back = torch.load(io.BytesIO(raw), weights_only=False)  # (torch refuses frozenset with weights_only)
    assert back["b"] == b"\x00\xffab" and back["size"] == torch.Size([2, 3]) and back["big"] == -2 ** 100


@pytest.mark.parametrize("encoding", ["ASCII", "latin1", "bytes", "utf-8"])
def test_protocol2_byte_strings_follow_encoding_as_pickle(encoding):
    # Python 2 pickles spell str as BINSTRING; pickle's Unpickler(encoding=) is the reference.
    for raw in (b"plain", b"caf\xe9"):
        body = b"\x80\x02}U\x01kU" + bytes([len(raw)]) + raw + b"s."
        try:
            want = pickle.loads(body, encoding=encoding)
        except UnicodeDecodeError:
            with pytest.raises(RuntimeError, match="kindle.load"):
                kindle.load(io.BytesIO(_archive_of(body)), encoding=encoding)
            continue
        got = kindle.load(io.BytesIO(_archive_of(body)), encoding=encoding)
        assert got == want and type(next(iter(got.values()))) is type(next(iter(want.values())))
