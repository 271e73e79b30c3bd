"""torch.nn.grad: the gradients of a convolution with respect to its input and its weight, as
functions (for custom layers that write their own backward). Each runs the convolution's own
backward, so the results are exactly what autograd would give."""
from .. import _C
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _grad(conv, input, weight, grad_output, wrt, stride, padding, dilation, groups):  # noqa: A002
    with _Enabled():
        x = input.detach().requires_grad_(wrt == "input")
        w = weight.detach().requires_grad_(wrt == "weight")
        out = conv(x, w, None, stride, padding, dilation, groups)
        if out.shape != grad_output.shape:
            raise RuntimeError(f"grad_output has shape {list(grad_output.shape)}, but the convolution gives "
                               f"{list(out.shape)}")
        (g,) = _autograd_grad(out, x if wrt == "input" else w, grad_output)
    return g


class _Enabled:
    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)


def _autograd_grad(out, wrt, grad_output):
    from ..autograd import grad
    return grad(out, wrt, grad_output)


def _make(conv, n):
    def input_grad(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
        x = _C.zeros(tuple(input_size), dtype=weight.dtype)
        return _grad(conv, x, weight, grad_output, "input", stride, padding, dilation, groups)

    def weight_grad(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
        w = _C.zeros(tuple(weight_size), dtype=input.dtype)
        return _grad(conv, input, w, grad_output, "weight", stride, padding, dilation, groups)
    input_grad.__name__ = f"conv{n}d_input"
    weight_grad.__name__ = f"conv{n}d_weight"
    return input_grad, weight_grad


conv1d_input, conv1d_weight = _make(F.conv1d, 1)
conv2d_input, conv2d_weight = _make(F.conv2d, 2)
conv3d_input, conv3d_weight = _make(F.conv3d, 3)
