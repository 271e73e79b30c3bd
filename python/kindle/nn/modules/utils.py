"""Argument normalisers shared by the layers (torch.nn.modules.utils)."""
import collections.abc
from itertools import repeat


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """(1, 2) -> (2, 2, 1, 1) for n=2: the order F.pad wants its padding in."""
    return tuple(x for x in reversed(t) for _ in range(n))


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip `prefix` from the keys of state_dict (and of its _metadata) in place, where present:
    how a model saved through DataParallel / DistributedDataParallel ("module.") loads into the
    bare model."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    if hasattr(state_dict, "_metadata"):
        for key in list(state_dict._metadata.keys()):
            # '' is the wrapper's own entry; 'module' (no dot) and 'module.xx' are the model's
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                state_dict._metadata[key[len(prefix):]] = state_dict._metadata.pop(key)
