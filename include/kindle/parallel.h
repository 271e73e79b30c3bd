// Intra-op parallelism. Every parallel kernel honours set_num_threads. Work is split in a way
// that never changes results: reductions use fixed blocks combined in a fixed order.
#pragma once
#include <cstdint>

namespace kindle {
void set_num_threads(int n);
int get_num_threads();
}  // namespace kindle
