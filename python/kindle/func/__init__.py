"""torch.func for Kindle: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap,
functional_call and stack_module_state.

The transforms are built on the autograd engine and forward mode, not on a transform layer with
levels of its own: the reverse-mode ones differentiate fresh aliases of their inputs and keep the
graph (create_graph) so that transforms nest (grad(grad(f)), jacrev(jacrev(f))); jvp runs
forward mode (dual tensors); jacfwd is one jvp vmapped over the basis, hessian is
jacfwd(jacrev(f)) as torch.func's. vmap wraps its inputs in BatchedTensors (_vmap.py) whose ops
run once for the whole batch through their batching rules (_batching.py). Inside vmap, grad, vjp
and jvp run the engine on the physical tensors (batch dims first): each differentiated input is
expanded to one leaf per example, so the engine's gradients are the per-example ones. Forward
mode has one level, so a jvp inside another (jacfwd(jacfwd(f))) computes its products by the
double-backward trick instead (same values). At the outermost transform, results are detached
unless an input already required grad (then the ordinary autograd graph through them is kept)."""
import itertools
import warnings

import kindle

from .. import _C
from ..autograd import forward_ad as _fw
from ..nn.utils.stateless import _functional_call
from . import _vmap as _vm
from ..utils import _pytree

__all__ = ["functional_call", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "stack_module_state", "functionalize", "linearize", "replace_all_batch_norm_modules_"]

