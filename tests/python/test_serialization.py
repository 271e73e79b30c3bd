"""kindle.save / kindle.load: round trips, safetensors and torch.save interop, the restricted
unpickler, atomic writes, hostile files, and fuzzing of both readers."""
import glob
import io
import json
import math
import os
import pickle
import shutil
import stat
import struct
import subprocess
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import kindle
from kindle import serialization

CORPUS = os.path.join(os.path.dirname(__file__), "fuzz_corpus")
DTYPES = [kindle.float32, kindle.float64, kindle.float16, kindle.bfloat16, kindle.int8, kindle.int16,
          kindle.int32, kindle.int64, kindle.uint8, kindle.bool]
LOAD_ERRORS = (ValueError, RuntimeError, pickle.UnpicklingError)


def dname(dtype):
    return str(dtype).split(".")[-1]


def sample(dtype, shape=(2, 3)):
    n = math.prod(shape)
    t = kindle.arange(n, dtype=kindle.float32).reshape(shape) - n // 3
    return (t.remainder(2) == 1) if dtype == kindle.bool else t.to(dtype)


def as_np(t):
    """Values of a kindle or torch tensor as NumPy (bfloat16 widened: NumPy lacks it)."""
    t = t.detach()
    if str(t.dtype).endswith("bfloat16"):
        t = t.float()
    return np.asarray(t.numpy())


def assert_same(got, want):
    assert isinstance(got, kindle.Tensor), type(got)
    assert dname(got.dtype) == dname(want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(as_np(got), as_np(want))


def assert_tree(got, want):
    if isinstance(want, kindle.Tensor) or type(want).__name__ in ("Tensor", "Parameter"):
        assert_same(got, want)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want)
        for k in want:
            assert_tree(got[k], want[k])
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_tree(g, w)
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(got)
    else:
        assert type(got) is type(want) and got == want


def load_bytes(raw, **kw):
    return kindle.load(io.BytesIO(raw), **kw)


def st_bytes(header, data=b"", metadata=None, raw_header=None):
    """A safetensors file from a header dict (or raw header bytes) and the data section."""
    if raw_header is None:
        header = dict(header)
        if metadata is not None:
            header["__metadata__"] = metadata
        raw_header = json.dumps(header).encode()
    return struct.pack("<Q", len(raw_header)) + raw_header + data


def rezip(raw, replace=None, drop=(), compress=zipfile.ZIP_STORED):
    """Rewrite a torch.save archive with some entries replaced (name suffix -> bytes) or dropped."""
    replace = replace or {}
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(out, "w", compress) as dst:
        for info in src.infolist():
            suffix = info.filename.split("/", 1)[-1]
            if suffix in drop:
                continue
            dst.writestr(info.filename, replace.get(suffix, src.read(info.filename)))
    return out.getvalue()


def torch_bytes(obj, **kw):
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save(obj, buf, **kw)
    return buf.getvalue()


# --- kindle round trips ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_round_trip_every_dtype(dtype, tmp_path):
    obj = {"x": sample(dtype), "scalar": sample(dtype, ()), "empty": sample(dtype, (0, 4)),
           "noncontig": sample(dtype, (3, 4)).t()}
    kindle.save(obj, tmp_path / "a.safetensors")
    assert_tree(kindle.load(tmp_path / "a.safetensors"), obj)


def test_round_trip_nested_structures():
    obj = {"state": {0: {"step": kindle.tensor(3.0), "exp_avg": kindle.randn(2, 3)},
                     1: {"momentum_buffer": None}},
           "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-8, "params": [0, 1],
                             "nesterov": False, "foreach": None, "name": "group"}],
           "floats": [float("inf"), float("-inf"), float("nan"), -0.0, 1e300],
           "big": 2 ** 70, "dtype": kindle.bfloat16, "tuple": (kindle.zeros(0), (1, "x")),
           "ints": {5: "five", "5": 5}}
    buf = io.BytesIO()
    kindle.save(obj, buf)
    got = load_bytes(buf.getvalue())
    assert_tree(got, obj)
    assert got["dtype"] == kindle.bfloat16
    assert math.copysign(1, got["floats"][3]) == -1


def test_round_trip_other_top_levels():
    for obj in (kindle.arange(5), [kindle.ones(2), 3], (None,), None, {}, "text", 7, {"__metadata__": kindle.ones(1)}):
        buf = io.BytesIO()
        kindle.save(obj, buf)
        assert_tree(load_bytes(buf.getvalue()), obj)
    buf = io.BytesIO()
    kindle.save({"s": {1, 2}}, buf)
    assert load_bytes(buf.getvalue()) == {"s": {1, 2}}


def test_requires_grad_survives_and_state_dicts_do_not_carry_it():
    w = kindle.ones(2).requires_grad_(True)
    buf = io.BytesIO()
    kindle.save({"w": w, "n": kindle.zeros(1)}, buf)
    got = load_bytes(buf.getvalue())
    assert got["w"].requires_grad and not got["n"].requires_grad


