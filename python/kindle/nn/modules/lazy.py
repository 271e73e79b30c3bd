"""Lazy modules (LazyLinear, LazyConv*, LazyBatchNorm*, LazyInstanceNorm*): the input size is
taken from the first input. Until then the parameters are UninitializedParameters (placeholders
that refuse arithmetic); the first forward (or a load_state_dict) builds the real module with the
size found, moves its initial values into the placeholder objects (so an optimizer created
earlier holds the right tensors) and turns the lazy module into that class, as torch does."""
from ... import _C
from ..parameter import Parameter
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .module import Module

__all__ = ["UninitializedParameter", "UninitializedBuffer", "LazyModuleMixin", "LazyLinear", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]

# What an uninitialized tensor still allows: moving it (Module.to/float/...), asking whether it is
# one, and the bookkeeping of requires_grad.
_ALLOWED = {"to", "cpu", "cuda", "float", "double", "half", "bfloat16", "type", "detach", "requires_grad_",
            "__hash__", "__repr__", "__reduce_ex__", "__deepcopy__", "share_memory_", "is_floating_point",
            "element_size", "dim", "numel"}


class _UninitializedMixin:
    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):  # noqa: ARG002
        """Gives the placeholder real (uninitialised) storage of `shape` and makes it a tensor of
        cls_to_become; values are for the caller to fill."""
        self.data = _C.empty(tuple(shape), dtype=dtype or self.dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in _ALLOWED:
            with _C.DisableTorchFunctionSubclass():
                r = func(*args, **(kwargs or {}))
            if isinstance(r, _C.Tensor) and name in ("to", "cpu", "cuda", "float", "double", "half", "bfloat16",
                                                      "type", "detach"):
                return _C.Tensor._make_subclass(cls, r, r.requires_grad)
            return r
        raise ValueError(f"Attempted to use an uninitialized parameter in {func}. This error happens when you are "
                         "using a `LazyModule` or explicitly manipulating `torch.nn.parameter.UninitializedParameter` "
                         "objects. When using LazyModules Call `forward` with a dummy batch to initialize the "
                         "parameters before calling torch functions")


class UninitializedParameter(_UninitializedMixin, Parameter):
    """A parameter whose shape is not known yet (see the lazy modules)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):  # noqa: ARG003
        return _C.Tensor._make_subclass(cls, _C.empty(0, dtype=dtype), requires_grad)

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad,))

    def __deepcopy__(self, memo):
        # a new placeholder (there are no values to copy), as torch's
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, dtype=self.dtype)
        return memo[id(self)]


class UninitializedBuffer(_UninitializedMixin, _C.Tensor):
    """A buffer whose shape is not known yet (see the lazy modules)."""

    cls_to_become = _C.Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):  # noqa: ARG003
        t = _C.Tensor._make_subclass(cls, _C.empty(0, dtype=dtype), requires_grad)
        t.persistent = persistent
        return t

    def __init__(self, *args, **kwargs):
        pass

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, dtype=self.dtype,
                                        persistent=getattr(self, "persistent", True))
        return memo[id(self)]


def _is_uninit(t):
    return isinstance(t, _UninitializedMixin)


class LazyModuleMixin:
    """The lazy behaviour: cls_to_become(size, *args, **kwargs) is built at the first forward,
    with size from _infer_size(input)."""

    cls_to_become = None

    def _lazy_setup(self, args, kwargs):
        """The real class built with input size 0 (so every attribute exists, as torch's lazy
        modules have them), then its parameters and running statistics made placeholders."""
        object.__setattr__(self, "_lazy_building", True)
        self.cls_to_become.__init__(self, 0, *args, **kwargs)
        object.__setattr__(self, "_lazy_building", False)
        self._lazy_args, self._lazy_kwargs = args, kwargs
        for name, p in list(self._parameters.items()):
            if p is not None:
                self._parameters[name] = UninitializedParameter(p.requires_grad, dtype=p.dtype)
        for name in ("running_mean", "running_var"):
            b = self._buffers.get(name)
            if b is not None:
                self._buffers[name] = UninitializedBuffer(dtype=b.dtype)
        self.register_load_state_dict_pre_hook(LazyModuleMixin._lazy_load_hook)

    def reset_parameters(self):
        """Nothing to initialise (or to draw from the generator) until the size is known."""
        if not (self.__dict__.get("_lazy_building") or self.has_uninitialized_params()):
            super().reset_parameters()

    def has_uninitialized_params(self):
        return any(_is_uninit(t) for t in list(self._parameters.values()) + list(self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs):  # noqa: ARG002
        self._materialize(self._infer_size(args[0]))

    def _materialize(self, size):
        dtype = next((t.dtype for t in self._parameters.values() if t is not None), self._lazy_kwargs.get("dtype"))
        kwargs = dict(self._lazy_kwargs, dtype=dtype)
        real = self.cls_to_become(size, *self._lazy_args, **kwargs)
        # parameters keep their identity (an optimizer may hold them); buffers are the new ones
        for name, value in real._parameters.items():
            placeholder = self._parameters.get(name)
            if value is not None and _is_uninit(placeholder):
                requires_grad = placeholder.requires_grad
                placeholder.materialize(value.shape, dtype=value.dtype)
                with _NoGrad():
                    placeholder.copy_(value)
                placeholder.requires_grad_(requires_grad)
                real._parameters[name] = placeholder
        training = self.training
        hooks = {k: v for k, v in self.__dict__.items() if "hooks" in k}
        for k in ("_lazy_args", "_lazy_kwargs", "_lazy_building"):
            self.__dict__.pop(k, None)
        self.__dict__.update(real.__dict__)
        self.__dict__.update(hooks)
        self._load_state_dict_pre_hooks = {k: v for k, v in self._load_state_dict_pre_hooks.items()
                                           if getattr(v, "hook", None) is not LazyModuleMixin._lazy_load_hook}
        self.__class__ = self.cls_to_become
        self.train(training)

    def _lazy_load_hook(self, state_dict, prefix, *args):  # noqa: ARG002
        w = state_dict.get(prefix + "weight")
        if self.has_uninitialized_params() and w is not None and not _is_uninit(w):
            self._materialize(self._size_from_weight(w))

    def forward(self, input):  # noqa: A002
        self.initialize_parameters(input)
        return self.forward(input)


class _NoGrad:
    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)


class LazyLinear(LazyModuleMixin, Linear):
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        self._lazy_setup((out_features, bias), {"device": device, "dtype": dtype})

    def _infer_size(self, input):  # noqa: A002
        return input.shape[-1]

    def _size_from_weight(self, w):
        return w.shape[1]


class _LazyConvNd(LazyModuleMixin):
    """The arguments are the real class's without in_channels (out_channels, kernel_size, ...)."""

    _spatial = 1

    def __init__(self, *args, **kwargs):
        self._lazy_setup(args, kwargs)

    def _infer_size(self, input):  # noqa: A002
        return input.shape[0] if input.dim() == self._spatial + 1 else input.shape[1]

    def _size_from_weight(self, w):
        transposed = self.cls_to_become.__name__.startswith("ConvTranspose")
        return w.shape[0] if transposed else w.shape[1] * self.groups


def _lazy_conv(name, base, spatial):
    return type(name, (_LazyConvNd, base), {"cls_to_become": base, "_spatial": spatial,
                                              "__doc__": f"{base.__name__} with in_channels from the first input."})


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d, 1)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d, 2)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d, 3)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d, 1)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d, 2)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d, 3)


class _LazyNormBase(LazyModuleMixin):
    _spatial = 1

    def _infer_size(self, input):  # noqa: A002
        return input.shape[1]  # batched input (torch's lazy norms read dim 1 whatever the input)

    def _size_from_weight(self, w):
        return w.shape[0]


def _lazy_norm(name, base, spatial, affine, track):
    def __init__(self, eps=1e-5, momentum=0.1, affine=affine, track_running_stats=track, device=None, dtype=None, *,
                 bias=True):
        self._lazy_setup((eps, momentum, affine, track_running_stats), {"device": device, "dtype": dtype,
                                                                        "bias": bias})
    return type(name, (_LazyNormBase, base), {"cls_to_become": base, "_spatial": spatial, "__init__": __init__,
                                              "__doc__": f"{base.__name__} with num_features from the first input."})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d, 1, True, True)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d, 2, True, True)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d, 3, True, True)
# (torch's lazy instance norms default to affine=True, track_running_stats=True, unlike InstanceNorm)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d, 1, True, True)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d, 2, True, True)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d, 3, True, True)
