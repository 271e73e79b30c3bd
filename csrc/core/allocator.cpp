// The CPU allocator. Small blocks come from malloc (64-byte aligned). Blocks from 128 KiB up are
// cached: glibc serves them with mmap (its threshold starts there) or trims them off the top of
// its heap when they are freed, so every fresh one would otherwise be first-touched page by page
// (a 16M-element add into a fresh tensor measured at a quarter of the speed of one into a
// preallocated tensor; a Python loop cloning a 400 KB gradient 64 times faulted in all 25.7 MB on
// every pass, and ran 2.2x slower than with them cached). The cache is bounded, and emptied on
// allocation failure or on request.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "core/derived_cache.h"
#include "kindle/cuda.h"
#include "kindle/profiler.h"
#include "kindle/error.h"
#include "kindle/storage.h"

namespace kindle {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kLargeBlock = size_t(1) << 17;  // blocks from here up are cached
constexpr size_t kHugePage = size_t(1) << 21;

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }
// Large sizes are rounded to 1/16 of their power of two so that nearby sizes share blocks.
size_t large_block_size(size_t n) {
  size_t p = kLargeBlock;
  while (p <= n / 2) p *= 2;
  return round_up(n, p / 16);
}
// No machine has this much memory; refusing it up front keeps the rounding above exact.
constexpr size_t kMaxBytes = size_t(1) << 60;

size_t default_cache_limit() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  size_t phys = pages > 0 && page > 0 ? size_t(pages) * size_t(page) : (size_t(8) << 30);
  return phys / 8;
}

