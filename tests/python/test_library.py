"""kindle.library / kindle.ops against torch.library / torch.ops: a custom op with a backward,
a fake implementation, per-device kernels and the Library/define/impl API behave as torch's."""
import numpy as np
import pytest

import kindle

torch = pytest.importorskip("torch")


def make(lib, ns):
    @lib.library.custom_op(f"{ns}::scaled_sin", mutates_args=())
    def scaled_sin(x: lib.Tensor, scale: float = 2.0) -> lib.Tensor:
        return (x.sin() * scale).clone()

    def setup_context(ctx, inputs, output):
        x, scale = inputs
        ctx.save_for_backward(x)
        ctx.scale = scale

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos() * ctx.scale, None

    scaled_sin.register_autograd(backward, setup_context=setup_context)

    @scaled_sin.register_fake
    def _(x, scale=2.0):
        return lib.empty_like(x)
    return scaled_sin


def test_custom_op_forward_backward_matches_torch():
    a = np.linspace(-2, 2, 7)
    out = {}
    for lib, ns in ((kindle, "klib_test"), (torch, "tlib_test")):
        op = make(lib, ns)
        x = lib.tensor(a, requires_grad=True)
        y = op(x, scale=3.0)
        y.sum().backward()
        via_ops = getattr(getattr(lib.ops, ns), "scaled_sin")(x.detach(), 3.0)
        out[lib.__name__] = (y.detach().numpy(), x.grad.numpy(), via_ops.numpy())
    for k, t in zip(out["kindle"], out["torch"]):
        np.testing.assert_allclose(k, t, rtol=1e-12)


def test_fake_implementation_runs_on_meta_tensors():
    op = make(kindle, "klib_meta")
    y = op(kindle.empty(3, 4, device="meta"))
    assert y.device.type == "meta" and tuple(y.shape) == (3, 4)


def test_register_kernel_per_device_and_errors():
    @kindle.library.custom_op("klib_dev::double", mutates_args=(), device_types="cpu")
    def double(x: kindle.Tensor) -> kindle.Tensor:
        return x * 2

    assert double(kindle.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="fake"):
        double(kindle.empty(2, device="meta"))
    kindle.library.register_fake("klib_dev::double", lambda x: kindle.empty_like(x))
    assert double(kindle.empty(2, device="meta")).shape == (2,)
    with pytest.raises(ValueError):
        kindle.library.custom_op("no_namespace", mutates_args=())(lambda x: x)
    with pytest.raises(ValueError):
        kindle.library.register_fake("klib_dev::missing", lambda x: x)


def test_backward_must_return_one_gradient_per_input():
    @kindle.library.custom_op("klib_bad::f", mutates_args=())
    def f(x: kindle.Tensor, k: int) -> kindle.Tensor:
        return x * k

    f.register_autograd(lambda ctx, g: g)  # one gradient for two inputs
    x = kindle.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="2"):
        f(x, 3).sum().backward()


def test_library_define_impl():
    for lib, ns in ((kindle, "klib_def"), (torch, "tlib_def")):
        library = lib.library.Library(ns, "DEF")
        library.define("twice(Tensor x) -> Tensor")
        library.impl("twice", lambda x: x * 2, "CPU")
        assert getattr(getattr(lib.ops, ns), "twice")(lib.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]
        assert getattr(getattr(lib.ops, ns), "twice").default(lib.tensor([3.0])).tolist() == [6.0]
        with pytest.raises(RuntimeError):
            library.define("twice(Tensor x) -> Tensor")


def test_aten_namespace():
    x = kindle.tensor([1.0, -2.0])
    assert kindle.ops.aten.abs(x).tolist() == [1.0, 2.0]
    assert kindle.ops.aten.add.Tensor(x, x).tolist() == [2.0, -4.0]
    assert kindle.ops.aten.relu.default(x).tolist() == [1.0, 0.0]
    with pytest.raises(AttributeError):
        kindle.ops.aten.no_such_op_anywhere
