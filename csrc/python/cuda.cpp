// kindle._C's CUDA functions (kindle/cuda/__init__.py builds torch.cuda's API on them; in a
// build without CUDA they report no devices: csrc/core/cuda_none.cpp), and which BLAS and vector math
// library the build uses.
#include <nanobind/stl/string.h>

#include "cpu/blas.h"
#include "kindle/cuda.h"
#include "python/bind_common.h"

namespace kindle::python {

void bind_cuda(nb::module_& m) {
  namespace c = kindle::cuda;
  m.def("_cuda_is_built", &c::is_built);
  m.def("_blas_library", &cpu::blas_library);
  m.def("_vector_math_library", &cpu::vector_math_library);
  m.def("_cuda_is_available", &c::is_available);
  m.def("_cuda_device_count", &c::device_count);
  m.def("_cuda_current_device", &c::current_device);
  m.def("_cuda_set_device", &c::set_device);
  m.def("_cuda_synchronize", &c::synchronize, nb::arg("device") = -1);
  m.def("_cuda_get_device_properties", [](int d) {
    c::DeviceProperties p = c::get_device_properties(d);
    return nb::make_tuple(p.name, p.total_memory, p.major, p.minor, p.multi_processor_count);
  });
  m.def("_cuda_memory_stats", [](int d) {
    c::MemoryStats s = c::memory_stats(d);
    nb::dict r;
    r["allocated_bytes.all.current"] = s.allocated;
    r["allocated_bytes.all.peak"] = s.peak_allocated;
    r["reserved_bytes.all.current"] = s.reserved;
    r["reserved_bytes.all.peak"] = s.peak_reserved;
    r["active.all.current"] = s.active_blocks;
    r["segment.all.current"] = s.segments;
    r["allocation.all.allocated"] = s.alloc_count;
    r["allocation.all.freed"] = s.free_count;
    r["num_alloc_retries"] = s.alloc_retries;
    r["num_ooms"] = s.ooms;
    r["largest_free_block"] = s.largest_free_block;
    return r;
  });
  m.def("_cuda_reset_peak_memory_stats", &c::reset_peak_memory_stats);
  m.def("_cuda_empty_cache", &c::empty_cache);
  m.def("_cuda_memory_summary", &c::memory_summary);
  // Streams and events travel as (handle, device) integers.
  m.def("_cuda_current_stream", [](int d) { c::Stream s = c::current_stream(d); return nb::make_tuple(s.handle, s.device); });
  m.def("_cuda_default_stream", [](int d) { c::Stream s = c::default_stream(d); return nb::make_tuple(s.handle, s.device); });
  m.def("_cuda_set_stream", [](uintptr_t h, int d) { c::set_current_stream({h, d}); });
  m.def("_cuda_create_stream", [](int d, int priority) {
    c::Stream s = c::create_stream(d, priority);
    return nb::make_tuple(s.handle, s.device);
  });
  m.def("_cuda_destroy_stream", [](uintptr_t h, int d) { c::destroy_stream({h, d}); });
  m.def("_cuda_stream_synchronize", [](uintptr_t h, int d) { nb::gil_scoped_release r; c::stream_synchronize({h, d}); });
  m.def("_cuda_stream_query", [](uintptr_t h, int d) { return c::stream_query({h, d}); });
  m.def("_cuda_create_event", &c::create_event);
  m.def("_cuda_destroy_event", &c::destroy_event);
  m.def("_cuda_record_event", [](uintptr_t e, uintptr_t h, int d) { c::record_event(e, {h, d}); });
  m.def("_cuda_event_synchronize", [](uintptr_t e) { nb::gil_scoped_release r; c::event_synchronize(e); });
  m.def("_cuda_event_query", &c::event_query);
  m.def("_cuda_stream_wait_event", [](uintptr_t h, int d, uintptr_t e) { c::stream_wait_event({h, d}, e); });
  m.def("_cuda_event_elapsed_ms", &c::event_elapsed_ms);
  m.def("_cuda_record_stream", [](const Tensor& t, uintptr_t h, int d) { c::record_stream(t, {h, d}); });
}

}  // namespace kindle::python
