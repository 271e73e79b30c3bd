// The device caching allocator (Note [Caching allocator] in caching_allocator.h).
#include "core/caching_allocator.h"

#include <algorithm>
#include <cstdio>

#include "kindle/error.h"

namespace kindle {
namespace {

std::string format_bytes(size_t n) {
  char buf[32];
  if (n >= (size_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(n) / double(size_t(1) << 30));
  else if (n >= (size_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", double(n) / double(size_t(1) << 20));
  else if (n >= 1024) std::snprintf(buf, sizeof buf, "%.2f KiB", double(n) / 1024.0);
  else std::snprintf(buf, sizeof buf, "%zu bytes", n);
  return buf;
}

}  // namespace

CachingAllocator::~CachingAllocator() {
  // The process is ending (the allocator is never destroyed while tensors live): the driver
  // reclaims device memory itself; only the blocks' bookkeeping is released.
  for (Pool* pool : {&small_, &large_})
    for (Block* b : *pool) delete b;
  for (auto& [p, b] : live_) delete b;
  for (auto& [e, b] : pending_) delete b;
}

CachingAllocator::Block* CachingAllocator::find_free(Pool& pool, size_t size, uintptr_t stream) {
  Block key{nullptr, size, stream, false};
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  pool.erase(it);
  return b;
}

void* CachingAllocator::allocate(size_t nbytes, uintptr_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (nbytes == 0) return nullptr;
  KINDLE_CHECK_AS(OutOfMemoryError, nbytes <= (size_t(1) << 60), name_, " out of memory. Tried to allocate ",
                  format_bytes(nbytes), " (more than any device has)");
  process_events();
  size_t size = round_size(nbytes);
  bool small = size <= kSmallSize;
  Pool& pool = small ? small_ : large_;
  Block* b = find_free(pool, size, stream);
  if (!b) {
    size_t seg = segment_size(size);
    void* p = rt_->malloc(seg);
    if (!p) {
      // Wait for blocks held back by other streams, return every cached whole segment, retry.
      ++st_.alloc_retries;
      wait_events();
      release_cached();
      p = rt_->malloc(seg);
      if (!p) {
        ++st_.ooms;
        raise_oom(nbytes);
      }
    }
    b = new Block{static_cast<char*>(p), seg, stream, small};
    st_.reserved += seg;
    st_.peak_reserved = std::max(st_.peak_reserved, st_.reserved);
    ++st_.segments;
  }
  size_t rest = b->size - size;
  if (small ? rest >= kRound : rest > kSmallSize) {
    Block* tail = new Block{b->ptr + size, rest, stream, small};
    tail->prev = b;
    tail->next = b->next;
    if (b->next) b->next->prev = tail;
    b->next = tail;
    b->size = size;
    pool.insert(tail);
  }
  b->allocated = true;
  b->requested = nbytes;
  live_[b->ptr] = b;
  st_.allocated += b->size;
  st_.peak_allocated = std::max(st_.peak_allocated, st_.allocated);
  ++st_.active_blocks;
  ++st_.alloc_count;
  return b->ptr;
}

void CachingAllocator::free(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  KINDLE_INTERNAL_ASSERT(it != live_.end(), "caching allocator: freeing a pointer it did not allocate");
  Block* b = it->second;
  live_.erase(it);
  b->allocated = false;
  st_.allocated -= b->size;
  --st_.active_blocks;
  ++st_.free_count;
  if (!b->other_streams.empty()) {
    // Work queued on those streams may still read or write the block: reuse waits for it.
    for (uintptr_t s : b->other_streams) {
      uintptr_t e = rt_->event_create();
      rt_->event_record(e, s);
      pending_.push_back({e, b});
      ++b->pending_events;
    }
    b->other_streams.clear();
    return;
  }
  insert_free(b);
}

void CachingAllocator::insert_free(Block* b) {
  Pool& pool = b->small ? small_ : large_;
  auto mergeable = [](Block* n) { return n && !n->allocated && n->pending_events == 0; };
  if (mergeable(b->prev)) {
    Block* prev = b->prev;
    pool.erase(prev);
    prev->size += b->size;
    prev->next = b->next;
    if (b->next) b->next->prev = prev;
    delete b;
    b = prev;
  }
  if (mergeable(b->next)) {
    Block* next = b->next;
    pool.erase(next);
    b->size += next->size;
    b->next = next->next;
    if (next->next) next->next->prev = b;
    delete next;
  }
  pool.insert(b);
}

void CachingAllocator::record_stream(void* p, uintptr_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) return;  // not a block of this allocator (a view of foreign memory)
  Block* b = it->second;
  if (stream == b->stream) return;
  if (std::find(b->other_streams.begin(), b->other_streams.end(), stream) == b->other_streams.end())
    b->other_streams.push_back(stream);
}

void CachingAllocator::process_events() {
  size_t kept = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    auto [e, b] = pending_[i];
    if (rt_->event_query(e)) {
      rt_->event_destroy(e);
      if (--b->pending_events == 0) insert_free(b);
    } else {
      pending_[kept++] = pending_[i];
    }
  }
  pending_.resize(kept);
}

void CachingAllocator::wait_events() {
  if (pending_.empty()) return;
  rt_->synchronize();
  process_events();
}

size_t CachingAllocator::release_cached() {
  size_t released = 0;
  for (Pool* pool : {&small_, &large_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev || b->next) {  // part of a segment still in use
        ++it;
        continue;
      }
      rt_->free(b->ptr);
      released += b->size;
      st_.reserved -= b->size;
      --st_.segments;
      it = pool->erase(it);
      delete b;
    }
  }
  return released;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  wait_events();
  release_cached();
}

cuda::MemoryStats CachingAllocator::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  cuda::MemoryStats s = st_;
  for (Pool* pool : {&small_, &large_})
    for (Block* b : *pool) s.largest_free_block = std::max(s.largest_free_block, b->size);
  return s;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  st_.peak_allocated = st_.allocated;
  st_.peak_reserved = st_.reserved;
}

