"""The meta device (issue 14): tensors with shapes, strides and dtypes but no data.

Every op of the op database runs on meta copies of its samples and must give what it gives on
the CPU (the result's shapes and dtypes; strides too for views) or raise the kind of exception
the CPU raises, without touching memory (a meta tensor's storage has no bytes: a kernel or host
read that slipped through would crash this test's process). An op may refuse a meta tensor
(NotImplementedError) only where its result depends on values (nonzero, unique, ...), which
torch's meta kernels decide: where torch's meta kernel gives a result, Kindle's must too, except
the ops in META_GAPS (a list that may only shrink).
"""
import gc

import numpy as np
import pytest

import kindle
from common import exc_compatible, exc_kind, run
from opdb import OPS, Dt, _map_args, materialize, op_dtype_params

try:
    import torch
except ImportError:  # the comparison with torch's meta kernels needs it; the rest does not
    torch = None

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# Ops whose result torch's meta kernels compute and Kindle's do not yet: they read values on the
# host to check or plan (LAPACK status, index bounds done as reductions, sizes from tensors).
# Kindle raises NotImplementedError there, never a wrong result or a crash.
META_GAPS = {
    "masked_scatter",  # backward: the source's gradient is grad[mask], which Kindle gathers by values
}


_FLOATING = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")


def _materialize(x, lib, meta, leaves=None):
    """The sample's arguments as lib tensors; on meta, each tensor is built on meta and then
    viewed as the sample says (so views keep their strides, as on the CPU). With `leaves` (a
    list), floating tensors become leaves that require grad, appended there."""
    if not meta and leaves is None:
        return materialize(x, lib)
    made = {}

    def f(leaf):
        if isinstance(leaf, Dt):
            return getattr(lib, leaf.name)
        t = made.get(id(leaf))
        if t is None:
            t = leaf.base(lib).to("meta") if meta else leaf.base(lib)
            if leaves is not None and leaf.dtype in _FLOATING and not leaf.nograd:
                t.requires_grad_()
                leaves.append(t)
            made[id(leaf)] = t
        return leaf.viewed(t)
    return _map_args(x, f)


def _tensors(x, out=None, path="out"):
    out = [] if out is None else out
    if hasattr(x, "is_meta") or type(x).__name__ == "Tensor":
        out.append((path, x))
    elif isinstance(x, (tuple, list)):
        for i, y in enumerate(x):
            _tensors(y, out, f"{path}[{i}]")
    return out


def _call(op, lib, sample, variant, meta, leaves=None):
    inp, args, kwargs = (_materialize(x, lib, meta, leaves) for x in (sample.input, sample.args, sample.kwargs))
    if not meta or _tensors((inp, args, list(kwargs.values()))):
        # (with meta inputs and no device context: what an op makes for itself follows its inputs)
        return run(op.invoke, lib, variant, inp, args, kwargs)
    with lib.device("meta"):  # a factory: made on meta by the device context
        return run(op.invoke, lib, variant, inp, args, kwargs)


def _backward(op, sample, variant, meta):
    """(the leaves' grads, None) after backward from ones, or (None, the exception); ([], None)
    where the forward raises (test_op_on_meta_matches_cpu judges that)."""
    leaves = []
    res, err = _call(op, kindle, sample, variant, meta, leaves)
    if err is not None:
        return [], None
    outs = [t for _, t in _tensors(res) if t.requires_grad]
    if not outs:
        return [], None
    _, err = run(kindle.autograd.backward, outs, [kindle.ones_like(o) for o in outs])
    return (None, err) if err is not None else ([leaf.grad for leaf in leaves], None)


def _structure_diff(meta_res, cpu_res, view):
    m, c = _tensors(meta_res), _tensors(cpu_res)
    if len(m) != len(c):
        return f"{len(m)} tensors on meta, {len(c)} on cpu"
    for (path, a), (_, b) in zip(m, c):
        if not a.is_meta:
            return f"{path} is on {a.device}, not meta"
        if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
            return f"{path}: {tuple(a.shape)} {a.dtype} on meta, {tuple(b.shape)} {b.dtype} on cpu"
        if view and a.stride() != b.stride():
            return f"{path}: strides {a.stride()} on meta, {b.stride()} on cpu"
    return None


