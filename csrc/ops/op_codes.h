// The op codes of the kernel families: plain enums with no dependencies, so that device code
// compiled by another compiler (csrc/cuda/*.cu, by nvcc) selects the same functors.
#pragma once
#include <cstdint>

// UnaryOp, BinaryOp and each code's dtype rule: generated from ops.yaml's `kernel:` entries.
#include "elementwise_codes.h"

namespace kindle {

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min, All, Any, SumSq };

}  // namespace kindle
