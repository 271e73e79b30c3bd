// The device caching allocator against a fake device runtime (host memory with a capacity,
// events completed by hand): the device-independent half of the CUDA backend, tested on CPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#include "core/caching_allocator.h"
#include "kindle/error.h"

using kindle::CachingAllocator;

namespace {

struct FakeRuntime : kindle::DeviceRuntime {
  size_t capacity = size_t(256) << 20, used = 0;
  int mallocs = 0, frees = 0, syncs = 0;
  std::map<void*, size_t> segments;
  std::map<uintptr_t, bool> events;  // id -> completed
  std::map<uintptr_t, uintptr_t> event_stream;
  uintptr_t next_event = 1;
  std::set<uintptr_t> busy_streams;  // events recorded on these stay incomplete until synchronize

  void* malloc(size_t n) override {
    if (used + n > capacity) return nullptr;
    void* p = std::malloc(n);
    segments[p] = n;
    used += n;
    ++mallocs;
    return p;
  }
  void free(void* p) override {
    used -= segments.at(p);
    segments.erase(p);
    std::free(p);
    ++frees;
  }
  uintptr_t event_create() override { events[next_event] = false; return next_event++; }
  void event_destroy(uintptr_t e) override { events.erase(e); }
  void event_record(uintptr_t e, uintptr_t s) override {
    events[e] = !busy_streams.count(s);
    event_stream[e] = s;
  }
  bool event_query(uintptr_t e) override { return events.at(e); }
  void synchronize() override {
    ++syncs;
    busy_streams.clear();
    for (auto& [e, done] : events) done = true;
  }
  ~FakeRuntime() override {
    for (auto& [p, n] : segments) std::free(p);
  }
};

constexpr size_t MiB = size_t(1) << 20;

}  // namespace

TEST(CachingAllocator, SizeClasses) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::segment_size(512), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(MiB), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(MiB + 512), 20 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(12 * MiB + 512), 14 * MiB);
}

TEST(CachingAllocator, SmallBlocksShareOneSegmentAndAreReused) {
  FakeRuntime rt;
  CachingAllocator a(&rt, "fake");
  void* p = a.allocate(100, 0);
  void* q = a.allocate(1000, 0);
  EXPECT_EQ(rt.mallocs, 1);  // both from one 2 MiB segment
  EXPECT_EQ(static_cast<char*>(q) - static_cast<char*>(p), 512);  // split at the rounded size
  auto s = a.stats();
  EXPECT_EQ(s.allocated, 512u + 1024u);
  EXPECT_EQ(s.reserved, 2 * MiB);
  a.free(p);
  void* r = a.allocate(200, 0);
  EXPECT_EQ(r, p);  // the freed block comes back without the driver
  EXPECT_EQ(rt.mallocs, 1);
  a.free(q);
  a.free(r);
  s = a.stats();
  EXPECT_EQ(s.allocated, 0u);
  EXPECT_EQ(s.largest_free_block, 2 * MiB);  // the neighbours merged back into the whole segment
  EXPECT_EQ(s.peak_allocated, 512u + 1024u);
}

TEST(CachingAllocator, LargePoolSplitsOnlyWorthwhileRests) {
  FakeRuntime rt;
  CachingAllocator a(&rt, "fake");
  void* p = a.allocate(4 * MiB, 0);  // a 20 MiB segment, split: 16 MiB stays free
  void* q = a.allocate(8 * MiB, 0);  // from the rest of the same segment
  EXPECT_EQ(rt.mallocs, 1);
  EXPECT_EQ(static_cast<char*>(q) - static_cast<char*>(p), std::ptrdiff_t(4 * MiB));
  void* r = a.allocate(7 * MiB + 512 * 1024, 0);  // 8 MiB left: the 0.5 MiB rest is not split off
  EXPECT_EQ(rt.mallocs, 1);
  EXPECT_EQ(a.stats().allocated, 20 * MiB);
  a.free(p);
  a.free(q);
  a.free(r);
  EXPECT_EQ(a.stats().largest_free_block, 20 * MiB);
  a.empty_cache();
  EXPECT_EQ(rt.frees, 1);
  EXPECT_EQ(a.stats().reserved, 0u);
}

