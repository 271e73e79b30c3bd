"""kindle.library.infer_schema and opcheck (torch.library's), against torch 2.13 where installed."""
import typing
from typing import List, Optional, Sequence

import numpy as np
import pytest

import kindle

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def prototypes(lib):
    """The same prototypes written against `lib` (kindle or torch): (function, mutates_args, op_name)."""
    T = lib.Tensor

    def plain(x: T, y: float, n: int = 3, flag: bool = False, s: str = "a", d: Optional[lib.dtype] = None) -> T: ...
    def out_arg(x: T, out: T, *, alpha: float = 1.0) -> None: ...
    def lists(xs: Sequence[T], w: Optional[T] = None, sizes: List[int] = None) -> typing.Tuple[T, T]: ...
    def devices(x: T, dev: lib.device, sc: lib.types.Number = 2) -> List[T]: ...
    def optional_lists(x: T, ys: Sequence[Optional[T]], fs: Optional[Sequence[float]] = None) -> int: ...
    def defaults(x: T, d: lib.dtype = lib.float32, dv: lib.device = lib.device("cpu"), fl: float = 0.5,
                 neg: int = -2) -> typing.Tuple[T, int]: ...
    def flags(x: T, b: Sequence[bool], i: Optional[int]) -> float: ...
    return [(plain, (), None), (out_arg, ("out",), "myop"), (lists, "unknown", None), (devices, (), None),
            (optional_lists, (), None), (defaults, (), "d"), (flags, (), None), (out_arg, ["x", "out"], None)]


def test_infer_schema_reads_the_type_hints():
    schemas = [kindle.library.infer_schema(f, mutates_args=m, op_name=n) for f, m, n in prototypes(kindle)]
    assert schemas[0] == '(Tensor x, float y, SymInt n=3, bool flag=False, str s="a", ScalarType? d=None) -> Tensor'
    assert schemas[1] == "myop(Tensor x, Tensor(a1!) out, *, float alpha=1.0) -> ()"
    assert schemas[2] == "(Tensor(a0!)[] xs, Tensor(a1!)? w=None, SymInt[] sizes=None) -> (Tensor, Tensor)"
    if torch is not None:
        want = [torch.library.infer_schema(f, mutates_args=m, op_name=n) for f, m, n in prototypes(torch)]
        assert schemas == want


def test_infer_schema_evaluates_string_annotations():
    def f(x: "Tensor", y: "Optional[Tensor]") -> "Tensor": ...  # noqa: F821
    assert kindle.library.infer_schema(f, mutates_args=("x", "y")) == "(Tensor(a0!) x, Tensor(a1!)? y) -> Tensor"


@pytest.mark.parametrize("case, message", [
    ("untyped", "Parameter x must have a type annotation"),
    ("mutated int", "Parameter n is in mutable_args but only Tensors"),
    ("unknown name", "in mutates_args were not found"),
    ("varargs", "We do not support positional-only args, varargs, or varkwargs"),
    ("dict", "Parameter x has unsupported type"),
    ("no return", "No return type annotation was provided"),
    ("tuple default", "has an unsupported default value type"),
])
def test_infer_schema_refuses_what_torch_refuses(case, message):
    T = kindle.Tensor

    def untyped(x): ...
    def with_int(x: T, n: int) -> T: ...
    def varargs(x: T, *args) -> T: ...
    def dict_arg(x: dict) -> T: ...
    def no_return(x: T): ...
    def tuple_default(x: T, s: List[int] = (1, 2)) -> T: ...
    fn, mutates = {"untyped": (untyped, ()), "mutated int": (with_int, ("n",)), "unknown name": (with_int, ("zz",)),
                   "varargs": (varargs, ()), "dict": (dict_arg, ()), "no return": (no_return, ()),
                   "tuple default": (tuple_default, ())}[case]
    with pytest.raises(ValueError, match=message):
        kindle.library.infer_schema(fn, mutates_args=mutates)
    with pytest.raises(ValueError, match="mutates_args must either be a sequence"):
        kindle.library.infer_schema(with_int, mutates_args="x")


