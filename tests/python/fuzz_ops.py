"""Step generators for the differential fuzzer (see fuzz_programs.py). Each takes a `Gen` and
returns one step ``(kind, name, args, kwargs)`` (making the inputs it needs first) or None."""
from __future__ import annotations

import math

from fuzz_programs import BIG_EMPTY, BINARY, DT, DTYPES, MAX_NUMEL, NO_INPLACE, UNARY, Lit, Ref, Retry


def _x(g, pred=lambda t: True, **kw):
    i = g.tensor(pred)
    if i is None:
        i = g.input(**kw)
    if i is None or not isinstance(g.t(i), g.torch.Tensor) or not pred(g.t(i)):
        raise Retry()
    return i


def _dim(g, nd, oob=0.04):
    if g.r.random() < oob:
        return g.r.choice([nd, -nd - 1, 5])
    return g.r.randint(-max(nd, 1), max(nd, 1) - 1)


def _bcast_shape(g, shape):
    """A shape broadcastable with `shape` (dims dropped or set to 1, or a new leading dim)."""
    r = g.r
    s = list(shape)
    if s and r.random() < 0.4:
        s = s[r.randint(0, len(s)):]
    s = [1 if r.random() < 0.3 else d for d in s]
    if r.random() < 0.15:
        s = [r.choice([1, 2])] + s
    if r.random() < 0.05 and s:
        s[r.randrange(len(s))] += 1  # not broadcastable
    return tuple(s)


def unary(g):
    r = g.r
    x = _x(g)
    name = r.choice(UNARY)
    kw = {}
    if name == "clamp":
        kw = r.choice([{"min": g.scalar()}, {"max": g.scalar()}, {"min": -1, "max": 1.5}, {"min": 2, "max": -2}])
    elif name == "round" and r.random() < 0.3:
        kw = {"decimals": r.choice([0, 1, 2, -1])}
    elif name == "nan_to_num" and r.random() < 0.5:
        kw = {"nan": 0.5, "posinf": 2.0}
    form = r.choice(["torch", "method", "inplace"])
    if form == "inplace" and name not in NO_INPLACE:
        return ("method", name + "_", (Ref(x),), kw)
    if name == "relu" and form == "torch":
        return ("F", "relu", (Ref(x),), kw)
    return ("torch", name, (Ref(x),), kw) if form == "torch" else ("method", name, (Ref(x),), kw)


def binary(g):
    r = g.r
    x = _x(g)
    name = r.choice(BINARY)
    c = r.random()
    if c < 0.35:
        y = g.scalar()
    elif c < 0.75:
        y = Ref(g.input(_bcast_shape(g, g.t(x).shape), g.dtype()))
    elif c < 0.85:
        y = Ref(g.input((), g.dtype()))
    else:
        y = Ref(_x(g))
    kw = {}
    if name == "div" and r.random() < 0.4:
        kw = {"rounding_mode": r.choice(["trunc", "floor"])}
    if name in ("add", "sub") and r.random() < 0.25:
        kw = {"alpha": r.choice([2, -1, 0.5, True])}
    form = r.choice(["torch", "method", "inplace", "operator"])
    if form == "inplace":
        return ("method", name + "_", (Ref(x), y), kw)
    if form == "method":
        return ("method", name, (Ref(x), y), kw)
    if name == "pow" and not isinstance(y, Ref) and r.random() < 0.3:
        return ("torch", "pow", (y, Ref(x)), {})
    return ("torch", name, (Ref(x), y), kw)


def where(g):
    r = g.r
    x = _x(g)
    shape = g.t(x).shape
    cond = Ref(g.input(_bcast_shape(g, shape), "bool"))
    if r.random() < 0.15:
        return ("torch", "where", (cond,), {})
    y = g.scalar() if r.random() < 0.4 else Ref(g.input(_bcast_shape(g, shape), g.dtype()))
    return ("torch", "where", (cond, Ref(x), y), {})


