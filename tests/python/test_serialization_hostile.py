"""Hostile checkpoints: a seeded generator of damaged and malicious files for kindle.load, and
the limits that keep loading linear in the file's size (hash collisions, memo bombs, expanded
views), BUILD abuse, and what a killed or symlinked kindle.save leaves behind.

Every generated file must load or raise a clear error (ValueError, RuntimeError or
pickle.UnpicklingError naming kindle.load) -- never crash the interpreter, never hang. The
corpus is loaded in a child process, so a crash fails the test instead of killing pytest.
Nothing here needs torch: pickles are assembled opcode by opcode.
"""
import functools
import io
import json
import os
import pickle
import random
import re
import signal
import struct
import subprocess
import sys
import time
import tracemalloc
import zipfile
from collections import OrderedDict

import pytest

import kindle
from kindle import _torch_pickle, serialization

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "fuzz_corpus")
LOAD_ERRORS = (ValueError, RuntimeError, pickle.UnpicklingError)
P61 = 2 ** 61 - 1  # CPython hashes ints modulo this prime


def load_bytes(raw):
    return kindle.load(io.BytesIO(raw))


# --- a tiny pickle assembler (protocol 2 opcodes, as torch.save writes them) ------------------

def glob(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def uni(text):
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def num(n):
    if 0 <= n < 256:
        return b"K" + bytes([n])
    if 0 <= n < 65536:
        return b"M" + struct.pack("<H", n)
    if -2 ** 31 <= n < 2 ** 31:
        return b"J" + struct.pack("<i", n)
    raw = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def put(i):
    return b"r" + struct.pack("<I", i)


def get(i):
    return b"j" + struct.pack("<I", i)


def tup(*parts):
    return b"(" + b"".join(parts) + b"t"


def int_tuple(values):
    return tup(*map(num, values))


def storage_pid(key, numel, kind="FloatStorage"):
    return tup(uni("storage"), glob("torch", kind), uni(key), uni("cpu"), num(numel)) + b"Q"


def tensor(pid, offset, size, stride):
    """_rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())."""
    return (glob("torch._utils", "_rebuild_tensor_v2") +
            tup(pid, num(offset), int_tuple(size), int_tuple(stride), b"\x89",
                glob("collections", "OrderedDict") + b")R") + b"R")


def pkl(body):
    return b"\x80\x02" + body + b"."


def archive(pickle_bytes, storages=None):
    """A torch.save-style zip: archive/data.pkl, archive/byteorder and archive/data/<key>."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pickle_bytes)
        z.writestr("archive/byteorder", b"little")
        for key, data in (storages or {}).items():
            z.writestr(f"archive/data/{key}", data)
    return out.getvalue()


F32_STORAGE = struct.pack("<8f", *range(8))


def st_bytes(header, data=b""):
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


# --- keys that collide in CPython's hash ------------------------------------------------------

_M64 = 2 ** 64 - 1
_XX1, _XX2, _XX5 = 11400714785074694791, 14029467366897019727, 2870177450012600261


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M64


def colliding_pairs(count, target):
    """`count` distinct (a, b) int pairs, |b| < 2**60, whose tuple hash is `target`.

    CPython (3.8+) hashes a tuple with an xxHash-like round per item that is invertible,
    so the second item's hash can be solved for; it must be a small int's (itself).
    """
    pre = (target - (2 ^ (_XX5 ^ 3527539))) & _M64
    after_second = pre * pow(_XX1, -1, 2 ** 64) & _M64
    after_second = ((after_second >> 31) | (after_second << 33)) & _M64
    inv2 = pow(_XX2, -1, 2 ** 64)
    out, a = [], 0
    while len(out) < count:
        acc = _rotl((_XX5 + a * _XX2) & _M64, 31) * _XX1 & _M64
        lane = (after_second - acc) * inv2 & _M64
        if lane < 2 ** 60:
            out.append((a, lane))
        elif lane > _M64 - 2 ** 60:
            out.append((a, lane - 2 ** 64))
        a += 1
    return out


def test_colliding_pairs_really_collide():
    for target in (1, 12345, 2 ** 40 + 7):
        pairs = colliding_pairs(6, target)
        assert len(set(pairs)) == 6 and len({hash(p) for p in pairs}) == 1


@functools.lru_cache(maxsize=None)
def collision_classes(classes, per_class):
    """classes * per_class distinct int pairs: per_class of them share each of `classes` hashes."""
    return tuple(p for c in range(classes) for p in colliding_pairs(per_class, 1000 + 7919 * c))


def pickle_dict_of(keys):
    """A pickle of {key: 0} for int-pair keys, filled with one SETITEMS."""
    body = b"}(" + b"".join(num(a) + num(b) + b"\x86K\x00" for a, b in keys) + b"u"
    return pkl(body)


def kindle_tree_file(tree):
    """A kindle safetensors file whose 'kindle' metadata holds `tree` (one small tensor)."""
    meta = json.dumps({"version": 1, "tree": tree})
    header = {"__metadata__": {"format": "pt", "kindle": meta},
              "t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    return st_bytes(header, b"\0" * 8)


# --- memo bombs -------------------------------------------------------------------------------
# One value is built once, memoized, and handed again and again to a REDUCE that copies it
# (set(), OrderedDict(), torch.Size, _codecs.encode) or rebuilds from it (a tensor). Without a
# budget each copy costs the value's size for a few bytes of pickle.

def memo_bomb(kind, n, repeats):
    if kind == "set":
        source = b"](" + b"".join(num(i) for i in range(n)) + b"e" + put(0)
        call = glob("__builtin__", "set") + put(1)
        each = get(1) + get(0) + b"\x85R"
    elif kind == "ordered_dict":
        source = b"](" + b"".join(num(i) + b"K\x00\x86" for i in range(n)) + b"e" + put(0)
        call = glob("collections", "OrderedDict") + put(1)
        each = get(1) + get(0) + b"\x85R"
    elif kind == "size":
        source = int_tuple(range(n)) + put(0)
        call = glob("torch", "Size") + put(1)
        each = get(1) + get(0) + b"\x85R"
    elif kind == "encode":
        source = uni("x" * n) + put(0) + uni("latin1") + put(2)
        call = glob("_codecs", "encode") + put(1)
        each = get(1) + get(0) + get(2) + b"\x86R"
    elif kind == "tensor":
        source = tup(storage_pid("0", 8), num(0), int_tuple([8]), int_tuple([1]), b"\x89",
                     glob("collections", "OrderedDict") + b")R") + put(0)
        call = glob("torch._utils", "_rebuild_tensor_v2") + put(1)
        each = get(1) + get(0) + b"R"
    else:
        raise ValueError(kind)
    body = source + call + b"](" + each * repeats + b"e"
    return archive(pkl(body), {"0": F32_STORAGE} if kind == "tensor" else None)


def flood(kind, count):
    """Objects built straight from opcodes, many per byte of pickle: bounded by the general budget."""
    if kind == "empty_sets":  # EMPTY_SET: 1 byte, 216 bytes of memory
        return archive(b"\x80\x04](" + b"\x8f" * count + b"e.")
    if kind == "marks":  # MARK: 1 byte, one more stack list
        return archive(b"\x80\x02" + b"(" * count + b"N.")
    if kind == "fresh_tensors":  # a new argument tuple per tensor, the rest memoized
        setup = (storage_pid("0", 8) + put(0) + int_tuple([1]) + put(1) + glob("torch._utils", "_rebuild_tensor") +
                 put(2) + b"0" * 3)
        each = get(2) + tup(get(0), b"K\x00", get(1), get(1)) + b"R"
        return archive(pkl(setup + b"](" + each * count + b"e"), {"0": F32_STORAGE})
    raise ValueError(kind)


# --- limits: linear time in the face of hash collisions ------------------------------------

def _timed(raw):
    t = time.perf_counter()
    try:
        load_bytes(raw)
        err = None
    except LOAD_ERRORS as e:
        err = e
    return time.perf_counter() - t, err


def test_colliding_keys_are_refused_in_pickles_and_json():
    # Files of N and 4N keys that all share one hash: quadratic work without the guard (about
    # 10 s for 20000 tuple keys, hours for a few MB of them), now refused at the first key
    # over the limit.
    for n in (9, 5000, 20000):
        keys = colliding_pairs(n, 4242)
        t, err = _timed(archive(pickle_dict_of(keys)))
        assert isinstance(err, RuntimeError) and "share the hash value 4242" in str(err), err
        assert t < 1.0
        # As set items, through set([...]) and through ADDITEMS
        items = b"".join(num(a) + num(b) + b"\x86" for a, b in keys)
        for body in (glob("__builtin__", "set") + b"](" + items + b"e\x85R", b"\x8f(" + items + b"\x90"):
            t, err = _timed(archive(b"\x80\x04" + body + b"."))
            assert "share the hash value" in str(err) and t < 1.0, err
        # In kindle's own metadata: int dict keys equal modulo 2**61 - 1, and tuple set items.
        t, err = _timed(kindle_tree_file({"dict": [[7 + j * P61, None] for j in range(1, n + 1)]}))
        assert isinstance(err, ValueError) and "share the hash value 7" in str(err) and t < 1.0, err
        t, err = _timed(kindle_tree_file({"set": [{"tuple": list(p)} for p in keys]}))
        assert isinstance(err, ValueError) and "share the hash value 4242" in str(err) and t < 1.0, err


def test_hashing_work_is_charged_by_the_size_of_keys():
    # Telling apart frozensets (or tuples) of one hash compares their items: a big one used as
    # a key again and again is charged its size each time.
    big = b"(" + b"".join(num(i) for i in range(1000)) + b"\x91" + put(0)
    for uses, ok in ((10, True), (5000, False)):
        raw = archive(b"\x80\x04" + big + b"}(" + (get(0) + b"K\x00") * uses + b"u.")
        if ok:
            assert list(load_bytes(raw)) == [frozenset(range(1000))]
        else:
            with pytest.raises(RuntimeError, match="more hashing work than its size allows"):
                load_bytes(raw)
    key = int_tuple(range(1000)) + put(0)
    with pytest.raises(RuntimeError, match="more hashing work than its size allows"):
        load_bytes(archive(pkl(key + b"}(" + (get(0) + b"K\x00") * 5000 + b"u")))


def test_loading_colliding_keys_is_linear():
    # Up to the limit, collisions are allowed: files of N and 4N such keys load in linear time.
    def pt_file(classes):
        return archive(pickle_dict_of(collision_classes(classes, serialization._MAX_SAME_HASH)))

    def json_file(classes):
        keys = [k + j * P61 for k in range(classes) for j in range(1, serialization._MAX_SAME_HASH + 1)]
        return kindle_tree_file({"dict": [[k, None] for k in keys]})

    for make in (pt_file, json_file):
        small, big = make(250), make(1000)
        assert 3.5 * len(small) < len(big) < 4.5 * len(small)
        got = load_bytes(big)
        assert len(got) == 8000 and all(v is None or v == 0 for v in got.values())
        t_small = min(_timed(small)[0] for _ in range(3))
        t_big = min(_timed(big)[0] for _ in range(3))
        # Quadratic would be 16x; allow generous noise.
        assert t_big < 9 * t_small + 0.25, (make.__name__, t_small, t_big)
        assert t_big < 5.0


def test_big_int_keys_in_kindle_metadata_still_load():
    tree = {"dict": [[2 ** 70, {"tensor": "t"}], [-(2 ** 65), 1], [3, 2]]}
    got = load_bytes(kindle_tree_file(tree))
    assert list(got) == [2 ** 70, -(2 ** 65), 3] and got[3] == 2


# --- limits: bounded memory -------------------------------------------------------------------

@pytest.mark.parametrize("kind,n,repeats", [("set", 20000, 20000), ("ordered_dict", 5000, 20000),
                                            ("size", 20000, 30000), ("encode", 100000, 100000),
                                            ("tensor", 0, 50000)])
def test_memo_bombs_are_refused_with_bounded_memory(kind, n, repeats):
    raw = memo_bomb(kind, n, repeats)
    tracemalloc.start()
    try:
        t = time.perf_counter()
        # (a string's copies are charged to the general budget as they are fetched from the memo)
        with pytest.raises(RuntimeError, match="same memoized value again and again|builds more objects than a file"):
            load_bytes(raw)
        elapsed = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * len(raw), (kind, len(raw), peak)
    assert elapsed < 5.0
    # A few repeats (small copies) are no bomb: the same value may be copied within the budget.
    small = memo_bomb(kind, 16, 3)
    got = load_bytes(small)
    assert isinstance(got, list) and len(got) == 3


@pytest.mark.parametrize("kind,count", [("empty_sets", 100000), ("marks", 100000), ("fresh_tensors", 4000)])
def test_opcode_floods_are_charged_to_the_general_budget(kind, count, monkeypatch):
    # Within the default budget (64x the file, plus 16 MiB) such files load; with a budget of
    # 16x the file they are refused, with memory to match.
    got = load_bytes(flood(kind, 100))
    assert got is None or len(got) == 100
    monkeypatch.setattr(_torch_pickle, "_MEMORY_FACTOR", 16)
    monkeypatch.setattr(_torch_pickle, "_MEMORY_SLACK", 64 << 10)
    raw = flood(kind, count)
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError, match="builds more objects than a file of its size may"):
            load_bytes(raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * len(raw), (kind, len(raw), peak)


# --- BUILD and container opcodes: no substituted methods ------------------------------------

OD = glob("collections", "OrderedDict") + b")R"


BUILD_ABUSE = [
    # (a global is no value: refused before BUILD sees it)
    (OD + b"}" + uni("append") + glob("__builtin__", "set") + b"sb", "the global builtins.set cannot be a value"),
    (OD + b"}" + uni("extend") + glob("collections", "OrderedDict") + b"sb(K\x01e",
     "the global collections.OrderedDict cannot be a value"),
    (OD + b"}" + uni("append") + b"Nsb", "BUILD .*'append'"),
    (OD + b"}" + uni("_metadata") + b"}s" + uni("__setitem__") + b"Nsb", "BUILD .*'__setitem__'"),
    (OD + b"}" + uni("_metadata") + b"]sb", "BUILD .*_metadata"),
    (OD + b"}" + uni("_metadata") + b"}sb" + b"}" + uni("append") + b"Nsb", "BUILD .*'append'"),
    (OD + b"(K\x01K\x02tb", "BUILD \\(setting state tuple\\)"),
    (b"]}" + uni("_metadata") + b"}sb", "BUILD .* on a list"),
    (b"}}" + uni("_metadata") + b"}sb", "BUILD .* on a dict"),
    (glob("__builtin__", "set") + b")R}" + uni("_metadata") + b"}sb", "BUILD .* on a set"),
    (OD + b"(K\x01e", "APPENDS on a OrderedDict"),
    (OD + b"K\x01a", "APPEND on a OrderedDict"),
    (glob("torch", "Size") + b"((K\x01tt" + b"R(K\x01e", "APPENDS on a Size"),
    (glob("torch", "Size") + b"((K\x01tt" + b"RK\x01K\x02s", "SETITEM on a Size"),
    (glob("__builtin__", "set") + b")R(K\x01K\x02u", "SETITEMS on a set"),
    (b"](K\x01K\x02u", "SETITEMS on a list"),
    (b"}(K\x01\x90", "ADDITEMS on a dict"),
    (b"(K\x01\x91(K\x02\x90", "ADDITEMS on a frozenset"),
    (glob("__builtin__", "set") + b"]R", "REDUCE arguments must be a tuple"),
    (glob("collections", "OrderedDict") + uni("ab") + b"R", "REDUCE arguments must be a tuple"),
    (b"K\x01p99999999999999999999\n", "PUT index is out of range"),
    (b"K\x01p4294967296\n", "memo index .* is out of range"),
]


@pytest.mark.parametrize("body,match", BUILD_ABUSE)
def test_build_and_container_opcodes_cannot_reach_other_methods(body, match):
    with pytest.raises(RuntimeError, match=match) as info:
        load_bytes(archive(b"\x80\x04" + body + b"."))
    assert "kindle.load: <file object>" in str(info.value)


def test_state_dict_metadata_still_loads():
    meta = glob("collections", "OrderedDict") + b")R(" + uni("") + b"}" + uni("version") + b"K\x01su"
    body = OD + b"(" + uni("w") + tensor(storage_pid("0", 8), 2, [3], [1]) + b"u}" + uni("_metadata") + meta + b"sb"
    got = load_bytes(archive(pkl(body), {"0": F32_STORAGE}))
    assert type(got) is OrderedDict and list(got) == ["w"] and got["w"].tolist() == [2.0, 3.0, 4.0]
    assert got._metadata == {"": {"version": 1}} and "append" not in vars(got)


# --- tensors validated against their storages -----------------------------------------------

def view_archive(*views, storage=F32_STORAGE, numel=8):
    """A list of tensors viewing one storage: views are (offset, size, stride)."""
    pid = storage_pid("0", numel) + put(0)
    items = [tensor(pid if i == 0 else get(0), *v) for i, v in enumerate(views)]
    return archive(pkl(b"](" + b"".join(items) + b"e"), {"0": storage})


HOSTILE_VIEWS = [
    ((0, [2 ** 41], [0]), "more than 1099511627776"),
    ((0, [2 ** 21, 2 ** 21], [0, 0]), "more than 1099511627776"),
    ((0, [2 ** 18, 2 ** 18], [0, 0]), "more than 64 times the file"),
    ((0, [2 ** 30], [0]), "more than 64 times the file"),
    ((0, [4, 2 ** 62], [1, 0]), "overflows 64-bit"),
    ((0, [2 ** 63], [0]), "overflows 64-bit"),
    ((0, [3], [2 ** 63]), "overflows 64-bit"),
    ((0, [3], [2 ** 62]), "reach element"),
    ((7, [2], [1]), "reach element 8"),
    ((9, [0], [1]), "offset 9 is past"),
    ((0, [-1], [1]), "negative size"),
    ((0, [2], [-1]), "negative size or stride"),
    ((-1, [2], [1]), "invalid storage offset"),
    ((0, [1] * 65, [1] * 65), "65 dimensions"),
]


@pytest.mark.parametrize("view,match", HOSTILE_VIEWS)
def test_views_outside_or_far_beyond_their_storage_are_refused(view, match):
    with pytest.raises(RuntimeError, match=match):
        load_bytes(view_archive(view))


def test_expanded_views_are_bounded_together():
    # Each view alone is within 64x the file; together they are not.
    raw = view_archive(*[(0, [2 ** 15], [0])] * 4)
    assert 4 * 2 ** 15 * 4 < 64 * len(raw) + serialization._VIEW_SLACK
    assert [t.numel() for t in load_bytes(raw)] == [2 ** 15] * 4
    many = view_archive(*[(0, [2 ** 15], [0])] * 400)
    assert 2 ** 15 * 4 < 64 * len(many) + serialization._VIEW_SLACK
    with pytest.raises(RuntimeError, match="more than 64 times the file"):
        load_bytes(many)


def test_legit_expanded_and_overlapping_views_load_and_work():
    got = load_bytes(view_archive((1, [1000], [0]), (0, [3, 4], [1, 1]), (2, [2, 0, 3], [0, 5, 1]), (8, [0], [1])))
    assert got[0].tolist() == [1.0] * 1000 and float(got[0].sum()) == 1000.0
    assert got[1].tolist() == [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5]]
    assert tuple(got[2].shape) == (2, 0, 3) and got[3].numel() == 0
    assert got[1].contiguous().sum().item() == 30


@pytest.mark.parametrize("size,stride,offset,available,ok", [
    ((2, 3), (3, 1), 0, 6, True), ((2, 3), (3, 1), 1, 6, False), ((), (), 5, 6, True), ((), (), 6, 6, False),
    ((0,), (1,), 6, 6, True), ((0,), (1,), 7, 6, False), ((5,), (0,), 0, 1, True), ((3,), (1,), 0, 0, False),
    ((2 ** 40,), (0,), 0, 1, True), ((2 ** 40 + 1,), (0,), 0, 1, False), ((2 ** 40 + 1,), (1,), 0, 2 ** 41, True),
    ((2, 2), (1,), 0, 4, False), ((True, 2), (1, 1), 0, 4, False), ((2,), (1.0,), 0, 4, False),
])
def test_check_view(size, stride, offset, available, ok):
    assert (serialization._check_view(size, stride, offset, available) is None) == ok


# --- atomic saves: stale temporaries and symlinks --------------------------------------------

def _dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _temps(folder):
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
    target = tmp_path / "ckpt.safetensors"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = [_dead_pid() for _ in range(3)]
        stale = [serialization._temp_name("ckpt.safetensors", pid) for pid in dead]
        keep = [serialization._temp_name("ckpt.safetensors", sleeper.pid),      # a live writer
                serialization._temp_name("ckpt.safetensors", os.getpid()),      # this process (another thread)
                serialization._temp_name("other.safetensors", dead[0]),         # another target
                serialization._temp_name("ckpt.safetensors.bak", dead[0]),      # a target with a longer name
                f".ckpt.safetensors.00000000.{dead[0]}.0123456789abcdef.tmp",  # another host
                f".ckpt.safetensors.{dead[0]}.tmp",                             # not our pattern
                "ckpt.safetensors.tmp"]
        for name in stale + keep:
            (tmp_path / name).write_bytes(b"partial")
        kindle.save({"a": kindle.ones(2)}, target)
        assert _temps(tmp_path) == sorted(keep)
        assert load_bytes(target.read_bytes())["a"].tolist() == [1.0, 1.0]
    finally:
        sleeper.kill()
        sleeper.wait()


_KILLED_SAVE = """
import os, signal, sys
import kindle
from kindle import serialization
real, calls = serialization.write_all, []
def dying(out, data):
    calls.append(1)
    if len(calls) == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    real(out, data)
serialization.write_all = dying
kindle.save({f"t{i}": kindle.full((1000,), float(i)) for i in range(4)}, sys.argv[1])
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_save_leaves_a_temporary_that_the_next_save_removes(tmp_path):
    target = tmp_path / "ckpt.safetensors"
    kindle.save({"old": kindle.zeros(1)}, target)
    before = target.read_bytes()
    for _ in range(2):
        child = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(target)], cwd=HERE, timeout=60)
        assert child.returncode == -signal.SIGKILL
    left = _temps(tmp_path)  # the second save removed the first one's temporary
    assert len(left) == 1 and left[0].startswith(".ckpt.safetensors.")
    assert target.read_bytes() == before  # the old checkpoint is intact
    kindle.save({"new": kindle.ones(1)}, target)
    assert _temps(tmp_path) == [] and list(load_bytes(target.read_bytes())) == ["new"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_saving_through_a_symlink_replaces_its_target(tmp_path, monkeypatch):
    real_dir, link_dir = tmp_path / "real", tmp_path / "links"
    real_dir.mkdir()
    link_dir.mkdir()
    target = real_dir / "model.safetensors"
    kindle.save({"v": kindle.zeros(1)}, target)
    os.chmod(target, 0o640)
    links = [link_dir / "abs.safetensors", link_dir / "rel.safetensors", link_dir / "chain.safetensors"]
    os.symlink(target, links[0])
    os.symlink(os.path.relpath(target, link_dir), links[1])
    os.symlink(links[0], links[2])

    seen = []
    real_write = serialization.write_all

    def spy(out, data):
        seen.append((_temps(real_dir), _temps(link_dir)))
        real_write(out, data)

    monkeypatch.setattr(serialization, "write_all", spy)
    for i, link in enumerate(links):
        seen.clear()
        kindle.save({"v": kindle.full((1,), float(i))}, link)
        assert os.path.islink(link) and os.path.realpath(link) == str(target)
        assert load_bytes(target.read_bytes())["v"].tolist() == [float(i)]
        assert seen and all(len(r) == 1 and lk == [] for r, lk in seen)  # the temp sits next to the target
        assert os.stat(target).st_mode & 0o777 == 0o640
    assert sorted(os.listdir(real_dir)) == ["model.safetensors"]

    dangling = link_dir / "dangling.safetensors"
    os.symlink(real_dir / "new.safetensors", dangling)
    kindle.save({"v": kindle.ones(1)}, dangling)
    assert os.path.islink(dangling) and (real_dir / "new.safetensors").is_file()

    loop = link_dir / "loop.safetensors"
    os.symlink(loop, loop)
    with pytest.raises(OSError, match="symbolic links"):
        kindle.save({"v": kindle.ones(1)}, loop)
    assert os.path.islink(loop) and _temps(link_dir) == []


# --- the hostile corpus: seeded mutations of valid files, loaded in a child process ----------

def _seeds():
    st = {}
    for name in ("seed_flat.safetensors", "seed_nested.safetensors"):
        with open(os.path.join(CORPUS, name), "rb") as f:
            st[name] = f.read()
    buf = io.BytesIO()
    kindle.save({"model": {"w": kindle.arange(6.0).reshape(2, 3), "b": kindle.zeros(3, dtype=kindle.int64)},
                 "opt": {0: {"step": 3, "m": kindle.ones(2, dtype=kindle.bfloat16)}}, "tags": {1, 2},
                 "pair": (1.5, None), "inf": float("inf")}, buf, format="safetensors")
    st["kindle_nested"] = buf.getvalue()
    pt = {}
    for name in ("seed_state.pt", "seed_optim.pt"):
        with open(os.path.join(CORPUS, name), "rb") as f:
            pt[name] = f.read()
    pid = storage_pid("0", 8) + put(0)
    body = OD + b"(" + uni("w") + tensor(pid, 0, [2, 3], [3, 1]) + uni("v") + tensor(get(0), 6, [2], [1])
    body += uni("t") + tensor(get(0), 1, [3, 2], [1, 3]) + uni("e") + tensor(get(0), 0, [4], [0]) + b"u"
    pt["assembled"] = archive(pkl(body), {"0": F32_STORAGE})
    return st, pt


def _rezip(raw, pickle_bytes):
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = pickle_bytes if info.filename.endswith("data.pkl") else src.read(info.filename)
            dst.writestr(info.filename, data)
    return out.getvalue()


def _data_pkl(raw):
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        return z.read([n for n in z.namelist() if n.endswith("data.pkl")][0])


def _zip_fields(raw):
    """(offset, width) of every integer field of a zip's end record, central records and local headers."""
    eocd = raw.rindex(b"PK\x05\x06")
    fields = [(eocd + off, w) for off, w in ((8, 2), (10, 2), (12, 4), (16, 4), (20, 2))]
    count, cd_off = struct.unpack("<H", raw[eocd + 10:eocd + 12])[0], struct.unpack("<I", raw[eocd + 16:eocd + 20])[0]
    pos = cd_off
    for _ in range(count):
        fields += [(pos + off, w) for off, w in ((8, 2), (10, 2), (20, 4), (24, 4), (28, 2), (30, 2), (32, 2), (42, 4))]
        local = struct.unpack("<I", raw[pos + 42:pos + 46])[0]
        fields += [(local + off, w) for off, w in ((6, 2), (8, 2), (18, 4), (22, 4), (26, 2), (28, 2))]
        n, e, c = struct.unpack("<HHH", raw[pos + 28:pos + 34])
        pos += 46 + n + e + c
    return fields


def _lie(rng, value, width, size):
    top = 2 ** (8 * width) - 1
    choice = rng.choice([0, 1, top, value + 1, value - 1, value + rng.randint(2, 64), value - rng.randint(2, 64),
                         size, size // 2, rng.randint(0, top)])
    return min(max(choice, 0), top)


_OPCODES = [b"(", b"t", b"R", b"b", b"s", b"u", b"a", b"e", b"0", b"2", b"1", b"h\x00", b"h\x05", b"q\x00", b"\x94",
            b"\x8f", b"\x90", b"\x91", b"}", b"]", b")", b"N", b"\x85", b"\x86", b"\x87", b"Q", b"K\xff", b"\x89",
            b"\x8a\x09" + P61.to_bytes(9, "little"), b"M\xff\xff", b"\x81", b"o", b"i", b"\x93", b"\x82\x01",
            glob("collections", "OrderedDict"), glob("__builtin__", "set"), glob("torch", "Size"),
            glob("torch._utils", "_rebuild_tensor_v2"), glob("os", "system"), b"\x96" + struct.pack("<Q", 2 ** 40)]


def _mutate_pickle(rng, data):
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(2, len(b))
        kind = rng.random()
        if kind < 0.5:
            b[pos:pos] = rng.choice(_OPCODES)
        elif kind < 0.7:
            del b[pos:pos + rng.randint(1, 8)]
        elif kind < 0.85:
            b[pos] ^= rng.randint(1, 255)
        else:
            start = rng.randrange(2, len(b))
            b[pos:pos] = b[start:start + rng.randint(1, 40)]
    return bytes(b)


def _mutate_header(rng, raw):
    (n,) = struct.unpack("<Q", raw[:8])
    header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
    names = [k for k in header if k != "__metadata__"]
    entry = header[rng.choice(names)]
    what = rng.choice(["offsets", "shape", "dtype", "meta"])
    if what == "offsets":
        begin, end = entry["data_offsets"]
        entry["data_offsets"] = rng.choice([[begin + 4, end + 4], [end, begin], [begin, 2 ** 62], [-8, end],
                                            [begin, end - 1], [0, len(data) + 1], [begin, end, 0], [str(begin), end],
                                            [begin - rng.randint(1, 16), end - rng.randint(1, 16)]])
    elif what == "shape":
        shape = list(entry["shape"])
        entry["shape"] = rng.choice([shape + [2 ** 40], [-s for s in shape] or [-1], shape + [0, 2 ** 62],
                                     [2 ** 21] * 3, [1] * 70, shape[:-1], [s + 1 for s in shape], [2 ** 64]])
    elif what == "dtype":
        entry["dtype"] = rng.choice(["F8_E5M2", "C64", "U16", "f32", "", None, 4, "BOOL", "I8", "F64"])
    else:
        meta = header.setdefault("__metadata__", {})
        meta["kindle"] = rng.choice([
            json.dumps({"version": 1, "tree": {"list": [{"tensor": "nope"}]}}),
            json.dumps({"version": 1, "tree": {"dict": [[7 + j * P61, 1] for j in range(1, 12)]}}),
            json.dumps({"version": 1, "tree": {"set": [{"tuple": list(p)} for p in colliding_pairs(12, 99)]}}),
            "[" * 50000, "{" * 3 + "}", json.dumps({"version": 2, "tree": None}),
            json.dumps({"version": 1, "tree": {"set": [{"list": []}]}}), 7])
    return st_bytes(header, data)


def _nested_list(depth):
    return pkl(b"]" * depth + b"a" * (depth - 1))


def _nested_dict(depth):
    return pkl(b"}K\x00" * depth + b"}" + b"s" * depth)


def hostile_corpus(seed=20240613):
    """[(label, bytes, expected)]: expected is None (load or clean error), "ok", or a regex the error matches."""
    rng = random.Random(seed)
    st, pt = _seeds()
    cases = [(f"seed:{k}", v, "ok") for k, v in list(st.items()) + list(pt.items())]
    for i in range(40):  # truncations
        name, raw = rng.choice(list(st.items()) + list(pt.items()))
        cut = rng.choice([rng.randrange(len(raw)), rng.randrange(min(len(raw), 200)), len(raw) - rng.randint(1, 30)])
        cases.append((f"truncate:{name}:{cut}", raw[:max(cut, 0)], None))
    for i in range(50):  # byte flips, mostly in the structural bytes
        name, raw = rng.choice(list(st.items()) + list(pt.items()))
        b = bytearray(raw)
        hot = 8 + struct.unpack("<Q", raw[:8])[0] if name in st else len(raw)
        for _ in range(rng.randint(1, 6)):
            b[rng.randrange(min(hot, len(b)))] ^= rng.randint(1, 255)
        cases.append((f"flip:{name}:{i}", bytes(b), None))
    for i in range(20):  # header length lies
        name, raw = rng.choice(list(st.items()))
        (n,) = struct.unpack("<Q", raw[:8])
        lie = rng.choice([n + rng.randint(1, 9), n - rng.randint(1, 9), 0, 2 ** 63, 2 ** 64 - 1, len(raw),
                          n + 8 * 2 ** 20])
        cases.append((f"header_length:{name}:{lie}", struct.pack("<Q", lie) + raw[8:], None))
    for i in range(50):  # offsets, shapes, dtypes and metadata rewritten
        name, raw = rng.choice(list(st.items()))
        cases.append((f"header:{name}:{i}", _mutate_header(rng, raw), None))
    for i in range(60):  # damaged pickles inside sound archives
        name, raw = rng.choice(list(pt.items()))
        cases.append((f"pickle:{name}:{i}", _rezip(raw, _mutate_pickle(rng, _data_pkl(raw))), None))
    for i in range(40):  # zip directory lies
        name, raw = rng.choice(list(pt.items()))
        b = bytearray(raw)
        for _ in range(rng.randint(1, 3)):
            pos, width = rng.choice(_zip_fields(raw))
            old = int.from_bytes(b[pos:pos + width], "little")
            b[pos:pos + width] = _lie(rng, old, width, len(raw)).to_bytes(width, "little")
        cases.append((f"zip:{name}:{i}", bytes(b), None))
    for i in range(25):  # views: random sizes, strides and offsets over an 8-element storage
        ndim = rng.randint(0, 3)
        size = [rng.choice([0, 1, 2, 3, 8, 2 ** 20, 2 ** 40, 2 ** 62]) for _ in range(ndim)]
        stride = [rng.choice([0, 1, 2, 3, 2 ** 31, 2 ** 62]) for _ in range(ndim)]
        cases.append((f"view:{size}:{stride}", view_archive((rng.choice([0, 1, 7, 8, 9]), size, stride)), None))
    # Targeted: each must be refused with its own message.
    keys = collision_classes(1, 40)
    cases += [("collide:dict", archive(pickle_dict_of(keys)), "share the hash value"),
              ("collide:json_int", kindle_tree_file({"dict": [[3 + j * P61, 0] for j in range(1, 40)]}),
               "share the hash value"),
              ("collide:json_set", kindle_tree_file({"set": [{"tuple": list(p)} for p in keys]}),
               "share the hash value"),
              ("collide:big_int_key", archive(pkl(b"}" + num(P61) + b"K\x00s")), "ok")]
    for kind, n in (("set", 5000), ("ordered_dict", 2000), ("size", 5000), ("encode", 50000), ("tensor", 0)):
        cases.append((f"memo_bomb:{kind}", memo_bomb(kind, n, 20000),
                       "same memoized value again and again|builds more objects than a file"))
    cases += [("flood:empty_sets", flood("empty_sets", 50000), "ok"), ("flood:marks", flood("marks", 50000), "ok")]
    for body, match in BUILD_ABUSE:
        cases.append((f"build:{match}", archive(b"\x80\x04" + body + b"."), match))
    # Containers nest at most 100 deep on load, as on save (the core's limit for both languages).
    cases += [("deep:list", archive(_nested_list(100000)), "nested deeper than 100"),
              ("deep:dict", archive(_nested_dict(50000)), "nested deeper than 100"),
              ("deep:tuple", archive(pkl(b")" + b"\x85" * 200000)), "nested deeper than 100"),
              ("deep:tuple_key", archive(pkl(b"}" + b")" + b"\x85" * 200000 + b"K\x01s")), "nested deeper than 100"),
              ("deep:json", struct.pack("<Q", 100001) + b"[" * 100001, "not valid JSON"),
              ("deep:tree", kindle_tree_file(json.loads("{\"list\": [" * 150 + "null" + "]}" * 150)),
               "deeper than 100")]
    for view, match in HOSTILE_VIEWS:
        cases.append((f"bad_view:{view}", view_archive(view), match))
    return cases


_CHILD = r"""
import json, pickle, sys, time
import kindle

def exercise(obj):
    # Use what a load returned: a tensor that loads but cannot be used would crash or hang here.
    todo, seen = [obj], 0
    while todo and seen < 2000:
        x = todo.pop()
        seen += 1
        if isinstance(x, kindle.Tensor):
            y = x.contiguous()
            if y.numel() <= 100000:
                y.tolist()
            try:
                y.to(kindle.float64).sum()
            except (TypeError, RuntimeError):
                pass
        elif isinstance(x, dict):
            todo.extend(list(x.values())[:50])
        elif isinstance(x, (list, tuple, set)):
            todo.extend(list(x)[:50])

for i, path in enumerate(json.load(open(sys.argv[1]))):
    print(json.dumps({"start": i}), flush=True)
    t = time.perf_counter()
    try:
        exercise(kindle.load(path))
        out = {"ok": True}
    except (ValueError, RuntimeError, pickle.UnpicklingError) as e:
        out = {"ok": False, "type": type(e).__name__, "msg": str(e)[:400]}
    except Exception as e:
        out = {"ok": False, "type": type(e).__name__, "msg": str(e)[:400], "unexpected": True}
    out.update(i=i, secs=time.perf_counter() - t)
    print(json.dumps(out), flush=True)
"""


def test_hostile_corpus_loads_or_fails_cleanly(tmp_path):
    cases = hostile_corpus()
    assert len(cases) >= 300 and len({label for label, _, _ in cases}) > 250
    paths = []
    for i, (label, raw, _) in enumerate(cases):
        path = tmp_path / f"{i:04d}.bin"
        path.write_bytes(raw)
        paths.append(str(path))
    (tmp_path / "paths.json").write_text(json.dumps(paths))
    t = time.perf_counter()
    child = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "paths.json")], cwd=HERE,
                           capture_output=True, text=True, timeout=180)
    elapsed = time.perf_counter() - t
    results, started = {}, None
    for line in child.stdout.splitlines():
        rec = json.loads(line)
        if "start" in rec:
            started = rec["start"]
        else:
            results[rec["i"]] = rec
    if child.returncode != 0:
        label = cases[started][0] if started is not None and started not in results else "?"
        pytest.fail(f"the loader died (status {child.returncode}) on case {label}:\n{child.stderr[-3000:]}")
    assert len(results) == len(cases)
    problems = []
    for i, (label, _, expected) in enumerate(cases):
        rec = results[i]
        if rec["secs"] > 5.0:
            problems.append(f"{label}: took {rec['secs']:.1f} s")
        if rec.get("unexpected"):
            problems.append(f"{label}: unexpected {rec['type']}: {rec['msg']}")
        elif not rec["ok"] and "kindle.load" not in rec["msg"]:
            problems.append(f"{label}: error does not name kindle.load: {rec['msg']}")
        elif expected == "ok" and not rec["ok"]:
            problems.append(f"{label}: should load, got {rec['type']}: {rec['msg']}")
        elif expected not in (None, "ok") and (rec["ok"] or not re.search(expected, rec["msg"])):
            problems.append(f"{label}: should fail matching {expected!r}, got {rec}")
    assert not problems, "\n".join(problems)
    assert elapsed < 60
