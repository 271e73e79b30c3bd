// Generators. The CPU generator is PyTorch's: a 32-bit Mersenne Twister (mt19937) seeded with the
// low 32 bits of the seed, so that a seed gives the numbers torch's CPU generator gives. Its draws
// are sequential; the kernels draw in one thread and transform in many, so the values never depend
// on the thread count.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>

#include "kindle/intrusive_ptr.h"

namespace kindle {

constexpr uint64_t kDefaultGeneratorSeed = 67280421310721ull;  // kindle.Generator()'s seed, as torch's

class GeneratorImpl : public RefCounted<GeneratorImpl> {
 public:
  static constexpr int kStateWords = 624;
  // get_state()'s size: torch's CPU generator state (seed, the twister's words and position, the
  // cached normal samples), byte for byte.
  static constexpr size_t kStateBytes = 5056;

  explicit GeneratorImpl(uint64_t seed) { manual_seed(seed); }
  uint64_t seed() const { return seed_; }
  void manual_seed(uint64_t seed);

  // Kernels hold the mutex while they draw; the drawing members below do not lock.
  std::mutex& mutex() { return mu_; }
  uint32_t random() {
    if (--left_ == 0) twist();
    return temper(state_[next_++]);
  }
  uint64_t random64() {  // two draws: the first is the high word
    uint64_t hi = random();
    return hi << 32 | random();
  }
  // n consecutive random() values.
  void fill(uint32_t* out, int64_t n);
  // The second value of the last Box-Muller pair drawn by a scalar normal, if not used yet.
  std::optional<double> take_normal() {
    if (!has_normal_) return std::nullopt;
    has_normal_ = false;
    return normal_;
  }
  void put_normal(double v) { normal_ = v; has_normal_ = true; }

  // The state as torch's get_rng_state() bytes, and back (set_state checks the size and the
  // twister's position).
  void get_state(uint8_t* out);  // kStateBytes bytes
  void set_state(const uint8_t* in, size_t n);

 private:
  static uint32_t temper(uint32_t y) {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
  }
  void twist();  // the next 624 words; the draw that calls it reads the first

  std::mutex mu_;
  uint64_t seed_ = 0;
  uint32_t state_[kStateWords];
  int left_ = 1;       // draws left before the next twist, plus one (torch's convention)
  uint32_t next_ = 0;  // index of the next word
  double normal_ = 0;
  bool has_normal_ = false;
  float normal_float_ = 0;  // kept for torch's state layout; no CPU kernel caches a float sample
  bool has_normal_float_ = false;
};

class Generator {
 public:
  Generator() = default;
  explicit Generator(uint64_t seed) : impl_(intrusive_ptr<GeneratorImpl>::make(seed)) {}
  GeneratorImpl* operator->() const { return impl_.get(); }
  GeneratorImpl& operator*() const { return *impl_; }
  bool defined() const { return bool(impl_); }

 private:
  intrusive_ptr<GeneratorImpl> impl_;
};

// The default CPU generator: seeded non-deterministically once per process, as torch's is.
Generator& default_generator();
void manual_seed(uint64_t seed);
uint64_t seed();  // reseeds the default generator non-deterministically and returns the seed
uint64_t nondeterministic_seed();

}  // namespace kindle
