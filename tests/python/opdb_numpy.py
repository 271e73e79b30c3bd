"""The op database's entries for the NumPy-style ops and aliases of csrc/ops/composite_numpy.cpp
(ravel, atleast_nd, tensor_split, isin, gcd, cov, the *_scatter family, unique_consecutive,
histogram, ...) and their Python-level forms (python/kindle/_functions.py). Imported by opdb.py.
"""
from __future__ import annotations

import numpy as np

import opdb
from opdb import (ALL, COMPLEX, F32_64, FLOATS, INTS, NUMERIC, Dt, binary, op, unary)

MM_TOL = {"float32": (1e-5, 1e-5), "float16": (1e-3, 1e-2), "bfloat16": (1.6e-2, 5e-2)}
COV_TOL = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}
INTEGRAL = INTS  # gcd / lcm: integer kernels only (torch: not implemented for floats and bool)


def _shape_cases(g):
    t = g.t
    return [g.S(t(())), g.S(t((3,))), g.S(t((3, 4))), g.S(t((2, 3, 4))), g.S(t((2, 3, 4, 5))), g.S(t((4, 5), "T")),
            g.S(t((0,))), g.S(t((3, 4), "S")), g.S(t((2, 3, 4), "P"))]


def _atleast_samples(g):
    t = g.t
    return _shape_cases(g) + [g.S(None, t(()), t((3,)), t((2, 3))), g.S(None, [t((3,)), t((2, 3, 4))]),
                              g.S(None, (t(()),))]


def _tensor_split_samples(g):
    t = g.t
    ix = lambda v: g.idx(v)  # noqa: E731
    return [g.S(t((7,)), 3), g.S(t((7, 4)), 2, 1), g.S(t((7,)), [1, 5]), g.S(t((7,)), (2, 2, 9)),
            g.S(t((7,)), [-2, 3]), g.S(t((4, 7)), [0, 7], dim=1), g.S(t((5, 4), "T"), 4, -1), g.S(t((0, 3)), 2),
            g.S(t((7,)), ix(3)), g.S(t((7,)), ix([1, 4])), g.S(t((6,)), sections=4), g.S(t((6,)), indices=[2])]


def _tensor_split_errors(g):
    t = g.t
    return [g.S(t(()), 2), g.S(t((5,)), 0), g.S(t((5,)), 2, 1), g.S(t((5,)), g.idx([[1]])),
            g.S(t((5,)), g.idx([1], dtype="int32"))]


def _hsplit_samples(g):
    t = g.t
    return [g.S(t((6,)), 3), g.S(t((3, 6)), 2), g.S(t((3, 6)), [1, 4]), g.S(t((2, 4, 3)), [3]),
            g.S(t((4, 6), "T"), 2)]


def _vsplit_samples(g):
    t = g.t
    return [g.S(t((6, 3)), 3), g.S(t((6, 3)), [1, 4]), g.S(t((4, 2, 3)), 2), g.S(t((6, 4), "T"), 2)]


def _dsplit_samples(g):
    t = g.t
    return [g.S(t((2, 3, 6)), 3), g.S(t((2, 3, 6)), [1, 4]), g.S(t((2, 3, 4, 2), "P"), 2)]


def _split_errors(min_dim):
    def gen(g):
        t = g.t
        low = g.S(t((6,) * (min_dim - 1) if min_dim > 1 else ()), 2)
        return [low, g.S(t((6,) * max(min_dim, 3)), 4)]
    return gen


def _stack_samples(g):
    t = g.t
    return [g.S([t((3,)), t((3,))]), g.S([t(()), t(())]), g.S([t((2, 3)), t((2, 1))]), g.S([t((3,)), t((3, 2))]),
            g.S([t((4, 5), "T"), t((4, 5), "S")]), g.S([t((2, 3)), t((2, 3), dtype="int64")]),
            g.S([t((2, 3, 4)), t((2, 3, 1))])]


def _row_stack_samples(g):
    t = g.t
    return [g.S([t((3,)), t((3,))]), g.S([t(()), t(())]), g.S([t((2, 3)), t((1, 3))]), g.S([t((3,)), t((2, 3))]),
            g.S([t((4, 5), "T"), t((4, 5), "S")]), g.S([t((2, 3)), t((2, 3), dtype="int64")])]


