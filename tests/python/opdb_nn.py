"""The op database's torch.nn.functional part: an OpInfo (functional=True) for every public function
of kindle.nn.functional, called as `lib.nn.functional.<name>` for kindle and torch alike. Imported
by opdb.py (import opdb, not this module): the helpers come from there.

`op_names` maps an entry to the `variants: nn` ops of csrc/ops/ops.yaml it covers where the names
differ (F.unfold -> im2col, F.max_pool1d -> max_pool2d_with_indices, ...). The random ops
(dropout, alpha_dropout, dropout1d/2d) have deterministic samples here only (p=0, p=1,
training=False); their statistics are tested in test_nn_functional.py. Running statistics that
batch_norm / instance_norm / embedding(max_norm=) update in place are listed in `mutates` and
compared with torch's after the call; they are constants (nograd) for the autograd tests.
"""
from __future__ import annotations

import numpy as np

from opdb import (ALL, COMPLEX, EXTREMAL, F32_64, FINITE_EXTREMAL, PIECEWISE_EXTREMAL, FLOATS, INTS, LARGE, NUMERIC, SIGNED, Dt, OpInfo,
                  layout_of, unary_samples)

# float32 tolerances for ops that accumulate (convolutions, norms, losses): other summation orders
ACC = {"float32": (1e-5, 1e-5), "float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2)}
# normalising a handful of values: the float32 gradient is ill-conditioned (torch's own float32
# gradient is off from the float64 one by 3e-4 on a (3, 4) layer_norm sample; kindle's less)
NORM_GRAD_TOL = {"float32": (1e-3, 1e-4)}
# gradients of convolutions: sums of hundreds of terms that cancel (torch's own float32 weight
# gradient is 8e-5 off the float64 one on the (2, 16, 24, 24) sample)
CONV_GRAD_TOL = {"float32": (1e-4, 1e-4), "complex64": (1e-4, 1e-4)}
# a complex convolution is four real ones combined ((a + ib)(c + id) = ac - bd + i(ad + bc)): the
# subtraction of float32 sums of hundreds of products leaves errors of a few 1e-5 (against a
# complex128 reference, a weight gradient of magnitude 190: kindle's complex64 is off by 5.6e-5,
# torch's by 3.4e-4)
CONV_ACC = {"float32": (1e-5, 1e-5), "float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "complex64": (1e-5, 5e-5)}
# torch's half-precision transposed convolution rounds differently with the machine's vector width
# (its AVX2 build differs from its AVX-512 build by 1-2 ulps on a few values): HALF_LOOSE below
CONV_T_TOL = {"float32": (1e-5, 1e-5), "float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2), "complex64": (1e-5, 5e-5)}
# half precision through several rounding steps (norms, losses, attention): torch computes some of
# them in float32 internally, others in the half type
HALF_LOOSE = {"float32": (1e-5, 1e-5), "float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2)}


def fop(name, samples, dtypes=FLOATS, inplace=False, **kw):
    """A torch.nn.functional entry. dtypes: those torch supports (for the op's first sample); the
    ones of them kindle does not support yet go in dtypes_gap (listed in the report, not tested
    further); inplace=True: the function takes inplace=True."""
    gap = kw.get("dtypes_gap", ())
    dtypes = tuple(d for d in dtypes if d not in gap)
    return OpInfo(name, samples, dtypes, function=True, method=False, functional=True,
                  inplace="inplace" if inplace else None, inplace_method=bool(inplace), kind=kw.pop("kind", "nn"),
                  **kw)


# ---------------------------------------------------------------------------------------------
# activations

def act(name, dtypes=FLOATS, inplace=True, kwargs=(), args=(), extremal=EXTREMAL, errors=None, tol=None,
        op_names=None):
    return fop(name, unary_samples(*kwargs, extremal=extremal, args=args), dtypes, inplace=inplace,
               errors=errors, tol=tol or {}, op_names=op_names, kind="nn_unary")


def _softmax_samples(g):
    t = g.t
    out = [g.S(t((3, 4)), 1), g.S(t((3, 4)), 0), g.S(t((3, 4)), dim=-1), g.S(t(()), 0), g.S(t((0, 3)), 1),
           g.S(t((2, 3, 4)), 1), g.S(t((4, 5), "T"), 1), g.S(t((4, 5), "T"), 0), g.S(t((2, 3, 4), "P"), 2),
           g.S(t((3, 4), "E"), 0), g.S(t(LARGE), 1), g.S(t((3, 4), low=-80, high=80), 1),
           g.S(t((3, 4)), 1, dtype=Dt("float64")), g.S(t((3, 4)), dim=0, dtype=Dt("float32")),
           # implicit dim (deprecated; dim 0 for 0-, 1- and 3-d input, else 1)
           g.S(t((5,))), g.S(t((3, 4))), g.S(t((2, 3, 4))), g.S(t((2, 3, 2, 2)))]
    if g.dtype in FLOATS:
        out.append(g.S(t((2, 7), data=EXTREMAL), 1))
        out.append(g.S(t((2, 7), data=[float("-inf")] * 7 + [0.0] * 7), 1))
    return out


def _softmax_errors(g):
    return [g.S(g.t((3, 4)), 2), g.S(g.t((3, 4)), -3)]


def _glu_samples(g):
    t = g.t
    return [g.S(t((3, 4))), g.S(t((4, 6)), 0), g.S(t((2, 4, 6)), 1), g.S(t((2, 3, 4)), dim=-1), g.S(t((6, 4), "T"), 0),
            g.S(t((4, 6), "S"), 1), g.S(t((0, 4))), g.S(t((2,))), g.S(t((2, 3, 4), "P"), 0)]


def _prelu_samples(g):
    t = g.t
    return [g.S(t((2, 3, 4)), t((3,))), g.S(t((2, 3)), t((1,))), g.S(t((5,)), t((1,))), g.S(t((2, 3)), t((3,))),
            g.S(t((2, 3, 2, 2)), t((3,))), g.S(t((2, 3, 4), "P"), t((3,), "S")), g.S(t((4, 5), "T"), t((5,))),
            g.S(t((2, 3, 4)), weight=t((1,))), g.S(t((0, 3)), t((3,))), g.S(t(LARGE), t((LARGE[1],)))]


# ---------------------------------------------------------------------------------------------
# linear

def _linear_samples(g):
    t = lambda s, lay="C": g.t(s, lay, low=-1, high=1)  # noqa: E731
    return [g.S(t((3, 4)), t((5, 4)), t((5,))), g.S(t((3, 4)), t((5, 4))), g.S(t((4,)), t((5, 4)), t((5,))),
            g.S(t((2, 3, 4)), t((5, 4)), bias=t((5,))), g.S(t((3, 4)), t((4,))),
            g.S(t((5, 4), "T"), t((3, 4), "T"), t((3,), "S")), g.S(t((2, 3, 4), "P"), t((3, 4), "S")),
            g.S(t((3, 4)), t((5, 4), "E"), t((5,), "E")), g.S(t((0, 4)), t((5, 4)), t((5,))),
            g.S(t((3, 0)), t((5, 0)), t((5,))), g.S(t((3, 4)), t((5, 4)), t((1,))),
            g.S(t((64, 48)), t((40, 48)), t((40,)))]


def _linear_errors(g):
    return [g.S(g.t((3, 4)), g.t((5, 3))), g.S(g.t((3, 4)), g.t((5, 4)), g.t((4,)))]


def _bilinear_samples(g):
    t = lambda s, lay="C": g.t(s, lay, low=-1, high=1)  # noqa: E731
    return [g.S(t((3, 4)), t((3, 2)), t((2, 4, 2)), t((2,))), g.S(t((3, 2)), t((3, 3)), t((4, 2, 3))),
            g.S(t((2, 3, 2)), t((2, 3, 3)), t((2, 2, 3)), t((2,))), g.S(t((3, 4), "T"), t((3, 2), "S"), t((2, 4, 2), "P")),
            g.S(t((0, 2)), t((0, 2)), t((3, 2, 2)), t((3,)))]


def _bilinear_errors(g):
    return [g.S(g.t((3, 4)), g.t((3, 5)), g.t((2, 4, 4))), g.S(g.t((3, 4)), g.t((2, 5)), g.t((2, 4, 5)))]


# ---------------------------------------------------------------------------------------------
# losses

REDUCTIONS = ("none", "mean", "sum")


def _pointwise_loss(extra=(), tdomain=None, idomain=None):
    """input/target of one shape: every reduction, 0-d, empty, non-contiguous, broadcast target,
    a larger input; `extra` kwargs on a 2-d and a non-contiguous sample."""
    def gen(g):
        lo, hi = idomain or (None, None)
        tlo, thi = tdomain or (None, None)
        x = lambda s, lay="C": g.t(s, lay, low=lo, high=hi)  # noqa: E731
        y = lambda s, lay="C": g.t(s, lay, low=tlo, high=thi)  # noqa: E731
        out = [g.S(x((3, 4)), y((3, 4)))]
        for r in REDUCTIONS:
            out += [g.S(x((3, 4)), y((3, 4)), reduction=r), g.S(x((4, 5), "T"), y((4, 5), "S"), reduction=r)]
        out += [g.S(x(()), y(())), g.S(x((0,)), y((0,))), g.S(x((0,)), y((0,)), reduction="sum"),
                g.S(x((2, 3, 4), "P"), y((2, 3, 4))), g.S(x((3, 4)), y((3, 4), "E")),
                g.S(x((40, 50)), y((40, 50)), reduction="sum")]
        for kv in extra:
            out += [g.S(x((3, 4)), y((3, 4)), **kv), g.S(x((4, 5), "T"), y((4, 5), "S"), **kv)]
        return out
    return gen


def _pointwise_loss_errors(g):
    return [g.S(g.t((3, 4)), g.t((2, 4))), g.S(g.t((3, 4)), g.t((3, 4)), reduction="foo")]


def _huber_samples(g):
    return _pointwise_loss(({"delta": 0.5}, {"delta": 2.0, "reduction": "sum"}))(g)


def _smooth_l1_samples(g):
    return _pointwise_loss(({"beta": 0.5}, {"beta": 0.0}, {"beta": 2.0, "reduction": "none"}))(g)


def _targets(g, shape, nclass, ignore=None, layout="C", dtype="int64"):
    v = g.rng.integers(0, nclass, size=shape)
    if ignore is not None and v.size:
        v.flat[:: max(1, v.size // 2)] = ignore
    return g.idx(v, layout, dtype=dtype)


def _class_loss_samples(ce):
    """nll_loss / cross_entropy with class-index targets (and probability targets for ce)."""
    def gen(g):
        t = g.t
        tg = lambda shape, n=4, **k: _targets(g, shape, n, **k)  # noqa: E731
        w = lambda n=4: t((n,), low=0.2, high=2, nograd=True)  # noqa: E731
        out = [g.S(t((3, 4)), tg((3,))), g.S(t((3, 4)), tg((3,)), w()), g.S(t((5, 4)), tg((5,)), weight=w())]
        for r in REDUCTIONS:
            out += [g.S(t((5, 4)), tg((5,)), reduction=r), g.S(t((5, 4)), tg((5,)), w(), reduction=r),
                    g.S(t((5, 4)), tg((5,), ignore=1), w(), ignore_index=1, reduction=r)]
        out += [g.S(t((5, 4)), tg((5,), ignore=-1), ignore_index=-1), g.S(t((4, 3)), tg((4,), 3, ignore=-100)),
                g.S(t((4,)), tg(())), g.S(t((4,)), tg(()), w(), reduction="sum"),
                g.S(t((2, 4, 3)), tg((2, 3))), g.S(t((2, 4, 3)), tg((2, 3), ignore=2), w(), ignore_index=2),
                g.S(t((2, 3, 2, 2)), tg((2, 2, 2), 3), reduction="none"), g.S(t((2, 3, 2, 2)), tg((2, 2, 2), 3), w(3)),
                # all targets ignored: mean is nan (0/0), sum 0
                g.S(t((2, 4)), g.idx([1, 1]), ignore_index=1), g.S(t((2, 4)), g.idx([1, 1]), ignore_index=1, reduction="sum"),
                g.S(t((4, 5), "T"), _targets(g, (4,), 4, layout="S")), g.S(t((2, 4, 3), "P"), tg((2, 3))),
                g.S(t((3, 4)), tg((3,)), w(), reduction="mean"), g.S(t((0, 4)), g.idx(np.zeros((0,), np.int64))),
                g.S(t((0, 4)), g.idx(np.zeros((0,), np.int64)), reduction="sum"),
                g.S(t((3, 4)), tg((3,), dtype="uint8")), g.S(t((64, 10)), tg((64,), 10), reduction="sum")]
        if ce:
            out += [g.S(t((5, 4)), tg((5,)), label_smoothing=0.1),
                    g.S(t((5, 4)), tg((5,)), w(), label_smoothing=0.2, reduction="none"),
                    g.S(t((5, 4)), tg((5,), ignore=0), w(), ignore_index=0, label_smoothing=0.3),
                    g.S(t((5, 4)), tg((5,), ignore=0), ignore_index=0, label_smoothing=0.3, reduction="sum"),
                    g.S(t((2, 4, 3)), tg((2, 3)), label_smoothing=0.15), g.S(t((4,)), tg(()), label_smoothing=1.0)]
            p = lambda s, lay="C": t(s, lay, low=0, high=1)  # noqa: E731  (class probabilities)
            for r in REDUCTIONS:
                out.append(g.S(t((3, 4)), p((3, 4)), reduction=r))
            out += [g.S(t((3, 4)), p((3, 4)), w()), g.S(t((3, 4)), p((3, 4)), label_smoothing=0.2),
                    g.S(t((3, 4)), p((3, 4)), w(), label_smoothing=0.2, reduction="sum"), g.S(t((4,)), p((4,))),
                    g.S(t((2, 4, 3)), p((2, 4, 3))), g.S(t((4, 5), "T"), p((4, 5), "S"))]
        return out
    return gen


def _class_loss_errors(ce):
    def gen(g):
        t = g.t
        out = [g.S(t((3, 4)), g.idx([0, 4, 1])),                       # class index out of range
               g.S(t((3, 4)), g.idx([0, -1, 1])),                      # negative, not ignore_index
               g.S(t((3, 4)), g.idx([0, 5, 1]), ignore_index=4),       # out of range, ignore_index other
               g.S(t((2, 4, 3)), g.idx([[0, 1, 9], [0, 1, 2]])),       # spatial target out of range
               g.S(t((3, 4)), g.idx([0, 1])),                          # batch size mismatch
               g.S(t((2, 3, 4)), g.idx([[0, 1, 2], [0, 1, 2]])),       # spatial target of the wrong shape
               g.S(t((3, 4)), g.idx([0, 1, 1], dtype="int32")),        # int32 target
               g.S(t((3, 4)), g.idx([0, 1, 1]), t((3,))),              # weight of the wrong size
               g.S(t((3, 4)), g.idx([0, 1, 1]), reduction="foo")]
        if not ce:
            out += [g.S(t((3, 4)), g.t((3,))),                          # float target
                    g.S(t((3, 4)), g.idx([[0], [1], [2]]))]             # 2-d target
        else:
            out += [g.S(t((3, 4)), g.t((3, 3), low=0, high=1)),         # probabilities of the wrong shape
                    g.S(t((3, 4)), g.idx([[0, 1, 0, 0]] * 3)),          # integer class probabilities
                    g.S(t((3, 4)), g.idx([0, 1, 1]), label_smoothing=1.5)]
        return out
    return gen


def _bce_samples(g):
    x = lambda s, lay="C": g.t(s, lay, low=0.02, high=0.98)  # noqa: E731
    y = lambda s, lay="C": g.t(s, lay, low=0, high=1)  # noqa: E731
    w = lambda s: g.t(s, low=0.2, high=2, nograd=True)  # noqa: E731
    out = [g.S(x((3, 4)), y((3, 4)))]
    for r in REDUCTIONS:
        out += [g.S(x((3, 4)), y((3, 4)), reduction=r), g.S(x((3, 4)), y((3, 4)), w((4,)), reduction=r)]
    out += [g.S(x((4, 5), "T"), y((4, 5), "S")), g.S(x((3, 4)), y((3, 4)), weight=w((3, 4))),
            g.S(x((3, 4)), y((3, 4)), w((3, 1))), g.S(x(()), y(())), g.S(x((0,)), y((0,))),
            g.S(x((2, 3, 4), "P"), y((2, 3, 4)), reduction="sum"),
            # log is clamped at -100: input 0 and 1 give finite losses
            g.S(g.t((6,), data=[0.0, 1.0, 0.0, 1.0, 0.5, 1e-30]), g.t((6,), data=[0.0, 1.0, 1.0, 0.0, 0.5, 1.0]),
                reduction="none")]
    return out


def _bce_errors(g):
    x = lambda s: g.t(s, low=0.1, high=0.9)  # noqa: E731
    return [g.S(x((3, 4)), x((3,))), g.S(x((3, 4)), x((4, 3))), g.S(g.t((3, 4), low=1.5, high=2), x((3, 4))),
            g.S(x((3, 4)), x((3, 4)), g.t((5,))), g.S(x((3, 4)), x((3, 4)), reduction="foo")]


def _bce_logits_samples(g):
    x, y = g.t, lambda s, lay="C": g.t(s, lay, low=0, high=1)  # noqa: E731
    w = lambda s: g.t(s, low=0.2, high=2, nograd=True)  # noqa: E731
    out = [g.S(x((3, 4)), y((3, 4)))]
    for r in REDUCTIONS:
        out += [g.S(x((3, 4)), y((3, 4)), reduction=r), g.S(x((3, 4)), y((3, 4)), w((4,)), pos_weight=w((4,)), reduction=r)]
    out += [g.S(x((4, 5), "T"), y((4, 5), "S")), g.S(x((3, 4)), y((3, 4)), pos_weight=w((4,))),
            g.S(x((3, 4)), y((3, 4)), pos_weight=w((3, 4))), g.S(x((3, 4)), y((3, 4)), weight=w((3, 1))),
            g.S(x(()), y(())), g.S(x((0,)), y((0,))), g.S(x((2, 3, 4), "P"), y((2, 3, 4)), reduction="sum"),
            g.S(x((2, 3, 4)), y((2, 3, 4)), pos_weight=w((3, 1))),
            g.S(g.t((6,), data=[100.0, -100.0, 50.0, -50.0, 0.0, 30.0]), g.t((6,), data=[0.0, 1.0, 1.0, 0.0, 0.5, 1.0]),
                reduction="none")]
    return out


def _bce_logits_errors(g):
    return [g.S(g.t((3, 4)), g.t((3,))), g.S(g.t((3, 4)), g.t((4, 3))), g.S(g.t((3, 4)), g.t((3, 4)), reduction="foo")]


def _kl_div_samples(g):
    x = lambda s, lay="C": g.t(s, lay, low=-4, high=-0.1)  # noqa: E731  (log-probabilities)
    y = lambda s, lay="C": g.t(s, lay, low=0, high=1)  # noqa: E731
    out = []
    for r in REDUCTIONS + ("batchmean",):
        out += [g.S(x((3, 4)), y((3, 4)), reduction=r), g.S(x((3, 4)), x((3, 4)), reduction=r, log_target=True)]
    out += [g.S(x((4, 5), "T"), y((4, 5), "S")), g.S(x((4, 5), "T"), x((4, 5), "S"), log_target=True, reduction="sum"),
            g.S(x((3, 4)), g.t((3, 4), data=[0.0, 0.5, 0.0, 0.5] * 3), reduction="none"),   # 0 * log 0 = 0
            g.S(x(()), y(()), reduction="sum"), g.S(x((2, 3, 4), "P"), y((2, 3, 4)), reduction="batchmean"),
            g.S(x((0, 3)), y((0, 3)), reduction="sum"), g.S(x((3, 4)), y((4,)), reduction="sum")]
    return out


def _poisson_samples(g):
    x = g.t
    y = lambda s, lay="C": g.t(s, lay, low=0, high=5, integer=True)  # noqa: E731  (counts)
    pos = lambda s, lay="C": g.t(s, lay, low=0.1, high=4)  # noqa: E731
    out = []
    for r in REDUCTIONS:
        out += [g.S(x((3, 4)), y((3, 4)), reduction=r), g.S(pos((3, 4)), y((3, 4)), False, reduction=r)]
    out += [g.S(x((3, 4)), y((3, 4)), full=True), g.S(pos((3, 4)), y((3, 4)), log_input=False, full=True, reduction="sum"),
            g.S(pos((3, 4)), y((3, 4)), log_input=False, eps=0.5), g.S(x((4, 5), "T"), y((4, 5), "S")),
            g.S(x((2, 3, 4), "P"), y((2, 3, 4)), True, True, reduction="none"),
            g.S(g.t((4,), data=[0.0, 0.0, 1.0, 2.0]), g.t((4,), data=[0.0, 1.0, 1.0, 3.0]), False, True,
                reduction="none"), g.S(x((0,)), y((0,)))]
    return out


def _gaussian_nll_samples(g):
    t = g.t
    v = lambda s, lay="C": g.t(s, lay, low=0.1, high=2)  # noqa: E731
    out = [g.S(t((3, 4)), t((3, 4)), v((3, 4)))]
    for r in REDUCTIONS:
        out += [g.S(t((3, 4)), t((3, 4)), v((3, 4)), reduction=r), g.S(t((3, 4)), t((3, 4)), v((3, 1)), reduction=r)]
    out += [g.S(t((3, 4)), t((3, 4)), v((3,))),                 # homoscedastic: input's shape minus the last dim
            g.S(t((3, 4)), t((3, 4)), 0.5), g.S(t((3, 4)), t((3, 4)), var=1.5, reduction="sum"),
            g.S(t((3, 4)), t((3, 4)), v((3, 4)), full=True), g.S(t((3, 4)), t((3, 4)), v((3, 4)), eps=0.5),
            g.S(t((3, 4)), t((3, 4)), g.t((3, 4), data=[0.0, 1e-8, 1.0] * 4)),   # clamped at eps
            g.S(t((4, 5), "T"), t((4, 5), "S"), v((4, 5), "E")), g.S(t((5,)), t((5,)), v((5,))),
            g.S(t((2, 3, 4), "P"), t((2, 3, 4)), v((2, 3, 1)), reduction="none")]
    return out


def _gaussian_nll_errors(g):
    t = g.t
    return [g.S(t((3, 4)), t((3, 4)), g.t((3, 4), low=-2, high=-0.5)), g.S(t((3, 4)), t((3, 4)), g.t((3, 2), low=0.1, high=1)),
            g.S(t((3, 4)), t((3, 4)), g.t((3, 4), low=0.1, high=1), reduction="foo")]


def _pm1(g, shape, layout="C", nograd=False):
    """A target of +1 / -1 values."""
    return g.t(shape, layout, data=np.where(g.rng.random(layout_base(shape, layout)) < 0.5, -1.0, 1.0), nograd=nograd)


def layout_base(shape, layout):
    return layout_of(shape, layout)[0]


def _margin_ranking_samples(g):
    t = g.t
    out = []
    for r in REDUCTIONS:
        out += [g.S(t((5,)), t((5,)), _pm1(g, (5,)), reduction=r), g.S(t((5,)), t((5,)), _pm1(g, (5,)), 0.5, reduction=r)]
    out += [g.S(t((3, 4)), t((3, 4)), _pm1(g, (3, 4)), margin=-0.2), g.S(t((4, 5), "T"), t((4, 5), "S"), _pm1(g, (4, 5))),
            g.S(t(()), t(()), _pm1(g, ())), g.S(t((0,)), t((0,)), _pm1(g, (0,)))]
    return out


def _hinge_samples(g):
    t = g.t
    out = []
    for r in REDUCTIONS:
        out += [g.S(t((3, 4)), _pm1(g, (3, 4)), reduction=r), g.S(t((3, 4)), _pm1(g, (3, 4)), 2.0, reduction=r)]
    out += [g.S(t((4, 5), "T"), _pm1(g, (4, 5), "S"), margin=0.5), g.S(t((5,)), _pm1(g, (5,))), g.S(t(()), _pm1(g, ())),
            g.S(t((3, 4)), _pm1(g, (4,))), g.S(t((0,)), _pm1(g, (0,)))]
    return out


def _cos_emb_samples(g):
    t = g.t
    out = []
    for r in REDUCTIONS:
        out += [g.S(t((4, 5)), t((4, 5)), _pm1(g, (4,)), reduction=r),
                g.S(t((4, 5)), t((4, 5)), _pm1(g, (4,)), 0.3, reduction=r)]
    out += [g.S(t((5,)), t((5,)), _pm1(g, ())), g.S(t((5,)), t((5,)), _pm1(g, ()), margin=-0.5),
            g.S(t((4, 5), "T"), t((4, 5), "S"), _pm1(g, (4,), "S")),
            g.S(t((3, 4)), t((3, 4)), g.t((3,), data=[1, -1, 1], dtype="int64"))]
    return out


def _cos_emb_errors(g):
    t = g.t
    return [g.S(t((3, 4)), t((3, 5)), _pm1(g, (3,))), g.S(t((3, 4)), t((3, 4)), _pm1(g, (2,))),
            g.S(t((2, 3, 4)), t((2, 3, 4)), _pm1(g, (2,)))]


def _triplet_samples(g):
    t = g.t
    out = []
    for r in REDUCTIONS:
        out += [g.S(t((4, 5)), t((4, 5)), t((4, 5)), reduction=r)]
    out += [g.S(t((4, 5)), t((4, 5)), t((4, 5)), 0.5, 1), g.S(t((4, 5)), t((4, 5)), t((4, 5)), margin=2.0, p=3, swap=True),
            g.S(t((4, 5)), t((4, 5)), t((4, 5)), swap=True, reduction="none"), g.S(t((5,)), t((5,)), t((5,))),
            g.S(t((4, 5), "T"), t((4, 5), "S"), t((4, 5), "E")), g.S(t((4, 5)), t((4, 5)), t((4, 5)), eps=0.1)]
    return out


def _multi_margin_samples(g):
    t = g.t
    tgt = lambda n, c: g.idx(g.rng.integers(0, c, n))  # noqa: E731
    out = [g.S(t((4, 5)), tgt(4, 5), reduction=r) for r in REDUCTIONS]
    out += [g.S(t((4, 5)), tgt(4, 5), 2), g.S(t((4, 5)), tgt(4, 5), p=2, margin=0.5, reduction="none"),
            g.S(t((4, 5)), tgt(4, 5), weight=t((5,), low=0.1, high=2)), g.S(t((5,)), g.idx(3)),
            g.S(t((5,)), g.idx(3), reduction="none"), g.S(t((4, 5), "T"), g.idx(g.rng.integers(0, 5, 4), "S")),
            g.S(t((0, 5)), g.idx(np.zeros(0)), reduction="none"), g.S(t((3, 1)), tgt(3, 1))]
    return out


def _multi_margin_errors(g):
    t = g.t
    return [g.S(t((4, 5)), g.idx([0, 1, 5, 2])), g.S(t((4, 5)), g.idx([0, 1])), g.S(t((4, 5)), g.idx([0, 1, 2, 3]), 3),
            g.S(t((4, 5)), g.idx([0, 1, 2, 3]), weight=t((4,)))]


def _multilabel_margin_samples(g):
    t = g.t
    lab = g.idx([[3, 0, -1, 1, 1], [1, 2, 3, -1, 0], [4, 3, 2, 1, 0]])
    out = [g.S(t((3, 5)), lab, reduction=r) for r in REDUCTIONS]
    out += [g.S(t((5,)), g.idx([2, 2, 4, -1, 0])), g.S(t((5,)), g.idx([-1, 0, 1, 2, 3]), reduction="none"),
            g.S(t((3, 5), "T"), lab), g.S(t((0, 4)), g.idx(np.zeros((0, 4))), reduction="none")]
    # (an empty batch summed is 0 in Kindle; torch 2.13 returns uninitialized memory there)
    return out


def _lp_pool2d_samples(g):
    t = g.t
    return [g.S(t((1, 2, 6, 6), low=0.1, high=3), 2, 2), g.S(t((2, 5, 7), low=0.1, high=3), 3.0, (2, 3)),
            g.S(t((1, 2, 7, 7)), 2, 3, 2), g.S(t((1, 2, 7, 7), low=0.1, high=3), 1.5, 3, 2, ceil_mode=True),
            g.S(t((1, 2, 6, 6), "T"), 2, 2), g.S(t((1, 1, 4, 4)), 1, 2)]


def _lp_pool1d_samples(g):
    t = g.t
    return [g.S(t((2, 3, 8), low=0.1, high=3), 2, 3), g.S(t((3, 8)), 2, 3, 2), g.S(t((1, 2, 9), low=0.1, high=3), 1.5, 4, 3, True),
            g.S(t((2, 3, 8), "T"), 2, 2)]


def _lp_pool3d_samples(g):
    t = g.t
    return [g.S(t((1, 2, 4, 4, 4), low=0.1, high=3), 2, 2), g.S(t((2, 5, 6, 4), low=0.1, high=3), 3.0, (2, 3, 2)),
            g.S(t((1, 2, 5, 5, 5)), 2, 3, 2), g.S(t((1, 2, 5, 5, 5), low=0.1, high=3), 1.5, 3, 2, ceil_mode=True),
            g.S(t((1, 1, 4, 4, 4), "T"), 1, 2)]


def _triplet_errors(g):
    t = g.t
    return [g.S(t((3, 4)), t((3, 4)), t((4,))), g.S(t((3, 4)), t((3, 5)), t((3, 4))),
            g.S(t((3, 4)), t((3, 4)), t((3, 4)), reduction="foo")]


def _cos_sim_samples(g):
    t = g.t
    return [g.S(t((3, 4)), t((3, 4))), g.S(t((3, 4)), t((3, 4)), 0), g.S(t((3, 4)), t((4,)), dim=-1),
            g.S(t((2, 3, 4)), t((2, 3, 4)), dim=2), g.S(t((4,)), t((4,)), 0), g.S(t((3, 4)), t((3, 1)), eps=0.1),
            g.S(t((4, 5), "T"), t((4, 5), "S")), g.S(t((2, 3, 4), "P"), t((2, 3, 4)), 1),
            g.S(t((2, 4), data=[0.0] * 4 + [1.0, 2.0, 3.0, 4.0]), t((2, 4))), g.S(t((0, 4)), t((0, 4)))]


def _pairwise_samples(g):
    t = g.t
    return [g.S(t((3, 4)), t((3, 4))), g.S(t((3, 4)), t((3, 4)), 1.0), g.S(t((3, 4)), t((3, 4)), p=3.0, keepdim=True),
            g.S(t((3, 4)), t((4,))), g.S(t((4,)), t((4,))), g.S(t((3, 4)), t((3, 4)), eps=0.1),
            g.S(t((3, 4)), t((3, 4)), float("inf")), g.S(t((4, 5), "T"), t((4, 5), "S")), g.S(t((2, 3, 4)), t((2, 3, 4))),
            g.S(t((0, 4)), t((0, 4)))]


def _normalize_samples(g):
    t = g.t
    return [g.S(t((3, 4))), g.S(t((3, 4)), 1.0), g.S(t((3, 4)), dim=0), g.S(t((2, 3, 4)), 2, -1),
            g.S(t((3, 4)), p=3.0, dim=1, eps=0.5), g.S(t((3, 4)), float("inf")), g.S(t((5,)), dim=0),
            g.S(t((4, 5), "T")), g.S(t((2, 3, 4), "P"), dim=1), g.S(t((2, 4), data=[0.0] * 4 + [1.0] * 4)),
            g.S(t((0, 4))), g.S(t(LARGE), dim=1)]


# ---------------------------------------------------------------------------------------------
# normalisation

def _layer_norm_samples(g):
    t = g.t
    # a large mean and a small variance: float64 (where the result is well defined) and the half types
    # (where torch keeps float32 statistics); in float32 torch's own error is 1e-5 already at 5
    off = {"float64": 100, "float32": 0}.get(g.dtype, 5)
    return [g.S(t((3, 4)), (4,), t((4,)), t((4,))), g.S(t((3, 4)), [4]), g.S(t((3, 4)), [4], weight=t((4,))),
            g.S(t((2, 3, 4)), (3, 4), t((3, 4)), t((3, 4)), eps=1e-3), g.S(t((2, 3, 4)), (2, 3, 4), bias=t((2, 3, 4))),
            g.S(t((4, 5), "T"), (5,), t((5,), "S"), t((5,), "E")), g.S(t((2, 3, 4), "P"), (4,)),
            g.S(t((0, 4)), (4,), t((4,)), t((4,))), g.S(t((5,)), (5,)), g.S(t((3, 1)), (1,)),
            g.S(t(LARGE), (LARGE[1],), t((LARGE[1],)), t((LARGE[1],)))] + \
        ([g.S(t((3, 4), low=off, high=off + 1), (4,))] if off else [])


def _layer_norm_errors(g):
    t = g.t
    return [g.S(t((3, 4)), (3,)), g.S(t((3, 4)), (4,), t((3,))), g.S(t((3, 4)), (4,), t((4,)), t((5,))),
            g.S(t((3, 4)), (2, 3, 4))]


def _rms_norm_samples(g):
    t = g.t
    return [g.S(t((3, 4)), (4,), t((4,))), g.S(t((3, 4)), [4]), g.S(t((3, 4)), [4], eps=1e-2),
            g.S(t((2, 3, 4)), (3, 4), t((3, 4)), 1e-3), g.S(t((4, 5), "T"), (5,), weight=t((5,), "S")),
            g.S(t((2, 3, 4), "P"), (4,)), g.S(t((0, 4)), (4,)), g.S(t((5,)), (5,)),
            g.S(t((2, 4), data=[0.0] * 4 + [1.0] * 4), (4,)), g.S(t(LARGE), (LARGE[1],), t((LARGE[1],)))]


def _rms_norm_errors(g):
    return [g.S(g.t((3, 4)), (3,)), g.S(g.t((3, 4)), (4,), g.t((3,)))]


def _group_norm_samples(g):
    t = g.t
    off = {"float64": 50, "float32": 0}.get(g.dtype, 5)     # a large mean: as layer_norm
    return [g.S(t((2, 6, 3)), 3, t((6,)), t((6,))), g.S(t((2, 6, 3)), 2), g.S(t((2, 4)), 2, t((4,))),
            g.S(t((2, 6, 2, 2)), 1, bias=t((6,))), g.S(t((2, 6, 2)), 6, t((6,)), t((6,)), eps=1e-3),
            g.S(t((3, 4, 2), "T"), 2, t((4,), "S")), g.S(t((2, 4, 3), "P"), 4), g.S(t((0, 4, 3)), 2),
            g.S(t((2, 8, 30, 30)), 4, t((8,)), t((8,)))] + ([g.S(t((1, 4, 5), low=off, high=off + 1), 2)] if off else [])


def _group_norm_errors(g):
    t = g.t
    return [g.S(t((2, 6, 3)), 4), g.S(t((2, 6, 3)), 3, t((4,))), g.S(t((2, 6, 3)), 3, t((6,)), t((5,)))]


def _stats(g, c):
    """(running_mean, running_var) constants for c channels."""
    return g.t((c,), low=-1, high=1, nograd=True), g.t((c,), low=0.5, high=2, nograd=True)


def _batch_norm_samples(g):
    t = g.t
    out = []
    m, v = _stats(g, 3)
    out.append(g.S(t((4, 3)), m, v, t((3,)), t((3,))))                                   # eval
    m, v = _stats(g, 3)
    out.append(g.S(t((2, 3, 4)), m, v))
    m, v = _stats(g, 3)
    out.append(g.S(t((2, 3, 2, 2)), m, v, weight=t((3,)), bias=t((3,)), eps=1e-3))
    m, v = _stats(g, 3)
    out.append(g.S(t((4, 3)), m, v, t((3,)), t((3,)), True))                             # training: stats updated
    m, v = _stats(g, 3)
    out.append(g.S(t((2, 3, 4)), m, v, t((3,)), t((3,)), True, 0.3))
    m, v = _stats(g, 3)
    out.append(g.S(t((2, 3, 2, 2)), m, v, training=True, momentum=1.0, eps=1e-2))
    out += [g.S(t((4, 3)), None, None, t((3,)), t((3,)), True), g.S(t((2, 3, 2, 2)), None, None, training=True)]
    m, v = _stats(g, 4)
    out.append(g.S(t((3, 4, 5), "P"), m, v, t((4,), "S"), t((4,), "E"), True))          # non-contiguous
    m, v = _stats(g, 5)
    out.append(g.S(t((4, 5), "T"), m, v, t((5,)), t((5,))))
    m, v = _stats(g, 3)
    out.append(g.S(t((0, 3)), m, v, t((3,)), t((3,))))                                   # empty batch, eval
    m, v = _stats(g, 8)
    out.append(g.S(t((4, 8, 20, 20)), m, v, t((8,)), t((8,)), True))
    return out


def _batch_norm_errors(g):
    t = g.t
    m, v = _stats(g, 3)
    return [g.S(t((1, 3)), None, None, training=True),                  # one value per channel in training
            g.S(t((1, 3, 1)), m, v, training=True),
            g.S(t((2, 3)), *_stats(g, 4)),                               # running stats of the wrong size
            g.S(t((2, 3)), m, v, t((4,))),                               # weight of the wrong size
            g.S(t((2, 3)), None, None)]                                  # eval mode without running stats


def _instance_norm_samples(g):
    t = g.t
    out = [g.S(t((2, 3, 4))), g.S(t((2, 3, 4)), weight=t((3,)), bias=t((3,))), g.S(t((2, 3, 2, 2)), eps=1e-3),
           g.S(t((3, 4, 5), "P"), weight=t((4,), "S")), g.S(t((1, 2, 5)))]
    m, v = _stats(g, 3)
    out.append(g.S(t((2, 3, 4)), m, v, t((3,)), t((3,))))                                # running stats updated
    m, v = _stats(g, 3)
    out.append(g.S(t((2, 3, 2, 2)), m, v, momentum=0.4))
    m, v = _stats(g, 3)
    out.append(g.S(t((2, 3, 4)), m, v, use_input_stats=False))                         # eval with running stats
    m, v = _stats(g, 3)
    out.append(g.S(t((2, 3, 2, 2)), m, v, t((3,)), t((3,)), False))
    out.append(g.S(t((2, 4, 30, 30)), weight=t((4,)), bias=t((4,))))
    return out


def _instance_norm_errors(g):
    t = g.t
    m, v = _stats(g, 3)
    return [g.S(t((2, 3, 1))),                                                 # one spatial element
            g.S(t((2, 3, 4)), weight=t((4,))), g.S(t((2, 3, 4)), *_stats(g, 4)),
            g.S(t((2, 3, 4)), use_input_stats=False)]                          # no running stats to use


# ---------------------------------------------------------------------------------------------
# dropout: deterministic samples only (statistics: test_nn_functional.py)

def _dropout_samples(shape_sets):
    def gen(g):
        t = g.t
        out = []
        for s in shape_sets:
            out += [g.S(t(s), 0.0), g.S(t(s), 0.5, False), g.S(t(s), p=1.0), g.S(t(s), 0.0, True),
                    g.S(t(s), p=0.9, training=False)]
        s = shape_sets[0]
        out += [g.S(t(s, "T"), 0.0), g.S(t(s, "P"), p=1.0), g.S(t(s, "S"), 0.3, False), g.S(t(s, "E"), 0.0)]
        return out
    return gen


def _alpha_dropout_samples(g):
    t = g.t
    return [g.S(t((3, 4))), g.S(t((3, 4)), 0.5), g.S(t((3, 4)), 0.0, True), g.S(t((3, 4)), p=1.0, training=True),
            g.S(t((2, 3, 4)), 0.2, False), g.S(t((4, 5), "T"), 0.0, True), g.S(t((4, 5), "S"), p=1.0, training=True),
            g.S(t(()), 0.0, True), g.S(t((0, 3)), 0.5, True)]


def _dropout_errors(g):
    return [g.S(g.t((3, 4)), 1.5), g.S(g.t((3, 4)), -0.1), g.S(g.t((3, 4)), p=2.0, training=False)]


def _dropout_nd_errors(n):
    def gen(g):
        out = [g.S(g.t((2, 3, 4) if n == 1 else (2, 3, 4, 5)), 1.5)]
        if n == 1:
            out.append(g.S(g.t((4,)), 0.5))       # dropout1d: 2-d or 3-d input (dropout2d only warns)
        return out
    return gen


# ---------------------------------------------------------------------------------------------
# sparse

def _embedding_samples(g):
    w = g.t
    out = [g.S(g.idx([0, 2, 4, 2]), w((5, 3))), g.S(g.idx([[0, 1], [4, 3], [2, 2]]), w((5, 3))),
           g.S(g.idx(3), w((5, 3))), g.S(g.idx(np.zeros((0,), np.int64)), w((5, 3))),
           g.S(g.idx([0, 1, 1, 3]), w((5, 3)), padding_idx=1), g.S(g.idx([0, 4, 4, 3]), w((5, 3)), -1),
           g.S(g.idx([[0, 1, 2, 3]], "S"), w((5, 3), "T")), g.S(g.idx([0, 2, 4]), w((5, 3), "S")),
           g.S(g.idx([0, 2, 4], dtype="int32"), w((5, 3))), g.S(g.expanded_idx([1, 3], (3, 2)), w((5, 3), "E")),
           g.S(g.rand_idx((40, 30), 100), w((100, 16)))]
    # max_norm renormalises the looked-up rows of weight in place (under no_grad)
    out += [g.S(g.idx([0, 2, 2, 4]), w((5, 3)), max_norm=1.0), g.S(g.idx([[0, 1], [3, 1]]), w((5, 3)), None, 0.5, 1.0),
            g.S(g.idx([1, 3]), w((5, 3)), max_norm=2.0, norm_type=float("inf")),
            g.S(g.idx([0, 1, 3]), w((5, 3)), padding_idx=0, max_norm=0.5)]
    return out


def _embedding_errors(g):
    return [g.S(g.idx([0, 5]), g.t((5, 3))), g.S(g.idx([0, -1]), g.t((5, 3))), g.S(g.t((2,)), g.t((5, 3))),
            g.S(g.idx([0, 1]), g.t((5,)))]


def _embedding_bag_samples(g):
    w = g.t
    ix = g.idx
    out = [g.S(ix([0, 2, 4, 2, 1]), w((6, 3)), ix([0, 2])), g.S(ix([[0, 1, 2], [5, 4, 4]]), w((6, 3)))]
    for mode in ("sum", "mean"):      # mode='max': test_nn_functional.py::test_torch_arguments_supported
        out += [g.S(ix([0, 2, 4, 2, 1, 3]), w((6, 3)), ix([0, 1, 4]), mode=mode),
                g.S(ix([[0, 1], [3, 3], [5, 0]]), w((6, 3)), mode=mode),
                g.S(ix([0, 2, 4, 1]), w((6, 3)), ix([0, 0, 2, 4]), mode=mode),                 # empty bags
                g.S(ix([0, 2, 4, 1]), w((6, 3)), ix([0, 1, 4]), mode=mode, include_last_offset=True),
                g.S(ix([0, 1, 1, 3, 1]), w((6, 3)), ix([0, 2]), mode=mode, padding_idx=1),
                g.S(ix([1, 1, 0]), w((6, 3)), ix([0, 2]), mode=mode, padding_idx=1)]         # a bag of padding only
    out += [g.S(ix([0, 2, 4, 1]), w((6, 3)), ix([0, 2]), mode="sum", per_sample_weights=w((4,))),
            g.S(ix([[0, 2], [4, 1]]), w((6, 3)), mode="sum", per_sample_weights=w((2, 2))),
            g.S(ix([0, 2, 4, 1], "S"), w((6, 3), "T"), ix([0, 3], "S")), g.S(ix([0, 2, 4]), w((6, 3), "S"), ix([0, 1])),
            g.S(ix([0, 2, 4], dtype="int32"), w((6, 3)), ix([0, 1], dtype="int32")),
            g.S(g.rand_idx((400,), 100), w((100, 16)), ix(np.arange(0, 400, 7)))]
    return out


def _embedding_bag_errors(g):
    w, ix = g.t((6, 3)), g.idx
    return [g.S(ix([0, 1, 2]), w, ix([0, 2]), mode="mean", per_sample_weights=g.t((3,))),
            g.S(ix([0, 1, 2]), w, ix([1, 2])), g.S(ix([0, 7, 2]), w, ix([0, 2])), g.S(ix([[0, 1], [2, 3]]), w, ix([0, 1])),
            g.S(ix([0, 1, 2]), w), g.S(ix([0, 1, 2]), w, ix([0, 2]), mode="foo"), g.S(g.t((2,)), w, ix([0, 1])),
            g.S(ix([0, 1, 2]), w, ix([0, 5])),
            g.S(ix([0, 1, 2]), w, ix([0, 2]), mode="sum", per_sample_weights=g.t((2,)))]


def _one_hot_samples(g):
    i = lambda data, layout="C": g.idx(data, layout, dtype=g.dtype)  # noqa: E731  (the op's dtype: int64 only)
    return [g.S(i([0, 2, 1, 3])), g.S(i([0, 2, 1]), 5), g.S(i([[0, 1], [2, 0]]), num_classes=3), g.S(i(2)), g.S(i(2), 4),
            g.S(i(np.zeros((0,), np.int64)), 3), g.S(i([[0, 3, 1, 2]], "S")), g.S(g.expanded_idx([1, 0], (3, 2))),
            g.S(i([0, 0, 0])), g.S(g.rand_idx((50, 40), 10), 10)]


def _one_hot_errors(g):
    return [g.S(g.idx([0, -1])), g.S(g.idx([0, 3]), 2), g.S(g.t((3,), dtype="float32")),
            g.S(g.idx(np.zeros((0,), np.int64)))]


# ---------------------------------------------------------------------------------------------
# vision

def _pad_samples(g):
    t = g.t
    out = [g.S(t((2, 3)), (1, 2)), g.S(t((2, 3, 4)), (1, 1, 2, 0), value=2.5), g.S(t((2, 3)), [0, 0, 1, 1], "constant", 1),
           g.S(t((2, 3, 4)), (-1, 2)), g.S(t((2, 3, 4)), (1, -2, -1, 1)), g.S(t((2, 3, 4)), (1, 1, 1, 1, 1, 1)),
           g.S(t((5,)), (2, 3)), g.S(t((4, 5), "T"), (1, 2, 3, 4)), g.S(t((2, 3, 4), "P"), (2, 0)), g.S(t((2, 3)), ()),
           g.S(t((0, 3)), (1, 1)), g.S(t((2, 3)), (0, 0, 1, 0), value=-1)]
    for mode in ("reflect", "replicate", "circular"):
        out += [g.S(t((2, 5)), (2, 3), mode), g.S(t((1, 2, 5)), (1, 2), mode=mode), g.S(t((2, 3, 4)), (1, 2, 2, 1), mode),
                g.S(t((1, 2, 3, 4)), (3, 0, 2, 1), mode=mode), g.S(t((1, 2, 4, 5), "T"), (1, 1, 2, 2), mode),
                g.S(t((1, 1, 3, 3, 3)), (1, 1, 1, 1, 2, 0), mode), g.S(t((2, 5), "S"), (0, 4), mode),
                g.S(t((1, 2, 5)), (-1, 2), mode), g.S(t((1, 2, 5)), (2, -1), mode=mode)]
    out += [g.S(t((1, 2, 3)), (3, 3), "circular"), g.S(t((1, 2, 3)), (1, 1), mode="reflect"),
            g.S(t((1, 1, 3)), (2, 2), "reflect"), g.S(t((1, 1, 3)), (5, 5), "replicate")]
    return out


def _pad_errors(g):
    t = g.t
    return [g.S(t((1, 2, 5)), (1, 1), mode="foo"),                  # invalid padding mode
            g.S(t((1, 2, 3)), (3, 3), mode="reflect"),              # reflect padding >= the size
            g.S(t((1, 2, 3)), (1,)),                                # odd padding length
            g.S(t((3,)), (1, 1, 1, 1)),                             # more padded dims than the input has
            g.S(t((1, 2, 3)), (4, 4), mode="circular"),             # wraps around more than once
            g.S(t((1, 2, 3)), (1, 1, 1, 1, 1, 1), mode="reflect"),  # 3-d padding of a 3-d input
            g.S(t((1, 2, 3)), (-4, 0))]                             # negative size


def _pixel_shuffle_samples(g):
    t = g.t
    return [g.S(t((1, 8, 2, 3)), 2), g.S(t((4, 2, 2)), 2), g.S(t((2, 2, 9, 2, 2)), 3), g.S(t((1, 4, 3, 2)), 1),
            g.S(t((1, 8, 3, 2), "T"), 2), g.S(t((2, 4, 2, 3), "P"), upscale_factor=2), g.S(t((0, 4, 2, 2)), 2)]


def _pixel_unshuffle_samples(g):
    t = g.t
    return [g.S(t((1, 2, 4, 6)), 2), g.S(t((1, 4, 6)), 2), g.S(t((2, 2, 1, 6, 3)), 3), g.S(t((1, 4, 3, 2)), 1),
            g.S(t((1, 2, 6, 4), "T"), 2), g.S(t((4, 2, 2, 2), "P"), downscale_factor=2)]
    # (an empty batch is left out: torch returns the input's shape for it, (0, 1, 2, 2) -> (0, 1, 2, 2))


def _channel_shuffle_samples(g):
    t = g.t
    return [g.S(t((1, 6, 2, 3)), 2), g.S(t((2, 6, 4)), 3), g.S(t((2, 4, 2, 1, 2)), 4), g.S(t((1, 4, 3)), 1),
            g.S(t((1, 6, 3, 2), "T"), 3), g.S(t((2, 4, 2, 3), "P"), groups=2), g.S(t((0, 4, 2)), 2)]


def _channel_shuffle_errors(g):
    return [g.S(g.t((4, 6)), 2), g.S(g.t((1, 6, 2)), 4), g.S(g.t((1, 6, 2)), 0)]


def _pixel_errors(name):
    def gen(g):
        if name == "pixel_shuffle":
            return [g.S(g.t((1, 3, 2, 2)), 2), g.S(g.t((4, 2)), 2), g.S(g.t((1, 4, 2, 2)), 0)]
        return [g.S(g.t((1, 1, 3, 4)), 2), g.S(g.t((1, 1, 4, 3)), 2), g.S(g.t((4, 2)), 2), g.S(g.t((1, 1, 2, 2)), 0)]
    return gen


# ---------------------------------------------------------------------------------------------
# convolution

def _w(g, shape, layout="C"):
    return g.t(shape, layout, low=-1, high=1)


def _conv1d_samples(g):
    t, w = (lambda s, lay="C": g.t(s, lay, low=-1, high=1)), (lambda s, lay="C": _w(g, s, lay))
    return [g.S(t((2, 3, 5)), w((2, 3, 3)), w((2,))), g.S(t((3, 6)), w((2, 3, 3))),              # batched, unbatched
            g.S(t((1, 2, 7)), w((3, 2, 3)), w((3,)), 2, 1), g.S(t((1, 2, 8)), w((2, 2, 3)), stride=3, padding=2),
            g.S(t((1, 2, 9)), w((2, 2, 3)), None, 1, 2, 2),                                      # dilation
            g.S(t((1, 4, 6)), w((6, 2, 3)), w((6,)), groups=2), g.S(t((1, 3, 8)), w((3, 1, 3)), groups=3),  # depthwise
            g.S(t((1, 2, 6)), w((4, 1, 2)), w((4,)), groups=2, padding=1),                      # channel multiplier
            g.S(t((1, 2, 6)), w((3, 2, 3)), padding="same"), g.S(t((1, 2, 7)), w((2, 2, 4)), padding="same", dilation=2),
            g.S(t((1, 2, 6)), w((2, 2, 4)), w((2,)), padding="same"), g.S(t((1, 2, 6)), w((2, 2, 3)), padding="valid"),
            g.S(t((1, 2, 6)), w((2, 2, 3)), stride=(2,), padding=(1,), dilation=(1,)),
            g.S(t((2, 3, 5), "T"), w((3, 3, 2), "P"), w((3,), "S")), g.S(t((1, 2, 3)), w((3, 2, 3))),  # kernel = input
            g.S(t((1, 2, 2)), w((3, 2, 3)), padding=1), g.S(t((2, 3, 4)), w((4, 3, 1))), g.S(t((0, 2, 5)), w((3, 2, 3))),
            g.S(t((4, 8, 64)), w((16, 8, 5)), w((16,)), padding=2)]


def _conv2d_samples(g):
    t, w = (lambda s, lay="C": g.t(s, lay, low=-1, high=1)), (lambda s, lay="C": _w(g, s, lay))
    return [g.S(t((1, 2, 4, 4)), w((2, 2, 2, 2)), w((2,))), g.S(t((2, 4, 3)), w((2, 2, 2, 2))),  # batched, unbatched
            g.S(t((2, 2, 5, 5)), w((3, 2, 3, 3)), w((3,)), 1, 1),
            g.S(t((1, 2, 7, 6)), w((2, 2, 3, 2)), stride=(2, 1), padding=(1, 0)),
            g.S(t((1, 2, 7, 7)), w((2, 2, 3, 3)), None, 2, 1, (2, 1)),                           # stride, dilation
            g.S(t((1, 4, 5, 5)), w((4, 2, 3, 3)), w((4,)), groups=2),
            g.S(t((1, 3, 5, 5)), w((3, 1, 3, 3)), w((3,)), padding=1, groups=3),                  # depthwise
            g.S(t((1, 2, 4, 4)), w((4, 1, 2, 2)), groups=2, stride=2),                            # channel multiplier
            g.S(t((1, 2, 5, 5)), w((2, 2, 3, 3)), padding="same"),
            g.S(t((1, 2, 6, 5)), w((2, 2, 2, 3)), w((2,)), padding="same", dilation=(2, 1)),    # asymmetric 'same'
            g.S(t((1, 2, 5, 5)), w((2, 2, 3, 3)), padding="valid"),
            g.S(t((1, 2, 3, 3)), w((2, 2, 3, 3)), padding=(2, 0)),
            g.S(t((1, 2, 5, 6), "T"), w((3, 2, 3, 2), "P"), w((3,), "S"), 1, (0, 1)),            # non-contiguous
            g.S(t((2, 3, 4, 5), "P"), w((2, 3, 3, 3), "S")),
            g.S(t((1, 2, 2, 3)), w((2, 2, 2, 3))), g.S(t((0, 2, 4, 4)), w((3, 2, 2, 2))),
            g.S(t((2, 3, 4, 4)), w((5, 3, 1, 1)), w((5,))),
            g.S(t((2, 16, 24, 24)), w((32, 16, 3, 3)), w((32,)), padding=1),
            g.S(t((2, 16, 20, 20)), w((16, 1, 3, 3)), groups=16, stride=2)]


def _conv3d_samples(g):
    t, w = (lambda s, lay="C": g.t(s, lay, low=-1, high=1)), (lambda s, lay="C": _w(g, s, lay))
    return [g.S(t((1, 2, 4, 4, 4)), w((2, 2, 2, 2, 2)), w((2,))), g.S(t((2, 3, 4, 5)), w((2, 2, 2, 2, 2))),
            g.S(t((2, 2, 5, 5, 4)), w((3, 2, 3, 3, 2)), w((3,)), 1, 1),
            g.S(t((1, 2, 7, 6, 5)), w((2, 2, 3, 2, 2)), stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1)),
            g.S(t((1, 4, 4, 5, 5)), w((4, 2, 2, 3, 3)), w((4,)), groups=2),
            g.S(t((1, 2, 5, 5, 5)), w((2, 2, 3, 3, 2)), padding="same"), g.S(t((1, 2, 4, 4, 4)), w((2, 2, 3, 3, 3)), padding="valid"),
            g.S(t((1, 2, 4, 5, 4), "T"), w((3, 2, 2, 3, 2), "P"), w((3,), "S")), g.S(t((0, 2, 4, 4, 4)), w((3, 2, 2, 2, 2)))]


def _conv_t3d_samples(g):
    t, w = (lambda s, lay="C": g.t(s, lay, low=-1, high=1)), (lambda s, lay="C": _w(g, s, lay))
    return [g.S(t((1, 2, 3, 3, 3)), w((2, 3, 2, 2, 2)), w((3,))), g.S(t((2, 3, 3, 4)), w((2, 2, 2, 2, 2))),
            g.S(t((1, 2, 3, 4, 3)), w((2, 2, 3, 2, 2)), None, 2, 1, 1),
            g.S(t((1, 4, 3, 3, 3)), w((4, 1, 2, 2, 2)), w((2,)), groups=2, dilation=(2, 1, 1)),
            g.S(t((1, 2, 3, 4, 3), "T"), w((2, 3, 2, 3, 2), "P"), stride=(1, 2, 1), output_padding=(0, 1, 0))]


def _max_pool3d_samples(g):
    t = g.t
    out = [g.S(t((1, 2, 4, 4, 4)), 2), g.S(t((2, 4, 5, 4)), 2), g.S(t((1, 2, 5, 5, 5)), 3, 2, 1),
           g.S(t((1, 1, 6, 7, 5)), (2, 3, 2), (1, 2, 2)), g.S(t((1, 1, 6, 6, 6)), 3, 2, ceil_mode=True),
           g.S(t((1, 2, 5, 5, 5)), 2, 1, 1, 2, return_indices=True), g.S(t((1, 2, 4, 4, 4), "T"), 2),
           g.S(_ties(g, (1, 2, 4, 4, 4)), 2, 1, return_indices=True), g.S(t((0, 2, 4, 4, 4)), 2)]
    return out


def _avg_pool3d_samples(g):
    t = g.t
    return [g.S(t((1, 2, 4, 4, 4)), 2), g.S(t((2, 4, 5, 4)), 2), g.S(t((1, 2, 5, 5, 5)), 3, 2, 1),
            g.S(t((1, 2, 5, 5, 5)), 3, 2, 1, count_include_pad=False), g.S(t((1, 1, 6, 6, 6)), 3, 2, ceil_mode=True),
            g.S(t((1, 1, 5, 6, 5)), 3, 2, 1, True, False), g.S(t((1, 1, 4, 4, 4)), 2, divisor_override=3),
            g.S(t((1, 2, 4, 5, 4), "T"), 2)]


def _adaptive3d_samples(maxpool):
    def gen(g):
        t = g.t
        r = (True,) if maxpool else ()
        return [g.S(t((1, 2, 6, 6, 6)), 3), g.S(t((2, 5, 7, 4)), (3, 4, 2), *r), g.S(t((1, 2, 5, 7, 4)), (None, 2, 3)),
                g.S(t((1, 1, 3, 2, 4)), (5, 4, 2), *r), g.S(t((1, 2, 5, 4, 4), "T"), (2, 3, 1))]
    return gen


def _conv_errors(nd):
    def gen(g):
        t = g.t
        sp = (5,) * nd
        k = (3,) * nd
        return [g.S(t((1, 3) + sp), t((4, 2) + k)),                          # wrong channel count
                g.S(t((1, 4) + sp), t((4, 2) + k), groups=3),                # channels not divisible by groups
                g.S(t((1, 3) + (2,) * nd), t((4, 3) + k)),                   # kernel larger than the input
                g.S(t((1, 3) + (2,) * nd), t((4, 3) + (6,) * nd), padding=1),  # larger than the padded input
                g.S(t((1, 3) + sp), t((4, 3) + k), padding="foo"),           # invalid padding string
                g.S(t((1, 3) + sp), t((4, 3) + k), stride=2, padding="same"),
                g.S(t((1, 3) + sp), t((4, 3) + k), t((3,))),                 # bias of the wrong size
                g.S(t(sp), t((4, 3) + k)),                                   # too few dims
                g.S(t((1, 3) + sp), t((4, 3) + k), padding=-1),
                g.S(t((1, 3) + sp), t((4, 3) + k), stride=0)]
    return gen


def _conv_t1d_samples(g):
    t, w = (lambda s, lay="C": g.t(s, lay, low=-1, high=1)), (lambda s, lay="C": _w(g, s, lay))
    return [g.S(t((2, 3, 4)), w((3, 2, 3)), w((2,))), g.S(t((3, 4)), w((3, 2, 3))),
            g.S(t((1, 2, 4)), w((2, 3, 3)), w((3,)), 2), g.S(t((1, 2, 4)), w((2, 2, 3)), stride=2, padding=1, output_padding=1),
            g.S(t((1, 2, 4)), w((2, 2, 3)), None, 1, 1, 0, 1, 2),                                   # dilation
            g.S(t((1, 4, 3)), w((4, 1, 3)), w((2,)), groups=2), g.S(t((1, 3, 4)), w((3, 1, 2)), groups=3, stride=3),
            g.S(t((1, 2, 5)), w((2, 2, 3)), stride=(3,), padding=(2,), output_padding=(2,), dilation=(2,)),
            g.S(t((2, 3, 4), "T"), w((3, 2, 2), "P"), w((2,), "S")), g.S(t((0, 2, 4)), w((2, 3, 3))),
            g.S(t((4, 16, 40)), w((16, 8, 4)), w((8,)), stride=2, padding=1)]


def _conv_t2d_samples(g):
    t, w = (lambda s, lay="C": g.t(s, lay, low=-1, high=1)), (lambda s, lay="C": _w(g, s, lay))
    return [g.S(t((1, 2, 3, 3)), w((2, 2, 2, 2)), w((2,))), g.S(t((2, 3, 3)), w((2, 2, 2, 2))),
            g.S(t((1, 2, 3, 2)), w((2, 2, 3, 3)), None, 2, 1, 1),
            g.S(t((1, 2, 3, 3)), w((2, 1, 3, 2)), stride=(2, 1), padding=(1, 0), output_padding=(1, 0)),
            g.S(t((1, 2, 3, 3)), w((2, 2, 2, 2)), dilation=2), g.S(t((1, 4, 2, 2)), w((4, 1, 2, 2)), w((2,)), groups=2),
            g.S(t((1, 2, 3, 3)), w((2, 1, 3, 3)), groups=2, stride=2, padding=1, output_padding=1),
            g.S(t((1, 2, 3, 3)), w((2, 2, 2, 2)), stride=3, output_padding=2, dilation=1),
            g.S(t((1, 2, 4, 3), "T"), w((2, 2, 2, 2), "P"), w((2,), "S")), g.S(t((0, 2, 3, 3)), w((2, 2, 2, 2))),
            g.S(t((2, 16, 12, 12)), w((16, 8, 3, 3)), w((8,)), stride=2, padding=1, output_padding=1)]


def _conv_t_errors(nd):
    def gen(g):
        t = g.t
        sp, k = (5,) * nd, (3,) * nd
        return [g.S(t((1, 4) + sp), t((3, 2) + k)),                                 # wrong channel count
                g.S(t((1, 3) + sp), t((3, 2) + k), stride=2, output_padding=2),     # output_padding >= stride
                g.S(t((1, 3) + sp), t((3, 2) + k), output_padding=1),
                g.S(t((1, 3) + sp), t((3, 2) + k), groups=2),                       # channels not divisible
                g.S(t((1, 3) + sp), t((3, 2) + k), t((3,))),                        # bias of the wrong size
                g.S(t((1, 3) + (1,) * nd), t((3, 2) + k), padding=3)]               # negative output size
    return gen


def _unfold_samples(g):
    t = g.t
    return [g.S(t((1, 2, 4, 4)), 2), g.S(t((2, 4, 3)), (2, 2)), g.S(t((1, 2, 5, 5)), 3, 1, 1, 2),
            g.S(t((1, 1, 6, 5)), (2, 3), dilation=(2, 1), padding=(1, 0), stride=(1, 2)),
            g.S(t((1, 2, 4, 5), "T"), 2, stride=2), g.S(t((2, 3, 4, 4), "P"), kernel_size=(3, 2)),
            g.S(t((1, 2, 3, 3)), 3), g.S(t((0, 2, 3, 3)), 2), g.S(t((2, 8, 20, 20)), 3, padding=1)]


def _unfold_errors(g):
    t = g.t
    return [g.S(t((4, 4)), 2), g.S(t((1, 1, 2, 2)), 3), g.S(t((1, 1, 4, 4)), 2, stride=0),
            g.S(t((1, 1, 4, 4)), 2, padding=-1), g.S(t((1, 1, 1, 4, 4)), 2)]


def _fold_samples(g):
    t = g.t
    return [g.S(t((1, 8, 9)), (4, 4), 2), g.S(t((8, 9)), 4, (2, 2)),                      # batched, unbatched
            g.S(t((1, 9, 4)), (4, 4), 3, 1, 1, 2),                                       # dilation, padding, stride
            g.S(t((2, 6, 12)), (6, 5), (2, 3), dilation=(2, 1), padding=(1, 0), stride=(1, 2)),
            g.S(t((1, 3, 9)), (3, 3), kernel_size=(1, 3), stride=(1, 1), padding=(0, 1)),
            g.S(t((1, 4, 6), "T"), (3, 4), 2), g.S(t((2, 4, 4), "P"), (3, 3), 2), g.S(t((0, 4, 9)), (4, 4), 2),
            g.S(t((1, 8, 4)), (3, 3), 2, stride=1)] + (
        # torch accumulates the overlapping windows in the half type (10x kindle's error): float32/64 only
        [g.S(t((2, 72, 400)), (20, 20), 3, padding=1)] if g.dtype in F32_64 else [])


def _fold_errors(g):
    t = g.t
    return [g.S(t((1, 4, 5)), (3, 3), 2), g.S(t((1, 3, 4)), (3, 3), 2), g.S(t((1, 4, 4)), (3, 3), 2, stride=0),
            g.S(t((4,)), (3, 3), 2)]


# ---------------------------------------------------------------------------------------------
# pooling

def _ties(g, shape, layout="C"):
    return g.t(shape, layout, low=-1, high=1, integer=True)


def _max_pool2d_samples(g):
    t = g.t
    out = [g.S(t((1, 2, 4, 4)), 2), g.S(t((2, 4, 5)), 2), g.S(t((1, 2, 5, 5)), 3, 2, 1),
           g.S(t((1, 1, 6, 7)), (2, 3), (1, 2)), g.S(t((1, 2, 7, 7)), 3, stride=1, dilation=2),
           g.S(t((1, 1, 6, 6)), 3, 2, ceil_mode=True), g.S(t((1, 1, 5, 5)), 2, 2, 1, ceil_mode=True),
           g.S(t((1, 1, 4, 4)), 2, 2, 1, 1, True), g.S(t((1, 1, 6, 6)), 3, 2, 1, 2, True),
           g.S(t((1, 2, 4, 4)), 2, return_indices=True), g.S(t((2, 5, 5)), 3, 2, 1, return_indices=True),
           g.S(t((1, 2, 6, 6)), 2, ceil_mode=True, return_indices=True, stride=(2, 3)),
           g.S(t((1, 2, 5, 4), "T"), 2), g.S(t((2, 3, 4, 4), "P"), (2, 1), return_indices=True),
           g.S(t((1, 2, 4, 4), "E"), 2), g.S(t((1, 1, 4, 5)), kernel_size=(4, 5)), g.S(t((0, 2, 4, 4)), 2),
           g.S(t((1, 1, 4, 4)), 2, stride=[]),
           g.S(_ties(g, (1, 2, 6, 6)), 3, 1, return_indices=True),                  # ties: the first maximum
           g.S(t((4, 16, 32, 32)), 3, 2, 1), g.S(t((2, 8, 33, 31)), 3, 2, 1, ceil_mode=True),
           g.S(t((2, 8, 32, 32)), 2)]
    if g.dtype in FLOATS:
        e = ([v for v in EXTREMAL if v == v] * 3)[:28] + [float("-inf")] * 4
        e = np.array(e).reshape(4, 8)
        e[2:, 6:] = float("-inf")                                          # -inf everywhere in one window
        out.append(g.S(t((1, 1, 4, 8), data=e), 2, return_indices=True))
        out.append(g.S(t((1, 1, 4, 8), data=e), 2))
        out.append(g.S(t((1, 1, 4, 4), data=[float("nan")] + [1.0] * 15), 2, return_indices=True))
        out.append(g.S(t((1, 1, 4, 4), data=[float("nan")] + [1.0] * 15), 3, 1, 1))
        out.append(g.S(t((1, 1, 3, 3), data=[float("-inf")] * 9), 2, 1, 1, return_indices=True))
    return out


def _max_pool1d_samples(g):
    t = g.t
    out = [g.S(t((2, 3, 6)), 2), g.S(t((3, 7)), 3), g.S(t((1, 2, 7)), 3, 2, 1), g.S(t((1, 2, 9)), 2, 1, 0, 3),
           g.S(t((1, 2, 8)), 3, 2, ceil_mode=True), g.S(t((1, 2, 8)), 3, 2, 1, 1, True, True),
           g.S(t((2, 6)), 2, return_indices=True), g.S(t((2, 3, 6), "T"), (2,), (1,), return_indices=True),
           g.S(t((2, 3, 6), "P"), 3), g.S(t((0, 2, 6)), 2), g.S(_ties(g, (2, 10)), 3, 1, return_indices=True),
           g.S(t((4, 16, 400)), 4)]
    if g.dtype in FLOATS:
        out.append(g.S(t((1, 1, 14), data=EXTREMAL), 2, return_indices=True))
    return out


def _pool_errors(nd, maxpool):
    def gen(g):
        t = g.t
        sp = (5,) * nd
        out = [g.S(t((1, 1) + sp), 2, padding=2),                # padding more than half the kernel
               g.S(t((1, 1) + (2,) * nd), 3),                    # kernel larger than the input
               g.S(t(sp if nd == 2 else (5,)), 2),               # too few dims
               g.S(t((1, 1) + sp), 2, stride=0),
               g.S(t((1, 1) + sp), 0)]
        if maxpool:
            out.append(g.S(t((1, 1) + sp), 2, dilation=0))
        elif nd == 2:
            out.append(g.S(t((1, 1) + sp), 2, divisor_override=0))
        return out
    return gen


def _avg_pool2d_samples(g):
    t = g.t
    out = [g.S(t((1, 2, 4, 4)), 2), g.S(t((2, 4, 5)), 2), g.S(t((1, 2, 5, 5)), 3, 2, 1),
           g.S(t((1, 2, 5, 5)), 3, 2, 1, count_include_pad=False), g.S(t((1, 1, 6, 7)), (2, 3), (1, 2)),
           g.S(t((1, 1, 6, 6)), 3, 2, ceil_mode=True), g.S(t((1, 1, 5, 5)), 2, 2, 1, True),
           g.S(t((1, 1, 5, 5)), 2, 2, 1, True, False), g.S(t((1, 1, 5, 6)), 3, 2, 1, True, True),
           g.S(t((1, 1, 4, 4)), 2, divisor_override=3), g.S(t((1, 1, 5, 5)), 3, 2, 1, False, False, 2),
           g.S(t((1, 2, 5, 4), "T"), 2), g.S(t((2, 3, 4, 4), "P"), (2, 1), padding=(1, 0)), g.S(t((1, 2, 4, 4), "E"), 2),
           g.S(t((1, 1, 4, 5)), kernel_size=(4, 5)), g.S(t((0, 2, 4, 4)), 2), g.S(t((1, 1, 4, 4)), 2, stride=[]),
           g.S(t((4, 16, 32, 32)), 3, 2, 1), g.S(t((2, 8, 33, 31)), 3, 2, 1, ceil_mode=True),
           g.S(t((2, 8, 32, 32)), 2)]
    if g.dtype in FLOATS:
        out.append(g.S(t((1, 1, 2, 7), data=EXTREMAL), (1, 2)))
    return out


def _avg_pool1d_samples(g):
    t = g.t
    return [g.S(t((2, 3, 6)), 2), g.S(t((3, 7)), 3), g.S(t((1, 2, 7)), 3, 2, 1), g.S(t((1, 2, 7)), 3, 2, 1, False, False),
            g.S(t((1, 2, 8)), 3, 2, ceil_mode=True), g.S(t((1, 2, 8)), 3, 2, 1, True, False),
            g.S(t((1, 2, 8)), 3, 2, 1, True, True), g.S(t((2, 3, 6), "T"), (2,), (1,)), g.S(t((2, 3, 6), "P"), 3),
            g.S(t((0, 2, 6)), 2), g.S(t((4, 16, 400)), 4)]


def _adaptive_avg2d_samples(g):
    t = g.t
    return [g.S(t((1, 2, 6, 6)), 3), g.S(t((2, 5, 7)), (3, 4)), g.S(t((1, 2, 5, 7)), (None, 2)), g.S(t((1, 2, 5, 7)), 1),
            g.S(t((1, 1, 3, 2)), (5, 4)), g.S(t((1, 2, 5, 4), "T"), (2, 3)), g.S(t((2, 3, 4, 5), "P"), (3, 1)),
            g.S(t((1, 1, 4, 4)), output_size=(4, 4)), g.S(t((0, 2, 4, 4)), 2), g.S(t((4, 16, 30, 30)), 7)]


def _adaptive_avg1d_samples(g):
    t = g.t
    return [g.S(t((2, 3, 7)), 3), g.S(t((3, 5)), 5), g.S(t((2, 3, 7)), 1), g.S(t((1, 2, 3)), 8), g.S(t((2, 3, 7)), (2,)),
            g.S(t((2, 7, 3), "T"), 4), g.S(t((0, 2, 4)), 2), g.S(t((4, 16, 300)), 7)]


def _adaptive_max2d_samples(g):
    t = g.t
    out = [g.S(t((1, 2, 6, 6)), 3), g.S(t((2, 5, 7)), (3, 4)), g.S(t((1, 2, 5, 7)), (None, 2), True),
           g.S(t((1, 2, 5, 7)), 1, return_indices=True), g.S(t((1, 1, 3, 2)), (5, 4), True),
           g.S(t((1, 2, 5, 4), "T"), (2, 3), True), g.S(t((2, 3, 4, 5), "P"), (3, 1)),
           g.S(_ties(g, (1, 2, 6, 6)), 2, True), g.S(t((4, 16, 30, 30)), 7)]
    if g.dtype in FLOATS:
        out.append(g.S(t((1, 1, 2, 7), data=EXTREMAL), (1, 3), True))
    return out


def _adaptive_max1d_samples(g):
    t = g.t
    out = [g.S(t((2, 3, 7)), 3), g.S(t((3, 5)), 5, True), g.S(t((2, 3, 7)), 1, return_indices=True),
           g.S(t((1, 2, 3)), 8, True), g.S(t((2, 7, 3), "T"), 4, True), g.S(_ties(g, (2, 3, 9)), 4, True),
           g.S(t((4, 16, 300)), 7)]
    if g.dtype in FLOATS:
        out.append(g.S(t((1, 1, 14), data=EXTREMAL), 4, True))
    return out


def _adaptive_errors(nd):
    def gen(g):
        t = g.t
        sp = (4,) * nd
        return [g.S(t(sp), 2), g.S(t((1, 1) + sp), -1), g.S(t((1, 1) + (0,) + sp[1:]), 2),
                g.S(t((1, 1) + sp), (2,) * (nd + 1))]
    return gen


def _interpolate_samples(g):
    t = g.t
    out = [g.S(t((1, 2, 3, 4)), size=(5, 7)), g.S(t((1, 2, 3, 4)), scale_factor=2), g.S(t((1, 1, 4, 5)), size=(2, 3)),
           g.S(t((1, 2, 3, 4)), None, 1.5), g.S(t((1, 2, 3, 4)), scale_factor=(2.0, 0.5)),
           g.S(t((1, 2, 3, 4)), scale_factor=1.7, recompute_scale_factor=True), g.S(t((2, 2, 5)), 8), g.S(t((2, 2, 5)), 3),
           g.S(t((2, 2, 5)), scale_factor=2.5), g.S(t((2, 2, 5)), scale_factor=0.6)]
    for ac in (None, False, True):
        k = {} if ac is None else {"align_corners": ac}
        out += [g.S(t((1, 2, 3, 4)), (5, 7), mode="bilinear", **k), g.S(t((1, 2, 5, 6)), (3, 2), None, "bilinear", **k),
                g.S(t((1, 2, 3, 4)), scale_factor=2, mode="bilinear", **k),
                g.S(t((1, 2, 3, 4)), scale_factor=(1.5, 0.7), mode="bilinear", **k),
                g.S(t((2, 2, 4)), 7, mode="linear", **k), g.S(t((2, 2, 6)), 4, mode="linear", **k),
                g.S(t((2, 2, 4)), scale_factor=1.5, mode="linear", **k)]
    out += [g.S(t((1, 2, 3, 4)), scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
            g.S(t((1, 2, 3, 4)), size=(1, 1), mode="bilinear", align_corners=True),
            g.S(t((1, 2, 1, 1)), size=(3, 3), mode="bilinear", align_corners=True),
            g.S(t((1, 2, 5, 4), "T"), (6, 3), mode="bilinear"), g.S(t((2, 3, 4, 5), "P"), (3, 6)),
            g.S(t((2, 5, 4), "T"), 9, mode="linear", align_corners=True), g.S(t((1, 2, 4, 4), "E"), (5, 5), mode="bilinear"),
            g.S(t((0, 2, 3, 3)), (4, 4), mode="bilinear"), g.S(t((1, 2, 3, 3)), (3, 3), mode="bilinear"),
            g.S(t((2, 8, 30, 30)), (45, 45), mode="bilinear"), g.S(t((2, 8, 30, 30)), scale_factor=2)]
    # bicubic, and antialiasing along axes that shrink and axes that grow (torch's weights on both)
    for mode in ("bicubic", "bilinear"):
        out += [g.S(t((1, 2, 5, 6)), (9, 4), mode=mode, antialias=True), g.S(t((1, 2, 9, 7)), (4, 13), mode=mode),
                g.S(t((1, 2, 9, 7)), scale_factor=(0.4, 2.5), mode=mode, antialias=True)]
    return out


def _interpolate_errors(g):
    t = g.t
    return [g.S(t((1, 1, 4, 4)), size=2, scale_factor=2.0), g.S(t((1, 1, 4, 4))),
            g.S(t((1, 1, 4, 4)), size=2, mode="foo"), g.S(t((1, 1, 4, 4)), size=2, align_corners=True),
            g.S(t((1, 1, 4, 4)), size=2, mode="linear"), g.S(t((1, 4, 4)), size=2, mode="bilinear"),
            g.S(t((1, 1, 4, 4)), size=(2, 2, 2)), g.S(t((4, 4)), size=2)]


def _upsample_samples(g):
    t = g.t
    return [g.S(t((1, 2, 3, 4)), size=(5, 7)), g.S(t((1, 2, 3, 4)), scale_factor=2, mode="bilinear"),
            g.S(t((2, 2, 5)), 8, mode="linear", align_corners=True), g.S(t((1, 2, 3, 4), "T"), (4, 4), None, "bilinear", False)]


# ---------------------------------------------------------------------------------------------
# attention

def _sdpa_samples(g):
    t = lambda s, lay="C": g.t(s, lay, low=-1, high=1)  # noqa: E731
    m = g.rng.random((3, 5)) < 0.6
    m[:, 0] = True                                  # every query attends to something
    return [g.S(t((1, 2, 3, 4)), t((1, 2, 5, 4)), t((1, 2, 5, 3))), g.S(t((2, 3, 4)), t((2, 3, 4)), t((2, 3, 4))),
            g.S(t((1, 2, 3, 4)), t((1, 2, 3, 4)), t((1, 2, 3, 4)), is_causal=True),
            g.S(t((1, 1, 3, 4)), t((1, 1, 5, 4)), t((1, 1, 5, 2)), is_causal=True),          # causal, L < S
            g.S(t((1, 2, 3, 4)), t((1, 2, 5, 4)), t((1, 2, 5, 3)), g.t((3, 5), data=m, dtype="bool")),
            g.S(t((1, 2, 3, 4)), t((1, 2, 5, 4)), t((1, 2, 5, 3)), attn_mask=t((1, 1, 3, 5))),  # additive mask
            g.S(t((1, 2, 3, 4)), t((1, 2, 5, 4)), t((1, 2, 5, 3)), scale=0.3),
            g.S(t((1, 2, 3, 4)), t((1, 2, 5, 4)), t((1, 2, 5, 3)), None, 0.0, False, scale=2.0),
            g.S(t((1, 2, 3, 4), "T"), t((1, 2, 5, 4), "S"), t((1, 2, 5, 3), "P")),
            g.S(t((1, 2, 3, 4)), t((1, 2, 3, 4)), t((1, 2, 3, 4)),
                g.t((3, 3), data=np.array([[1, 0, 0], [0, 0, 0], [1, 1, 1]], np.bool_), dtype="bool")),  # a fully masked row
            g.S(t((2, 4, 16, 8)), t((2, 4, 20, 8)), t((2, 4, 20, 8)), is_causal=True),
            # small ones for gradcheck
            g.S(t((1, 1, 2, 3)), t((1, 1, 3, 3)), t((1, 1, 3, 2))), g.S(t((1, 2, 3)), t((1, 2, 3)), t((1, 2, 2)), is_causal=True),
            g.S(t((1, 1, 2, 3)), t((1, 1, 3, 3)), t((1, 1, 3, 2)), attn_mask=t((2, 3)), scale=0.7),
            g.S(t((1, 2, 3)), t((1, 3, 3)), t((1, 3, 2)), g.t((2, 3), data=[[1, 0, 1], [0, 1, 1]], dtype="bool"))]


def _sdpa_errors(g):
    t = g.t
    return [g.S(t((1, 2, 3, 4)), t((1, 2, 5, 3)), t((1, 2, 5, 3))), g.S(t((1, 2, 3, 4)), t((1, 2, 5, 4)), t((1, 2, 4, 3))),
            g.S(t((1, 2, 3, 4)), t((1, 2, 5, 4)), t((1, 2, 5, 3)), attn_mask=t((3, 4)))]


# ---------------------------------------------------------------------------------------------
# the entries

def _errs_hardtanh(g):
    return [g.S(g.t((3, 4)), 1.0, -1.0)]


NN_OPS: list[OpInfo] = [
    # ---- activations
    act("relu", NUMERIC),
    act("relu6", NUMERIC),
    act("elu", kwargs=((0.5,), {"alpha": 2.0}), extremal=PIECEWISE_EXTREMAL),
    act("selu", extremal=PIECEWISE_EXTREMAL),
    act("celu", kwargs=((0.5,), {"alpha": 2.0}), extremal=PIECEWISE_EXTREMAL, errors=lambda g: [g.S(g.t((3, 4)), 0.0)]),
    act("leaky_relu", kwargs=((0.2,), {"negative_slope": -0.5})),
    act("hardtanh", SIGNED, kwargs=((-0.5, 0.5), {"min_val": 0.0, "max_val": 2.0}), errors=_errs_hardtanh),
    act("gelu", inplace=False, extremal=FINITE_EXTREMAL, kwargs=({"approximate": "tanh"}, {"approximate": "none"}),
        errors=lambda g: [g.S(g.t((3, 4)), approximate="foo")]),
    act("silu"),
    act("mish", tol={"float16": (2e-3, 1e-4)}),    # torch and kindle are both 1 ulp from the exact value
    act("hardswish", extremal=PIECEWISE_EXTREMAL),
    act("hardsigmoid"),
    act("softplus", inplace=False, kwargs=((2, 5), {"beta": 0.5, "threshold": 1})),
    act("softsign", NUMERIC, inplace=False),
    act("tanhshrink", NUMERIC, inplace=False),
    act("threshold", SIGNED, args=(0.5, -1.0), kwargs=((1, 3),)),
    act("logsigmoid", inplace=False),
    act("sigmoid", ALL, inplace=False),
    act("tanh", ALL, inplace=False),
    fop("softmax", _softmax_samples, tol=ACC, errors=_softmax_errors, kind="nn_reduction"),
    fop("log_softmax", _softmax_samples, tol=ACC, errors=_softmax_errors, kind="nn_reduction"),
    fop("softmin", _softmax_samples, tol=ACC, errors=_softmax_errors, kind="nn_reduction"),
    fop("glu", _glu_samples, errors=lambda g: [g.S(g.t((3, 5))), g.S(g.t((4, 6)), 2)]),
    fop("prelu", _prelu_samples, errors=lambda g: [g.S(g.t((2, 3, 4)), g.t((2,)))]),

    # ---- linear
    fop("linear", _linear_samples, NUMERIC, tol=ACC, errors=_linear_errors),
    fop("bilinear", _bilinear_samples, NUMERIC, tol=ACC, errors=_bilinear_errors),

    # ---- losses
    fop("mse_loss", _pointwise_loss(), tol=ACC, errors=_pointwise_loss_errors, kind="nn_loss"),
    fop("l1_loss", _pointwise_loss(), tol=ACC, errors=_pointwise_loss_errors, kind="nn_loss"),
    fop("smooth_l1_loss", _smooth_l1_samples, tol=ACC, errors=_pointwise_loss_errors, kind="nn_loss"),
    fop("huber_loss", _huber_samples, tol=ACC, errors=_pointwise_loss_errors, kind="nn_loss"),
    fop("nll_loss", _class_loss_samples(False), tol=ACC, errors=_class_loss_errors(False), kind="nn_loss"),
    fop("cross_entropy", _class_loss_samples(True), tol=HALF_LOOSE, errors=_class_loss_errors(True), kind="nn_loss"),
    fop("binary_cross_entropy", _bce_samples, tol=HALF_LOOSE, errors=_bce_errors, kind="nn_loss"),
    fop("binary_cross_entropy_with_logits", _bce_logits_samples, tol=HALF_LOOSE, errors=_bce_logits_errors, kind="nn_loss"),
    fop("kl_div", _kl_div_samples, tol=ACC, errors=lambda g: [g.S(g.t((3, 4)), g.t((3, 4)), reduction="foo"),
                                                              g.S(g.t((3, 4)), g.t((2, 4)))], kind="nn_loss"),
    fop("poisson_nll_loss", _poisson_samples, NUMERIC, tol=HALF_LOOSE, errors=_pointwise_loss_errors, kind="nn_loss"),
    fop("gaussian_nll_loss", _gaussian_nll_samples, tol=HALF_LOOSE, errors=_gaussian_nll_errors, kind="nn_loss"),
    fop("margin_ranking_loss", _margin_ranking_samples, NUMERIC, tol=ACC, kind="nn_loss",
        errors=lambda g: [g.S(g.t((3,)), g.t((3,)), _pm1(g, (4,))), g.S(g.t((3,)), g.t((3,)), _pm1(g, (3,)), reduction="foo"),
                          g.S(g.t((3, 4)), g.t((4,)), _pm1(g, (3, 1)))]),   # torch: all of the same dimension
    fop("hinge_embedding_loss", _hinge_samples, NUMERIC, tol=ACC, kind="nn_loss",
        errors=lambda g: [g.S(g.t((3, 4)), _pm1(g, (2, 4))), g.S(g.t((3, 4)), _pm1(g, (3, 4)), reduction="foo")]),
    fop("cosine_embedding_loss", _cos_emb_samples, ALL, tol=HALF_LOOSE, errors=_cos_emb_errors, kind="nn_loss"),
    fop("triplet_margin_loss", _triplet_samples, NUMERIC, tol=HALF_LOOSE, errors=_triplet_errors, kind="nn_loss"),
    fop("multi_margin_loss", _multi_margin_samples, ("float32", "float64"), tol=HALF_LOOSE, errors=_multi_margin_errors, kind="nn_loss"),
    fop("multilabel_margin_loss", _multilabel_margin_samples, ("float32", "float64"), tol=HALF_LOOSE, kind="nn_loss",
        errors=lambda g: [g.S(g.t((3, 5)), g.idx([[5, -1, 0, 0, 0]] * 3)), g.S(g.t((3, 5)), g.idx([0, 1, 2]))]),
    # (torch also pools int64 and bool tensors, through integer powers; Kindle has float kernels only)
    fop("lp_pool2d", _lp_pool2d_samples, FLOATS + ("int64", "bool"), dtypes_gap=("int64", "bool"), tol=HALF_LOOSE, kind="nn"),
    fop("lp_pool1d", _lp_pool1d_samples, FLOATS + ("int64", "bool"), dtypes_gap=("int64", "bool"), tol=HALF_LOOSE, kind="nn",
        op_names=("lp_pool2d",)),
    fop("cosine_similarity", _cos_sim_samples, tol=HALF_LOOSE,
        errors=lambda g: [g.S(g.t((3, 4)), g.t((2, 4))), g.S(g.t((3, 4)), g.t((3, 4)), 2)]),
    fop("pairwise_distance", _pairwise_samples, NUMERIC, tol=HALF_LOOSE, errors=lambda g: [g.S(g.t((3, 4)), g.t((2, 4)))]),
    fop("normalize", _normalize_samples, tol=HALF_LOOSE, errors=lambda g: [g.S(g.t((3, 4)), dim=2)]),

    # ---- normalisation
    fop("layer_norm", _layer_norm_samples, tol=HALF_LOOSE, grad_tol=NORM_GRAD_TOL, errors=_layer_norm_errors, kind="nn_norm"),
    # complex64: the complex rsqrt of a mean of 263 squares; both libraries are 3e-4 from complex128
    # (the input gradients 2e-3 on a (131, 263) sample: kindle 1.9e-3, torch 2.2e-3)
    fop("rms_norm", _rms_norm_samples, FLOATS + COMPLEX, tol={**HALF_LOOSE, "complex64": (1e-5, 1e-4)},
        grad_tol={**NORM_GRAD_TOL, "complex64": (1e-3, 1e-3)}, errors=_rms_norm_errors, kind="nn_norm"),
    fop("group_norm", _group_norm_samples, tol=HALF_LOOSE, grad_tol=NORM_GRAD_TOL, errors=_group_norm_errors, kind="nn_norm"),
    fop("batch_norm", _batch_norm_samples, tol=HALF_LOOSE, grad_tol=NORM_GRAD_TOL, errors=_batch_norm_errors, mutates=(0, 1), kind="nn_norm"),
    fop("instance_norm", _instance_norm_samples, tol=HALF_LOOSE, grad_tol=NORM_GRAD_TOL, errors=_instance_norm_errors, mutates=(0, 1),
        kind="nn_norm"),

    # ---- dropout (deterministic samples; statistics in test_nn_functional.py)
    fop("dropout", _dropout_samples([(3, 4), (2, 3, 4), (), (0, 3)]), ALL, inplace=True, errors=_dropout_errors,
        kind="nn_random"),
    fop("dropout1d", _dropout_samples([(2, 3, 4), (3, 4)]), ALL, inplace=True, errors=_dropout_nd_errors(1), kind="nn_random"),
    fop("dropout2d", _dropout_samples([(2, 3, 2, 2), (3, 2, 2)]), ALL, inplace=True, errors=_dropout_nd_errors(2),
        kind="nn_random"),
    fop("dropout3d", _dropout_samples([(2, 3, 2, 2, 2), (3, 2, 2, 2)]), ALL, inplace=True, errors=_dropout_nd_errors(3),
        kind="nn_random"),
    fop("alpha_dropout", _alpha_dropout_samples, ALL, inplace=True, errors=lambda g: [g.S(g.t((3, 4)), 1.5, True)],
        kind="nn_random"),

    # ---- sparse
    fop("embedding", _embedding_samples, ALL, errors=_embedding_errors, mutates=(0,)),
    fop("embedding_bag", _embedding_bag_samples, tol=ACC, errors=_embedding_bag_errors),
    fop("one_hot", _one_hot_samples, ("int64",), errors=_one_hot_errors),

    # ---- vision
    fop("pad", _pad_samples, ALL, errors=_pad_errors),
    fop("pixel_shuffle", _pixel_shuffle_samples, ALL, errors=_pixel_errors("pixel_shuffle")),
    fop("pixel_unshuffle", _pixel_unshuffle_samples, ALL, errors=_pixel_errors("pixel_unshuffle")),
    fop("channel_shuffle", _channel_shuffle_samples, ALL, errors=_channel_shuffle_errors),
    fop("native_channel_shuffle", _channel_shuffle_samples, ALL, op_names=()),

    # ---- convolution
    fop("conv1d", _conv1d_samples, NUMERIC + COMPLEX, dtypes_gap=INTS, tol=CONV_ACC, grad_tol=CONV_GRAD_TOL, errors=_conv_errors(1), kind="nn_conv",
        op_names=("conv1d", "_conv1d_padding")),
    fop("conv2d", _conv2d_samples, NUMERIC + COMPLEX, dtypes_gap=INTS, tol=CONV_ACC, grad_tol=CONV_GRAD_TOL, errors=_conv_errors(2), kind="nn_conv",
        op_names=("conv2d", "_conv2d_padding")),
    fop("conv_transpose1d", _conv_t1d_samples, FLOATS + COMPLEX + ("int64",), dtypes_gap=("int64",), tol=CONV_T_TOL, grad_tol=CONV_GRAD_TOL, errors=_conv_t_errors(1), kind="nn_conv"),
    fop("conv_transpose2d", _conv_t2d_samples, FLOATS + COMPLEX + ("int64",), dtypes_gap=("int64",), tol=CONV_T_TOL, grad_tol=CONV_GRAD_TOL, errors=_conv_t_errors(2), kind="nn_conv"),
    fop("unfold", _unfold_samples, FLOATS + COMPLEX + ("bool",), dtypes_gap=("bool",), op_names=("im2col",), errors=_unfold_errors, kind="nn_conv"),
    fop("fold", _fold_samples, FLOATS + COMPLEX + ("bool",), dtypes_gap=("bool",), tol=ACC, op_names=("col2im",), errors=_fold_errors, kind="nn_conv"),

    # ---- pooling
    fop("max_pool2d", _max_pool2d_samples, NUMERIC, op_names=("max_pool2d_with_indices", "_max_pool2d_values"),
        errors=_pool_errors(2, True),
        kind="nn_pool"),
    fop("max_pool1d", _max_pool1d_samples, op_names=("max_pool2d_with_indices",), errors=_pool_errors(1, True),
        kind="nn_pool"),
    fop("avg_pool2d", _avg_pool2d_samples, FLOATS + ("int64",), dtypes_gap=("int64",), tol=ACC, errors=_pool_errors(2, False), kind="nn_pool"),
    fop("avg_pool1d", _avg_pool1d_samples, FLOATS + ("int64",), dtypes_gap=("int64",), tol=ACC, op_names=("avg_pool2d",), errors=_pool_errors(1, False),
        kind="nn_pool"),
    fop("adaptive_avg_pool2d", _adaptive_avg2d_samples, tol=ACC, errors=_adaptive_errors(2), kind="nn_pool"),
    fop("adaptive_avg_pool1d", _adaptive_avg1d_samples, tol=ACC, op_names=("adaptive_avg_pool2d",),
        errors=_adaptive_errors(1), kind="nn_pool"),
    fop("adaptive_max_pool2d", _adaptive_max2d_samples, errors=_adaptive_errors(2), kind="nn_pool"),
    fop("adaptive_max_pool1d", _adaptive_max1d_samples, op_names=("adaptive_max_pool2d",), errors=_adaptive_errors(1),
        kind="nn_pool"),
    # 3-d: compositions of the 2-d kernels (python/kindle/nn/functional3d.py)
    fop("conv3d", _conv3d_samples, NUMERIC + COMPLEX, dtypes_gap=INTS, tol=CONV_ACC, grad_tol=CONV_GRAD_TOL, errors=_conv_errors(3), kind="nn_conv",
        op_names=("conv3d", "_conv3d_padding")),
    fop("conv_transpose3d", _conv_t3d_samples, FLOATS + COMPLEX + ("int64",), dtypes_gap=("int64",), tol=CONV_T_TOL, grad_tol=CONV_GRAD_TOL, kind="nn_conv"),
    fop("max_pool3d", _max_pool3d_samples, NUMERIC, errors=_pool_errors(3, True), kind="nn_pool",
        op_names=("max_pool3d_with_indices",)),
    fop("avg_pool3d", _avg_pool3d_samples, ("float32", "float64", "int64"), dtypes_gap=("int64",), tol=ACC, errors=_pool_errors(3, False), kind="nn_pool"),
    fop("lp_pool3d", _lp_pool3d_samples, ("float32", "float64", "int64", "bool"), dtypes_gap=("int64", "bool"),
        tol=HALF_LOOSE, kind="nn_pool"),
    fop("adaptive_avg_pool3d", _adaptive3d_samples(False), FLOATS, tol=ACC, errors=_adaptive_errors(3), kind="nn_pool"),
    fop("adaptive_max_pool3d", _adaptive3d_samples(True), FLOATS, errors=_adaptive_errors(3), kind="nn_pool"),
    # (uint8: torch's fixed-point kernels, reproduced level for level except an occasional rounding
    # tie with antialiasing: tests/python/test_core_compat.py checks the exact cases)
    fop("interpolate", _interpolate_samples, FLOATS + ("uint8",), tol=dict(ACC, uint8=(0, 1)),
        errors=_interpolate_errors),
    fop("upsample", _upsample_samples, FLOATS + ("uint8",), tol=ACC, op_names=("interpolate",)),

    # ---- attention
    fop("scaled_dot_product_attention", _sdpa_samples, tol=HALF_LOOSE, errors=_sdpa_errors),
]
