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

constexpr int64_t kGrainSize = 32768;

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
