"""vmap's batching rules (kindle/func/_batching.py) over the op database.

For every op and sample, each tensor argument gets a batch of three different examples (the
sample's values, scaled for floating arguments; the sample's view ops are applied inside the
vmapped function, so they run on batched tensors too). vmap(op) must equal the op run once per
example and stacked, with every argument batched (at dim 0, or at the last dim), and with only
the first one batched. An op whose family in ops.yaml is not `loop` must run through its rule:
the per-example fallback warning fails the test. Where the loop raises, vmap must raise the same
exception type.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import kindle
from common import report
from opdb import OPS, TArg, leaves
from test_autograd_ops import Built, _call, _flat, _main_variant, _short

B = 3
SCALES = (1.0, 0.75, 1.25)
_SCHEMAS = kindle._C._op_schemas


def _declared_loop(name):
    """Whether ops.yaml (or the rules for hand-written bindings) declare the op `vmap: loop`."""
    from kindle.func import _batching
    return any(ov[0] == "loop" for ov in _SCHEMAS.get(name, ())) or _batching._BY_NAME.get(name) is _batching.loop


def _targs(sample):
    out, seen = [], set()
    for t in leaves((sample.input, sample.args, sample.kwargs)):
        if isinstance(t, TArg) and id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def _example_data(targ, k):
    a = np.asarray(targ.data)
    if a.dtype.kind in "fc" and k:
        return (a * SCALES[k]).astype(a.dtype)
    return a


def _tensor(targ, data):
    t = kindle.tensor(data)
    return t.to(kindle.bfloat16) if targ.dtype == "bfloat16" else t


def _runner(op, sample, targs, variant):
    def run(*tensors):
        b = Built(kindle, sample, targs, list(tensors), inplace_input=variant.startswith("inplace"))
        out = _call(op, kindle, b, variant)
        return tuple(_flat(out)) if not variant.startswith("inplace") else (b.base,)
    return run


def _same(a, b):
    a, b = a.detach(), b.detach()
    if tuple(a.shape) != tuple(b.shape):
        return f"shape {tuple(a.shape)} vs the loop's {tuple(b.shape)}"
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs the loop's {b.dtype}"
    name = str(a.dtype).rsplit(".", 1)[-1]
    if a.dtype == kindle.bfloat16:
        a, b = a.float(), b.float()
    x, y = a.numpy(), b.numpy()
    if x.dtype.kind in "fc":
        # (half precision: two units in the last place, for a different rounding order)
        rtol, atol = {"float64": (1e-6, 1e-6), "complex128": (1e-6, 1e-6), "float32": (1e-4, 1e-4),
                      "complex64": (1e-4, 1e-4), "float16": (2e-3, 1e-3)}.get(name, (3.2e-2, 1e-2))
        if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
            return f"values differ by {np.nanmax(np.abs(x - y)) if x.size else 0}"
    elif not np.array_equal(x, y):
        return "values differ"
    return None


def _check(op, sample, variant, batch_first_only):
    targs = _targs(sample)
    if not targs:
        return None
    examples = [[_tensor(t, _example_data(t, k)) for t in targs] for k in range(B)]
    run = _runner(op, sample, targs, variant)

    def fresh(ts):  # (in-place ops update their arguments)
        return [t.clone() for t in ts]
    try:
        ref = [run(*fresh(ex)) for ex in examples]
        ref = tuple(kindle.stack([r[j] for r in ref]) for j in range(len(ref[0])))
        ref_err = None
    except Exception as e:  # noqa: BLE001
        ref, ref_err = None, e
    stacked = [kindle.stack([ex[i] for ex in examples]) for i in range(len(targs))]
    in_dims = [0] * len(targs)
    if batch_first_only:
        stacked = [stacked[0]] + [ex for ex in examples[0][1:]]
        in_dims = [0] + [None] * (len(targs) - 1)
        ref, ref_err = None, None
        try:
            outs = [run(*fresh([examples[k][0]] + examples[0][1:])) for k in range(B)]
            ref = tuple(kindle.stack([r[j] for r in outs]) for j in range(len(outs[0])))
        except Exception as e:  # noqa: BLE001
            ref_err = e
    else:  # batch at the last dim of every other argument
        for i in range(1, len(stacked), 2):
            stacked[i] = stacked[i].movedim(0, -1)
            in_dims[i] = -1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got = kindle.vmap(run, in_dims=tuple(in_dims))(*stacked)
            err = None
        except Exception as e:  # noqa: BLE001
            got, err = None, e
    # the generic fallback (no rule) is allowed only for ops declared `loop`; a rule that does
    # not cover a case says which case in its warning
    no_rule = sorted({re.search(r"rule for (\S+);", str(w.message)).group(1) for w in caught
                      if "no batching rule for" in str(w.message)})
    if ref_err is not None:
        # vmap must refuse too (its message may differ: it sees the whole batch)
        return None if err is not None else f"the loop raised {_short(ref_err)}, vmap did not"
    if not ref:  # no tensor results (equal, allclose): data-dependent Python values
        return None
    if err is not None:
        if str(err).startswith("vmap: "):
            return None  # a refusal vmap documents (random ops in 'error' mode, in-place updates)
        return f"vmap raised {_short(err)}"
    undeclared = [n for n in no_rule if not _declared_loop(n)]
    if undeclared:
        return f"fell back to the per-example loop for {undeclared}"
    if len(got) != len(ref):
        return f"{len(got)} outputs, the loop has {len(ref)}"
    for j, (g, r) in enumerate(zip(got, ref)):
        problem = _same(g, r) if op.compare_values else (None if g.shape == r.shape else "shape differs")
        if problem:
            return f"output {j}: {problem}"
    return None


def _dtype(op):
    for d in ("float64", "float32", "int64", "bool", "complex128"):
        if d in op.dtypes:
            return d
    return op.dtypes[0]


def _params():
    return [o for o in OPS if o.kind not in ("creation", "random") and "random" not in o.name]


@pytest.mark.parametrize("op", _params(), ids=lambda o: o.qualname)
def test_vmap_matches_loop(op):
    dtype = _dtype(op)
    variant = _main_variant(op)
    failures = []
    for s in op.get_samples(dtype):
        for first_only in (False, True):
            err = _check(op, s, variant, first_only)
            if err:
                failures.append((s, ("first arg only: " if first_only else "all args: ") + err))
    assert not failures, report(failures, limit=10)


# ---------------------------------------------------------------------------------------------
# the API, side by side with torch.func where torch is installed

def _torch():
    return pytest.importorskip("torch")


def test_results_are_plain_tensors_and_dims_move():
    x = kindle.randn(3, 4, 5)
    out = kindle.vmap(lambda a: a.sum(0), in_dims=1, out_dims=1)(x)
    assert type(out) is kindle.Tensor
    assert kindle.allclose(out, x.sum(0).T)
    a, b = kindle.vmap(lambda t: (t * 2, t.sum()), out_dims=(1, 0))(x)
    assert a.shape == (4, 3, 5) and kindle.allclose(a, (x * 2).movedim(0, 1))
    assert kindle.allclose(b, x.sum((1, 2)))
    nested = kindle.vmap(kindle.vmap(lambda u, v: u @ v, in_dims=(0, None)), in_dims=(0, None))(x, kindle.randn(5))
    assert nested.shape == (3, 4)
    chunked = kindle.vmap(lambda t: t.softmax(-1), chunk_size=2)(x)
    assert kindle.allclose(chunked, x.softmax(-1))
    d = kindle.vmap(lambda p: p["w"] * p["b"], in_dims=({"w": 0, "b": None},))({"w": x, "b": kindle.ones(5)})
    assert kindle.allclose(d, x)


def test_unbatched_outputs_and_out_dims_none():
    x = kindle.randn(3, 2)
    c = kindle.ones(2)
    out = kindle.vmap(lambda t: c * 2)(x)  # does not depend on the batch: broadcast over it
    assert out.shape == (3, 2)
    same = kindle.vmap(lambda t: (t, c), out_dims=(0, None))(x)
    assert same[1] is c or kindle.equal(same[1], c)
    with pytest.raises(ValueError, match="out_dims=None"):
        kindle.vmap(lambda t: t, out_dims=None)(x)


def test_errors_match_torch():
    x = kindle.randn(3, 2)
    with pytest.raises(RuntimeError, match="item"):
        kindle.vmap(lambda t: t.sum().item())(x)
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        kindle.vmap(lambda t: t * 2 if t.sum() > 0 else t)(x)
    captured = kindle.zeros(2)
    with pytest.raises(RuntimeError, match="vmap: add_"):
        kindle.vmap(lambda t: captured.add_(t))(x)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        kindle.vmap(lambda t: t + kindle.randn(2))(x)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        kindle.vmap(lambda t: kindle.nn.functional.dropout(t, 0.5))(x)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        kindle.vmap(lambda a, b: a + b)(x, kindle.randn(4, 2))
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        kindle.vmap(lambda t: t, randomness="sometimes")


def test_randomness_same_and_different():
    x = kindle.zeros(4, 1000)
    kindle.manual_seed(0)
    diff = kindle.vmap(lambda t: t + kindle.rand(1000), randomness="different")(x)
    assert not kindle.allclose(diff[0], diff[1])
    same = kindle.vmap(lambda t: t + kindle.rand(1000), randomness="same")(x)
    assert kindle.equal(same[0], same[3])
    drop = kindle.vmap(lambda t: kindle.nn.functional.dropout(t + 1, 0.5), randomness="same")(x)
    assert kindle.equal(drop[0], drop[2]) and 0.3 < float((drop[0] == 0).float().mean()) < 0.7
    drop = kindle.vmap(lambda t: kindle.nn.functional.dropout(t + 1, 0.5), randomness="different")(x)
    assert not kindle.equal(drop[0], drop[2])


def test_inplace_on_batched_and_views():
    x = kindle.randn(3, 4)
    y = x.clone()
    out = kindle.vmap(lambda t: t.mul_(2).add_(1))(y)
    assert kindle.allclose(y, x * 2 + 1) and kindle.allclose(out, y)
    z = x.clone()
    kindle.vmap(lambda t: t[1:].zero_())(z)
    assert kindle.equal(z[:, 1:], kindle.zeros(3, 3)) and kindle.equal(z[:, 0], x[:, 0])
    w = x.clone()
    kindle.vmap(lambda t, v: (t.__setitem__(0, v), t)[1])(w, kindle.arange(3.0))
    assert kindle.equal(w[:, 0], kindle.arange(3.0))


def test_per_sample_gradients_of_a_cnn_match_torch_func():
    torch = _torch()
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((4, 1, 3, 3)) * 0.3
    b1 = rng.standard_normal(4) * 0.1
    w2 = rng.standard_normal((10, 4 * 4 * 4)) * 0.1
    x = rng.standard_normal((6, 1, 8, 8))
    y = rng.integers(0, 10, 6)

    def run(lib):
        F = lib.nn.functional
        params = tuple(lib.tensor(a) for a in (w1, b1, w2))

        def loss(p, xi, yi):
            h = F.max_pool2d(F.relu(F.conv2d(xi.unsqueeze(0), p[0], p[1], padding=1)), 2)
            return F.cross_entropy(F.linear(h.flatten(1), p[2]), yi.unsqueeze(0))
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # every op batched by its rule
            return lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, lib.tensor(x), lib.tensor(y))
    for k, t in zip(run(kindle), run(torch)):
        np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("case", [
    lambda L, x: L.func.vmap(L.func.jacrev(lambda a: a.sin() * a.sum()))(x),
    lambda L, x: L.func.vmap(L.func.hessian(lambda a: (a.exp() * a).sum()))(x),
    lambda L, x: L.func.jacfwd(lambda a: (a @ a.T).tanh())(x),
    lambda L, x: L.func.vmap(L.func.jvp, in_dims=(None, 0, 0))(lambda a: a.cos() * 3, (x,), (x * 2,)),
    lambda L, x: L.func.vmap(lambda r: L.func.vjp(lambda a: a.exp().cumsum(0), r)[1](r))(x),
    lambda L, x: L.func.vmap(L.func.vmap(lambda a, b: L.outer(a, b), in_dims=(0, None)),
                             in_dims=(0, None))(x.reshape(3, 2, 2), x[0, :2]),
    lambda L, x: L.func.vmap(lambda a: L.einsum("i,j->ij", a, a))(x),
    lambda L, x: L.func.vmap(lambda a: L.linalg.solve(L.eye(4, dtype=a.dtype) * 3 + a.outer(a), a))(x),
])
def test_transforms_compose_as_torch_func(case):
    torch = _torch()
    x = np.random.default_rng(1).standard_normal((3, 4))
    k = case(kindle, kindle.tensor(x))
    t = case(torch, torch.tensor(x))
    ks = k if isinstance(k, tuple) else (k,)
    ts = t if isinstance(t, tuple) else (t,)
    for a, b in zip(ks, ts):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_a_batched_value_kept_past_its_vmap_raises():
    leak = []

    def f(t):
        leak.append(t * 2)
        return t + 1
    kindle.vmap(f)(kindle.ones(3, 2))
    with pytest.raises(RuntimeError, match="escaped"):
        leak[0] + 1  # noqa: B018  (would otherwise read the first example only)
    leak.clear()


def _functions(lib):
    class Cube(lib.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, k):
            return x ** 3 * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.save_for_forward(inputs[0])
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * g * ctx.k, None

        @staticmethod
        def jvp(ctx, t, _):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * t * ctx.k

    class RowSum(lib.autograd.Function):  # its own batching rule
        @staticmethod
        def forward(x):
            return x.sum(-1)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.shape = inputs[0].shape

        @staticmethod
        def backward(ctx, g):
            return g.unsqueeze(-1).expand(ctx.shape)

        @staticmethod
        def vmap(info, in_dims, x):
            return x.sum(-1), 0

    class Plain(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class NoRule(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return Cube, RowSum, Plain, NoRule


def test_autograd_function_under_vmap_matches_torch():
    torch = _torch()
    x = np.random.default_rng(2).standard_normal((3, 4))
    results = []
    for lib in (kindle, torch):
        Cube, RowSum, Plain, NoRule = _functions(lib)
        t = lib.tensor(x)
        f = lib.func
        results.append([
            f.vmap(Cube.apply, in_dims=(0, None))(t, 2.0),
            f.vmap(f.grad(lambda a: Cube.apply(a, 2.0).sum()))(t),
            f.jacfwd(lambda a: Cube.apply(a, 2.0))(t[0]),
            f.vmap(RowSum.apply)(t),
        ])
        with pytest.raises(RuntimeError, match="must override the setup_context staticmethod"):
            f.vmap(Plain.apply)(t)
        with pytest.raises(RuntimeError, match="generate_vmap_rule"):
            f.vmap(NoRule.apply)(t)
    for k, t in zip(*results):
        np.testing.assert_allclose(k.numpy(), t.detach().numpy(), rtol=1e-12)
    Cube = _functions(kindle)[0]
    xr = kindle.tensor(x).requires_grad_()
    kindle.vmap(Cube.apply, in_dims=(0, None))(xr, 2.0).sum().backward()  # backward after the vmap
    np.testing.assert_allclose(xr.grad.numpy(), 6 * x ** 2, rtol=1e-12)
