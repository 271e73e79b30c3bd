// parallel_for over [begin, end): chunks of at least `grain` iterations, one per thread, using
// the thread count set by kindle::set_num_threads. Callers must not make results depend on how
// the range is split (reductions use fixed blocks; see reduce.cpp).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>

#include <omp.h>

#include "kindle/parallel.h"

namespace kindle::cpu {

// 128K elements per task: a parallel region costs more than splitting smaller work saves. Waking a
// sleeping thread (OMP_WAIT_POLICY=PASSIVE, or a time-sliced second core) took 60-100 us, where a
// 38K-element add takes 4 us on one thread; at 32K a tiny ViT's batch-1 forward at two threads
// spent a fifth of its time in wake-ups (10.3-10.9 ms; 8.2-8.6 ms at 128K, torch 10.1-10.7).
constexpr int64_t kGrainSize = 131072;

// The grain, in rows, for a parallel_for over rows of `row_len` elements: at least kGrainSize
// elements per task.
inline int64_t rows_grain(int64_t row_len) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(row_len, 1)); }

// An exception thrown by f on any thread is carried out of the parallel region and rethrown on
// the calling thread (the first one thrown; the other chunks still run to their end), where an
// exception escaping an OpenMP region would terminate the process.
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  int64_t n = end - begin;
  if (n <= 0) return;
  int nt = get_num_threads();
  if (nt <= 1 || n <= grain || omp_in_parallel()) { f(begin, end); return; }
  int64_t tasks = std::min<int64_t>(nt, (n + grain - 1) / grain);
  std::exception_ptr error;
  std::atomic_flag failed = ATOMIC_FLAG_INIT;
#pragma omp parallel num_threads(int(tasks))
  {
    int64_t t = omp_get_thread_num(), nth = omp_get_num_threads();
    int64_t chunk = (n + nth - 1) / nth;
    int64_t b = begin + t * chunk, e = std::min(end, b + chunk);
    try {
      if (b < e) f(b, e);
    } catch (...) {
      if (!failed.test_and_set()) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace kindle::cpu