def test_parameters_and_module_state_dicts():
    model = kindle.nn.Sequential(kindle.nn.Linear(3, 4), kindle.nn.ReLU(), kindle.nn.Linear(4, 2))
    buf = io.BytesIO()
    kindle.save(model.state_dict(), buf)
    fresh = kindle.nn.Sequential(kindle.nn.Linear(3, 4), kindle.nn.ReLU(), kindle.nn.Linear(4, 2))
    fresh.load_state_dict(load_bytes(buf.getvalue()))
    x = kindle.randn(5, 3)
    np.testing.assert_array_equal(as_np(fresh(x)), as_np(model(x)))
    buf = io.BytesIO()
    frozen = kindle.nn.Parameter(kindle.ones(2), requires_grad=False)
    kindle.save({"w": model[0].weight, "frozen": frozen}, buf)
    got = load_bytes(buf.getvalue())
    assert isinstance(got["w"], kindle.nn.Parameter) and got["w"].requires_grad
    assert isinstance(got["frozen"], kindle.nn.Parameter) and not got["frozen"].requires_grad


def test_shared_storage_saved_once_and_loaded_shared():
    # As torch.save: one storage per storage, each tensor a view of it (views and tied weights
    # come back sharing memory), in the C++ writer (containers) and the pickler (whole objects).
    base = kindle.arange(6.0)
    tree = {"base": base, "view": base[1:3], "t": base.view(2, 3).t()}
    for obj in (tree, [tree, kindle.nn.Linear(2, 2)]):
        buf = io.BytesIO()
        kindle.save(obj, buf)
        got = kindle.load(io.BytesIO(buf.getvalue()), weights_only=False)
        got = got if isinstance(got, dict) else got[0]
        assert_tree(got, tree)
        assert got["t"].stride() == (1, 3)
        got["base"].fill_(0)
        assert as_np(got["view"]).tolist() == [0, 0] and as_np(got["t"]).sum() == 0
    lm = kindle.nn.Sequential(kindle.nn.Embedding(1000, 64), kindle.nn.Linear(64, 1000, bias=False))
    lm[1].weight = lm[0].weight  # tied
    buf = io.BytesIO()
    kindle.save(lm.state_dict(), buf)
    sd = load_bytes(buf.getvalue())
    assert sd["0.weight"].data_ptr() == sd["1.weight"].data_ptr()
    assert buf.getbuffer().nbytes < 1.5 * 1000 * 64 * 4  # the weight once


def test_views_saved_by_kindle_load_as_views_in_torch():
    torch = pytest.importorskip("torch")
    base = kindle.arange(8.0)
    buf = io.BytesIO()
    kindle.save({"base": base, "view": base[2:6].view(2, 2).t()}, buf)
    got = torch.load(io.BytesIO(buf.getvalue()), weights_only=True)
    assert got["view"].tolist() == [[2.0, 4.0], [3.0, 5.0]]
    got["base"][2] = -1
    assert got["view"][0, 0].item() == -1


def test_load_from_the_current_position():
    buf = io.BytesIO()
    buf.write(b"prefix")
    kindle.save({"a": kindle.ones(2)}, buf)
    buf.seek(6)
    assert_tree(kindle.load(buf), {"a": kindle.ones(2)})
    assert buf.tell() == len(buf.getvalue())


def test_non_seekable_file_object():
    buf = io.BytesIO()
    kindle.save({"a": kindle.arange(4)}, buf)

    class Pipe:
        def __init__(self, data):
            self._b = io.BytesIO(data)

        def read(self, n=-1):
            return self._b.read(n)

        def seekable(self):
            return False

    assert_tree(kindle.load(Pipe(buf.getvalue())), {"a": kindle.arange(4)})


def test_save_rejects_bad_objects():
    # torch's format pickles (test_serialization_objects.py); what pickle cannot save fails as in
    # torch.save, before the file is touched. The safetensors format refuses what it cannot describe.
    with pytest.raises(AttributeError, match="Can't pickle local object .*<lambda>"):  # the C pickler's error
        kindle.save({"a": [1, lambda: 0]}, io.BytesIO())
    with pytest.raises(ValueError, match="cannot save an object of type function at 'a.1' in a safetensors file"):
        kindle.save({"a": [1, lambda: 0]}, io.BytesIO(), format="safetensors")
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        kindle.save(loop, io.BytesIO(), format="safetensors")
    deep = []
    for _ in range(150):
        deep = [deep]
    with pytest.raises(ValueError, match="nested deeper"):
        kindle.save(deep, io.BytesIO(), format="safetensors")
    with pytest.raises(ValueError, match="format must be 'torch' or 'safetensors'"):
        kindle.save({}, io.BytesIO(), format="pt")
    with pytest.raises(TypeError, match="binary file"):
        kindle.save({}, io.StringIO())


