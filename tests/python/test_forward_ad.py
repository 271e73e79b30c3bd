"""Forward-mode AD (kindle.autograd.forward_ad).

1. test_jvp_matches_torch: for every op of the op database and each sample, every floating
   argument made a dual tensor with the same random tangent in both libraries (the sample's view
   ops applied to the dual tensor): each output's tangent matches torch's forward AD; where torch
   has no forward formula, the reference is torch's reverse mode (J v = d/du <J^T u, v>).
2. test_inplace_jvp_matches_torch: the same through the in-place variants (x = dual * 1, the
   sample's view ops, the in-place op): the tangents of the result and of x's base.
3. The API's behaviour: levels, errors, views and in-place updates, no_grad, reverse mode over
   forward mode, custom Functions with jvp.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]

import kindle  # noqa: E402
import kindle.autograd.forward_ad as kfw  # noqa: E402
import torch.autograd.forward_ad as tfw  # noqa: E402
from common import compare, report  # noqa: E402
from opdb import OPS, TArg  # noqa: E402
from test_autograd_ops import _inplace_params as _autograd_inplace_params  # noqa: E402
from test_autograd_ops import (FLOATS, TORCH_MAX_ELEMS, Built, _call, _float_elems, _float_targs, _flat,  # noqa: E402
                               _main_variant, _short, _Tol, _try, _uses_inplace_input, _dname)

JVP_DTYPES = ("float64", "complex128")


def _tangent_data(targs, seed):
    rng = np.random.default_rng(seed)
    out = []
    for t in targs:
        shape = np.shape(t.data)
        v = rng.standard_normal(shape)
        if np.iscomplexobj(t.data):
            v = v + 1j * rng.standard_normal(shape)
        out.append(np.asarray(v, dtype=np.asarray(t.data).dtype))
    return out


def _primal(lib, targ):
    t = lib.tensor(targ.data)
    return t.to(lib.bfloat16) if targ.dtype == "bfloat16" else t


def _forward(lib, fw, op, sample, targs, tans, variant):
    """Runs the op on dual tensors; returns [(output, its tangent or None)]."""
    with fw.dual_level():
        duals = [fw.make_dual(_primal(lib, t), lib.tensor(v).to(_primal(lib, t).dtype)) for t, v in zip(targs, tans)]
        b = Built(lib, sample, targs, duals, inplace_input=_uses_inplace_input(op, variant))
        outs = _flat(_call(op, lib, b, variant))
        if b.base is not None:
            outs.append(b.base)
        res = []
        for o in outs:
            p, t = fw.unpack_dual(o)
            res.append((p.detach().clone(), None if t is None else t.detach().clone()))
    return res


def _torch_reverse_jvp(op, sample, targs, tans, variant):
    """J v from torch's reverse mode (double backward), for ops without a forward formula."""
    leaves = [_primal(torch, t).requires_grad_() for t in targs]
    b = Built(torch, sample, targs, leaves, inplace_input=_uses_inplace_input(op, variant))
    outs = _flat(_call(op, torch, b, variant))
    if b.base is not None:
        outs.append(b.base)
    diff = [i for i, o in enumerate(outs) if o.requires_grad]
    us = [torch.zeros_like(outs[i], requires_grad=True) for i in diff]
    gs = torch.autograd.grad([outs[i] for i in diff], leaves, us, create_graph=True, allow_unused=True)
    dot = sum(((g * torch.tensor(v).to(g.dtype).conj()).sum().real if g.is_complex() else (g * torch.tensor(v)).sum())
              for g, v in zip(gs, tans) if g is not None)
    res = [(o.detach(), None) for o in outs]
    if not torch.is_tensor(dot) or not dot.requires_grad:
        return res
    jts = torch.autograd.grad(dot, us, allow_unused=True)
    for k, i in enumerate(diff):
        jt = jts[k]
        if jt is not None and jt.is_complex():
            jt = jt.conj()
        res[i] = (outs[i].detach(), jt)
    return res


def _fd_jvp(op, sample, targs, tans, variant, h=1e-6):
    """Central finite differences along the tangents (in torch; lower-precision arguments are
    perturbed in float64)."""

    def run(sign):
        wide = [np.complex128 if np.iscomplexobj(t.data) else np.float64 for t in targs]
        ps = [torch.tensor(np.asarray(t.data, dtype=w) + sign * h * np.asarray(v, dtype=w))
              for t, v, w in zip(targs, tans, wide)]
        b = Built(torch, sample, targs, ps, inplace_input=_uses_inplace_input(op, variant))
        outs = _flat(_call(op, torch, b, variant))
        if b.base is not None:
            outs.append(b.base)
        return outs

    hi, lo = run(1), run(-1)
    return [(a, (a - b) / (2 * h) if (a.is_floating_point() or a.is_complex()) else None) for a, b in zip(hi, lo)]


