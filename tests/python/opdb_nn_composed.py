"""The op database's entries for the torch.nn.functional ops composed in Python
(python/kindle/nn/_composed.py and grid_sample.py): shrinkage, local_response_norm, the
soft-margin losses, pdist, max_unpool, affine_grid and grid_sample. Imported by opdb.py."""
from __future__ import annotations

import numpy as np

from opdb import F32_64, FLOATS, INTS, OpInfo, unary_samples
from opdb_nn import ACC, HALF_LOOSE, REDUCTIONS, fop

GRID_TOL = {"float32": (1e-5, 2e-5), "float64": (1e-7, 1e-7), "float16": (5e-3, 1e-2), "bfloat16": (3e-2, 6e-2)}


def _has_nan(s):
    a = s.input.numpy() if hasattr(s.input, "numpy") else None
    return a is not None and a.dtype.kind == "f" and bool(np.isnan(a).any())


def _shrink(name):
    # at NaN, torch's gradient is 0 from its vectorised float64 kernel and the incoming gradient
    # from its float32 one; Kindle's is 0 (gradcheck checks it elsewhere)
    return fop(name, unary_samples((0.3,), {"lambd": 1.0}, (0.0,)), FLOATS, tol=HALF_LOOSE, kind="nn_unary",
               errors=(lambda g: [g.S(g.t((3,)), -1.0)]) if name == "softshrink" else None,
               torch_grad_wrong=_has_nan)


def _lrn_samples(g):
    t = g.t
    return [g.S(t((2, 5, 4)), 3), g.S(t((2, 6, 3, 4)), 2), g.S(t((2, 4, 3, 2, 2)), 3, 1e-3, 0.5, 2.0),
            g.S(t((1, 3, 4), "S"), 5, alpha=0.1), g.S(t((2, 3, 4, 5), "P"), 4), g.S(t((0, 3, 4)), 2)]


def _soft_margin_samples(g):
    t = g.t
    pm1 = lambda shape, layout="C": g.t(shape, layout, low=-1, high=1, integer=True, nograd=True)  # noqa: E731
    out = [g.S(t((3, 4)), pm1((3, 4)), reduction=r) for r in REDUCTIONS]
    return out + [g.S(t((4, 5), "T"), pm1((4, 5), "S")), g.S(t(()), pm1(())), g.S(t((0,)), pm1((0,)))]


def _multilabel_soft_samples(g):
    t = g.t
    y = lambda shape, layout="C": g.t(shape, layout, low=0, high=1, integer=True, nograd=True)  # noqa: E731
    out = [g.S(t((3, 4)), y((3, 4)), reduction=r) for r in REDUCTIONS]
    return out + [g.S(t((3, 4)), y((3, 4)), weight=g.t((4,), low=0.5, high=2, nograd=True)), g.S(t((5,)), y((5,))),
                  g.S(t((4, 5), "T"), y((4, 5), "S"))]


def _pdist_samples(g):
    t = g.t
    return [g.S(t((4, 3))), g.S(t((5, 2)), 1), g.S(t((4, 3)), 3.5), g.S(t((4, 3)), float("inf")), g.S(t((1, 3))),
            g.S(t((5, 4), "T")), g.S(t((4, 3)), p=0)]


def _rrelu_samples(g):
    t = g.t
    return [g.S(t((3, 4))), g.S(t((3, 4)), 0.1, 0.3), g.S(t((2, 3, 4)), training=False), g.S(t(())),
            g.S(t((4, 5), "T"), 0.2, 0.2), g.S(t((0, 3)))]


def _unpool_errors(n):
    def gen(g):
        t = g.t
        x = t((1, 2) + (2,) * n)
        idx = g.idx(np.zeros((1, 2) + (2,) * n, dtype=np.int64))
        return [g.S(x, g.idx(np.zeros((1, 2) + (2,) * n), dtype="int32"), 2),       # indices not int64
                g.S(x, g.idx(np.zeros((1, 2) + (3,) * n, dtype=np.int64)), 2),      # shapes differ
                g.S(x, g.idx(np.full((1, 2) + (2,) * n, 99, dtype=np.int64)), 2),   # index out of the output
                g.S(x, idx, 2, output_size=[9] * n),                                 # output_size too large
                g.S(x, idx, 2, output_size=[4] * (n + 1)),                           # wrong length
                g.S(t((2,) * n), g.idx(np.zeros((2,) * n, dtype=np.int64)), 2)]     # too few dims
    return gen


def _unpool_samples(n):
    def gen(g):
        rng = np.random.default_rng(n)
        cases = {1: [((2, 3, 4), 2, None, 0, None), ((1, 2, 3), 3, 2, 1, [6])],
                 2: [((2, 3, 2, 3), 2, None, 0, None), ((1, 2, 3, 2), (2, 3), (2, 2), (1, 0), None),
                     ((1, 1, 2, 2), 2, 2, 0, [1, 1, 5, 4])],
                 3: [((1, 2, 2, 2, 2), 2, None, 0, None)]}[n]
        out = []
        for shape, k, s, p, osz in cases:
            ks = (k,) * n if isinstance(k, int) else k
            st = ks if s is None else ((s,) * n if isinstance(s, int) else s)
            pd = (p,) * n if isinstance(p, int) else p
            size = [(shape[2 + d] - 1) * st[d] - 2 * pd[d] + ks[d] for d in range(n)]
            if osz is not None:
                size = list(osz[-n:])
            plane = int(np.prod(size))
            idx = np.stack([rng.choice(plane, size=int(np.prod(shape[2:])), replace=False)
                            for _ in range(shape[0] * shape[1])]).reshape(shape)
            kw = {"output_size": osz} if osz is not None else {}
            out.append(g.S(g.t(shape), g.idx(idx), k, s, p, **kw))
            if not out[1:]:  # the first case again, both tensors non-contiguous
                noncontig = g.S(g.t(shape, "S"), g.idx(idx, "S"), k, s, p, **kw)
        return out + [noncontig]
    return gen