def test_save_and_load_path_errors(tmp_path):
    with pytest.raises(RuntimeError, match="parent directory .*missing does not exist"):
        kindle.save({}, tmp_path / "missing" / "x.safetensors")
    with pytest.raises(FileNotFoundError):
        kindle.load(tmp_path / "absent.safetensors")
    with pytest.raises(IsADirectoryError):
        kindle.save({}, tmp_path)
    assert os.listdir(tmp_path) == []


# --- safetensors interop --------------------------------------------------------------------

def test_flat_dict_is_a_plain_safetensors_file(tmp_path):
    sn = pytest.importorskip("safetensors.numpy")
    obj = {d: sample(getattr(kindle, d), (2, 2)) for d in map(dname, DTYPES) if d != "bfloat16"}
    obj["scalar"], obj["empty"] = kindle.tensor(2.5), kindle.zeros(0, 3)
    kindle.save(obj, tmp_path / "m.safetensors")
    got = sn.load_file(str(tmp_path / "m.safetensors"))
    assert sorted(got) == sorted(obj)
    for k, t in obj.items():
        assert got[k].dtype == as_np(t).dtype and got[k].shape == tuple(t.shape)
        np.testing.assert_array_equal(got[k], as_np(t))
    raw = (tmp_path / "m.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0 and json.loads(raw[8:8 + n])["__metadata__"] == {"format": "pt"}


def test_nested_file_still_opens_in_safetensors(tmp_path):
    st_torch = pytest.importorskip("safetensors.torch")
    pytest.importorskip("torch")
    kindle.save({"opt": {0: kindle.ones(2, dtype=kindle.bfloat16)}, "lr": 0.1}, tmp_path / "n.safetensors")
    got = st_torch.load_file(str(tmp_path / "n.safetensors"))
    assert list(got) == ["opt.0"] and got["opt.0"].float().tolist() == [1.0, 1.0]


def test_reads_files_written_by_safetensors(tmp_path):
    sn = pytest.importorskip("safetensors.numpy")
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1, -2], dtype=np.int64),
              "c": np.array(True)}
    sn.save_file(arrays, str(tmp_path / "x.safetensors"), metadata={"who": "numpy"})
    got = kindle.load(tmp_path / "x.safetensors")
    assert sorted(got) == ["a", "b", "c"]
    for k, a in arrays.items():
        np.testing.assert_array_equal(as_np(got[k]), a)


# --- torch.save checkpoints -----------------------------------------------------------------

def test_torch_state_dict_every_dtype():
    torch = pytest.importorskip("torch")
    obj = {}
    for d in map(dname, DTYPES):
        dt = getattr(torch, d)
        base = torch.arange(-6, 6).reshape(3, 4)
        obj[d] = (base % 2 == 1) if d == "bool" else base.to(dt)
        obj[d + "_scalar"] = torch.tensor(3).to(dt)
        obj[d + "_empty"] = torch.zeros(0, 2, dtype=dt)
        obj[d + "_t"] = obj[d].t()
    got = load_bytes(torch_bytes(obj))
    assert list(got) == list(obj)
    for k in obj:
        assert dname(got[k].dtype) == dname(obj[k].dtype) and tuple(got[k].shape) == tuple(obj[k].shape)
        np.testing.assert_array_equal(as_np(got[k]), as_np(obj[k]))


def test_torch_model_and_optimizer_state():
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(5, 3)).sum().backward()
    opt.step()
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3, "note": b"\x00\xff", "empty": b"",
            "size": torch.Size([2, 3]), "device": torch.device("cpu"), "dtype": torch.float16, "tags": {"a"}}
    got = load_bytes(torch_bytes(ckpt))
    assert isinstance(got["model"], OrderedDict) and list(got["model"]) == list(ckpt["model"])
    assert got["model"]._metadata == ckpt["model"]._metadata
    for k, v in ckpt["model"].items():
        np.testing.assert_array_equal(as_np(got["model"][k]), as_np(v))
    for i, st in ckpt["optimizer"]["state"].items():
        for k, v in st.items():
            np.testing.assert_array_equal(as_np(got["optimizer"]["state"][i][k]), as_np(v))
    assert got["optimizer"]["param_groups"] == ckpt["optimizer"]["param_groups"]
    assert got["epoch"] == 3 and got["note"] == b"\x00\xff" and got["empty"] == b"" and got["tags"] == {"a"}
    assert got["size"] == kindle.Size([2, 3]) and got["device"] == kindle.device("cpu")
    assert got["dtype"] == kindle.float16


