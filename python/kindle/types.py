"""kindle.types: the typing aliases of torch.types, for annotations in user code."""
import os
from typing import IO, Sequence, Union

from . import Size, Tensor
from . import device as _device
from ._C import dtype as _dtype

__all__ = ["Number", "Device", "FileLike", "Size", "Tensor"]

_bool, _int, _float, _complex, _str, _bytes = bool, int, float, complex, str, bytes
_TensorOrTensors = Union[Tensor, Sequence[Tensor]]
_TensorOrOptionalTensors = Union[Tensor, Sequence[Union[Tensor, None]]]
_size = Union[Size, Sequence[int]]
_symsize = _size
Number = Union[int, float, bool]
_Number = (int, float, bool)
FileLike = Union[str, os.PathLike, IO[bytes]]
IntLikeType, FloatLikeType, BoolLikeType = int, float, bool
SymInt, SymFloat, SymBool = int, float, bool
py_sym_types = (SymInt, SymFloat, SymBool)
Device = Union[_device, str, int, None]