def _torch_meta_error(op, sample, variant):
    """What torch's meta kernels raise here: None for a result, False without torch."""
    if torch is None:
        return False
    try:
        _, err = _call(op, torch, sample, variant, meta=True)
    except Exception as e:  # noqa: BLE001
        return e
    return err


def _outcome(op, sample, variant):
    cres, cerr = _call(op, kindle, sample, variant, meta=False)
    mres, merr = _call(op, kindle, sample, variant, meta=True)
    if merr is None and cerr is None:
        return _structure_diff(mres, cres, op.view)
    if merr is None:  # the CPU raised: a meta tensor cannot see values, so only a value check may pass
        terr = _torch_meta_error(op, sample, variant)  # (torch's meta kernels find the shape errors)
        return None if terr is None or terr is False or not exc_compatible(cerr, terr) else (
            f"meta returned a result; cpu raised {type(cerr).__name__}: {str(cerr)[:120]}")
    if cerr is not None and exc_compatible(merr, cerr):
        return None
    if exc_kind(merr) is NotImplementedError or isinstance(merr, RuntimeError) and "meta" in str(merr):
        if _torch_meta_error(op, sample, variant) is not None or op.qualname in META_GAPS:
            return None  # torch cannot either (its result depends on values), a recorded gap, or no torch
    return f"meta raised {type(merr).__name__}: {str(merr)[:160]}; cpu " + (
        "returned a result" if cerr is None else f"raised {type(cerr).__name__}: {str(cerr)[:80]}")


def _id(p):
    return p.qualname if hasattr(p, "qualname") else str(p)


# one floating, one integer and the bool dtype per op: the shape and dtype rules do not change
# with the width of a type, and this keeps the run short
_DTYPES = ("float32", "float64", "int64", "bool", "complex64")


def _params():
    out, seen = [], set()
    for o, d in op_dtype_params(dtypes=_DTYPES):
        key = (o.qualname, d in ("float32", "float64"))
        if key in seen:
            continue
        seen.add(key)
        out.append((o, d))
    return out


@pytest.mark.parametrize("op,dtype", _params(), ids=_id)
def test_op_on_meta_matches_cpu(op, dtype):
    variant = "function" if op.function else "method"
    failures = []
    # the error samples too: shape and dtype errors are raised on meta as on the CPU
    for s in op.get_samples(dtype) + (op.get_errors(dtype) if dtype in ("float32", "int64") else []):
        msg = _outcome(op, s, variant)
        if msg:
            failures.append(f"{s!r}: {msg}")
    assert not failures, "\n".join(failures[:8])


def _torch_meta_backward_raises(op, sample, variant):
    """Whether torch's backward on meta raises here too (a gradient that depends on values)."""
    if torch is None:
        return False
    leaves = []
    res, err = _call(op, torch, sample, variant, True, leaves)
    if err is not None:
        return True
    outs = [t for _, t in _tensors(res) if t.requires_grad]
    _, err = run(torch.autograd.backward, outs, [torch.ones_like(o) for o in outs])
    return err is not None


def _grad_params():
    return [o for o in OPS if o.kind != "creation" and "float32" in o.dtypes]


@pytest.mark.parametrize("op", _grad_params(), ids=_id)
def test_backward_on_meta_matches_cpu(op):
    """The derivative formulas run on meta too: each leaf's gradient has the CPU's shape and
    dtype (or is None where the CPU's is), on meta."""
    variant = "function" if op.function else "method"
    failures = []
    for s in op.get_samples("float32"):
        cgrads, cerr = _backward(op, s, variant, meta=False)
        if cerr is not None or not cgrads:
            continue
        mgrads, merr = _backward(op, s, variant, meta=True)
        if merr is not None:
            if op.qualname not in META_GAPS and not _torch_meta_backward_raises(op, s, variant):
                failures.append(f"{s!r}: backward on meta raised {type(merr).__name__}: {str(merr)[:160]}")
            continue
        for j, (m, c) in enumerate(zip(mgrads, cgrads)):
            if (m is None) != (c is None):
                failures.append(f"{s!r}: grad[{j}] is {m is None and 'None' or 'a tensor'} on meta")
            elif m is not None and (not m.is_meta or m.shape != c.shape or m.dtype != c.dtype):
                failures.append(f"{s!r}: grad[{j}] {tuple(m.shape)} {m.dtype} {m.device}, cpu {tuple(c.shape)} {c.dtype}")
    assert not failures, "\n".join(failures[:8])


