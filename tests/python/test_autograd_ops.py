"""Generic autograd tests, parametrized over the op database (opdb.py).

Every floating-point tensor argument of a sample becomes a leaf that requires grad: the leaf holds
the sample's contiguous base data (`TArg.data`) and the sample's view ops (transpose, step slice,
expand, permute) are applied to it inside the differentiated function, so the op really sees the
non-contiguous / expanded input and the gradient flows back through the view ops to the leaf.

1. test_gradcheck: kindle.autograd.gradcheck (finite differences) on the small float64 samples of
   every op that PyTorch differentiates. A sample where torch's own gradcheck fails too (a kink: a
   tie of max, abs at 0, an inf or nan input, ...) is left to test 2.
2. test_grad_matches_torch: backward with the same random grad_outputs in both libraries, every
   leaf's .grad compared with torch's (None must match None), float64 and float32 samples.
3. test_requires_grad_matches_torch: for every op and sample, each output requires grad in kindle
   exactly when it does in torch (no op silently drops the graph, none invents one), and nothing
   requires grad under no_grad.
4. test_inplace_grad_matches_torch: the in-place variants applied to a non-leaf (`leaf * 1`, then
   the sample's view ops), gradients w.r.t. the leaf and the other arguments compared with torch.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
# torch warns on degenerate inputs we sample on purpose (var with one element, ...); finite
# differences of inf/nan samples make NumPy warn inside gradcheck
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]

import kindle  # noqa: E402
from common import compare, report  # noqa: E402
from opdb import COMPLEX, FLOATS, OPS, Dt, TArg, _map_args, leaves  # noqa: E402

GRADCHECK_MAX_ELEMS = 60     # floating elements (logical) across a sample's tensor args, test 1
TORCH_MAX_ELEMS = 110000     # test 2, 3, 4: every sample, up to two or three LARGE (131, 263) operands
GRAD_DTYPES = ("float64", "float32", "complex128", "complex64")

# gradient tolerances (rtol, atol) by dtype: a gradient is computed by other formulas than the
# forward (and torch's own formulas differ in rounding), so float32 is looser than assert_close's
GRAD_TOL = {"float64": (1e-7, 1e-7), "float32": (1e-4, 1e-5), "float16": (1e-2, 1e-3),
            "bfloat16": (5e-2, 1e-2), "complex128": (1e-7, 1e-7), "complex64": (1e-4, 1e-5)}


def _id(p):
    return p.qualname if hasattr(p, "qualname") else str(p)


def _main_variant(op):
    return "function" if op.function else "method"


# ---------------------------------------------------------------------------------------------
# building a sample on leaves


def _float_targs(sample):
    """The distinct (by identity) floating-point TArgs of a sample, in order (not those marked
    nograd: running stats, weights torch does not differentiate)."""
    out, seen = [], set()
    for t in leaves((sample.input, sample.args, sample.kwargs)):
        if isinstance(t, TArg) and t.dtype in FLOATS + COMPLEX and not t.nograd and id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def _numel(shape):
    return int(np.prod(shape)) if len(shape) else 1


def _float_elems(sample):
    return sum(_numel(t.shape) for t in _float_targs(sample))


def _make_leaf(lib, targ):
    return targ.base(lib).requires_grad_()


class Built:
    """A sample materialized for `lib` on the given leaves: inp/args/kwargs, and the non-leaf
    base of the input when it is made for an in-place op (`leaf * 1`, before the view ops)."""

    def __init__(self, lib, sample, targs, tensors, inplace_input=False):
        by_id = {id(t): x for t, x in zip(targs, tensors)}
        self.base = None

        def f(leaf, is_input=False):
            if isinstance(leaf, Dt):
                return getattr(lib, leaf.name)
            t = by_id.get(id(leaf))
            if t is None:
                t = leaf.base(lib)
            if is_input and inplace_input:
                t = t * 1
                self.base = t
            return leaf.viewed(t)

        if inplace_input and isinstance(sample.input, TArg):
            self.inp = f(sample.input, True)
        else:
            self.inp = _map_args(sample.input, f)
        self.args = _map_args(sample.args, f)
        self.kwargs = _map_args(sample.kwargs, f)


def _call(op, lib, b: Built, variant):
    return op.invoke(lib, variant, b.inp, b.args, b.kwargs)


def _is_tensor(x):
    return isinstance(x, (kindle.Tensor, torch.Tensor))


def _flat(r):
    """The tensors of a result (a tensor, a (named) tuple or list of them, nested), in order;
    non-tensor items (Python numbers) are skipped."""
    if _is_tensor(r):
        return [r]
    if isinstance(r, (tuple, list)):
        return [t for x in r for t in _flat(x)]
    return []


def _uses_inplace_input(op, variant):
    return variant.startswith("inplace") or op.inplace_only


def _run(op, lib, sample, targs, variant):
    """Make a leaf of each of `targs`, run the op on the sample; returns (leaves, built, output
    tensors). With an in-place op the base of the input (`leaf * 1`) is appended to the outputs."""
    lv = [_make_leaf(lib, t) for t in targs]
    inplace = _uses_inplace_input(op, variant)
    b = Built(lib, sample, targs, lv, inplace_input=inplace)
    before = None if b.base is None else b.base.grad_fn
    outs = _flat(_call(op, lib, b, variant))
    if (lib is torch and variant.startswith("inplace") and not op.view and before is not None
            and b.base.grad_fn is before):
        # torch does not record some in-place ops in the graph (logical_not_, logical_and_, ...:
        # composites over an out= kernel; the base keeps its grad_fn), so its gradient passes
        # through them as if they were the identity. The reference is then what they mean:
        # x.copy_(op(x, ...)). (View ops such as t_ change only x's metadata: not checked.)
        lv = [_make_leaf(lib, t) for t in targs]
        b = Built(lib, sample, targs, lv, inplace_input=True)
        r = getattr(b.inp, op.name)(*b.args, **b.kwargs) if op.method else \
            op.invoke(lib, "function", b.inp, b.args, b.kwargs)
        outs = [b.inp.copy_(r)]
    if inplace and b.base is not None:
        outs.append(b.base)
    return lv, b, outs


def _try(f, *a, **k):
    try:
        return f(*a, **k), None
    except Exception as e:  # noqa: BLE001
        return None, e


def _short(e):
    s = str(e).strip().splitlines()
    return f"{type(e).__name__}: {s[0][:220] if s else ''}"


# ---------------------------------------------------------------------------------------------
# 1. gradcheck

def _gradcheck_params():
    """float64 for every differentiable op; complex128 too where the op has complex kernels
    (gradcheck checks the conjugate Wirtinger gradient through view_as_real)."""
    return [(o, d) for o in OPS if o.kind != "creation" for d in ("float64", "complex128") if d in o.dtypes]


def _gradcheck_fn(op, lib, sample, targs, variant, out_idx):
    def fn(*lv):
        b = Built(lib, sample, targs, lv, inplace_input=_uses_inplace_input(op, variant))
        outs = _flat(_call(op, lib, b, variant))
        if b.base is not None:
            outs.append(b.base)
        return tuple(outs[i] for i in out_idx)
    return fn


@pytest.mark.parametrize("op,dtype", _gradcheck_params(), ids=_id)
def test_gradcheck(op, dtype):
    """Finite differences against kindle's backward, for the small float64 samples: every
    float64 tensor argument a leaf (other floating ones, as in mixed-dtype samples, constants),
    the outputs torch differentiates. The samples torch rejects or does not differentiate, and
    those where torch's own gradcheck fails too (a kink, a tie, inf/nan), are left to the other
    tests."""
    failures = []
    variant = _main_variant(op)
    for s in op.get_samples(dtype):
        targs = [t for t in _float_targs(s) if t.dtype == dtype]
        if not targs or _float_elems(s) > GRADCHECK_MAX_ELEMS:
            continue
        res, terr = _try(_run, op, torch, s, targs, variant)
        if terr is not None:
            continue  # torch rejects the sample (test_ops checks kindle does too)
        touts = res[2]
        out_idx = [i for i, o in enumerate(touts) if o.requires_grad]
        if not out_idx:
            continue  # not differentiable in torch: test 3
        res, kerr = _try(_run, op, kindle, s, targs, variant)
        if kerr is not None:
            failures.append((s, f"forward raised {_short(kerr)}"))
            continue
        kouts = res[2]
        if len(kouts) != len(touts):
            failures.append((s, f"{len(kouts)} output tensors, torch has {len(touts)}"))
            continue
        dropped = [i for i in out_idx if not kouts[i].requires_grad]
        if dropped:
            failures.append((s, f"output(s) {dropped} do not require grad (torch's do): graph dropped"))
            continue
        kleaves = [_make_leaf(kindle, t) for t in targs]
        ok, e = _try(kindle.autograd.gradcheck, _gradcheck_fn(op, kindle, s, targs, variant, out_idx), kleaves)
        if e is None and ok:
            continue
        # a sample at a point where the op is not differentiable (a kink, a tie, inf/nan):
        # torch's gradcheck fails on it too; test_grad_matches_torch still compares it
        tleaves = [_make_leaf(torch, t) for t in targs]
        tok, te = _try(torch.autograd.gradcheck, _gradcheck_fn(op, torch, s, targs, variant, out_idx), tleaves,
                       raise_exception=False)
        if te is not None or not tok:
            continue
        if e is None:
            failures.append((s, "gradcheck returned False"))
        elif isinstance(e, kindle.autograd.GradcheckError):
            failures.append((s, _gradcheck_summary(str(e))))
        else:
            failures.append((s, f"gradcheck raised {_short(e)}"))
    assert not failures, report(failures, limit=20)


def _gradcheck_summary(msg):
    lines = msg.strip().splitlines()
    first = lines[0] if lines else msg
    last = next((ln for ln in reversed(lines) if ln.startswith("first mismatch")), "")
    return f"{first} {last}".strip()


# ---------------------------------------------------------------------------------------------
# 2. gradients against torch


def _grad_outputs(outs, seed):
    """Seeded standard-normal grad_outputs (NumPy float64 values, cast to each output's dtype)."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(tuple(o.shape)) + (1j * rng.standard_normal(tuple(o.shape)) if o.is_complex() else 0)
            for o in outs]