def _dstack_samples(g):
    t = g.t
    return [g.S([t((3,)), t((3,))]), g.S([t(()), t(())]), g.S([t((2, 3)), t((2, 3))]),
            g.S([t((2, 3, 1)), t((2, 3, 2))]), g.S([t((4, 5), "T"), t((4, 5), "S")]),
            g.S([t((2, 3)), t((2, 3), dtype="int64")])]


def _ravel_samples(g):
    return _shape_cases(g) + [g.S(g.t((3, 4), "E"))]


def _msort_samples(g):
    t = g.t
    return [g.S(t((5,))), g.S(t((4, 3))), g.S(t((4, 5), "T")), g.S(t((2, 3, 4), "P")), g.S(t(())), g.S(t((0, 2)))]


def _diagflat_samples(g):
    t = g.t
    return [g.S(t((3,))), g.S(t((2, 2))), g.S(t((3,)), 1), g.S(t((2, 3)), -2), g.S(t(())), g.S(t((0,))),
            g.S(t((4, 5), "T"), offset=1)]


def _isin_samples(g):
    t = lambda shape, layout="C", dtype=None: g.t(shape, layout, dtype=dtype, low=-4, high=4, integer=True)  # noqa: E731
    out = [g.S(None, t((3, 4)), t((5,))), g.S(None, t((3, 4)), t((2, 3))), g.S(None, t(()), t((4,))),
           g.S(None, t((4, 5), "T"), t((3,), "S")), g.S(None, t((3, 4)), t((0,))), g.S(None, t((0,)), t((3,))),
           g.S(None, t((3, 4)), t((5,)), invert=True), g.S(None, t((3, 4)), t((5,)), assume_unique=True),
           g.S(None, t((3, 4)), t((5,), dtype="int64"))]
    if g.dtype != "bool":
        out += [g.S(None, t((3, 4)), 2), g.S(None, 1, t((4,)))]
    return out


def _sum_to_size_samples(g):
    t = g.t
    return [g.S(t((3, 4)), 1, 4), g.S(t((3, 4)), (3, 1)), g.S(t((2, 3, 4)), 3, 4), g.S(t((2, 3, 4)), [1, 1]),
            g.S(t((3, 4)), 3, 4), g.S(t((4, 5), "T"), 5, 1), g.S(t((3, 4)), ()), g.S(t((2, 3, 4)), 1, 3, 1)]


# the in-place forms' samples (opdb.py), plus what only the out-of-place forms accept
def _index_copy_samples(g):
    return opdb._index_copy_samples(g) + [g.S(g.t((3, 4)), -1, g.idx([1]), g.t((3, 1), "E"))]


def _masked_scatter_samples(g):  # self broadcast to the mask's shape
    return opdb._masked_scatter_samples(g) + [g.S(g.t((4,)), g.mask((3, 4)), g.t((12,)))]


def _select_scatter_samples(g):
    t = g.t
    return [g.S(t((3, 4)), t((4,)), 0, 1), g.S(t((3, 4)), t((3,)), 1, -1), g.S(t((2, 3, 4), "P"), t((2, 4)), 1, 2),
            g.S(t((4, 5), "T"), t((4,), "S"), 1, 0), g.S(t((3,)), t(()), 0, 2)]


def _slice_scatter_samples(g):
    t = g.t
    return [g.S(t((6, 4)), t((2, 4)), 0, 1, 3), g.S(t((6, 4)), t((6, 2)), 1, 0, 4, 2), g.S(t((6, 4)), t((6, 4))),
            g.S(t((6, 4)), t((3, 4)), start=-3), g.S(t((4, 5), "T"), t((4, 2)), 1, 3, None),
            g.S(t((6, 4)), t((0, 4)), 0, 4, 2)]


def _diagonal_scatter_samples(g):
    t = g.t
    return [g.S(t((3, 4)), t((3,))), g.S(t((3, 4)), t((3,)), 1), g.S(t((3, 4)), t((2,)), -1),
            g.S(t((2, 3, 4)), t((2, 3)), 0, 1, 2), g.S(t((4, 5), "T"), t((4,), "S"))]


def _scatter_errors(name):
    def gen(g):
        t = g.t
        if name == "select_scatter":
            return [g.S(t((3, 4)), t((3,)), 0, 1), g.S(t((3, 4)), t((4,)), 0, 3)]
        if name == "slice_scatter":
            return [g.S(t((6, 4)), t((3, 4)), 0, 1, 3)]
        return [g.S(t((3, 4)), t((4,)))]
    return gen