def test_meta_gaps_are_still_gaps():
    """A gap that closed is taken off META_GAPS (the list only shrinks)."""
    closed = []
    for o in OPS:
        if o.qualname not in META_GAPS:
            continue
        raised = False
        variant = "function" if o.function else "method"
        for d in o.dtypes[:2]:
            for s in o.get_samples(d):
                _, cerr = _call(o, kindle, s, variant, meta=False)
                _, merr = _call(o, kindle, s, variant, meta=True)
                raised |= cerr is None and merr is not None
                if d == "float32":
                    cgrads, cerr = _backward(o, s, variant, meta=False)
                    _, merr = _backward(o, s, variant, meta=True)
                    raised |= cerr is None and bool(cgrads) and merr is not None
        if not raised:
            closed.append(o.qualname)
    assert not closed, f"these ops work on meta now; take them off META_GAPS: {closed}"


# ---- the device itself


def test_meta_tensors_have_metadata_and_no_data():
    x = kindle.empty(2, 3, device="meta")
    assert x.is_meta and x.device == kindle.device("meta") and str(x.device) == "meta"
    assert x.shape == (2, 3) and x.stride() == (3, 1) and x.dtype == kindle.float32
    assert repr(x) == "tensor(..., device='meta', size=(2, 3))"
    assert repr(kindle.zeros(2, dtype=kindle.int64, device="meta")) == \
        "tensor(..., device='meta', size=(2,), dtype=kindle.int64)"
    y = (x * 2 + 1).t().sum(0, keepdim=True)
    assert y.is_meta and y.shape == (1, 2)
    with pytest.raises(RuntimeError, match="meta"):
        x.sum().item()
    with pytest.raises(NotImplementedError, match="meta"):
        x.cpu()
    with pytest.raises(NotImplementedError, match="meta"):
        x.tolist()
    with pytest.raises(TypeError):
        x.numpy()
    with pytest.raises(NotImplementedError):
        kindle.nonzero(x)
    with pytest.raises(RuntimeError, match="same device"):
        x + kindle.ones(2, 3)
    assert (x + kindle.tensor(1.0)).is_meta  # a CPU scalar joins, as in torch
    # CPU indices serve a meta tensor; the copy into meta writes nothing
    assert x[kindle.tensor([1, 0, 1])].shape == (3, 3)
    z = kindle.empty(3, device="meta")
    z.copy_(kindle.arange(3.0))
    assert kindle.ones(4).to("meta").is_meta
    # .to(device) keeps a strided input's layout, as torch's preserve_format
    assert kindle.ones(4, 3).t().to("meta").stride() == (1, 3)
    assert kindle.ones(4, 3).t()[::2].to("meta").stride() == (1, 2)
    assert kindle.ones(2, 3).expand(4, 2, 3).to("meta").stride() == (6, 3, 1)


def test_meta_autograd_runs_without_data():
    w = kindle.empty(4, 3, device="meta", requires_grad=True)
    x = kindle.empty(8, 3, device="meta")
    loss = kindle.nn.functional.relu(x @ w.t()).pow(2).mean()
    loss.backward()
    assert w.grad.is_meta and w.grad.shape == (4, 3)


def test_ten_billion_parameter_model_builds_without_memory():
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with kindle.device("meta"):
        model = kindle.nn.Sequential(*[kindle.nn.Linear(8192, 8192) for _ in range(150)])
    n = sum(p.numel() for p in model.parameters())
    assert n > 10_000_000_000
    assert all(p.is_meta for p in model.parameters())
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: no 40 GB
    out = model(kindle.empty(2, 8192, device="meta"))
    assert out.is_meta and out.shape == (2, 8192)
    assert kindle.get_default_device() == kindle.device("cpu")
    assert not kindle.zeros(1).is_meta
    del model
    gc.collect()


