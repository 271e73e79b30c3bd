"""torch.nn._reduction: the reduction names of the losses and the legacy size_average/reduce
pair (deprecated), mapped as PyTorch maps them."""
import warnings

__all__ = ["get_enum", "legacy_get_string", "legacy_get_enum"]


def get_enum(reduction):
    """'none' -> 0, 'mean' -> 1, 'sum' -> 2 (ATen's Reduction enum); 'elementwise_mean' is 'mean'
    with a deprecation warning."""
    if reduction == "none":
        return 0
    if reduction == "mean":
        return 1
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      stacklevel=2)
        return 1
    if reduction == "sum":
        return 2
    raise ValueError(f"{reduction} is not a valid value for reduction")


def legacy_get_string(size_average, reduce, emit_warning=True):
    """The reduction the legacy pair amounts to (None counts as True): reduce=False -> 'none',
    else size_average -> 'mean' / 'sum'; the warning names it."""
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    if emit_warning:
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                      stacklevel=2)
    return ret


def legacy_get_enum(size_average, reduce, emit_warning=True):
    return get_enum(legacy_get_string(size_average, reduce, emit_warning))
