"""kindle.cuda.amp: the deprecated CUDA spellings of autocast and GradScaler.

Without CUDA, autocast(enabled=...) on 'cuda' warns and does nothing (as torch's CPU build
does), and GradScaler is disabled: scale() returns its input, step() steps the optimizer."""
import functools
import warnings

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast:  # noqa: N801
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):  # noqa: ARG002
        if enabled:
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling",
                          stacklevel=2)
        self.enabled = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapped


class GradScaler:
    """A disabled gradient scaler (no CUDA): the methods keep the training loop unchanged."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        if enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
        self._enabled = False
        self._init_scale = init_scale
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval

    def is_enabled(self):
        return self._enabled

    def scale(self, outputs):
        return outputs

    def unscale_(self, optimizer):  # noqa: ARG002
        pass

    def step(self, optimizer, *args, **kwargs):
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):  # noqa: ARG002
        pass

    def get_scale(self):
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):  # noqa: ARG002
        pass


def custom_fwd(fwd=None, *, cast_inputs=None):  # noqa: ARG001
    if fwd is None:
        return lambda f: f
    return fwd


def custom_bwd(bwd=None):
    if bwd is None:
        return lambda f: f
    return bwd