def test_device_context_and_default_device():
    with kindle.device("meta") as d:
        assert d == kindle.device("meta")
        assert kindle.get_default_device() == kindle.device("meta")
        for t in (kindle.empty(2), kindle.zeros(2), kindle.ones(2, 2), kindle.randn(3), kindle.rand(3),
                  kindle.arange(5), kindle.full((2,), 1.5), kindle.eye(3), kindle.linspace(0, 1, 4),
                  kindle.tensor([1.0, 2.0]), kindle.as_tensor([1, 2]), kindle.randint(0, 5, (3,))):
            assert t.is_meta, t
        assert not kindle.empty(2, device="cpu").is_meta
        assert not kindle.zeros_like(kindle.ones(2, device="cpu")).is_meta  # *_like follows its input
        with kindle.device("cpu"):
            assert not kindle.empty(2).is_meta
        assert kindle.empty(2).is_meta
    assert not kindle.empty(2).is_meta
    kindle.set_default_device("meta")
    try:
        assert kindle.ones(3).is_meta
    finally:
        kindle.set_default_device(None)
    assert not kindle.ones(3).is_meta


def test_module_to_meta_and_to_empty():
    torch_nn = kindle.nn
    m = torch_nn.Sequential(torch_nn.Conv2d(3, 8, 3), torch_nn.BatchNorm2d(8), torch_nn.ReLU(),
                            torch_nn.Flatten(), torch_nn.Linear(8 * 6 * 6, 10))
    m.to("meta")
    assert all(p.is_meta for p in m.parameters()) and all(b.is_meta for b in m.buffers())
    out = m(kindle.empty(2, 3, 8, 8, device="meta"))
    assert out.is_meta and out.shape == (2, 10)
    m.to_empty(device="cpu")
    assert all(not p.is_meta for p in m.parameters())
    assert m[0].weight.shape == (8, 3, 3, 3) and m[1].running_mean.shape == (8,)
    # the usual pattern: build on meta, materialise, load real weights
    with kindle.device("meta"):
        lazy = torch_nn.Linear(3, 2)
    real = torch_nn.Linear(3, 2)
    lazy.to_empty(device="cpu").load_state_dict(real.state_dict())
    x = kindle.randn(4, 3)
    assert kindle.equal(lazy(x), real(x))


def test_meta_state_dict_loads_with_assign():
    with kindle.device("meta"):
        m = kindle.nn.Linear(3, 2)
    real = kindle.nn.Linear(3, 2)
    m.load_state_dict(real.state_dict(), assign=True)
    assert not m.weight.is_meta and kindle.equal(m.weight, real.weight)


@pytest.mark.skipif(torch is None, reason="torch is the reference for the printed form")
def test_meta_repr_matches_torch():
    for make in (lambda lib: lib.empty(2, 3, device="meta"), lambda lib: lib.empty(0, device="meta"),
                 lambda lib: lib.empty((), device="meta", dtype=lib.float64),
                 lambda lib: lib.empty(3, device="meta", dtype=lib.bool)):
        assert repr(make(kindle)).replace("kindle.", "torch.") == repr(make(torch))


def test_meta_does_not_leak_into_numpy_interop():
    x = kindle.empty(2, device="meta")
    with pytest.raises((TypeError, NotImplementedError, RuntimeError)):
        np.asarray(x)


