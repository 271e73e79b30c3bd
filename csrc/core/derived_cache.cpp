// Note [Derived data cache]
// An inference loop calls a convolution with the same weight every time, and re-deriving what
// the kernel needs from it (Winograd's transformed filters: 16/9 of the weight, written fresh,
// 7% of ResNet-18's batch-1 forward) is wasted work. The derived tensor is kept, keyed by the
// source's storage, its address within it and the kind of derivation, and is valid while the
// storage's version counter has not moved: every write through Kindle's ops bumps it (autograd
// relies on the same counter).
//
// What makes a cached copy safe, and what keeps it small:
// - Only bytes Kindle alone writes: the storage comes from the CPU allocator (not NumPy's
//   memory, a file mapping or shared memory, which another process may write: Hogwild
//   training), and was never handed out as a raw pointer (numpy(), DLPack, data_ptr<T>() in C++
//   mark the storage exported for good).
// - A value is kept from the second call with an unchanged version on: a training loop bumps
//   the weight every step, so it only leaves a record per weight, never a copy.
// - Entries go with their storage (its destructor drops them: nothing is kept for a freed
//   weight, and a new storage at the same address cannot find them), and the oldest are
//   evicted beyond kMaxBytes of values or kMaxEntries records; empty_cache() drops them all.
#include "core/derived_cache.h"

#include <list>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace kindle {
namespace {

constexpr size_t kMaxBytes = size_t(256) << 20;
constexpr size_t kMaxEntries = 4096;

struct Key {
  const StorageImpl* storage;
  const void* data;
  uint64_t kind;
  bool operator<(const Key& o) const {
    return std::tie(storage, data, kind) < std::tie(o.storage, o.data, o.kind);
  }
};

struct Entry {
  Key key;
  uint32_t version;
  Tensor value;  // undefined until the second call at this version
};

class DerivedCache {
 public:
  Tensor lookup(const Tensor& source, uint64_t kind, bool& keep) {
    keep = false;
    StorageImpl* s = source.impl()->storage().get();
    if (!source.device().is_cpu() || s->exported() || !detail::cpu_allocator_owns(s->data_ptr())) return {};
    const Key key{s, source.raw_data_ptr(), kind};
    const uint32_t version = s->version();
    std::vector<Tensor> dead;  // released after the lock (a tensor's destructor may come back here)
    std::lock_guard<std::mutex> g(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) {
      lru_.push_back({key, version, {}});
      index_.emplace(key, std::prev(lru_.end()));
      s->mark_has_derived();
      ++misses_;
      trim(dead);
      return {};
    }
    Entry& e = *it->second;
    lru_.splice(lru_.end(), lru_, it->second);  // most recently used last
    if (e.version != version) {
      e.version = version;
      drop_value(e, dead);
      ++misses_;
      return {};
    }
    if (e.value.defined()) {
      ++hits_;
      return e.value;
    }
    ++misses_;
    keep = true;
    return {};
  }

  void store(const Tensor& source, uint64_t kind, const Tensor& value) {
    const Key key{source.impl()->storage().get(), source.raw_data_ptr(), kind};
    std::vector<Tensor> dead;
    std::lock_guard<std::mutex> g(mu_);
    auto it = index_.find(key);
    if (it == index_.end() || it->second->version != source.version()) return;  // changed meanwhile
    drop_value(*it->second, dead);
    it->second->value = value;
    bytes_ += value.nbytes();
    trim(dead);
  }

  // Called from the storage's destructor: the entries' values are released after the lock.
  void drop(const StorageImpl* s) {
    std::vector<Tensor> dead;
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = index_.lower_bound(Key{s, nullptr, 0});
      while (it != index_.end() && it->first.storage == s) {
        erase(it->second, dead);
        it = index_.erase(it);
      }
    }
  }

  void clear() {
    std::vector<Tensor> dead;
    {
      std::lock_guard<std::mutex> g(mu_);
      for (Entry& e : lru_) dead.push_back(std::move(e.value));
      lru_.clear();
      index_.clear();
      bytes_ = 0;
    }
  }

  DerivedCacheStats stats() {
    std::lock_guard<std::mutex> g(mu_);
    return {lru_.size(), bytes_, hits_, misses_};
  }

 private:
  using Lru = std::list<Entry>;

  // These run with mu_ held and move the values they drop into `dead`, which the caller destroys
  // after unlocking. An evicted entry's storage keeps its flag: dropping then finds nothing.
  void drop_value(Entry& e, std::vector<Tensor>& dead) {
    if (!e.value.defined()) return;
    bytes_ -= e.value.nbytes();
    dead.push_back(std::move(e.value));
    e.value = Tensor();
  }
  void erase(Lru::iterator e, std::vector<Tensor>& dead) {
    drop_value(*e, dead);
    lru_.erase(e);
  }
  void trim(std::vector<Tensor>& dead) {
    while (!lru_.empty() && (bytes_ > kMaxBytes || lru_.size() > kMaxEntries)) {
      index_.erase(lru_.front().key);
      erase(lru_.begin(), dead);
    }
  }

  std::mutex mu_;
  Lru lru_;
  std::map<Key, Lru::iterator> index_;
  size_t bytes_ = 0, hits_ = 0, misses_ = 0;
};

// Never destroyed: storages freed during static destruction still find it.
DerivedCache& cache() {
  static auto* c = new DerivedCache();
  return *c;
}

}  // namespace

namespace detail {
Tensor derived_lookup(const Tensor& source, uint64_t kind, bool& keep) { return cache().lookup(source, kind, keep); }
void derived_store(const Tensor& source, uint64_t kind, const Tensor& value) { cache().store(source, kind, value); }
void drop_derived(const StorageImpl* source) { cache().drop(source); }
}  // namespace detail

DerivedCacheStats derived_cache_stats() { return cache().stats(); }
void derived_cache_clear() { cache().clear(); }

}  // namespace kindle
