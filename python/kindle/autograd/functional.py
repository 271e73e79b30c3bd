"""torch.autograd.functional for Kindle: vjp, jvp, jacobian, hessian, vhp and hvp of a Python
function, built on reverse-mode autograd. jvp and hvp use the double-backward trick (the
backward pass is linear in its incoming gradient, so differentiating it with respect to that
gradient gives the forward-mode product), which is also how torch computes them here. The
checks and error messages follow torch's (strict mode included)."""
import kindle

from .. import _C
from .grad_mode import enable_grad, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(x, what, fn):
    """(was it a tuple, the tensors as a tuple); anything but tensors is a TypeError."""
    is_tuple = isinstance(x, tuple)
    items = x if is_tuple else (x,)
    for i, t in enumerate(items):
        if not isinstance(t, _C.Tensor):
            if is_tuple:
                raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but the "
                                f"value at index {i} has type {type(t)}.")
            raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but the given "
                            f"{what} has type {type(t)}.")
    return is_tuple, items


def _unpack(res, flags):
    """The result in the caller's shape: flags is one `was a tuple` or (outer, inner) for nested."""
    if isinstance(flags, tuple):
        if not flags[1]:
            res = tuple(r[0] for r in res)
        if not flags[0]:
            res = res[0]
        return res
    return res if flags else res[0]


