// The nodes that are not generated from ops.yaml: leaves' accumulators, in-place ops on views,
// regenerated views, and user-defined functions.
#pragma once
#include "autograd/variable.h"

namespace kindle::autograd {

struct TensorGeometry {
  DimVector sizes, strides;
  int64_t offset = 0;
  TensorGeometry(IntArrayRef sizes, IntArrayRef strides, int64_t offset)
      : sizes(sizes), strides(strides), offset(offset) {}
  explicit TensorGeometry(const Tensor& t)
      : sizes(t.sizes()), strides(t.strides()), offset(t.storage_offset()) {}
};

// Gradient of `as_strided(input, view)` with respect to an input laid out as `input`: sums every
// element of grad into the input position it aliases (views may overlap, e.g. expand or unfold).
Tensor as_strided_backward(const Tensor& grad, const TensorGeometry& input, const TensorGeometry& view);
// What a hook returned for gradient `g` (undefined: keep g). A replacement must keep the
// gradient's shape and dtype, or the engine would hand a wrongly typed tensor to the next node.
Tensor checked_hook_result(const Tensor& g, const Tensor& r, const char* where);

struct AccumulateGrad : Node {
  explicit AccumulateGrad(Tensor variable) : variable(std::move(variable)) {}
  tensor_list apply(tensor_list&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  Tensor variable;
};

// An in-place op `fn` applied to a view of `base`: base_new = base_old with the view's region
// replaced by fn(view_old, ...).
struct CopySlices : Node {
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn)
      : base(base), view(view), fn(std::move(fn)) {}
  tensor_list apply(tensor_list&& grads) override;
  std::string name() const override { return "CopySlices"; }
  void release_variables() override { fn->release_variables(); }
  TensorGeometry base, view;
  std::shared_ptr<Node> fn;
};

// A view regenerated from its base after an in-place change.
struct AsStridedBackward : Node {
  AsStridedBackward(const Tensor& base, const Tensor& view) : base(base), view(view) {}
  tensor_list apply(tensor_list&& grads) override;
  std::string name() const override { return "AsStridedBackward0"; }
  TensorGeometry base, view;
};

struct CustomFunctionNode : Node {
  CustomFunctionNode(std::string name, std::shared_ptr<FunctionCtx> ctx,
                     std::function<tensor_list(FunctionCtx&, tensor_list)> fn)
      : name_(std::move(name)), ctx(std::move(ctx)), backward_fn(std::move(fn)) {}
  tensor_list apply(tensor_list&& grads) override;
  std::string name() const override { return name_; }
  void release_variables() override;
  std::string name_;
  std::shared_ptr<FunctionCtx> ctx;
  std::function<tensor_list(FunctionCtx&, tensor_list)> backward_fn;
  bool released = false;
};

}  // namespace kindle::autograd