def _affine_samples(g):
    t = g.t
    return [g.S(t((2, 2, 3)), (2, 3, 4, 5), False), g.S(t((2, 2, 3)), (2, 1, 3, 3), True),
            g.S(t((1, 3, 4)), (1, 2, 3, 2, 4), False), g.S(t((1, 3, 4)), [1, 1, 2, 2, 2], align_corners=True),
            g.S(t((2, 3, 2), "T"), (2, 3, 1, 4), False)]


def _affine_errors(g):
    t = g.t
    return [g.S(t((2, 2, 3)), (2, 3, 4, 5, 6), False), g.S(t((2, 3, 3)), (2, 3, 4, 5), False),
            g.S(t((2, 2, 3)), (2, 3, 4), False)]


def _grid_samples(g):
    t = g.t
    grid = lambda shape, layout="C": g.t(shape, layout, low=-1.2, high=1.2)  # noqa: E731
    out = []
    for mode in ("bilinear", "nearest", "bicubic"):
        for pad in ("zeros", "border", "reflection"):
            out.append(g.S(t((2, 3, 4, 5)), grid((2, 3, 2, 2)), mode, pad, mode == "nearest"))
    out += [g.S(t((1, 2, 3, 4, 5)), grid((1, 2, 2, 3, 3)), "bilinear", "zeros", False),
            g.S(t((1, 2, 3, 4, 5)), grid((1, 2, 2, 2, 3)), "nearest", "reflection", True),
            g.S(t((1, 2, 3, 4, 5)), grid((1, 1, 2, 2, 3)), "bilinear", "border", True),
            g.S(t((2, 3, 5, 4), "T"), grid((2, 2, 3, 2), "S"), align_corners=False)]
    return out


def _grid_sampler_samples(g):
    # torch.grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners): the enums
    t = g.t
    grid = lambda shape: g.t(shape, low=-1.2, high=1.2)  # noqa: E731
    out = [g.S(t((2, 3, 4, 5)), grid((2, 3, 2, 2)), mode, pad, bool(mode % 2)) for mode in range(3) for pad in range(3)]
    out += [g.S(t((1, 2, 3, 4, 5)), grid((1, 2, 2, 2, 3)), 0, 2, True),
            g.S(t((1, 2, 3, 4, 5)), grid((1, 1, 2, 2, 3)), 1, 1, False),
            g.S(t((2, 3, 5, 4), "T"), g.t((2, 2, 3, 2), "S", low=-1.2, high=1.2), 2, 1, False)]
    return out


def _grid_errors(g):
    t = g.t
    return [g.S(t((2, 3, 4, 5)), g.t((2, 3, 2, 3)), align_corners=False),
            g.S(t((2, 3, 4, 5)), g.t((1, 3, 2, 2)), align_corners=False),
            g.S(t((2, 3, 4, 5)), g.t((2, 3, 2, 2)), "foo", align_corners=False),
            g.S(t((1, 2, 3, 4, 5)), g.t((1, 2, 2, 2, 3)), "bicubic", align_corners=False)]


NN_COMPOSED_OPS = [
    _shrink("softshrink"),
    _shrink("hardshrink"),
    fop("local_response_norm", _lrn_samples, FLOATS, tol=ACC, dtypes_gap=INTS),
    fop("soft_margin_loss", _soft_margin_samples, FLOATS, tol=HALF_LOOSE, kind="nn_loss"),
    fop("multilabel_soft_margin_loss", _multilabel_soft_samples, FLOATS, tol=HALF_LOOSE, kind="nn_loss"),
    fop("pdist", _pdist_samples, F32_64, tol=ACC, errors=lambda g: [g.S(g.t((2, 3, 4))), g.S(g.t((3, 4)), -1.0)]),
    fop("max_unpool1d", _unpool_samples(1), FLOATS, errors=_unpool_errors(1)),
    fop("max_unpool2d", _unpool_samples(2), FLOATS, errors=_unpool_errors(2)),
    fop("max_unpool3d", _unpool_samples(3), FLOATS, errors=_unpool_errors(3)),
    # eval mode (the mean slope); the training draws are compared with torch's for a seed in
    # test_torch_names.py
    fop("rrelu", _rrelu_samples, FLOATS, errors=lambda g: [g.S(g.t((3, 4)), 0.5, 0.1),
                                                           g.S(g.t((3, 4)), 0.5, 0.1, True)]),
    fop("affine_grid", _affine_samples, FLOATS, tol=GRID_TOL, errors=_affine_errors),
    fop("grid_sample", _grid_samples, FLOATS, tol=GRID_TOL, errors=_grid_errors),
    OpInfo("grid_sampler", _grid_sampler_samples, FLOATS, method=False, tol=GRID_TOL, kind="nn",
           errors=lambda g: [g.S(g.t((2, 3, 4, 5)), g.t((1, 3, 2, 2)), 0, 0, False),
                             g.S(g.t((1, 2, 3, 4, 5)), g.t((1, 2, 2, 2, 3)), 2, 0, False)]),
]
