// What the composite ops' in-place forms share (composite.cpp, composite_numpy.cpp).
#pragma once
#include "kindle/operators.h"
#include "ops/tensor_iter.h"

namespace kindle::detail {

// The in-place form of a composite: the result must fit self's shape and dtype.
inline const Tensor& assign_result(const Tensor& self, const Tensor& result, const char* op) {
  KINDLE_CHECK(result.sizes() == self.sizes(), op, ": output with shape ", self.sizes(),
               " doesn't match the broadcast shape ", result.sizes());
  KINDLE_CHECK(can_cast(result.dtype(), self.dtype()), op, ": result type ", result.dtype(),
               " can't be cast to the desired output type ", self.dtype());
  self.copy_(result);
  return self;
}

// The value self holds before an in-place composite overwrites it: a copy when autograd records
// the op, since the ops that compute the result may save their input for backward, and the
// in-place write would invalidate what they saved.
inline Tensor input_of(const Tensor& self) { return self.requires_grad() ? self.clone() : self; }

}  // namespace kindle::detail
