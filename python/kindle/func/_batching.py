"""vmap's batching rules: how each op runs once on a batch of examples.

A rule gets the op, its arguments (the bindings pass every argument, defaults filled in,
positionally up to the keyword-only ones) and the vmap level to handle; it calls the op (or
others) on the physical tensors, whose dim 0 is that level's batch, and returns the results
batched. The family of an op's rule is declared in ops.yaml (`vmap:`; element-wise ops are
`pointwise` from their `forward: element_wise`) and reaches Python as kindle._C._op_schemas with
each op's argument names and types; ops with a dim argument and no family shift their dims.
Functions of kindle.nn.functional without a rule run their Python body on the batched tensors.
An op without a rule runs once per example (a warning names it) and its results are stacked.
The families of torch.nn.functional's ops (losses, convolutions, norms, dropout, ...) are in
_batching_nn.py.
"""
import warnings

from .. import _C
from ._vmap import BatchedTensor, levels, logical, unwrap, wrap

Tensor = _C.Tensor
_SCHEMAS = _C._op_schemas
_DIM_ARGS = {"dim", "dims", "dim0", "dim1", "dim2", "start_dim", "end_dim", "dimension", "source", "destination",
             "axis0", "axis1"}


# ---- helpers

def _is_tensor(x):
    return isinstance(x, Tensor)


def _innermost(args, kwargs):
    best = None
    for v in list(args) + list(kwargs.values()):
        items = v if isinstance(v, (list, tuple)) else (v,)
        for x in items:
            if type(x) is BatchedTensor and (best is None or x._lvl.id > best.id):
                best = x._lvl
    return best


def _rewrap(res, lvl):
    """The op's results on physical tensors, batched at lvl (tensors in tuples and lists too)."""
    if isinstance(res, Tensor):
        return wrap(res, lvl)
    if isinstance(res, (tuple, list)):
        items = [_rewrap(r, lvl) for r in res]
        if hasattr(res, "_fields"):
            return type(res)(*items)
        return type(res)(items)
    return res


def _batched(x, lvl):
    """x's physical tensor at lvl, expanded over the batch if x is not batched there."""
    p, b = unwrap(x, lvl)
    if b:
        return p
    return p.unsqueeze(0).expand((lvl.size,) + tuple(p.shape))


def _pad(p, rank):
    """A physical tensor (batch first) with size-1 dims after the batch up to logical rank."""
    missing = rank - (p.dim() - 1)
    if missing <= 0:
        return p
    return p.reshape((p.shape[0],) + (1,) * missing + tuple(p.shape[1:]))


_schema_cache = {}


def _schema(name, args):
    """The op's overload matching the call's positional arguments, or None."""
    key = (name, tuple(isinstance(v, Tensor) or v is None for v in args))
    hit = _schema_cache.get(key, False)
    if hit is False:
        hit = _schema_cache[key] = _match_schema(name, key[1])
    return hit


def _match_schema(name, tensorish):
    overloads = _SCHEMAS.get(name)
    if not overloads:
        return None
    n = len(tensorish)
    fits = [ov for ov in overloads if len([a for a in ov[2] if not a[2]]) == n]
    for ov in fits:
        pos = [a for a in ov[2] if not a[2]]
        if all(t == p[1].startswith("Tensor") or p[1].startswith("Tensor?") or p[1].endswith("[]")
               for t, p in zip(tensorish, pos)):
            return ov
    if fits:
        return fits[0]
    for ov in overloads:  # varargs (x.view(2, 3)): more positional values than parameters
        pos = [a for a in ov[2] if not a[2]]
        if pos and n > len(pos) and pos[-1][1] == "int[]":
            return ov
    return None


def _pack_varargs(args, schema):
    pos = [a for a in schema[2] if not a[2]]
    if len(args) > len(pos) or (len(args) == len(pos) and pos[-1][1] == "int[]" and isinstance(args[-1], int)):
        k = len(pos) - 1
        return tuple(args[:k]) + (tuple(args[k:]),)
    return tuple(args)


def _fallback(func, args, kwargs, lvl, name, reason=None):
    """The op once per example, results stacked (an op without a batching rule, or a case its
    rule does not cover: `reason` says which)."""
    what = f"the batching rule of {name} does not cover {reason}" if reason else \
        f"there is no batching rule for {name}"
    warnings.warn(f"kindle.func.vmap: {what}; it runs once per example of the batch (a Python loop) and its results "
                  "are stacked", UserWarning, stacklevel=4)

    if _is_inplace(name, None) and args and not (type(args[0]) is BatchedTensor and args[0]._lvl is lvl):
        _inplace_check(name, False, True)  # each example would write into the one unbatched tensor
    standalone = name == "as_strided"  # offsets and strides count from the example's own storage

    def pick(v, i):
        if type(v) is BatchedTensor and v._lvl is lvl:
            return v._phys.select(0, i).clone() if standalone else v._phys.select(0, i)
        if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
            return type(v)(pick(x, i) for x in v)
        return v
    outs = [func(*[pick(a, i) for a in args], **{k: pick(v, i) for k, v in kwargs.items()}) for i in range(lvl.size)]
    if name.endswith("_") and not name.startswith("__") and args and type(args[0]) is BatchedTensor:
        return args[0]  # in place: each example wrote through its view
    return _stack_results(outs, lvl, name)


