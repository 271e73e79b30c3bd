"""kindle.backends: the switches PyTorch programs set at start-up.

cudnn and cuda: their flags are settable (scripts set torch.backends.cudnn.benchmark = True
unconditionally) and change nothing (Kindle's CUDA backend has no cuDNN path yet).
mkl and openmp report what Kindle's CPU kernels use."""
import contextlib as _contextlib
import sys as _sys
import types as _types

from .. import _C

__all__ = ["cudnn", "cuda", "mps", "mkl", "mkldnn", "openmp", "cpu", "opt_einsum"]


class _Flags(_types.ModuleType):
    def flags(self, **kwargs):
        """A context manager setting the given flags for its body."""
        @_contextlib.contextmanager
        def cm():
            old = {k: getattr(self, k) for k in kwargs}
            for k, v in kwargs.items():
                setattr(self, k, v)
            try:
                yield
            finally:
                for k, v in old.items():
                    setattr(self, k, v)
        return cm()


cudnn = _Flags("kindle.backends.cudnn")
cudnn.enabled = True
cudnn.benchmark = False
cudnn.deterministic = False
cudnn.allow_tf32 = True
cudnn.benchmark_limit = 10
cudnn.is_available = lambda: False
cudnn.version = lambda: None
cudnn.is_acceptable = lambda tensor: False  # noqa: ARG005


class _Matmul:
    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


cuda = _Flags("kindle.backends.cuda")
cuda.matmul = _Matmul()
cuda.is_built = _C._cuda_is_built
cuda.flash_sdp_enabled = lambda: False
cuda.mem_efficient_sdp_enabled = lambda: False
cuda.math_sdp_enabled = lambda: True
cuda.enable_flash_sdp = lambda enabled: None  # noqa: ARG005
cuda.enable_mem_efficient_sdp = lambda enabled: None  # noqa: ARG005
cuda.enable_math_sdp = lambda enabled: None  # noqa: ARG005
cuda.sdp_kernel = lambda *a, **k: _contextlib.nullcontext()  # noqa: ARG005

mps = _Flags("kindle.backends.mps")
mps.is_available = lambda: False
mps.is_built = lambda: False

mkl = _Flags("kindle.backends.mkl")
_BLAS = _C._blas_library()  # this build's BLAS (KINDLE_BLAS): "mkl" or "openblas"
mkl.is_available = lambda: _BLAS == "mkl"
mkl.verbose = lambda level: _contextlib.nullcontext()  # noqa: ARG005

mkldnn = _Flags("kindle.backends.mkldnn")
mkldnn.enabled = True
mkldnn.is_available = lambda: False  # Kindle does not use oneDNN

openmp = _Flags("kindle.backends.openmp")
openmp.is_available = lambda: True

opt_einsum = _Flags("kindle.backends.opt_einsum")
opt_einsum.enabled = False
opt_einsum.is_available = lambda: False
opt_einsum.strategy = None


cpu = _Flags("kindle.backends.cpu")
# The instruction set Kindle's CPU kernels were chosen for when the library loaded ("DEFAULT",
# "AVX2" or "AVX512", PyTorch's names): the widest this CPU runs, lowered by the environment
# variable KINDLE_CPU_CAPABILITY (or ATEN_CPU_CAPABILITY) = default | avx2 | avx512.
cpu.get_cpu_capability = _C._get_cpu_capability

# Importable as modules too (`import torch.backends.cudnn as cudnn`, in many published scripts).
for _name in __all__:
    _sys.modules.setdefault(f"{__name__}.{_name}", globals()[_name])
del _C, _name
