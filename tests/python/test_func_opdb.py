"""kindle.func's Jacobians over the op database: for every op and sample (float64), the Jacobian
of the op's first floating output with respect to its first floating argument by jacrev (reverse
mode, one pass per output element) and by jacfwd (forward mode, all columns in one vmapped pass:
dual tensors through the batching rules) must equal torch.func's jacrev and jacfwd (jacfwd
compares with Kindle's jacrev where torch has no forward formula). Where Kindle and torch
disagree, central finite differences decide (torch's integer-exponent ldexp gradient is one case).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import kindle  # noqa: E402
from common import report  # noqa: E402
from opdb import OPS  # noqa: E402
from test_autograd_ops import Built, _call, _flat, _float_targs, _main_variant, _short  # noqa: E402

MAX_ELEMS = 48


def _jac_fn(lib, op, sample, targs, variant):
    fixed = [lib.tensor(t.data) for t in targs]

    def f(x):
        tensors = [x] + fixed[1:]
        out = [o for o in _flat(_call(op, lib, Built(lib, sample, targs, tensors), variant))
               if o.is_floating_point()]
        if out and out[0].dtype != lib.float64:
            raise LookupError("a lower-precision output")
        if not out:
            raise LookupError("no floating output")
        return out[0]
    return f, fixed[0]


def _fd_jacobian(f, x, h=1e-6):
    """Central differences, column by column (the arbiter where the libraries disagree)."""
    cols = []
    flat = x.reshape(-1)
    for j in range(flat.numel()):
        e = kindle.zeros_like(flat)
        e[j] = h
        hi, lo = f((flat + e).reshape(x.shape)), f((flat - e).reshape(x.shape))
        cols.append(((hi - lo) / (2 * h)).reshape(-1))
    return kindle.stack(cols, -1).reshape(tuple(f(x).shape) + tuple(x.shape)).numpy()


def _check(op, sample, variant):
    if "max_norm" in sample.kwargs:
        return None  # (embedding renormalizes its weight in place, outside differentiation)
    targs = [t for t in _float_targs(sample) if t.dtype == "float64"]
    if not targs or np.size(targs[0].data) > MAX_ELEMS or np.size(targs[0].data) == 0:
        return None
    tf, tx = _jac_fn(torch, op, sample, targs, variant)
    try:
        out = tf(tx)
        if out.numel() > MAX_ELEMS or out.numel() == 0:
            return None
    except Exception:  # noqa: BLE001  (torch refuses the sample)
        return None
    refs = {}
    for mode in ("jacrev", "jacfwd"):
        try:
            refs[mode] = getattr(torch.func, mode)(tf)(tx).numpy()
        except Exception:  # noqa: BLE001  (no formula in torch)
            refs[mode] = None
    kf, kx = _jac_fn(kindle, op, sample, targs, variant)
    got = {}
    for mode in ("jacrev", "jacfwd"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got[mode] = getattr(kindle.func, mode)(kf)(kx).numpy()
        except NotImplementedError:
            got[mode] = None  # (no formula: refused, never wrong)
        except Exception as e:  # noqa: BLE001
            if str(e).startswith("vmap: "):
                got[mode] = None  # a refusal torch.func makes too (in-place running statistics)
                continue
            return f"{mode} raised {_short(e)}"
    if got["jacrev"] is None:
        return None if refs["jacrev"] is None else "jacrev refused"
    fd = None
    for mode, ref in (("jacrev", refs["jacrev"]), ("jacfwd", refs["jacfwd"] if refs["jacfwd"] is not None
                                                   else got["jacrev"])):
        if got[mode] is None or ref is None:
            continue
        err = _differ(got[mode], ref)
        if err:
            # where torch's formula and Kindle's disagree, finite differences decide
            fd = _fd_jacobian(kf, kx) if fd is None else fd
            if _differ(got[mode], fd, rtol=1e-4, atol=1e-6) is not None:
                return f"{mode} differs from {'torch' if ref is not got['jacrev'] else 'jacrev'}: {err}"
    return None


def _differ(a, b, rtol=1e-6, atol=1e-8):
    """Where both entries are finite they must agree. (0 * inf in a Jacobian's off-diagonal
    entries is NaN in the rows of one mode and in the columns of the other, in torch too.)"""
    if a.shape != b.shape:
        return f"shapes {a.shape} and {b.shape}"
    both = np.isfinite(a) & np.isfinite(b)
    if not np.allclose(a[both], b[both], rtol=rtol, atol=atol):
        return f"by {np.max(np.abs(a[both] - b[both]))}"
    return None


def _params():
    return [o for o in OPS if "float64" in o.dtypes and o.kind not in ("creation", "random")
            and "random" not in o.name and not o.inplace_only]


@pytest.mark.parametrize("op", _params(), ids=lambda o: o.qualname)
def test_jacrev_jacfwd_match_torch(op):
    variant = _main_variant(op)
    failures = []
    for s in op.get_samples("float64"):
        err = _check(op, s, variant)
        if err:
            failures.append((s, err))
    assert not failures, report(failures, limit=10)
