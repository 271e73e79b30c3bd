"""Generic op tests against PyTorch, parametrized over the op database (opdb.py).

For every op and dtype: each sample gives the same result as torch (shape, dtype, values within
tolerance; strides too for view ops) or, where torch raises, kindle raises the same exception
type. In-place variants and error inputs are compared the same way. The kindle-only checks
(non-contiguous == contiguous, method == function, in-place == out-of-place) are in
test_ops_consistency.py, which runs without torch.
"""
import pytest

torch = pytest.importorskip("torch")
# torch warns on degenerate inputs we sample on purpose (var with one element, ...)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

import kindle  # noqa: E402
from common import compare, exc_compatible, exc_kind, report  # noqa: E402
from opdb import ALL, COMPLEX, OPS, op_dtype_params  # noqa: E402


def _id(p):
    return p.qualname if hasattr(p, "qualname") else str(p)


def _outcome_diff(op, sample, variant, strides):
    """Compare kindle and torch on one sample; a message when they differ, else None.

    Where torch raises, kindle must raise the same kind of exception (exc_compatible), also
    where torch only lacks a kernel for the dtype (NotImplementedError): a result there would be
    a dtype nobody declared, and has been a silent wrong answer before (bool floor division)."""
    (kres, kin, kargs, kkw), kerr = _call(op, kindle, sample, variant)
    (tres, tin, targs, tkw), terr = _call(op, torch, sample, variant)
    if terr is not None or kerr is not None:
        if terr is None and variant.startswith("inplace") and sample.expanded and isinstance(kerr, RuntimeError):
            return None  # writing through an expanded view is an error by design (torch lets some pass)
        if terr is None:
            return f"kindle raised {type(kerr).__name__}: {str(kerr)[:200]}; torch returned a result"
        if kerr is None:
            return f"kindle returned a result; torch raised {type(terr).__name__}: {str(terr)[:160]}"
        if not exc_compatible(kerr, terr):
            return (f"kindle raised {type(kerr).__name__} ({str(kerr)[:120]}); "
                    f"torch raised {type(terr).__name__} ({str(terr)[:120]})")
        return None
    errs = compare(kres, tres, op, check_values=op.compare_values, check_strides=strides)
    if variant.startswith("inplace") or op.inplace_only:
        if variant.startswith("inplace") and kres is not kin:
            errs.append("in-place variant did not return its input")
        errs += compare(kin, tin, op, path="self")
    # tensor arguments the op updates in place (batch_norm's running stats, ...)
    tmut = op.mutated(targs, tkw)
    for label, k in op.mutated(kargs, kkw).items():
        errs += compare(k, tmut[label], op, path=label)
    return "; ".join(errs) or None


def _call(op, lib, sample, variant):
    try:
        return op.call(lib, sample, variant, full=True), None
    except Exception as e:  # noqa: BLE001
        return (None, None, None, None), e


def _check(op, dtype, variant, strides=False):
    failures = []
    for s in op.get_samples(dtype):
        msg = _outcome_diff(op, s, variant, strides)
        if msg:
            failures.append((s, msg))
    assert not failures, report(failures)


@pytest.mark.parametrize("op,dtype", op_dtype_params(), ids=_id)
def test_forward_matches_torch(op, dtype):
    _check(op, dtype, "function" if op.function else "method", strides=op.view)


@pytest.mark.parametrize("op,dtype", op_dtype_params([o for o in OPS if o.function and o.method]), ids=_id)
def test_method_matches_torch(op, dtype):
    _check(op, dtype, "method", strides=op.view)


@pytest.mark.parametrize("op,dtype", op_dtype_params([o for o in OPS if o.inplace and o.inplace_method]), ids=_id)
def test_inplace_matches_torch(op, dtype):
    _check(op, dtype, "inplace")


@pytest.mark.parametrize("op,dtype", op_dtype_params([o for o in OPS if o.inplace and o.inplace_function]),
                         ids=_id)
def test_inplace_function_matches_torch(op, dtype):
    _check(op, dtype, "inplace_function")


@pytest.mark.parametrize("op", [o for o in OPS if o.errors], ids=_id)
def test_error_parity(op):
    """Inputs torch rejects (shape mismatch, dim out of range, wrong index dtype, ...): kindle
    raises the same exception type."""
    failures = []
    dtype = "float32" if "float32" in op.dtypes else op.dtypes[0]
    for s in op.get_errors(dtype):
        variant = "function" if op.function else "method"
        *_, terr = _call(op, torch, s, variant)
        *_, kerr = _call(op, kindle, s, variant)
        if terr is None:
            failures.append((s, "test bug: torch accepts this error sample"))
        elif kerr is None:
            failures.append((s, f"kindle returned a result; torch raised {type(terr).__name__}: {str(terr)[:160]}"))
        elif not exc_compatible(kerr, terr):
            failures.append((s, f"kindle raised {type(kerr).__name__} ({str(kerr)[:120]}); "
                                f"torch raised {type(terr).__name__} ({str(terr)[:120]})"))
    assert not failures, report(failures)


