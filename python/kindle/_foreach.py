"""torch._foreach_*: ops over lists of tensors (what optimizers and EMA helpers call). Each applies
the per-tensor op to every tensor of the list: the out-of-place forms return a tuple of results,
the in-place forms (trailing underscore) modify the tensors and return the list they were given.
The second operand may be a list of tensors, one scalar, a list of scalars (one per tensor) or,
for the arithmetic ops, one tensor used with every element, as torch's."""
from . import _C

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
          "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin",
          "sinh", "sqrt", "tan", "tanh", "trunc")
_BINARY = ("add", "sub", "mul", "div", "clamp_max", "clamp_min", "maximum", "minimum", "pow")


def _check_list(tensors):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return tensors


def _operands(tensors, other):
    """One operand per tensor: from a list of tensors or scalars, or one value repeated."""
    if isinstance(other, (list, tuple)):
        if len(other) != len(tensors):
            if other and not isinstance(other[0], _C.Tensor):
                raise RuntimeError("Tensor list must have same number of elements as scalar list.")
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(tensors)} and "
                               f"{len(other)}")
        return list(other)
    return [other] * len(tensors)


def _binary(name, t, o, inplace, alpha):
    if name in ("add", "sub"):
        fn = getattr(t, name + "_" if inplace else name)
        return fn(o) if alpha == 1 else fn(o, alpha=alpha)
    if name in ("maximum", "minimum") and not isinstance(o, _C.Tensor):
        name = "clamp_min" if name == "maximum" else "clamp_max"
    if name in ("maximum", "minimum"):
        r = getattr(_C, name)(t, o)
        return t.copy_(r) if inplace else r
    return getattr(t, name + "_" if inplace else name)(o)


def _make_unary(name, inplace):
    def op(self):
        tensors = _check_list(self)
        if inplace:
            for t in tensors:
                getattr(t, name + "_")()
            return self
        return tuple(getattr(t, name)() for t in tensors)
    op.__name__ = f"_foreach_{name}{'_' if inplace else ''}"
    return op


def _make_binary(name, inplace):
    def op(self, other, alpha=1):
        if name == "pow" and not isinstance(self, (list, tuple)):  # _foreach_pow(scalar, exponents)
            return tuple(_C.pow(self, e) for e in _check_list(other))
        tensors = _check_list(self)
        out = tuple(_binary(name, t, o, inplace, alpha) for t, o in zip(tensors, _operands(tensors, other)))
        return self if inplace else out
    op.__name__ = f"_foreach_{name}{'_' if inplace else ''}"
    return op


def _make_addc(name, inplace):
    def op(self, tensor1, tensor2, value=1):
        tensors = _check_list(self)
        ones, twos = _operands(tensors, tensor1), _operands(tensors, tensor2)
        if isinstance(value, _C.Tensor) and value.dim() == 1:
            value = value.tolist()
        values = _operands(tensors, value)
        fn = name + "_" if inplace else name
        out = tuple(getattr(t, fn)(a, b, value=v) for t, a, b, v in zip(tensors, ones, twos, values))
        return self if inplace else out
    op.__name__ = f"_foreach_{name}{'_' if inplace else ''}"
    return op


def _make_lerp(inplace):
    def op(self, tensors1, weight):
        tensors = _check_list(self)
        ends, weights = _operands(tensors, tensors1), _operands(tensors, weight)
        out = tuple((t.lerp_ if inplace else t.lerp)(e, w) for t, e, w in zip(tensors, ends, weights))
        return self if inplace else out
    op.__name__ = "_foreach_lerp_" if inplace else "_foreach_lerp"
    return op


def _foreach_norm(self, ord=2, dtype=None):  # noqa: A002  (torch's name)
    from .linalg import vector_norm
    return tuple(vector_norm(t, ord, dtype=dtype) for t in _check_list(self))


def _foreach_powsum(self, ord=2, dtype=None):  # noqa: A002
    return tuple(t.abs().pow(ord).sum(dtype=dtype) for t in _check_list(self))


def _foreach_max(self):
    return tuple(t.max() for t in _check_list(self))


def _foreach_mm(self, other):
    tensors = _check_list(self)
    return tuple(a.mm(b) for a, b in zip(tensors, _operands(tensors, other)))


def _foreach_zero_(self):
    for t in _check_list(self):
        t.zero_()
    return self


def _foreach_copy_(self, src, non_blocking=False):
    tensors = _check_list(self)
    for t, s in zip(tensors, _operands(tensors, src)):
        t.copy_(s, non_blocking=non_blocking)
    return self


def _foreach_clone(self):
    return tuple(t.clone() for t in _check_list(self))


def _all():
    out = {f.__name__: f for f in (_foreach_norm, _foreach_powsum, _foreach_max, _foreach_mm, _foreach_zero_,
                                   _foreach_copy_, _foreach_clone)}
    for inplace in (False, True):
        for name in _UNARY:
            f = _make_unary(name, inplace)
            out[f.__name__] = f
        for name in _BINARY:
            f = _make_binary(name, inplace)
            out[f.__name__] = f
        for name in ("addcmul", "addcdiv"):
            f = _make_addc(name, inplace)
            out[f.__name__] = f
        f = _make_lerp(inplace)
        out[f.__name__] = f
    return out


FUNCTIONS = _all()