def reduce(g):
    r = g.r
    x = _x(g)
    t = g.t(x)
    nd = t.dim()
    name = r.choice(["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "var", "std", "cumsum",
                     "logsumexp", "all", "any", "max", "min", "sum", "mean"])
    kw, args = {}, ()
    c = r.random()
    if name in ("cumsum", "logsumexp") or (name in ("max", "min") and c < 0.7):
        args = (_dim(g, nd),)
    elif c < 0.3 and name not in ("max", "min"):
        pass  # full reduction
    elif c < 0.5 and name in ("sum", "mean", "amax", "amin", "logsumexp", "var", "std", "all", "any") and nd:
        args = (tuple(r.sample(range(-nd, 0) if r.random() < 0.5 else range(nd), r.randint(1, nd))),)
    elif name not in ("max", "min"):
        args = (_dim(g, nd),)
    if args and name not in ("cumsum",) and r.random() < 0.5:
        kw["keepdim"] = r.random() < 0.5
    if name in ("sum", "prod", "cumsum", "mean") and r.random() < 0.2:
        kw["dtype"] = DT(r.choice(DTYPES))
    if name in ("var", "std") and r.random() < 0.4:
        kw["correction"] = r.choice([0, 1, 2])
    if r.random() < 0.5:
        return ("method", name, (Ref(x),) + args, kw)
    return ("torch", name, (Ref(x),) + args, kw)


def _factor_shape(g, n):
    dims = []
    for p in [2, 2, 3, 2, 5]:
        if n % p == 0 and g.r.random() < 0.5:
            dims.append(p)
            n //= p
    dims.append(n)
    g.r.shuffle(dims)
    if g.r.random() < 0.3 and dims:
        dims[g.r.randrange(len(dims))] = -1
    return tuple(dims)


def view(g):
    r = g.r
    x = _x(g)
    t = g.t(x)
    nd, shape = t.dim(), tuple(t.shape)
    name = r.choice(["view", "reshape", "transpose", "permute", "expand", "narrow", "select", "slice",
                     "unsqueeze", "squeeze", "flip", "t", "unfold", "as_strided", "movedim", "flatten",
                     "contiguous", "diagonal", "slice"])
    d = _dim(g, nd)
    size = shape[d] if -nd <= d < nd else 1
    if name in ("view", "reshape"):
        return ("method", name, (Ref(x), _factor_shape(g, t.numel())), {})
    if name == "transpose":
        return ("method", name, (Ref(x), d, _dim(g, nd)), {})
    if name == "permute":
        p = list(range(nd))
        r.shuffle(p)
        return ("method", name, (Ref(x), tuple(p)), {})
    if name == "expand":
        s = [r.choice([1, 2, 3]) if e == 1 else r.choice([e, -1]) for e in shape]
        return ("method", name, (Ref(x), tuple([r.choice([2, 0])] * (r.random() < 0.3) + s)), {})
    if name == "narrow":
        start = r.randint(-size, size)
        return ("method", name, (Ref(x), d, start, r.randint(0, max(0, size - start % max(size, 1)))), {})
    if name == "select":
        return ("method", name, (Ref(x), d, r.randint(-size - 1, size)), {})
    if name == "slice":
        steps = [None, 1, 2, 3] if r.random() > 0.03 else [-1, 0]  # rarely invalid
        idx = tuple(slice(r.choice([None, 0, 1, -1, -3, 7]), r.choice([None, -1, 2, 100]), r.choice(steps))
                    for _ in range(r.randint(1, max(nd, 1))))
        return ("getitem", "getitem", (Ref(x), idx), {})
    if name == "unsqueeze":
        return ("method", name, (Ref(x), r.randint(-nd - 1, nd)), {})
    if name == "squeeze":
        return ("method", name, (Ref(x),) + r.choice([(), (d,), (tuple(range(nd)),)]), {})
    if name == "flip":
        return ("method", name, (Ref(x), tuple(r.sample(range(nd), r.randint(0, nd)))), {})
    if name == "t":
        return ("method", name, (Ref(x),), {})
    if name == "unfold":
        return ("method", name, (Ref(x), d, r.randint(0, size + 1), r.choice([1, 1, 2, 3])), {})
    if name == "movedim":
        return ("method", name, (Ref(x), d, _dim(g, nd)), {})
    if name == "flatten":
        return ("method", name, (Ref(x), r.randint(0, max(nd - 1, 0)), -1), {})
    if name == "diagonal":
        return ("method", name, (Ref(x), r.randint(-2, 2)), {})
    if name == "as_strided":
        n = t.numel()
        whole = t.is_contiguous() and not t.storage_offset() and t.untyped_storage().nbytes() == n * t.element_size()
        if not whole or n == 0:
            return None
        sizes = tuple(r.randint(0, 4) for _ in range(r.randint(0, 3)))
        strides = tuple(r.randint(0, 3) for _ in sizes)
        span = sum((s - 1) * st for s, st in zip(sizes, strides) if s > 0)
        if span >= n:
            return None
        return ("method", name, (Ref(x), sizes, strides, r.randint(0, n - 1 - span)), {})
    return ("method", name, (Ref(x),), {})


