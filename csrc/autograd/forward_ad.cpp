// Forward-mode AD: dual levels, tangents on tensors, and the helpers of the generated wrappers.
#include "autograd/forward_ad.h"

#include <mutex>
#include <unordered_set>

#include "kindle/operators.h"

namespace kindle::autograd {

namespace forward_ad {
namespace detail {
std::atomic<bool> level_entered{false};
namespace {
thread_local bool suspend_flag = false;
}  // namespace
bool suspended() { return suspend_flag; }
bool set_suspended(bool v) {
  bool prev = suspend_flag;
  suspend_flag = v;
  return prev;
}
}  // namespace detail

namespace {
// The entered level: its number as the user sees it (always 0: one level at a time, as in
// PyTorch) and a serial that tells tangents of an exited level from those of the current one.
std::mutex registry_mutex;
// (serial is read on every op with a dual argument: atomic, not under the registry's lock)
std::atomic<uint64_t> serial{0};  // of the entered level; 0: none
uint64_t last_serial = 0;
std::unordered_set<AutogradMeta*> registry;  // metas holding a tangent of the entered level

uint64_t entered_serial() { return serial.load(std::memory_order_relaxed); }

void check_level(int64_t level, const char* what) {
  KINDLE_CHECK(level == -1 || level == 0, what, ": invalid forward AD level ", level,
               " (only level 0 exists while a dual level is entered)");
}
}  // namespace

Suspend::Suspend() : prev_(detail::suspend_flag) { detail::suspend_flag = true; }
Suspend::~Suspend() { detail::suspend_flag = prev_; }

int64_t enter_dual_level() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  KINDLE_CHECK(serial == 0, "Nested forward mode AD is not supported at the moment");
  serial = ++last_serial;
  detail::level_entered.store(true, std::memory_order_relaxed);
  return 0;
}

void exit_dual_level(int64_t level) {
  tensor_list dropped;  // freed after the lock: a tangent's destruction may unregister a meta
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    KINDLE_CHECK(serial != 0 && (level == -1 || level == 0),
                 "Trying to exit a forward AD level that was not the last one that was created. This is not "
                 "supported.");
    for (AutogradMeta* m : registry) {
      dropped.push_back(std::move(m->fw_grad));
      m->fw_grad = Tensor();
      m->fw_registered = false;
    }
    registry.clear();
    serial = 0;
    detail::level_entered.store(false, std::memory_order_relaxed);
  }
}

int64_t current_level() { return entered_serial() ? 0 : -1; }

Tensor tangent(const Tensor& t) {
  if (!t.defined()) return Tensor();
  AutogradMeta* m = get_meta(t);
  if (!m || !m->fw_grad.defined()) return Tensor();
  return m->fw_serial == entered_serial() ? m->fw_grad : Tensor();
}

bool has_tangent(const Tensor& t) {
  if (!t.defined()) return false;
  AutogradMeta* m = get_meta(t);
  return m && m->fw_grad.defined() && m->fw_serial == entered_serial();
}

tensor_list tangents(TensorList ts) {
  tensor_list out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(tangent(t));
  return out;
}

Tensor tangent_or_zeros(const Tensor& t, const Tensor& tan) {
  if (tan.defined() || !t.defined()) return tan;
  return zeros_like(t);
}

tensor_list tangents_or_zeros(TensorList ts, const tensor_list& tans) {
  tensor_list out;
  out.reserve(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) out.push_back(tangent_or_zeros(ts[i], i < tans.size() ? tans[i] : Tensor()));
  return out;
}

Tensor add_terms(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a + b;
}

namespace {
void attach(const Tensor& t, const Tensor& tan) {
  AutogradMeta& m = materialize_meta(t);
  Tensor old;  // released after the lock: its meta may unregister itself
  std::lock_guard<std::mutex> lock(registry_mutex);
  KINDLE_CHECK(serial != 0, "forward AD: no dual level is entered");
  old = std::move(m.fw_grad);
  m.fw_grad = tan;
  m.fw_serial = serial;
  if (!m.fw_registered) {
    registry.insert(&m);
    m.fw_registered = true;
  }
}

bool shares_memory(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.impl()->storage().get() == b.impl()->storage().get();
}

bool same_layout(const Tensor& a, const Tensor& b) {
  for (int64_t d = 0; d < a.dim(); ++d)
    if (a.sizes()[d] > 1 && a.strides()[d] != b.strides()[d]) return false;
  return true;
}

bool overlapping(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes()[d] > 1 && t.strides()[d] == 0) return true;
  return false;
}