def _stack_results(outs, lvl, name):
    first = outs[0] if outs else None
    if isinstance(first, Tensor):
        return wrap(_C.stack(list(outs)), lvl)
    if isinstance(first, (tuple, list)):
        cols = [_stack_results([o[j] for o in outs], lvl, name) for j in range(len(first))]
        return type(first)(*cols) if hasattr(first, "_fields") else type(first)(cols)
    if first is None or all(o == first for o in outs):
        return first
    raise RuntimeError(f"vmap: {name} returned a Python value that differs between examples ({outs[:3]}...); "
                       "vmap can only batch Tensor results")


def _inplace_check(name, self_batched, others_batched):
    if others_batched and not self_batched:
        raise RuntimeError(f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor `other` in "
                           "extra_args that has more elements than `self`. This happened due to `other` being vmapped "
                           "over but `self` not being vmapped over in a vmap. Please try to use out-of-place operators "
                           f"instead of {name}. If said operator is being called inside the PyTorch framework, please "
                           "file a bug report instead.")


def _is_inplace(name, schema):
    return (schema is not None and schema[1]) or (name.endswith("_") and not name.startswith("_")) or \
        name in ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
                 "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__")


# ---- families

def pointwise(func, args, kwargs, lvl, name, schema=None):
    """Element-wise ops: the batch dims lead, the example dims broadcast as in one example."""
    tensors = [(i, a) for i, a in enumerate(args) if _is_tensor(a)] + \
        [(k, v) for k, v in kwargs.items() if _is_tensor(v) and k != "out"]
    rank = max(t.dim() for _, t in tensors)
    inplace = _is_inplace(name, schema)
    phys = {}
    zero_dim_batched = False
    for key, t in tensors:
        p, b = unwrap(t, lvl)
        if b:
            zero_dim_batched = zero_dim_batched or t.dim() == 0
            p = _pad(p, rank) if not (inplace and key == 0) else p
        phys[key] = (p, b)
    if inplace:
        self_b = 0 in phys and phys[0][1]
        _inplace_check(name, self_b, any(b for k, (_, b) in phys.items() if k != 0))
    rt = None
    if zero_dim_batched and not inplace and len({t.dtype for _, t in tensors}) > 1:
        # a batched 0-d tensor is a dimensioned one physically, which promotes differently: the
        # operands are cast to the dtype one example computes in, the result to its result dtype
        with DisableTorchFunctionSubclass():
            rt = func(*[logical(x) if _is_tensor(x) else x for x in args],
                      **{k: logical(v) if _is_tensor(v) else v for k, v in kwargs.items()}).dtype
        valued = [logical(t) for _, t in tensors if t.dtype != _C.bool]
        ct = _C.result_type(valued[0], valued[1]) if len(valued) == 2 else None
        if ct is not None and (ct == rt or rt == _C.bool):
            phys = {k: ((p.to(ct) if p.dtype != ct and p.dtype != _C.bool and t.dim() == 0 else p), b)
                    for (k, t), (_, (p, b)) in zip(tensors, phys.items())}
    a = list(args)
    kw = dict(kwargs)
    for key, (p, _) in phys.items():
        if isinstance(key, int):
            a[key] = p
        else:
            kw[key] = p
    res = func(*a, **kw)
    if inplace:
        return args[0]
    if rt is not None and isinstance(res, Tensor) and res.dtype != rt:
        res = res.to(rt)
    return _rewrap(res, lvl)


def fill(func, args, kwargs, lvl, name, schema):
    """fill_: a batched value fills each example with its own number."""
    self_, value = args[0], args[1]
    p, b = unwrap(self_, lvl)
    if not (type(value) is BatchedTensor and value._lvl is lvl):
        return pointwise(func, args, kwargs, lvl, name, schema)
    _inplace_check(name, b, True)
    p.copy_(unwrap(value, lvl)[0].reshape((lvl.size,) + (1,) * (p.dim() - 1)))
    return self_


def masked_fill(func, args, kwargs, lvl, name, schema):
    """masked_fill takes a 0-d value: a batched one (one number per example) is a where."""
    self_, mask, value = args[0], args[1], args[2]
    if not (type(value) is BatchedTensor and value._lvl is lvl):
        return pointwise(func, args, kwargs, lvl, name, schema)
    filled = _C.where(mask, value, self_).to(self_.dtype)  # (each runs its own rule)
    if name == "masked_fill":
        return filled
    _inplace_check(name, type(self_) is BatchedTensor and self_._lvl is lvl, True)
    return self_.copy_(filled)


