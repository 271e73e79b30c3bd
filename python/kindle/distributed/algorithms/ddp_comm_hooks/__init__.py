from . import default_hooks  # noqa: F401
