#include "kindle/parallel.h"

#include <omp.h>

#include "kindle/error.h"

namespace kindle {

void set_num_threads(int n) {
  KINDLE_CHECK_VALUE(n > 0, "set_num_threads: expected a positive number of threads, got ", n);
  omp_set_num_threads(n);
}

int get_num_threads() { return omp_get_max_threads(); }

}  // namespace kindle
