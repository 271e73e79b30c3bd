"""torch.nn.utils.stateless.functional_call: calls a module with some of its parameters and
buffers replaced by given tensors, restoring them afterwards (kindle.func.functional_call is
the non-deprecated spelling)."""
import contextlib
import warnings

from ... import _C

__all__ = ["functional_call"]

_MISSING = object()


def _untie_named_tensors_map(module, parameters_and_buffers):
    """With tied tensors (one tensor under several names), a value given for one name is given
    for all of them; different values for names of one tied tensor are an error."""
    all_named = {}
    all_named.update(module.named_parameters(remove_duplicate=False))
    all_named.update(module.named_buffers(remove_duplicate=False))
    names_by_tensor = {}
    for name, tensor in all_named.items():
        names_by_tensor.setdefault(id(tensor), set()).add(name)
    tied_names_map = {}
    for names in names_by_tensor.values():
        if len(names) > 1:
            for name in names:
                tied_names_map[name] = names
    given_names = set(parameters_and_buffers)
    given_tied = given_names.intersection(tied_names_map)
    for given_name in given_tied:
        tied_names = tied_names_map[given_name]
        values = {id(parameters_and_buffers[n]) for n in tied_names if n in given_names}
        if len(tied_names.intersection(given_tied)) > 1 and len(values) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(tied_names)}, which are tied. "
                             f"Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for given_name in given_tied:
        for tied_name in tied_names_map[given_name]:
            untied[tied_name] = parameters_and_buffers[given_name]
    return untied


def _owner(module, path):
    prefix, _, name = path.rpartition(".")
    return (module.get_submodule(prefix) if prefix else module), name


def _swap_tensor(module, name, tensor):
    """Puts `tensor` (or _MISSING: removes the entry) under `name`; returns what was there."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, _C.Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    for store in (module._parameters, module._buffers):
        if name in store:
            orig = store[name]
            if tensor is _MISSING:
                del store[name]
            else:
                store[name] = tensor  # any tensor, not only a Parameter: the call is functional
            return orig
    orig = getattr(module, name) if hasattr(module, name) else _MISSING
    if orig is not _MISSING and orig is not None and not isinstance(orig, _C.Tensor):
        raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return orig


def _check_keys(module, keys):
    known = {n for n, _ in module.named_parameters(remove_duplicate=False)}
    known |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
    missing = sorted(known - set(keys))
    unexpected = sorted(set(keys) - known)
    errors = []
    if unexpected:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if errors:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(), "\n\t".join(errors)))


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    untied = _untie_named_tensors_map(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        _check_keys(module, untied)
    originals = {}
    try:
        for path, tensor in untied.items():
            owner, name = _owner(module, path)
            originals[path] = _swap_tensor(owner, name, tensor)
        yield
    finally:
        current = {}
        for path, tensor in reversed(list(originals.items())):
            owner, name = _owner(module, path)
            current[path] = _swap_tensor(owner, name, tensor)
        # a module that replaced an entry in place during the call: hand the new value back
        parameters_and_buffers.update({k: current[k] for k in parameters_and_buffers if k in current})


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with the entries of `parameters_and_buffers` (dotted names as in
    named_parameters) standing in for the module's own for this one call."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in "
                  "a future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
                  "replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