// Note [CPU block cache]: a freed large block is kept for reuse only while the cache stays under
// both the hard limit and the peak of live large blocks seen in the current window (about two
// seconds of allocator activity, or one training step's peak). A loop that allocates the same
// sizes again (the next step, the next fresh output) finds them; a burst of one-off sizes is
// returned to the system once the window moves on. Oldest blocks are evicted first.
//
// Note [Cache thrashing]: the peak of live blocks underestimates what a loop reuses when it frees
// each block right after use: MobileNet-v2's batch-8 inference has about 85 MB live at its peak
// but cycles through 250 MB of distinct block sizes, so an LRU cache capped at the peak evicted
// every size before its next use (53 fresh blocks a forward, 130 MB of page faults, 16% of its
// time). The sizes of the last evicted blocks are remembered; a miss on one of them is evidence
// that the cap is too small, and raises it by that size (up to the hard limit). The raise lasts
// while the cache serves hits; a window without any returns the cap to the peak.
constexpr size_t kCacheFloor = size_t(64) << 20;  // always worth keeping, whatever the peak
constexpr auto kWindow = std::chrono::seconds(2);
constexpr size_t kGhosts = 64;  // evicted sizes remembered

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    KINDLE_CHECK(nbytes <= kMaxBytes, "CPU allocator: out of memory: tried to allocate ", nbytes,
                 " bytes (more than any machine has)");
    if (profiler::detail::memory_on.load(std::memory_order_relaxed)) profiler::record_memory(int64_t(nbytes));
    if (nbytes < kLargeBlock) {
      void* p = std::aligned_alloc(kAlign, round_up(nbytes ? nbytes : 1, kAlign));
      if (!p) { empty(); p = std::aligned_alloc(kAlign, round_up(nbytes ? nbytes : 1, kAlign)); }
      KINDLE_CHECK(p, "CPU allocator: out of memory allocating ", nbytes, " bytes");
      return {p, &free_small, nullptr};
    }
    size_t size = large_block_size(nbytes);
    std::vector<void*> evicted;
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = by_size_.find(size);
      if (it != by_size_.end()) {
        p = it->second->ptr;
        lru_.erase(it->second);
        by_size_.erase(it);
        cached_ -= size;
        ++hits_;
        ++window_hits_;
      } else {
        ++misses_;
        raise_cap_if_evicted(size);
      }
      in_use_ += size;
      advance_window(evicted);
    }
    release(evicted);
    if (p) return {p, &free_large, this};
    p = fresh_block(size);
    if (!p) { empty(); p = fresh_block(size); }
    if (!p) {
      std::lock_guard<std::mutex> g(mu_);
      in_use_ -= size;
    }
    KINDLE_CHECK(p, "CPU allocator: out of memory allocating ", nbytes, " bytes");
    return {p, &free_large, this};
  }

  void empty() {
    std::vector<void*> old;
    {
      std::lock_guard<std::mutex> g(mu_);
      evict_to(0, old, /*remember=*/false);
      boost_ = 0;
      std::fill(std::begin(ghosts_), std::end(ghosts_), 0);
    }
    release(old);
  }

  static bool owns(const DataPtr& p) { return p.free_fn == &free_small || p.free_fn == &free_large; }

  CpuCacheStats stats() {
    std::lock_guard<std::mutex> g(mu_);
    return {cached_, hits_, misses_, in_use_, peak_all_, limit_};
  }
  void set_limit(size_t bytes) {
    std::vector<void*> old;
    {
      std::lock_guard<std::mutex> g(mu_);
      limit_ = bytes;
      evict_to(cap(), old);
    }
    release(old);
  }

 private:
  struct Block {
    size_t size;
    void* ptr;
  };
  using Lru = std::list<Block>;  // oldest first

  size_t cap() const { return std::min(limit_, std::max(kCacheFloor, peak_ + boost_)); }

  // Called with mu_ held. See Note [Cache thrashing].
  void raise_cap_if_evicted(size_t size) {
    for (size_t& g : ghosts_)
      if (g == size) {
        g = 0;
        boost_ = std::min(limit_, boost_ + size);
        return;
      }
  }

  // Called with mu_ held.
  void evict_to(size_t bytes, std::vector<void*>& out, bool remember = true) {
    while (cached_ > bytes && !lru_.empty()) {
      Block b = lru_.front();
      auto range = by_size_.equal_range(b.size);
      for (auto i = range.first; i != range.second; ++i)
        if (i->second == lru_.begin()) { by_size_.erase(i); break; }
      lru_.pop_front();
      cached_ -= b.size;
      out.push_back(b.ptr);
      if (remember) ghosts_[ghost_next_++ % kGhosts] = b.size;
    }
  }
  // Called with mu_ held: tracks the window's peak of live bytes; a new window starts from what
  // is live now and trims the cache to it.
  void advance_window(std::vector<void*>& out) {
    peak_ = std::max(peak_, in_use_);
    peak_all_ = std::max(peak_all_, in_use_);
    auto now = std::chrono::steady_clock::now();
    if (now - window_start_ < kWindow) return;
    window_start_ = now;
    peak_ = in_use_;
    if (window_hits_ == 0) boost_ = 0;
    window_hits_ = 0;
    evict_to(cap(), out);
  }
  // Blocks of 2 MiB and more start on a 2 MiB boundary and ask for transparent huge pages (where
  // the kernel gives them only on request, THP's "madvise" mode): a batch-1 linear layer streams
  // its weight (AlexNet's first, 151 MB) 8-12% faster without a TLB miss every 4 KiB, and a fresh
  // block faults in 2 MiB at a time. (torch does this only with THP_MEM_ALLOC_ENABLE=1.)
  static void* fresh_block(size_t size) {
    if (size < kHugePage) return std::aligned_alloc(kAlign, size);
    void* p = nullptr;
    if (posix_memalign(&p, kHugePage, size) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
    madvise(p, size, MADV_HUGEPAGE);  // advice only: where it fails, the block has 4 KiB pages
#endif
    return p;
  }

  static void release(const std::vector<void*>& blocks) {
    for (void* p : blocks) std::free(p);
  }

  static void free_small(void*, void* p, size_t nbytes) {
    if (profiler::detail::memory_on.load(std::memory_order_relaxed)) profiler::record_memory(-int64_t(nbytes));
    std::free(p);
  }
  static void free_large(void* ctx, void* p, size_t nbytes) {
    if (profiler::detail::memory_on.load(std::memory_order_relaxed)) profiler::record_memory(-int64_t(nbytes));
    auto* self = static_cast<CpuAllocator*>(ctx);
    size_t size = large_block_size(nbytes);
    std::vector<void*> evicted;
    bool keep = false;
    {
      std::lock_guard<std::mutex> g(self->mu_);
      self->in_use_ -= size;
      self->advance_window(evicted);
      size_t limit = self->cap();
      if (size <= limit) {
        self->evict_to(limit - size, evicted);
        self->lru_.push_back({size, p});
        self->by_size_.emplace(size, std::prev(self->lru_.end()));
        self->cached_ += size;
        keep = true;
      }
    }
    release(evicted);
    if (!keep) std::free(p);
  }

  std::mutex mu_;
  Lru lru_;
  std::multimap<size_t, Lru::iterator> by_size_;
  size_t cached_ = 0, hits_ = 0, misses_ = 0;
  size_t in_use_ = 0, peak_ = 0, peak_all_ = 0;  // live large blocks: now, this window, ever
  size_t boost_ = 0, window_hits_ = 0;             // Note [Cache thrashing]
  size_t ghosts_[kGhosts] = {};                    // sizes of the last evicted blocks
  size_t ghost_next_ = 0;
  std::chrono::steady_clock::time_point window_start_ = std::chrono::steady_clock::now();
  size_t limit_ = default_cache_limit();
};

