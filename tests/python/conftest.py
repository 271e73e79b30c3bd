"""pytest configuration for the Python tests: hypothesis profile, and a short retry of
`import kindle` (the installed package may be in the middle of being replaced)."""
import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
# Thousands of tiny ops: OpenMP threads that spin between parallel regions steal the CPU from
# each other (kindle and torch each have a pool) and from anything else running; sleep instead.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _import_kindle(tries=10, wait=3.0):
    for i in range(tries):
        try:
            return importlib.import_module("kindle")
        except ImportError:
            if i == tries - 1:
                raise
            sys.modules.pop("kindle", None)
            sys.modules.pop("kindle._C", None)
            time.sleep(wait)


_import_kindle()

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("kindle", max_examples=60, deadline=None, derandomize=True,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "kindle"))
except ImportError:  # hypothesis tests skip themselves
    pass
