"""Finite-difference checks of analytical gradients (torch.autograd.gradcheck / gradgradcheck)."""
import warnings

import numpy as np

from .. import _C
from .grad_mode import no_grad


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _realify(func, inputs):
    """The function on real views: each complex input becomes its view_as_real ([..., 2]) leaf and
    each complex output its view_as_real. view_as_real's gradient is exact under PyTorch's
    convention (the conjugate Wirtinger derivative), so checking this real function checks the
    complex gradients."""
    cidx = {i for i, t in enumerate(inputs) if isinstance(t, _C.Tensor) and t.is_complex()}
    real_inputs = tuple(_C.view_as_real(t.detach()).clone().requires_grad_(t.requires_grad) if i in cidx else t
                        for i, t in enumerate(inputs))

    def real_func(*xs):
        outs = func(*(_C.view_as_complex(x) if i in cidx else x for i, x in enumerate(xs)))
        return tuple(_C.view_as_real(o) if isinstance(o, _C.Tensor) and o.is_complex() else o for o in _as_tuple(outs))
    return real_func, real_inputs


def _differentiable_outputs(outputs):
    return [o for o in outputs if isinstance(o, _C.Tensor) and o.requires_grad]


def _numpy(t):
    # a copy: the output may share memory with the input that the next perturbation changes
    return t.detach().to(_C.float64).numpy().reshape(-1).copy()


def _numerical_jacobian(func, inputs, diff_idx, eps):
    """Central differences: one column per element of each differentiable input."""
    jacs = []
    for i in diff_idx:
        t = inputs[i]
        alias = t.detach()
        cols = []
        for k in range(t.numel()):
            pos = np.unravel_index(k, tuple(t.shape)) if t.dim() else ()
            orig = alias[pos].item()
            _set(alias, pos, orig + eps)
            plus = [_numpy(o) for o in _differentiable_like(func(*inputs))]
            _set(alias, pos, orig - eps)
            minus = [_numpy(o) for o in _differentiable_like(func(*inputs))]
            _set(alias, pos, orig)
            cols.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
        jacs.append(cols)  # jacs[input][element][output] -> vector over output elements
    return jacs


def _set(alias, pos, value):
    with no_grad():
        alias[pos] = value


def _differentiable_like(outputs):
    return [o for o in _as_tuple(outputs) if isinstance(o, _C.Tensor) and o.is_floating_point()]


def _analytical_jacobian(outputs, inputs, diff_idx):
    """One vector-Jacobian product per output element: rows of the Jacobian."""
    from . import grad as autograd_grad

    diff_inputs = [inputs[i] for i in diff_idx]
    jacs = [[np.zeros((inputs[i].numel(), o.numel())) for o in outputs] for i in diff_idx]
    for oi, o in enumerate(outputs):
        for j in range(o.numel()):
            g = _C.zeros(o.shape, dtype=o.dtype, device=o.device)  # (row-major: element j of view(-1) is element j)
            g.view(-1)[j] = 1
            grads = autograd_grad([o], diff_inputs, [g], retain_graph=True, allow_unused=True)
            for ii, gr in enumerate(grads):
                if gr is not None:
                    if tuple(gr.shape) != tuple(diff_inputs[ii].shape):
                        raise GradcheckError(f"gradcheck: the gradient of input {diff_idx[ii]} has shape "
                                             f"{list(gr.shape)}, expected {list(diff_inputs[ii].shape)}")
                    jacs[ii][oi][:, j] = _numpy(gr)
    return jacs


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Checks the gradients computed by backward against finite differences (use float64 or
    complex128 inputs)."""
    func, inputs = _realify(func, _as_tuple(inputs))
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, _C.Tensor) and t.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i in diff_idx:
        if inputs[i].dtype not in (_C.float64, _C.complex128):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating point "
                          "or complex. ")
    if not check_forward_ad and not check_backward_ad:
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    outputs = _differentiable_outputs(_as_tuple(func(*inputs)))
    checks = []
    if check_backward_ad:  # before the finite differences, which perturb the inputs in place
        checks.append(("Jacobian mismatch", _analytical_jacobian(outputs, inputs, diff_idx)))
    numerical = _numerical_jacobian(func, inputs, diff_idx, eps)
    if check_forward_ad:
        checks.append(("Jacobian computed with forward mode mismatch", _forward_jacobian(func, inputs, diff_idx, len(outputs))))
    for kind, analytical in checks:
        for ii, i in enumerate(diff_idx):
            for oi in range(len(outputs)):
                a = analytical[ii][oi]
                n = np.stack([numerical[ii][k][oi] for k in range(inputs[i].numel())]) if inputs[i].numel() else a
                n = n.reshape(a.shape)
                bad = ~(np.abs(a - n) <= atol + rtol * np.abs(n))
                bad &= ~(np.isnan(a) & np.isnan(n))
                if bad.any():
                    k, j = np.argwhere(bad)[0]
                    msg = (f"{kind} for output {oi} with respect to input {i},\n"
                           f"numerical:{n}\nanalytical:{a}\n"
                           f"first mismatch at input element {k}, output element {j}: numerical {n[k, j]!r}, "
                           f"analytical {a[k, j]!r} (atol={atol}, rtol={rtol})")
                    if raise_exception:
                        raise GradcheckError(msg)
                    return False
    return True


def _forward_jacobian(func, inputs, diff_idx, n_outputs):
    """One Jacobian-vector product per input element, through forward-mode AD (dual tensors)."""
    from . import forward_ad as fwAD

    jacs = [[None] * n_outputs for _ in diff_idx]
    for ii, i in enumerate(diff_idx):
        cols = []
        for k in range(inputs[i].numel()):
            with fwAD.dual_level():
                duals = list(inputs)
                for jj in diff_idx:
                    t = inputs[jj].detach()
                    tangent = _C.zeros_like(t)
                    if jj == i:
                        tangent.view(-1)[k] = 1
                    duals[jj] = fwAD.make_dual(t, tangent)
                outs = [o for o in _as_tuple(func(*duals)) if isinstance(o, _C.Tensor) and o.is_floating_point()]
                col = []
                for o in outs:
                    tan = fwAD.unpack_dual(o).tangent
                    col.append(np.zeros(o.numel()) if tan is None else _numpy(tan))
            cols.append(col)
        for oi in range(n_outputs):
            jacs[ii][oi] = (np.stack([c[oi] for c in cols]) if cols else np.zeros((0, 0)))
    return jacs


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Checks second derivatives: gradcheck of the function that returns the first gradients."""
    from . import grad as autograd_grad

    func, inputs = _realify(func, _as_tuple(inputs))
    outputs = _differentiable_outputs(_as_tuple(func(*inputs)))
    if grad_outputs is None:
        gen = _C.Generator()
        gen.manual_seed(0)
        grad_outputs = tuple(_C.randn(list(o.shape), generator=gen, dtype=o.dtype).requires_grad_() for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, _C.Tensor) and t.requires_grad]

    def first_grads(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _differentiable_outputs(_as_tuple(func(*ins)))
        grads = autograd_grad(outs, [ins[i] for i in diff_idx], list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_grads, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
