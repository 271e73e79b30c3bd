// Checks on a tensor's values: index bounds, probabilities in [0, 1], no zero divisor. A meta
// tensor has no values, so its checks pass (torch's meta kernels skip them too); a check that
// only reads values never decides whether an op can run on meta.
#pragma once
#include "native_ops.h"

namespace kindle::detail {

// Every element of `cond` is true (vacuously for a meta or empty tensor).
inline bool all_values(const Tensor& cond) {
  return cond.is_meta() || cond.numel() == 0 || all(cond).item().to_bool();
}
// Some element of `cond` is true (never for a meta tensor).
inline bool any_value(const Tensor& cond) { return !cond.is_meta() && cond.numel() && any(cond).item().to_bool(); }

}  // namespace kindle::detail
