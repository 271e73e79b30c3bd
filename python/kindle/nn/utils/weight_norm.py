"""torch.nn.utils.weight_norm / remove_weight_norm: the deprecated hook form of weight
normalisation (weight = g * v / ||v||, with parameters weight_g and weight_v and a forward
pre-hook that recomputes weight). The parametrization form is parametrizations.weight_norm."""
import warnings

from ...autograd.grad_mode import no_grad
from ..parameter import Parameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def _norm_except_dim(v, pow=2, dim=0):  # noqa: A002
    """The pow-norm of v over every dim but `dim`, kept as size-1 dims (torch.norm_except_dim);
    dim=-1 means the norm of the whole tensor, as in torch."""
    if dim == -1:
        return v.norm(pow)
    others = [d for d in range(v.dim()) if d != dim]
    if not others:
        return v.abs()  # the norm over no dims
    return v.norm(pow, dim=others, keepdim=True)


def _weight_norm(v, g, dim=0):
    """torch._weight_norm: v scaled so that its norm over all dims but `dim` is g."""
    return v * (g / _norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes `name` from `name_g` and `name_v`."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Deprecated in torch for parametrizations.weight_norm; kept with torch's warning."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
