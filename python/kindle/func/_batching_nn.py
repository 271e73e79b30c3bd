"""vmap's batching rules for torch.nn.functional's ops: losses (reduced per example), (N, C, ...)
ops (the batch folds into N; per-example filters as one grouped convolution), normalizations,
embedding, recurrent cells, padding and random ops (vmap's randomness). The helpers and the
dispatch are in _batching.py.
"""
from .. import _C
from ._batching import Tensor, _batched, _fallback, _is_inplace, _is_tensor, _pad, _rewrap, pointwise
from ._vmap import BatchedTensor, logical, unwrap, wrap

def renorm(func, args, kwargs, lvl, name, schema):
    """renorm: each slice along dim scaled to norm maxnorm if its norm exceeds it (the slice's
    norm over the example's other dims)."""
    x, pn, dim, maxnorm = args[:4]
    others = [i for i in range(x.dim()) if i != dim % max(x.dim(), 1)]
    norms = x.norm(pn, others, keepdim=True) if others else x.abs()
    scale = (norms > maxnorm).to(x.dtype) * (maxnorm / (norms + 1e-7) - 1) + 1
    if name == "renorm_":
        return x.mul_(scale)
    return x * scale


def _random_error():
    raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                       "'different' randomness flags on vmap or perform the randomness operation out of vmap")


def random(func, args, kwargs, lvl, name, schema):
    """Random ops: vmap's randomness decides (error, the same values for every example, or
    different ones)."""
    training = True
    if name == "rrelu":  # (input, lower, upper, training): in eval mode leaky_relu with the mean slope
        training = args[3] if len(args) > 3 else kwargs.get("training", False)
        if not training:
            return pointwise(func, args, kwargs, lvl, name, schema)
    if name.startswith("dropout") or name in ("alpha_dropout", "feature_alpha_dropout"):
        p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
        training = args[2] if len(args) > 2 else kwargs.get("training", kwargs.get("train", True))
        if not training or p == 0:
            return args[0]
        if p == 1:  # no randomness: every element is dropped
            return args[0] * 0
    if lvl.randomness == "error":
        _random_error()
    if lvl.randomness == "different":
        if name.endswith("_like") or name.startswith("new_"):
            self_ = args[0]
            p, b = unwrap(self_, lvl)
            base = p if b else _batched(self_, lvl)
            return wrap(func(base, *args[1:], **kwargs), lvl)
        k = {"dropout1d": 2, "dropout2d": 3}.get(name)
        if k is not None and args[0].dim() == k + 1:  # channels dropped per (N, C): the batch folds into N
            x = args[0]
            p = unwrap(x, lvl)[0]
            out = func(p.reshape((-1,) + tuple(x.shape[1:])), *args[1:], **kwargs)
            return wrap(out.reshape(p.shape), lvl)
        return pointwise(func, args, kwargs, lvl, name, schema)
    # same: one draw of an example's shape, shared by the batch
    if "alpha_dropout" in name:
        raise NotImplementedError(f"vmap: {name} with randomness='same' is not supported; use 'different'")
    if name.startswith("dropout") or "dropout" in name:
        x = args[0]
        mask = func(_C.ones(tuple(x.shape), dtype=x.dtype), *args[1:], **kwargs)
        return x * mask
    if _is_inplace(name, schema):
        self_ = args[0]
        p, _ = unwrap(self_, lvl)
        one = func(_C.empty(tuple(self_.shape), dtype=self_.dtype), *[logical(a) if _is_tensor(a) else a
                                                                      for a in args[1:]], **kwargs)
        p.copy_(one.expand_as(p) if one.dim() == p.dim() else one.unsqueeze(0).expand_as(p))
        return self_
    # One draw for the batch is right for ops that take only a shape from a tensor (randn_like); an op
    # whose values depend on a batched tensor (rrelu, bernoulli) would give the first example's result.
    shape_only = name.endswith("_like") or name.startswith("new_")
    if any(type(x) is BatchedTensor and x._lvl is lvl
           for x in list(args[1 if shape_only else 0:]) + list(kwargs.values())):
        raise NotImplementedError(f"vmap: {name} with batched inputs and randomness='same' is not supported; "
                                  "use randomness='different'")
    a = [logical(x) if type(x) is BatchedTensor and x._lvl is lvl else x for x in args]
    return func(*a, **kwargs)


