"""kindle.utils.deterministic: torch.utils.deterministic's fill_uninitialized_memory switch.

torch fills the memory of empty(), empty_like(), empty_strided() and new_empty() (NaN for
floating point, the largest value for integers) when this is True (the default) and
kindle.use_deterministic_algorithms(True) is in effect. Kindle records the setting, validates it
as torch does, and does not fill: its factories are C++ functions, and the switch only makes
reads of uninitialised memory reproducible, which is a debugging aid rather than a result.
"""
import sys
import types

_fill_uninitialized_memory = True


class _Deterministic(types.ModuleType):
    @property
    def fill_uninitialized_memory(self):
        """Whether to fill uninitialized memory with a known value when
        kindle.use_deterministic_algorithms() is set to True."""
        return _fill_uninitialized_memory

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode):
        global _fill_uninitialized_memory
        if not isinstance(mode, bool):  # torch's check (the C++ setter takes a bool only)
            raise RuntimeError(f"expected a bool, but got {type(mode).__name__}")
        _fill_uninitialized_memory = mode


# A module whose attribute is a property, as torch's (sys.modules entry's class swapped).
sys.modules[__name__].__class__ = _Deterministic