def test_torch_parameters_and_shared_storage():
    torch = pytest.importorskip("torch")
    base = torch.arange(12.0)
    p = torch.nn.Parameter(torch.ones(2, 2))
    got = load_bytes(torch_bytes({"base": base, "view": base[2:8].view(2, 3).t(), "p": p}))
    np.testing.assert_array_equal(as_np(got["view"]), as_np(base[2:8].view(2, 3).t()))
    assert isinstance(got["p"], kindle.nn.Parameter) and got["p"].requires_grad
    assert as_np(got["p"]).tolist() == [[1, 1], [1, 1]]
    got["base"].fill_(-1)  # views keep sharing the storage, as in torch
    assert as_np(got["view"]).tolist() == [[-1, -1], [-1, -1], [-1, -1]]


def test_legacy_torch_format_is_refused():
    raw = torch_bytes({"a": pytest.importorskip("torch").ones(2)}, _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="legacy"):
        load_bytes(raw)


@pytest.mark.parametrize("how", ["reduce", "nested", "protocol4", "inst"])
def test_malicious_pickle_is_refused(tmp_path, how):
    torch = pytest.importorskip("torch")
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    if how == "nested":
        raw = torch_bytes({"w": torch.ones(2), "x": [Evil()]})
    else:
        payload = {"reduce": lambda: pickle.dumps(Evil(), protocol=2),
                   "protocol4": lambda: pickle.dumps(Evil(), protocol=4),
                   "inst": lambda: b"(S'touch " + str(marker).encode() + b"'\nios\nsystem\n."}[how]()
        raw = rezip(torch_bytes({"w": torch.ones(2)}), replace={"data.pkl": payload})
    with pytest.raises(pickle.UnpicklingError, match=r"(posix|os)\.system"):
        load_bytes(raw)
    with pytest.raises(pickle.UnpicklingError, match=r"(posix|os)\.system"):
        load_bytes(raw, weights_only=True)
    assert not marker.exists()  # weights_only=False would run it, as torch.load does: an explicit opt-in


def test_whole_module_pickles_are_refused_with_the_global_named():
    torch = pytest.importorskip("torch")
    with pytest.raises(pickle.UnpicklingError, match="torch.nn.modules.linear.Linear"):
        load_bytes(torch_bytes(torch.nn.Linear(2, 2)))


# --- map_location ---------------------------------------------------------------------------