# ---- losses

def _reduce_examples(loss, reduction, rank, name, denominator=None):
    """A per-element loss (batch first) reduced per example as the op's reduction does."""
    if reduction == "none":
        return loss
    flat = loss.reshape(loss.shape[0], -1)
    if reduction == "sum":
        return flat.sum(1)
    if reduction == "mean":
        return flat.sum(1) / denominator if denominator is not None else flat.mean(1)
    if reduction == "batchmean":
        return flat.sum(1) / (loss.shape[1] if rank > 0 else 1)
    raise ValueError(f"{name}: {reduction} is not a valid value for reduction")


def loss(func, args, kwargs, lvl, name, schema):
    """Losses: the per-element loss of the batch (reduction='none'), reduced per example."""
    names = [a[0] for a in schema[2]]
    a = dict(zip(names, args))
    a.update(kwargs)
    reduction = a.get("reduction", "mean")
    tensors = [k for k in names if _is_tensor(a.get(k))]
    rank = max(a[k].dim() for k in tensors)
    if name in ("nll_loss", "cross_entropy"):
        return _class_loss(func, a, names, lvl, name, reduction)
    if name == "gaussian_nll_loss" and a["var"].dim() == a["self"].dim() - 1 and \
            tuple(a["var"].shape) == tuple(a["self"].shape[:-1]):
        a["var"] = a["var"].unsqueeze(-1)  # (the op's own reading of a var without the last dim)
    call = dict(a)
    call["reduction"] = "none"
    for k in tensors:  # every tensor batched, padded to the highest rank (these losses broadcast)
        call[k] = _pad(_batched(a[k], lvl), rank)
    out = func(*[call[k] for k in names if not _kw(schema, k)], **{k: call[k] for k in names if _kw(schema, k)})
    first = a[tensors[0]]
    return wrap(_reduce_examples(out, reduction, first.dim(), name), lvl)


def _kw(schema, k):
    return any(x[0] == k and x[2] for x in schema[2])


def _class_loss(func, a, names, lvl, name, reduction):
    """nll_loss / cross_entropy: the batch folds into N; class weights apply per example."""
    inp, target, weight = a["self"], a["target"], a.get("weight")
    smoothing = a.get("label_smoothing", 0.0)
    class_targets = not (target.is_floating_point() or target.is_complex())
    weight_batched = type(weight) is BatchedTensor and weight._lvl is lvl
    if weight is not None and (smoothing or not class_targets) and weight_batched:
        return _fallback(func, [a[k] for k in names], {}, lvl, name, "batched class weights with soft targets")
    n = lvl.size
    pi = _batched(inp, lvl)
    pt = _batched(target, lvl)
    if inp.dim() >= 2:  # (N, C, ...): the batch folds into N
        fi = pi.reshape((n * inp.shape[0],) + tuple(inp.shape[1:]))
        ft = pt.reshape((n * inp.shape[0],) + tuple(target.shape[1:]))
    else:  # (C,): the batch is N
        fi, ft = pi, pt
    post_weight = weight is not None and class_targets and not smoothing
    call = dict(a)
    call.update({"self": fi, "target": ft, "reduction": "none"})
    if post_weight:
        call["weight"] = None
    per = func(*[call[k] for k in names])
    per = per.reshape((n, inp.shape[0]) + tuple(per.shape[1:])) if inp.dim() >= 2 else per
    denominator = None
    if class_targets:
        ignore = a.get("ignore_index", -100)
        valid = pt != ignore
        w = valid.to(per.dtype)
        if weight is not None:
            classes = inp.shape[1 if inp.dim() >= 2 else 0]
            safe = pt.clamp(0, max(classes - 1, 0))
            if weight_batched:
                pw, _ = unwrap(weight, lvl)
                wt = pw.gather(1, safe.reshape(n, -1)).reshape(safe.shape)
            else:
                wt = weight[safe]
            w = wt.to(per.dtype) * w
            if post_weight:
                per = per * w
        if reduction == "mean":
            denominator = w.reshape(n, -1).sum(1)
    return wrap(_reduce_examples(per, reduction, inp.dim(), name, denominator), lvl)


