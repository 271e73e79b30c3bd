#include "kindle/random.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "kindle/error.h"

namespace kindle {

void GeneratorImpl::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> g(mu_);
  seed_ = seed;
  uint32_t s = uint32_t(seed);  // the twister takes 32 bits, as torch's does
  state_[0] = s;
  for (int j = 1; j < kStateWords; ++j) {
    s = 1812433253u * (s ^ (s >> 30)) + uint32_t(j);
    state_[j] = s;
  }
  left_ = 1;
  next_ = 0;
  has_normal_ = has_normal_float_ = false;
  normal_ = 0;
  normal_float_ = 0;
}

void GeneratorImpl::twist() {
  constexpr int N = kStateWords, M = 397;
  constexpr uint32_t kUpper = 0x80000000u, kLower = 0x7fffffffu, kMatrix = 0x9908b0dfu;
  uint32_t* st = state_;
  auto mix = [](uint32_t a, uint32_t b, uint32_t far) {
    uint32_t y = (a & kUpper) | (b & kLower);
    return far ^ (y >> 1) ^ ((0u - (y & 1u)) & kMatrix);
  };
  // Three loops so that each reads words at a fixed distance and the compiler vectorises them.
  for (int k = 0; k < N - M; ++k) st[k] = mix(st[k], st[k + 1], st[k + M]);
  for (int k = N - M; k < N - 1; ++k) st[k] = mix(st[k], st[k + 1], st[k + M - N]);
  st[N - 1] = mix(st[N - 1], st[0], st[M - 1]);
  left_ = N;
  next_ = 0;
}

void GeneratorImpl::fill(uint32_t* out, int64_t n) {
  while (n > 0) {
    if (left_ == 1) {
      twist();
      left_ = kStateWords + 1;  // random() decrements before it twists; here nothing was drawn yet
    }
    int64_t k = std::min<int64_t>(n, left_ - 1);
    const uint32_t* s = state_ + next_;
    for (int64_t i = 0; i < k; ++i) out[i] = temper(s[i]);
    next_ += uint32_t(k);
    left_ -= int(k);
    out += k;
    n -= k;
  }
}

// torch's layout (x86-64): seed u64 | left i32 | seeded i32 | next u64 | 624 words as u64 |
// normal_x, normal_y (the cached sample), normal_rho f64 | normal_is_valid i32 | pad 4 |
// next_float_normal_sample f32 | its flag (bool) | pad 3.
namespace {
constexpr size_t kOffLeft = 8, kOffSeeded = 12, kOffNext = 16, kOffWords = 24, kOffNormalY = 5024,
                 kOffNormalValid = 5040, kOffFloat = 5048, kOffFloatValid = 5052;
template <typename T>
void put(uint8_t* p, size_t off, T v) { std::memcpy(p + off, &v, sizeof(T)); }
template <typename T>
T get(const uint8_t* p, size_t off) { T v; std::memcpy(&v, p + off, sizeof(T)); return v; }
}  // namespace

void GeneratorImpl::get_state(uint8_t* out) {
  std::lock_guard<std::mutex> g(mu_);
  std::memset(out, 0, kStateBytes);
  put<uint64_t>(out, 0, seed_);
  put<int32_t>(out, kOffLeft, left_);
  put<int32_t>(out, kOffSeeded, 1);
  put<uint64_t>(out, kOffNext, next_);
  for (int i = 0; i < kStateWords; ++i) put<uint64_t>(out, kOffWords + 8 * size_t(i), state_[i]);
  put<double>(out, kOffNormalY, has_normal_ ? normal_ : 0.0);
  put<int32_t>(out, kOffNormalValid, has_normal_ ? 1 : 0);
  put<float>(out, kOffFloat, has_normal_float_ ? normal_float_ : 0.0f);
  out[kOffFloatValid] = has_normal_float_ ? 1 : 0;
}

void GeneratorImpl::set_state(const uint8_t* in, size_t n) {
  KINDLE_CHECK(n == kStateBytes, "set_state: expected a generator state of ", kStateBytes,
               " bytes (torch's CPU generator layout), but got ", n);
  int32_t left = get<int32_t>(in, kOffLeft);
  uint64_t next = get<uint64_t>(in, kOffNext);
  KINDLE_CHECK(left >= 1 && left <= kStateWords && next <= uint64_t(kStateWords) &&
                   next + uint64_t(left) - 1 <= uint64_t(kStateWords),
               "set_state: the state's position is invalid (left ", left, ", next ", next, ")");
  std::lock_guard<std::mutex> g(mu_);
  seed_ = get<uint64_t>(in, 0);
  left_ = left;
  next_ = uint32_t(next);
  for (int i = 0; i < kStateWords; ++i) state_[i] = uint32_t(get<uint64_t>(in, kOffWords + 8 * size_t(i)));
  has_normal_ = get<int32_t>(in, kOffNormalValid) != 0;
  normal_ = has_normal_ ? get<double>(in, kOffNormalY) : 0.0;
  has_normal_float_ = in[kOffFloatValid] != 0;
  normal_float_ = has_normal_float_ ? get<float>(in, kOffFloat) : 0.0f;
}

uint64_t nondeterministic_seed() {
  std::random_device rd;
  uint64_t s = uint64_t(rd()) << 32 | rd();
  return s ^ uint64_t(std::chrono::high_resolution_clock::now().time_since_epoch().count());
}

Generator& default_generator() {
  static Generator g(nondeterministic_seed());
  return g;
}

void manual_seed(uint64_t seed) { default_generator()->manual_seed(seed); }

uint64_t seed() {
  uint64_t s = nondeterministic_seed();
  default_generator()->manual_seed(s);
  return s;
}

}  // namespace kindle
