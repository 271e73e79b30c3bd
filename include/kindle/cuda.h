// kindle::cuda: the CUDA devices, their streams and events, and the caching allocator's
// statistics. Every build has these functions; a build without CUDA (KINDLE_CUDA=OFF, or a
// machine without a GPU) answers as PyTorch's CPU build does: no devices, and a clear error
// from anything that needs one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kindle/device.h"

namespace kindle {
class Tensor;
}

namespace kindle::cuda {

bool is_built();       // compiled with CUDA support
bool is_available();   // built with CUDA and at least one device present
int device_count();
int current_device();  // raises without a device
void set_device(int device);
// Waits for all work queued on the device (the current one for -1).
void synchronize(int device = -1);

struct DeviceProperties {
  std::string name;
  size_t total_memory = 0;
  int major = 0, minor = 0, multi_processor_count = 0;
};
DeviceProperties get_device_properties(int device = -1);

// The caching allocator's statistics (bytes): live allocations, memory held from the driver
// (segments), their peaks since the last reset, and the counts the out-of-memory path keeps.
struct MemoryStats {
  size_t allocated = 0, peak_allocated = 0;
  size_t reserved = 0, peak_reserved = 0;
  size_t active_blocks = 0, segments = 0;
  size_t alloc_count = 0, free_count = 0;
  size_t alloc_retries = 0, ooms = 0;
  size_t largest_free_block = 0;
};
MemoryStats memory_stats(int device = -1);
void reset_peak_memory_stats(int device = -1);
// Returns every cached block that is not in use to the driver.
void empty_cache();
// A table of the allocator's state, as torch.cuda.memory_summary.
std::string memory_summary(int device = -1);

// Streams and events are opaque handles (cudaStream_t / cudaEvent_t); 0 is the default stream.
struct Stream {
  uintptr_t handle = 0;
  int device = 0;
};
Stream current_stream(int device = -1);
Stream default_stream(int device = -1);
void set_current_stream(Stream s);  // for this thread
Stream create_stream(int device = -1, int priority = 0);
void destroy_stream(Stream s);
void stream_synchronize(Stream s);
bool stream_query(Stream s);  // whether all its work is done

uintptr_t create_event(bool enable_timing);
void destroy_event(uintptr_t event);
void record_event(uintptr_t event, Stream s);
void event_synchronize(uintptr_t event);
bool event_query(uintptr_t event);
void stream_wait_event(Stream s, uintptr_t event);
float event_elapsed_ms(uintptr_t start, uintptr_t end);

// Marks a tensor's memory as in use by `s` as well as by the stream it was allocated on: its
// block is reused only once the work queued on `s` so far has finished (torch's record_stream).
void record_stream(const Tensor& t, Stream s);

}  // namespace kindle::cuda
