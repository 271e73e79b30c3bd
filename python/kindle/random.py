"""The default generator's seed and state (torch.random).

Kindle's CPU generator is PyTorch's: a Mersenne Twister seeded as torch seeds it, with torch's
transforms, so a seed gives torch's numbers. Its state is torch's 5056-byte ByteTensor, in torch's
layout: a state saved by `torch.get_rng_state()` restores into Kindle and the other way round.
"""
import contextlib

from . import _C

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng"]


def _default_generator():
    return _C.default_generator()


default_generator = _default_generator()  # shares its state with kindle.default_generator


def _check_state(new_state):
    if not isinstance(new_state, _C.Tensor):
        raise TypeError(f"expected a kindle.ByteTensor, but got {type(new_state).__name__}")
    return new_state


def manual_seed(seed):
    """Seeds the default generator and returns it (as torch.manual_seed does)."""
    _C.manual_seed(int(seed))
    return _default_generator()


def seed():
    """Seeds the default generator with a non-deterministic number and returns that number."""
    return _C.seed()


def initial_seed():
    """The seed the default generator was last seeded with."""
    return _C.initial_seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor, for set_rng_state."""
    return _default_generator().get_state()


def set_rng_state(new_state):
    """Restores the default generator to a state returned by get_rng_state."""
    _default_generator().set_state(_check_state(new_state))


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Runs the block with the default generator's state saved and restored afterwards, so that
    random numbers drawn inside do not change the stream outside. Kindle has only the CPU
    generator, so `devices` and `device_type` are accepted and have nothing else to fork."""
    if not enabled:
        yield
        return
    gen = _default_generator()
    saved = gen.get_state()
    try:
        yield
    finally:
        gen.set_state(saved)