def _put_samples(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), i([0, 5, 11]), t((3,))), g.S(t((3, 4)), i([[0, -1], [2, 3]]), t((2, 2))),
            g.S(t((4, 5), "T"), i([1, 19]), t((2,))), g.S(t((3, 4)), i([]), t((0,))), g.S(t(()), i([0]), t((1,))),
            g.S(t((3, 4)), i([1, 1, 2]), t((3,)), True), g.S(t((3, 4)), i([2, 2]), t((2,)), accumulate=True)]


def _put_errors(g):
    t, i = g.t, g.idx
    return [g.S(t((3, 4)), i([12]), t((1,))), g.S(t((3, 4)), i([-13]), t((1,))), g.S(t((3, 4)), i([0, 1]), t((1,))),
            g.S(t((3, 4)), i([0], dtype="int32"), t((1,)))]


def _fill_diagonal_samples(g):
    t = g.t
    v = True if g.dtype == "bool" else (5 if g.dtype in INTS else -2.5)
    return [g.S(t((3, 3)), v), g.S(t((3, 5)), v), g.S(t((5, 3)), v), g.S(t((7, 3)), v, True), g.S(t((7, 3)), v, wrap=False),
            g.S(t((3, 3, 3)), v), g.S(t((4, 5), "T"), v), g.S(t((6, 4), "S"), v, True), g.S(t((0, 2)), v)]


def _fill_diagonal_errors(g):
    return [g.S(g.t((3,)), 1), g.S(g.t((3, 3, 2)), 1)]


def _addr_samples(g):
    t = g.t
    return [g.S(t((3, 4)), t((3,)), t((4,))), g.S(t((4,)), t((3,)), t((4,))), g.S(t(()), t((3,)), t((4,))),
            g.S(t((3, 4)), t((3,)), t((4,)), beta=2, alpha=3), g.S(t((3, 4)), t((3,)), t((4,)), beta=0),
            g.S(t((4, 3), "T"), t((3,), "S"), t((4,))), g.S(t((0, 4)), t((0,)), t((4,)))]


def _addbmm_samples(g):
    t = g.t
    # (a broadcast input is in test_composite_numpy.py: torch's addbmm_ resizes such an input)
    return [g.S(t((3, 5)), t((2, 3, 4)), t((2, 4, 5))),
            g.S(t((3, 5)), t((2, 3, 4)), t((2, 4, 5)), beta=2, alpha=-1), g.S(t((3, 5)), t((0, 3, 4)), t((0, 4, 5))),
            g.S(t((5, 3), "T"), t((2, 4, 3), "T"), t((2, 4, 5), "S")), g.S(t((3, 5)), t((2, 3, 4)), t((2, 4, 5)), beta=0)]


def _matmul_errors(name):
    def gen(g):
        t = g.t
        if name == "addr":
            return [g.S(t((3, 4)), t((3, 1)), t((4,))), g.S(t((2, 4)), t((3,)), t((4,)))]
        return [g.S(t((3, 5)), t((3, 4)), t((2, 4, 5))), g.S(t((3, 5)), t((2, 3, 4)), t((3, 4, 5))),
                g.S(t((3, 5)), t((2, 3, 4)), t((2, 3, 5)))]
    return gen


def _cov_samples(g):
    t = g.t
    fw = g.t((5,), dtype="int64", low=0, high=3, integer=True)
    aw = g.t((5,), dtype="float64" if g.dtype == "float64" else "float32", low=0.1, high=2)
    return [g.S(t((3, 5))), g.S(t((5,))), g.S(t((3, 5)), correction=0), g.S(t((3, 5)), correction=2),
            g.S(t((3, 5)), fweights=fw), g.S(t((3, 5)), aweights=aw), g.S(t((3, 5)), fweights=fw, aweights=aw),
            g.S(t((5, 3), "T")), g.S(t((2, 5), "S"), correction=1, aweights=aw), g.S(t((1, 5)))]


def _cov_errors(g):
    t = g.t
    return [g.S(t((2, 3, 4))), g.S(t((3, 5)), fweights=g.t((5,), dtype="float32")),
            g.S(t((3, 5)), aweights=g.t((4,), dtype="float32")), g.S(t((3, 5)), fweights=g.idx([1, 2, -1, 1, 1]))]


