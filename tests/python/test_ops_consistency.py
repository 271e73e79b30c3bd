"""Generic op tests that need no reference library, parametrized over the op database:
non-contiguous input gives the result of its contiguous copy, the Tensor method equals the
function, the in-place variant equals the out-of-place op, NumPy references where the database
has one, and the database covers the op table."""
import os

import numpy as np
import pytest

import kindle
from common import compare, exc_kind, report, to_numpy, values_mismatch
from opdb import F32_64, INPLACE_NAMES, NOT_IN_DB, OP_DB, OPS, TArg, leaves, op_dtype_params


def _id(p):
    return p.qualname if hasattr(p, "qualname") else str(p)


def _call(op, sample, variant, contiguous=False, full=False):
    try:
        return op.call(kindle, sample, variant, contiguous, full=full), None
    except Exception as e:  # noqa: BLE001
        return ((None,) * (4 if full else 2)), e


def _main_variant(op):
    return "function" if op.function else "method"


@pytest.mark.parametrize("op,dtype", op_dtype_params([o for o in OPS if not o.layout_sensitive and o.kind != "creation"]),
                         ids=_id)
def test_noncontiguous_matches_contiguous(op, dtype):
    """Transposed, step-sliced, expanded and permuted inputs give what their contiguous copies
    give (the same values, shape and dtype; the same exception type)."""
    failures, variant = [], _main_variant(op)
    samples = [s for s in op.get_samples(dtype) if s.noncontiguous]
    assert samples or dtype not in op.dtypes, "no non-contiguous samples"
    for s in samples:
        if op.inplace_only and s.expanded:
            continue  # writing through an expanded view is an error by design
        (r, inp), e = _call(op, s, variant)
        (rc, inpc), ec = _call(op, s, variant, contiguous=True)
        if ec is not None or e is not None:
            if ec is None:
                failures.append((s, f"non-contiguous input raised {type(e).__name__}: {e}"))
            elif e is None:
                failures.append((s, f"contiguous copy raised {type(ec).__name__}: {ec}; non-contiguous did not"))
            elif exc_kind(e) is not exc_kind(ec):
                failures.append((s, f"{type(e).__name__} vs {type(ec).__name__} for the contiguous copy"))
            continue
        errs = compare(r, rc, op, check_values=op.compare_values)
        if op.inplace_only:
            errs += compare(inp, inpc, op, path="self")
        if op.mutates:
            (_, _, a, k), _ = _call(op, s, variant, full=True)
            (_, _, ac, kc), _ = _call(op, s, variant, contiguous=True, full=True)
            mc = op.mutated(ac, kc)
            for label, t in op.mutated(a, k).items():
                errs += compare(t, mc[label], op, path=label)
        if errs:
            failures.append((s, "; ".join(errs)))
    assert not failures, report(failures)


@pytest.mark.parametrize("op,dtype", op_dtype_params([o for o in OPS if o.function and o.method]), ids=_id)
def test_method_matches_function(op, dtype):
    failures = []
    for s in op.get_samples(dtype):
        (r, _), e = _call(op, s, "function")
        (rm, _), em = _call(op, s, "method")
        if e is not None or em is not None:
            if e is None or em is None or exc_kind(e) is not exc_kind(em):
                failures.append((s, f"function raised {e!r}, method raised {em!r}"))
            continue
        errs = compare(rm, r, op, check_values=op.compare_values, exact=True)
        if errs:
            failures.append((s, "; ".join(errs)))
    assert not failures, report(failures)


def _inplace_params():
    out = []
    for o in OPS:
        if o.inplace:
            for v in ("inplace", "inplace_function"):
                if (o.inplace_method if v == "inplace" else o.inplace_function):
                    out += [(o, d, v) for d in o.dtypes]
    return out


@pytest.mark.parametrize("op,dtype,variant", _inplace_params(), ids=_id)
def test_inplace_matches_out_of_place(op, dtype, variant):
    """x.op_(...) returns x itself, holding op(x, ...) cast to x's dtype. It raises where the
    result cannot be written into x (another shape, a dtype x cannot hold, overlapping memory)
    and must not raise otherwise."""
    failures = []
    for s in op.get_samples(dtype):
        (r, _), e = _call(op, s, _main_variant(op))
        (ri, x), ei = _call(op, s, variant)
        writable = (e is None and isinstance(r, kindle.Tensor) and not s.expanded
                    and tuple(r.shape) == tuple(s.input.shape) and r.dtype == s.input.make(kindle).dtype)
        if ei is not None:
            if writable:
                failures.append((s, f"in-place raised {type(ei).__name__}: {ei}; out-of-place result fits"))
            continue
        if e is not None:
            failures.append((s, f"in-place succeeded; out-of-place raised {type(e).__name__}: {e}"))
            continue
        if ri is not x:
            failures.append((s, "in-place variant did not return its input"))
        if s.expanded and op.kind in ("unary", "binary", "ternary"):
            if compare(s.input.make(kindle), r, exact=True):  # it changes values (torch lets no-ops pass)
                failures.append((s, "in-place write into an expanded (overlapping) tensor did not raise"))
            continue
        if tuple(r.shape) != tuple(x.shape) and op.kind in ("unary", "binary", "ternary", "index"):
            failures.append((s, f"in-place wrote a result of shape {tuple(r.shape)} into {tuple(x.shape)}"))
            continue
        errs = compare(x, r.to(x.dtype) if r.dtype != x.dtype else r, op)
        if errs:
            failures.append((s, "; ".join(errs)))
    assert not failures, report(failures)


def _ref_params():
    return [(o, d) for o in OPS if o.ref is not None for d in F32_64 if d in o.dtypes]