def define_ops(lib, ns):
    """A correct operator and three that break their registrations' promises, in `lib`."""
    L = lib.library

    @L.custom_op(f"{ns}::scale", mutates_args=())
    def scale(x: lib.Tensor, k: float) -> lib.Tensor:
        return x * k

    scale.register_fake(lambda x, k: lib.empty_like(x))
    scale.register_autograd(lambda ctx, g: (g * ctx.k, None),
                            setup_context=lambda ctx, inputs, output: setattr(ctx, "k", inputs[1]))

    @L.custom_op(f"{ns}::sneaky", mutates_args=())
    def sneaky(x: lib.Tensor) -> lib.Tensor:
        x.mul_(2)  # writes to an argument it does not declare mutable
        return x * 3

    sneaky.register_fake(lambda x: lib.empty_like(x))

    @L.custom_op(f"{ns}::no_fake", mutates_args=())
    def no_fake(x: lib.Tensor) -> lib.Tensor:
        return x + 1

    @L.custom_op(f"{ns}::wrong_fake", mutates_args=())
    def wrong_fake(x: lib.Tensor) -> lib.Tensor:
        return x.sum(0)

    wrong_fake.register_fake(lambda x: lib.empty_like(x))
    return {"scale": scale, "sneaky": sneaky, "no_fake": no_fake, "wrong_fake": wrong_fake}


def failing(results):
    return sorted(k for k, v in results.items() if v != "SUCCESS")


@pytest.fixture(scope="module")
def kindle_ops():
    return define_ops(kindle, "opcheck_k")


def test_opcheck_passes_a_correct_operator(kindle_ops):
    x = kindle.randn(3, 4, requires_grad=True)
    assert kindle.library.opcheck(kindle_ops["scale"], (x, 2.0)) == {name: "SUCCESS" for name in
                                                                      kindle._library_checks.DEFAULT_TEST_UTILS}
    assert x.grad is None  # the checks run on copies of the inputs


@pytest.mark.parametrize("name, failed", [("sneaky", ["test_schema"]),
                                          ("no_fake", ["test_aot_dispatch_dynamic", "test_faketensor"]),
                                          ("wrong_fake", ["test_faketensor"])])
def test_opcheck_reports_the_broken_promise(kindle_ops, name, failed):
    x = kindle.randn(3, 4)
    results = kindle.library.opcheck(kindle_ops[name], (x,), raise_exception=False)
    assert failing(results) == failed
    with pytest.raises(kindle.library.OpCheckError, match="|".join(failed)):
        kindle.library.opcheck(kindle_ops[name], (x,))


def test_opcheck_requires_an_autograd_formula_for_inputs_that_require_grad(kindle_ops):
    x = kindle.randn(3, requires_grad=True)
    results = kindle.library.opcheck(kindle_ops["no_fake"], (x,), test_utils="test_autograd_registration",
                                     raise_exception=False)
    assert failing(results) == ["test_autograd_registration"]


def test_opcheck_argument_errors(kindle_ops):
    x = kindle.randn(2)
    with pytest.raises(ValueError, match="expected test_utils to be subset"):
        kindle.library.opcheck(kindle_ops["scale"], (x, 1.0), test_utils=("test_nothing",))
    with pytest.raises(ValueError, match="you must specify both"):
        kindle.library.opcheck(kindle_ops["scale"], (x, 1.0), rtol=1e-3)
    with pytest.raises(ValueError, match="must be a custom operator"):
        kindle.library.opcheck(kindle.add, (x, x))


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_opcheck_finds_what_torchs_finds(kindle_ops):
    torch_ops = define_ops(torch, "opcheck_t")
    data = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    for name in ("sneaky", "no_fake", "wrong_fake"):
        got = kindle.library.opcheck(kindle_ops[name], (kindle.tensor(data),), raise_exception=False)
        want = torch.library.opcheck(torch_ops[name], (torch.tensor(data),), raise_exception=False)
        assert failing(got) == failing(want), name