def _corrcoef_samples(g):
    t = g.t
    return [g.S(t((3, 5))), g.S(t((5,))), g.S(t((5, 3), "T")), g.S(t((2, 6), "S"))]


def _histogram_samples(g):
    t = g.t
    edges = g.t((5,), data=[-1.0, -0.25, 0.0, 0.5, 1.0], nograd=True)
    return [g.S(t((20,), low=-1, high=1)), g.S(t((4, 5), low=-1, high=1), 4),
            g.S(t((4, 5), low=-1, high=1), 6, range=(-0.5, 0.5)), g.S(t((20,), low=-1, high=1), edges),
            g.S(t((20,), low=-1, high=1), 5, weight=t((20,), low=0, high=2)),
            g.S(t((20,), low=-1, high=1), 5, density=True), g.S(t((20,), low=-1, high=1), edges, density=True),
            g.S(t((0,))), g.S(t((4, 5), "T", low=-1, high=1), 3)]


def _histogram_errors(g):
    t = g.t
    other = "float32" if g.dtype == "float64" else "float64"
    return [g.S(t((5,)), 0), g.S(t((5,)), 3, range=(1.0, 0.0)), g.S(t((5,)), g.t((4,), dtype=other))]


def _unique_consecutive_samples(g):
    t = lambda shape, layout="C": g.t(shape, layout, low=-1, high=1, integer=True)  # noqa: E731
    return [g.S(t((10,))), g.S(t((3, 4))), g.S(t(())), g.S(t((0,))), g.S(t((4, 5), "T")),
            g.S(t((10,)), return_inverse=True), g.S(t((10,)), return_counts=True), g.S(t((3, 4), "S"), True, True),
            g.S(t((6, 2)), dim=0, return_counts=True), g.S(t((2, 6)), dim=1, return_inverse=True),
            g.S(g.t((6, 2), data=[[1, 1], [1, 1], [0, 1], [0, 1], [1, 1], [0, 0]]), True, True, 0)]


def _unravel_index_samples(g):
    def i(v):
        v = np.asarray(v)
        return g.t(v.shape, data=v, nograd=True)
    return [g.S(None, i([0, 5, 11]), (3, 4)), g.S(None, i(7), (2, 2, 2)), g.S(None, i([[1, 2], [3, 4]]), [5]),
            g.S(None, i([-1, 13]), (3, 4)), g.S(None, i([]), (3, 4)),
            g.S(None, g.t((4, 5), "T", low=0, high=11, integer=True), (3, 4))]


def _unravel_index_errors(g):
    return [g.S(None, g.t((2,), dtype="float32"), (3, 4)), g.S(None, g.idx([1]), (3, -1))]


def _gcd_samples(g):
    t = lambda shape, layout="C": g.t(shape, layout, low=-30, high=30, integer=True)  # noqa: E731
    return [g.S(t((3, 4)), t((3, 4))), g.S(t((3, 4)), t((4,))), g.S(t(()), t(())), g.S(t((4, 5), "T"), t((4, 5), "S")),
            g.S(t((0, 3)), t((3,))), g.S(t((3, 4)), g.t((3, 4), dtype="int64", low=0, high=9, integer=True))]


def _gcd_errors(g):
    return [g.S(g.t((3,), dtype="float32"), g.t((3,), dtype="float32")),
            g.S(g.t((3,), dtype="bool"), g.t((3,), dtype="bool"))]


def _chain_matmul_samples(g):
    t = g.t
    return [g.S(None, t((2, 3)), t((3, 4))), g.S(None, t((2, 3)), t((3, 4)), t((4, 2))), g.S(None, t((3, 3)))]


def _atleast(name):
    return op(name, _atleast_samples, ALL + COMPLEX, method=False, view=True, kind="shape")