def _wrap_dim(d, rank, name):
    r = max(rank, 1)
    if not -r <= d < r:
        raise IndexError(f"{name}: Dimension out of range (expected to be in range of [{-r}, {r - 1}], but got {d})")
    return d % r + 1


_EMPTY_IS_ALL = {"amax", "amin", "sum", "nansum", "mean", "nanmean", "var", "std", "var_mean", "std_mean", "norm",
                 "count_nonzero", "all", "any", "logsumexp"}


def dims(func, args, kwargs, lvl, name, schema, out_rank_extra=0, keep=()):
    """Ops with dim arguments: every tensor is batched (expanded where it is not), each dim moves
    past the batch; a reduction over all dims (dim=None) reduces the example's dims."""
    original_self = args[0] if args else None
    args = list(_pack_varargs(args, schema))
    params = [p for p in schema[2] if not p[2]]
    kwparams = {p[0]: p for p in schema[2] if p[2]}
    first = next((a for a in args if _is_tensor(a)), None)
    if first is None:
        first = next((x for a in args if isinstance(a, (list, tuple)) for x in a if _is_tensor(x)), None)
    rank = first.dim() if first is not None else 0
    zero = rank == 0 and out_rank_extra == 0
    rank_for_dims = rank + out_rank_extra

    top = max([a.dim() for a in args if _is_tensor(a)] + [rank])

    def phys_of(t):  # batched, and padded as broadcasting would pad it (cosine_similarity)
        p = _batched(t, lvl)
        return p.unsqueeze(1) if zero and t.dim() == 0 else _pad(p, top)

    def shift(pname, ptype, v):
        if v is None:
            if pname != "dim":
                return v
            if ptype == "int?":
                return "flatten"
            return list(range(1, max(rank_for_dims, 1) + 1))
        if isinstance(v, int) and not isinstance(v, bool):
            return _wrap_dim(v, rank_for_dims, name)
        if isinstance(v, (list, tuple)):
            if not v and pname == "dim" and name in _EMPTY_IS_ALL:
                return list(range(1, max(rank_for_dims, 1) + 1))
            return type(v)(_wrap_dim(d, rank_for_dims, name) for d in v)
        return v

    if name == "cross" and len(args) > 2 and args[2] is None and first is not None:
        # torch.cross without dim: the first dim of size 3
        args[2] = next((i for i, n in enumerate(first.shape) if n == 3), -1)
    if name in ("cat", "concat", "concatenate") and args and isinstance(args[0], (list, tuple)):
        # legacy: 1-d empty tensors are skipped when the others have more dims
        kept = [t for t in args[0] if not (t.dim() == 1 and t.shape[0] == 0)]
        if kept and len(kept) != len(args[0]):
            args[0] = kept
            first = kept[0]
            rank = first.dim()
            zero = rank == 0
            rank_for_dims = rank
    flatten = False
    for i, (pname, ptype, _) in enumerate(params):
        if i >= len(args):
            break
        v = args[i]
        if pname in keep:
            continue
        if ptype.startswith("Tensor["):
            args[i] = [phys_of(t) if _is_tensor(t) else t for t in v]
        elif ptype.startswith("Tensor"):
            if v is not None:
                args[i] = phys_of(v)
        elif pname in _DIM_ARGS and ptype.startswith("int"):
            s = shift(pname, ptype, v)
            if s == "flatten":
                flatten = True
                s = 1
            args[i] = s
    for k, v in list(kwargs.items()):
        p = kwparams.get(k)
        if p is None:
            continue
        if k in keep:
            continue
        if p[1].startswith("Tensor") and _is_tensor(v):
            kwargs[k] = phys_of(v)
        elif k in _DIM_ARGS and p[1].startswith("int"):
            s = shift(k, p[1], v)
            if s == "flatten":
                flatten = True
                s = 1
            kwargs[k] = s
    if flatten:  # dim=None over an int? dim: the op's flattened input
        args = [a.reshape(lvl.size, -1) if _is_tensor(a) else a for a in args]
    inplace = _is_inplace(name, schema)
    if inplace:
        _inplace_check(name, type(original_self) is BatchedTensor and original_self._lvl is lvl, True)
    res = func(*args, **kwargs)
    if inplace:
        return original_self
    if flatten:
        keepdim = kwargs.get("keepdim", next((v for (pn, _, _), v in zip(params, args) if pn == "keepdim"), False))
        if keepdim and name in ("argmax", "argmin"):  # keepdim over every dim: all ones
            res = res.reshape((lvl.size,) + (1,) * rank)
    elif zero:
        res = res.reshape(lvl.size, -1) if name == "unfold" else _squeeze_example(res)
    return _rewrap(res, lvl)


