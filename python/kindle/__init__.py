"""Kindle: an imperative, high-performance deep learning library.

A PyTorch-compatible front end over a C++20 core: `import kindle as torch` runs PyTorch code
that uses the parts Kindle implements. Everything numeric happens in kindle._C.
"""
import builtins as _builtins
import operator as _operator
import os as _os
import threading as _threading

# OpenMP threads that finish a parallel region spin for a long while by default (libgomp: about
# 300k iterations) before sleeping. On a machine shared with other work that spinning steals the
# cores the next region needs (2-thread runs were 8-15x slower on a loaded 2-core machine), so
# Kindle spins briefly unless the user chose a policy. libgomp reads it once, as it loads (with
# _C, below), and has no call to change it later; the variable is set only for that moment, so
# the process environment (and what child processes inherit) stays the user's.
_spin_default = "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ
if _spin_default:
    _os.environ["GOMP_SPINCOUNT"] = "10000"
try:
    try:
        from . import _C
    except ImportError:  # the BLAS (MKL or OpenBLAS) not on the rpath (a source-tree or --user layout): load it by hand
        from ._libs import preload_blas as _preload_blas
        _preload_blas()
        from . import _C
finally:
    if _spin_default:
        del _os.environ["GOMP_SPINCOUNT"]
from ._C import *  # noqa: F401,F403  (ops, dtypes, factories)
from ._C import Tensor, Generator, dtype  # noqa: F401
from ._C import _fft_c2c, _fft_c2r, _fft_r2c  # noqa: F401  (torch._fft_*: the primitives of kindle.fft)

from . import overrides  # noqa: E402,F401  (__torch_function__: Tensor's default, the switches)
from . import autograd  # noqa: E402
from . import nn  # noqa: E402,F401
from . import _tensor  # noqa: E402,F401  (installs Tensor.__deepcopy__ and pickling)
from . import storage  # noqa: E402  (torch.storage; installs Tensor.untyped_storage, storage, set_)
from .storage import UntypedStorage, TypedStorage  # noqa: E402,F401
StorageBase = UntypedStorage
globals().update(storage.LEGACY_CLASSES)
Storage = storage.LEGACY_CLASSES["FloatStorage"]  # torch.Storage: the default dtype's legacy class
storage.install(Tensor)
from .autograd import no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled  # noqa: F401,E402
from .autograd import is_inference_mode_enabled  # noqa: F401,E402
from .serialization import save, load  # noqa: E402,F401
from . import optim  # noqa: E402,F401
from . import utils  # noqa: E402,F401  (kindle.utils.data)
from . import cpu  # noqa: E402,F401
from . import masked  # noqa: E402,F401  (torch.masked: reductions with a mask)
from . import __config__  # noqa: E402,F401  (torch.__config__.show(), parallel_info())
from . import cuda, backends, accelerator, mps, xpu  # noqa: E402,F401
from .amp import autocast, top_level_names as _amp_names  # noqa: E402,F401  (torch.autocast, torch.amp)
globals().update(_amp_names())  # torch.is_autocast_enabled, torch.get_autocast_dtype, ...
from ._torch_api import *  # noqa: E402,F401,F403  (constants, memory formats, finfo, switches)
from ._torch_api import _assert, install_tensor_methods as _install_tensor_methods  # noqa: E402
from ._legacy import legacy_type_classes as _legacy_type_classes  # noqa: E402
from ._torch_alias import install_as_torch, uninstall_as_torch  # noqa: E402,F401
from ._functions import unique_outputs as _unique_outputs  # noqa: E402

globals().update(_legacy_type_classes())  # kindle.FloatTensor, kindle.LongTensor, ...
_install_tensor_methods(Tensor)
from . import _functions, _aten_nn  # noqa: E402
globals().update({n: getattr(_aten_nn, n) for n in _aten_nn.__all__})  # torch.conv2d, torch.batch_norm, ...
globals().update(_functions.install(Tensor))  # atleast_1d, tensor_split, histogram, ...; Tensor.where, ...
from . import random, testing, hub, jit, profiler, signal  # noqa: E402,F401
from .random import get_rng_state, manual_seed, set_rng_state  # noqa: E402,F401  (manual_seed returns the generator)
from ._compile import compile  # noqa: E402,F401,A001  (torch.compile: runs eagerly)
_is_kindle = True  # how kindle.install_as_torch tells Kindle from PyTorch under the name torch

default_generator = _C.default_generator()  # shares its state with kindle.manual_seed

from .torch_version import __version__  # noqa: E402  (a str that compares as a version)
from . import torch_version, version, return_types  # noqa: E402,F401
_builtin_int = _builtins.int

