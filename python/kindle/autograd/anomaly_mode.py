"""Anomaly detection: nodes remember the Python stack that created them, and a NaN produced
in backward raises an error naming the forward op and that stack."""
from .. import _C


class detect_anomaly:
    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = (_C._is_anomaly_enabled(), _C._is_anomaly_check_nan_enabled())
        _C._set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(*self._prev)

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


class set_detect_anomaly:
    def __init__(self, mode, check_nan=True):
        self._prev = (_C._is_anomaly_enabled(), _C._is_anomaly_check_nan_enabled())
        _C._set_anomaly_enabled(bool(mode), check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(*self._prev)


def is_anomaly_enabled():
    return _C._is_anomaly_enabled()


def is_anomaly_check_nan_enabled():
    return _C._is_anomaly_check_nan_enabled()
