"""The op database's entries for the composite ops of csrc/ops/composite.cpp (meshgrid, cdist,
histc, repeat_interleave, ...). Imported by opdb.py (import opdb, not this module): the helpers
come from there.
"""
from __future__ import annotations

import numpy as np

from opdb import (TArg, ALL, COMPLEX, _unique_values, F32_64, FLOATS, INTS, LARGE, NUMERIC, TOL_TRANSC, Dt, binary, binary_samples, op, reduction,
                  unary)

NO_BOOL = NUMERIC
# cdist / trapezoid accumulate: other summation orders than torch's
ACC_TOL = {"float32": (1e-5, 1e-5), "float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2)}


def _ldexp_samples(g):
    """binary samples without pairs of two different floating dtypes: torch rounds 2**other in
    other's dtype or in double depending on the operands' shapes; kindle computes it in the
    result's dtype."""
    def mixed_floats(s):
        a, b = s.input, s.args[0]
        return hasattr(b, "dtype") and a.dtype != b.dtype and a.dtype in FLOATS and b.dtype in FLOATS
    return [s for s in binary_samples(scalars=())(g) if not mixed_floats(s)]


def _indices_creation(name):
    def gen(g):
        d = Dt(g.dtype)
        return [g.S(None, 3, 3, dtype=d), g.S(None, 4, 3, 1, dtype=d), g.S(None, 3, 5, -1, dtype=d),
                g.S(None, 0, 3, dtype=d), g.S(None, 3, 4, offset=10, dtype=d), g.S(None, 4, 4, -10, dtype=d)]
    return gen


def _scalar_tensor_samples(g):
    v = True if g.dtype == "bool" else (3 if g.dtype in INTS else 2.5)
    return [g.S(None, v, dtype=Dt(g.dtype)), g.S(None, v)]


def _vander_samples(g):
    t = g.t
    return [g.S(t((4,), low=-2, high=2)), g.S(t((3,), low=-2, high=2), 5), g.S(t((3,), low=-2, high=2), N=2, increasing=True),
            g.S(t((4,), "S", low=-2, high=2)), g.S(t((0,))), g.S(t((3,)), 0), g.S(t((3,)), 1)]


def _narrow_copy_samples(g):
    t = g.t
    return [g.S(t((4, 5)), 0, 1, 2), g.S(t((4, 5)), 1, 0, 5), g.S(t((4, 5), "T"), 1, 2, 2), g.S(t((4, 5)), -1, 4, 1),
            g.S(t((2, 3, 4), "P"), 2, 1, 0), g.S(t((5,)), 0, 0, 5)]


def _dist_samples(g):
    t, o = g.t, g.other
    return [g.S(t((3, 4)), o((3, 4))), g.S(t((3, 4)), o((4,)), 1), g.S(t((2, 3)), o((2, 3)), 0),
            g.S(t((3, 4), "T"), o((3, 1)), 3.5), g.S(t((4,)), o(()), float("inf")), g.S(t(()), o(()), -2),
            g.S(t((0, 3)), o((3,))), g.S(t((2, 3, 4), "P"), o((3, 4), "S"), p=2.5)]


def _renorm_samples(g):
    t = g.t
    return [g.S(t((3, 4)), 2, 0, 1.0), g.S(t((3, 4)), 1, 1, 0.5), g.S(t((3, 4), "T"), 3, -1, 2.0),
            g.S(t((2, 3, 4), "P"), 2, 1, 0.7), g.S(t((3, 4)), float("inf"), 0, 0.3), g.S(t((2, 5)), 2, 0, 100.0),
            g.S(t((0, 4)), 2, 1, 1.0), g.S(t((3, 4)), 2, 0, 0.0)]


def _renorm_errors(g):
    t = g.t
    return [g.S(t((4,)), 2, 0, 1.0), g.S(t((3, 4)), 0, 0, 1.0), g.S(t((3, 4)), -1, 0, 1.0), g.S(t((3, 4)), 2, 0, -1.0),
            g.S(t((3, 4)), 2, 5, 1.0)]


def _rot90_samples(g):
    t = g.t
    return [g.S(t((3, 4))), g.S(t((3, 4)), 2), g.S(t((3, 4)), 3), g.S(t((3, 4)), -1), g.S(t((3, 4)), 0),
            g.S(t((2, 3, 4)), 1, [1, 2]), g.S(t((2, 3, 4), "P"), 1, (2, 0)), g.S(t((4, 5), "T"), 5),
            g.S(t((0, 3)), 1), g.S(t((3, 4)), k=1, dims=[1, 0])]


def _rot90_errors(g):
    t = g.t
    return [g.S(t((3,))), g.S(t((3, 4)), 1, [0]), g.S(t((3, 4)), 1, [0, 0]), g.S(t((3, 4)), 1, [0, 2])]


def _meshgrid_samples(g):
    t = g.t
    return [g.S(None, t((2,)), t((3,)), indexing="ij"), g.S(None, t((2,)), t((3,)), indexing="xy"),
            g.S(None, t((2,)), t(()), t((4,), "S"), indexing="xy"), g.S(None, t((3,)), indexing="ij"),
            g.S(None, [t((2,)), t((3,))], indexing="ij"), g.S(None, t((0,)), t((3,)), indexing="xy")]


def _meshgrid_errors(g):
    t = g.t
    return [g.S(None, t((2, 2)), t((3,)), indexing="ij"), g.S(None, t((2,)), t((3,)), indexing="yx")]


def _cartesian_prod_samples(g):
    t = g.t
    return [g.S(None, t((2,)), t((3,))), g.S(None, t((2,)), t((3,), "S"), t((2,))), g.S(None, t((4,))),
            g.S(None, t((0,)), t((3,)))]


def _combinations_samples(g):
    t = g.t
    return [g.S(t((4,))), g.S(t((4,)), 3), g.S(t((3,)), 2, True), g.S(t((5,), "S"), 1), g.S(t((3,)), 0),
            g.S(t((2,)), 3), g.S(t((3,)), r=3, with_replacement=True), g.S(t((0,)))]


def _block_diag_samples(g):
    t = g.t
    return [g.S(None, t((2, 3)), t((1, 2))), g.S(None, t(()), t((3,)), t((2, 2), "T")), g.S(None, t((2, 3))),
            g.S(None, t((0, 2)), t((2, 0)), t((1, 1))), g.S(None, t((2, 2)), t((2,), dtype="float64"))]


def _cross_samples(g):
    t = g.t
    return [g.S(t((3,)), t((3,))), g.S(t((4, 3)), t((4, 3))), g.S(t((3, 4)), t((3, 4)), 0),
            g.S(t((2, 3, 4)), t((2, 3, 4)), dim=1), g.S(t((4, 3), "S"), t((4, 3), "E")), g.S(t((1, 3)), t((4, 3)), -1),
            g.S(t((2, 3)), t((2, 3), dtype="float64"), 1), g.S(t((0, 3)), t((0, 3)), 1)]


def _cross_errors(g):
    t = g.t
    return [g.S(t((4, 2)), t((4, 2)), 1), g.S(t((2, 3)), t((2, 3)), 2), g.S(t((2, 4)), t((2, 4)))]


def _diff_samples(g):
    t = g.t
    return [g.S(t((5,))), g.S(t((3, 4))), g.S(t((3, 4)), 2), g.S(t((3, 4)), 1, 0), g.S(t((4, 5), "T"), dim=0),
            g.S(t((2, 3, 4), "P"), 1, 1), g.S(t((3, 4)), 0), g.S(t((3, 4)), 5), g.S(t((0, 3)), 1, 0),
            g.S(t((3, 4)), prepend=t((3, 2)), append=t((3, 1))), g.S(t((3, 4)), 2, 0, t((1, 4)))]


def _diff_errors(g):
    t = g.t
    return [g.S(t(())), g.S(t((3,)), -1), g.S(t((3, 4)), 1, 2), g.S(t((3, 4)), 1, -1, t((3,)))]


def _trapezoid_samples(g):
    t = g.t
    if g.op.name == "trapz":
        dx = [g.S(t((3, 4)), dx=0.5), g.S(t((3, 4)), dx=2.0, dim=0)]
    else:
        dx = [g.S(t((3, 4)), dx=0.5), g.S(t((3, 4)), dx=2, dim=0)]
    return [g.S(t((5,))), g.S(t((3, 4))), g.S(t((3, 4)), dim=0), g.S(t((4, 5), "T")), g.S(t((2, 3, 4), "P"), dim=1),
            g.S(t((3, 0))), g.S(t((3, 1))), g.S(t((3, 4)), t((4,), dtype="float64", low=0, high=5)),
            g.S(t((3, 4)), t((3, 4))), g.S(t((3, 4)), t((3,)), dim=0), g.S(t(LARGE))] + dx


def _trapezoid_errors(g):
    t = g.t
    return [g.S(t((3, 4)), t((3,))), g.S(t((3, 4)), dim=2)]


def _cdist_samples(g):
    t = g.t
    return [g.S(t((3, 4)), t((5, 4))), g.S(t((3, 4)), t((5, 4)), 1.0), g.S(t((3, 4)), t((5, 4)), 3.0),
            g.S(t((3, 4)), t((5, 4)), 0.0), g.S(t((3, 4)), t((5, 4)), float("inf")),
            g.S(t((2, 3, 4)), t((2, 5, 4))), g.S(t((2, 3, 4)), t((5, 4))), g.S(t((4, 3), "T"), t((5, 4), "S")),
            g.S(t((30, 4)), t((27, 4))), g.S(t((3, 4)), t((5, 4)), compute_mode="use_mm_for_euclid_dist"),
            g.S(t((30, 4)), t((27, 4)), compute_mode="donot_use_mm_for_euclid_dist"),
            g.S(t((0, 4)), t((5, 4))), g.S(t((3, 0)), t((5, 0)))]


def _cdist_errors(g):
    t = g.t
    return [g.S(t((3,)), t((5, 3))), g.S(t((3, 4)), t((5, 3))), g.S(t((3, 4)), t((5, 4)), -1.0),
            g.S(t((3, 4)), t((5, 4)), 2.0, "fast")]


def _histc_samples(g):
    t = g.t
    return [g.S(t((50,))), g.S(t((50,)), 7), g.S(t((4, 5), "T"), 5, -1, 1), g.S(t(())), g.S(t((0,)), 4),
            g.S(t((20,)), bins=3, min=0, max=2), g.S(t((3,), data=[1.0, 1.0, 1.0]), 4),
            g.S(t((5,), data=[0.0, 1.0, float("nan"), 2.0, 3.0]), 3, 0, 3)]


def _histc_errors(g):
    t = g.t
    return [g.S(t((5,)), 0), g.S(t((5,)), 4, 2, 1)]


def _repeat_interleave_samples(g):
    t, idx = g.t, g.idx
    return [g.S(t((3, 4)), 2), g.S(t((3, 4)), 2, 0), g.S(t((3, 4)), idx([1, 0, 2, 1]), 1),
            g.S(t((4, 5), "T"), idx([2, 1, 0, 1, 1]), dim=0), g.S(t((3,)), idx([3])), g.S(t((3,)), idx(2)),
            g.S(t((2, 3)), 0, 1), g.S(t(()), 3), g.S(t((0, 2)), 2, 0), g.S(t((2, 3)), 2, dim=-1, output_size=6)]


def _repeat_interleave_errors(g):
    t, idx = g.t, g.idx
    return [g.S(t((3,)), -1), g.S(t((3,)), idx([1, 2])), g.S(t((3,)), idx([1, -1, 2])), g.S(t((3, 4)), 2, 2)]


def _repeats_only_samples(g):
    idx = g.idx
    return [g.S(None, idx([2, 0, 3])), g.S(None, idx([0, 0])), g.S(None, idx([1, 2], dtype="int32")),
            g.S(None, idx(np.zeros(0, np.int64)))]


def _kthvalue_samples(g):
    u = lambda shape, dim=-1, layout="C": _unique_values(g, shape, dim, layout)  # noqa: E731
    out = [g.S(u((5,)), 2), g.S(u(()), 1), g.S(u((3, 4)), 1), g.S(u((3, 4), 0), 3, 0), g.S(u((3, 4)), 4, keepdim=True),
           g.S(u((2, 3, 4), 1), 2, 1, True), g.S(u((4, 5), -1, "T"), 5), g.S(u((4, 5), 0, "T"), 1, dim=0),
           g.S(u((5, 300)), 150)]
    if g.dtype in FLOATS:
        out.append(g.S(g.t((4, 3), data=[1.0, float("nan"), 2.0, float("inf"), -float("inf"), 0.5, 3.0, -1.0,
                                         float("nan"), 4.0, 5.0, 6.0]), 2))
    return out


def _median_samples(g):
    u = lambda shape, dim=-1, layout="C": _unique_values(g, shape, dim, layout)  # noqa: E731
    out = [g.S(u((5,))), g.S(u((6,))), g.S(u(())), g.S(u(()), 0), g.S(u((3, 4))), g.S(u((3, 4)), 1),
           g.S(u((3, 4), 0), 0), g.S(u((3, 5)), -1, True), g.S(u((2, 3, 4), 1), dim=1, keepdim=True),
           g.S(u((4, 5), -1, "T"), 1), g.S(u((5, 300)), 1)]
    if g.dtype in FLOATS:
        nan, inf = float("nan"), float("inf")
        # (an all-NaN row's index is left out: torch's depends on its selection algorithm)
        rows = g.t((4, 4), data=[1.0, nan, 3.0, nan, 2.0, 1.0, 0.0, 5.0, nan, 1.5, nan, nan, -inf, inf, 0.5, nan])
        out += [g.S(rows, 1), g.S(rows), g.S(g.t((0,))), g.S(g.t((3,), data=[nan, nan, nan]))]
    return out


def _median_errors(g):
    return [g.S(g.t((3, 0)), 1), g.S(g.t((3, 4)), 2)]


def _tensordot_samples(g):
    t = g.t
    return [g.S(t((3, 4, 5)), t((4, 5, 2))), g.S(t((3, 4)), t((4, 5)), 1), g.S(t((3, 4)), t((4, 5)), dims=0),
            g.S(t((3, 4, 5)), t((5, 4, 2)), dims=([1, 2], [1, 0])), g.S(t((4, 3), "T"), t((4, 5), "S"), ([1], [0])),
            g.S(t((2, 3)), t((2, 3)), 2), g.S(t((0, 3)), t((3, 2)), 1)]


def _tensordot_errors(g):
    t = g.t
    return [g.S(t((3, 4)), t((5, 2)), 1), g.S(t((3, 4)), t((4, 5)), 3), g.S(t((3, 4)), t((4, 5)), -1)]


def _quantile_samples(g):
    t = g.t
    q = lambda vals: g.t((len(vals),), data=vals)  # noqa: E731
    out = [g.S(t((5,)), 0.5), g.S(t((3, 4)), 0.25, 1), g.S(t((3, 4)), q([0.0, 0.3, 1.0]), 0),
           g.S(t((2, 3, 4)), q([0.1, 0.9]), 1, True), g.S(t((3, 4)), 0.5, keepdim=True), g.S(t(()), 0.5),
           g.S(t((4, 5), "T"), g.t((), data=0.7), -1), g.S(t((5, 60)), q([0.05, 0.5, 0.95]), 1)]
    for mode in ("lower", "higher", "midpoint", "nearest", "linear"):
        out.append(g.S(t((3, 5)), q([0.1, 0.375, 0.5, 0.9]), 1, interpolation=mode))
    nan, inf = float("nan"), float("inf")
    rows = t((3, 4), data=[1.0, nan, 3.0, 2.0, nan, nan, nan, nan, -inf, inf, 0.5, 4.0])
    out += [g.S(rows, 0.5, 1), g.S(rows, q([0.0, 0.5, 1.0]), 1, True), g.S(rows, 0.4)]
    return out


def _quantile_errors(g):
    t = g.t
    return [g.S(t((0,)), 0.5), g.S(t((3,)), 1.5), g.S(t((3,)), g.t((2, 2), low=0, high=1)),
            g.S(t((3,)), 0.5, interpolation="cubic"), g.S(t((3,)), g.t((1,), dtype="float64", low=0, high=1)),
            g.S(t((3, 4)), 0.5, 2)]


def _cum_extreme_samples(g):
    t = g.t
    out = [g.S(t((5,)), 0), g.S(t((3, 4)), 1), g.S(t((3, 4)), 0), g.S(t(()), 0), g.S(t((0, 3)), 1),
           g.S(t((4, 5), "T"), 1), g.S(t((2, 3, 4), "P"), 2), g.S(t((3, 4), "E"), 0), g.S(t((3, 4)), dim=-1),
           g.S(t((4, 9), low=-2, high=2, integer=True), 1)]  # ties: the latest index
    if g.dtype in FLOATS:
        nan, inf = float("nan"), float("inf")
        out.append(g.S(t((2, 5), data=[1.0, nan, 5.0, nan, 2.0, -inf, 0.5, inf, 0.5, 3.0]), 1))
    return out


def _logcumsumexp_samples(g):
    t = g.t
    out = [g.S(t((5,)), 0), g.S(t((3, 4)), 1), g.S(t((3, 4)), 0), g.S(t(()), 0), g.S(t((0, 3)), 1),
           g.S(t((4, 5), "T"), 1), g.S(t((2, 3, 4), "P"), 2), g.S(t((3, 4), "E"), 0), g.S(t((5, 300)), 1)]
    if g.dtype in FLOATS:
        nan, inf = float("nan"), float("inf")
        out.append(g.S(t((3, 4), data=[-inf, -inf, 1.0, 2.0, inf, inf, 1.0, -inf, nan, 1.0, -60.0, 60.0]), 1))
    return out


def _sorted(g, shape, layout="C"):
    """Ascending rows (with repeats for the integer dtypes) along the last dim."""
    base = g.t(shape, low=-3, high=3)
    data = np.sort(base.numpy(), axis=-1) if shape else base.numpy()
    return g.t(shape, layout, data=np.swapaxes(data, -1, -2) if layout == "T" else data)


def _searchsorted_samples(g):
    t, s = g.t, lambda shape, layout="C": _sorted(g, shape, layout)  # noqa: E731
    out = [g.S(None, s((7,)), t((3, 4))), g.S(None, s((7,)), t((5,)), right=True), g.S(None, s((7,)), t(())),
           g.S(None, s((2, 6)), t((2, 3)), side="right"), g.S(None, s((2, 3, 6)), t((2, 3, 4)), out_int32=True),
           g.S(None, s((7,)), t((0,))), g.S(None, s((0,)), t((4,))), g.S(None, s((7,)), 1),
           g.S(None, s((7,)), t((3, 4), dtype="float64")), g.S(None, s((2, 6)), t((2, 5), "T"), side="left"),
           g.S(None, s((100,)), t((50,)))]
    if g.dtype not in ("bool",):
        seq = t((5,), data=[3, 1, 2, 0, 4])
        out.append(g.S(None, seq, t((4,)), sorter=g.idx([3, 1, 2, 0, 4])))
    if g.dtype in FLOATS:
        nan = float("nan")
        out.append(g.S(None, t((3,), data=[1.0, 2.0, nan]), t((3,), data=[nan, 2.0, 5.0])))
    return out


def _searchsorted_errors(g):
    t = g.t
    return [g.S(None, t((2, 3)), t((3, 1))), g.S(None, t((3,)), t((2,)), side="left", right=True),
            g.S(None, t((2, 3)), 1.0), g.S(None, t(()), t((2,))), g.S(None, t((3,)), t((2,)), sorter=g.idx([0, 1]))]


def _bucketize_samples(g):
    t, s = g.t, lambda shape: _sorted(g, shape)  # noqa: E731
    return [g.S(t((3, 4)), s((7,))), g.S(t((5,)), s((7,)), right=True), g.S(t(()), s((7,))),
            g.S(t((4, 5), "T"), s((3,)), out_int32=True), g.S(None, 1, s((5,))), g.S(t((0,)), s((4,)))]


def _scatter_reduce_samples(g):
    t, i = g.t, g.idx
    # values away from zero so that prod's gradient is defined
    v = lambda shape, layout="C": t(shape, layout, low=0.5, high=2) if g.dtype in FLOATS else t(shape, layout)  # noqa: E731
    out = []
    for red in ("sum", "prod", "mean", "amax", "amin"):
        out += [g.S(v((3, 4)), 1, i([[0, 0], [3, 1], [2, 2]]), v((3, 2)), red),
                g.S(v((3, 4)), 0, i([[0, 1, 2, 0], [0, 0, 0, 0]]), v((2, 4)), red, include_self=False),
                g.S(v((4, 5), "T"), 1, i(np.ones((4, 5))), v((4, 5), "T"), reduce=red),
                g.S(v(()), 0, i(0), v(()), red), g.S(v((3, 4)), 1, i(np.zeros((3, 0))), v((3, 2)), red)]
    return out


def _scatter_reduce_errors(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), 1, i([[0, 0]]), t((1, 2)), "maximum"), g.S(t((3, 4)), 1, i([[5, 0]]), t((1, 2)), "sum"),
            g.S(t((3, 4)), 1, i([[0, 0]]), t((1, 2), dtype="float64" if g.dtype != "float64" else "float32"), "sum")]


