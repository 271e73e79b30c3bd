// Intra-op parallelism. Every parallel kernel honours set_num_threads. Work is split in a way
// that never changes results: reductions use fixed blocks combined in a fixed order.
#pragma once
#include <cstdint>

namespace kindle {
void set_num_threads(int n);
int get_num_threads();

// Limits the kernels run by this thread to at most n threads until the guard ends: for an op
// made of steps too small to pay for waking the pool (a 256x256 Cholesky's copy, factorisation
// and triangle each take 5-200 µs; a wake-up on a time-sliced core can cost as much).
class ThreadLimitGuard {
 public:
  explicit ThreadLimitGuard(int n);
  ~ThreadLimitGuard();
  ThreadLimitGuard(const ThreadLimitGuard&) = delete;
  ThreadLimitGuard& operator=(const ThreadLimitGuard&) = delete;

 private:
  int previous_, previous_omp_;
};
}  // namespace kindle