def _squeeze_example(res):
    if isinstance(res, Tensor):
        return res.squeeze(1) if res.dim() == 2 and res.shape[1] == 1 else res
    if isinstance(res, (tuple, list)):
        items = [_squeeze_example(r) for r in res]
        return type(res)(*items) if hasattr(res, "_fields") else type(res)(items)
    return res


def batch(func, args, kwargs, lvl, name, schema):
    """Ops that take leading batch dims (linear algebra): every tensor batched, nothing else moves."""
    a = [(_batched(x, lvl) if _is_tensor(x) else x) for x in args]
    kw = {k: (_batched(v, lvl) if _is_tensor(v) else v) for k, v in kwargs.items()}
    return _rewrap(func(*a, **kw), lvl)


# ---- matrix products

def _matmul(a, b, lvl):
    """matmul of two logical operands (at least one batched at lvl), batched result."""
    ra, rb = a.dim(), b.dim()
    if ra == 0 or rb == 0:
        raise RuntimeError(f"matmul: both arguments to matmul need to be at least 1D, but they are {ra}D and {rb}D")
    pa, ba = unwrap(a, lvl)
    pb, bb = unwrap(b, lvl)
    if not ba and not bb:
        return _C.matmul(pa, pb)
    if ra == 2 and not ba and rb <= 2:
        # An unbatched matrix times batched vectors or matrices: one GEMM with the matrix on the
        # right ((B, k, n) @ (n, m) folds B into the rows), not B broadcast products, forward and
        # backward.
        if rb == 1:
            return wrap(_C.matmul(pb, pa.mT), lvl)
        return wrap(_C.matmul(pb.mT, pa.mT).mT, lvl)
    if ra == 1:
        pa = pa.unsqueeze(-2) if ba else pa.unsqueeze(0)
    if rb == 1:
        pb = pb.unsqueeze(-1)
    ea, eb = max(ra, 2), max(rb, 2)
    rank = max(ea, eb)
    if ba:
        pa = _pad(pa, rank)
    if bb:
        pb = _pad(pb, rank)
    out = _C.matmul(pa, pb)
    if rb == 1:
        out = out.squeeze(-1)
    if ra == 1:
        out = out.squeeze(-1 if rb == 1 else -2)
    return wrap(out, lvl)


def matmul(func, args, kwargs, lvl, name, schema):
    mm_like = {"matmul", "mm", "bmm", "mv", "__matmul__"}
    if name in mm_like:
        a, b = args[0], args[1]
        dims_needed = {"mm": (2, 2), "bmm": (3, 3), "mv": (2, 1)}.get(name)
        if dims_needed and (a.dim(), b.dim()) != dims_needed:
            return func(logical(a), logical(b))  # the op's own error
        return _matmul(a, b, lvl)
    if name == "__rmatmul__":
        return _matmul(args[1], args[0], lvl)
    if name in ("dot", "vdot", "inner"):
        a, b = args[0], args[1]
        if name != "inner" and (a.dim() != 1 or b.dim() != 1 or a.shape != b.shape):
            return func(logical(a), logical(b))
        if name == "vdot":
            a = a.conj()
        if name == "inner" and (a.dim() == 0 or b.dim() == 0):
            return a * b
        return _matmul(a, b.unsqueeze(-1), lvl).squeeze(-1) if b.dim() == 1 else _matmul(a, b.mT, lvl)
    if name in ("outer", "ger"):
        if args[0].dim() != 1 or args[1].dim() != 1:
            return func(logical(args[0]), logical(args[1]))  # the op's own error
        return args[0].unsqueeze(-1) * args[1].unsqueeze(-2)
    if name in ("addmm", "addmv", "baddbmm"):
        self_, m1, m2 = args[:3]
        beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
        prod = _matmul(m1, m2, lvl)
        if alpha != 1:
            prod = prod * alpha
        if beta == 0:
            return prod
        return prod + (self_ * beta if beta != 1 else self_)
    if name in ("linear", "linear_2d_weight"):
        x, w, b = args[0], args[1], args[2] if len(args) > 2 else None
        out = _matmul(x, w.mT if w.dim() == 2 else w, lvl)
        return out if b is None else out + b
    return _fallback(func, args, kwargs, lvl, name)


# ---- shapes

