"""The keyword arguments torch accepts, derived from torch's own signatures: for every function
of the op database (kindle.<name> and kindle.nn.functional.<name>), each parameter name in the
signature torch documents (the docstring's signature line, else torch.overrides' stand-in with
the same signature) must be accepted by Kindle's function under the same name.

KNOWN_MISSING lists what Kindle does not accept yet, by function; the test fails when a new gap
appears and when a listed one has been closed, so the list only shrinks."""
import inspect
import re

import numpy as np
import pytest

import kindle
from opdb import OPS

torch = pytest.importorskip("torch")

KNOWN_MISSING = {
    "clone": {"memory_format"},               # on Tensor.clone only
    "logsumexp": {"names"},                   # named tensors
    "concatenate": {"axis"},                  # the NumPy spelling of dim
    "gather": {"sparse_grad"},                # sparse gradients: no sparse tensors yet
    "relu": {"inplace"},
    "threshold": {"inplace"},
    "split_with_sizes": {"split_size_or_sections", "tensor"},   # torch.overrides' stand-in names
    "true_divide": {"dividend", "divisor"},   # torch's documented (not its usual) names
}


def _signature_names(text, name):
    names = set()
    for m in re.finditer(rf"^\s*{re.escape(name)}\((.*?)\)\s*->", text, re.M):
        for part in m.group(1).split(","):
            part = part.strip()
            if not part or part in ("/", "*") or part.startswith("*"):
                continue
            n = re.split(r"[=:\s]", part)[0]
            if n.isidentifier():
                names.add(n)
    return names


def torch_names(fn, overrides):
    name = getattr(fn, "__name__", "")
    names = _signature_names(getattr(fn, "__doc__", None) or "", name)
    if not names and fn in overrides:
        params = inspect.signature(overrides[fn]).parameters.values()
        names = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    if not names:
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            return set()
        names = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    return names - {"self"}


def kindle_names(fn):
    """Parameter names of a kindle function (all nanobind overloads), or None for **kwargs."""
    sig = getattr(fn, "__nb_signature__", None)
    if sig is not None:
        names = set()
        for text, *_ in sig:
            inner = text[text.index("(") + 1: text.rindex(")")]
            for part in re.split(r",\s*(?![^\[]*\])", inner):
                part = part.strip().lstrip("*")
                if part not in ("", "/"):
                    names.add(re.split(r"[=:\s]", part)[0])
        return names
    params = inspect.signature(fn).parameters.values()
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


def _functions():
    out = []
    for o in OPS:
        if o.functional:
            out.append(("nn.functional." + o.name, getattr(torch.nn.functional, o.name, None),
                        getattr(kindle.nn.functional, o.name, None)))
        elif o.function:
            out.append((o.name, getattr(torch, o.name, None), getattr(kindle, o.name, None)))
    return [f for f in out if f[1] is not None and f[2] is not None]


def test_keyword_arguments_match_torch():
    overrides = torch.overrides.get_testing_overrides()
    missing = {}
    for key, t, k in _functions():
        kn = kindle_names(k)
        if kn is None:
            continue
        gap = torch_names(t, overrides) - kn
        if "self" in kn:  # a method-style first argument takes torch's `input`
            gap -= {"input"}
        if gap:
            missing[key] = gap
    new = {k: v - KNOWN_MISSING.get(k, set()) for k, v in missing.items()}
    new = {k: sorted(v) for k, v in new.items() if v}
    closed = {k: sorted(v - missing.get(k, set())) for k, v in KNOWN_MISSING.items()}
    closed = {k: v for k, v in closed.items() if v}
    assert not new, f"keyword arguments torch accepts and kindle does not: {new}"
    assert not closed, f"now accepted: remove from KNOWN_MISSING: {closed}"


def test_out_writes_into_the_given_tensor():
    o = kindle.empty(3)
    r = kindle.add(kindle.ones(3), 2, out=o)
    assert r is o and o.tolist() == [3.0, 3.0, 3.0]
    values, indices = kindle.empty(0), kindle.empty(0, dtype=kindle.int64)
    r = kindle.sort(kindle.tensor([3.0, 1.0, 2.0]), out=(values, indices))
    assert r.values is values and values.tolist() == [1.0, 2.0, 3.0] and indices.tolist() == [1, 2, 0]
    with pytest.warns(UserWarning, match="resized"):
        kindle.mul(kindle.ones(3), 2, out=kindle.zeros(2))
    with pytest.raises(RuntimeError, match="can't be cast"):
        kindle.add(kindle.ones(3), 1.5, out=kindle.zeros(3, dtype=kindle.int64))
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        kindle.mul(kindle.ones(3, requires_grad=True), 2, out=kindle.zeros(3))


