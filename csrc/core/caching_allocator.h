// The device caching allocator: device memory is taken from the driver in segments and handed
// out as blocks that are split, reused and merged again without calling the driver, per stream.
// It knows nothing of CUDA: it runs on a DeviceRuntime (the driver's allocation and event
// calls), so the same code is unit-tested on the CPU against a fake runtime and runs on the GPU
// against cudaMalloc and CUDA events (csrc/cuda/runtime.cpp).
//
// Note [Caching allocator]:
// - Sizes round up to 512 bytes. Requests up to 1 MiB come from the small pool (2 MiB
//   segments), larger ones from the large pool (a 20 MiB segment below 10 MiB, else the size
//   rounded up to 2 MiB), so small tensors never fragment the large segments.
// - A block belongs to the stream it was allocated on; it is reused only by that stream, whose
//   order makes reuse safe without waiting. A block also used on other streams (record_stream)
//   goes back to the pool only after events recorded on those streams at free time completed.
// - A free block splits when the rest is worth keeping (512 B in the small pool, over 1 MiB in
//   the large one); freed neighbours of one segment merge back.
// - When the driver refuses a segment, the allocator waits for pending events, returns every
//   cached whole segment and retries once; if that fails too it raises OutOfMemoryError with
//   what it holds, the largest free block and the largest live allocations.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "kindle/cuda.h"

namespace kindle {

struct DeviceRuntime {
  virtual ~DeviceRuntime() = default;
  virtual void* malloc(size_t nbytes) = 0;  // nullptr when the device has no memory for it
  virtual void free(void* p) = 0;
  virtual uintptr_t event_create() = 0;
  virtual void event_destroy(uintptr_t event) = 0;
  virtual void event_record(uintptr_t event, uintptr_t stream) = 0;
  virtual bool event_query(uintptr_t event) = 0;  // whether the work before it is done
  virtual void synchronize() = 0;                 // waits for every stream of the device
};

class CachingAllocator {
 public:
  static constexpr size_t kRound = 512;
  static constexpr size_t kSmallSize = size_t(1) << 20;    // largest request of the small pool
  static constexpr size_t kSmallSegment = size_t(2) << 20;
  static constexpr size_t kLargeSegment = size_t(20) << 20;
  static constexpr size_t kMinLargeAlloc = size_t(10) << 20;
  static constexpr size_t kSegmentRound = size_t(2) << 20;

  CachingAllocator(DeviceRuntime* runtime, std::string device_name)
      : rt_(runtime), name_(std::move(device_name)) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(size_t nbytes, uintptr_t stream);  // raises OutOfMemoryError
  void free(void* p);
  void record_stream(void* p, uintptr_t stream);
  void empty_cache();
  cuda::MemoryStats stats();
  void reset_peak();
  std::string summary();

  static size_t round_size(size_t n) { return n < kRound ? kRound : (n + kRound - 1) / kRound * kRound; }
  static size_t segment_size(size_t rounded) {
    if (rounded <= kSmallSize) return kSmallSegment;
    if (rounded < kMinLargeAlloc) return kLargeSegment;
    return (rounded + kSegmentRound - 1) / kSegmentRound * kSegmentRound;
  }

 private:
  struct Block {
    char* ptr;
    size_t size;
    uintptr_t stream;
    bool small;
    bool allocated = false;
    size_t requested = 0;
    Block* prev = nullptr;  // neighbours within the segment
    Block* next = nullptr;
    std::vector<uintptr_t> other_streams;  // record_stream
    int pending_events = 0;
  };
  struct ByStreamSize {
    bool operator()(const Block* a, const Block* b) const {
      if (a->stream != b->stream) return a->stream < b->stream;
      if (a->size != b->size) return a->size < b->size;
      return a->ptr < b->ptr;
    }
  };
  using Pool = std::set<Block*, ByStreamSize>;

  Block* find_free(Pool& pool, size_t size, uintptr_t stream);
  void insert_free(Block* b);  // merges with free neighbours
  void process_events();
  void wait_events();
  size_t release_cached();  // whole free segments back to the driver; returns bytes released
  [[noreturn]] void raise_oom(size_t requested);

  DeviceRuntime* rt_;
  std::string name_;
  std::mutex mu_;
  Pool small_, large_;
  std::unordered_map<void*, Block*> live_;
  std::vector<std::pair<uintptr_t, Block*>> pending_;  // (event, block freed while other streams used it)
  cuda::MemoryStats st_;
};

}  // namespace kindle
