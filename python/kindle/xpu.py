"""kindle.xpu: Intel's GPU backend, absent in Kindle (scripts probe it when choosing a device)."""

__all__ = ["is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all", "seed",
           "synchronize", "empty_cache", "current_device"]


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def manual_seed(seed):  # noqa: ARG001  (seeding an absent device is a no-op, as torch's lazy seeding)
    pass


def manual_seed_all(seed):  # noqa: ARG001
    pass


def seed():
    pass


def empty_cache():
    pass


def _absent():
    return RuntimeError("kindle.xpu: no XPU device (Kindle has no XPU backend)")


def synchronize(device=None):  # noqa: ARG001
    raise _absent()


def current_device():
    raise _absent()
