// Tensors saved for backward, and the hooks that may pack them elsewhere
// (torch.autograd.graph.saved_tensors_hooks).
#include <sstream>

#include "autograd/forward_ad.h"
#include "autograd/variable.h"

namespace kindle::autograd {

namespace {
struct HooksState {
  std::vector<SavedTensorHooksMaker> stack;
  std::string disabled;  // non-empty: installing hooks raises this
};
thread_local HooksState hooks_state;

}  // namespace

void push_saved_tensors_hooks(SavedTensorHooksMaker maker) {
  KINDLE_CHECK(hooks_state.disabled.empty(), hooks_state.disabled);
  KINDLE_CHECK(maker, "saved_tensors_hooks: the hooks are empty");
  hooks_state.stack.push_back(std::move(maker));
}

void pop_saved_tensors_hooks() {
  KINDLE_CHECK(!hooks_state.stack.empty(), "saved_tensors_hooks: no hooks are installed on this thread to remove");
  hooks_state.stack.pop_back();
}

std::string set_saved_tensors_hooks_disabled(std::string message) {
  // torch refuses to disable while hooks are installed, with the same message
  KINDLE_CHECK(message.empty() || hooks_state.stack.empty(), message);
  return std::exchange(hooks_state.disabled, std::move(message));
}

SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  KINDLE_CHECK(!t.is_inference() || inference_mode_enabled(), "Inference tensors cannot be saved for backward. Please "
               "do not use Tensors created in inference mode in computation tracked by autograd. To work around this, "
               "you can make a clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead "
               "of `torch.inference_mode()`.");
  defined_ = true;
  version_ = t.version();
  requires_grad_ = t.requires_grad();
  is_output_ = is_output && requires_grad_;
  if (is_output_) {
    AutogradMeta* m = get_meta(t);
    output_nr_ = m ? m->output_nr : 0;
    if (m) weak_fn_ = m->grad_fn;
  }
  auto& st = hooks_state;
  if (!st.stack.empty()) {
    pack_with(st.stack.back()(), t);
    return;
  }
  // An output is kept as data, not as the tensor object: its grad_fn would be the saving node itself.
  data_ = is_output_ ? make_view(t, t.sizes(), t.strides(), t.storage_offset()) : t;
}

// Hands `t` to the hooks and keeps only them. An output goes as a plain alias of its data (its
// grad_fn is the saving node, which the packed value would keep alive: a cycle); a saved input's
// history is kept here so that the unpacked tensor takes part in double backward.
void SavedVariable::pack_with(std::unique_ptr<SavedTensorHooks> hooks, const Tensor& t) {
  KINDLE_CHECK(hooks, "saved_tensors_hooks: the hook maker returned no hooks");
  storage_uid_ = t.impl()->storage()->uid();
  if (!is_output_ && requires_grad_) edge_ = gradient_edge(t);
  Tensor arg = is_output_ || requires_grad_ ? make_view(t, t.sizes(), t.strides(), t.storage_offset()) : t;
  {
    NoGradGuard no_grad;  // hooks run as torch's: their own ops save nothing (a hook that turns
    hooks->pack(arg);     // grad mode on, as checkpointing's unpack does, gets the hooks it installs)
  }
  KINDLE_CHECK(t.version() == version_, "A saved tensor pack hook is modifying its input in place. Tensors provided "
               "as input to pack hook cannot be modified by in-place operations as this can lead to unexpected "
               "side-effects. Please open an issue if you need to perform in-place operations on the input to a "
               "pack hook.");
  hooks_ = std::move(hooks);
  data_ = Tensor();
}

void SavedVariable::register_hooks(std::unique_ptr<SavedTensorHooks> hooks) {
  KINDLE_CHECK(defined_ && !released_, "Trying to backward through the graph a second time (or directly access saved "
               "tensors after they have already been freed). Saved intermediate values of the graph are freed when "
               "you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through "
               "the graph a second time or if you need to access saved tensors after calling backward.");
  KINDLE_CHECK(!hooks_, "Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one "
               "pair of hooks is allowed at a time.");
  Tensor t = data_;
  pack_with(std::move(hooks), t);
}

void SavedVariable::reset() {
  data_ = Tensor();
  hooks_.reset();
  edge_ = Edge();
  released_ = true;
}

Tensor SavedVariable::unpack(const Node* owner) const {
  if (!defined_) return {};
  std::string name = owner ? owner->name() : std::string("a backward function");
  KINDLE_CHECK(!released_, "Trying to backward through the graph a second time (or directly access saved tensors "
               "after they have already been freed). Saved intermediate values of the graph are freed when you "
               "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through "
               "the graph a second time or if you need to access saved tensors after calling backward. (The "
               "saved tensor belonged to ", name, ".)");
  Tensor data = data_;
  if (hooks_) {
    {
      NoGradGuard no_grad;
      data = hooks_->unpack();
    }
    KINDLE_CHECK(data.defined(), "saved_tensors_hooks: the unpack hook of a tensor saved by ", name,
                 " returned an undefined tensor");
  }
  // With hooks the version can only be checked when the hooks hand back the saved storage itself
  // (a copy holds the value as it was when saved, which is what backward needs).
  const bool same_storage = !hooks_ || data.impl()->storage()->uid() == storage_uid_;
  if (same_storage && data.version() != version_) {
    std::ostringstream os;
    os << "one of the variables needed for gradient computation has been modified by an inplace operation: "
       << "the tensor of shape " << data.sizes() << " and dtype " << data.dtype() << " saved by " << name
       << " is at version " << data.version() << "; expected version " << version_
       << " instead (the version counts in-place changes). Hint: make a copy with .clone() before modifying it "
       << "in place, or move the in-place operation after backward.";
    throw Error(os.str());
  }
  if (!is_output_) {
    if (!hooks_ || !edge_.valid() || !GradMode::is_enabled()) return data;
    Tensor v = make_view(data, data.sizes(), data.strides(), data.storage_offset());
    set_history(v, edge_.fn, edge_.input_nr);
    return v;
  }
  auto fn = weak_fn_.lock();
  if (!fn || !GradMode::is_enabled()) return data;
  Tensor t = make_view(data, data.sizes(), data.strides(), data.storage_offset());
  set_history(t, fn, output_nr_);
  if (!hooks_ && forward_ad::detail::level_entered.load(std::memory_order_relaxed)) {
    Tensor tan = forward_ad::tangent(data);
    if (tan.defined()) forward_ad::set_tangent(t, tan);
  }
  return t;
}

void SavedVariable::set_tangent(const Tensor& tangent) {
  if (is_output_ && data_.defined() && tangent.defined()) forward_ad::set_tangent(data_, tangent);
}

}  // namespace kindle::autograd