def _to_lib(lib, a, like):
    a = np.asarray(a)
    t = lib.tensor(a if np.iscomplexobj(a) else np.asarray(a, dtype=np.float64))
    return t.to(like.dtype)


def _compare_grads(op, s, lib_res, torch_res, seed):
    """Backward in both libraries with the same grad_outputs; a list of problems. Where torch's
    backward raises (a derivative torch lacks, a torch limitation) there is no reference: []."""
    (klv, _, kouts), (tlv, _, touts) = lib_res, torch_res
    if len(kouts) != len(touts):
        return [f"{len(kouts)} output tensors, torch has {len(touts)}"]
    idx = [i for i, o in enumerate(touts) if o.requires_grad]
    req = [i for i, o in enumerate(kouts) if o.requires_grad]
    if req != idx:
        return [f"outputs requiring grad {req}, torch {idx}"]
    if not idx:
        return []
    gos = _grad_outputs([touts[i] for i in idx], seed)
    tgo = [_to_lib(torch, g, touts[i]) for g, i in zip(gos, idx)]
    kgo = [_to_lib(kindle, g, kouts[i]) for g, i in zip(gos, idx)]
    _, te = _try(torch.autograd.backward, [touts[i] for i in idx], tgo)
    if te is not None:
        return []
    _, e = _try(kindle.autograd.backward, [kouts[i] for i in idx], kgo)
    if e is not None:
        return [f"backward raised {_short(e)}"]
    # the gradient is computed in the dtype of the op's result: a float64 leaf of a float32
    # result gets float32 rounding
    out_dtypes = {_dname(touts[i].dtype) for i in idx}
    problems = []
    for j, (kl, tl) in enumerate(zip(klv, tlv)):
        kg, tg = kl.grad, tl.grad
        if tg is None or kg is None:
            if (tg is None) != (kg is None):
                problems.append(f"grad[{j}] is {'None' if kg is None else 'a tensor'}, torch's is "
                                f"{'None' if tg is None else 'a tensor'}")
            continue
        if tg._is_zerotensor():
            tg = torch.zeros(tg.shape, dtype=tg.dtype)
        problems += compare(kg, tg, path=f"grad[{j}]", op=_Tol(op, {_dname(tg.dtype)} | out_dtypes))
    return problems