_depth = 0  # transforms currently running (inner ones keep their graph for the outer ones)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with the given parameters and buffers standing in for its own; a
    tuple of dicts is merged (a key in two of them is an error)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        all_keys = [k for d in parameter_and_buffer_dicts for k in d]
        seen, repeated = set(), set()
        for k in all_keys:
            (repeated if k in seen else seen).add(k)
        if repeated:
            raise ValueError(f"{sorted(repeated)} appeared in multiple dictionaries; behavior of functional call is "
                             f"ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)


def stack_module_state(models):
    """(params, buffers): each a dict of the models' same-named tensors stacked along a new first
    dim (for vmap over an ensemble with functional_call); stacked parameters are new leaves."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(tensors, name):
        grads = {t.requires_grad for t in tensors}
        if len(grads) != 1:
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        s = _C.stack(list(tensors))
        return s.detach().requires_grad_() if grads.pop() else s
    named = [dict(m.named_parameters()) for m in models]
    params = {k: stacked([d[k] for d in named], k) for k in named[0]}
    named_b = [dict(m.named_buffers()) for m in models]
    buffers = {k: stacked([d[k] for d in named_b], k) for k in named_b[0]}
    return params, buffers


# ---- pytrees of tensors: kindle.utils._pytree (tuples, lists, dicts, namedtuples; anything else is a leaf)

def _flatten(x):
    return _pytree.tree_flatten(x)


def _unflatten(leaves, spec):
    return spec.unflatten(leaves)


def _fresh(t, fn, materialize=False):
    if not isinstance(t, _C.Tensor):
        raise RuntimeError(f"{fn}: Expected the argument to differentiate to be a Tensor or a pytree of Tensors, "
                           f"got {type(t).__name__}")
    if not (t.is_floating_point() or t.is_complex()):
        raise RuntimeError(f"{fn}: only Tensors of floating point or complex dtype can be differentiated, got "
                           f"{t.dtype}")
    if _vm.levels:  # inside vmap: one leaf per example (the physical tensor over every level)
        phys = _vm.to_levels(t, _vm.levels)
        if materialize:  # each example's own copy, not a stride-0 expansion of one
            phys = phys.contiguous()
        return _vm.from_levels(_fresh_plain(phys), _vm.levels)
    return _fresh_plain(t)


def _fresh_plain(t):
    if t.requires_grad:
        return t.view_as(t)
    tangent = _C._fw_tangent(t) if _C._fw_active() else None
    if tangent is not None:  # inside jvp/jacfwd: the fresh leaf keeps the tangent (forward over reverse)
        return _fw.make_dual(t.detach(), tangent).requires_grad_()
    return t.detach().requires_grad_()


def _physical(ts):
    """Inside vmap, the physical tensors (over every active level) of batched values."""
    if not _vm.levels:
        return ts
    return [None if t is None else _vm.to_levels(t, _vm.levels) for t in ts]


def _logical(ts):
    if not _vm.levels:
        return ts
    return [None if t is None else _vm.from_levels(t, _vm.levels) for t in ts]


class _Scope:
    """Runs a transform's function with grad mode on; knows whether the results must be detached
    (the outermost transform, with no input already in a graph)."""

    def __init__(self, inputs):
        self.keep = _depth > 0 or any(isinstance(t, _C.Tensor) and t.requires_grad for t in inputs)

    def __enter__(self):
        global _depth
        _depth += 1
        self._grad = kindle.enable_grad()
        self._grad.__enter__()
        return self

    def __exit__(self, *exc):
        global _depth
        _depth -= 1
        self._grad.__exit__(*exc)

    def out(self, tree):
        if self.keep:
            return tree
        leaves, spec = _flatten(tree)
        return _unflatten([t.detach() if isinstance(t, _C.Tensor) else t for t in leaves], spec)


def _argnums_tuple(argnums, nargs, fn):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise RuntimeError(f"{fn}: argnums must be non-empty")
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"{fn}: argnums must be int or Tuple[int, ...], got: {type(n)}")
        if not -nargs <= n < nargs:
            raise RuntimeError(f"Got argnums={argnums}, but only {nargs} positional inputs")
    return tuple(n % nargs for n in nums)


def _engine_grad(outputs, inputs, cotangents):
    """autograd.grad keeping the graph, on the physical tensors inside vmap (None where unused)."""
    if _vm.levels:
        outputs, inputs, cotangents = _physical(outputs), _physical(inputs), _physical(cotangents)
    gs = kindle.autograd.grad(outputs, inputs, cotangents, allow_unused=True, create_graph=True)
    return _logical(gs)


def _grad_of(outputs, inputs, cotangents):
    if _vm.levels:  # the engine runs on the physical tensors; each example's cotangent is its own
        outputs, inputs = _physical(outputs), _physical(inputs)
        cotangents = (_physical(cotangents) if cotangents is not None
                      else [_C.ones_like(o) for o in outputs])
    gs = kindle.autograd.grad(outputs, inputs, cotangents, allow_unused=True, create_graph=True, retain_graph=True)
    return _logical([_C.zeros_like(t) if g is None else g for g, t in zip(gs, inputs)])


def _grad_under_new_levels(recorded, outputs, inputs, cotangents):
    """VJPs of a graph recorded under the vmap levels `recorded`, for cotangents batched also over
    levels opened since (vjp_fn called inside a vmap its vjp was not): the graph's backward knows
    no batch of those levels, so it runs once per example of them, with a warning. (Calling vjp
    inside the vmapped function batches it: jacrev does.)"""
    if _vm.levels[:len(recorded)] != recorded:
        raise RuntimeError("vjp_fn: called outside the vmap levels its vjp was computed in")
    new = _vm.levels[len(recorded):]
    warnings.warn("vjp_fn: called inside a vmap that was opened after its vjp: one backward pass per example "
                  "(call vjp inside the vmapped function to batch it)", UserWarning, stacklevel=3)
    k = len(recorded)
    outs = [_vm.to_levels(o, recorded) for o in outputs]
    ins = [_vm.to_levels(t, recorded) for t in inputs]
    cts = [_vm.to_levels(c, _vm.levels) for c in cotangents]  # (recorded..., new..., *shape)
    shape_new = tuple(lvl.size for lvl in new)
    per_input = [[] for _ in ins]
    for idx in itertools.product(*(range(n) for n in shape_new)):
        at = (slice(None),) * k + idx
        gs = kindle.autograd.grad(outs, ins, [c[at] for c in cts], allow_unused=True, retain_graph=True,
                                  create_graph=True)
        for j, (g, t) in enumerate(zip(gs, ins)):
            per_input[j].append(_C.zeros_like(t) if g is None else g)
    out = []
    for gl, t in zip(per_input, ins):
        full = tuple(t.shape[:k]) + shape_new + tuple(t.shape[k:])
        stacked = _C.stack(gl, k) if gl else _C.zeros((0,), dtype=t.dtype)
        out.append(_vm.from_levels(stacked.reshape(full), _vm.levels))
    return out


def _split_aux(out, has_aux, fn):
    """(output, aux) of a function called with has_aux (aux None without)."""
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{fn}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return out


def _call_at_fresh_leaves(func, args, kwargs, nums, has_aux, fn, materialize=False):
    """func called with fresh leaves for the tensors of args[n] (n in nums): (out, aux, the
    leaves and pytree spec of each differentiated argument)."""
    args = list(args)
    specs = {}
    for n in nums:
        leaves, spec = _flatten(args[n])
        leaves = [_fresh(t, fn, materialize) for t in leaves]
        specs[n] = (leaves, spec)
        args[n] = _unflatten(leaves, spec)
    out, aux = _split_aux(func(*args, **kwargs), has_aux, fn)
    return out, aux, specs


def _per_argnum(flat, nums, specs, argnums):
    """Values for the flattened leaves regrouped into each argument's pytree (a tuple over a tuple
    of argnums)."""
    grouped, i = [], 0
    for n in nums:
        k = len(specs[n][0])
        grouped.append(_unflatten(flat[i:i + k], specs[n][1]))
        i += k
    return grouped[0] if isinstance(argnums, int) else tuple(grouped)


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient of func's scalar output with respect to args[argnums],
    output), or ((gradient), (output, aux)) with has_aux."""
    def wrapper(*args, **kwargs):
        fn = "grad_and_value(f)(*args)"
        nums = _argnums_tuple(argnums, len(args), fn)
        with _Scope([t for n in nums for t in _flatten(args[n])[0]]) as scope:
            out, aux, specs = _call_at_fresh_leaves(func, args, kwargs, nums, has_aux, fn)
            if not isinstance(out, _C.Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   "instead?")
            flat = [t for n in nums for t in specs[n][0]]
            gs = _grad_of([out], flat, None) if out.requires_grad else [_C.zeros_like(t) for t in flat]
            g = _per_argnum(gs, nums, specs, argnums)
            value = (out, aux) if has_aux else out
            return scope.out(g), scope.out(value)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of func's scalar output with respect to args[argnums]
    (and aux, with has_aux)."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) gives the vector-Jacobian products, one
    per primal, shaped like the primals."""
    scope = _Scope([t for p in primals for t in _flatten(p)[0]])
    with scope:
        specs = []
        args = []
        for p in primals:
            leaves, spec = _flatten(p)
            leaves = [_fresh(t, "vjp(f, *primals)") for t in leaves]
            specs.append((leaves, spec))
            args.append(_unflatten(leaves, spec))
        out, aux = _split_aux(func(*args), has_aux, "vjp(f, *primals)")
        out_leaves, out_spec = _flatten(out)
        for t in out_leaves:
            if not isinstance(t, _C.Tensor):
                raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has only Tensors as outputs, "
                                   f"got {type(t)}")
    flat_in = [t for leaves, _ in specs for t in leaves]
    recorded = list(_vm.levels)  # the vmap levels the graph knows

    def vjp_fn(cotangents):
        ct_leaves, _ = _flatten(cotangents)
        if len(ct_leaves) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function; got {len(ct_leaves)} cotangents for {len(out_leaves)} outputs")
        for c, o in zip(ct_leaves, out_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output has a shape of {tuple(c.shape)} and output has a "
                                   f"shape of {tuple(o.shape)}.")
        with scope:
            pairs = [(o, c) for o, c in zip(out_leaves, ct_leaves) if o.requires_grad]
            if not pairs:
                gs = [_C.zeros_like(t) for t in flat_in]
            elif len(_vm.levels) > len(recorded):
                gs = _grad_under_new_levels(recorded, [o for o, _ in pairs], flat_in, [c for _, c in pairs])
            else:
                gs = _grad_of([o for o, _ in pairs], flat_in, [c for _, c in pairs])
            res, i = [], 0
            for leaves, spec in specs:
                res.append(_unflatten(gs[i:i + len(leaves)], spec))
                i += len(leaves)
            return scope.out(tuple(res))
    result = (scope.out(out), vjp_fn)
    return result + (scope.out(aux),) if has_aux else result


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J tangents): the Jacobian-vector product, by forward mode (one pass of func
    on dual tensors); inside another forward-mode transform, by the double-backward trick."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples. E.g. it should be "
                           "valid to call f(*primals).")
    p_leaves, p_spec = _flatten(primals)
    t_leaves, _ = _flatten(tangents)
    if len(p_leaves) != len(t_leaves):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python structure")
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same shape, got "
                               f"{tuple(p.shape)} and {tuple(t.shape)}")
    for p, t in zip(p_leaves, t_leaves):
        if not isinstance(t, _C.Tensor) or not (p.is_floating_point() or p.is_complex()):
            raise RuntimeError("jvp(f, primals, tangents): expected primals and tangents to be floating point or "
                               f"complex Tensors, got {getattr(p, 'dtype', type(p).__name__)} and "
                               f"{getattr(t, 'dtype', type(t).__name__)}")
    if _C._fw_current_level() < 0:
        return _forward_jvp(func, p_leaves, p_spec, t_leaves, has_aux)
    with _Scope(p_leaves) as scope:
        leaves = [_fresh(t, "jvp(f, primals, tangents)") for t in p_leaves]
        out, aux = _split_aux(func(*_unflatten(leaves, p_spec)), has_aux, "jvp(f, primals, tangents)")
        out_leaves, out_spec = _flatten(out)
        dummies = [_fresh(_C.zeros_like(o), "jvp") for o in out_leaves]
        live = [(o, d) for o, d in zip(out_leaves, dummies) if o.requires_grad]
        if live:
            back = _engine_grad([o for o, _ in live], leaves, [d for _, d in live])
            pairs = [(b, t) for b, t in zip(back, t_leaves) if b is not None and b.requires_grad]
        else:
            pairs = []
        if pairs:
            fwd = _engine_grad([b for b, _ in pairs], dummies, [t for _, t in pairs])
            fwd = [_C.zeros_like(o) if g is None else g for g, o in zip(fwd, out_leaves)]
        else:
            fwd = [_C.zeros_like(o) for o in out_leaves]
        result = (scope.out(out), scope.out(_unflatten(fwd, out_spec)))
        return result + (scope.out(aux),) if has_aux else result


def _make_dual(p, t):
    if not _vm.levels:
        return _fw.make_dual(p, t)
    lv = _vm.levels  # inside vmap: the dual of the physical tensors over every level
    pp, tp = _vm.to_levels(p, lv), _vm.to_levels(t, lv)
    if pp.stride() != tp.stride():  # (an expanded primal: view ops must see one layout in both)
        pp, tp = pp.contiguous(), tp.contiguous()
    return _vm.from_levels(_fw.make_dual(pp, tp), lv)


def _unpack_dual(o):
    if not _vm.levels:
        return _fw.unpack_dual(o)
    lv = _vm.levels
    p, t = _fw.unpack_dual(_vm.to_levels(o, lv))
    return _vm.from_levels(p, lv), None if t is None else _vm.from_levels(t, lv)


def _forward_jvp(func, p_leaves, p_spec, t_leaves, has_aux):
    global _depth
    keep = _depth > 0 or any(t.requires_grad for t in p_leaves)
    _depth += 1
    try:
        with _fw.dual_level():
            duals = [_make_dual(p, t.to(p.dtype) if t.dtype != p.dtype else t) for p, t in zip(p_leaves, t_leaves)]
            out, aux = _split_aux(func(*_unflatten(duals, p_spec)), has_aux, "jvp(f, primals, tangents)")
            out_leaves, out_spec = _flatten(out)
            primals_out, tangents_out = [], []
            for o in out_leaves:
                if not isinstance(o, _C.Tensor):
                    raise RuntimeError(f"jvp(f, primals, tangents): Expected f(*primals) to return only tensors, got "
                                       f"unsupported type {type(o).__name__}")
                p, t = _unpack_dual(o)
                primals_out.append(p)
                tangents_out.append(_C.zeros_like(p) if t is None else t)
            if aux is not None:
                a_leaves, a_spec = _flatten(aux)
                aux = _unflatten([_unpack_dual(a)[0] if isinstance(a, _C.Tensor) else a for a in a_leaves],
                                 a_spec)
    finally:
        _depth -= 1

    def done(tree):
        if keep:
            return tree
        leaves, spec = _flatten(tree)
        return _unflatten([t.detach() if isinstance(t, _C.Tensor) else t for t in leaves], spec)
    result = (done(_unflatten(primals_out, out_spec)), done(_unflatten(tangents_out, out_spec)))
    return result + (done(aux),) if has_aux else result


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of func with respect to args[argnums] by reverse mode: for each output leaf a
    tensor out.shape + arg.shape (a pytree like the argument; a tuple over argnums if a tuple).

    All rows in one batched pass: the VJP of every standard-basis cotangent under vmap (the forward
    is recorded inside it, on a copy of the inputs per row, with randomness='same', so it computes
    and draws as one call would), chunk_size rows at a time if given. A function vmap cannot batch
    (data-dependent control flow, an autograd.Function without a vmap rule, running statistics
    updated in place) falls back to one backward per output element, with a warning."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    def wrapper(*args, **kwargs):
        fn = "jacrev(f, argnums)(*args)"
        nums = _argnums_tuple(argnums, len(args), fn)
        with _Scope([t for n in nums for t in _flatten(args[n])[0]]) as scope:
            out, aux, specs = _call_at_fresh_leaves(func, args, kwargs, nums, has_aux, fn)
            out_leaves, out_spec = _flatten(out)
            flat_in = [t for n in nums for t in specs[n][0]]
            try:
                if sum(o.numel() for o in out_leaves) <= 1:  # a gradient: one backward pass, nothing to batch
                    per_out = _jacrev_loop(out_leaves, flat_in)
                else:
                    per_out = _jacrev_rows(func, args, kwargs, nums, has_aux, out_leaves, flat_in, chunk_size, fn)
            except (RuntimeError, NotImplementedError) as e:
                if "vmap" not in str(e) and "functorch" not in str(e):
                    raise
                warnings.warn(f"{fn}: the function cannot be batched by vmap ({str(e)[:80]}...): computing the "
                              "Jacobian with one backward pass per output element", UserWarning, stacklevel=2)
                per_out = _jacrev_loop(out_leaves, flat_in)
            jacs = [_per_argnum(per_input, nums, specs, argnums) for per_input in per_out]
            result = scope.out(_unflatten(jacs, out_spec))
            return (result, scope.out(aux)) if has_aux else result
    return wrapper


def _standard_basis(leaves, total):
    """The identity of size total (the leaves' element count), row k the k-th element's unit
    vector, split into the leaves' shapes and dtypes: one tensor (total, *leaf.shape) per leaf."""
    eye = _C.eye(total, dtype=leaves[0].dtype)
    basis, i = [], 0
    for t in leaves:
        k = t.numel()
        basis.append(eye[:, i:i + k].reshape((total,) + tuple(t.shape)).to(t.dtype))
        i += k
    return basis


def _jacrev_rows(func, args, kwargs, nums, has_aux, out_leaves, flat_in, chunk_size, fn):
    """[per output leaf: [per input: d out / d input, out.shape + input.shape]] by vmap over the
    standard basis of the outputs."""
    sizes = [o.numel() for o in out_leaves]
    total = sum(sizes)
    if total == 0:
        return [[_C.zeros(tuple(o.shape) + tuple(t.shape), dtype=t.dtype) for t in flat_in] for o in out_leaves]
    basis = _standard_basis(out_leaves, total)

    def row(*cts):
        o2, _, specs2 = _call_at_fresh_leaves(func, args, kwargs, nums, has_aux, fn, materialize=True)
        outs = _flatten(o2)[0]
        ins = [t for n in nums for t in specs2[n][0]]
        live = [(o, c) for o, c in zip(outs, cts) if o.requires_grad]
        if not live:
            return tuple(_C.zeros_like(t) for t in ins)
        return tuple(_grad_of([o for o, _ in live], ins, [c for _, c in live]))

    rows = vmap(row, randomness="same", chunk_size=chunk_size)(*basis)  # per input: (total, *input.shape)
    per_out, i = [], 0
    for o, k in zip(out_leaves, sizes):
        per_out.append([r.narrow(0, i, k).reshape(tuple(o.shape) + tuple(t.shape)) for r, t in zip(rows, flat_in)])
        i += k
    return per_out


def _jacrev_loop(out_leaves, flat_in):
    per_out = []
    for o in out_leaves:
        rows = [[] for _ in flat_in]
        flat_o = o.reshape(-1)
        for k in range(o.numel()):
            gs = (_grad_of([flat_o[k]], flat_in, None) if o.requires_grad
                  else [_C.zeros_like(t) for t in flat_in])
            for j, g in enumerate(gs):
                rows[j].append(g)
        per_out.append([(_C.stack(r) if r else _C.zeros((0,) + tuple(t.shape), dtype=t.dtype))
                        .reshape(tuple(o.shape) + tuple(t.shape)) for r, t in zip(rows, flat_in)])
    return per_out


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of func with respect to args[argnums] by forward mode: one jvp, vmapped over
    the standard basis of the differentiated inputs (all columns in one batched pass), laid out as
    jacrev's."""
    def wrapper(*args, **kwargs):
        fn = "jacfwd(f, argnums)(*args)"
        nums = _argnums_tuple(argnums, len(args), fn)
        specs = {n: _flatten(args[n]) for n in nums}
        flat_in = [t for n in nums for t in specs[n][0]]
        for t in flat_in:
            if not isinstance(t, _C.Tensor) or not (t.is_floating_point() or t.is_complex()):
                raise RuntimeError(f"{fn}: only Tensors of floating point or complex dtype can be differentiated, got "
                                   f"{getattr(t, 'dtype', type(t).__name__)}")

        def at(*leaves):
            call, i = list(args), 0
            for n in nums:
                k = len(specs[n][0])
                call[n] = _unflatten(list(leaves[i:i + k]), specs[n][1])
                i += k
            return func(*call, **kwargs)

        sizes = [t.numel() for t in flat_in]
        total = sum(sizes)
        r = at(*flat_in)  # the output's structure and shapes (and aux)
        out, aux = _split_aux(r, has_aux, fn)
        out_leaves, out_spec = _flatten(out)
        if total == 0:
            cols = [[_C.zeros((0,) + tuple(o.shape), dtype=o.dtype) for o in out_leaves]]
        else:
            basis = _standard_basis(flat_in, total)

            def push(*tans):
                res = jvp(at, tuple(flat_in), tuple(tans), has_aux=has_aux)
                return _flatten(res[1])[0]
            cols = [vmap(push, randomness=randomness)(*basis)]
        jacs = []
        for oi, o in enumerate(out_leaves):
            col = cols[0][oi]  # (total, *out.shape): d out / d (each input element)
            per_input, i = [], 0
            for t, k in zip(flat_in, sizes):
                part = col.narrow(0, i, k) if total else col
                shape = tuple(o.shape) + tuple(t.shape)
                part = part.movedim(0, -1) if o.dim() else part
                per_input.append(part.reshape(shape))
                i += k
            jacs.append(_per_argnum(per_input, nums, specs, argnums))
        result = _unflatten(jacs, out_spec)
        return (result, aux) if has_aux else result
    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a scalar function with respect to args[argnums]: jacfwd(jacrev(f)), as
    torch.func (forward over reverse, all columns in one vmapped pass)."""
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) is the Jacobian-vector product at primals
    (one forward-mode pass per call)."""
    out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return out, jvp_fn


def _dims_for(in_dims, args):
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(args)
    if not isinstance(in_dims, (tuple, list)) or len(in_dims) != len(args):
        raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure of "
                         f"`inputs`. in_dims has structure {in_dims} but inputs has {len(args)} elements.")
    return list(in_dims)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func mapped over a dim of its inputs: each op runs once on the whole batch through its
    batching rule (kindle/func/_batching.py); an op without one runs once per example, with a
    warning that names it."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0) and chunk_size != -1:
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    def wrapper(*args, **kwargs):
        dims = _dims_for(in_dims, args)
        sizes = []
        leaf_dims = []  # per arg: (leaves, spec, per-leaf dim)
        for a, d in zip(args, dims):
            leaves, spec = _flatten(a)
            if isinstance(d, (tuple, list, dict)):
                ds, _ = _flatten(d)
                if len(ds) != len(leaves):
                    raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                                     "structure of `inputs`.")
            else:
                ds = [d] * len(leaves)
            for t, dd in zip(leaves, ds):
                if dd is None:
                    continue
                if not isinstance(dd, int):
                    raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims must be int, None or a "
                                     f"(nested) tuple of them, got {type(dd).__name__}")
                if not isinstance(t, _C.Tensor):
                    raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dd} for an input but "
                                     f"the input is of type {type(t)}. We cannot vmap over non-Tensor arguments, "
                                     "please use None as the respective in_dim")
                if not -max(t.dim(), 1) <= dd < max(t.dim(), 1) or t.dim() == 0:
                    raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dd} for some input, but "
                                     f"that input is a Tensor of dimensionality {t.dim()} so expected in_dim to "
                                     "satisfy "
                                     f"-{t.dim()} <= in_dim < {t.dim()}.")
                sizes.append(t.shape[dd])
            leaf_dims.append((leaves, spec, ds))
        if not sizes:
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): at least one input must be a Tensor with a "
                             "mapped dim (in_dims has no non-None value for any Tensor)")
        if len(set(sizes)) != 1:
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): Expected all tensors to have the same size "
                             f"in the mapped dimension, got sizes {sizes} for the mapped dimension")
        n = sizes[0]
        if chunk_size is not None and chunk_size != -1 and chunk_size < n:
            return _vmap_chunked(func, leaf_dims, kwargs, n, chunk_size, out_dims, randomness)
        return _vmap_call(func, leaf_dims, kwargs, n, out_dims, randomness)
    return wrapper


