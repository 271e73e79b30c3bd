// Forward-mode AD (DESIGN.md, Autograd): a dual tensor carries a tangent beside its value, and
// every differentiable op propagates tangents as it runs. The generated op wrappers test
// `active()` (one relaxed load while no dual level is entered) and, when an argument carries a
// tangent, compute the primal as usual and then the output tangents with the op's `forward`
// formula from ops.yaml (written, derived element-wise or linear, or by transposing the backward
// formula: see transposed_jvp).
#pragma once
#include <atomic>
#include <functional>
#include <optional>

#include "autograd/variable.h"

namespace kindle::autograd::forward_ad {

namespace detail {
extern std::atomic<bool> level_entered;
bool suspended();
bool set_suspended(bool suspended);  // returns the previous state (for the Python front end)
}  // namespace detail

// True while a dual level is entered and this thread is not computing tangents.
inline bool active() { return detail::level_entered.load(std::memory_order_relaxed) && !detail::suspended(); }

// Inside a tangent computation: the ops it runs see no tangents (only one level exists).
class Suspend {
 public:
  Suspend();
  ~Suspend();
  Suspend(const Suspend&) = delete;
  Suspend& operator=(const Suspend&) = delete;

 private:
  bool prev_;
};

Tensor tangent(const Tensor& t);  // undefined without a tangent at the entered level
inline Tensor tangent(const std::optional<Tensor>& t) { return t ? tangent(*t) : Tensor(); }
tensor_list tangents(TensorList ts);
// The tangent, or zeros shaped like the primal (formulas that are not element-wise use these).
Tensor tangent_or_zeros(const Tensor& t, const Tensor& tangent);
tensor_list tangents_or_zeros(TensorList ts, const tensor_list& tangents);

bool has_tangent(const Tensor& t);
// Attaches `tangent` to `t` as it is (the generated code uses set_output_tangent).
void set_tangent(const Tensor& t, const Tensor& tangent);
// Tells the node that recorded `out` (if any) its tangent, for the copy it saved.
void notify_saved_output(const Tensor& out);
inline bool has_tangent_any(const Tensor& t) { return has_tangent(t); }
inline bool has_tangent_any(const std::optional<Tensor>& t) { return t && has_tangent(*t); }
inline bool has_tangent_any(TensorList ts) {
  for (const Tensor& t : ts)
    if (has_tangent(t)) return true;
  return false;
}
template <typename... Ts>
bool any_tangent(const Ts&... ts) {
  return (has_tangent_any(ts) || ...);
}

// One input's contribution to an element-wise op's tangent, from its backward formula
// `backward(grad)`: for real numbers the Jacobian is diagonal, so J t = backward(t); for complex
// ones backward gives conj(df/dz) * grad, so the contribution is conj(backward(conj(t))).
template <typename F>
Tensor element_wise(const Tensor& t, F&& backward) {
  if (!t.defined()) return Tensor();
  Tensor r = backward(t.is_complex() ? t.conj() : t);
  return r.is_complex() ? r.conj() : r;
}
Tensor add_terms(const Tensor& a, const Tensor& b);
// f(t), or undefined when t is (a term of a formula that skips inputs without a tangent).
template <typename F>
Tensor term(const Tensor& t, F&& f) {
  return t.defined() ? Tensor(f(t)) : Tensor();
}
template <typename... Ts>
Tensor sum_terms(const Ts&... ts) {
  Tensor acc;
  ((acc = add_terms(acc, ts)), ...);
  return acc;
}

// Attaches `t` as the tangent of the op's output `out` (the real part for a real output, cast to
// its dtype, broadcast to its shape). Unless the op is a view, an output tangent never shares
// memory with the inputs' tangents (an in-place op on the output would change them).
void set_output_tangent(const Tensor& out, Tensor t, const tensor_list& input_tangents, bool is_view);
// After an in-place op on `self`: its tangent becomes `t`, updated in place where it had one (so
// that views of it follow); a view's base gets a tangent whose part is this one.
void update_inplace_tangent(const Tensor& self, const Tensor& t);

// The tangents of `f`'s outputs at `inputs` in the directions `input_tangents`, from reverse
// mode: J t = d/du <J^T u, t>. Used for the ops whose forward formula is not written; it costs
// about three runs of the op, and the tangents it gives are not themselves differentiable.
tensor_list transposed_jvp(const char* op, const tensor_list& inputs, const tensor_list& input_tangents,
                           const std::function<tensor_list(const tensor_list&)>& f);

// Refuses complex arguments for an op whose tangent formula is written for real numbers.
void check_real(const char* op, const tensor_list& tangents);

}  // namespace kindle::autograd::forward_ad