TEST(CachingAllocator, BlocksBelongToTheirStream) {
  FakeRuntime rt;
  CachingAllocator a(&rt, "fake");
  void* p = a.allocate(1000, /*stream=*/1);
  a.free(p);
  void* q = a.allocate(1000, /*stream=*/2);
  EXPECT_NE(p, q);  // another stream's free block is not reused without synchronisation
  EXPECT_EQ(rt.mallocs, 2);
  void* r = a.allocate(1000, 1);
  EXPECT_EQ(r, p);
  a.free(q);
  a.free(r);
}

TEST(CachingAllocator, RecordStreamDelaysReuseUntilTheEventCompletes) {
  FakeRuntime rt;
  CachingAllocator a(&rt, "fake");
  void* p = a.allocate(1000, 1);
  a.record_stream(p, 2);
  rt.busy_streams.insert(2);  // stream 2 still has work queued that reads p
  a.free(p);
  void* q = a.allocate(1000, 1);
  EXPECT_NE(q, p);  // p is held back
  a.free(q);
  rt.synchronize();  // stream 2's work is done: the event completes
  void* r = a.allocate(1000, 1);
  EXPECT_TRUE(r == p || r == q);
  void* s = a.allocate(1000, 1);
  EXPECT_TRUE((r == p && s == q) || (r == q && s == p));  // both came back to the pool
  EXPECT_EQ(rt.mallocs, 1);
  a.free(r);
  a.free(s);
  EXPECT_TRUE(rt.events.empty());  // every event was destroyed once it completed
}

TEST(CachingAllocator, OutOfMemoryReleasesTheCacheAndRetries) {
  FakeRuntime rt;
  rt.capacity = 40 * MiB;
  CachingAllocator a(&rt, "fake");
  void* p = a.allocate(30 * MiB, 0);
  a.free(p);  // 30 MiB cached
  void* q = a.allocate(12 * MiB, 7);  // another stream: needs a new segment, which only fits after release
  EXPECT_NE(q, nullptr);
  auto s = a.stats();
  EXPECT_EQ(s.alloc_retries, 1u);
  EXPECT_EQ(s.reserved, 12 * MiB);
  EXPECT_EQ(rt.frees, 1);
  a.free(q);
}

TEST(CachingAllocator, OutOfMemoryReportsWhatItHolds) {
  FakeRuntime rt;
  rt.capacity = 40 * MiB;
  CachingAllocator a(&rt, "fake");
  void* p = a.allocate(30 * MiB, 0);
  try {
    a.allocate(20 * MiB, 0);
    FAIL() << "expected OutOfMemoryError";
  } catch (const kindle::OutOfMemoryError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("fake out of memory. Tried to allocate 20.00 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("30.00 MiB is allocated to 1 tensors"), std::string::npos) << m;
    EXPECT_NE(m.find("Largest live allocations: 30.00 MiB"), std::string::npos) << m;
  }
  EXPECT_EQ(a.stats().ooms, 1u);
  a.free(p);
}

TEST(CachingAllocator, ResetPeak) {
  FakeRuntime rt;
  CachingAllocator a(&rt, "fake");
  void* p = a.allocate(4 * MiB, 0);
  a.free(p);
  EXPECT_EQ(a.stats().peak_allocated, 4 * MiB);
  a.reset_peak();
  EXPECT_EQ(a.stats().peak_allocated, 0u);
  EXPECT_EQ(a.stats().peak_reserved, 20 * MiB);  // still held
  EXPECT_NE(a.summary().find("Reserved memory"), std::string::npos);
}