def shape(func, args, kwargs, lvl, name, schema):
    self_ = args[0]
    p, b = unwrap(self_, lvl)
    if not b:  # (view_as(x, batched)): only the other's example shape matters
        return func(*[logical(a) if type(a) is BatchedTensor and a._lvl is lvl else a for a in args], **kwargs)
    if schema is not None:
        args = _pack_varargs(args, schema)
    rest = args[1] if len(args) > 1 else ()
    if isinstance(rest, int):
        rest = (rest,)
    n = lvl.size
    if name in ("view", "reshape"):
        if isinstance(rest, _C.dtype):  # view(dtype): the last dim reinterpreted
            return wrap(func(p, rest), lvl)
        return wrap(func(p, (n,) + tuple(rest)), lvl)
    if name in ("expand", "broadcast_to"):
        size = tuple(rest)
        q = _pad(p, len(size))
        full = (n,) + tuple(q.shape[i + 1] if s == -1 else s for i, s in enumerate(size))
        return wrap(q.expand(full), lvl)
    if name == "repeat":
        reps = tuple(rest)
        if len(reps) < self_.dim():
            return func(logical(self_), reps)  # the op's own error
        return wrap(_pad(p, len(reps)).repeat((1,) + reps), lvl)
    if name == "tile":
        reps = tuple(rest)
        reps = (1,) * (self_.dim() - len(reps)) + reps
        return wrap(_pad(p, len(reps)).repeat((1,) + reps), lvl)
    if name == "permute":
        order = tuple(rest)
        if len(order) != self_.dim():
            return func(logical(self_), order)
        return wrap(p.permute((0,) + tuple(_wrap_dim(d, self_.dim(), name) for d in order)), lvl)
    if name in ("t", "t_"):
        if self_.dim() < 2:
            return self_ if name == "t" else self_
        return wrap(p.transpose(1, 2), lvl) if name == "t" else (p.transpose_(1, 2), self_)[1]
    if name in ("squeeze", "squeeze_"):
        d = args[1] if len(args) > 1 else None
        if self_.dim() == 0:
            if d is not None:
                for x in ([d] if isinstance(d, int) else d):
                    _wrap_dim(x, 0, name)
            return self_ if name == "squeeze_" else wrap(p.view(p.shape), lvl)
        if d is None:
            d = [i for i, s in enumerate(self_.shape) if s == 1]
        elif isinstance(d, int):
            d = [d]
        ds = [_wrap_dim(x, self_.dim(), name) for x in d]
        if name == "squeeze_":
            p.squeeze_(ds)
            return self_
        return wrap(p.squeeze(ds) if ds else p, lvl)
    if name in ("flatten",):
        if self_.dim() == 0:
            return wrap(p.reshape(n, 1), lvl)
        return dims(func, args, kwargs, lvl, name, schema)
    if name in ("view_as", "reshape_as", "expand_as"):
        return shape(getattr(Tensor, name.replace("_as", "")), (self_, tuple(args[1].shape)), {}, lvl,
                     name.replace("_as", ""), None)
    return _fallback(func, args, kwargs, lvl, name)


def dims_out(func, args, kwargs, lvl, name, schema):
    """Ops whose dims count the result's dims, one more than the input's (unsqueeze, stack)."""
    return dims(func, args, kwargs, lvl, name, schema, out_rank_extra=1)


def roll(func, args, kwargs, lvl, name, schema):
    self_, shifts, ds = args[0], args[1], args[2]
    if isinstance(shifts, int):
        shifts = (shifts,)
    if isinstance(ds, int):
        ds = (ds,)
    p, _ = unwrap(self_, lvl)
    if not ds:  # the flattened tensor rolls
        return wrap(p.reshape(lvl.size, -1).roll(tuple(shifts), (1,)).reshape(p.shape), lvl)
    return wrap(p.roll(tuple(shifts), tuple(_wrap_dim(d, self_.dim(), name) for d in ds)), lvl)


