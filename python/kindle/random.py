"""The default generator's seed and state (torch.random).

Kindle's generator is a Philox counter: its whole state is the pair (seed, offset), so the state
tensor is 16 bytes (seed, then offset, each a little-endian uint64) where PyTorch's Mersenne
Twister needs 5056. Restoring it replays exactly the numbers drawn after it was taken.
"""
import contextlib

from . import _C

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng"]

_STATE_BYTES = 16
_MASK64 = (1 << 64) - 1


def _default_generator():
    return _C.default_generator()


default_generator = _default_generator()  # shares its state with kindle.default_generator


def _state_to_tensor(state):
    seed_value, offset = state
    data = (seed_value & _MASK64).to_bytes(8, "little") + (offset & _MASK64).to_bytes(8, "little")
    return _C.tensor(list(data), dtype=_C.uint8)


def _tensor_to_state(new_state, what="RNG state"):
    if not isinstance(new_state, _C.Tensor):
        raise TypeError(f"expected a kindle.ByteTensor, but got {type(new_state).__name__}")
    if new_state.dtype != _C.uint8:
        raise TypeError(f"{what} must be a kindle.ByteTensor (dtype kindle.uint8), but got {new_state.dtype}")
    if new_state.numel() != _STATE_BYTES:
        raise RuntimeError(f"Expected a Kindle generator state of size {_STATE_BYTES} (seed and offset, "
                           f"little-endian uint64 each) but found the input RNG state size to be "
                           f"{new_state.numel()}")
    data = bytes(new_state.reshape(-1).tolist())
    return int.from_bytes(data[:8], "little"), int.from_bytes(data[8:], "little")


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
    return _state_to_tensor(_default_generator().get_state())


def set_rng_state(new_state):
    """Restores the default generator to a state returned by get_rng_state."""
    _default_generator().set_state(_tensor_to_state(new_state))


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
