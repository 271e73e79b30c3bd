"""F.fractional_max_pool2d/3d (Graham, 2014): the arguments (output_ratio, the `_random_samples`
drawn with kindle.rand when not given, as torch draws them, so a seed gives torch's windows)
around the core's op (csrc/nn/fractional.cpp)."""
from .. import _C


def _fractional(input, kernel_size, output_size, output_ratio, return_indices, samples, nd):  # noqa: A002
    op = f"fractional_max_pool{nd}d"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    k = [kernel_size] * nd if isinstance(kernel_size, int) else list(kernel_size)
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    sizes = list(x.shape[2:])
    if output_size is None:
        if not isinstance(output_ratio, (list, tuple)):  # torch's functional form takes a tuple only
            raise TypeError(f"object of type '{type(output_ratio).__name__}' has no len()")
        ratio = list(output_ratio) * (nd if len(output_ratio) == 1 else 1)
        out = [int(s * r) for s, r in zip(sizes, ratio)]
    else:
        out = [output_size] * nd if isinstance(output_size, int) else list(output_size)
    n, c = x.shape[:2]
    if samples is None:
        samples = _C.rand(n, c, nd, dtype=x.dtype)
    fn = _C._nn.fractional_max_pool2d if nd == 2 else _C._nn.fractional_max_pool3d
    result, indices = fn(x, k, out, samples)  # (checks the sizes)
    if not batched:
        result, indices = result.squeeze(0), indices.squeeze(0)
    return (result, indices) if return_indices else result


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,  # noqa: A002
                          _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,  # noqa: A002
                          _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3)