// A tangent laid out as its primal (dense primals only: an expanded one keeps its tangent as
// the formula made it), so that a view op applies to both alike.
Tensor in_layout_of(const Tensor& primal, const Tensor& t) {
  if (same_layout(primal, t) || overlapping(primal) || !primal.defined()) return t;
  int64_t span = 1;
  for (int64_t d = 0; d < primal.dim(); ++d) span += (primal.sizes()[d] - 1) * primal.strides()[d];
  if (primal.numel() == 0 || span != primal.numel()) return t.contiguous();  // not dense: no layout to copy
  Tensor out = empty_strided(primal.sizes(), primal.strides(), t.dtype());
  out.copy_(t);
  return out;
}
}  // namespace

void set_tangent(const Tensor& t, const Tensor& tan) { attach(t, tan); }

void notify_saved_output(const Tensor& out) {
  AutogradMeta* m = get_meta(out);
  if (!m || !m->grad_fn) return;
  Tensor tan = tangent(out);
  if (tan.defined()) m->grad_fn->on_output_tangent(m->output_nr, tan);
}

void set_output_tangent(const Tensor& out, Tensor t, const tensor_list& input_tangents, bool is_view) {
  if (!t.defined() || !out.defined() || !is_differentiable_type(out.dtype())) return;
  if (t.is_complex() && !out.is_complex()) t = real(t);
  if (t.dtype() != out.dtype()) t = t.to(out.dtype());
  if (t.sizes() != out.sizes()) {
    KINDLE_CHECK(t.numel() <= out.numel(), "forward AD: internal error: a tangent of shape ", t.sizes(),
                 " for an output of shape ", out.sizes());
    t = t.expand(out.sizes()).contiguous();
  }
  if (!is_view) {
    for (const Tensor& it : input_tangents)
      if (shares_memory(t, it)) {
        t = t.clone();
        break;
      }
    t = in_layout_of(out, t);
  }
  attach(out, t);
  notify_saved_output(out);
}

void update_inplace_tangent(const Tensor& self, const Tensor& t) {
  if (!t.defined() || !is_differentiable_type(self.dtype())) return;
  Tensor cur = tangent(self);
  if (cur.defined()) {
    if (!overlapping(cur)) {
      cur.copy_(t);
      notify_saved_output(self);
      return;
    }
    // An expanded tangent (of an expanded view): write one copy of each repeated element.
    Tensor dst = cur, src = t.expand(self.sizes());
    for (int64_t d = 0; d < cur.dim(); ++d)
      if (cur.sizes()[d] > 1 && cur.strides()[d] == 0) {
        dst = dst.narrow(d, 0, 1);
        src = src.narrow(d, 0, 1);
      }
    dst.copy_(src);
    notify_saved_output(self);
    return;
  }
  // A view of a base without a tangent: the base gets a zero tangent of which the view's is
  // the matching part, so that the base sees the change (as in PyTorch).
  AutogradMeta* m = get_meta(self);
  if (m && m->base.defined() && m->base.is_contiguous() && !has_tangent(m->base)) {
    const Tensor& base = m->base;
    Tensor bt = zeros_like(base);
    attach(base, bt);
    Tensor vt = bt.as_strided(self.sizes(), self.strides(), self.storage_offset() - base.storage_offset());
    vt.copy_(t);
    attach(self, vt);
    notify_saved_output(self);
    return;
  }
  Tensor own = t.sizes() == self.sizes() ? t.clone() : t.expand(self.sizes()).contiguous();
  attach(self, in_layout_of(self, own.dtype() == self.dtype() ? own : own.to(self.dtype())));
  notify_saved_output(self);
}

void check_real(const char* op, const tensor_list& tans) {
  for (const Tensor& t : tans)
    KINDLE_CHECK_NOT_IMPLEMENTED(!t.defined() || !t.is_complex(), "the forward-mode derivative of '", op,
                                 "' is not implemented for complex tensors");
}