std::string CachingAllocator::summary() {
  cuda::MemoryStats s = stats();
  std::string out;
  out += "|===========================================================================|\n";
  out += "|                  Kindle " + name_ + " memory summary\n";
  out += "|---------------------------------------------------------------------------|\n";
  out += "| Allocated memory      | current " + format_bytes(s.allocated) + " | peak " + format_bytes(s.peak_allocated) + "\n";
  out += "| Reserved memory       | current " + format_bytes(s.reserved) + " | peak " + format_bytes(s.peak_reserved) + "\n";
  out += "| Active allocations    | " + std::to_string(s.active_blocks) + "\n";
  out += "| Segments              | " + std::to_string(s.segments) + "\n";
  out += "| Largest free block    | " + format_bytes(s.largest_free_block) + "\n";
  out += "| Allocations / frees   | " + std::to_string(s.alloc_count) + " / " + std::to_string(s.free_count) + "\n";
  out += "| Retries / OOMs        | " + std::to_string(s.alloc_retries) + " / " + std::to_string(s.ooms) + "\n";
  out += "|===========================================================================|\n";
  return out;
}

void CachingAllocator::raise_oom(size_t requested) {
  size_t free_cached = 0, largest_free = 0;
  for (Pool* pool : {&small_, &large_})
    for (Block* b : *pool) {
      free_cached += b->size;
      largest_free = std::max(largest_free, b->size);
    }
  std::vector<size_t> live;
  for (auto& [p, b] : live_) live.push_back(b->requested);
  std::sort(live.rbegin(), live.rend());
  std::string biggest;
  for (size_t i = 0; i < live.size() && i < 5; ++i) biggest += (i ? ", " : "") + format_bytes(live[i]);
  double frag = free_cached ? 1.0 - double(largest_free) / double(free_cached) : 0.0;
  char frag_s[16];
  std::snprintf(frag_s, sizeof frag_s, "%.0f%%", frag * 100);
  throw OutOfMemoryError(detail::str_cat(
      name_, " out of memory. Tried to allocate ", format_bytes(requested), ". Kindle holds ",
      format_bytes(st_.reserved), " in ", st_.segments, " segments, of which ", format_bytes(st_.allocated),
      " is allocated to ", live_.size(), " tensors and ", format_bytes(free_cached),
      " is cached free (largest free block ", format_bytes(largest_free), ", fragmentation ", frag_s,
      "). Largest live allocations: ", biggest.empty() ? std::string("none") : biggest,
      ". Free tensors you no longer need, or lower the batch size."));
}

}  // namespace kindle
