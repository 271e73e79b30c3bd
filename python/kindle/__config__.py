"""torch.__config__: how this build of Kindle was configured (show) and its threading (parallel_info)."""
import os as _os
import platform as _platform

from . import _C

__all__ = ["show", "parallel_info"]


def show():
    """A description of the build: version, CPU kernels chosen, BLAS, vector math, CUDA."""
    from . import __version__
    lines = [
        "Kindle built with:",
        f"  - Kindle {__version__}, C++20 core, {_platform.machine()}",
        f"  - CPU capability usage: {_C._get_cpu_capability()}",
        f"  - BLAS and LAPACK: {'Intel MKL' if _C._blas_library() == 'mkl' else 'OpenBLAS'}",
        f"  - Vector math: {'SLEEF' if _C._vector_math_library() == 'sleef' else 'glibc libmvec'}",
        "  - OpenMP (GNU libgomp)",
        f"  - CUDA: {'built' if _C._cuda_is_built() else 'not built'}",
    ]
    return "\n".join(lines) + "\n"


def parallel_info():
    """The thread settings, as torch.__config__.parallel_info() reports them."""
    from . import get_num_interop_threads
    lines = [
        "ATen/Parallel:",
        f"\tat::get_num_threads() : {_C.get_num_threads()}",
        f"\tat::get_num_interop_threads() : {get_num_interop_threads()}",
        "OpenMP 4.5 (GNU libgomp)",
        f"\tomp_get_max_threads() : {_C.get_num_threads()}",
        f"\tOMP_NUM_THREADS : {_os.environ.get('OMP_NUM_THREADS', '[not set]')}",
        "Kindle parallel backend: OpenMP",
    ]
    return "\n".join(lines) + "\n"
