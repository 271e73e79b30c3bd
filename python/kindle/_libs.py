"""Finds the MKL runtime when the extension's rpath does not (source-tree and --user layouts)."""
import ctypes
import os
import sys


def preload_mkl():
    """Loads libmkl_rt globally from the `mkl` distribution's files or the interpreter's prefixes."""
    candidates = []
    try:
        from importlib import metadata
        dist = metadata.distribution("mkl")
        candidates += [dist.locate_file(f) for f in (dist.files or []) if "libmkl_rt.so" in str(f)]
    except Exception:  # noqa: BLE001  (no metadata: fall back to the prefixes)
        pass
    for prefix in (sys.prefix, sys.base_prefix, os.path.expanduser("~/.local")):
        candidates.append(os.path.join(prefix, "lib", "libmkl_rt.so.2"))
        candidates.append(os.path.join(prefix, "lib", "libmkl_rt.so.3"))
    for path in candidates:
        if os.path.exists(str(path)):
            ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
            return
    raise ImportError("kindle needs Intel MKL's runtime (libmkl_rt); install it with `pip install mkl`")
