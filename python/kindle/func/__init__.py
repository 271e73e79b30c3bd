"""torch.func for Kindle: functional_call. The function transforms (grad, vmap, jacrev, ...)
need a transform layer Kindle does not have yet; they raise NotImplementedError naming themselves."""
from ..nn.utils.stateless import _functional_call

__all__ = ["functional_call"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with the given parameters and buffers standing in for its own; a
    tuple of dicts is merged (a key in two of them is an error)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        all_keys = [k for d in parameter_and_buffer_dicts for k in d]
        seen, repeated = set(), set()
        for k in all_keys:
            (repeated if k in seen else seen).add(k)
        if repeated:
            raise ValueError(f"{sorted(repeated)} appeared in multiple dictionaries; behavior of functional call is "
                             f"ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)


def _missing(name):
    def transform(*args, **kwargs):
        raise NotImplementedError(f"kindle.func.{name}: function transforms are not in Kindle yet; use "
                                  f"kindle.autograd.grad / backward for gradients")
    transform.__name__ = transform.__qualname__ = name
    return transform


grad = _missing("grad")
grad_and_value = _missing("grad_and_value")
vmap = _missing("vmap")
vjp = _missing("vjp")
jvp = _missing("jvp")
jacrev = _missing("jacrev")
jacfwd = _missing("jacfwd")
hessian = _missing("hessian")
functionalize = _missing("functionalize")
