"""kindle.accelerator: the device-neutral accelerator API. Kindle has no accelerator backend
yet, so it reports none, as PyTorch does on a machine without one."""

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "set_device_index", "synchronize"]

_NONE = "Cannot access accelerator device when none is available."


def is_available():
    return False


def current_accelerator(check_available=False):  # noqa: ARG001
    return None


def device_count():
    return 0


def current_device_index():
    raise RuntimeError(_NONE)


current_device_idx = current_device_index


def set_device_index(device):  # noqa: ARG001
    raise RuntimeError(_NONE)


set_device_idx = set_device_index


def synchronize(device=None):  # noqa: ARG001
    raise RuntimeError(_NONE)