@pytest.mark.parametrize("op,dtype", _ref_params(), ids=_id)
def test_matches_numpy_reference(op, dtype):
    """Elementwise ops against their NumPy counterpart (samples whose tensors all have the
    op's dtype and that pass no keyword arguments)."""
    failures, checked = [], 0
    for s in op.get_samples(dtype):
        ts = leaves((s.input, s.args))
        if s.kwargs or not ts or any(not isinstance(t, TArg) or t.dtype != dtype for t in ts):
            continue
        if op.name in ("sub", "subtract") and any(isinstance(a, bool) for a in s.args):
            continue  # NumPy subtracts a bool; PyTorch (the spec) raises, which test_ops checks
        args = [a.numpy() if isinstance(a, TArg) else a for a in (s.input,) + tuple(s.args)]
        with np.errstate(all="ignore"):
            expected = np.asarray(op.ref(*args))
        (r, _), e = _call(op, s, _main_variant(op))
        checked += 1
        if e is not None:
            failures.append((s, f"raised {type(e).__name__}: {e}"))
            continue
        if tuple(r.shape) != expected.shape:
            failures.append((s, f"shape {tuple(r.shape)} != {expected.shape}"))
            continue
        rtol, atol = op.tolerance(str(r.dtype).rsplit(".", 1)[-1])
        m = values_mismatch(to_numpy(r), expected, rtol, atol)
        if m:
            failures.append((s, m))
    assert checked, "no sample checked"
    assert not failures, report(failures)


def _op_table():
    import yaml  # a build requirement of kindle, so always present where the tests run

    path = os.path.join(os.path.dirname(__file__), "..", "..", "csrc", "ops", "ops.yaml")
    with open(path) as f:
        return yaml.safe_load(f)


def test_opdb_covers_op_table():
    """Every function/method op of csrc/ops/ops.yaml has a database entry (or is its in-place
    variant, or is listed in NOT_IN_DB with a reason), and the variants agree with the table.
    A `variants: nn` op must be covered by a torch.nn.functional entry (functional=True) that
    names it in `op_names` (or has its name)."""
    problems = []
    nn_covered = {n for o in OPS if o.functional for n in o.covers}
    nn_names = set()
    # a name's variants are those of all its overloads (float_power.Scalar is a function only,
    # float_power a function and a method: Tensor.float_power exists)
    by_name = {}
    for entry in _op_table():
        name = entry["func"].split("(")[0].split(".")[0]
        if entry.get("python") is False:
            continue
        by_name.setdefault(name, set()).update(v.strip() for v in entry.get("variants", "function").split(","))
    for name, variants in by_name.items():
        if "nn" in variants:
            nn_names.add(name)
            if name not in nn_covered and name not in NOT_IN_DB:
                problems.append(f"{name}: a `variants: nn` op without a torch.nn.functional entry in opdb "
                                f"(an OpInfo with functional=True and op_names including {name!r})")
            continue
        if name in OP_DB:
            o = OP_DB[name]
            if ("function" in variants) != o.function and not o.inplace_only:
                problems.append(f"{name}: function variant {'function' in variants} in the table, {o.function} in opdb")
            if ("method" in variants) != o.method:
                problems.append(f"{name}: method variant {'method' in variants} in the table, {o.method} in opdb")
        elif name in INPLACE_NAMES:
            o = next(o for o in OPS if o.inplace == name)
            if ("function" in variants) != o.inplace_function or ("method" in variants) != o.inplace_method:
                problems.append(f"{name}: in-place variants {sorted(variants)} in the table, "
                                f"function={o.inplace_function} method={o.inplace_method} in opdb")
        elif name not in NOT_IN_DB and not any(v.name == name and not v.functional for v in OPS):
            problems.append(f"{name}: no opdb entry")
    for o in OPS:
        if o.functional and o.op_names is not None:
            for n in o.op_names:
                if n not in nn_names:
                    problems.append(f"{o.qualname}: op_names names {n!r}, not a `variants: nn` op of the table")
    assert not problems, "\n".join(problems)


def _public_functional():
    import inspect

    import kindle.nn.functional as F
    return sorted(n for n, f in vars(F).items() if not n.startswith("_") and inspect.isfunction(f)
                  and f.__module__ == F.__name__)


def test_opdb_covers_nn_functional():
    """Every public function of kindle.nn.functional has an opdb entry (functional=True), or is
    listed in NOT_IN_DB with the test file that covers it."""
    have = {o.name for o in OPS if o.functional}
    missing = [n for n in _public_functional() if n not in have and n not in NOT_IN_DB]
    assert not missing, f"kindle.nn.functional functions without an opdb entry: {missing}"


@pytest.mark.parametrize("op", OPS, ids=_id)
def test_declared_variants_exist(op):
    missing = []
    if op.functional:
        import inspect

        import kindle.nn.functional as F
        fn = getattr(F, op.name, None)
        if fn is None:
            missing.append(f"kindle.nn.functional.{op.name}")
        elif op.inplace and "inplace" not in inspect.signature(fn).parameters:
            missing.append(f"kindle.nn.functional.{op.name}(..., inplace=)")
        assert not missing, missing
        return
    if op.function and not hasattr(kindle, op.name):
        missing.append(f"kindle.{op.name}")
    if op.method and not hasattr(kindle.Tensor, op.name):
        missing.append(f"Tensor.{op.name}")
    if op.inplace and op.inplace_method and not hasattr(kindle.Tensor, op.inplace):
        missing.append(f"Tensor.{op.inplace}")
    if op.inplace and op.inplace_function and not hasattr(kindle, op.inplace):
        missing.append(f"kindle.{op.inplace}")
    assert not missing, missing
