#include "kindle/random.h"

#include <chrono>
#include <random>

namespace kindle {

Philox4 philox(uint64_t seed, uint64_t ctr) {
  uint32_t c0 = uint32_t(ctr), c1 = uint32_t(ctr >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c0, p1 = uint64_t(0xCD9E8D57u) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n1 = uint32_t(p1);
    uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1, n3 = uint32_t(p0);
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

Generator& default_generator() {
  static Generator g(67280421310721ull);
  return g;
}

void manual_seed(uint64_t seed) { default_generator()->manual_seed(seed); }

uint64_t seed() {
  uint64_t s = std::random_device{}() ^
               uint64_t(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  default_generator()->manual_seed(s);
  return s;
}

}  // namespace kindle
