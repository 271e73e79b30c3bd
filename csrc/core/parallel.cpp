#include "kindle/parallel.h"

#include <atomic>

#include <omp.h>
#include <pthread.h>

#include "kindle/error.h"

namespace kindle {

namespace {
// The process-wide count (torch's set_num_threads applies to every thread, which OpenMP's own
// setting does not: it is per thread) and a thread's own temporary limit (ThreadLimitGuard).
std::atomic<int> g_num_threads{0};  // 0: OpenMP's default (OMP_NUM_THREADS or the cores)
thread_local int t_limit = 0;       // 0: none
// OpenMP's default, read as the library loads (before any guard or library lowers the setting of
// the thread that happens to ask first).
const int g_default_threads = omp_get_max_threads();
}  // namespace

void set_num_threads(int n) {
  KINDLE_CHECK(n > 0, "set_num_threads expects a positive integer (got ", n, ")");
  g_num_threads.store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);  // (the calling thread's OpenMP setting follows, for libraries that read it)
}

int get_num_threads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  if (n == 0) n = g_default_threads;
  return t_limit > 0 && t_limit < n ? t_limit : n;
}

// (OpenMP's own setting of this thread follows too: MKL's LAPACK reads it)
ThreadLimitGuard::ThreadLimitGuard(int n) : previous_(t_limit), previous_omp_(0) {
  if (n > 0 && (t_limit == 0 || n < t_limit)) t_limit = n;
  if (n > 0 && n < omp_get_max_threads()) {
    previous_omp_ = omp_get_max_threads();
    omp_set_num_threads(n);
  }
}
ThreadLimitGuard::~ThreadLimitGuard() {
  t_limit = previous_;
  if (previous_omp_ > 0) omp_set_num_threads(previous_omp_);  // (only what the guard changed)
}

namespace {
// A child made by fork() after the parent ran a parallel region inherits an OpenMP pool whose
// threads do not exist in it: its next parallel region would wait for them forever. As PyTorch
// does for its own pool, a forked child runs on one thread (set_num_threads raises it again).
const bool fork_handler_registered = [] {
  pthread_atfork(nullptr, nullptr, [] {
    g_num_threads.store(1, std::memory_order_relaxed);
    omp_set_num_threads(1);
  });
  return true;
}();
}  // namespace

}  // namespace kindle