// Never destroyed: storages freed during static destruction still find it.
CpuAllocator* cpu_allocator() {
  static auto* a = new CpuAllocator();
  return a;
}

}  // namespace

namespace {
// `meta` storage has a size and no bytes: nothing is allocated, copies into it do nothing and
// copies out of it raise, as torch's.
struct MetaAllocator final : Allocator {
  DataPtr allocate(size_t) override { return {}; }
};
void meta_copy(void*, Device, const void*, Device src_device, size_t nbytes, bool) {
  KINDLE_CHECK_NOT_IMPLEMENTED(!src_device.is_meta() || nbytes == 0, "Cannot copy out of meta tensor; no data!");
}
MetaAllocator g_meta_allocator;

struct DeviceBackend {
  Allocator* allocator = nullptr;
  CopyBytesFn copy = nullptr;
};
DeviceBackend g_backends[kNumDeviceTypes] = {{}, {}, {&g_meta_allocator, meta_copy}};
}  // namespace

void register_device(DeviceType type, Allocator* allocator, CopyBytesFn copy) {
  g_backends[int(type)] = {allocator, copy};
}

Allocator* get_allocator(Device device) {
  if (device.is_cpu()) return cpu_allocator();
  Allocator* a = g_backends[int(device.type())].allocator;
  // torch's CPU build answers a CUDA device with AssertionError (from torch.cuda's lazy init)
  KINDLE_CHECK_ASSERT(a || !device.is_cuda(), "Torch not compiled with CUDA enabled (Kindle was built without a "
                      "CUDA backend; only cpu is available)");
  KINDLE_CHECK_NOT_IMPLEMENTED(a, "kindle was built without support for device ", device,
                               " (only cpu is available)");
  return a;
}

namespace detail {
void copy_bytes_across(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                       bool non_blocking) {
  Device dev = dst_device.is_meta() || src_device.is_meta() ? kMeta : dst_device.is_cpu() ? src_device : dst_device;
  CopyBytesFn f = g_backends[int(dev.type())].copy;
  KINDLE_CHECK_ASSERT(f || !dev.is_cuda(), "copy: Torch not compiled with CUDA enabled (Kindle was built without a "
                      "CUDA backend; only cpu is available)");
  KINDLE_CHECK_NOT_IMPLEMENTED(f, "copy: kindle was built without support for device ", dev);
  f(dst, dst_device, src, src_device, nbytes, non_blocking);
}
}  // namespace detail

CpuCacheStats cpu_cache_stats() { return cpu_allocator()->stats(); }
void cpu_cache_set_limit(size_t bytes) { cpu_allocator()->set_limit(bytes); }
void empty_cache() {
  derived_cache_clear();  // (its tensors' blocks then come back to the cache, and go with it)
  cpu_allocator()->empty();
}

namespace detail {
bool cpu_allocator_owns(const DataPtr& p) {
  return CpuAllocator::owns(p);
}
}  // namespace detail

Storage make_storage(size_t nbytes, Device device) {
  if (device.is_cpu()) {
    DataPtr p = cpu_allocator()->allocate(nbytes);
    return Storage(new StorageImpl(p, nbytes, kCPU));
  }
  Allocator* a = get_allocator(device);
  if (device.is_cuda() && device.index() < 0) device.set_index(int8_t(cuda::current_device()));  // the current one
  DataPtr p = a->allocate(nbytes, device);
  return Storage(new StorageImpl(p, nbytes, device));
}

}  // namespace kindle