float32 = _C.float32
float64 = _C.float64
float16 = _C.float16
bfloat16 = _C.bfloat16
int8, int16, int32, int64, uint8 = _C.int8, _C.int16, _C.int32, _C.int64, _C.uint8
bool = _C.bool  # noqa: A001  (torch.bool)
float, double, half = float32, float64, float16  # noqa: A001
long, int, short = int64, int32, int16  # noqa: A001


class _UnsupportedDtype:
    """A dtype Kindle names but has no kernels for: complex32. Code that only mentions it
    (`x.dtype == torch.cfloat`, a table of dtypes) runs; asking for a tensor of it raises a
    TypeError instead of silently giving another dtype."""

    is_complex, is_floating_point, is_signed = True, False, True

    def __init__(self, name, itemsize):
        self._name, self.itemsize = name, itemsize

    def __repr__(self):
        return f"{_legacy.type_prefix}.{self._name}"

    def __reduce__(self):
        return (getattr, (_builtins.__import__(__name__), self._name))


complex32 = chalf = _UnsupportedDtype("complex32", 4)
complex64 = cfloat = _C.complex64
complex128 = cdouble = _C.complex128


class Size(tuple):
    """The shape of a tensor: a tuple of ints, printed as kindle.Size([...])."""

    def __new__(cls, sizes=()):
        items = []
        for i, s in enumerate(sizes):
            if isinstance(s, _builtins.float) or not hasattr(type(s), "__index__"):
                raise TypeError(f"{_legacy.type_prefix}.Size() takes an iterable of 'int' (item {i} is "
                                f"'{type(s).__name__}')")
            items.append(_operator.index(s))  # a 0-d integer tensor or a NumPy integer becomes an int
        return tuple.__new__(cls, items)

    # Concatenation and repetition stay Sizes, as torch's
    def __add__(self, other):
        r = tuple.__add__(self, other)
        return Size(r) if isinstance(other, tuple) else r

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self)) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __repr__(self):
        return f"{_legacy.type_prefix}.Size({list(self)})"  # torch.Size under install_as_torch

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r