NUMPY_STYLE_OPS = [
    unary("absolute", NUMERIC + COMPLEX, inplace_function=False, ref=np.abs),
    unary("negative", NUMERIC + COMPLEX, ref=np.negative),
    unary("fix", NUMERIC, ref=np.trunc),
    unary("positive", NUMERIC + COMPLEX, inplace=False, ref=np.positive),
    unary("isposinf", ALL, inplace=False, ref=np.isposinf),
    unary("isneginf", ALL, inplace=False, ref=np.isneginf),
    op("gcd", _gcd_samples, INTEGRAL, inplace="gcd_", inplace_function=True, kind="binary", ref=np.gcd,
       errors=_gcd_errors),
    op("lcm", _gcd_samples, INTEGRAL, inplace="lcm_", inplace_function=True, kind="binary", ref=np.lcm,
       errors=_gcd_errors),
    op("isin", _isin_samples, NUMERIC, method=False, kind="index",
       errors=lambda g: [g.S(None, g.t((3,), dtype="complex64"), g.t((2,), dtype="complex64"))]),
    op("ravel", _ravel_samples, ALL + COMPLEX, kind="shape", layout_sensitive=True),
    op("msort", _msort_samples, ALL, kind="reduction"),
    op("diagflat", _diagflat_samples, ALL + COMPLEX, kind="shape"),
    _atleast("atleast_1d"), _atleast("atleast_2d"), _atleast("atleast_3d"),
    op("tensor_split", _tensor_split_samples, ALL, view=True, kind="shape", errors=_tensor_split_errors),
    op("hsplit", _hsplit_samples, ALL, view=True, kind="shape", errors=_split_errors(1)),
    op("vsplit", _vsplit_samples, ALL, view=True, kind="shape", errors=_split_errors(2)),
    op("dsplit", _dsplit_samples, ALL, view=True, kind="shape", errors=_split_errors(3)),
    op("column_stack", _stack_samples, ALL, method=False, kind="shape",
       errors=lambda g: [g.S([g.t((2, 3)), g.t((3, 3))])]),
    op("row_stack", _row_stack_samples, ALL, method=False, kind="shape"),
    op("dstack", _dstack_samples, ALL, method=False, kind="shape",
       errors=lambda g: [g.S([g.t((2, 3)), g.t((3, 3))])]),
    op("sum_to_size", _sum_to_size_samples, ALL, function=False, kind="reduction",
       tol={"float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2)},
       errors=lambda g: [g.S(g.t((3, 4)), 2, 4), g.S(g.t((3, 4)), 1, 3, 4)]),
    op("index_copy", _index_copy_samples, ALL, kind="index",
       errors=lambda g: [g.S(g.t((3, 4)), 0, g.idx([3]), g.t((1, 4))), g.S(g.t((3, 4)), 0, g.idx([0, 1]), g.t((3, 4)))]),
    op("index_fill", opdb._index_fill_samples, ALL, kind="index",
       errors=lambda g: [g.S(g.t((3, 4)), 0, g.idx([3]), 1), g.S(g.t((3, 4)), 0, g.idx([0]), g.t((2,)))]),
    op("masked_scatter", _masked_scatter_samples, ALL, kind="index",
       errors=lambda g: [g.S(g.t((3, 4)), g.t((3, 4), dtype="bool", data=np.ones((3, 4), bool)), g.t((1,))),
                         g.S(g.t((3, 4)), g.t((3, 4), dtype="int64"), g.t((12,)))]),
    op("select_scatter", _select_scatter_samples, ALL, kind="index", errors=_scatter_errors("select_scatter")),
    op("slice_scatter", _slice_scatter_samples, ALL, kind="index", errors=_scatter_errors("slice_scatter")),
    op("diagonal_scatter", _diagonal_scatter_samples, ALL, kind="index", errors=_scatter_errors("diagonal_scatter")),
    op("put", _put_samples, ALL, inplace="put_", kind="index", tol={"float16": (1e-3, 1e-2), "bfloat16": (1.6e-2, 7e-2)},
       errors=_put_errors),
    op("fill_diagonal_", _fill_diagonal_samples, ALL, function=False, kind="index", errors=_fill_diagonal_errors),
    op("addr", _addr_samples, ALL, inplace="addr_", tol=MM_TOL, domain=(-1, 1), kind="matmul",
       errors=_matmul_errors("addr")),
    op("addbmm", _addbmm_samples, NUMERIC, inplace="addbmm_", tol=MM_TOL, domain=(-1, 1), kind="matmul",
       errors=_matmul_errors("addbmm")),
    op("cov", _cov_samples, NUMERIC, tol=COV_TOL, kind="reduction", errors=_cov_errors),
    op("corrcoef", _corrcoef_samples, NUMERIC, tol=COV_TOL, kind="reduction"),
    op("histogram", _histogram_samples, F32_64, kind="reduction", errors=_histogram_errors),
    op("unique_consecutive", _unique_consecutive_samples, ALL, kind="reduction"),
    op("unravel_index", _unravel_index_samples, INTS, method=False, kind="index", errors=_unravel_index_errors),
]
