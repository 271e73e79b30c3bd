#include <cxxabi.h>

#include "autograd/functions.h"

#include "kindle/operators.h"

namespace kindle::autograd {

namespace {

// The storage positions (relative to `lo`) of every element of a strided geometry, as an int64
// tensor of the geometry's shape.
Tensor storage_positions(const TensorGeometry& g, int64_t lo, Device device) {
  Tensor idx = scalar_tensor_of(g.offset - lo, kInt64, device);
  for (size_t k = 0; k < g.sizes.size(); ++k)
    idx = idx.unsqueeze(-1) + arange(0, g.sizes[k], 1, kInt64, device).mul(scalar_to_tensor(g.strides[k]));
  return idx;
}

int64_t last_position(const TensorGeometry& g) {
  int64_t p = g.offset;
  for (size_t k = 0; k < g.sizes.size(); ++k) {
    if (g.sizes[k] == 0) return g.offset - 1;
    p += (g.sizes[k] - 1) * g.strides[k];
  }
  return p;
}

}  // namespace

Tensor as_strided_backward(const Tensor& grad, const TensorGeometry& input, const TensorGeometry& view) {
  int64_t lo = std::min(input.offset, view.offset);
  int64_t hi = std::max(last_position(input), last_position(view)) + 1;
  Tensor flat = zeros({std::max<int64_t>(hi - lo, 0)}, grad.dtype(), grad.device());
  flat = flat.index_add(0, storage_positions(view, lo, grad.device()).reshape({-1}), grad.reshape({-1}));
  return flat.index_select(0, storage_positions(input, lo, grad.device()).reshape({-1})).view(input.sizes);
}

Tensor checked_hook_result(const Tensor& g, const Tensor& r, const char* where) {
  if (!r.defined()) return g;
  KINDLE_CHECK(r.sizes() == g.sizes(), "hook: a hook on ", where, " of shape ", g.sizes(),
               " returned a gradient of shape ", r.sizes(), "; it must keep the gradient's shape");
  KINDLE_CHECK(r.dtype() == g.dtype(), "hook: a hook on ", where, " has changed the type of the gradient (was ",
               g.dtype(), ", got ", r.dtype(), "); it must keep the gradient's dtype");
  return r;
}

tensor_list AccumulateGrad::apply(tensor_list&& grads) {
  Tensor g = std::move(grads[0]);
  if (!g.defined()) return {};
  AutogradMeta& m = materialize_meta(variable);
  for (auto& [id, hook] : m.leaf_hooks) g = checked_hook_result(g, hook(g), "a tensor");
  if (!variable.requires_grad()) return {};
  Tensor& cur = m.grad;
  if (!cur.defined()) {
    if (GradMode::is_enabled()) {
      cur = g;  // create_graph: keep the gradient's own graph
    } else {
      // Take the buffer when nobody else can see it; otherwise copy (a user's gradient, an
      // expanded or shared tensor).
      bool owned = g.is_contiguous() && g.impl()->use_count() == 1 && g.impl()->storage()->use_count() == 1 &&
                   !g.requires_grad();
      if (owned) {
        cur = std::move(g);
      } else {
        cur = empty_tensor(g.sizes(), g.dtype(), g.device());
        cur.copy_(g);
      }
    }
  } else if (GradMode::is_enabled()) {
    cur = cur + g;
  } else {
    cur.add_(g);
  }
  if (!m.post_accumulate_hooks.empty()) {
    auto hooks = m.post_accumulate_hooks;  // a hook may remove itself
    for (auto& [id, hook] : hooks) hook(variable);
  }
  return {};
}

tensor_list CopySlices::apply(tensor_list&& grads) {
  tensor_list out(next_edges.size());
  const Tensor& grad = grads[0];
  if (!grad.defined()) return out;
  Tensor result = empty_strided(base.sizes, base.strides, grad.dtype(), grad.device());
  result.copy_(grad);
  // `result` has the base's strides at offset 0, so the view's region sits at its offset
  // relative to the base's.
  Tensor slice = result.as_strided(view.sizes, view.strides, view.offset - base.offset);
  tensor_list res = fn->apply({slice.clone()});
  if (res.size() > 0 && res[0].defined()) slice.copy_(res[0]);
  else slice.zero_();
  out[0] = result;
  for (size_t i = 1; i < res.size() && i < out.size(); ++i) out[i] = res[i];
  return out;
}

tensor_list AsStridedBackward::apply(tensor_list&& grads) {
  if (!grads[0].defined()) return {Tensor()};
  return {as_strided_backward(grads[0], base, view)};
}

tensor_list CustomFunctionNode::apply(tensor_list&& grads) {
  KINDLE_CHECK(!released, "Trying to backward through the graph a second time (or directly access saved tensors after "
               "they have already been freed). Saved intermediate values of the graph are freed when you call "
               ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph "
               "a second time. (In ", name_, ".)");
  // Missing gradients of outputs arrive as zeros, as PyTorch's materialize_grads does.
  if (ctx->materialize_grads)
    for (size_t i = 0; i < grads.size(); ++i)
      if (!grads[i].defined()) grads[i] = zeros(output_meta[i].sizes, output_meta[i].dtype, output_meta[i].device);
  tensor_list r = backward_fn(*ctx, std::move(grads));
  KINDLE_CHECK(r.size() == next_edges.size(), name_, ".backward: function backward returned an incorrect number of "
               "gradients (expected ", next_edges.size(), ", got ", r.size(), ")");
  return r;
}

void CustomFunctionNode::release_variables() {
  released = true;
  for (auto& s : ctx->saved_) s.reset();
}

// ---- FunctionCtx ----

std::string custom_function_name(const char* mangled) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  return name;
}