def _names_op(op, msg):
    """The message names the op: its torch.nn.functional name or an ops.yaml op it covers."""
    m = msg.lower()
    return any(n.lower() in m for n in (op.name,) + op.covers)


@pytest.mark.parametrize("op", [o for o in OPS if o.errors and o.functional], ids=_id)
def test_error_message_names_op(op):
    """torch.nn.functional ops: where kindle rejects an input (test_error_parity), its message names
    the op the user called (F.max_pool1d: 'max_pool1d' or 'max_pool2d_with_indices'), not only an
    op it is built from (im2col, mul, expand)."""
    failures = []
    dtype = "float32" if "float32" in op.dtypes else op.dtypes[0]
    for s in op.get_errors(dtype):
        *_, kerr = _call(op, kindle, s, "function")
        if kerr is not None and not _names_op(op, str(kerr)):
            failures.append((s, f"{type(kerr).__name__}: {str(kerr)[:160]}"))
    assert not failures, report(failures)


def _first_sample(op, dtype):
    return op.get_samples(dtype)[0]


@pytest.mark.parametrize("op", OPS, ids=_id)
def test_dtype_support_matches_torch(op):
    """The database lists exactly the dtypes torch supports (judged on the op's first sample);
    for the others kindle raises the exception type torch raises."""
    failures = []
    variant = "function" if op.function else "method"
    for dtype in ALL:
        s = _first_sample(op, dtype)
        *_, terr = _call(op, torch, s, variant)
        supported = terr is None
        if supported and dtype in op.dtypes_gap:
            # a dtype torch supports that kindle does not (yet), recorded in opdb: kindle must
            # refuse it cleanly (RuntimeError / NotImplementedError / TypeError), not misbehave
            *_, kerr = _call(op, kindle, s, variant)
            if kerr is None:
                failures.append((s, f"test bug: {dtype} is listed in dtypes_gap, but kindle supports it"))
            elif not isinstance(kerr, (RuntimeError, TypeError)):
                failures.append((s, f"[{dtype}] kindle raised {type(kerr).__name__} ({str(kerr)[:120]})"))
            continue
        if supported != (dtype in op.dtypes):
            failures.append((s, f"test bug: opdb says {dtype} is {'' if dtype in op.dtypes else 'not '}"
                                f"supported, torch {'accepts' if supported else 'rejects'} it ({terr})"))
            continue
        if not supported:
            msg = _outcome_diff(op, s, variant, False)
            if msg:
                failures.append((s, f"[{dtype}] {msg}"))
    assert not failures, report(failures)


@pytest.mark.parametrize("op", OPS, ids=_id)
def test_complex_matches_torch_or_refuses(op):
    """Every op on complex64 and complex128 samples: the same result as torch, or where torch
    raises the same exception kind; where torch computes and Kindle has no complex kernel yet,
    a clean refusal (RuntimeError, NotImplementedError or TypeError naming the op), never a
    silently different answer. Ops that list a complex dtype in opdb must compute it."""
    failures = []
    variant = "function" if op.function else "method"
    for dtype in COMPLEX:
        for s in op.get_samples(dtype):
            (kres, *_), kerr = _call(op, kindle, s, variant)
            (tres, *_), terr = _call(op, torch, s, variant)
            if terr is not None:
                if kerr is None:
                    failures.append((s, f"[{dtype}] kindle returned a result; torch raised {type(terr).__name__}: "
                                        f"{str(terr)[:120]}"))
                elif not isinstance(kerr, (RuntimeError, TypeError, ValueError, IndexError)):
                    failures.append((s, f"[{dtype}] kindle raised {type(kerr).__name__} ({str(kerr)[:120]})"))
                continue
            if kerr is not None:
                if dtype in op.dtypes or not isinstance(kerr, (RuntimeError, TypeError)):
                    failures.append((s, f"[{dtype}] kindle raised {type(kerr).__name__} ({str(kerr)[:160]}); "
                                        "torch computes it"))
                continue
            msg = _outcome_diff(op, s, variant, False)
            if msg:
                failures.append((s, f"[{dtype}] {msg}"))
    assert not failures, report(failures)