def _cuda_checkpoint():
    # torch.save of a CPU tensor with its location tag rewritten as a GPU one.
    torch = pytest.importorskip("torch")
    raw = torch_bytes({"w": torch.arange(3.0)})
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        pkl = z.read([n for n in z.namelist() if n.endswith("data.pkl")][0])
    assert pkl.count(b"X\x03\x00\x00\x00cpu") == 1
    return rezip(raw, replace={"data.pkl": pkl.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")})


def test_map_location_forms():
    raw = _cuda_checkpoint()
    with pytest.raises(RuntimeError, match="cuda:0.*map_location='cpu'"):
        load_bytes(raw)
    seen = []
    for ml in ("cpu", kindle.device("cpu"), {"cuda:0": "cpu"}, lambda s, loc: seen.append(loc) or s,
               lambda s, loc: None if loc == "cpu" else s):
        assert as_np(load_bytes(raw, map_location=ml)["w"]).tolist() == [0, 1, 2]
    assert seen == ["cuda:0"]
    buf = io.BytesIO()
    kindle.save({"w": kindle.ones(1)}, buf)
    for ml in ("cuda", kindle.device("cuda:0")):
        with pytest.raises(RuntimeError, match="only the CPU"):
            load_bytes(buf.getvalue(), map_location=ml)
    with pytest.raises(RuntimeError, match="only the CPU"):
        load_bytes(buf.getvalue(), map_location={"cpu": "cuda:1"})
    with pytest.raises(TypeError, match="map_location"):
        load_bytes(buf.getvalue(), map_location=3)
    with pytest.raises(ValueError, match="mmap"):
        load_bytes(buf.getvalue(), mmap=True)


# --- atomic writes --------------------------------------------------------------------------

def test_atomic_save_failure_leaves_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    kindle.save({"a": kindle.ones(3)}, path)
    before = path.read_bytes()

    # An object that cannot be saved, deep in the structure: nothing is written at all.
    with pytest.raises(ValueError, match="function at 'model.layers.1.w' in a safetensors file"):
        kindle.save({"model": {"layers": [{"w": kindle.zeros(2)}, {"w": lambda: 0}]}}, path)
    with pytest.raises(AttributeError, match="Can't pickle local object"):  # as torch.save
        kindle.save({"model": {"layers": [{"w": kindle.zeros(2)}, {"w": lambda: 0}]}}, path, format="torch")
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.safetensors"]

    # The writer failing halfway through the tensors: the temp file goes, the old file stays.
    real, calls = serialization.write_all, []

    def flaky(out, data):
        calls.append(len(data))
        if len(calls) == 4:
            temps = [n for n in os.listdir(tmp_path) if n.startswith(".ckpt.safetensors.")]
            assert len(temps) == 1 and os.path.getsize(tmp_path / temps[0]) > 0
            assert path.read_bytes() == before
            raise OSError("disk full")
        real(out, data)

    monkeypatch.setattr(serialization, "write_all", flaky)
    big = {f"t{i}": kindle.full((1000,), float(i)) for i in range(5)}
    with pytest.raises(OSError, match="disk full"):
        kindle.save(big, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.safetensors"]

    # And a successful save replaces the file.
    monkeypatch.setattr(serialization, "write_all", real)
    kindle.save(big, str(path))
    assert_tree(kindle.load(path), big)
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


_DURABLE_SAVE = "import sys, kindle; kindle.save({'a': kindle.ones(3)}, sys.argv[1], format=sys.argv[2])"


@pytest.mark.parametrize("fmt", ["safetensors", "torch"])
def test_a_save_is_durable(tmp_path, fmt):
    # The system calls of a save, traced in a child: the temporary file is written and fsync'ed
    # before the rename over the target, and the folder is fsync'ed after it (the rename itself
    # survives a crash).
    if shutil.which("strace") is None:
        pytest.skip("needs strace (Debian: strace)")
    folder = tmp_path / "out"
    folder.mkdir()
    target, log = folder / "ckpt.bin", tmp_path / "trace"
    run = subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat,fsync,rename,renameat,renameat2", "-o", str(log),
                          sys.executable, "-c", _DURABLE_SAVE, str(target), fmt], capture_output=True, text=True,
                         timeout=120)
    if run.returncode != 0 and "ptrace" in run.stderr:
        pytest.skip("strace cannot trace here: " + run.stderr.strip()[-200:])
    assert run.returncode == 0, run.stderr[-2000:]
    calls = [line.split(None, 1)[1] for line in log.read_text().splitlines()]
    temp = [i for i, c in enumerate(calls) if c.startswith("openat(") and "/.ckpt.bin." in c and "O_CREAT" in c]
    assert len(temp) == 1, calls
    fd = calls[temp[0]].rsplit("= ", 1)[1]
    rename = [i for i, c in enumerate(calls) if c.startswith("rename") and c.rstrip().endswith("= 0")
              and f'"{target}"' in c]
    assert len(rename) == 1 and temp[0] < rename[0], calls
    assert any(c.startswith(f"fsync({fd})") for c in calls[temp[0]:rename[0]]), calls
    after = calls[rename[0]:]
    dirs = [c.rsplit("= ", 1)[1] for c in after if c.startswith("openat(") and f'"{folder}"' in c]
    assert dirs and any(c.startswith(f"fsync({dirs[0]})") for c in after), after
    assert kindle.load(target)["a"].tolist() == [1.0, 1.0, 1.0]


def test_save_keeps_the_file_mode(tmp_path):
    path = tmp_path / "m.safetensors"
    kindle.save({}, path)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~umask
    os.chmod(path, 0o640)
    kindle.save({"a": kindle.ones(1)}, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


# --- hostile safetensors files --------------------------------------------------------------

F32_2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


def _entry(**kw):
    return {"a": dict(F32_2, **kw)}


def _deep(n):
    node = {"tensor": "a"}
    for _ in range(n):
        node = {"list": [node]}
    return json.dumps({"version": 1, "tree": node})


HOSTILE = {
    "empty_file": (b"", "too short"),
    "short_file": (b"\x01\x02\x03", "too short"),
    "header_past_end": (struct.pack("<Q", 1000) + b"{}", "larger than the rest of the file"),
    "header_absurd": (struct.pack("<Q", 2 ** 64 - 1) + b"{}", "larger than the rest of the file"),
    "not_utf8": (st_bytes(None, raw_header=b"\xff\xfe{}"), "not valid JSON"),
    "not_json": (st_bytes(None, raw_header=b'{"a": '), "not valid JSON"),
    "deep_json": (st_bytes(None, raw_header=b'{"a":' + b"[" * 100000), "not valid JSON"),
    "not_object": (st_bytes(None, raw_header=b"[1, 2]"), "must be a JSON object"),
    "entry_not_object": (st_bytes({"a": 5}), "entry must be an object"),
    "dtype_not_str": (st_bytes(_entry(dtype=3), b"\0" * 8), "unsupported dtype 3"),
    "dtype_unknown": (st_bytes(_entry(dtype="F8_E4M3"), b"\0" * 8), "unsupported dtype 'F8_E4M3'"),
    "dtype_uint16": (st_bytes(_entry(dtype="U16"), b"\0" * 8), "unsupported dtype 'U16'"),
    "shape_not_list": (st_bytes(_entry(shape="2"), b"\0" * 8), "shape must be a list"),
    "shape_float": (st_bytes(_entry(shape=[2.0]), b"\0" * 8), "shape must be a list of integers"),
    "shape_bool": (st_bytes(_entry(shape=[True, True]), b"\0" * 8), "shape must be a list of integers"),
    "shape_negative": (st_bytes(_entry(shape=[-2]), b"\0" * 8), "invalid shape"),
    "shape_overflow": (st_bytes(_entry(shape=[2 ** 32, 2 ** 32], data_offsets=[0, 0])), "invalid shape"),
    "shape_overflow_empty": (st_bytes(_entry(shape=[0, 2 ** 40, 2 ** 40], data_offsets=[0, 0])), "invalid shape"),
    "shape_huge": (st_bytes(_entry(shape=[2 ** 64], data_offsets=[0, 0])), "invalid shape"),
    "too_many_dims": (st_bytes(_entry(shape=[1] * 65, data_offsets=[0, 4])), "invalid shape"),
    "offsets_three": (st_bytes(_entry(data_offsets=[0, 4, 8]), b"\0" * 8), "list of two integers"),
    "offsets_str": (st_bytes(_entry(data_offsets=["0", "8"]), b"\0" * 8), "list of two integers"),
    "offsets_reversed": (st_bytes(_entry(data_offsets=[8, 0]), b"\0" * 8), "out of order"),
    "offsets_negative": (st_bytes(_entry(data_offsets=[-8, 0]), b"\0" * 8), "out of order"),
    "byte_count": (st_bytes(_entry(shape=[3]), b"\0" * 8), "span 8 bytes but shape \\[3\\] of F32 needs 12"),
    "overlap": (st_bytes({"a": F32_2, "b": dict(F32_2, data_offsets=[4, 12])}, b"\0" * 12), "overlaps"),
    "gap": (st_bytes({"a": F32_2, "b": dict(F32_2, data_offsets=[12, 20])}, b"\0" * 20), "gap"),
    "past_end": (st_bytes({"a": F32_2}, b"\0" * 4), "truncated"),
    "huge_tensor_absent": (st_bytes(_entry(shape=[2 ** 40], data_offsets=[0, 2 ** 42])), "truncated"),
    "trailing_bytes": (st_bytes({"a": F32_2}, b"\0" * 12), "4 bytes after the last tensor"),
    "metadata_not_str": (st_bytes({"a": F32_2}, b"\0" * 8, metadata={"k": 1}), "string values"),
    "metadata_missing_tensor": (st_bytes({"a": F32_2}, b"\0" * 8, metadata={
        "kindle": json.dumps({"version": 1, "tree": {"list": [{"tensor": "b"}]}})}), "'b', which the file does not"),
    "metadata_bad_json": (st_bytes({"a": F32_2}, b"\0" * 8, metadata={"kindle": "{"}), "not valid JSON"),
    "metadata_version": (st_bytes({"a": F32_2}, b"\0" * 8, metadata={
        "kindle": json.dumps({"version": 99, "tree": None})}), "version 99"),
    "metadata_bad_node": (st_bytes({"a": F32_2}, b"\0" * 8, metadata={
        "kindle": json.dumps({"version": 1, "tree": {"dict": [[1.5, 2]]}})}), "not a \\[str or int key"),
    "metadata_deep": (st_bytes({"a": F32_2}, b"\0" * 8, metadata={"kindle": _deep(150)}), "deeper than 100"),
    "metadata_grad_int": (st_bytes({"a": dict(F32_2, dtype="I32")}, b"\0" * 8, metadata={
        "kindle": json.dumps({"version": 1, "tree": {"tensor": "a", "requires_grad": True}})}), "require grad"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_safetensors(case, tmp_path):
    raw, match = HOSTILE[case]
    path = tmp_path / f"{case}.safetensors"
    path.write_bytes(raw)
    with pytest.raises(ValueError, match=match) as info:
        kindle.load(path)
    assert str(path) in str(info.value)


def test_header_size_limit(monkeypatch):
    monkeypatch.setattr(serialization, "_MAX_HEADER", 16)
    with pytest.raises(ValueError, match="exceeds the 16-byte limit"):
        load_bytes(st_bytes({"a": F32_2}, b"\0" * 8))


# --- hostile torch archives -----------------------------------------------------------------

def _local_header(name, size):
    name = name.encode()
    return struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, size, size, len(name), 0) + name


def _zip_by_hand(blob, records):
    """An archive of raw bytes `blob` with central-directory records (name, header_offset, size)."""
    cd = b""
    for name, offset, size in records:
        n = name.encode()
        cd += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, size, size, len(n),
                          0, 0, 0, 0, 0, offset) + n
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(records), len(records), len(cd), len(blob), 0)
    return blob + cd + end


def test_overlapping_entries_cannot_amplify_memory():
    torch = pytest.importorskip("torch")
    # Ten storages whose entries nest inside each other: each is most of the file.
    n, payload = 10, 4000
    sizes = [sum(len(_local_header(f"a/data/{j}", 0)) for j in range(k + 1, n)) + payload for k in range(n)]

    class Stor:
        def __init__(self, k):
            self.k = k

    class Ref:
        def __init__(self, k):
            self.k = k

        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2, (Stor(self.k), 0, (sizes[self.k],), (1,), False, OrderedDict()))

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.ByteStorage, str(obj.k), "cpu", sizes[obj.k]) if isinstance(obj, Stor) else None

    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump([Ref(k) for k in range(n)])
    pkl = buf.getvalue()
    blob = _local_header("a/data.pkl", len(pkl)) + pkl
    records = [("a/data.pkl", 0, len(pkl))]
    for k in range(n):
        records.append((f"a/data/{k}", len(blob), sizes[k]))
        blob += _local_header(f"a/data/{k}", sizes[k])
    blob += b"\1" * payload
    raw = _zip_by_hand(blob, records)
    assert sum(sizes) > len(raw)
    with pytest.raises(RuntimeError, match="more bytes than the file holds"):
        load_bytes(raw)
    # Without the aliases the budget holds, and the reader goes on to the first missing entry.
    ok = _zip_by_hand(blob, records[:1] + records[-2:])
    with pytest.raises(RuntimeError, match="no entry 'a/data/0'"):
        load_bytes(ok)


