"""Regenerate the seed checkpoints that test_serialization.py's fuzz tests mutate and replay.

Run from the repository root: PYTHONPATH=python python tests/python/fuzz_corpus/make_seeds.py
The seed_*.pt files need torch; the files are committed so the tests run without it.
Files named crash_*.* are hostile inputs kept as regression cases: they must raise a clear
error, never crash. Seeds stay small (a few KB) so each fuzz example is cheap.
"""
import io
import json
import os
import pickle
import struct
import sys
import zipfile
from collections import OrderedDict

import kindle

HERE = os.path.dirname(os.path.abspath(__file__))


def kindle_seeds():
    flat = {"weight": kindle.arange(12, dtype=kindle.float32).reshape(3, 4),
            "bias": kindle.arange(3, dtype=kindle.float64),
            "half": kindle.ones(2, dtype=kindle.float16),
            "mask": kindle.tensor([True, False]),
            "ids": kindle.arange(4, dtype=kindle.int64)}
    kindle.save(flat, os.path.join(HERE, "seed_flat.safetensors"))
    nested = {"state": {0: {"step": kindle.tensor(3.0), "exp_avg": kindle.zeros(2, 2),
                            "bf": kindle.ones(2, dtype=kindle.bfloat16)}},
              "param_groups": [{"lr": 0.01, "betas": (0.9, 0.999), "eps": float("inf"),
                                "params": [0], "nesterov": False, "foreach": None}],
              "empty": kindle.empty((0, 3), dtype=kindle.int8)}
    kindle.save(nested, os.path.join(HERE, "seed_nested.safetensors"))


def torch_seeds():
    import torch
    state = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3),
             "b": torch.arange(3, dtype=torch.int16),
             "h": torch.ones(2, dtype=torch.bfloat16),
             "u": torch.arange(4, dtype=torch.uint8),
             "nc": torch.arange(6.0).reshape(2, 3).t()}
    torch.save(state, os.path.join(HERE, "seed_state.pt"))
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    base = torch.arange(8.0)
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "p": torch.nn.Parameter(torch.ones(2)),
                "base": base, "view": base[2:5], "size": torch.Size([2, 3]), "tags": {"a", "b"}},
               os.path.join(HERE, "seed_optim.pt"))


def _write(name, raw):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(raw)


def _st(header, data=b""):
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def kindle_crashes():
    f32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    _write("crash_header_past_end.safetensors", struct.pack("<Q", 1 << 40) + b'{"a":{}}')
    _write("crash_overlap.safetensors", _st({"a": f32, "b": dict(f32, data_offsets=[4, 12])}, bytes(12)))
    _write("crash_huge_shape.safetensors", _st({"a": dict(f32, shape=[1 << 40, 1 << 40, 0], data_offsets=[0, 0])}))
    tree = {"tensor": "a"}
    for _ in range(150):
        tree = {"list": [tree]}
    meta = {"kindle": json.dumps({"version": 1, "tree": tree})}
    _write("crash_deep_metadata.safetensors", _st({"a": f32, "__metadata__": meta}, bytes(8)))


def torch_crashes():
    import torch
    good = io.BytesIO()
    torch.save({"w": torch.arange(4.0)}, good)

    def with_pickle(pkl):
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(good.getvalue())) as src, zipfile.ZipFile(out, "w") as dst:
            for info in src.infolist():
                data = pkl if info.filename.endswith("/data.pkl") else src.read(info.filename)
                dst.writestr(info.filename, data)
        return out.getvalue()

    # A global outside the allowed table (a made-up one: the corpus holds nothing executable).
    _write("crash_unknown_global.pt", with_pickle(b"\x80\x02ckindle_corpus\nnot_allowed\n)R."))
    # BYTEARRAY8 declaring 1 TiB: found by the fuzz test (pickle's reader allocated it up front).
    _write("crash_bytearray8.pt", with_pickle(b"\x80\x05\x96" + struct.pack("<Q", 1 << 40) + b"."))
    # (The deep-tuple dict key that overflowed CPython's C stack needs ~200 KB: it is built by
    # test_hostile_torch_archives instead of being stored here.)

    class Stor:
        pass

    class Ref:  # a tensor whose size and stride reach past its storage
        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2, (Stor(), 1, (4, 4), (4, 1), False, OrderedDict()))

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.FloatStorage, "0", "cpu", 4) if isinstance(obj, Stor) else None

    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump({"w": Ref()})
    _write("crash_out_of_bounds_view.pt", with_pickle(buf.getvalue()))


if __name__ == "__main__":
    kindle_seeds()
    kindle_crashes()
    if "--no-torch" not in sys.argv:
        torch_seeds()
        torch_crashes()
