// Storage: the bytes behind one or more tensors, owned through an Allocator, plus the version
// counter that all views of those bytes share (Note [Version counter] in autograd).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kindle/device.h"
#include "kindle/intrusive_ptr.h"

namespace kindle {

// Frees `data`; `ctx` is whatever the allocator (or a foreign owner such as NumPy) needs.
using FreeFn = void (*)(void* ctx, void* data, size_t nbytes);

struct DataPtr {
  void* data = nullptr;
  FreeFn free_fn = nullptr;
  void* ctx = nullptr;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes) = 0;
  // On a given device of the allocator's type (a device allocator overrides this).
  virtual DataPtr allocate(size_t nbytes, Device) { return allocate(nbytes); }
};
Allocator* get_allocator(Device device);

// Copies bytes between the host and a device or within a device, as the device's backend
// registered it; a non_blocking copy may return before the bytes arrive (the device's stream
// orders it before later work there). Host to host is a plain memcpy.
using CopyBytesFn = void (*)(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                             bool non_blocking);
// A device backend (csrc/cuda/) makes its device usable: its allocator and its copies.
void register_device(DeviceType type, Allocator* allocator, CopyBytesFn copy);
namespace detail {
void copy_bytes_across(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                       bool non_blocking);
}
inline void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                       bool non_blocking = false) {
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    if (nbytes) std::memcpy(dst, src, nbytes);
  } else {
    detail::copy_bytes_across(dst, dst_device, src, src_device, nbytes, non_blocking);
  }
}

// The CPU allocator: 64-byte aligned blocks; large blocks are cached (bounded) so that a fresh
// large result does not pay a page fault per 4 KiB page. See csrc/core/allocator.cpp.
struct CpuCacheStats {
  size_t cached_bytes, cache_hits, cache_misses;
  size_t allocated_bytes;       // live large blocks (rounded sizes)
  size_t peak_allocated_bytes;  // the most ever live at once
  size_t cache_limit;           // the hard limit (kindle.cpu.set_cache_limit)
};
CpuCacheStats cpu_cache_stats();
void cpu_cache_set_limit(size_t bytes);
void empty_cache();  // returns every cached block to the system
namespace detail {
// The bytes come from the CPU allocator (not NumPy's, a file mapping or shared memory, which
// other code or processes may write).
bool cpu_allocator_owns(const DataPtr& p);
}  // namespace detail

// Inference mode (torch.inference_mode), per thread. A storage allocated while it is on belongs
// to inference tensors (so do all views of it): autograd refuses to save them, or to see them
// modified or made to require grad, outside inference mode. The core records it at allocation;
// the autograd layer (kindle::autograd::InferenceMode) sets it and enforces the rules.
bool inference_mode_enabled();
void set_inference_mode_enabled(bool enabled);

class StorageImpl;
namespace detail {
void drop_derived(const StorageImpl* source);  // csrc/core/derived_cache.cpp
}

namespace detail {
inline std::atomic<uint64_t> next_storage_uid{1};
}

class StorageImpl : public RefCounted<StorageImpl> {
 public:
  StorageImpl(DataPtr ptr, size_t nbytes, Device device)
      : ptr_(ptr),
        nbytes_(nbytes),
        device_(device),
        uid_(detail::next_storage_uid.fetch_add(1, std::memory_order_relaxed)),
        inference_(inference_mode_enabled()) {}
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;
  ~StorageImpl() {
    if (flags_.load(std::memory_order_relaxed) & kHasDerived) detail::drop_derived(this);
    if (ptr_.free_fn) ptr_.free_fn(ptr_.ctx, ptr_.data, nbytes_);
  }

  void* data() const { return ptr_.data; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }
  // Moves the bytes to a new owner in place (every view follows): used by share_memory_().
  void reset_data(DataPtr p) {
    DataPtr old = ptr_;
    ptr_ = p;
    if (old.free_fn) old.free_fn(old.ctx, old.data, nbytes_);
  }
  const DataPtr& data_ptr() const { return ptr_; }
  // Unique over the process's life (an address can be reused once a storage is freed): tells
  // whether a tensor handed back later is a view of this very storage (saved-tensor hooks).
  uint64_t uid() const { return uid_; }
  bool is_inference() const { return inference_; }
  // The bytes were handed to code outside Kindle's ops (NumPy, DLPack, a raw pointer), which can
  // write them without bumping the version: nothing derived from them may be cached.
  void mark_exported() { flags_.fetch_or(kExported, std::memory_order_relaxed); }
  bool exported() const { return flags_.load(std::memory_order_relaxed) & kExported; }
  // Set by the derived-data cache (csrc/core/derived_cache.h), which drops its entries for this
  // storage when the storage goes.
  void mark_has_derived() { flags_.fetch_or(kHasDerived, std::memory_order_relaxed); }

 private:
  static constexpr uint8_t kExported = 1, kHasDerived = 2;
  DataPtr ptr_;
  size_t nbytes_;
  Device device_;
  uint64_t uid_;
  bool inference_;
  std::atomic<uint32_t> version_{0};
  std::atomic<uint8_t> flags_{0};
};

using Storage = intrusive_ptr<StorageImpl>;
Storage make_storage(size_t nbytes, Device device);

}  // namespace kindle
