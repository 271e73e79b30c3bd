// Autograd state of a tensor and the pieces the generated op wrappers use to record the graph.
#pragma once
#include <string>

#include "kindle/autograd.h"

namespace kindle::autograd {

struct AutogradMeta : AutogradMetaInterface {
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  std::weak_ptr<Node> grad_accumulator;  // weak: the accumulator holds the tensor
  uint32_t output_nr = 0;
  // retain_grad() on a non-leaf: the hook on grad_fn writes here (shared, not a pointer to this
  // meta, so that a hook outliving the tensor writes nowhere harmful).
  std::shared_ptr<Tensor> retained_grad;
  std::vector<std::pair<uint64_t, TensorHook>> leaf_hooks;
  std::vector<std::pair<uint64_t, std::function<void(const Tensor&)>>> post_accumulate_hooks;
  // A view made while grad mode was on: its base (the tensor owning the memory, never itself a
  // view) and the version at which grad_fn was last set. An in-place op on the base or on another
  // view bumps the shared version; grad_fn is then regenerated as a strided view of the base.
  Tensor base;
  uint32_t view_version = 0;
  // A view of a tensor that requires grad, made under no_grad: modifying it in place with grad
  // mode on is ambiguous and raises (as in PyTorch).
  bool no_grad_view = false;
  std::string name;
  // Forward-mode AD: the tangent, valid while the dual level numbered fw_serial is entered
  // (forward_ad.cpp keeps a registry of the metas holding one, to drop them at the level's exit).
  Tensor fw_grad;
  uint64_t fw_serial = 0;
  bool fw_registered = false;
  ~AutogradMeta() override;
};

AutogradMeta* get_meta(const Tensor& t);            // null if the tensor has none
AutogradMeta& materialize_meta(const Tensor& t);

inline bool needs_grad(const Tensor& t) { return t.defined() && t.impl()->requires_grad; }
inline bool needs_grad_any(const Tensor& t) { return needs_grad(t); }
inline bool needs_grad_any(const std::optional<Tensor>& t) { return t && needs_grad(*t); }
inline bool needs_grad_any(TensorList ts) {
  for (const Tensor& t : ts)
    if (needs_grad(t)) return true;
  return false;
}
inline bool needs_grad_any(const std::vector<std::optional<Tensor>>&) { return false; }
template <typename... Ts>
inline bool any_requires_grad(const Ts&... ts) {
  return (needs_grad_any(ts) || ...);
}

bool is_differentiable_type(DType dt);
// Raises NotImplementedError for an op whose derivative formulas are not written for complex
// numbers when one of its tensor arguments is complex (never a silently wrong gradient).
void check_complex_grad(const char* op, std::initializer_list<const Tensor*> args);
void add_edge(std::vector<Edge>& edges, const Tensor& t);
void add_edge(std::vector<Edge>& edges, const std::optional<Tensor>& t);
void add_edges(std::vector<Edge>& edges, TensorList ts);

// Records `t` as output `output_nr` of `node` if its dtype can carry a gradient.
void set_output(const Tensor& t, const std::shared_ptr<Node>& node);
// Marks `out` (which shares memory with `self`) as a view, for in-place correctness later.
void set_view_of(const Tensor& out, const Tensor& self);
void mark_no_grad_view(const Tensor& out, const Tensor& self);
// In-place ops: errors for leaves that require grad (and their views).
void check_inplace(const Tensor& self, const char* op);
// After an in-place op recorded as `node`: makes `self` the node's output. For a view, the base's
// history becomes a CopySlices node and the view's grad_fn a strided view of the base.
void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node);

}  // namespace kindle::autograd