def test_hostile_torch_archives():
    torch = pytest.importorskip("torch")
    good = torch_bytes({"w": torch.arange(4.0), "v": torch.ones(3, dtype=torch.int64)})

    def with_pkl(pkl):
        return rezip(good, replace={"data.pkl": pkl})

    cases = {
        "truncated": (good[: len(good) // 2], "not a readable zip"),
        "compressed": (rezip(good, compress=zipfile.ZIP_DEFLATED), "compressed"),
        "missing_storage": (rezip(good, drop=("data/0",)), "no entry"),
        "short_storage": (rezip(good, replace={"data/0": b"\0" * 12}), "need 16 bytes, the entry holds 12"),
        "big_endian": (rezip(good, replace={"byteorder": b"big"}), "byte order"),
        "no_pickle": (rezip(good, drop=("data.pkl",)), "expected one data.pkl"),
        "bad_pickle": (rezip(good, replace={"data.pkl": b"\x80\x02}q\x00(X"}), "invalid torch checkpoint"),
        "build_on_list": (rezip(good, replace={"data.pkl": b"\x80\x02]}\x62."}), "BUILD"),
        "bad_persid": (rezip(good, replace={"data.pkl": b"\x80\x02K\x05Q."}), "persistent id"),
        # CPython hashes tuples recursively in C: this one, as a dict key, would kill the interpreter.
        "deep_tuple_key": (with_pkl(b"\x80\x02}" + b")" + b"\x85" * 200000 + b"K\x01s."), "nested deeper than 100"),
        "deep_tuple": (with_pkl(b"\x80\x02)" + b"\x85" * 101 + b"."), "nested deeper than 100"),
        "list_key": (with_pkl(b"\x80\x02}]K\x00s."), "cannot be a dict key"),
        "hash_work": (with_pkl(b"\x80\x02}(" + b"K\x01" * 5000 + b"tq\x000(" + b"h\x00K\x00" * 2000 + b"u."),
                      "more hashing work"),
        "newobj": (with_pkl(b"\x80\x02ccollections\nOrderedDict\n)\x81."), "NEWOBJ"),
        "obj": (with_pkl(b"\x80\x02(ccollections\nOrderedDict\no."), "INST/OBJ"),
        "setitem_on_list": (with_pkl(b"\x80\x02]K\x00K\x01s."), "SETITEM on a list"),
        "set_from_dict": (with_pkl(b"\x80\x02c__builtin__\nset\n}\x85R."), "set\\(\\) may only be rebuilt"),
        "bytearray8_huge": (rezip(good, replace={"data.pkl": b"\x80\x05\x96" + struct.pack("<Q", 2 ** 40) + b"."}),
                            "BYTEARRAY8 declares 1099511627776 bytes"),
    }
    for case, (raw, match) in cases.items():
        with pytest.raises(RuntimeError, match=match) as info:
            load_bytes(raw)
        assert "<file object>" in str(info.value), case
    # Ints of any width may be keys: those whose hash an attacker could choose (above 2**60) go
    # through the hash guard (test_serialization_hostile.py), like tuples.
    assert load_bytes(with_pkl(b"\x80\x02}\x8a\x09" + (2 ** 61 - 1).to_bytes(9, "little") + b"K\x00s.")) == \
        {2 ** 61 - 1: 0}
    assert load_bytes(with_pkl(b"\x80\x02}\x8a\x0a" + (-2 ** 70).to_bytes(10, "little", signed=True) + b"K\x00s.")) \
        == {-2 ** 70: 0}

    class Stor:
        pass

    def archive(size, stride, offset):
        class Ref:
            def __reduce__(self):
                return (torch._utils._rebuild_tensor_v2, (Stor(), offset, size, stride, False, OrderedDict()))

        class Pickler(pickle.Pickler):
            def persistent_id(self, obj):
                return ("storage", torch.FloatStorage, "0", "cpu", 4) if isinstance(obj, Stor) else None

        buf = io.BytesIO()
        Pickler(buf, protocol=2).dump(Ref())
        return rezip(good, replace={"data.pkl": buf.getvalue()})

    for size, stride, offset, match in [((5,), (1,), 0, "reach element 4"), ((2, 2), (3, 1), 0, "reach element 4"),
                                        ((2,), (-1,), 1, "negative size or stride"),
                                        ((2,), (1,), -1, "invalid storage offset"),
                                        ((2,), (1, 1), 0, "different lengths"), ((2 ** 62, 4), (1, 1), 0, "overflows"),
                                        ((1,), (2 ** 64,), 0, "overflows"), ((-1,), (1,), 0, "negative size"),
                                        ((2 ** 41,), (0,), 0, "more than 1099511627776"),
                                        ((2 ** 20, 2 ** 20), (0, 0), 0, "more than 64 times the file")]:
        with pytest.raises(RuntimeError, match=match):
            load_bytes(archive(size, stride, offset))
    assert as_np(load_bytes(archive((2, 2), (1, 2), 0))).tolist() == [[0, 2], [1, 3]]


# --- fuzzing --------------------------------------------------------------------------------

def _corpus(ext, prefix=""):
    return sorted(glob.glob(os.path.join(CORPUS, f"{prefix}*.{ext}")))


@pytest.mark.parametrize("path", _corpus("safetensors") + _corpus("pt") + _corpus("bin"),
                         ids=os.path.basename)
def test_corpus_replay(path):
    if os.path.basename(path).startswith("seed_"):
        assert isinstance(kindle.load(path), dict)
    else:
        with pytest.raises(LOAD_ERRORS):
            kindle.load(path)


def _load_or_clean_error(raw):
    try:
        load_bytes(raw)
    except LOAD_ERRORS as e:
        assert "kindle.load" in str(e), repr(e)


def _mutate_bytes(data, raw, hot_end):
    from hypothesis import strategies as st
    op = data.draw(st.sampled_from(["truncate", "flip", "insert"]))
    if op == "truncate":
        return raw[: data.draw(st.integers(0, len(raw) - 1))]
    b = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 6))):
        # Mostly the structural bytes at the front: flips in tensor data just change values.
        pos = data.draw(st.one_of(st.integers(0, max(hot_end - 1, 0)), st.integers(0, len(b) - 1)))
        if op == "flip":
            b[pos] ^= data.draw(st.integers(1, 255))
        else:
            b[pos:pos] = data.draw(st.binary(min_size=1, max_size=4))
    return bytes(b)


