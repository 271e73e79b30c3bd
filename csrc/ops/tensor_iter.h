// TensorIter: the one description of an elementwise loop over broadcast, strided operands.
// Building it broadcasts the shapes, applies PyTorch's type promotion, allocates the outputs
// (following the inputs' memory layout), orders the dimensions so the innermost one is the
// fastest in memory, and merges dimensions that are contiguous for every operand. The device's
// kernels then only see a few dims of (size, byte stride) per operand.
#pragma once
#include <array>

#include "kindle/ops.h"

namespace kindle {

constexpr int kMaxOperands = 8;

struct TensorIter {
  std::array<Tensor, kMaxOperands> operands;  // outputs first
  int n_operands = 0, n_outputs = 0;
  DimVector shape;                            // iteration shape, dim 0 innermost
  std::array<DimVector, kMaxOperands> strides;  // byte strides per operand, over `shape`
  DType common_dtype = kFloat32;
  int64_t numel = 0;

  // An output whose dtype differs from the computation's gets a temporary; finish() copies
  // it back and bumps the version counter of every output written in place.
  Tensor writeback_dst;
  void finish();

  char* data(int i) const { return static_cast<char*>(operands[i].data_ptr()); }
  int64_t ndim() const { return int64_t(shape.size()); }
  const Tensor& output(int i = 0) const { return operands[i]; }
  const Tensor& input(int i) const { return operands[n_outputs + i]; }
  DType input_dtype(int i) const { return operands[n_outputs + i].dtype(); }
  Device device() const { return operands[0].device(); }
};

struct TensorIterConfig {
  TensorIterConfig& add_output(const Tensor& t) { outputs[n_out++] = t; return *this; }
  TensorIterConfig& add_input(const Tensor& t) { inputs[n_in++] = t; return *this; }
  // Cast inputs to the promoted dtype (true for arithmetic; false for copy and where's condition).
  bool promote_inputs = true;
  // Inputs that must keep their own dtype (where's condition): bit i for input i.
  unsigned keep_input_dtype = 0;
  // Forces the computation dtype (e.g. float for true division of integers).
  std::optional<DType> compute_dtype;
  // The dtype of allocated outputs when it is not the computation dtype (bool for comparisons).
  std::optional<DType> output_dtype;
  // Promote integer and bool computation to the default float type (true division, sqrt, ...).
  bool int_to_float = false;
  // Refuse to write into an output whose elements alias each other (an expanded tensor); the
  // index kernels write through deliberately restrided views and turn this off.
  bool check_internal_overlap = true;

  TensorIter build(const char* op);

  std::array<Tensor, kMaxOperands> outputs, inputs;
  int n_out = 0, n_in = 0;
};

// PyTorch's result_type over tensors and wrapped numbers (dimensioned > 0-d > Python number).
DType result_type(ArrayRef<Tensor> tensors);
// Whether a result of dtype `from` may be written into a tensor of dtype `to` in place.
bool can_cast(DType from, DType to);
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);

}  // namespace kindle
