"""The device boundary (issues 14 and 22): host code reads or writes a tensor's elements only
through Tensor::data_ptr(), which refuses memory that is not the host's (a CUDA tensor), so no
op without a device kernel can crash the process by dereferencing device memory. This test
keeps such host reads from spreading above csrc/cpu/: each file may use data_ptr() at most as
often as recorded below (the count only goes down, as the reads move into kernels behind stubs),
and device code (csrc/cuda/) passes addresses with raw_data_ptr() and never reads on the host."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOST_READ = re.compile(r"\.data_ptr(?:<[^>()]*>)?\(\)")  # Tensor::data_ptr (raw_data_ptr excluded by the dot)

# file -> the most data_ptr() calls it may have (2026-12-05)
ALLOWED = {
    "csrc/ops/print.cpp": 3, "csrc/core/shared_memory.cpp": 2, "csrc/ops/index.cpp": 2,
    "csrc/ops/linalg_decomp.cpp": 21, "csrc/ops/tensor_iter.h": 1,
    "csrc/nn/interpolate.cpp": 1, "csrc/api/data.cpp": 3, "csrc/serialize/safetensors.cpp": 2,
    "csrc/distributed/gloo.cpp": 3, "csrc/distributed/process_group.cpp": 2, "csrc/distributed/reducer.cpp": 2,
    "csrc/python/module.cpp": 2, "csrc/python/numpy.cpp": 3, "csrc/python/tensor.cpp": 1,
}
ABOVE_KERNELS = ("core", "ops", "nn", "optim", "autograd", "api", "distributed", "python", "serialize")


def _counts(folders):
    out = {}
    for d in folders:
        for f in sorted((ROOT / "csrc" / d).rglob("*")):
            if f.suffix in (".cpp", ".h", ".cu", ".cuh"):
                n = len(HOST_READ.findall(f.read_text()))
                if n:
                    out[str(f.relative_to(ROOT))] = n
    return out


def test_host_reads_of_tensor_memory_do_not_spread():
    grown = {f: (n, ALLOWED.get(f, 0)) for f, n in _counts(ABOVE_KERNELS).items() if n > ALLOWED.get(f, 0)}
    assert not grown, ("data_ptr() above csrc/cpu/ (count, allowed): " + repr(grown) + "; read tensor memory "
                       "in a kernel behind a stub (ops/kernels.h), or pass an address with raw_data_ptr()")


def test_device_code_never_reads_tensor_memory_on_the_host():
    assert _counts(("cuda",)) == {}


# What csrc/core/ (tensors, storage, allocators, dtypes, the runtime) may include: its own
# headers and the public headers of the same layer; never the ops, autograd or anything above.
CORE_HEADERS = {"kindle/" + h for h in (
    "tensor.h", "storage.h", "dtype.h", "device.h", "scalar.h", "error.h", "array_ref.h", "intrusive_ptr.h",
    "accessor.h", "tensor_options.h", "random.h", "parallel.h", "profiler.h", "cuda.h", "shared_memory.h",
    "cpu_capability.h", "warning.h")}


def test_core_includes_nothing_above_it():
    above = {}
    for f in sorted((ROOT / "csrc" / "core").glob("*")):
        for inc in re.findall(r'#include "([^"]+)"', f.read_text()):
            if not (inc.startswith("core/") or inc in CORE_HEADERS):
                above.setdefault(str(f.relative_to(ROOT)), []).append(inc)
    assert not above, f"csrc/core/ includes headers above the core: {above}"
