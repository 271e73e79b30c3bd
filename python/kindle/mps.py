"""kindle.mps: Apple's Metal backend, absent in Kindle (as on any non-Apple machine)."""

__all__ = ["is_available", "device_count", "manual_seed", "seed", "synchronize", "empty_cache"]


def is_available():
    return False


def device_count():
    return 0


def manual_seed(seed):  # noqa: ARG001
    pass


def seed():
    pass


def empty_cache():
    pass


def synchronize():
    raise RuntimeError("kindle.mps: no MPS device (Kindle was built without the Metal backend)")