_MODULES = [
    (lambda nn: nn.Transformer(d_model=32, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=64),
     lambda k: (k.empty(5, 2, 32), k.empty(3, 2, 32))),
    (lambda nn: nn.LSTM(8, 16, 2, batch_first=True), lambda k: (k.empty(2, 5, 8),)),
    (lambda nn: nn.GRU(8, 16), lambda k: (k.empty(5, 2, 8),)),
    (lambda nn: nn.MultiheadAttention(16, 4), lambda k: (k.empty(5, 2, 16),) * 3),
    (lambda nn: nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1)),
     lambda k: (k.empty(2, 3, 16, 16),)),
    (lambda nn: nn.Embedding(100, 16), lambda k: (k.empty(4, 7, dtype=k.int64),)),
    (lambda nn: nn.EmbeddingBag(10, 4, mode="max"), lambda k: (k.empty(2, 3, dtype=k.int64),)),
    (lambda nn: nn.GroupNorm(2, 8), lambda k: (k.empty(3, 8, 4),)),
    (lambda nn: nn.ConvTranspose2d(8, 4, 4, 2, 1), lambda k: (k.empty(1, 8, 7, 7),)),
    (lambda nn: nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2),
     lambda k: (k.empty(2, 5, 32),)),
    (lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"), lambda k: (k.empty(1, 2, 4, 4),)),
    (lambda nn: nn.CrossEntropyLoss(), lambda k: (k.empty(4, 5), k.empty(4, dtype=k.int64))),
    (lambda nn: nn.InstanceNorm2d(3, affine=True), lambda k: (k.empty(2, 3, 5, 5),)),
    (lambda nn: nn.Dropout(0.5), lambda k: (k.empty(4, 4),)),
]


@pytest.mark.parametrize("case", range(len(_MODULES)))
def test_modules_build_and_run_on_meta(case):
    """Models built under the meta device run forward and backward there, with the CPU's shapes."""
    make, inputs = _MODULES[case]
    kindle.manual_seed(0)
    cpu_model = make(kindle.nn)
    cpu_out = cpu_model(*[t.normal_() if t.is_floating_point() else t.random_(0, 2) for t in inputs(kindle)])
    with kindle.device("meta"):
        model = make(kindle.nn)
        out = model(*inputs(kindle))
    first, cpu_first = (out[0], cpu_out[0]) if isinstance(out, tuple) else (out, cpu_out)
    assert first.is_meta and first.shape == cpu_first.shape and first.dtype == cpu_first.dtype
    if first.requires_grad:
        first.sum().backward()
        for p, q in zip(model.parameters(), cpu_model.parameters()):
            assert p.is_meta and p.shape == q.shape
            assert p.grad is None or (p.grad.is_meta and p.grad.shape == p.shape)


def _spd(k, n, batch=()):
    a = k.randn(*batch, n, n, dtype=k.float64)
    return a @ a.mT + n * k.eye(n, dtype=k.float64)


_LINALG = {
    "inv": lambda k, A, B: k.linalg.inv(A), "det": lambda k, A, B: k.linalg.det(A),
    "slogdet": lambda k, A, B: k.linalg.slogdet(A), "cholesky": lambda k, A, B: k.linalg.cholesky(A),
    "qr": lambda k, A, B: k.linalg.qr(A), "svd": lambda k, A, B: k.linalg.svd(A, full_matrices=False),
    "svdvals": lambda k, A, B: k.linalg.svdvals(A), "eigh": lambda k, A, B: k.linalg.eigh(A),
    "eig": lambda k, A, B: k.linalg.eig(A), "solve": lambda k, A, B: k.linalg.solve(A, B),
    "lstsq": lambda k, A, B: k.linalg.lstsq(A, B).solution, "lu": lambda k, A, B: k.linalg.lu(A),
    "lu_solve": lambda k, A, B: k.linalg.lu_solve(*k.linalg.lu_factor(A), B),
    "pinv": lambda k, A, B: k.linalg.pinv(A), "matrix_rank": lambda k, A, B: k.linalg.matrix_rank(A),
    "matrix_norm_nuc": lambda k, A, B: k.linalg.matrix_norm(A, "nuc"),
    "solve_triangular": lambda k, A, B: k.linalg.solve_triangular(A, B, upper=True),
    "inv_ex": lambda k, A, B: k.linalg.inv_ex(A), "matrix_exp": lambda k, A, B: k.linalg.matrix_exp(A),
    "ldl_solve": lambda k, A, B: k.linalg.ldl_solve(*k.linalg.ldl_factor(A), B),
    "cholesky_solve": lambda k, A, B: k.cholesky_solve(B, k.linalg.cholesky(A)),
    "cholesky_inverse": lambda k, A, B: k.cholesky_inverse(k.linalg.cholesky(A)),
    "cond": lambda k, A, B: k.linalg.cond(A), "logdet": lambda k, A, B: k.logdet(A),
}


