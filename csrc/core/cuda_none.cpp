// kindle::cuda in a build without CUDA (KINDLE_CUDA=OFF): no devices, as PyTorch's CPU build
// answers; anything that needs a device raises. csrc/cuda/api.cpp replaces this file in a
// CUDA build.
#include "kindle/cuda.h"
#include "kindle/error.h"

namespace kindle::cuda {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw Error(detail::str_cat(what, ": Torch not compiled with CUDA enabled (this Kindle was built without CUDA; "
                                    "build with -DKINDLE_CUDA=ON on a machine with the CUDA toolkit)"));
}
}  // namespace

bool is_built() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
int current_device() { no_cuda("current_device"); }
void set_device(int) { no_cuda("set_device"); }
void synchronize(int) { no_cuda("synchronize"); }
DeviceProperties get_device_properties(int) { no_cuda("get_device_properties"); }
MemoryStats memory_stats(int) { return {}; }
void reset_peak_memory_stats(int) {}
void empty_cache() {}
std::string memory_summary(int) { return "No CUDA device: Kindle was built without CUDA.\n"; }
Stream current_stream(int) { no_cuda("current_stream"); }
Stream default_stream(int) { no_cuda("default_stream"); }
void set_current_stream(Stream) { no_cuda("set_stream"); }
Stream create_stream(int, int) { no_cuda("Stream"); }
void destroy_stream(Stream) {}
void stream_synchronize(Stream) { no_cuda("Stream.synchronize"); }
bool stream_query(Stream) { no_cuda("Stream.query"); }
uintptr_t create_event(bool) { no_cuda("Event"); }
void destroy_event(uintptr_t) {}
void record_event(uintptr_t, Stream) { no_cuda("Event.record"); }
void event_synchronize(uintptr_t) { no_cuda("Event.synchronize"); }
bool event_query(uintptr_t) { no_cuda("Event.query"); }
void stream_wait_event(Stream, uintptr_t) { no_cuda("Stream.wait_event"); }
float event_elapsed_ms(uintptr_t, uintptr_t) { no_cuda("Event.elapsed_time"); }
void record_stream(const Tensor&, Stream) { no_cuda("record_stream"); }

}  // namespace kindle::cuda
