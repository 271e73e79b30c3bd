"""torch.nn.init for Kindle: in-place initialisers, run under no_grad, drawing from kindle's
generators (so kindle.manual_seed makes them reproducible). The gain and fan rules and the draws
are the C++ nn::init (kindle._C._init), which the C++ front end uses too; this module adds
Python's warnings and argument checks, and the initialisers C++ does not have yet."""
import math
import warnings


from .. import _C
from ..autograd.grad_mode import no_grad
from ..overrides import handle_torch_function, has_torch_function_variadic

_init = _C._init

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_"]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (linear/conv*/sigmoid 1, tanh 5/3, relu sqrt 2,
    leaky_relu sqrt(2 / (1 + slope^2)), selu 3/4)."""
    if nonlinearity == "leaky_relu" and param is not None and (isinstance(param, bool)
                                                               or not isinstance(param, (int, float))):
        raise ValueError(f"negative_slope {param} not a valid number")
    return _init.calculate_gain(str(nonlinearity), None if nonlinearity != "leaky_relu" else param)


def _calculate_fan_in_and_fan_out(tensor):
    return _init.calculate_fan_in_and_fan_out(tensor)


def _calculate_correct_fan(tensor, mode):
    return _init.calculate_correct_fan(tensor, mode)


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    if has_torch_function_variadic(tensor):  # a tensor-like with __torch_function__, as torch's
        return handle_torch_function(uniform_, (tensor,), tensor=tensor, a=a, b=b, generator=generator)
    _init.uniform_(tensor, a, b, generator)
    return tensor


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    if has_torch_function_variadic(tensor):
        return handle_torch_function(normal_, (tensor,), tensor=tensor, mean=mean, std=std, generator=generator)
    _init.normal_(tensor, mean, std, generator)
    return tensor


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal(mean, std) truncated to [a, b], drawn as torch 2.13 draws it (csrc/nn/init.cpp)."""
    if has_torch_function_variadic(tensor):
        return handle_torch_function(trunc_normal_, (tensor,), tensor=tensor, mean=mean, std=std, a=a, b=b,
                                     generator=generator)
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)
    _init.trunc_normal_(tensor, mean, std, a, b, generator)
    return tensor


def constant_(tensor, val):
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    _init.eye_(tensor)
    return tensor


def dirac_(tensor, groups=1):
    """Preserves the identity of the inputs in a {3,4,5}-D conv weight (per group)."""
    dimensions = tensor.dim()
    if dimensions not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    with no_grad():
        tensor.zero_()
        centre = tuple(s // 2 for s in sizes[2:])
        for g in range(groups):
            for d in range(min_dim):
                tensor[(g * out_chans_per_grp + d, d) + centre] = 1
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    _init.xavier_uniform_(tensor, gain, generator)
    return tensor


def xavier_normal_(tensor, gain=1.0, generator=None):
    _init.xavier_normal_(tensor, gain, generator)
    return tensor


def _kaiming(draw, tensor, a, mode, nonlinearity, generator):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return tensor
    calculate_gain(nonlinearity, a)  # Python's checks of the slope
    draw(tensor, a, mode, nonlinearity, generator)
    return tensor


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    return _kaiming(_init.kaiming_uniform_, tensor, a, mode, nonlinearity, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    return _kaiming(_init.kaiming_normal_, tensor, a, mode, nonlinearity, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal draw, as torch does: the
    draw in the tensor's dtype (so a seed gives torch's matrix), signs fixed by R's diagonal."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flattened = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
    if rows < cols:
        flattened = flattened.t()
    q, r = _C.linalg_qr(flattened)
    q = q * _C.diag(r, 0).sign()  # makes the decomposition unique (uniform over orthogonal matrices)
    if rows < cols:
        q = q.t()
    with no_grad():
        tensor.view_as(q).copy_(q)
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-D tensor whose columns each have ceil(sparsity * rows) zeros, the rest N(0, std)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for col_idx in range(cols):
            zero_indices = _C.randperm(rows, generator=generator)[:num_zeros]
            tensor[zero_indices, col_idx] = 0
    return tensor


def _make_deprecate(meth):
    """The old name (no trailing underscore) of an initialiser: warns, then calls it."""
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.", FutureWarning,
                      stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"""
    {old_name}(...)

    .. warning::
        This method is now deprecated in favor of :func:`torch.nn.init.{new_name}`.

    See :func:`~torch.nn.init.{new_name}` for details."""
    deprecated_init.__name__ = old_name
    return deprecated_init


# for backward compatibility (torch keeps these names, deprecated)
uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