def _compare(op, kres, tres, dtypes=()):
    if len(kres) != len(tres):
        return [f"{len(kres)} outputs, torch has {len(tres)}"]
    problems = []
    for i, ((kp, kt), (tp, tt)) in enumerate(zip(kres, tres)):
        if tt is None and kt is None:
            continue
        if tt is not None and kt is not None and tp.is_floating_point() and tp.numel():
            # a NaN output of an empty or fully masked reduction (0/0): kindle's tangent is 0, as
            # its gradient is (torch's reverse mode agrees; its forward formulas give NaN)
            nan_out = torch.isnan(tp) & torch.isnan(tt)
            if bool(nan_out.any()):
                kz = torch.tensor(kt.detach().numpy()) == 0
                tt = torch.where(nan_out & kz, torch.zeros_like(tt), tt)
        if tt is None:
            tt = torch.zeros(tuple(tp.shape), dtype=tp.dtype)
        if tt._is_zerotensor():
            tt = torch.zeros(tt.shape, dtype=tt.dtype)
        if kt is None:
            kt = kindle.zeros(tuple(kp.shape), dtype=getattr(kindle, _dname(tp.dtype)))
        problems += compare(kt, tt, path=f"tangent[{i}]", op=_Tol(op, {_dname(tt.dtype)} | set(dtypes)))
    return problems


def _check_sample(op, dtype, s, k, variant):
    targs = [t for t in _float_targs(s)]
    if not targs or _float_elems(s) > TORCH_MAX_ELEMS // 20:
        return None
    if op.torch_grad_wrong and op.torch_grad_wrong(s):
        return None
    tans = _tangent_data(targs, seed=k)
    tres, terr = _try(_forward, torch, tfw, op, s, targs, tans, variant)
    if terr is not None:
        # torch lacks the forward formula, or refuses the sample: its reverse mode is the reference
        if _try(_call, op, torch, Built(torch, s, targs, [_primal(torch, t) for t in targs],
                                        inplace_input=_uses_inplace_input(op, variant)), variant)[1] is not None:
            return None
        tres, terr = _try(_torch_reverse_jvp, op, s, targs, tans, variant)
        if terr is not None:
            return None
    kres, kerr = _try(_forward, kindle, kfw, op, s, targs, tans, variant)
    if kerr is not None:
        if dtype.startswith("complex") and isinstance(kerr, NotImplementedError):
            return None  # complex forward formula not written: refused, never wrong
        return f"forward AD raised {_short(kerr)}"
    dtypes = {t.dtype for t in targs}
    errs = _compare(op, kres, tres, dtypes)
    if errs:
        # torch's forward formulas have known gaps (a real exponent of a complex pow loses the
        # imaginary part; 0/0 where its backward masks): its reverse mode and finite differences
        # arbitrate
        rev, _ = _try(_torch_reverse_jvp, op, s, targs, tans, variant)
        if rev is not None and not _compare(op, kres, rev, dtypes):
            return None
        fd, _ = _try(_fd_jvp, op, s, targs, tans, variant)
        if fd is not None and len(fd) == len(kres):  # (in the dtypes kindle's outputs have)
            fd = [(p, t if t is None else t.to(getattr(torch, _dname(kp.dtype))))
                  for (p, t), (kp, _) in zip(fd, kres)]
        if fd is not None and not _compare(op, kres, fd, dtypes | {"float32"}):
            return None
    return "; ".join(errs) if errs else None


def _params():
    return [(o, d) for o in OPS if o.kind != "creation" for d in JVP_DTYPES if d in o.dtypes]


def _id(p):
    return p.qualname if hasattr(p, "qualname") else str(p)


@pytest.mark.parametrize("op,dtype", _params(), ids=_id)
def test_jvp_matches_torch(op, dtype):
    failures = []
    variant = _main_variant(op)
    for k, s in enumerate(op.get_samples(dtype)):
        err = _check_sample(op, dtype, s, k, variant)
        if err:
            failures.append((s, err))
    assert not failures, report(failures, limit=20)


