"""parameters_to_vector and vector_to_parameters."""
from ... import _C

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """One 1-D tensor holding every parameter's values, in order."""
    return _C.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Makes each parameter a view of its slice of `vec` (shares vec's memory, as in torch)."""
    if not isinstance(vec, _C.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__module__}.{type(vec).__qualname__}")
    if vec.dim() != 1:
        raise RuntimeError(f"vector_to_parameters: expected a 1-D vector, got shape {list(vec.shape)}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if total != vec.numel():
        raise RuntimeError(f"vector_to_parameters: the vector has {vec.numel()} elements but the parameters hold "
                           f"{total}")
    pointer = 0
    for param in params:
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
