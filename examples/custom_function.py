"""Extending Kindle from Python: a custom autograd.Function and a custom Module.

1. `SiLUFunction` computes x * sigmoid(x) but saves only its input for backward and
   recomputes the sigmoid there: less memory between forward and backward, the trade-off
   behind activation checkpointing. Its backward is written with Kindle ops, so it is itself
   differentiable (second derivatives work). `gradcheck` compares its gradient with finite
   differences, `gradgradcheck` its second derivative, and both are compared with the
   built-in F.silu.
2. `StraightThroughSign` is a Function whose backward is deliberately *not* the derivative
   of its forward (the straight-through estimator used to train binarised networks).
3. `RandomFourierFeatures` is a custom Module: a fixed random projection registered as a
   buffer (saved in state_dict, never trained), a learnable Parameter, and the Function above.

A small model built from these fits a 1-D curve, with a progress bar, and is checkpointed.

    python examples/custom_function.py
    python examples/custom_function.py --steps 2000 --lr 3e-3

Write `torch` for `kindle` in the imports and the same script runs on PyTorch.
"""
import argparse
import os
import sys

import kindle
import kindle.nn.functional as F
from kindle import nn
from kindle.autograd import Function, gradcheck, gradgradcheck

try:
    from tqdm import tqdm
except ImportError:  # the progress bar is optional: pip install tqdm
    tqdm = None


class SiLUFunction(Function):
    """silu(x) = x * sigmoid(x), saving only x for backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * kindle.sigmoid(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        s = kindle.sigmoid(x)  # recomputed, not stored: d/dx x*s(x) = s * (1 + x * (1 - s))
        return grad_output * s * (1 + x * (1 - s))


class StraightThroughSign(Function):
    """Forward: sign(x). Backward: pass the gradient through where |x| <= 1, zero elsewhere."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return kindle.sign(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x.abs() <= 1).to(grad_output.dtype)


def silu(x):
    return SiLUFunction.apply(x)


class RandomFourierFeatures(nn.Module):
    """x -> silu(scale * [cos(x W), sin(x W)]): W fixed (a buffer), scale learnt (a Parameter)."""

    def __init__(self, in_features, num_features, bandwidth=3.0):
        super().__init__()
        self.register_buffer("projection", bandwidth * kindle.randn(in_features, num_features))
        self.scale = nn.Parameter(kindle.ones(2 * num_features))

    def forward(self, x):
        z = x @ self.projection
        return silu(self.scale * kindle.cat([z.cos(), z.sin()], dim=-1))

    def extra_repr(self):
        return f"in_features={self.projection.shape[0]}, num_features={self.projection.shape[1]}"


def check_functions():
    """Gradient checks in float64 (finite differences need the precision)."""
    x = kindle.randn(6, 5, dtype=kindle.float64, requires_grad=True)
    assert gradcheck(silu, (x,), eps=1e-6, atol=1e-6), "SiLUFunction: gradcheck failed"
    assert gradgradcheck(silu, (x,)), "SiLUFunction: gradgradcheck failed"
    print("gradcheck and gradgradcheck of SiLUFunction: passed")

    # Same values and gradients as the built-in op.
    y_custom = silu(x)
    (g_custom,) = kindle.autograd.grad(y_custom.sum(), x)
    y_builtin = F.silu(x)
    (g_builtin,) = kindle.autograd.grad(y_builtin.sum(), x)
    assert kindle.allclose(y_custom, y_builtin) and kindle.allclose(g_custom, g_builtin), \
        "SiLUFunction disagrees with F.silu"
    print(f"SiLUFunction matches F.silu (max gradient difference "
          f"{(g_custom - g_builtin).abs().max().item():.1e}); its graph node: "
          f"{y_custom.grad_fn.name()}")

    t = kindle.tensor([-2.0, -0.5, 0.0, 0.3, 1.5], requires_grad=True)
    out = StraightThroughSign.apply(t)
    out.sum().backward()
    print(f"StraightThroughSign: sign {out.detach().tolist()}, "
          f"straight-through gradient {t.grad.tolist()}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="A custom autograd.Function and a custom Module, "
                                            "checked and then trained on a 1-D regression.")
    p.add_argument("--steps", type=int, default=500, help="training steps (500)")
    p.add_argument("--lr", type=float, default=1e-2, help="Adam learning rate (1e-2)")
    p.add_argument("--features", type=int, default=64, help="random Fourier features (64)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="custom-function-out",
                   help="folder for the checkpoint (custom-function-out)")
    args = p.parse_args(argv)
    if args.steps < 1 or args.features < 1:
        p.error("--steps and --features must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    kindle.manual_seed(args.seed)
    check_functions()

    # Fit y = sin(3x) * exp(-x^2 / 2) on [-3, 3] with a model built from the pieces above.
    x = kindle.linspace(-3, 3, 256).unsqueeze(1)
    y = kindle.sin(3 * x) * kindle.exp(-x * x / 2)
    model = nn.Sequential(RandomFourierFeatures(1, args.features), nn.Linear(2 * args.features, 1))
    print(model)
    optimizer = kindle.optim.Adam(model.parameters(), lr=args.lr)
    steps = range(1, args.steps + 1)
    bar = tqdm(steps, desc="fit", dynamic_ncols=True) if tqdm is not None else steps
    first = None
    for step in bar:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        first = loss.item() if first is None else first
        if tqdm is not None and step % 10 == 0:
            bar.set_postfix(mse=f"{loss.item():.2e}")
    with kindle.no_grad():
        final = F.mse_loss(model(x), y).item()
    print(f"mean squared error {first:.3e} -> {final:.3e} after {args.steps} steps "
          f"(target variance {y.var().item():.3e})")

    # The buffer travels with the parameters in the state dict.
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "fourier_model.pt")
    kindle.save(model.state_dict(), path)
    restored = nn.Sequential(RandomFourierFeatures(1, args.features),
                             nn.Linear(2 * args.features, 1))
    restored.load_state_dict(kindle.load(path))
    with kindle.no_grad():
        same = kindle.equal(model(x), restored(x))
    print(f"saved {path} (keys {sorted(model.state_dict())}); reloaded model's outputs "
          f"{'identical' if same else 'DIFFERENT'}")
    if not same:
        sys.exit("custom_function: the reloaded model differs")
    if not final < first:
        sys.exit("custom_function: training did not reduce the loss")


if __name__ == "__main__":
    main()