def _json_values():
    from hypothesis import strategies as st
    scalars = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.sampled_from([0, 1, 8, -1, 2 ** 63])
               | st.floats() | st.text(max_size=6) | st.sampled_from(["F32", "BF16", "tensor", "dict", "a"]))
    return st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c,
                                                                                      max_size=3), max_leaves=6)


def _slots(node, out):
    """Every (container, key) in a JSON document, to pick one to rewrite."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        out.append((node, k))
        _slots(v, out)
    return out


def _rewrite_header(data, raw):
    from hypothesis import strategies as st
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.get("__metadata__", {})
    target = header
    if "kindle" in meta and data.draw(st.booleans()):
        target = json.loads(meta["kindle"])
    slots = _slots(target, [])
    container, key = data.draw(st.sampled_from(slots))
    if data.draw(st.booleans()) and isinstance(container, dict):
        container.pop(key)
    else:
        container[key] = data.draw(_json_values())
    if target is not header:
        meta["kindle"] = json.dumps(target)
    return st_bytes(None, raw[8 + n:], raw_header=json.dumps(header).encode())


def test_fuzz_safetensors_reader():
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st
    seeds = [open(p, "rb").read() for p in _corpus("safetensors", "seed_")]
    assert seeds

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(st.data())
    def run(data):
        raw = data.draw(st.sampled_from(seeds))
        if data.draw(st.booleans()):
            raw = _rewrite_header(data, raw)
        else:
            raw = _mutate_bytes(data, raw, 8 + struct.unpack("<Q", raw[:8])[0])
        _load_or_clean_error(raw)

    run()


def test_fuzz_torch_reader():
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st
    seeds = []
    for p in _corpus("pt", "seed_"):
        raw = open(p, "rb").read()
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            pkl = z.read([n for n in z.namelist() if n.endswith("data.pkl")][0])
        seeds.append((raw, pkl))
    assert seeds

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(st.data())
    def run(data):
        raw, pkl = data.draw(st.sampled_from(seeds))
        if data.draw(st.booleans()):  # a damaged pickle inside a sound archive
            raw = rezip(raw, replace={"data.pkl": _mutate_bytes(data, pkl, len(pkl))})
        else:  # a damaged archive
            raw = _mutate_bytes(data, raw, len(raw))
        _load_or_clean_error(raw)

    run()