tensor_list transposed_jvp(const char* op, const tensor_list& inputs, const tensor_list& input_tangents,
                           const std::function<tensor_list(const tensor_list&)>& f) {
  for (size_t i = 0; i < inputs.size(); ++i)
    KINDLE_CHECK_NOT_IMPLEMENTED(!inputs[i].defined() || !inputs[i].is_complex(), "the forward-mode derivative of '",
                                 op, "' is not implemented for complex tensors");
  Suspend s;
  EnableGradGuard g;
  tensor_list leaves(inputs.size()), wrt, dirs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    leaves[i] = inputs[i].detach();
    // (an empty input contributes nothing: skipping it avoids 0/0 in formulas that divide by the
    // result, such as norm's)
    if (input_tangents[i].defined() && is_differentiable_type(inputs[i].dtype()) && inputs[i].numel() > 0) {
      leaves[i].requires_grad_(true);
      wrt.push_back(leaves[i]);
      dirs.push_back(input_tangents[i]);
    }
  }
  tensor_list outs = f(leaves);
  tensor_list roots, us;
  std::vector<size_t> root_of;
  for (size_t j = 0; j < outs.size(); ++j) {
    if (!outs[j].defined() || !outs[j].requires_grad()) continue;
    Tensor u = zeros_like(outs[j]);
    u.requires_grad_(true);
    roots.push_back(outs[j]);
    us.push_back(u);
    root_of.push_back(j);
  }
  tensor_list result(outs.size());
  if (roots.empty()) {  // no output depends on an input with a tangent (or those are empty)
    for (size_t j = 0; j < outs.size(); ++j)
      if (outs[j].defined() && is_differentiable_type(outs[j].dtype())) result[j] = zeros_like(outs[j]);
    return result;
  }
  tensor_list gs = grad(roots, wrt, us, true, true, true);
  Tensor dot;
  for (size_t k = 0; k < gs.size(); ++k)
    if (gs[k].defined()) dot = add_terms(dot, (gs[k] * dirs[k].to(gs[k].dtype())).sum());
  tensor_list jt;
  // (the backward formulas are written with ops, so <J^T u, t> depends on u unless J^T's formula
  // bypasses them: never answer zeros for that)
  KINDLE_CHECK_NOT_IMPLEMENTED(!dot.defined() || dot.requires_grad(), "the forward-mode derivative of '", op,
                               "' is not implemented");
  if (dot.defined()) jt = grad({dot}, us, {}, false, false, true);
  for (size_t r = 0; r < roots.size(); ++r) {
    Tensor v = r < jt.size() && jt[r].defined() ? jt[r] : zeros_like(roots[r]);
    result[root_of[r]] = v.detach();
  }
  return result;
}

}  // namespace forward_ad

AutogradMeta::~AutogradMeta() {
  if (!fw_registered) return;
  std::lock_guard<std::mutex> lock(forward_ad::registry_mutex);
  forward_ad::registry.erase(this);
}

namespace forward_ad {

Tensor make_dual(const Tensor& primal, const Tensor& tan, int64_t level) {
  KINDLE_CHECK(entered_serial() != 0,
               "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() "
               "first.");
  check_level(level, "make_dual");
  KINDLE_CHECK_VALUE(primal.is_floating_point() || primal.is_complex(),
                     "Expected primal to be floating point or complex, but got: ", primal.dtype());
  KINDLE_CHECK_VALUE(tan.is_floating_point() || tan.is_complex(),
                     "Expected tangent to be floating point or complex, but got: ", tan.dtype());
  KINDLE_CHECK(!has_tangent(primal), "Making a dual Tensor based on a Tensor that already has a forward gradient "
               "at the same level 0 is not supported.");
  KINDLE_CHECK(tan.sizes() == primal.sizes(), "Trying to set a forward gradient that has a different size than "
               "that of the original Tensor, this is not supported. Tensor is of size ", primal.sizes(),
               " while the given forward gradient is of size ", tan.sizes(), ".");
  Tensor dual;
  {
    Suspend s;
    dual = primal.view(primal.sizes());
  }
  attach(dual, in_layout_of(dual, tan));
  return dual;
}

bool is_dual(const Tensor& t) { return active() && has_tangent(t); }

std::pair<Tensor, Tensor> unpack_dual(const Tensor& t, int64_t level) {
  if (entered_serial() == 0 || (level != -1 && level != 0)) return {t, Tensor()};
  Tensor tan = tangent(t);
  if (!tan.defined()) return {t, Tensor()};
  Suspend s;
  return {t.view(t.sizes()), tan};
}

}  // namespace forward_ad
}  // namespace kindle::autograd