def _dname(dt):
    return str(dt).rsplit(".", 1)[-1]


class _Tol:
    """The loosest of the op's forward tolerance and GRAD_TOL over the given dtypes."""

    def __init__(self, op, dtypes):
        self.op, self.dtypes = op, dtypes

    def tolerance(self, dtype):
        r, a = self.op.tolerance(dtype)
        for d in self.dtypes:
            for table in (GRAD_TOL, self.op.grad_tol):
                if d in table:
                    r, a = max(r, table[d][0]), max(a, table[d][1])
        return r, a


def _torch_params():
    return [(o, d) for o in OPS if o.kind != "creation" for d in GRAD_DTYPES if d in o.dtypes]


@pytest.mark.parametrize("op,dtype", _torch_params(), ids=_id)
def test_grad_matches_torch(op, dtype):
    """The same samples in kindle and torch, floating arguments as leaves, backward from the
    same random grad_outputs: every leaf's .grad matches torch's (shape, dtype, values)."""
    failures = []
    variant = _main_variant(op)
    for k, s in enumerate(op.get_samples(dtype)):
        targs = _float_targs(s)
        if not targs or _float_elems(s) > TORCH_MAX_ELEMS or (op.torch_grad_wrong and op.torch_grad_wrong(s)):
            continue
        tres, terr = _try(_run, op, torch, s, targs, variant)
        if terr is not None:
            continue
        if not any(o.requires_grad for o in tres[2]):
            continue
        kres, kerr = _try(_run, op, kindle, s, targs, variant)
        if kerr is not None:
            failures.append((s, f"forward raised {_short(kerr)}"))
            continue
        errs = _compare_grads(op, s, kres, tres, seed=k)
        if errs:
            failures.append((s, "; ".join(errs)))
    assert not failures, report(failures, limit=20)


