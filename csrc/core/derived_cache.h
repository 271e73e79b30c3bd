// Data derived from a tensor's bytes and worth keeping across calls: Winograd's transformed
// filters (and any other re-layout of a weight). See Note [Derived data cache].
#pragma once
#include <cstddef>
#include <cstdint>

#include "kindle/tensor.h"

namespace kindle {

// What `make()` derives from `source` (a function of its bytes only; `kind` names the derivation
// and every parameter it takes besides the bytes, e.g. a hash of the op and the shapes).
// Returns the cached tensor while source's storage is alive and unchanged since the cached one
// was made, else make()'s result, which is kept from the second call with the same version on.
template <typename Make>
Tensor derived(const Tensor& source, uint64_t kind, Make&& make);

struct DerivedCacheStats {
  size_t entries, bytes, hits, misses;
};
DerivedCacheStats derived_cache_stats();
void derived_cache_clear();

namespace detail {
// Non-template halves: lookup returns the cached tensor, or an undefined one and whether to keep
// what the caller makes (it is then passed to store).
Tensor derived_lookup(const Tensor& source, uint64_t kind, bool& keep);
void derived_store(const Tensor& source, uint64_t kind, const Tensor& value);
}  // namespace detail

template <typename Make>
Tensor derived(const Tensor& source, uint64_t kind, Make&& make) {
  bool keep = false;
  Tensor hit = detail::derived_lookup(source, kind, keep);
  if (hit.defined()) return hit;
  Tensor made = make();
  if (keep) detail::derived_store(source, kind, made);
  return made;
}

}  // namespace kindle