def _vmap_call(func, leaf_dims, kwargs, n, out_dims, randomness):
    lvl = _vm.Level(n, randomness)
    _vm.levels.append(lvl)
    try:
        call = [_unflatten([_vm.wrap(t.movedim(dd, 0) if dd else t, lvl) if dd is not None else t
                            for t, dd in zip(leaves, ds)], spec) for leaves, spec, ds in leaf_dims]
        if randomness == "different":
            with _RandomFactories(lvl):
                out = func(*call, **kwargs)
        elif randomness == "error":  # any draw raises (the generators check; no per-op cost)
            _C._vmap_random_guard(1)
            try:
                out = func(*call, **kwargs)
            finally:
                _C._vmap_random_guard(-1)
        else:
            out = func(*call, **kwargs)
    finally:
        _vm.levels.pop()
    out_leaves, spec = _flatten(out)
    if isinstance(out_dims, (tuple, list)):
        if isinstance(out, (tuple, list)) and len(out) == len(out_dims):
            od = _expand_out_dims(out_dims, out)
        elif len(out_dims) == 1:
            od = [out_dims[0]] * len(out_leaves)
        else:
            od = []
    else:
        od = [out_dims] * len(out_leaves)
    if len(od) != len(out_leaves):
        raise ValueError(f"vmap(f, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         "structure of `outputs`.")
    res = []
    for t, d in zip(out_leaves, od):
        if not isinstance(t, _C.Tensor):
            if d is None:
                res.append(t)
                continue
            raise ValueError(f"vmap(f, ...): `f` must only return Tensors, got type {type(t)}. Did you mean to set "
                             "out_dims= to None for output?")
        p, batched = _vm.unwrap(t, lvl)
        if d is None:
            if batched:
                raise ValueError("vmap(f, ..., out_dims=None): returning a batched Tensor with out_dims=None is not "
                                 "possible: it varies across the mapped dimension")
            res.append(t)
            continue
        if not batched:
            p = p.unsqueeze(0).expand((n,) + tuple(p.shape))
        if not -p.dim() <= d < p.dim():
            raise IndexError(f"vmap: Dimension out of range (expected to be in range of [{-p.dim()}, {p.dim() - 1}], "
                             f"but got {d}) for out_dims")
        res.append(p.movedim(0, d) if d else p)
    return _unflatten(res, spec)


def _expand_out_dims(out_dims, out):
    """out_dims as a pytree prefix of the output: one value per output leaf."""
    def rec(d, o):
        if isinstance(o, (tuple, list)) and isinstance(d, (tuple, list)):
            return [x for dd, oo in zip(d, o) for x in rec(dd, oo)]
        return [d] * len(_flatten(o)[0])
    return rec(out_dims, out)


def _vmap_chunked(func, leaf_dims, kwargs, n, chunk_size, out_dims, randomness):
    pieces = []
    for start in range(0, n, chunk_size):
        length = min(chunk_size, n - start)
        chunk = [(([t.narrow(dd, start, length) if dd is not None else t for t, dd in zip(leaves, ds)]), spec, ds)
                 for leaves, spec, ds in leaf_dims]
        pieces.append(_vmap_call(func, chunk, kwargs, length, out_dims, randomness))
    first_leaves, spec = _flatten(pieces[0])
    od = [out_dims] * len(first_leaves) if not isinstance(out_dims, (tuple, list)) else \
        _expand_out_dims(out_dims, pieces[0])
    cols = []
    for j, d in enumerate(od):
        col = [_flatten(p)[0][j] for p in pieces]
        cols.append(_C.cat(col, d) if d is not None else col[0])
    return _unflatten(cols, spec)


_RANDOM_FACTORIES = {"rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "rand_like",
                     "randn_like", "randint_like", "poisson", "dropout", "alpha_dropout", "feature_alpha_dropout",
                     "dropout1d", "dropout2d", "dropout3d", "uniform_", "normal_", "bernoulli_", "random_",
                     "exponential_", "cauchy_", "log_normal_", "geometric_"}


class _RandomFactories(kindle.overrides.TorchFunctionMode):
    """Inside vmap with randomness 'different': random ops on tensors that are not batched
    (factories, captured tensors) draw one value per example."""

    def __init__(self, lvl):
        super().__init__()
        self.lvl = lvl

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name not in _RANDOM_FACTORIES or types:
            return func(*args, **kwargs)
        if name in ("rand", "randn") or (name == "normal" and len(args) >= 3):
            size = args[-1] if name == "normal" else args[0]
            size = tuple(size) if isinstance(size, (tuple, list)) else (size,)
            if name == "normal":
                return _vm.wrap(func(*args[:-1], (self.lvl.size,) + size, **kwargs), self.lvl)
            return _vm.wrap(func((self.lvl.size,) + size, *args[1:], **kwargs), self.lvl)
        if name == "randint":
            return _vm.wrap(func(*args[:-1], (self.lvl.size,) + tuple(args[-1]), **kwargs), self.lvl)
        if name.endswith("_") and args and isinstance(args[0], _C.Tensor):
            raise RuntimeError(f"vmap: {name}(self, ...) on a Tensor that is not batched would draw one value for "
                               "every example; vmap with randomness='different' cannot write different values into "
                               "it (use an out-of-place random op)")
        return _vm.wrap(_C.stack([func(*args, **kwargs) for _ in range(self.lvl.size)]), self.lvl)


def functionalize(func, *, remove="mutations"):
    """func itself: Kindle's ops already run eagerly on the tensors given (no functionalization
    pass is needed for any of Kindle's transforms)."""
    return func


def replace_all_batch_norm_modules_(root):
    """Makes every batch norm in root (root included) stop tracking running statistics, in place:
    running_mean, running_var and num_batches_tracked become None and track_running_stats False,
    so the module always normalises with the batch's statistics (what vmap over a model with
    batch norm needs, as in torch.func). Returns root."""
    from ..nn.modules.batchnorm import _BatchNorm
    for module in root.modules():  # root itself comes first
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
