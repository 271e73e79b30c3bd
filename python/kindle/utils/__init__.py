"""kindle.utils: data loading (kindle.utils.data), mirroring torch.utils, and the CMake prefix
that lets C++ programs use this installation (find_package(Kindle))."""
import os as _os

from . import data  # noqa: F401
from . import checkpoint  # noqa: F401
from . import _pytree  # noqa: F401
from . import dlpack  # noqa: F401
from . import deterministic  # noqa: F401  (torch.utils imports it too)

# cmake -DCMAKE_PREFIX_PATH="$(python -c 'import kindle; print(kindle.utils.cmake_prefix_path)')"
cmake_prefix_path = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))), "share", "cmake")
