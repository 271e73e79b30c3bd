"""vmap's batched tensors and levels.

A vmap level is one call of a vmapped function. A `BatchedTensor` is that level's view of a
tensor: it is a Tensor of one example's shape and dtype (a view of the first example, so size,
dim, dtype and device need no work) that holds the physical tensor `_phys`, whose dim 0 is the
level's batch. Every op on it reaches `BatchedTensor.__torch_function__` (kindle.overrides), which
runs the op's batching rule (kindle/func/_batching.py) on the physical tensors: one call for the
whole batch. A nested vmap wraps the outer level's BatchedTensor again; a rule handles the
innermost level among its arguments, and the ops it calls on physical tensors handle the outer
ones. The autograd engine and forward mode run on the physical tensors; kindle.func's grad, vjp
and jvp inside vmap differentiate inputs expanded to every active level (see `to_levels`).
"""
import itertools

from .. import _C
from ..overrides import DisableTorchFunctionSubclass

Tensor = _C.Tensor


class Level:
    __slots__ = ("id", "size", "randomness")

    def __init__(self, size, randomness):
        self.id = next(_ids)
        self.size = size
        self.randomness = randomness


_ids = itertools.count()
levels = []  # the active vmap levels, outermost first


def logical(t):
    """t as a plain Tensor object over the same tensor: for a BatchedTensor, a tensor of one
    example's shape and dtype (for metadata only)."""
    return t if type(t) is Tensor else t.as_subclass(Tensor)


class BatchedTensor(Tensor):
    """One vmap level's view of a batch of tensors (see the module docstring)."""

    _scoped_torch_function = True  # instances live inside vmap, which opens the bindings' scope

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return _batching.dispatch(func, args, kwargs or {})

    # Members that do not reach __torch_function__ (answered by the bindings from the example
    # view) and would otherwise see one example only.
    @property
    def requires_grad(self):
        return self._phys.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._phys.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        self._phys.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._phys.grad_fn

    @property
    def is_leaf(self):
        return self._phys.is_leaf

    @property
    def T(self):
        return self.permute(*range(self.dim() - 1, -1, -1))

    @property
    def mT(self):
        return self.transpose(-2, -1)

    @property
    def H(self):
        return self.T.conj()

    @property
    def mH(self):
        return self.mT.conj()

    @property
    def data(self):
        return wrap(self._phys.detach(), self._lvl)

    def _data_dependent(self, what):
        raise RuntimeError(f"vmap: It looks like you're calling {what} on a Tensor. We don't support vmap over "
                           f"calling {what} on a Tensor, please try to rewrite what you're doing with other "
                           "operations. If error is occurring somewhere inside PyTorch internals, please file a bug "
                           "report.")

    def item(self):
        self._data_dependent(".item()")

    def tolist(self):
        self._data_dependent(".tolist()")

    def numpy(self, *args, **kwargs):
        self._data_dependent(".numpy()")

    def _control_flow(self, *args):
        raise RuntimeError("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. "
                           "We don't support that yet, please shout over at "
                           "https://github.com/pytorch/functorch/issues/257 .")

    __bool__ = __float__ = __int__ = __index__ = __complex__ = _control_flow

    def backward(self, *args, **kwargs):
        raise RuntimeError("backward() called inside a functorch transform. This is not supported, please use "
                           "functorch.grad or functorch.vjp instead or call backward() outside of functorch "
                           "transforms.")

    def __iter__(self):
        return iter(self.unbind(0))

    def __repr__(self):
        return f"BatchedTensor(lvl={self._lvl.id}, bdim=0, value=\n{self._phys!r}\n)"

    def __reduce_ex__(self, proto):
        self._data_dependent("pickle")

    def __del__(self):
        # a wrapper kept past its vmap (an escaped batched value) keeps the bindings looking for
        # overrides, so that using it raises instead of reading its first example
        if _C is not None and getattr(self, "_counted", False):
            _C._torch_function_scoped_hint(-1)


def wrap(phys, lvl):
    """A BatchedTensor of level lvl over phys (its dim 0 is the batch)."""
    base = logical(phys)
    if base.dim() == 0:
        raise RuntimeError("vmap: a batched result must have the batch dim")
    v = base.detach()
    v = v.select(0, 0) if v.shape[0] else _C.empty(tuple(v.shape[1:]), dtype=v.dtype)
    b = v.as_subclass(BatchedTensor)
    b._phys = phys
    b._lvl = lvl
    _C._torch_function_scoped_hint(1)
    b._counted = True
    return b


def unwrap(x, lvl):
    """(x's tensor with lvl's batch at dim 0, True) if x is batched at lvl, else (x, False)."""
    if type(x) is BatchedTensor and x._lvl is lvl:
        return x._phys, True
    return x, False


def to_levels(t, lvls):
    """t as a plain tensor whose leading dims are the batches of lvls (outermost first),
    expanding the levels it is not batched at (stride 0, no copy)."""
    if not lvls:
        if type(t) is BatchedTensor:
            raise RuntimeError("vmap: a tensor of a vmap level that is no longer active was used")
        return t
    lvl = lvls[-1]
    if type(t) is BatchedTensor and t._lvl is lvl:
        return to_levels(t._phys, lvls[:-1])
    p = to_levels(t, lvls[:-1])
    k = len(lvls) - 1
    with DisableTorchFunctionSubclass():
        p = p.unsqueeze(k)
        shape = list(p.shape)
        shape[k] = lvl.size
        return p.expand(shape)


from . import _batching  # noqa: E402  (it imports this module)


def from_levels(p, lvls):
    """The inverse of to_levels: p's leading dims become the batches of lvls."""
    for lvl in lvls:  # each wrap's logical dim 0 is the next level's batch
        p = wrap(p, lvl)
    return p