@pytest.mark.parametrize("name", sorted(_LINALG))
@pytest.mark.parametrize("batch", [(), (2,)])
def test_linalg_on_meta_matches_cpu(name, batch):
    """The LAPACK-based functions size their results on meta without running LAPACK."""
    kindle.manual_seed(0)
    A, B = _spd(kindle, 4, batch), kindle.randn(*batch, 4, 2, dtype=kindle.float64)
    cres = _LINALG[name](kindle, A, B)
    mres = _LINALG[name](kindle, A.to("meta"), B.to("meta"))
    msg = _structure_diff(tuple(mres) if isinstance(mres, tuple) else mres,
                          tuple(cres) if isinstance(cres, tuple) else cres, False)
    assert msg is None, msg


def test_linalg_refuses_operands_on_two_devices():
    with pytest.raises(RuntimeError, match="same device"):
        kindle.linalg.solve(kindle.empty(3, 3, device="meta"), kindle.ones(3, 2))


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam",
                                  "RAdam", "ASGD", "Rprop"])
def test_optimizers_step_on_meta(name):
    """A training step of a model on meta: the optimizer's state is made on meta too."""
    with kindle.device("meta"):
        model = kindle.nn.Linear(4, 3)
    kw = {"lr": 0.1, **({"momentum": 0.9} if name in ("SGD", "RMSprop") else {}),
          **({"centered": True} if name == "RMSprop" else {})}
    opt = getattr(kindle.optim, name)(model.parameters(), **kw)
    for _ in range(2):
        opt.zero_grad()
        model(kindle.empty(2, 4, device="meta")).sum().backward()
        opt.step()
    assert model.weight.is_meta
    for v in opt.state[model.weight].values():
        if isinstance(v, kindle.Tensor) and v.dim():
            assert v.is_meta and v.shape == model.weight.shape


def test_new_factories_follow_the_tensor_device():
    x = kindle.empty(3, device="meta")
    for t in (x.new_zeros(2), x.new_ones(2), x.new_empty(2), x.new_full((2,), 1.0), x.new_tensor([1, 2]),
              x.new_empty_strided((2,), (1,)), kindle.ones(2).new_ones(3, device="meta")):
        assert t.is_meta, t
    assert not x.new_zeros(2, device="cpu").is_meta


def test_saving_a_meta_tensor_refuses_cleanly(tmp_path):
    for dt in (kindle.float32, kindle.bfloat16):
        with pytest.raises((NotImplementedError, TypeError, RuntimeError)):
            kindle.save(kindle.ones(4, device="meta", dtype=dt), tmp_path / "m.pt")


def test_tri_indices_on_meta_are_counted_not_built():
    for row, col, off in ((4, 5, 1), (4, 5, -1), (3, 3, 0), (0, 3, 0), (5, 2, -10), (5, 2, 10)):
        for f in (kindle.tril_indices, kindle.triu_indices):
            assert f(row, col, off, device="meta").shape == f(row, col, off).shape
    assert kindle.tril_indices(100000, 100000, device="meta").shape == (2, 5000050000)


def test_default_device_is_per_thread():
    import threading
    seen = []
    with kindle.device("meta"):
        t = threading.Thread(target=lambda: seen.append(kindle.zeros(1).is_meta))
        t.start()
        t.join()
        assert kindle.zeros(1).is_meta
    assert seen == [False]


@pytest.mark.parametrize("name", ["slogdet", "logdet", "svd", "inv", "cholesky", "eigh", "solve", "det"])
def test_linalg_backward_on_meta(name):
    A = kindle.empty(2, 4, 4, dtype=kindle.float64, device="meta", requires_grad=True)
    B = kindle.empty(2, 4, 2, dtype=kindle.float64, device="meta")
    out = _LINALG[name](kindle, A, B)
    outs = [t for t in (out if isinstance(out, tuple) else (out,)) if t.requires_grad]
    kindle.autograd.backward(outs, [kindle.ones_like(t) for t in outs])
    assert A.grad.is_meta and A.grad.shape == A.shape