def _index_reduce_samples(g):
    t, i = g.t, g.idx
    v = lambda shape, layout="C": t(shape, layout, low=0.5, high=2) if g.dtype in FLOATS else t(shape, layout)  # noqa: E731
    out = []
    for red in ("prod", "mean", "amax", "amin"):
        out += [g.S(v((3, 4)), 0, i([0, 2, 0, 1]), v((4, 4)), red), g.S(v((3, 4)), 1, i([3, 3]), v((3, 2)), red, include_self=False),
                g.S(v((4, 5), "T"), 0, i([1]), v((1, 5)), reduce=red), g.S(v((3, 4)), 0, i(np.zeros(0)), v((0, 4)), red)]
    return out


def _index_reduce_errors(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), 0, i([0, 1]), t((2, 4)), "sum"), g.S(t((3, 4)), 0, i([0, 1]), t((3, 4)), "prod"),
            g.S(t((3, 4)), 0, i([0, 1]), t((2, 5)), "prod")]


def _mode_samples(g):
    t = g.t
    ties = lambda shape: t(shape, low=-2, high=2, integer=True)  # noqa: E731
    out = [g.S(ties((9,))), g.S(ties((3, 8)), 1), g.S(ties((3, 8)), 0), g.S(ties((2, 3, 6)), 2, True), g.S(t(())),
           g.S(ties((6, 5)), dim=0, keepdim=True), g.S(t((4, 5), "T", low=-1, high=1, integer=True), 1), g.S(t((1, 4)), 0)]
    return out  # (no NaN samples: torch's mode of a row with NaNs is not the most frequent value)


