// parallel_for over [begin, end): chunks of at least `grain` iterations, one per thread, using
// the thread count set by kindle::set_num_threads. Callers must not make results depend on how
// the range is split (reductions use fixed blocks; see reduce.cpp).
#pragma once
#include <algorithm>
#include <cstdint>

#include <omp.h>

#include "kindle/parallel.h"

namespace kindle::cpu {

constexpr int64_t kGrainSize = 32768;

// The grain, in rows, for a parallel_for over rows of `row_len` elements: at least kGrainSize
// elements per task.
inline int64_t rows_grain(int64_t row_len) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(row_len, 1)); }

template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  int64_t n = end - begin;
  if (n <= 0) return;
  int nt = get_num_threads();
  if (nt <= 1 || n <= grain || omp_in_parallel()) { f(begin, end); return; }
  int64_t tasks = std::min<int64_t>(nt, (n + grain - 1) / grain);
#pragma omp parallel num_threads(int(tasks))
  {
    int64_t t = omp_get_thread_num(), nth = omp_get_num_threads();
    int64_t chunk = (n + nth - 1) / nth;
    int64_t b = begin + t * chunk, e = std::min(end, b + chunk);
    if (b < e) f(b, e);
  }
}

}  // namespace kindle::cpu