def index_1d(func, args, kwargs, lvl, name, schema):
    """index_select / index_add / index_copy / index_fill / index_reduce take a 1-d index: an
    unbatched one shifts the dim; a batched one becomes a gather or scatter over the batch."""
    names = [a[0] for a in schema[2]]
    a = dict(zip(names, args))
    a.update(kwargs)
    idx = a["index"]
    value = a.get("value")
    value_batched = type(value) is BatchedTensor and value._lvl is lvl
    if not (type(idx) is BatchedTensor and idx._lvl is lvl) and not value_batched:
        return dims(func, args, kwargs, lvl, name, schema, keep=("index", "value"))
    self_ = a["self"]
    if not (type(idx) is BatchedTensor and idx._lvl is lvl):
        idx = wrap(idx.unsqueeze(0).expand((lvl.size,) + tuple(idx.shape)), lvl)
    r = self_.dim()
    d = _wrap_dim(a["dim"], r, name)
    pi, _ = unwrap(idx, lvl)
    pi = pi.reshape(lvl.size, -1)
    inplace = name.endswith("_")
    if inplace:
        _inplace_check(name, type(self_) is BatchedTensor and self_._lvl is lvl, True)
    p = _batched(self_, lvl) if r else _batched(self_, lvl).unsqueeze(1)

    def spread(shape_like):  # the index along dim d of a tensor shaped like shape_like
        view = [1] * len(shape_like)
        view[0], view[d] = lvl.size, pi.shape[1]
        return pi.reshape(view).expand(list(shape_like[:d]) + [pi.shape[1]] + list(shape_like[d + 1:]))
    base = name.rstrip("_")
    if base == "index_select":
        out = p.gather(d, spread(p.shape))
    elif base in ("index_add", "index_copy", "index_reduce"):
        src = _batched(a["source"], lvl)
        if r == 0:
            src = src.reshape(lvl.size, -1)
        ix = spread(src.shape)
        if base == "index_add":
            alpha = a.get("alpha", 1)
            out = p.scatter_add(d, ix, src * alpha if alpha != 1 else src)
        elif base == "index_copy":
            out = p.scatter(d, ix, src)
        else:
            out = p.scatter_reduce(d, ix, src, a["reduce"], include_self=a.get("include_self", True))
    elif base == "index_fill":
        value = a["value"]
        shape = list(p.shape)
        shape[d] = pi.shape[1]
        if _is_tensor(value):
            src = _batched(value, lvl).reshape((lvl.size,) + (1,) * (len(shape) - 1)).expand(shape).to(p.dtype)
        else:
            src = _C.full(shape, value, dtype=p.dtype)
        out = p.scatter(d, spread(shape), src)
    else:
        return _fallback(func, args, kwargs, lvl, name, "a batched index")
    if r == 0:
        out = out.reshape(p.shape[0])
    if inplace:
        unwrap(self_, lvl)[0].copy_(out.reshape(unwrap(self_, lvl)[0].shape))
        return self_
    return wrap(out, lvl)


def like(func, args, kwargs, lvl, name, schema):
    """zeros_like, new_zeros, ...: one example's result (the same for every example)."""
    a = [logical(x) if type(x) is BatchedTensor and x._lvl is lvl else x for x in args]
    return func(*a, **kwargs)


# ---- indexing and conversions (hand-written bindings)

def _index_tuple(idx):
    return idx if isinstance(idx, tuple) else (idx,)


def _separated_advanced(idx):
    pos = [i for i, v in enumerate(idx) if _is_tensor(v) or isinstance(v, (list,))]
    return len(pos) > 1 and pos[-1] - pos[0] + 1 != len(pos)


def getitem(func, args, kwargs, lvl, name, schema):
    self_, idx = args[0], args[1]
    idx = _index_tuple(idx)
    if any((type(v) is BatchedTensor and v._lvl is lvl) or (_is_tensor(v) and v.dtype == _C.bool) for v in idx) \
            or _separated_advanced(idx) or type(self_) is not BatchedTensor or self_._lvl is not lvl:
        return _fallback(func, args, kwargs, lvl, name)
    p, _ = unwrap(self_, lvl)
    return wrap(p[(slice(None),) + idx], lvl)


def setitem(func, args, kwargs, lvl, name, schema):
    self_, idx, value = args[0], args[1], args[2]
    p, b = unwrap(self_, lvl)
    vb = type(value) is BatchedTensor and value._lvl is lvl
    _inplace_check("__setitem__", b, vb or any(type(v) is BatchedTensor and v._lvl is lvl
                                               for v in _index_tuple(idx)))
    idx = _index_tuple(idx)
    if any((type(v) is BatchedTensor and v._lvl is lvl) or (_is_tensor(v) and v.dtype == _C.bool) for v in idx) \
            or _separated_advanced(idx):
        return _fallback(func, args, kwargs, lvl, name)
    target = p[(slice(None),) + idx]
    if vb:
        pv, _ = unwrap(value, lvl)
        value = _pad(pv, target.dim() - 1)
    p[(slice(None),) + idx] = value
    return None


def same_shape(func, args, kwargs, lvl, name, schema):
    """Ops that keep the shape and act on each element or the whole tensor alike (casts, clone,
    contiguous, detach): the op on the physical tensor."""
    a = list(args)
    p, _ = unwrap(a[0], lvl)
    a[0] = p
    a = [logical(x) if type(x) is BatchedTensor and x._lvl is lvl else x for x in a]
    a[0] = p
    res = func(*a, **kwargs)
    if res is p:
        return args[0]
    return _rewrap(res, lvl)


def reduce_all(func, args, kwargs, lvl, name, schema):
    """max(), min(), median(): the reduction of each example's flattened values."""
    if args[0].numel() == 0:  # (nan, or the op's own error: the same for every example)
        return func(logical(args[0]))
    p = _batched(args[0], lvl).reshape(lvl.size, -1)
    value = func(p, 1)[0]
    if not (p.is_floating_point() or p.is_complex()):
        return wrap(value, lvl)
    # the value, differentiated as the op is: the gradient (and tangent) spread evenly over the
    # elements equal to it (the dim overload would pick one)
    ties = p == value.detach().unsqueeze(1)
    spread = _C.where(ties, p - p.detach(), 0.0).sum(1) / ties.sum(1).clamp(min=1)
    return wrap(value.detach() + spread, lvl)