def _frexp_samples(g):
    t = g.t
    out = [g.S(t(s, lay)) for s, lay in ((( 5,), "C"), ((3, 4), "C"), ((), "C"), ((0,), "C"), ((4, 5), "T"))]
    nan, inf = float("nan"), float("inf")
    out.append(g.S(t((10,), data=[0.0, -0.0, 1.0, -3.5, 0.75, 1e-40, inf, -inf, nan, 1024.0])))
    return out


def _nextafter_samples(g):
    t, o = g.t, g.other
    nan, inf = float("nan"), float("inf")
    return [g.S(t((3, 4)), o((3, 4))), g.S(t((3, 1)), o((1, 4))), g.S(t(()), o(())), g.S(t((4, 5), "T"), o((5,))),
            g.S(t((8,), data=[0.0, -0.0, 1.0, -1.0, nan, 2.0, inf, 1.0]),
                t((8,), data=[1.0, -1.0, 1.0, 0.0, 0.0, nan, 0.0, inf])),
            g.S(t((3,)), o((3,), dtype="float64"))]


def _gradient_samples(g):
    t = g.t
    c = lambda vals: g.t((len(vals),), data=vals)  # noqa: E731
    return [g.S(t((5,))), g.S(t((3, 4))), g.S(t((3, 4)), spacing=2.0), g.S(t((3, 4)), dim=1), g.S(t((3, 4)), dim=[0]),
            g.S(t((3, 4)), spacing=[0.5, 2], edge_order=2), g.S(t((4, 5), "T"), spacing=(c([0.0, 1.0, 3.0, 4.5]),), dim=0),
            g.S(t((3, 5)), spacing=[c([0.0, 0.5, 1.0]), c([0.0, 1.0, 1.5, 3.0, 4.0])], edge_order=2), g.S(t((2, 3, 4)), dim=(0, 2))]