def _inplace_params():
    return [p for p in _autograd_inplace_params() if p[1] == "float64"]


@pytest.mark.parametrize("op,dtype,variant", _inplace_params(), ids=_id)
def test_inplace_jvp_matches_torch(op, dtype, variant):
    failures = []
    for k, s in enumerate(op.get_samples(dtype)):
        if not isinstance(s.input, TArg) or s.input.dtype not in FLOATS:
            continue
        err = _check_sample(op, dtype, s, k, variant)
        if err and not (s.expanded and "RuntimeError" in err):
            failures.append((s, err))
    assert not failures, report(failures, limit=20)


# ---------------------------------------------------------------------------------------------
# 3. the API


def test_levels_and_errors():
    x = kindle.randn(3)
    with pytest.raises(RuntimeError, match="no level exists"):
        kfw.make_dual(x, kindle.randn(3))
    assert kfw.unpack_dual(x).tangent is None
    with kfw.dual_level() as lvl:
        assert lvl == 0
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            kfw.enter_dual_level()
        with pytest.raises(RuntimeError, match="different size"):
            kfw.make_dual(x, kindle.randn(4))
        with pytest.raises(ValueError, match="floating point or complex"):
            kfw.make_dual(kindle.arange(3), kindle.randn(3))
        d = kfw.make_dual(x, kindle.ones(3))
        with pytest.raises(RuntimeError, match="already has a forward gradient"):
            kfw.make_dual(d, kindle.ones(3))
        y = d * 2
        p, t = kfw.unpack_dual(y)
        assert kfw.unpack_dual(p).tangent is None
        assert kindle.equal(t, kindle.full((3,), 2.0))
        assert kfw.unpack_dual(d.detach()).tangent is None
        assert kfw.unpack_dual(d.argmax()).tangent is None
    assert kfw.unpack_dual(y).tangent is None  # dropped with the level
    with kfw.dual_level():
        assert kfw.unpack_dual(y).tangent is None  # a new level does not revive old tangents


def test_no_grad_and_reverse_over_forward():
    x = kindle.randn(4, dtype=kindle.float64, requires_grad=True)
    v = kindle.randn(4, dtype=kindle.float64)
    with kfw.dual_level():
        with kindle.no_grad():
            t = kfw.unpack_dual((kfw.make_dual(x, v) ** 3).sum()).tangent
        assert t is not None and float(t) == pytest.approx(float((3 * x.detach() ** 2 * v).sum()))
        # the tangent is differentiable in reverse mode: d/dx (3 x^2 . v) = 6 x v
        jvp = kfw.unpack_dual((kfw.make_dual(x, v) ** 3).sum()).tangent
        (g,) = kindle.autograd.grad(jvp, x)
    assert kindle.allclose(g, 6 * x.detach() * v)


def test_forward_over_reverse_hvp():
    """Hessian-vector product by forward mode over reverse mode (as torch.func's hessian)."""
    x = kindle.randn(5, dtype=kindle.float64)
    v = kindle.randn(5, dtype=kindle.float64)
    with kfw.dual_level():
        xd = kfw.make_dual(x, v).requires_grad_()
        y = (xd.sin() * xd).sum()
        (g,) = kindle.autograd.grad(y, xd, create_graph=True)
        hv = kfw.unpack_dual(g).tangent
    xt = torch.tensor(x.numpy())
    ref = torch.autograd.functional.hvp(lambda a: (a.sin() * a).sum(), xt, torch.tensor(v.numpy()))[1]
    assert np.allclose(hv.detach().numpy(), ref.numpy())


def test_inplace_and_views():
    with kfw.dual_level():
        base = kindle.zeros(2, 3, dtype=kindle.float64)
        d = kfw.make_dual(kindle.ones(3, dtype=kindle.float64), kindle.full((3,), 2.0, dtype=kindle.float64))
        base[0] = d * 3  # a view of a tensor without a tangent receives one: so does the base
        t = kfw.unpack_dual(base).tangent
        assert t is not None and t.tolist() == [[6.0, 6.0, 6.0], [0.0, 0.0, 0.0]]
        a = kfw.make_dual(kindle.ones(2, 2, dtype=kindle.float64), kindle.ones(2, 2, dtype=kindle.float64))
        row = a[1]  # the view's tangent is a view of a's
        row.mul_(5)
        assert kfw.unpack_dual(a).tangent.tolist() == [[1.0, 1.0], [5.0, 5.0]]
        a.t_()
        assert kfw.unpack_dual(a).tangent.tolist() == [[1.0, 5.0], [1.0, 5.0]]