# ---------------------------------------------------------------------------------------------
# 3. requires_grad of the outputs


def _is_a_leaf(o, lv):
    """`o` is one of the leaves `lv` (the op returned its input, as contiguous() does): kindle may
    wrap the same tensor in a new Python object, so compare what identifies the tensor."""
    return o.is_leaf and any(o is x or (o.data_ptr() == x.data_ptr() and tuple(o.shape) == tuple(x.shape)
                                        and tuple(o.stride()) == tuple(x.stride())) for x in lv)


def _rg_dtype(op):
    for d in ("float64", "float32"):
        if d in op.dtypes:
            return d
    return op.dtypes[0]


@pytest.mark.parametrize("op", OPS, ids=_id)
def test_requires_grad_matches_torch(op):
    """Each output tensor requires grad in kindle exactly when it does in torch (for all ops:
    comparisons, argmax, detach, *_like, ... must not; differentiable ops must not drop the
    graph); under no_grad no output requires grad."""
    failures = []
    variant = _main_variant(op)
    for s in op.get_samples(_rg_dtype(op)):
        targs = _float_targs(s)
        if _float_elems(s) > TORCH_MAX_ELEMS:
            continue
        tres, terr = _try(_run, op, torch, s, targs, variant)
        if terr is not None:
            continue
        kres, kerr = _try(_run, op, kindle, s, targs, variant)
        if kerr is not None:
            failures.append((s, f"forward raised {_short(kerr)}"))
            continue
        touts, kouts = tres[2], kres[2]
        if len(kouts) != len(touts):
            failures.append((s, f"{len(kouts)} output tensors, torch has {len(touts)}"))
            continue
        treq = [o.requires_grad for o in touts]
        kreq = [o.requires_grad for o in kouts]
        if treq != kreq:
            failures.append((s, f"requires_grad {kreq}, torch {treq}"))
            continue
        # an output requiring grad must have a grad_fn unless it is one of the leaves
        for i, o in enumerate(kouts):
            if o.requires_grad and o.grad_fn is None and not _is_a_leaf(o, kres[0]):
                failures.append((s, f"output {i} requires grad but has no grad_fn and is not a leaf input"))
        with kindle.autograd.no_grad():
            kres2, kerr2 = _try(_run, op, kindle, s, targs, variant)
        if kerr2 is not None:
            failures.append((s, f"under no_grad: forward raised {_short(kerr2)}"))
            continue
        leaves2 = kres2[0]
        bad = [i for i, o in enumerate(kres2[2]) if o.requires_grad and not _is_a_leaf(o, leaves2)]
        if bad:
            failures.append((s, f"under no_grad: output(s) {bad} require grad"))
    assert not failures, report(failures, limit=20)