def _gradient_errors(g):
    t = g.t
    return [g.S(t((1, 4))), g.S(t((3, 4)), spacing=[1.0]), g.S(t((2, 4)), edge_order=2), g.S(t((3, 4)), edge_order=3)]


COMPOSITE_OPS = [
    unary("deg2rad", ref=np.deg2rad),
    unary("rad2deg", ref=np.rad2deg),
    # d sinc/dx = (cos(pi x) - sinc(x)) / x cancels near the zeros of sinc: torch's and kindle's
    # float32 gradients are both up to 1e-3 off the float64 one there, in different places
    op("sinc", unary("sinc").samples, ALL, inplace="sinc_", inplace_function=True, ref=np.sinc, tol=TOL_TRANSC,
       kind="unary", grad_tol={"float32": (1e-4, 2e-3)}),
    # complex64 gradients: both libraries are 1.1e-4 from complex128 on a (131, 263) sample
    binary("logaddexp", FLOATS + COMPLEX, inplace=False, ref=np.logaddexp, scalars=(), tol=TOL_TRANSC,
           grad_tol={"complex64": (1e-4, 3e-4)}),
    binary("logaddexp2", FLOATS, inplace=False, ref=np.logaddexp2, scalars=(), tol=TOL_TRANSC),
    # torch's ldexp backward raises 2 to an integer `other` in integer arithmetic (2**-3 == 0)
    op("ldexp", _ldexp_samples, ALL, inplace="ldexp_", inplace_function=True, other_domain=(-4, 4), tol=TOL_TRANSC,
       kind="binary", torch_grad_wrong=lambda s: getattr(s.args[0], "dtype", "float") in INTS),
    binary("heaviside", ALL, scalars=()),
    binary("float_power", ALL, domain=(0.5, 3), other_domain=(-2, 2)),
    reduction("nanmean", FLOATS, kwargs=({"dtype": Dt("float64")},)),
    op("scalar_tensor", _scalar_tensor_samples, method=False, kind="creation"),
    op("tril_indices", _indices_creation("tril_indices"), ("int32", "int64"), method=False, kind="creation",
       errors=lambda g: [g.S(None, -1, 3), g.S(None, 3, -2)]),
    op("triu_indices", _indices_creation("triu_indices"), ("int32", "int64"), method=False, kind="creation"),
    op("vander", _vander_samples, method=False, errors=lambda g: [g.S(g.t((2, 2))), g.S(g.t((3,)), -1)]),
    op("dist", _dist_samples, FLOATS + COMPLEX, tol=TOL_TRANSC,
       errors=lambda g: [g.S(g.t((2, 3)), g.other((4,)))]),
    # torch's complex64 gradient through the inf-norm is NaN (complex128's is right): kindle's is
    # compared by gradcheck there
    op("renorm", _renorm_samples, FLOATS + COMPLEX, inplace="renorm_", tol=TOL_TRANSC, errors=_renorm_errors,
       torch_grad_wrong=lambda s: s.args[0] == float("inf") and "complex64" in str(s.input.dtype)),
    op("narrow_copy", _narrow_copy_samples, errors=lambda g: [g.S(g.t((4, 5)), 0, 3, 2), g.S(g.t((4, 5)), 2, 0, 1)]),
    op("rot90", _rot90_samples, errors=_rot90_errors),
    op("meshgrid", _meshgrid_samples, method=False, errors=_meshgrid_errors),
    op("cartesian_prod", _cartesian_prod_samples, method=False, errors=lambda g: [g.S(None, g.t((2, 2)), g.t((3,)))]),
    op("combinations", _combinations_samples, method=False,
       errors=lambda g: [g.S(g.t((2, 2))), g.S(g.t((3,)), -1)]),
    op("block_diag", _block_diag_samples, method=False, errors=lambda g: [g.S(None, g.t((2, 2, 2)))]),
    op("cross", _cross_samples, NUMERIC, errors=_cross_errors),
    op("diff", _diff_samples, errors=_diff_errors),
    op("trapezoid", _trapezoid_samples, NUMERIC, method=False, tol=ACC_TOL, errors=_trapezoid_errors),
    op("trapz", _trapezoid_samples, NUMERIC, method=False, tol=ACC_TOL),
    op("cumulative_trapezoid", _trapezoid_samples, NUMERIC, method=False, tol=ACC_TOL, errors=_trapezoid_errors),
    op("cdist", _cdist_samples, F32_64, method=False, tol={**ACC_TOL, "float32": (1e-4, 1e-4)}, errors=_cdist_errors),
    op("histc", _histc_samples, FLOATS, errors=_histc_errors),
    op("repeat_interleave", _repeat_interleave_samples, errors=_repeat_interleave_errors),
    op("tensordot", _tensordot_samples, NUMERIC, method=False, kind="matmul", tol={"float32": (1e-5, 1e-5),
       "float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2)}, domain=(-1, 1), errors=_tensordot_errors),
    op("quantile", _quantile_samples, F32_64, kind="reduction", errors=_quantile_errors),
    op("nanquantile", _quantile_samples, F32_64, kind="reduction", errors=_quantile_errors),
    op("cummax", _cum_extreme_samples, kind="reduction", errors=lambda g: [g.S(g.t((3, 4)), 2)]),
    op("cummin", _cum_extreme_samples, kind="reduction", errors=lambda g: [g.S(g.t((3, 4)), 2)]),
    op("logcumsumexp", _logcumsumexp_samples, FLOATS, kind="reduction", tol=TOL_TRANSC,
       errors=lambda g: [g.S(g.t((3, 4)), 2)]),
    op("searchsorted", _searchsorted_samples, NUMERIC, method=False, kind="index", errors=_searchsorted_errors),
    op("bucketize", _bucketize_samples, NUMERIC, method=False, kind="index",
       errors=lambda g: [g.S(g.t((3,)), g.t((2, 2)))]),
    op("scatter_reduce", _scatter_reduce_samples, ALL, inplace="scatter_reduce_", kind="index",
       tol={"float16": (2e-3, 1e-3), "bfloat16": (2e-2, 1e-2)}, errors=_scatter_reduce_errors),
    op("index_reduce", _index_reduce_samples, ALL, inplace="index_reduce_", kind="index",
       tol={"float16": (2e-3, 1e-3), "bfloat16": (2e-2, 1e-2)}, errors=_index_reduce_errors),
    op("mode", _mode_samples, ALL, kind="reduction", errors=lambda g: [g.S(g.t((3, 4)), 2)]),
    op("frexp", _frexp_samples, FLOATS, errors=lambda g: [g.S(g.t((3,), dtype="int64"))]),
    op("nextafter", _nextafter_samples, FLOATS, inplace="nextafter_", kind="binary"),
    op("gradient", _gradient_samples, FLOATS + ("int8", "int16", "int32", "int64"), method=False, tol={"float32": (1e-5, 1e-5), "float16": (2e-3, 1e-3),
       "bfloat16": (2e-2, 1e-2)}, errors=_gradient_errors),
    op("kthvalue", _kthvalue_samples, NUMERIC, kind="reduction",
       errors=lambda g: [g.S(g.t((3, 4)), 5), g.S(g.t((3, 4)), 0), g.S(g.t((3, 0)), 1), g.S(g.t((3, 4)), 1, 2)]),
    op("median", _median_samples, NUMERIC, kind="reduction", errors=_median_errors),
    op("nanmedian", _median_samples, NUMERIC, kind="reduction", errors=_median_errors),
]

