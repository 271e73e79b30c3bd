// Generators: a Philox counter-based stream, so that a seed gives the same numbers whatever the
// thread count (each element's value depends only on the seed, the offset and its index).
#pragma once
#include <cstdint>
#include <mutex>

#include "kindle/intrusive_ptr.h"

namespace kindle {

class GeneratorImpl : public RefCounted<GeneratorImpl> {
 public:
  explicit GeneratorImpl(uint64_t seed) : seed_(seed) {}
  uint64_t seed() const { return seed_; }
  void manual_seed(uint64_t seed) { std::lock_guard<std::mutex> g(mu_); seed_ = seed; offset_ = 0; }
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t o) { std::lock_guard<std::mutex> g(mu_); offset_ = o; }
  // Reserves `n` counters and returns the first; draws are independent of threads.
  uint64_t reserve(uint64_t n) {
    std::lock_guard<std::mutex> g(mu_);
    uint64_t o = offset_;
    offset_ += n;
    return o;
  }

 private:
  std::mutex mu_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

class Generator {
 public:
  Generator() = default;
  explicit Generator(uint64_t seed) : impl_(intrusive_ptr<GeneratorImpl>::make(seed)) {}
  GeneratorImpl* operator->() const { return impl_.get(); }
  bool defined() const { return bool(impl_); }

 private:
  intrusive_ptr<GeneratorImpl> impl_;
};

Generator& default_generator();
void manual_seed(uint64_t seed);
uint64_t seed();  // reseeds the default generator non-deterministically and returns the seed

// Philox4x32-10: four 32-bit random words for counter `ctr` under key `seed`.
struct Philox4 { uint32_t v[4]; };
Philox4 philox(uint64_t seed, uint64_t ctr);

}  // namespace kindle