# ---- images, sequences: (N, C, ...) ops

_EXAMPLE_RANK = {"conv1d": 2, "conv2d": 3, "conv_transpose1d": 2, "conv_transpose2d": 3, "conv2d_forward": 3,
                 "max_pool2d_with_indices": 3, "max_pool2d_fwd": 3, "avg_pool2d": 3, "avg_pool2d_fwd": 3,
                 "adaptive_avg_pool2d": 3, "adaptive_max_pool2d": 3, "lp_pool2d": 3, "pixel_shuffle": 3,
                 "pixel_unshuffle": 3, "im2col": 3, "col2im": 2, "_conv1d_padding": 2, "_conv2d_padding": 3, "_conv3d_padding": 4, "conv3d": 4, "conv_transpose3d": 4,
                 "max_pool3d_with_indices": 4, "avg_pool3d": 4, "lp_pool3d": 4, "adaptive_avg_pool3d": 4,
                 "adaptive_max_pool3d": 4}


def nchw(func, args, kwargs, lvl, name, schema):
    """Ops on (N, C, ...) or (C, ...) inputs: the batch folds into N. A batched weight (per
    example filters) runs as a grouped convolution over the batch."""
    k = _EXAMPLE_RANK.get(name)
    x = args[0]
    weight = args[1] if len(args) > 1 and _is_tensor(args[1]) else None
    if weight is not None and type(weight) is BatchedTensor and weight._lvl is lvl:
        if name in ("conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"):
            return _conv_batched_weight(func, args, lvl, name, schema)
        return _fallback(func, args, kwargs, lvl, name, "batched weights")
    n = lvl.size
    p = _batched(x, lvl)
    bias = args[2] if len(args) > 2 and _is_tensor(args[2]) else None
    bias_b = bias is not None and type(bias) is BatchedTensor and bias._lvl is lvl
    rest = list(args[1:])
    if bias_b:
        rest[1] = None
    if k is None or x.dim() == k + 1:  # (N, C, ...): N and the batch fold into one
        folded = p.reshape((n * x.shape[0],) + tuple(x.shape[1:]))
        res = func(folded, *rest, **kwargs)
        res = _unfold_results(res, n)
    else:
        res = func(p, *rest, **kwargs)
    out = _rewrap(res, lvl)
    if bias_b:  # (O,) over the channel dim of (N, O, ...) or (O, ...)
        channel = 1 if (k is None or x.dim() == k + 1) else 0
        out = out + bias.reshape(tuple(bias.shape) + (1,) * (out.dim() - channel - 1))
    return out