# ---------------------------------------------------------------------------------------------
# 4. in-place variants


def _inplace_params():
    out = []
    for o in OPS:
        if not o.inplace:
            continue
        for v in ("inplace", "inplace_function"):
            if o.inplace_method if v == "inplace" else o.inplace_function:
                out += [(o, d, v) for d in GRAD_DTYPES if d in o.dtypes]
    return out


@pytest.mark.parametrize("op,dtype,variant", _inplace_params(), ids=_id)
def test_inplace_grad_matches_torch(op, dtype, variant):
    """x = leaf * 1 (a non-leaf), the sample's view ops on x, then the in-place op: the gradients
    (of the result and of x's base, from the same grad_outputs) w.r.t. the leaf and the other
    floating arguments match torch's."""
    failures = []
    for k, s in enumerate(op.get_samples(dtype)):
        targs = _float_targs(s)
        if not isinstance(s.input, TArg) or s.input.dtype not in FLOATS or _float_elems(s) > TORCH_MAX_ELEMS:
            continue
        if op.torch_grad_wrong and op.torch_grad_wrong(s):
            continue
        tres, terr = _try(_run, op, torch, s, targs, variant)
        if terr is not None:
            continue  # e.g. writing into an expanded view, a result torch cannot cast
        kres, kerr = _try(_run, op, kindle, s, targs, variant)
        if kerr is not None and s.expanded and isinstance(kerr, RuntimeError):
            continue  # writing through an expanded view is an error by design (torch lets some pass)
        if kerr is not None:
            failures.append((s, f"forward raised {_short(kerr)}"))
            continue
        errs = _compare_grads(op, s, kres, tres, seed=k)
        if errs:
            failures.append((s, "; ".join(errs)))
    assert not failures, report(failures, limit=20)


# ---------------------------------------------------------------------------------------------
# 5. complex gradients of the ops whose database entry lists no complex dtype


def _complex_where_computed_params():
    return [o for o in OPS if o.kind != "creation" and not any(d in o.dtypes for d in COMPLEX)]


@pytest.mark.parametrize("op", _complex_where_computed_params(), ids=_id)
def test_complex_grad_matches_torch_where_computed(op):
    """Ops whose complex support is not declared in the database: on their complex128 samples,
    where both libraries compute the forward and torch differentiates it, Kindle's gradients
    match torch's, or Kindle refuses them cleanly (NotImplementedError), never a wrong gradient."""
    failures = []
    variant = _main_variant(op)
    for k, s in enumerate(op.get_samples("complex128")):
        targs = _float_targs(s)
        if not targs or _float_elems(s) > TORCH_MAX_ELEMS or (op.torch_grad_wrong and op.torch_grad_wrong(s)):
            continue
        tres, terr = _try(_run, op, torch, s, targs, variant)
        if terr is not None or not any(o.requires_grad for o in tres[2]):
            continue
        kres, kerr = _try(_run, op, kindle, s, targs, variant)
        if kerr is not None:
            continue  # the forward refuses complex (test_ops checks that it does so cleanly)
        errs = _compare_grads(op, s, kres, tres, seed=k)
        errs = [e for e in errs if "NotImplementedError" not in e]
        if errs:
            failures.append((s, "; ".join(errs)))
    assert not failures, report(failures, limit=20)