def _prepare(tensors, create_graph, need_graph):
    """Inputs the function is differentiated at: aliases that keep an outer graph when
    create_graph (so the result can be differentiated again), detached leaves otherwise."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
                 for t in tensors)


def _finish(tensors, create_graph):
    if isinstance(tensors[0], tuple):
        return tuple(_finish(t, create_graph) for t in tensors)
    return tensors if create_graph else tuple(t.detach() for t in tensors)


def _check_v(v, other, other_is_tuple):
    if len(v) != len(other):
        if other_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other)):
        if tuple(a.shape) != tuple(b.shape):
            where = f"Entry {i} in " if other_is_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {b.shape} but got {a.shape}.")


_NOT_DIFFERENTIABLE = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs must be computed "
               "in a differentiable manner from the input when running in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the user-provided "
                   "function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with respect to "
                "input {i} is independent of the input. This is not allowed in strict mode. You should ensure that "
                "your function is twice differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is independent of the input. "
               "This is not allowed in strict mode. You should ensure that your function is thrice differentiable "
               "and that the hessian depends on the inputs.",
}


def _check_requires_grad(tensors, kind, strict):
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_NOT_DIFFERENTIABLE[kind].format(i=i))


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad over the outputs that require grad (None for every input when none does)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return kindle.autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True,
                                create_graph=create_graph, retain_graph=retain_graph)


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when using "
                  "the double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. "
                         "This is not allowed in strict mode as it prevents from using the double backward trick to "
                         "replace forward mode AD.",
}


def _zeros_for_missing(grads, refs, strict, create_graph, stage):
    out = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = _C.zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode when create_graph=True.")
        out.append(g)
    return tuple(out)


_V_NONE_OUTPUT = ("The vector v can only be None if the user-provided function returns a single Tensor with a "
                  "single element.")
_V_NONE_INPUT = ("The vector v can only be None if the input to the user-provided function is a single Tensor with "
                 "a single element.")


def _vector(v, other, other_is_tuple, create_graph, fn, when_none):
    """v as a tuple of constants shaped like `other`; None only where other is one element."""
    if v is None:
        if len(other) != 1 or other[0].numel() != 1:
            raise RuntimeError(when_none)
        return None
    _, v = _as_tuple(v, "v", fn)
    v = _prepare(v, create_graph, False)
    _check_v(v, other, other_is_tuple)
    return v


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at inputs."""
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, True)
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        v = _vector(v, outputs, outputs_tuple, create_graph, "vjp", _V_NONE_OUTPUT)
    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        res = _zeros_for_missing(_grad(outputs, inputs, v, create_graph), inputs, strict, create_graph, "back")
    return _unpack(_finish(outputs, create_graph), outputs_tuple), _unpack(_finish(res, create_graph), inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-backward trick."""
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, True)
        v = _vector(v, inputs, inputs_tuple, create_graph, "jvp", _V_NONE_INPUT)
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # any finite value works: the backward is linear in it and it drops out of the second pass
        dummies = tuple(_C.zeros_like(o).requires_grad_() for o in outputs)
        grad_inputs = _grad(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
        with set_grad_enabled(create_graph):
            res = _zeros_for_missing(_grad(grad_inputs, dummies, v, create_graph), outputs, strict, create_graph,
                                     "back_trick")
    return _unpack(_finish(outputs, create_graph), outputs_tuple), _unpack(_finish(res, create_graph), outputs_tuple)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: for output i and input j, a tensor of shape
    out_i.shape + in_j.shape. Rows are computed by reverse mode one output element at a time;
    vectorize and strategy="forward-mode" give the same values (they only change how torch
    batches the work)."""
    if strategy not in ("forward-mode", "reverse-mode"):  # (torch asserts it)
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function has '
                         'more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, prefer to '
                         'use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` and "
                                      "`strategy=\"forward-mode\"` are not supported together (yet). Please either "
                                      "set `create_graph=False` or `strategy=\"reverse-mode\"`.")
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                                      "implemented for `vectorize=True`.")
    if vectorize and strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported "
                           "together. Please either set `strict=False` or `vectorize=False`.")
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, True)
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        result = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            flat = out.reshape(-1)
            for k in range(out.numel()):
                grads = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
                for j, (g, inp) in enumerate(zip(grads, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input "
                                               f"{j}. This is not allowed in strict mode.")
                        g = _C.zeros_like(inp)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                           "This is not allowed in strict mode when create_graph=True.")
                    rows[j].append(g)
            result.append(tuple(
                (_C.stack(r, 0) if r else _C.zeros((0,) + tuple(inp.shape), dtype=inp.dtype))
                .reshape(tuple(out.shape) + tuple(inp.shape)) for r, inp in zip(rows, inputs)))
        result = tuple(result)
    return _unpack(_finish(result, create_graph), (outputs_tuple, inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: for inputs i and j, a tensor of shape in_i.shape + in_j.shape."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_func(*inp):
        out = func(*inp)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if out_tuple or not isinstance(out, _C.Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(scalar_func, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _unpack(res, (inputs_tuple, inputs_tuple))


def _scalar_first_grad(func, inputs, v, create_graph, strict, fn):
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn)
    inputs = _prepare(inputs, create_graph, True)
    v = _vector(v, inputs, inputs_tuple, create_graph, fn, _V_NONE_INPUT)
    outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn)
    _check_requires_grad(outputs, "outputs", strict)
    if outputs_tuple or not isinstance(outputs[0], _C.Tensor):
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain a single element")
    jac = _grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return inputs_tuple, inputs, v, outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar function."""
    with enable_grad():
        inputs_tuple, inputs, v, outputs_tuple, outputs, jac = _scalar_first_grad(func, inputs, v, create_graph,
                                                                                  strict, "vhp")
    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        res = _zeros_for_missing(_grad(jac, inputs, v, create_graph), inputs, strict, create_graph, "double_back")
    return _unpack(_finish(outputs, create_graph), outputs_tuple), _unpack(_finish(res, create_graph), inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar function, by the double-backward trick."""
    with enable_grad():
        inputs_tuple, inputs, v, outputs_tuple, outputs, jac = _scalar_first_grad(func, inputs, v, create_graph,
                                                                                  strict, "hvp")
        dummies = tuple(_C.zeros_like(t).requires_grad_() for t in inputs)
        double_back = _grad(jac, inputs, dummies, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        res = _zeros_for_missing(_grad(double_back, dummies, v, create_graph), inputs, strict, create_graph,
                                 "double_back_trick")
    return _unpack(_finish(outputs, create_graph), outputs_tuple), _unpack(_finish(res, create_graph), inputs_tuple)