def test_custom_function_jvp():
    class Exp(kindle.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_forward(y)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

        @staticmethod
        def jvp(ctx, t):
            (y,) = ctx.saved_tensors
            return t * y

    class NoJvp(kindle.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Mul(kindle.autograd.Function):  # the setup_context form
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(*inputs)

        @staticmethod
        def jvp(ctx, tx, ty):
            x, y = ctx.saved_tensors
            return (tx * y if tx is not None else 0) + (x * ty if ty is not None else 0)

    x = kindle.randn(3, dtype=kindle.float64)
    v = kindle.randn(3, dtype=kindle.float64)
    with kfw.dual_level():
        t = kfw.unpack_dual(Exp.apply(kfw.make_dual(x, v))).tangent
        assert kindle.allclose(t, v * x.exp())
        with pytest.raises(NotImplementedError, match="jvp"):
            NoJvp.apply(kfw.make_dual(x, v))
        t = kfw.unpack_dual(Mul.apply(kfw.make_dual(x, v), x)).tangent
        assert kindle.allclose(t, v * x)
    # without a dual level a Function without jvp works as before
    assert kindle.allclose(NoJvp.apply(x), x * 2)
    assert kindle.allclose(Mul.apply(x, x), x * x)


def test_printing_shows_tangent():
    with kfw.dual_level():
        d = kfw.make_dual(kindle.tensor([1.0, 2.0]), kindle.tensor([3.0, 4.0]))
        assert "tangent=tensor([3., 4.])" in repr(d)


def test_every_differentiable_op_has_a_forward_path():
    """Every op with a backward formula propagates tangents: written formulas where the op
    table gives one, else transposition of its backward (checked for each op by the tests above).
    Here: a few ops of each kind on one dual tensor, against finite differences."""
    x = kindle.rand(3, 4, dtype=kindle.float64) + 0.5
    v = kindle.randn(3, 4, dtype=kindle.float64)
    eps = 1e-6
    fns = [lambda a: a.logsumexp(1), lambda a: a.prod(1), lambda a: a.cumprod(0), lambda a: a.std(0),
           lambda a: kindle.nn.functional.layer_norm(a, (4,)), lambda a: a.norm(dim=1),
           lambda a: kindle.linalg.det(a[:, :3] + kindle.eye(3, dtype=kindle.float64))]
    for f in fns:
        with kfw.dual_level():
            t = kfw.unpack_dual(f(kfw.make_dual(x, v))).tangent
        fd = (f(x + eps * v) - f(x - eps * v)) / (2 * eps)
        assert kindle.allclose(t, fd, atol=1e-6), f


# ---------------------------------------------------------------------------------------------
# 4. forward over reverse: the tangent of a gradient (Hessian-vector products, torch.func.hessian)


def _forward_over_reverse(lib, fw, op, sample, targs, tans, cot_seed):
    """With every floating argument dual: g = grad(<outputs, u>, args) (create_graph), and the
    tangents of g."""
    with fw.dual_level():
        duals = [fw.make_dual(_primal(lib, t), lib.tensor(v).to(_primal(lib, t).dtype)).requires_grad_()
                 for t, v in zip(targs, tans)]
        b = Built(lib, sample, targs, duals)
        outs = [o for o in _flat(_call(op, lib, b, _main_variant(op))) if o.requires_grad]
        if not outs:
            return None
        rng = np.random.default_rng(cot_seed)
        us = [lib.tensor(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in outs]
        gs = lib.autograd.grad(outs, duals, us, create_graph=True, allow_unused=True)
        _forward_over_reverse.out_dtypes = {_dname(o.dtype) for o in outs}
        res = []
        for g in gs:
            t = None if g is None else fw.unpack_dual(g).tangent
            res.append((None if g is None else g.detach().clone(), None if t is None else t.detach().clone()))
    return res


def _torch_hvp_reverse(op, sample, targs, tans, cot_seed):
    """The same products by torch's reverse mode twice: grad(<g, v>) with g = grad(<f, u>)."""
    leaves = [_primal(torch, t).requires_grad_() for t in targs]
    b = Built(torch, sample, targs, leaves)
    outs = [o for o in _flat(_call(op, torch, b, _main_variant(op))) if o.requires_grad]
    rng = np.random.default_rng(cot_seed)
    us = [torch.tensor(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in outs]
    gs = torch.autograd.grad(outs, leaves, us, create_graph=True, allow_unused=True)
    dot = sum((g * torch.tensor(v)).sum() for g, v in zip(gs, tans) if g is not None and g.requires_grad)
    if not torch.is_tensor(dot):
        return [None if g is None else torch.zeros_like(g) for g in gs]
    hv = torch.autograd.grad(dot, leaves, allow_unused=True)
    return [None if h is None else h.detach() for h in hv]


def _fd_of_grad(op, sample, targs, tans, cot_seed, h=1e-6):
    def grads(sign):
        leaves = [kindle.tensor(np.asarray(t.data) + sign * h * v).requires_grad_() for t, v in zip(targs, tans)]
        b = Built(kindle, sample, targs, leaves)
        outs = [o for o in _flat(_call(op, kindle, b, _main_variant(op))) if o.requires_grad]
        rng = np.random.default_rng(cot_seed)
        us = [kindle.tensor(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in outs]
        return kindle.autograd.grad(outs, leaves, us, allow_unused=True)
    hi, lo = grads(1), grads(-1)
    return [None if a is None else torch.tensor(((a - b) / (2 * h)).numpy()) for a, b in zip(hi, lo)]


def _for_params():
    return [o for o in OPS if o.kind != "creation" and "float64" in o.dtypes]


@pytest.mark.parametrize("op", _for_params(), ids=_id)
def test_forward_over_reverse_matches_torch(op):
    """The samples with finite float64 values (at inf, nan and poles second derivatives are inf or
    nan in both libraries, in patterns their formulas do not share)."""
    failures = []
    for k, s in enumerate(op.get_samples("float64")):
        targs = [t for t in _float_targs(s) if t.dtype == "float64"]
        if not targs or len(targs) != len(_float_targs(s)) or _float_elems(s) > 400:
            continue
        if not all(np.isfinite(np.asarray(t.data)).all() for t in targs):
            continue
        if op.qualname == "nn.functional.binary_cross_entropy" and np.isin(np.asarray(s.input.data), (0.0, 1.0)).any():
            continue  # probabilities of exactly 0 or 1: both libraries clamp the logs there, and
            # torch's own forward and double-backward formulas disagree (by 1e23)
        if op.torch_grad_wrong and op.torch_grad_wrong(s):
            continue
        tans = _tangent_data(targs, seed=k)
        tres, terr = _try(_forward_over_reverse, torch, tfw, op, s, targs, tans, k)
        if terr is not None or tres is None:
            continue  # torch lacks a formula on the way (or rejects the sample)
        kres, kerr = _try(_forward_over_reverse, kindle, kfw, op, s, targs, tans, k)
        if kerr is not None:
            if isinstance(kerr, NotImplementedError):
                continue  # a backward formula that is not differentiable: refused, never wrong
            failures.append((s, f"raised {_short(kerr)}"))
            continue
        dtypes = {"float64"} | _forward_over_reverse.out_dtypes
        pairs = [((kp, kt), (tp, tt)) for (kp, kt), (tp, tt) in zip(kres, tres) if tp is not None and kp is not None]
        errs = _compare(op, [p[0] for p in pairs], [p[1] for p in pairs], dtypes)
        if errs:
            # at a kink (elu at 0, softplus at its threshold, a clamp bound) torch's forward formulas
            # and its double backward disagree: its reverse-over-reverse product arbitrates
            ref, _ = _try(_torch_hvp_reverse, op, s, targs, tans, k)
            if ref is not None:
                pairs = [((kp, kt), (torch.tensor(kp.numpy()), rt)) for (kp, kt), rt in zip(kres, ref) if kp is not None]
                if not _compare(op, [p[0] for p in pairs], [p[1] for p in pairs], dtypes):
                    continue
            # or the directional derivative of kindle's gradient (itself checked against torch's
            # by test_autograd_ops), by central differences
            fd, _ = _try(_fd_of_grad, op, s, targs, tans, k)
            if fd is not None:
                pairs = [((kp, kt), (torch.tensor(kp.numpy()), ft)) for (kp, kt), ft in zip(kres, fd) if kp is not None]
                if not _compare(op, [p[0] for p in pairs], [p[1] for p in pairs], dtypes | {"float32"}):
                    continue
            failures.append((s, "; ".join(errs)))
    assert not failures, report(failures, limit=20)