def _index_lit(g, size, shape):
    r = g.r
    lo, hi = -size, size - 1
    if r.random() < 0.08:
        lo, hi = -size - 2, size + 1  # out of range
    if hi < lo:
        return Lit([], "int64") if not shape or 0 in shape else Lit([[0]], "int64")
    if math.prod(shape) > MAX_NUMEL:
        raise Retry()
    data = [r.randint(lo, hi) for _ in range(math.prod(shape))]
    return Lit(_nest(data, shape), r.choice(["int64", "int64", "int32"]))


def _nest(flat, shape):
    if math.prod(shape) > MAX_NUMEL or max(shape, default=0) > MAX_NUMEL:
        raise Retry()
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return list(flat)
    k = math.prod(shape[1:])
    return [_nest(flat[i * k:(i + 1) * k], shape[1:]) for i in range(shape[0])]


def index(g):
    r = g.r
    x = _x(g, lambda t: t.dim() > 0)
    t = g.t(x)
    nd, shape = t.dim(), tuple(t.shape)
    d = r.randrange(nd) if nd else 0
    size = shape[d] if nd else 1
    name = r.choice(["int", "tuple", "mask", "itensor", "index_select", "gather", "scatter", "masked_fill",
                     "setitem", "nonzero", "take_along_dim"])
    if name == "int":
        return ("getitem", "getitem", (Ref(x), r.randint(-size - 1, size)), {})
    if name == "tuple":
        parts = [r.choice([0, -1, slice(None), slice(1, None), None, Ellipsis]) for _ in range(r.randint(1, 3))]
        if parts.count(Ellipsis) > 1:
            return None
        return ("getitem", "getitem", (Ref(x), tuple(parts)), {})
    if name == "mask":
        k = r.randint(1, nd)
        if math.prod(shape[:k]) > MAX_NUMEL:
            raise Retry()
        mask = Lit(_nest([r.random() < 0.5 for _ in range(math.prod(shape[:k]))], shape[:k]), "bool")
        return ("getitem", "getitem", (Ref(x), mask), {})
    if name == "itensor":
        idx = _index_lit(g, shape[0], (r.randint(0, 4),) if r.random() < 0.7 else (2, 2))
        if r.random() < 0.3 and nd >= 2:
            return ("getitem", "getitem", (Ref(x), (slice(None), _index_lit(g, shape[1], (3,)))), {})
        return ("getitem", "getitem", (Ref(x), idx), {})
    if name == "index_select":
        return ("torch", name, (Ref(x), d, _index_lit(g, size, (r.randint(0, 4),))), {})
    if name in ("gather", "take_along_dim", "scatter"):
        ishape = list(shape)
        ishape[d] = r.randint(0, size if name == "scatter" else 4)
        ishape = [r.randint(1, s) if s and i != d else s for i, s in enumerate(ishape)]
        if name != "scatter":
            idx = _index_lit(g, size, tuple(ishape))
            return ("torch", name, (Ref(x), idx, d) if name == "take_along_dim" else (Ref(x), d, idx), {})
        if max(math.prod(ishape), math.prod(ishape[:d] + ishape[d + 1:])) > MAX_NUMEL:
            raise Retry()
        flat = []  # unique along d (scatter with duplicate indices is nondeterministic)
        outer = math.prod(ishape[:d] + ishape[d + 1:])
        perms = [r.sample(range(size), ishape[d]) for _ in range(outer)]
        for pos in range(math.prod(ishape)):
            inner = math.prod(ishape[d + 1:])
            k, o = (pos // inner) % max(ishape[d], 1), (pos // (inner * max(ishape[d], 1))) * inner + pos % inner
            flat.append(perms[o][k])
        idx = Lit(_nest(flat, tuple(ishape)), "int64")
        if r.random() < 0.5:
            return ("method", r.choice(["scatter", "scatter_"]), (Ref(x), d, idx), {"value": g.scalar()})
        src = Ref(g.input(tuple(ishape), r.choice([str(t.dtype).split(".")[-1], g.dtype()])))
        return ("method", r.choice(["scatter", "scatter_", "scatter_add"]), (Ref(x), d, idx, src), {})
    if name == "masked_fill":
        mask = Ref(g.input(_bcast_shape(g, shape), "bool"))
        val = g.scalar() if r.random() < 0.8 else Ref(g.input((), g.dtype()))
        return ("method", r.choice(["masked_fill", "masked_fill_"]), (Ref(x), mask, val), {})
    if name == "setitem":
        c = r.random()
        idx = (r.randint(-shape[0], shape[0] - 1) if shape[0] else slice(None)) if c < 0.3 else \
            slice(None, None, 2) if c < 0.6 else _index_lit(g, shape[0], (1,))
        target = tuple(t[idx].shape) if not isinstance(idx, Lit) else shape[1:]
        val = g.scalar() if r.random() < 0.5 else Ref(g.input(_bcast_shape(g, target), g.dtype()))
        return ("setitem", "setitem", (Ref(x), idx, val), {})
    if name == "nonzero":
        return ("torch", "nonzero", (Ref(x),), {})
    return None


def matmul(g):
    r = g.r
    dt = g.dtype(floats=r.random() < 0.85)
    n, k, m, b = (r.choice([0, 1, 2, 3, 4]) for _ in range(4))
    name = r.choice(["matmul", "mm", "bmm", "mv", "dot", "outer", "addmm", "einsum", "matmul"])
    dt2 = dt if r.random() < 0.9 else g.dtype()
    k2 = k + 1 if r.random() < 0.05 else k  # rarely mismatched
    shapes = {"mm": ((n, k), (k2, m)), "bmm": ((b, n, k), (b, k2, m)), "mv": ((n, k), (k2,)),
              "dot": ((k,), (k2,)), "outer": ((n,), (m,)), "addmm": ((n, k), (k2, m)), "einsum": ((n, k), (k2, m)),
              "matmul": r.choice([((b, n, k), (k2, m)), ((k,), (b, k2, m)), ((n, k), (k2,)), ((1, n, k), (b, k2, m))])}
    a = g.input(shapes[name][0], dt)
    c = g.input(shapes[name][1], dt2)
    if name == "addmm":
        bias = g.input(_bcast_shape(g, (n, m)), dt)
        return ("torch", "addmm", (Ref(bias), Ref(a), Ref(c)), {"beta": r.choice([1, 0.5]), "alpha": r.choice([1, 2])})
    if name == "einsum":
        return ("torch", "einsum", ("ij,jk->ik", Ref(a), Ref(c)), {})
    return ("torch", name, (Ref(a), Ref(c)), {})


def nn(g):
    r = g.r
    name = r.choice(["relu", "gelu", "softmax", "log_softmax", "layer_norm", "conv2d", "max_pool2d",
                     "interpolate", "pad", "dropout", "cross_entropy", "one_hot"])
    if name in ("relu", "gelu", "softmax", "log_softmax", "dropout", "layer_norm"):
        x = _x(g)
        t = g.t(x)
        if name == "gelu":
            return ("F", name, (Ref(x),), {"approximate": r.choice(["none", "tanh"])})
        if name in ("softmax", "log_softmax"):
            kw = {"dtype": DT("float64")} if r.random() < 0.1 else {}
            return ("F", name, (Ref(x), _dim(g, t.dim())), kw)
        if name == "dropout":
            return ("F", name, (Ref(x),), {"p": 0.0, "training": r.random() < 0.5})
        if name == "layer_norm":
            ns = tuple(t.shape[t.dim() - r.randint(0, min(t.dim(), 2)):])
            kw = {"eps": r.choice([1e-5, 1e-3])}
            if r.random() < 0.5:
                kw["weight"] = Ref(g.input(ns, str(t.dtype).split(".")[-1], noncontig=False))
            return ("F", name, (Ref(x), ns), kw)
        return ("F", name, (Ref(x),), {})
    dt = r.choice(["float32", "float32", "float64", "bfloat16"])
    if name == "conv2d":
        nb, c, h, w = r.randint(1, 2), r.randint(1, 3), r.randint(1, 6), r.randint(1, 6)
        o, k = r.randint(1, 3), r.randint(1, 3)
        groups = c if r.random() < 0.2 else 1
        x = g.input((nb, c, h, w), dt)
        wt = g.input((o * groups if groups > 1 else o, c // groups, k, k), dt)
        kw = {"stride": r.choice([1, 2]), "padding": r.choice([0, 1]), "dilation": r.choice([1, 1, 2]),
              "groups": groups}
        if r.random() < 0.5:
            kw["bias"] = Ref(g.input((o * groups if groups > 1 else o,), dt))
        return ("F", name, (Ref(x), Ref(wt)), kw)
    if name == "max_pool2d":
        x = g.input((r.randint(1, 2), r.randint(1, 2), r.randint(1, 6), r.randint(1, 6))[r.randint(0, 1):], dt)
        k = r.randint(1, 3)
        return ("F", name, (Ref(x), k), {"stride": r.choice([None, 1, 2]), "padding": r.randint(0, k // 2),
                                         "ceil_mode": r.random() < 0.3})
    if name == "interpolate":
        nd = r.choice([3, 4])
        x = g.input((1, r.randint(1, 2)) + tuple(r.randint(1, 4) for _ in range(nd - 2)), dt)
        mode = r.choice(["nearest", "linear" if nd == 3 else "bilinear"])
        kw = {"mode": mode}
        if r.random() < 0.5:
            kw["size"] = tuple(r.randint(1, 6) for _ in range(nd - 2))
        else:
            kw["scale_factor"] = r.choice([2, 0.5, 1.5, 3])
        if mode != "nearest":
            kw["align_corners"] = r.random() < 0.5
        return ("F", name, (Ref(x),), kw)
    if name == "pad":
        x = _x(g)
        nd = g.t(x).dim()
        p = tuple(r.randint(-1, 2) for _ in range(2 * r.randint(1, max(1, min(nd, 3)))))
        mode = r.choice(["constant", "constant", "reflect", "replicate"])
        return ("F", name, (Ref(x), p), {"mode": mode, **({"value": g.scalar()} if mode == "constant" else {})})
    if name == "cross_entropy":
        n, c = r.randint(0, 4), r.randint(1, 4)
        x = g.input((n, c) if r.random() < 0.8 else (c,), r.choice(["float32", "float64"]))
        shape = tuple(g.t(x).shape[:-1])
        tgt = Lit(_nest([r.choice([r.randrange(c)] * 8 + [-100, c]) for _ in range(math.prod(shape))], shape), "int64")
        return ("F", name, (Ref(x), tgt), {"reduction": r.choice(["mean", "sum", "none"]),
                                           "label_smoothing": r.choice([0.0, 0.0, 0.1])})
    n = r.randint(0, 5)
    data = _nest([r.randint(-1 if r.random() < 0.05 else 0, 4) for _ in range(n)], (n,))
    return ("F", "one_hot", (Lit(data, "int64"),), {"num_classes": r.choice([-1, 5, 6])})


def convert(g):
    r = g.r
    x = _x(g)
    name = r.choice(["to", "to", "int", "long", "bool", "half", "float", "double", "bfloat16", "byte", "char", "short"])
    if name == "to":
        return ("method", "to", (Ref(x), DT(r.choice(DTYPES))), {})
    return ("method", name, (Ref(x),), {})


def create(g):
    r = g.r
    dt = DT(g.dtype())
    shape = r.choice(BIG_EMPTY) if r.random() < 0.4 else g.shape()
    name = r.choice(["zeros", "ones", "full", "arange"])
    if name == "full":
        return ("torch", "full", (shape, g.scalar()), {"dtype": dt})
    if name == "arange":
        start = r.choice([0, 1.5] if dt.name in ("uint8", "bool") else [0, -2, 1.5])  # no negative -> uint8 casts
        return ("torch", "arange", (start, r.choice([5, 3, 0, 2.5]), r.choice([1, 0.5, -1, 2])), {"dtype": dt})
    return ("torch", name, (shape,), {"dtype": dt})


def item(g):
    x = _x(g, lambda t: t.numel() == 1)
    return ("method", g.r.choice(["item", "tolist"]), (Ref(x),), {})


GENERATORS = [unary, binary, where, reduce, view, index, matmul, nn, convert, create, item]
WEIGHTS = [12, 16, 3, 14, 16, 14, 6, 10, 6, 2, 1]
