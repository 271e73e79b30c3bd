"""torch.nn.utils.spectral_norm / remove_spectral_norm: the hook form of spectral normalisation
(weight = weight_orig / sigma, sigma estimated by power iteration with buffers weight_u and
weight_v, iterated in training mode only). The parametrization form is
parametrizations.spectral_norm."""
from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..parameter import Parameter

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    _version = 1  # state-dict format: weight_orig, weight_u and weight_v; weight itself not saved

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        weight_mat = weight
        if self.dim != 0:
            weight_mat = weight_mat.permute(self.dim, *[d for d in range(weight_mat.dim()) if d != self.dim])
        return weight_mat.reshape(weight_mat.size(0), -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                # in place: the buffers carry the estimate from one forward to the next
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(_C.mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(_C.mv(weight_mat, v), dim=0, eps=self.eps))
                # clones, so that backward sees the u and v of this forward, not later updates
                u = u.clone()
                v = v.clone()
        sigma = _C.dot(u, _C.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module.register_state_dict_post_hook(_SpectralNormStateDictHook(fn))
        module.register_load_state_dict_pre_hook(_SpectralNormLoadStateDictPreHook(fn))
        return fn


class _SpectralNormStateDictHook:
    # records the format version in the state dict's metadata, as torch does
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        meta = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in meta:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        meta[key] = self.fn._version


class _SpectralNormLoadStateDictPreHook:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs):
        version = local_metadata.get("spectral_norm", {}).get(self.fn.name + ".version", None)
        if version is None and prefix + self.fn.name in state_dict:
            # torch < 1.1 saved `weight` and solved for weight_v with a pseudo-inverse
            raise NotImplementedError("spectral_norm: loading a pre-1.1 checkpoint (no version, `weight` saved) "
                                      "needs linalg.pinv, which Kindle does not have yet")


def _is_transposed_conv(module):
    # a transposed conv's weight is (in, out, ...): its output dim is 1
    from ..modules import conv
    names = ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
    return isinstance(module, tuple(getattr(conv, n) for n in names if hasattr(conv, n)))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    if dim is None:
        dim = 1 if _is_transposed_conv(module) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    for k, hook in list(module._state_dict_hooks.items()):
        if isinstance(hook, _SpectralNormStateDictHook) and hook.fn.name == name:
            del module._state_dict_hooks[k]
    for k, hook in list(module._load_state_dict_pre_hooks.items()):
        inner = getattr(hook, "hook", hook)  # register_load_state_dict_pre_hook wraps it (_WrappedHook)
        if isinstance(inner, _SpectralNormLoadStateDictPreHook) and inner.fn.name == name:
            del module._load_state_dict_pre_hooks[k]
    return module