tensor_list custom_function_gradients(const std::string& name, tensor_list grads,
                                             const std::vector<bool>& tensor_arg) {
  // Extra trailing gradients are accepted when undefined (libtorch: a forward parameter with a
  // default value that apply did not pass).
  while (grads.size() > tensor_arg.size() && !grads.back().defined()) grads.pop_back();
  KINDLE_CHECK(grads.size() == tensor_arg.size(), name, ": function backward returned an incorrect number of ",
               "gradients (expected ", tensor_arg.size(), ", got ", grads.size(), "): one per forward argument, an ",
               "undefined Tensor for each argument that is not a tensor");
  tensor_list out;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (tensor_arg[i]) {
      out.push_back(std::move(grads[i]));
    } else {
      KINDLE_CHECK(!grads[i].defined(), name, ": function backward returned a gradient different than an undefined ",
                   "Tensor at position ", i + 1, ", but the corresponding forward input was not a Tensor");
    }
  }
  return out;
}

void FunctionCtx::save_for_backward(tensor_list tensors) { to_save_ = std::move(tensors); }
void FunctionCtx::mark_non_differentiable(const tensor_list& outputs) {
  non_differentiable_.insert(non_differentiable_.end(), outputs.begin(), outputs.end());
}
void FunctionCtx::mark_dirty(const tensor_list& inputs) { dirty_.insert(dirty_.end(), inputs.begin(), inputs.end()); }

tensor_list FunctionCtx::saved_tensors() const {
  if (saved_.empty()) return to_save_;  // before wrap_outputs ran (inside forward)
  auto node = node_.lock();
  tensor_list out;
  for (auto& s : saved_) out.push_back(s.unpack(node.get()));
  return out;
}

namespace {
bool contains(const tensor_list& v, const Tensor& t) {
  for (auto& x : v)
    if (x.defined() && x.is_same(t)) return true;
  return false;
}
}  // namespace

tensor_list wrap_outputs(const std::string& name, const tensor_list& inputs, tensor_list outputs,
                         std::shared_ptr<FunctionCtx> ctx,
                         std::function<tensor_list(FunctionCtx&, tensor_list)> backward_fn) {
  bool record = GradMode::is_enabled();
  bool any = false;
  for (auto& t : inputs) any = any || needs_grad(t);
  for (auto& t : ctx->dirty_) {
    KINDLE_CHECK(contains(inputs, t), name, ": mark_dirty only accepts input tensors");
    if (record) check_inplace(t, name.c_str());
  }
  if (!record || !any) {
    for (auto& s : ctx->to_save_) ctx->saved_.emplace_back(s, false);
    ctx->to_save_.clear();
    return outputs;
  }
  auto node = std::make_shared<CustomFunctionNode>(name, ctx, std::move(backward_fn));
  for (auto& t : inputs) node->next_edges.push_back(gradient_edge(t));
  for (auto& out : outputs) {
    if (!out.defined()) {
      node->output_meta.push_back(OutputMeta{});
      continue;
    }
    if (contains(ctx->non_differentiable_, out) || !is_differentiable_type(out.dtype())) {
      node->add_output(out);
      continue;
    }
    if (contains(ctx->dirty_, out)) {
      rebase_history(out, node);
      continue;
    }
    if (contains(inputs, out)) out = make_view(out, out.sizes(), out.strides(), out.storage_offset());
    set_output(out, node);
  }
  for (auto& s : ctx->to_save_) ctx->saved_.emplace_back(s, contains(outputs, s));
  // The saved variables hold what backward needs; to_save_ holding an output would make a
  // cycle (node -> ctx -> output -> grad_fn = node) that reference counting never frees.
  ctx->to_save_.clear();
  ctx->node_ = node;
  return outputs;
}

}  // namespace kindle::autograd