def test_factory_layout_and_memory_format():
    t = kindle.zeros(2, 3, layout=kindle.strided, pin_memory=False)
    assert t.shape == (2, 3)
    assert kindle.empty_like(t, memory_format=kindle.preserve_format).shape == (2, 3)
    with pytest.raises(TypeError):
        kindle.ones(2, layout="strided")


# out= for elementwise ops writes straight into the given tensor (no temporary, no copy): each
# case runs in kindle and torch and must give the same values, dtype, strides and identity, or
# the same kind of error.
_OUT_OPS = {
    "neg": lambda lib, a, b, out: lib.neg(a, out=out),
    "exp": lambda lib, a, b, out: lib.exp(a, out=out),
    "tanh": lambda lib, a, b, out: lib.tanh(a, out=out),
    "sqrt": lambda lib, a, b, out: lib.sqrt(a.abs(), out=out),
    "mul": lambda lib, a, b, out: lib.mul(a, b, out=out),
    "add_alpha": lambda lib, a, b, out: lib.add(a, b, alpha=2, out=out),
    "sub": lambda lib, a, b, out: lib.sub(a, b, out=out),
    "div_floor": lambda lib, a, b, out: lib.div(a, b, rounding_mode="floor", out=out),
    "maximum": lambda lib, a, b, out: lib.maximum(a, b, out=out),
    "lt": lambda lib, a, b, out: lib.lt(a, b, out=out),
}
_OUT_CASES = {  # (a's shape, b's shape, out: shape, dtype, transposed)
    "same": ((3, 4), (3, 4), ((3, 4), "float32", False)),
    "broadcast": ((3, 1), (4,), ((3, 4), "float32", False)),
    "strided_out": ((3, 4), (3, 4), ((4, 3), "float32", True)),
    "wider_out": ((5,), (5,), ((5,), "float64", False)),
    "bool_out": ((5,), (5,), ((5,), "bool", False)),
    "resized": ((2, 3), (2, 3), ((4,), "float32", False)),
    "empty_out": ((2, 3), (3,), ((0,), "float32", False)),
    "zero_dim": ((), (), ((), "float32", False)),
}


@pytest.mark.parametrize("case", sorted(_OUT_CASES))
@pytest.mark.parametrize("op", sorted(_OUT_OPS))
def test_out_elementwise_matches_torch(op, case):
    import warnings
    torch = pytest.importorskip("torch")
    sa, sb, (so, dt, transposed) = _OUT_CASES[case]
    results = []
    for lib in (kindle, torch):
        g = torch.Generator().manual_seed(0)
        a = lib.tensor(torch.randn(sa, generator=g).tolist())
        b = lib.tensor((torch.rand(sb, generator=g) + 0.5).tolist())
        out = lib.zeros(so, dtype=getattr(lib, dt))
        if transposed:
            out = out.t()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                r = _OUT_OPS[op](lib, a, b, out)
            except Exception as e:  # noqa: BLE001 (the kind is compared)
                results.append(("error", type(e).__name__))
                continue
        assert r is out
        results.append((r.tolist(), str(r.dtype).split(".")[-1], r.stride(), tuple(r.shape),
                        any("resized" in str(x.message) for x in w)))
    k, t = results
    if t[0] == "error" or k[0] == "error":
        assert k == t
        return
    assert k[1:] == t[1:]
    assert np.allclose(np.array(k[0], dtype=float), np.array(t[0], dtype=float), rtol=1e-6, atol=1e-6, equal_nan=True)


def test_out_aliasing_an_input():
    a = kindle.arange(6.0)
    assert kindle.neg(a, out=a) is a and a.tolist() == [-0.0, -1.0, -2.0, -3.0, -4.0, -5.0]
    a = kindle.arange(6.0)
    with pytest.raises(RuntimeError, match="single memory location"):
        kindle.neg(a[:4], out=a[2:])
    a = kindle.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        kindle.exp(kindle.ones(3), out=a)  # a leaf that requires grad, with grad mode on
    with kindle.no_grad():
        kindle.exp(kindle.zeros(3), out=a)
    assert a.tolist() == [1.0, 1.0, 1.0]
