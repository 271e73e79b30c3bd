"""Finds the BLAS runtime when the extension's rpath does not (source-tree and --user layouts)."""
import ctypes
import os
import sys


def _dist_files(name, marker):
    """The files of the installed distribution `name` whose path contains `marker` ([] if absent)."""
    try:
        from importlib import metadata
        dist = metadata.distribution(name)
        return [dist.locate_file(f) for f in (dist.files or []) if marker in str(f)]
    except Exception:  # noqa: BLE001  (not installed, or no metadata)
        return []


def preload_blas():
    """Loads the BLAS Kindle was built with globally: Intel MKL's libmkl_rt (the `mkl` distribution's
    files or the interpreter's prefixes) or, for KINDLE_BLAS=openblas, scipy-openblas32's library.

    Loads what is installed, and raises nothing when neither is: importing kindle._C again then
    names the library it misses.
    """
    candidates = _dist_files("mkl", "libmkl_rt.so")
    for prefix in (sys.prefix, sys.base_prefix, os.path.expanduser("~/.local")):
        candidates.append(os.path.join(prefix, "lib", "libmkl_rt.so.2"))
        candidates.append(os.path.join(prefix, "lib", "libmkl_rt.so.3"))
    for group in (candidates, _dist_files("scipy-openblas32", "libscipy_openblas")):
        for path in group:
            if os.path.exists(str(path)):
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
                break
