"""Reverse-mode automatic differentiation (torch.autograd). The engine and the graph are C++."""
from .. import _C
from .anomaly_mode import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from .function import Function, FunctionCtx, InplaceFunction, once_differentiable
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from . import graph  # noqa: F401
from . import profiler  # noqa: F401
from . import functional  # noqa: F401,E402  (vjp, jvp, jacobian, hessian, vhp, hvp)
from . import forward_ad  # noqa: F401,E402
from . import variable  # noqa: F401,E402
from .variable import Variable  # noqa: F401,E402

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "gradcheck", "gradgradcheck",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "Variable"]


def _as_list(x):
    if x is None:
        return None
    if isinstance(x, (_C.Tensor, graph.GradientEdge)):
        return [x]
    return list(x)


def _make_grads(outputs, grad_outputs, op):
    if grad_outputs is None:
        return [None] * len(outputs)
    grads = _as_list(grad_outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"{op}: got {len(outputs)} tensors and {len(grads)} gradients; expected one gradient per "
                           f"tensor")
    out = []
    for g, o in zip(grads, outputs):
        if g is not None and not isinstance(g, _C.Tensor):
            g = _C.full_like(o, g)
        out.append(g)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Computes the sum of gradients of `tensors` with respect to the graph leaves and accumulates
    them into the leaves' `.grad` (only into `inputs` when given)."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _as_list(tensors)
    grads = _make_grads(tensors, grad_tensors, "backward")
    if retain_graph is None:
        retain_graph = create_graph
    ins = _as_list(inputs) or []
    if inputs is not None and not ins:
        raise RuntimeError("backward: 'inputs' argument to backward() cannot be empty.")
    _C._run_backward(tensors, grads, bool(retain_graph), bool(create_graph), ins, True, True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Returns the gradients of `outputs` with respect to `inputs` (without touching `.grad`).
    With is_grads_batched, each grad_output carries a leading batch dimension and each gradient
    one too (torch vmaps the backward; Kindle runs it once per batch element over the retained
    graph)."""
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if allow_unused is None:
        allow_unused = materialize_grads
    grads = _make_grads(outs, grad_outputs, "grad")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        return _batched_grad(outs, ins, grads, retain_graph, create_graph, allow_unused, materialize_grads)
    r = _C._run_backward(outs, grads, bool(retain_graph), bool(create_graph), ins, bool(allow_unused), False)
    if materialize_grads:
        if any(isinstance(i, graph.GradientEdge) for i in ins):
            raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
        r = tuple(_C.zeros_like(i) if g is None else g for g, i in zip(r, ins))
    return tuple(r)


def _batched_grad(outs, ins, grads, retain_graph, create_graph, allow_unused, materialize_grads):
    sizes = {g.shape[0] for g in grads if isinstance(g, _C.Tensor) and g.dim() > 0}
    if any(g is None or g.dim() == 0 for g in grads) or len(sizes) != 1:
        raise RuntimeError("grad: with is_grads_batched=True every grad_output must be a tensor whose first "
                           f"dimension is the batch dimension, all of one size (got shapes "
                           f"{[None if g is None else tuple(g.shape) for g in grads]})")
    (batch,) = sizes
    for i, (g, o) in enumerate(zip(grads, outs)):
        if tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError("grad: with is_grads_batched=True the first dimension of each grad_output is the batch "
                               "dimension, and the rest must match the output's shape, but grad_output"
                               f"[{i}] has a shape of {tuple(g.shape)} and output[{i}] has a shape of {tuple(o.shape)}")
    per_input = [[] for _ in ins]
    for b in range(batch):
        last = b == batch - 1
        r = _C._run_backward(outs, [g[b] for g in grads], bool(retain_graph) or not last, bool(create_graph), ins,
                             bool(allow_unused), False)
        for j, g in enumerate(r):
            per_input[j].append(g)
    out = []
    for t, gs in zip(ins, per_input):
        if batch and all(g is None for g in gs):
            out.append(_C.zeros((batch,) + tuple(t.shape), dtype=t.dtype) if materialize_grads else None)
        elif not batch:
            out.append(_C.zeros((0,) + tuple(t.shape), dtype=t.dtype))
        else:
            out.append(_C.stack([_C.zeros_like(t) if g is None else g for g in gs]))
    return tuple(out)


Tensor = _C.Tensor


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


Tensor.backward = _tensor_backward