class device:
    """A device: kindle.device('cpu'), 'cuda:0', 'meta'. As a context manager it is the device
    factories use when none is given (``with kindle.device('meta'): model = Net()``)."""

    _kindle_device = True

    def __init__(self, type, index=None):  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index  # noqa: A001
        type = str(type)  # noqa: A001
        if ":" in type:
            type, idx = type.split(":", 1)  # noqa: A001
            index = _builtin_int(idx)
        if type not in ("cpu", "cuda", "meta"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        self.type = type
        self.index = index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __enter__(self):
        _device_contexts.__dict__.setdefault("stack", []).append(_C._get_default_device())
        _C._set_default_device(str(self))
        return self

    def __exit__(self, *exc):
        _C._set_default_device(_device_contexts.stack.pop())
        return False


_device_contexts = _threading.local()  # each thread's stack of the defaults `with device(...)` replaced



def numel(input):  # noqa: A002
    return input.numel()


def is_floating_point(input):  # noqa: A002
    return input.is_floating_point()


def is_inference(input):  # noqa: A002
    return input.is_inference()


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    return _unique_outputs(*_C._unique2(input, sorted, return_inverse, return_counts, dim), return_inverse,
                           return_counts)


def _tensor_unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    return unique(self, sorted, return_inverse, return_counts, dim)


Tensor.unique = _tensor_unique
Tensor.__module__ = "kindle"


def _split(self, split_size_or_sections, dim=0):
    if isinstance(split_size_or_sections, (list, tuple)):
        return _C.split_with_sizes(self, list(split_size_or_sections), dim)
    return _C.split(self, split_size_or_sections, dim)


def split(tensor, split_size_or_sections, dim=0):
    return _split(tensor, split_size_or_sections, dim)


def _tensor_split_method(self, split_size, dim=0):  # Tensor.split's own parameter name, as torch's
    return _split(self, split_size, dim)


Tensor.split = _tensor_split_method


def _tensor_init_subclass(cls, **kwargs):
    # A subclass whose __new__ makes its instance (Tensor._make_subclass(cls, data)) without an
    # __init__ of its own would have the legacy constructor's __init__ run on the made tensor
    # with __new__'s arguments: torch's Tensor.__init__ ignores them, and so does this one.
    super(Tensor, cls).__init_subclass__(**kwargs)
    if "__new__" in cls.__dict__ and _builtins.all("__init__" not in k.__dict__
                                                  for k in cls.__mro__[:cls.__mro__.index(Tensor)]):
        cls.__init__ = lambda self, *args, **kw: None


Tensor.__init_subclass__ = classmethod(_tensor_init_subclass)


def _tensor_str(self):
    return repr(self)


Tensor.__str__ = _tensor_str
def _tensor_format(self, spec):
    if self.dim() == 0:
        return self.item().__format__(spec)
    if spec:  # (as object.__format__: a format spec applies to scalars only)
        raise TypeError("unsupported format string passed to Tensor.__format__")
    return repr(self)


Tensor.__format__ = _tensor_format
Tensor.__reversed__ = lambda self: _C.flip(self, 0)
Tensor.__complex__ = lambda self: _builtins.complex(self.item())
Tensor.__array_priority__ = 1000  # numpy defers to our reflected operators


_LAZY_SUBMODULES = {"multiprocessing", "onnx", "fx", "_dynamo", "compiler", "func", "distributions", "fft",
                    "distributed", "futures", "sparse", "export"}


def sparse_coo_tensor(indices, values, size=None, **kwargs):
    """A sparse COO tensor (see kindle.sparse)."""
    from .sparse import sparse_coo_tensor as make
    return make(indices, values, size, **kwargs)


def spmm(mat1, mat2):
    from .sparse import mm
    return mm(mat1, mat2)


def _tensor_to_sparse(self, *args, **kwargs):
    from .sparse import _to_sparse
    return _to_sparse(self, *args, **kwargs)


Tensor.to_sparse = _tensor_to_sparse
Tensor.to_sparse_coo = _tensor_to_sparse
if not hasattr(Tensor, "to_dense"):
    Tensor.to_dense = lambda self, dtype=None, *, masked_grad=None: self if dtype is None else self.to(dtype)


def __getattr__(name):
    # Submodules imported on first use: `import kindle` stays fast.
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module("." + name, __name__)
    if name == "vmap":  # torch.vmap is torch.func.vmap
        import importlib
        return importlib.import_module(".func", __name__).vmap
    if name.startswith("__"):
        raise AttributeError(f"module 'kindle' has no attribute '{name}'")
    raise AttributeError(f"module 'kindle' has no attribute '{name}': torch.{name} is not in Kindle yet")

# the scientific namespaces: after everything above (they use kindle.Size, nn.functional, ...)
from . import special  # noqa: E402,F401
globals().update(special.install(Tensor))  # kindle.mvlgamma, kindle.logit; Tensor.polygamma, ...
from ._signal import *  # noqa: E402,F401,F403  (windows, stft, istft)
from ._signal import stft as _stft, istft as _istft  # noqa: E402
Tensor.stft, Tensor.istft = _stft, _istft
# NumPy-style aliases torch has for the inverse trigonometric functions
for _alias, _name in (("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("arcsinh", "asinh"),
                      ("arccosh", "acosh"), ("arctanh", "atanh"), ("arctan2", "atan2")):
    globals()[_alias] = globals()[_name]
    setattr(Tensor, _alias, getattr(Tensor, _name))
    setattr(Tensor, _alias + "_", getattr(Tensor, _name + "_"))
    if _name + "_" in globals():
        globals()[_alias + "_"] = globals()[_name + "_"]
from . import linalg  # noqa: E402,F401
from ._foreach import FUNCTIONS as _foreach_functions  # noqa: E402  (torch._foreach_*)
globals().update(_foreach_functions)
globals().update(linalg.install(Tensor))  # kindle.det, kindle.svd, ...; Tensor.det, ...


def _sampler(name):
    """kindle.poisson, kindle.binomial, ...: defined in kindle.distributions, imported on first use."""
    def f(*args, **kwargs):
        from .distributions import _sampling
        return getattr(_sampling, name)(*args, **kwargs)
    f.__name__ = f.__qualname__ = name
    return f


poisson, binomial, _standard_gamma, _standard_gamma_grad, _sample_dirichlet = (
    _sampler(n) for n in ("poisson", "binomial", "_standard_gamma", "_standard_gamma_grad", "_sample_dirichlet"))

from . import types  # noqa: E402,F401  (torch.types; needs Size and device above)
from ._lowrank import svd_lowrank, pca_lowrank  # noqa: E402,F401
from . import functional  # noqa: E402,F401  (torch.functional: re-exports the functions above)
from ._ops import ops  # noqa: E402,F401  (torch.ops: aten.<op> and the custom ops of kindle.library)
_sys_modules = __import__("sys").modules
_sys_modules.setdefault(__name__ + ".ops", ops)  # `import kindle.ops` (and torch.ops under install_as_torch)
from . import library  # noqa: E402,F401
