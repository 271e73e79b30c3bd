// The CPU allocator. Small blocks come from malloc (64-byte aligned). Large blocks are cached:
// glibc serves them with mmap, so every fresh large result would otherwise be first-touched page
// by page (a 16M-element add into a fresh tensor measured at a quarter of the speed of one into
// a preallocated tensor). The cache is bounded, and emptied on allocation failure or on request.
#include <cstdlib>
#include <map>
#include <mutex>

#include <unistd.h>

#include "kindle/error.h"
#include "kindle/storage.h"

namespace kindle {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kLargeBlock = size_t(1) << 20;  // blocks from here up are cached

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }
// Large sizes are rounded to 1/16 of their power of two so that nearby sizes share blocks.
size_t large_block_size(size_t n) {
  size_t p = kLargeBlock;
  while (p * 2 <= n) p *= 2;
  return round_up(n, p / 16);
}

size_t default_cache_limit() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  size_t phys = pages > 0 && page > 0 ? size_t(pages) * size_t(page) : (size_t(8) << 30);
  return phys / 8;
}

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    if (nbytes < kLargeBlock) {
      void* p = std::aligned_alloc(kAlign, round_up(nbytes ? nbytes : 1, kAlign));
      if (!p) { empty(); p = std::aligned_alloc(kAlign, round_up(nbytes ? nbytes : 1, kAlign)); }
      KINDLE_CHECK(p, "CPU allocator: out of memory allocating ", nbytes, " bytes");
      return {p, &free_small, nullptr};
    }
    size_t size = large_block_size(nbytes);
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = cache_.find(size);
      if (it != cache_.end()) {
        void* p = it->second;
        cache_.erase(it);
        cached_ -= size;
        ++hits_;
        return {p, &free_large, this};
      }
      ++misses_;
    }
    void* p = std::aligned_alloc(kAlign, size);
    if (!p) { empty(); p = std::aligned_alloc(kAlign, size); }
    KINDLE_CHECK(p, "CPU allocator: out of memory allocating ", nbytes, " bytes");
    return {p, &free_large, this};
  }

  void empty() {
    std::multimap<size_t, void*> old;
    {
      std::lock_guard<std::mutex> g(mu_);
      old.swap(cache_);
      cached_ = 0;
    }
    for (auto& [size, p] : old) std::free(p);
  }

  CpuCacheStats stats() {
    std::lock_guard<std::mutex> g(mu_);
    return {cached_, hits_, misses_};
  }
  void set_limit(size_t bytes) {
    { std::lock_guard<std::mutex> g(mu_); limit_ = bytes; }
    if (bytes == 0) empty();
  }

 private:
  static void free_small(void*, void* p, size_t) { std::free(p); }
  static void free_large(void* ctx, void* p, size_t nbytes) {
    auto* self = static_cast<CpuAllocator*>(ctx);
    size_t size = large_block_size(nbytes);
    {
      std::lock_guard<std::mutex> g(self->mu_);
      if (self->cached_ + size <= self->limit_) {
        self->cache_.emplace(size, p);
        self->cached_ += size;
        return;
      }
    }
    std::free(p);
  }

  std::mutex mu_;
  std::multimap<size_t, void*> cache_;
  size_t cached_ = 0, hits_ = 0, misses_ = 0;
  size_t limit_ = default_cache_limit();
};

// Never destroyed: storages freed during static destruction still find it.
CpuAllocator* cpu_allocator() {
  static auto* a = new CpuAllocator();
  return a;
}

}  // namespace

Allocator* get_allocator(Device device) {
  KINDLE_CHECK_NOT_IMPLEMENTED(device.is_cpu(), "kindle was built without support for device ",
                               device, " (only cpu is available)");
  return cpu_allocator();
}

CpuCacheStats cpu_cache_stats() { return cpu_allocator()->stats(); }
void cpu_cache_set_limit(size_t bytes) { cpu_allocator()->set_limit(bytes); }
void empty_cache() { cpu_allocator()->empty(); }

Storage make_storage(size_t nbytes, Device device) {
  DataPtr p = get_allocator(device)->allocate(nbytes);
  return Storage(new StorageImpl(p, nbytes, device));
}

}  // namespace kindle