def batch_pad(func, args, kwargs, lvl, name, schema):
    """Ops with broadcast leading batch dims (attention): every batched tensor padded to the
    highest rank among the tensors, then the batch leads."""
    rank = max(a.dim() for a in args if _is_tensor(a))
    a = [(_pad(unwrap(x, lvl)[0], rank) if (type(x) is BatchedTensor and x._lvl is lvl) else x) for x in args]
    return _rewrap(func(*a, **kwargs), lvl)


def einsum(func, args, kwargs, lvl, name, schema):
    """einsum: a letter the equation does not use labels the batch in each batched operand and
    in the result."""
    eq = args[0]
    ops = list(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) else list(args[1:])
    eq = eq.replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if not _:  # the implicit result: the ellipsis, then the letters used once, sorted
        letters = [c for c in lhs if c.isalpha()]
        rhs = ("..." if "..." in lhs else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    free = next(c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in eq)
    phys = []
    for t, term in zip(ops, terms):
        p, b = unwrap(t, lvl)
        phys.append(p)
        if b:
            terms[terms.index(term)] = free + term
    new_eq = ",".join(terms) + "->" + free + rhs
    return wrap(func(new_eq, phys), lvl)


def broadcast_tensors(func, args, kwargs, lvl, name, schema):
    tensors = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    from .._torch_api import broadcast_shapes
    shape = broadcast_shapes(*[tuple(t.shape) for t in tensors])
    return [t.expand(shape) for t in tensors]


# ---- ops composed from others on the batched tensors (each of those runs its own rule)

def _kron(a, b):
    r = max(a.dim(), b.dim())
    a = a.reshape((1,) * (r - a.dim()) + tuple(a.shape))
    b = b.reshape((1,) * (r - b.dim()) + tuple(b.shape))
    ea = a.reshape(tuple(x for n in a.shape for x in (n, 1)))
    eb = b.reshape(tuple(x for n in b.shape for x in (1, n)))
    return (ea * eb).reshape(tuple(m * n for m, n in zip(a.shape, b.shape)))


def _prelu(x, w):
    if w.numel() == 1 or x.dim() == 0:
        return _C.where(x >= 0, x, w.reshape(()) * x if w.dim() else w * x)
    channel = 1 if x.dim() >= 2 else 0
    return _C.where(x >= 0, x, w.reshape(tuple(w.shape) + (1,) * (x.dim() - channel - 1)) * x)


def _diag(x, d=0):
    if x.dim() == 1:
        return x.diag_embed(d)
    if x.dim() == 2:
        return x.diagonal(d)
    return _C.diag(logical(x), d)  # the op's own error


def _bilinear(x1, x2, w, b=None):
    out = _C.einsum("...i,oij,...j->...o", [x1, w, x2])
    return out if b is None else out + b


def _stack_like(ts, vertical):
    if vertical:
        ts = [t.reshape(1, -1) if t.dim() < 2 else t for t in ts]
        return _C.cat(ts, 0)
    ts = [t.reshape(1) if t.dim() == 0 else t for t in ts]
    return _C.cat(ts, 0 if ts[0].dim() == 1 else 1)


_COMPOSED = {
    "hstack": lambda ts: _stack_like(ts, False), "vstack": lambda ts: _stack_like(ts, True),
    "fliplr": lambda x: x.flip(1) if x.dim() >= 2 else _C.fliplr(logical(x)),
    "flipud": lambda x: x.flip(0) if x.dim() >= 1 else _C.flipud(logical(x)),
    "diag": _diag,
    "trace": lambda x: x.diagonal().sum() if x.dim() == 2 else _C.trace(logical(x)),
    "dist": lambda a, b, p=2: (a - b).norm(p),
    "kron": _kron, "prelu": _prelu,
    "bilinear": _bilinear,
}


def composed(func, args, kwargs, lvl, name, schema):
    """Ops written as others on the batched tensors (hstack, kron, prelu, bilinear, ...)."""
    if name in ("hstack", "vstack") and not (len(args) == 1 and isinstance(args[0], (list, tuple))):
        args = (list(args),)
    return _COMPOSED[name](*args, **kwargs)


def take(func, args, kwargs, lvl, name, schema):
    """take: each example's flattened values at its indices (a gather over the batch)."""
    x, idx = args[0], args[1]
    n = x.numel()
    xp = _batched(x, lvl).reshape(lvl.size, -1)
    ip = _batched(idx, lvl)
    flat = ip.reshape(lvl.size, -1)
    flat = _C.where(flat < 0, flat + n, flat)
    return wrap(xp.gather(1, flat).reshape(ip.shape), lvl)


def search(func, args, kwargs, lvl, name, schema):
    """searchsorted / bucketize: sorted sequences batched with their values."""
    names = [a[0] for a in schema[2]]
    a = dict(zip(names, args))
    a.update(kwargs)
    seq_name = "boundaries" if name == "bucketize" else "sorted_sequence"
    val_name = "self" if name == "bucketize" else ("values" if "values" in a else "self")
    seq, vals = a[seq_name], a[val_name]
    seq_b = type(seq) is BatchedTensor and seq._lvl is lvl
    sorter = a.get("sorter")
    opts = {k: a[k] for k in ("out_int32", "right") if k in a}
    if name == "searchsorted":
        opts.update({k: a[k] for k in ("side",) if k in a})
    n = lvl.size
    if not seq_b and seq.dim() == 1 and not (type(sorter) is BatchedTensor and sorter._lvl is lvl):
        pv = unwrap(vals, lvl)[0]
        if name == "bucketize":
            return wrap(func(pv, seq, **opts), lvl)
        return wrap(func(seq, pv, **opts, sorter=sorter), lvl)
    ps = _batched(seq, lvl)
    pv = _batched(vals, lvl) if _is_tensor(vals) else _C.full((n,), vals, dtype=ps.dtype)
    extra = {"sorter": _batched(sorter, lvl)} if sorter is not None and name == "searchsorted" else {}
    if seq.dim() == 1:  # one sorted row per example: the values flattened against it
        out = _C.searchsorted(ps, pv.reshape(n, -1), **opts, **extra)
        return wrap(out.reshape(pv.shape), lvl)
    return wrap(_C.searchsorted(ps, pv, **opts, **extra), lvl)


def loop(func, args, kwargs, lvl, name, schema):
    return _fallback(func, args, kwargs, lvl, name)


FAMILIES = {"pointwise": pointwise, "fill": fill, "masked_fill": masked_fill, "dims": dims, "dims_out": dims_out,
            "batch": batch, "matmul": matmul, "shape": shape, "roll": roll, "index_1d": index_1d, "like": like,
            "same_shape": same_shape, "loop": loop, "reduce_all": reduce_all, "batch_pad": batch_pad,
            "einsum": einsum, "broadcast_tensors": broadcast_tensors, "composed": composed, "take": take,
            "search": search}

# Hand-written bindings (not in ops.yaml) and Python operators.
_BY_NAME = {"hstack": composed, "vstack": composed, "einsum": einsum, "broadcast_tensors": broadcast_tensors,
            "conv_transpose3d": loop, "__getitem__": getitem, "__setitem__": setitem, "__matmul__": matmul,
            "__rmatmul__": matmul,
            "to": same_shape, "float": same_shape, "double": same_shape, "half": same_shape, "bfloat16": same_shape,
            "type": same_shape, "type_as": same_shape, "cpu": same_shape, "cuda": same_shape,
            "new_full": like, "new_zeros": like, "new_ones": like, "new_empty": like, "new_tensor": like}


def _family(name, schema):
    if name in _BY_NAME:
        return _BY_NAME[name]
    if schema is None:
        if name.startswith("__") and name.endswith("__"):  # Python's arithmetic and comparisons
            return pointwise
        return None
    fam = schema[0]
    if not fam and name.endswith("_"):  # an in-place op follows its out-of-place one
        base = _SCHEMAS.get(name[:-1])
        if base:
            fam = base[0][0]
    if fam:
        return FAMILIES[fam]
    if any(p[0] in _DIM_ARGS and p[1].startswith("int") for p in schema[2]):
        return dims
    return None


def dispatch(func, args, kwargs):
    """BatchedTensor.__torch_function__: the innermost level's batching rule for func."""
    lvl = _innermost(args, kwargs)
    if lvl is None or lvl not in levels:
        if lvl is not None:
            raise RuntimeError("vmap: a BatchedTensor escaped from its vmap (it was used after the vmap returned)")
        with DisableTorchFunctionSubclass():
            return func(*args, **kwargs)
    name = getattr(func, "__name__", "")
    if name in ("_unflatten_dense_tensors",):
        return _fallback(func, args, kwargs, lvl, name)
    schema = _schema(name, args)
    rule = _family(name, schema)
    if rule is None:
        wrapped = getattr(func, "__wrapped__", None)
        if wrapped is not None:  # a Python function: its body runs on the batched tensors
            return wrapped(*args, **kwargs)
        return _fallback(func, args, kwargs, lvl, name)
    if rule is pointwise:
        return pointwise(func, args, kwargs, lvl, name, schema)
    return rule(func, args, dict(kwargs), lvl, name, schema)


from ..overrides import DisableTorchFunctionSubclass  # noqa: E402

from ._batching_nn import NN_FAMILIES  # noqa: E402  (its rules use the helpers above)

FAMILIES.update(NN_FAMILIES)