def _unfold_results(res, n):
    if isinstance(res, Tensor):
        return res.reshape((n, res.shape[0] // n) + tuple(res.shape[1:]))
    if isinstance(res, (tuple, list)):
        items = [_unfold_results(r, n) for r in res]
        return type(res)(*items) if hasattr(res, "_fields") else type(res)(items)
    return res


def _conv_batched_weight(func, args, lvl, name, schema):
    """Per-example filters: one grouped convolution, the batch in the groups."""
    names = [a[0] for a in schema[2]]
    a = dict(zip(names, args))
    x, w, bias = a["input"], a["weight"], a.get("bias")
    n = lvl.size
    px = _batched(x, lvl)
    pw, _ = unwrap(w, lvl)
    groups = a["groups"]
    unbatched_example = x.dim() == w.dim() - 1
    if unbatched_example:
        px = px.unsqueeze(1)
    N = px.shape[1]
    # (B, N, C, ...) -> (N, B*C, ...); weights (B, O, C/g, ...) -> (B*O, C/g, ...), groups B*g
    xg = px.movedim(0, 1).reshape((N, n * px.shape[2]) + tuple(px.shape[3:]))
    wg = pw.reshape((n * pw.shape[1],) + tuple(pw.shape[2:]))
    call = dict(a)
    call.update({"input": xg, "weight": wg, "bias": None, "groups": n * groups})
    out = func(*[call[k] for k in names])
    out_channels = out.shape[1] // n
    out = out.reshape((N, n, out_channels) + tuple(out.shape[2:])).movedim(1, 0)
    if unbatched_example:
        out = out.squeeze(1)
    res = wrap(out, lvl)
    if bias is not None:
        res = res + bias.reshape(tuple(bias.shape) + (1,) * (res.dim() - (2 if not unbatched_example else 1)))
    return res


def group_norm(func, args, kwargs, lvl, name, schema):
    """group_norm / instance_norm normalize within each (N, C) row: the batch folds into N;
    batched affine parameters are applied after the normalization."""
    names = [a[0] for a in schema[2]]
    a = dict(zip(names, args))
    a.update(kwargs)
    x = a["self"]
    w, b = a.get("weight"), a.get("bias")
    rm, rv = a.get("running_mean"), a.get("running_var")
    if name == "instance_norm" and not a.get("use_input_stats", True) and rm is not None:
        return _eval_norm(x, rm, rv, w, b, a.get("eps", 1e-5))
    if rm is not None or rv is not None:  # updated in place from each example's statistics
        return _fallback(func, args, kwargs, lvl, name, "running statistics updated per example")
    n = lvl.size
    p = _batched(x, lvl)
    folded = p.reshape((n * x.shape[0],) + tuple(x.shape[1:]))
    call = dict(a)
    call.update({"self": folded, "weight": None, "bias": None})
    out = wrap(func(*[call[k] for k in names]).reshape(p.shape), lvl)
    return _affine(out, w, b, x)


def norm_layer(func, args, kwargs, lvl, name, schema):
    """layer_norm / rms_norm over trailing dims: the batch leads; batched affine parameters are
    applied after the normalization."""
    x, shape_, w, b = args[0], args[1], args[2], args[3]
    wb = type(w) is BatchedTensor and w._lvl is lvl
    bb = type(b) is BatchedTensor and b._lvl is lvl
    p = _batched(x, lvl)
    rest = list(args[4:])
    if name == "rms_norm":
        out = wrap(func(p, shape_, None if wb else w, *args[3:]), lvl)
        return out * w if wb else out
    out = wrap(func(p, shape_, None if wb else w, None if (bb or wb) else b, *rest), lvl)
    if wb:
        out = out * w
        if b is not None:
            out = out + b
    elif bb:
        out = out + b
    return out


def _affine(out, w, b, x):
    shape = (x.shape[1],) + (1,) * (x.dim() - 2)
    if w is not None:
        out = out * w.reshape(shape)
    if b is not None:
        out = out + b.reshape(shape)
    return out


def _eval_norm(x, rm, rv, w, b, eps):
    """Normalization by running statistics (per channel, dim 1): element-wise ops."""
    shape = (x.shape[1],) + (1,) * (x.dim() - 2)
    return _affine((x - rm.reshape(shape)) * (rv.reshape(shape) + eps).rsqrt(), w, b, x)


def batch_norm(func, args, kwargs, lvl, name, schema):
    """Evaluation with running statistics is element-wise. Training normalizes each channel over
    (N, ...): the batch folds into the channels, and the affine parameters apply afterwards."""
    x, rm, rv, w, b, training, momentum, eps = args[:8]
    if not training and rm is not None:
        return _eval_norm(x, rm, rv, w, b, eps)
    if rm is not None or rv is not None:
        if any(type(t) is BatchedTensor and t._lvl is lvl for t in (rm, rv)):
            return _fallback(func, args, kwargs, lvl, name, "running statistics updated per example")
        raise RuntimeError("vmap: batch_norm in training mode got a batched input while its running_mean or "
                           "running_var, which are updated in place, are not batched; use "
                           "track_running_stats=False, eval mode, or batched running statistics")
    n = lvl.size
    p = _batched(x, lvl)
    C = x.shape[1]
    moved = p.movedim(0, 1).reshape((x.shape[0], n * C) + tuple(x.shape[2:]))
    out = func(moved, None, None, None, None, True, momentum, eps)
    out = wrap(out.reshape((x.shape[0], n, C) + tuple(x.shape[2:])).movedim(1, 0), lvl)
    return _affine(out, w, b, x)


def embedding(func, args, kwargs, lvl, name, schema):
    idx, weight = args[0], args[1]
    if type(weight) is BatchedTensor and weight._lvl is lvl:
        if len(args) > 3 and args[3] is not None:
            return _fallback(func, args, kwargs, lvl, name, "max_norm with batched weights (renormalized in place)")
        pw, _ = unwrap(weight, lvl)
        pi = _batched(idx, lvl)
        rows = _C.arange(lvl.size).reshape((lvl.size,) + (1,) * idx.dim())
        return wrap(pw[rows, pi], lvl)
    p, _ = unwrap(idx, lvl)
    return wrap(func(p, *args[1:], **kwargs), lvl)


def pad(func, args, kwargs, lvl, name, schema):
    """Constant padding pads the last dims of any tensor; the other modes take (N, C, ...) or
    (C, ...) inputs: the batch folds into the leading dim."""
    x, pads, mode = args[0], args[1], args[2] if len(args) > 2 else "constant"
    p, _ = unwrap(x, lvl)
    if mode == "constant":
        return wrap(func(p, *args[1:], **kwargs), lvl)
    k = len(pads) // 2 + 1  # an example without N: (C, *padded dims)
    if x.dim() == k:
        return wrap(func(p, *args[1:], **kwargs), lvl)
    folded = p.reshape((-1,) + tuple(x.shape[x.dim() - k:]))
    out = func(folded, *args[1:], **kwargs)
    return wrap(out.reshape((lvl.size,) + tuple(x.shape[:x.dim() - k]) + tuple(out.shape[1:])), lvl)


def cell(func, args, kwargs, lvl, name, schema):
    """RNN cells on (N, features) or (features,) inputs: the batch folds into N."""
    names = [a[0] for a in schema[2]]
    a = dict(zip(names, args))
    if any(type(a.get(k)) is BatchedTensor and a[k]._lvl is lvl for k in ("w_ih", "w_hh", "b_ih", "b_hh")):
        return _fallback(func, args, kwargs, lvl, name, "batched weights")
    n = lvl.size
    x = a["input"]
    call = dict(a)
    for k in ("input", "hx", "cx"):
        if a.get(k) is not None:
            p = _batched(a[k], lvl)
            call[k] = p.reshape((-1,) + tuple(p.shape[-1:])) if x.dim() == 2 else p
    res = func(*[call[k] for k in names])
    shape = (n, x.shape[0]) if x.dim() == 2 else (n,)
    return _rewrap(_map_tensors(res, lambda t: t.reshape(shape + tuple(t.shape[1:]))), lvl)


def _map_tensors(res, fn):
    if isinstance(res, Tensor):
        return fn(res)
    items = [_map_tensors(r, fn) for r in res]
    return type(res)(*items) if hasattr(res, "_fields") else type(res)(items)


def row_loss(func, args, kwargs, lvl, name, schema):
    """Losses over the rows of (N, D) inputs (or one (D,) row): the batch folds into N, the
    per-row losses are reduced per example."""
    names = [a[0] for a in schema[2]]
    a = dict(zip(names, args))
    a.update(kwargs)
    if type(a.get("weight")) is BatchedTensor and a["weight"]._lvl is lvl:
        return _fallback(func, args, kwargs, lvl, name, "batched class weights")
    reduction = a.get("reduction", "mean")
    first = a[names[0]]
    n = lvl.size
    rows = first.dim() == 2 or (name == "multilabel_margin_loss" and first.dim() == 2)
    call = dict(a)
    call["reduction"] = "none"
    for k in names:
        v = a.get(k)
        if not _is_tensor(v) or k == "weight":
            continue
        p = _batched(v, lvl)
        call[k] = p.reshape((n * v.shape[0],) + tuple(v.shape[1:])) if rows and v.dim() >= 1 else p
    per = func(*[call[k] for k in names if not _kw(schema, k)], **{k: call[k] for k in names if _kw(schema, k)})
    per = per.reshape(n, -1)
    if reduction == "none":
        return wrap(per.reshape((n,) + ((first.shape[0],) if rows else ())), lvl)
    return wrap(per.sum(1) if reduction == "sum" else per.mean(1), lvl)


NN_FAMILIES = {"random": random, "loss": loss, "nchw": nchw, "norm_layer": norm_layer, "batch_norm": batch_norm,
               "embedding": embedding, "group_norm": group_norm, "pad": pad, "renorm": renorm, "cell": cell,
               "row_loss": row_loss}
