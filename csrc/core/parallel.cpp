#include "kindle/parallel.h"

#include <omp.h>
#include <pthread.h>

#include "kindle/error.h"

namespace kindle {

void set_num_threads(int n) {
  KINDLE_CHECK_VALUE(n > 0, "set_num_threads: expected a positive number of threads, got ", n);
  omp_set_num_threads(n);
}

int get_num_threads() { return omp_get_max_threads(); }

// omp_set_num_threads sets the calling thread's own setting: other threads are not affected.
ThreadLimitGuard::ThreadLimitGuard(int n) : previous_(omp_get_max_threads()) {
  if (n < previous_) omp_set_num_threads(n);
}
ThreadLimitGuard::~ThreadLimitGuard() { omp_set_num_threads(previous_); }

namespace {
// A child made by fork() after the parent ran a parallel region inherits an OpenMP pool whose
// threads do not exist in it: its next parallel region would wait for them forever. As PyTorch
// does for its own pool, a forked child runs on one thread (set_num_threads raises it again).
const bool fork_handler_registered = [] {
  pthread_atfork(nullptr, nullptr, [] { omp_set_num_threads(1); });
  return true;
}();
}  // namespace

}  // namespace kindle
