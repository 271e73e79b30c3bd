"""__torch_function__ and kindle.overrides against torch: subclass propagation through functions,
methods, operators and indexing; the function objects and arguments an override receives;
duck-typed tensors; PyTorch's dispatch order and NotImplemented; TorchFunctionMode (factories
included); the Disable* switches; nn.Parameter opting out; the public helpers."""
import numpy as np
import pytest

import kindle
import kindle.nn.functional as KF
import kindle.overrides as KO

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402
import torch.overrides as TO  # noqa: E402

# programs written against a library L (kindle or torch) and its functional namespace F
PROGRAMS = {
    "operators": lambda L, F, x: [x + 1, 1 + x, x - 1, 1 - x, x * 2, 2 * x, x / 2, 2 / x, x ** 2, 2 ** x, -x, abs(x),
                                  x // 1, x % 2, x == 1, x != 1, x < 1, x <= 1, x > 1, x >= 1, x @ x.mT],
    "methods": lambda L, F, x: [x.exp(), x.sum(), x.sum(0), x.mean(dim=1, keepdim=True), x.view(-1), x.reshape(3, 2),
                                x.permute(1, 0), x.t(), x.float(), x.double(), x.to(L.float64), x.clone(),
                                x.unsqueeze(0), x.transpose(0, 1), x.add(1, alpha=2), x.clamp(min=0.5),
                                x.long(), x.int(), x.bool(), x.type_as(L.ones(1)), +x, ~x.bool(), x.new_zeros(3),
                                x.new_ones((2, 2)), x.new_full((2,), 3.0)],
    "functions": lambda L, F, x: [L.add(x, x), L.exp(x), L.where(x > 1, x, 0.0), L.cat([x, x]), L.stack([x, x]),
                                  L.matmul(x, x.mT), L.zeros_like(x), L.sum(x, dim=1), L.softmax(x, dim=-1)],
    "functional": lambda L, F, x: [F.relu(x), F.gelu(x), F.softmax(x, dim=-1), F.linear(x, L.ones(4, 3)),
                                   F.dropout(x, 0.0), F.layer_norm(x, (3,))],
    "indexing": lambda L, F, x: [x[0], x[:, 1:], x[x > 1], x[..., None]],
    "tuples": lambda L, F, x: [*L.max(x, dim=1), *x.split(1), *L.sort(x, dim=1), *x.unbind(0)],
}


def _pair():
    a = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
    return kindle.tensor(a), torch.tensor(a)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_subclasses_propagate_through_every_kind_of_call_as_in_torch(name):
    k, t = _pair()
    results = {}
    for L, F, x in ((kindle, KF, k), (torch, TF, t)):
        class Tagged(L.Tensor):
            pass
        out = PROGRAMS[name](L, F, x.as_subclass(Tagged))
        results[L.__name__] = out
        for r in out:
            assert type(r) is Tagged, f"{L.__name__}: {type(r)}"
    for a, b in zip(results["kindle"], results["torch"]):
        np.testing.assert_allclose(np.asarray(a.as_subclass(kindle.Tensor).tolist(), dtype=float),
                                   np.asarray(b.as_subclass(torch.Tensor).tolist(), dtype=float), rtol=1e-6)


def test_an_override_sees_the_public_function_and_its_arguments():
    for L in (kindle, torch):
        seen = []

        class Logged(L.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append((func, types, args, kwargs))
                return super().__torch_function__(func, types, args, kwargs)

        x = L.ones(2).as_subclass(Logged)
        L.add(x, 2, alpha=3)
        x.mul(4)
        x + 1
        L.nn.functional.relu(x)
        L.nn.functional.conv_transpose3d(L.ones(1, 1, 2, 2, 2).as_subclass(Logged), L.ones(1, 1, 1, 1, 1))
        func, types, args, kwargs = seen[0]
        assert func is L.add and types == (Logged,) and args[0] is x and args[1] == 2 and kwargs["alpha"] == 3
        assert seen[1][0] is L.Tensor.mul and seen[1][2][0] is x
        assert seen[3][0] is L.nn.functional.relu and seen[4][0] is L.nn.functional.conv_transpose3d
        assert [getattr(s[0], "__name__", None) for s in seen[:3]] == ["add", "mul", "add"]


def test_results_of_overrides_and_autograd_through_a_subclass():
    for L in (kindle, torch):
        class Sub(L.Tensor):
            pass
        leaf = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = leaf.as_subclass(Sub)
        z = (y * y).sum()
        assert type(z) is Sub and z.requires_grad
        z.backward()
        assert leaf.grad.tolist() == [2.0, 4.0, 6.0]


class Duck:
    """A duck-typed tensor: not a Tensor, defines __torch_function__."""

    def __init__(self, tag):
        self.tag = tag

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return ("duck", func.__name__, types, len(args))


def test_duck_typed_tensors_take_over_functions_methods_and_operators():
    for L, F in ((kindle, KF), (torch, TF)):
        d = Duck(1)
        assert L.add(d, 1)[:2] == ("duck", "add")
        assert L.exp(d)[:2] == ("duck", "exp")
        assert F.linear(d, L.ones(2, 2))[:2] == ("duck", "linear")
        r = L.ones(2) + d
        assert r[0] == "duck" and r[2] == (Duck,)
        assert L.ones(2).mul(d)[:2] == ("duck", "mul")
        assert KO.is_tensor_like(d) and TO.is_tensor_like(d)


def test_dispatch_order_subclasses_first_and_notimplemented():
    for L in (kindle, torch):
        calls = []

        class A(L.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                calls.append("A")
                return "from A"

        class B(A):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                calls.append("B")
                return NotImplemented

        a = L.ones(1).as_subclass(A)
        b = L.ones(1).as_subclass(B)
        assert L.add(a, b) == "from A"
        assert calls == ["B", "A"]

        class Never(L.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return NotImplemented

        with pytest.raises(TypeError, match="Multiple dispatch failed for 'torch.add'; all __torch_function__ "
                                            "handlers returned NotImplemented"):
            L.add(L.ones(1).as_subclass(Never), 1)


def test_parameters_opt_out_and_ops_on_them_are_plain_tensors():
    for L in (kindle, torch):
        p = L.nn.Parameter(L.ones(2, 2))
        assert type(p * 2) is L.Tensor and type(p.sum()) is L.Tensor
        assert type(L.nn.functional.linear(L.ones(1, 2), p)) is L.Tensor
        assert L.nn.Parameter.__torch_function__ is L._C._disabled_torch_function_impl


def test_torch_function_mode_sees_every_call_including_factories():
    for L, O in ((kindle, KO), (torch, TO)):
        seen = []

        class Log(O.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                seen.append(getattr(func, "__name__", str(func)))
                return func(*args, **(kwargs or {}))

        with Log():
            x = L.zeros(2)
            y = (x + 1).exp()
        assert "zeros" in seen and "add" in seen and "exp" in seen
        assert y.tolist() == pytest.approx([np.e, np.e])
        n = len(seen)
        L.ones(1) + 1  # outside the mode: not seen
        assert len(seen) == n


def test_disable_switches():
    for L in (kindle, torch):
        class Sub(L.Tensor):
            pass
        x = L.ones(2).as_subclass(Sub)
        with L._C.DisableTorchFunctionSubclass():
            assert type(x + 1) is L.Tensor
        assert type(x + 1) is Sub


def test_public_helpers_match_torch():
    for L, O in ((kindle, KO), (torch, TO)):
        class Sub(L.Tensor):
            pass
        x, s = L.ones(1), L.ones(1).as_subclass(Sub)
        assert not O.has_torch_function((x, 1)) and O.has_torch_function((x, s))
        assert O.has_torch_function_unary(s) and O.has_torch_function_variadic(x, s)

        @O.wrap_torch_function(lambda a, b=None: (a,))
        def first(a, b=None):
            return "plain"

        assert first(x) == "plain"
        assert first(Duck(0))[:2] == ("duck", "first")

        def my_api(a):
            if O.has_torch_function_unary(a):
                return O.handle_torch_function(my_api, (a,), a)
            return "plain"

        assert my_api(Duck(0))[:2] == ("duck", "my_api") and my_api(x) == "plain"


# ---- every op of the op database, with its tensor inputs as a subclass
from opdb import OPS, materialize  # noqa: E402


class _Sub(kindle.Tensor):
    pass


def _as_sub(x):
    if isinstance(x, kindle.Tensor):
        return x.as_subclass(_Sub)
    if isinstance(x, (list, tuple)):
        return type(x)(_as_sub(v) for v in x)
    if isinstance(x, dict):
        return {k: _as_sub(v) for k, v in x.items()}
    return x


def _plain(x):
    if isinstance(x, kindle.Tensor):
        return x.as_subclass(kindle.Tensor)
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def _tensors(x):
    if isinstance(x, kindle.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    return []


@pytest.mark.parametrize("op", [o for o in OPS if "float32" in o.dtypes], ids=lambda o: o.qualname)
def test_every_op_keeps_a_subclass_and_its_values(op):
    """The op database's float32 samples with their tensors as a Tensor subclass: the same values
    (or the same exception type) as with plain tensors, every tensor result an instance of the
    subclass (Tensor's default __torch_function__, as torch)."""
    failures = []
    for s in op.get_samples("float32")[:6]:
        inp, args, kwargs = (materialize(x, kindle) for x in (s.input, s.args, s.kwargs))
        try:
            want, err = op.invoke(kindle, "function", inp, args, kwargs), None
        except Exception as e:  # noqa: BLE001
            want, err = None, e
        inp, args, kwargs = (materialize(x, kindle) for x in (s.input, s.args, s.kwargs))
        try:
            got = op.invoke(kindle, "function", _as_sub(inp), _as_sub(args), _as_sub(kwargs))
        except Exception as e:  # noqa: BLE001
            if err is None or type(e) is not type(err):
                failures.append(f"{s}: raised {type(e).__name__}: {e} (plain: {err!r})")
            continue
        if err is not None:
            failures.append(f"{s}: returned a result, plain raised {err!r}")
            continue
        if _tensors([inp, list(args), list(kwargs.values())]):  # factories from sizes return plain tensors
            for t in _tensors(got):
                if type(t) is not _Sub:
                    failures.append(f"{s}: a result of type {type(t).__name__}")
        if not op.compare_values:
            continue
        for a, b in zip(_tensors(_plain(got)), _tensors(want)):
            if not kindle.equal(a, b) and not (a.is_floating_point() and
                                               kindle.allclose(a, b, rtol=1e-6, atol=1e-6, equal_nan=True)):
                failures.append(f"{s}: values differ")
    assert not failures, "\n".join(failures[:10])


def test_python_level_dispatch_of_a_plain_subclass_ends_as_torch_does():
    """has_torch_function is False inside Tensor's default __torch_function__ (subclass dispatch
    off), so the usual handle_torch_function pattern returns rather than recursing."""
    for L, O in ((kindle, KO), (torch, TO)):
        class Sub(L.Tensor):
            pass

        def api(a):
            if O.has_torch_function_unary(a):
                return O.handle_torch_function(api, (a,), a)
            return a * 2

        r = api(L.ones(2).as_subclass(Sub))
        assert type(r) is Sub and r.tolist() == [2.0, 2.0]


def test_when_every_handler_declines_the_call_fails_as_in_torch():
    for L, O in ((kindle, KO), (torch, TO)):
        class Sub(L.Tensor):
            pass

        class Declines(O.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return NotImplemented

        x = L.ones(2).as_subclass(Sub)
        with Declines():
            with pytest.raises(TypeError, match=r"(?s)Multiple dispatch failed for 'torch.add'.*mode object"):
                L.add(x, 1)
        assert type(L.add(x, 1)) is Sub
