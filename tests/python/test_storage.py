"""Storages (Tensor.untyped_storage / storage / set_, torch.UntypedStorage, TypedStorage and the
legacy FloatStorage-style classes) against torch: shared memory, sizes, elements, printing, and
set_ that can never point outside a storage."""
import pickle
import warnings

import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message="TypedStorage is deprecated")


def both(fn):
    return fn(kindle), fn(torch)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "uint8", "bool", "int64"])
def test_untyped_storage_matches_torch(dtype):
    def make(L):
        return (L.arange(6) % 2).to(getattr(L, dtype))[1:]
    k, t = both(make)
    ku, tu = k.untyped_storage(), t.untyped_storage()
    assert ku.nbytes() == tu.nbytes() == len(ku) and ku.size() == tu.size()
    assert ku.tolist() == tu.tolist() and ku[1] == tu[1] and list(ku) == list(tu)
    assert ku.element_size() == 1 and str(ku.device) == "cpu"
    assert ku.data_ptr() == k.data_ptr() - k.storage_offset() * k.element_size()
    assert repr(ku).replace("kindle.", "torch.") == repr(tu)
    assert ku[2:5].tolist() == tu[2:5].tolist() and ku[2:5].data_ptr() == ku.data_ptr() + 2


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool", "complex64"])
def test_typed_storage_matches_torch(dtype):
    k, t = both(lambda L: L.tensor([1, 0, 3]).to(getattr(L, dtype)))
    ks, ts = k.storage(), t.storage()
    assert ks.size() == ts.size() and ks.nbytes() == ts.nbytes() and ks.element_size() == ts.element_size()
    assert ks.tolist() == ts.tolist() and ks[-1] == ts[-1]
    assert repr(ks).replace("kindle.", "torch.") == repr(ts)
    assert ks.type() == ts.type().replace("torch.", "kindle.")
    assert k.storage_type().__name__ == t.storage_type().__name__
    assert isinstance(ks, getattr(kindle, t.storage_type().__name__))
    assert pickle.loads(pickle.dumps(ks)).tolist() == ts.tolist()
    assert ks.double().tolist() == ts.double().tolist()
    with pytest.raises(IndexError):
        ks[3]
    with pytest.raises(RuntimeError):
        ks[0:1]


def test_storage_shares_memory_with_every_view():
    x = kindle.arange(6.0)
    v = x.view(2, 3)[:, 1]
    assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert x.clone().untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    s = x.storage()
    s[0] = 42.0
    assert x[0].item() == 42.0
    x.untyped_storage().fill_(0)
    assert x.tolist() == [0.0] * 6
    c = x.untyped_storage().clone()
    c.fill_(1)
    assert x.tolist() == [0.0] * 6


def test_constructors_and_legacy_classes():
    for L in (kindle, torch):
        assert L.UntypedStorage(5).nbytes() == 5
        assert L.UntypedStorage([1, 2, 255]).tolist() == [1, 2, 255]
        fs = L.FloatStorage([1, 2.5])
        assert type(fs) is L.TypedStorage and fs.dtype == L.float32 and fs.tolist() == [1.0, 2.5]
        assert isinstance(fs, L.FloatStorage) and not isinstance(fs, L.DoubleStorage)
        assert L.LongStorage(3).size() == 3 and L.TypedStorage(2, dtype=L.float64).nbytes() == 16
        wrapped = L.TypedStorage(wrap_storage=L.UntypedStorage(8), dtype=L.int32)
        assert wrapped.size() == 2
    assert kindle.Storage is kindle.FloatStorage and kindle.StorageBase is kindle.UntypedStorage


def test_set_matches_torch():
    def run(L):
        base = L.arange(8.0)
        out = []
        a = L.zeros(3)
        a.set_(base.untyped_storage(), 1, (2, 2), (3, 1))
        out.append(a.tolist())
        b = L.zeros(1)
        b.set_(base)
        out.append((b.tolist(), b.data_ptr() == base.data_ptr()))
        c = L.zeros(1)
        c.set_(base.untyped_storage())
        out.append(c.shape)
        d = L.zeros(2)
        d.set_()
        out.append((d.shape, d.untyped_storage().nbytes()))
        e = L.zeros(1)
        e.set_(base.storage(), 2, (3,))
        e[0] = -1
        out.append((e.tolist(), base[2].item(), e.is_set_to(e), b.is_set_to(base)))
        return out
    k, t = both(run)
    assert k[0] == t[0] and k[1] == t[1] and tuple(k[2]) == tuple(t[2]) and tuple(k[3][0]) == tuple(t[3][0])
    assert k[3][1] == t[3][1] and k[4] == t[4]


@pytest.mark.parametrize("call", [
    lambda L, s: L.zeros(1).set_(s, 7, (2,), (1,)),       # past the end
    lambda L, s: L.zeros(1).set_(s, 0, (2, 5), (5, 1)),    # 10 elements of 8
    lambda L, s: L.zeros(1, dtype=L.float64).set_(L.arange(8.0)),
    lambda L, s: L.zeros(1).set_(s, -1, (2,), (1,)),
])
def test_set_never_points_outside_the_storage(call):
    s = kindle.arange(8.0).untyped_storage()
    with pytest.raises(RuntimeError):
        call(kindle, s)
    with pytest.raises(RuntimeError, match="needs|could not|non-negative"):
        call(kindle, s[8:24])  # a slice: checked against the slice, not the whole


def test_set_refuses_tensors_that_require_grad_under_grad_mode():
    p = kindle.nn.Parameter(kindle.ones(2))
    with pytest.raises(RuntimeError, match="requires grad"):
        p.set_(kindle.zeros(2))
    with kindle.no_grad():
        p.set_(kindle.zeros(2))
    assert p.tolist() == [0.0, 0.0] and p.requires_grad


def test_resize_keeps_the_size():
    s = kindle.ones(4).untyped_storage()
    assert s.resize_(s.nbytes()) is s
    with pytest.raises(RuntimeError, match="keep their size"):
        s.resize_(0)


def test_shared_storage_and_from_buffer():
    x = kindle.ones(3)
    s = x.untyped_storage()
    assert not s.is_shared()
    s.share_memory_()
    assert s.is_shared() and x.is_shared()
    buf = np.array([1.5, -2.0], dtype=">f4").tobytes()
    for L in (kindle, torch):
        assert L.FloatStorage.from_buffer(buf, "big").tolist() == [1.5, -2.0]
