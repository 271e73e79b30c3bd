// A tensor's autograd state: grad, grad_fn, leaves' accumulators, views, hooks, saved tensors.
#include "autograd/variable.h"

#include <atomic>
#include <sstream>

#include "autograd/forward_ad.h"
#include "autograd/functions.h"
#include "kindle/operators.h"

namespace kindle::autograd {

namespace {
thread_local bool grad_enabled = true;
std::atomic<uint64_t> next_sequence_nr{0};
std::atomic<uint64_t> next_hook_id{1};
std::atomic<bool> anomaly_enabled{false};
std::atomic<bool> anomaly_check_nan{true};
std::function<std::string()> stack_provider;
}  // namespace

bool GradMode::is_enabled() { return grad_enabled && !inference_mode_enabled(); }
bool GradMode::flag() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }

bool AnomalyMode::is_enabled() { return anomaly_enabled.load(std::memory_order_relaxed); }
bool AnomalyMode::check_nan() { return anomaly_check_nan.load(std::memory_order_relaxed); }
void AnomalyMode::set_enabled(bool enabled, bool check_nan) {
  anomaly_enabled = enabled;
  anomaly_check_nan = check_nan;
}
void AnomalyMode::set_stack_provider(std::function<std::string()> provider) { stack_provider = std::move(provider); }
std::string AnomalyMode::current_stack() { return stack_provider ? stack_provider() : std::string(); }

Node::Node() : sequence_nr(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {
  if (AnomalyMode::is_enabled()) anomaly_trace = AnomalyMode::current_stack();
}
// Note [Iterative graph destruction]: a chain of nodes (`total = total + loss` over many steps)
// would otherwise be freed recursively, one stack frame per node, and overflow the stack at about
// 10^5 nodes. A dying node hands the predecessors it alone owns to a per-thread list; the
// outermost destructor frees that list in a loop, so the depth stays constant.
Node::~Node() {
  thread_local std::vector<std::shared_ptr<Node>> pending;
  thread_local bool draining = false;
  for (Edge& e : next_edges)
    if (e.fn && e.fn.use_count() == 1) pending.push_back(std::move(e.fn));
  if (draining) return;
  draining = true;
  while (!pending.empty()) {
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    n.reset();  // its destructor appends its own predecessors
  }
  draining = false;
}

uint32_t Node::add_output(const Tensor& t) {
  output_meta.push_back(OutputMeta{DimVector(t.sizes()), t.dtype(), t.device()});
  return uint32_t(output_meta.size() - 1);
}

AutogradMeta* get_meta(const Tensor& t) { return static_cast<AutogradMeta*>(t.impl()->autograd_meta.get()); }

AutogradMeta& materialize_meta(const Tensor& t) {
  auto& m = t.impl()->autograd_meta;
  if (!m) m = std::make_unique<AutogradMeta>();
  return *static_cast<AutogradMeta*>(m.get());
}

bool is_differentiable_type(DType dt) { return is_floating_point(dt) || is_complex(dt); }

void check_complex_grad(const char* op, std::initializer_list<const Tensor*> args) {
  for (const Tensor* t : args)
    KINDLE_CHECK_NOT_IMPLEMENTED(!t->defined() || !is_complex(t->dtype()), "the derivative for '", op,
                                 "' is not implemented for complex tensors");
}

namespace {

// A view whose memory was modified in place since grad_fn was set gets a fresh grad_fn: a
// strided view of its base's current history.
void refresh_view_grad_fn(const Tensor& t, AutogradMeta& m) {
  if (!m.base.defined() || t.version() == m.view_version) return;
  m.view_version = t.version();
  if (!m.base.requires_grad()) return;
  auto fn = std::make_shared<AsStridedBackward>(m.base, t);
  fn->next_edges.push_back(gradient_edge(m.base));
  fn->add_output(t);
  m.grad_fn = std::move(fn);
  m.output_nr = 0;
  t.impl()->requires_grad = true;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  AutogradMeta& m = materialize_meta(t);
  if (auto acc = m.grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(t);
  acc->add_output(t);
  m.grad_accumulator = acc;
  return acc;
}

}  // namespace

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.impl()->requires_grad) return {};
  AutogradMeta* m = get_meta(t);
  if (m) {
    refresh_view_grad_fn(t, *m);
    if (m->grad_fn) return {m->grad_fn, m->output_nr};
  }
  return {grad_accumulator(t), 0};
}

void add_edge(std::vector<Edge>& edges, const Tensor& t) { edges.push_back(gradient_edge(t)); }
void add_edge(std::vector<Edge>& edges, const std::optional<Tensor>& t) {
  edges.push_back(t ? gradient_edge(*t) : Edge{});
}
void add_edges(std::vector<Edge>& edges, TensorList ts) {
  for (const Tensor& t : ts) edges.push_back(gradient_edge(t));
}

std::vector<Edge> collect_edges(std::initializer_list<const Tensor*> inputs) {
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Tensor* t : inputs) edges.push_back(gradient_edge(*t));
  return edges;
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr) {
  AutogradMeta& m = materialize_meta(t);
  m.grad_fn = fn;
  m.output_nr = output_nr;
  if (m.base.defined()) m.view_version = t.version();
  t.impl()->requires_grad = true;
}

void set_output(const Tensor& t, const std::shared_ptr<Node>& node) {
  uint32_t nr = node->add_output(t);
  if (is_differentiable_type(t.dtype())) set_history(t, node, nr);
}

void set_view_of(const Tensor& out, const Tensor& self) {
  if (out.is_same(self) || out.impl()->storage().get() != self.impl()->storage().get()) return;
  AutogradMeta& m = materialize_meta(out);
  AutogradMeta* sm = get_meta(self);
  m.base = sm && sm->base.defined() ? sm->base : self;
  m.view_version = out.version();
}

void mark_no_grad_view(const Tensor& out, const Tensor& self) {
  if (out.is_same(self) || out.impl()->storage().get() != self.impl()->storage().get()) return;
  materialize_meta(out).no_grad_view = true;
}

void check_inplace(const Tensor& self, const char* op) {
  KINDLE_CHECK(!self.is_inference() || inference_mode_enabled(), op, ": Inplace update to inference tensor outside "
               "InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update."
               "See https://github.com/pytorch/rfcs/pull/17 for more details.");
  if (!GradMode::is_enabled()) return;
  AutogradMeta* m = get_meta(self);
  KINDLE_CHECK(!(m && m->no_grad_view), op, ": a view was created in no_grad mode and is being modified inplace with "
               "grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can "
               "clarify your code by moving both the view and the inplace either both inside the no_grad block (if "
               "you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).");
  if (!self.impl()->requires_grad) return;
  if (m && m->base.defined()) {
    const Tensor& b = m->base;
    AutogradMeta* bm = get_meta(b);
    KINDLE_CHECK(!(b.impl()->requires_grad && !(bm && bm->grad_fn)), op,
                 ": a view of a leaf Variable that requires grad is being used in an in-place operation.");
    return;
  }
  KINDLE_CHECK(m && m->grad_fn, op, ": a leaf Variable that requires grad is being used in an in-place operation.");
}

namespace retaining {
// retain_grad's hook (id 0): accumulates the gradient into the box that .grad reads.
std::function<Tensor(const Tensor&)> retain_hook(std::shared_ptr<Tensor> box) {
  return [box = std::move(box)](const Tensor& g) {
    if (!box->defined()) *box = g.detach().clone();
    else *box = *box + g.detach();
    return Tensor();
  };
}

// A tensor that retains its grad keeps doing so through an in-place op, as torch's: the hook moves
// to the new grad_fn, so that .grad is the gradient of the tensor's new value.
void move_retain_hook(const Tensor& self, AutogradMeta& m, const std::shared_ptr<Node>& old_fn, uint32_t old_nr) {
  if (!m.retained_grad) return;
  if (old_fn) std::erase_if(old_fn->tensor_hooks, [&](const Node::OutputHook& h) { return h.id == 0 && h.output_nr == old_nr; });
  refresh_view_grad_fn(self, m);
  if (m.grad_fn) m.grad_fn->tensor_hooks.push_back({m.output_nr, 0, retain_hook(m.retained_grad)});
}
}  // namespace retaining

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node) {
  AutogradMeta& m = materialize_meta(self);
  const std::shared_ptr<Node> old_fn = m.grad_fn;
  const uint32_t old_nr = m.output_nr;
  if (!m.base.defined()) {
    set_output(self, node);
    retaining::move_retain_hook(self, m, old_fn, old_nr);
    return;
  }
  // An in-place op on a view: the base's history becomes "the old base with this region
  // replaced by the op's result", and the view is regenerated from the base.
  node->add_output(self);
  const Tensor& base = m.base;
  auto copy = std::make_shared<CopySlices>(base, self, node);
  copy->next_edges.push_back(gradient_edge(base));
  for (size_t i = 1; i < node->next_edges.size(); ++i) copy->next_edges.push_back(node->next_edges[i]);
  set_output(base, copy);
  m.view_version = self.version() - 1;  // forces refresh_view_grad_fn on next use
  refresh_view_grad_fn(self, m);
  retaining::move_retain_hook(self, m, old_fn, old_nr);
}

}  // namespace kindle::autograd

// ---- Tensor's autograd methods ----
namespace kindle {
using namespace autograd;

Tensor Tensor::grad() const {
  AutogradMeta* m = get_meta(*this);
  if (!m) return {};
  if (m->retained_grad) return *m->retained_grad;
  return m->grad;
}

void Tensor::set_grad(const Tensor& g) const {
  if (g.defined()) {
    KINDLE_CHECK(g.dtype() == dtype(), "assigned grad has data of a different type: expected ", dtype(), ", got ",
                 g.dtype());
    KINDLE_CHECK(g.sizes() == sizes(), "assigned grad has data of a different size: expected ", sizes(), ", got ",
                 g.sizes());
  }
  AutogradMeta& m = materialize_meta(*this);
  if (m.retained_grad) *m.retained_grad = g;
  else m.grad = g;
}

std::shared_ptr<Node> Tensor::grad_fn() const {
  AutogradMeta* m = get_meta(*this);
  if (!m) return nullptr;
  refresh_view_grad_fn(*this, *m);
  return m->grad_fn;
}

bool Tensor::is_leaf() const { return grad_fn() == nullptr; }

uint32_t Tensor::output_nr() const {
  AutogradMeta* m = get_meta(*this);
  return m ? m->output_nr : 0;
}

const Tensor& Tensor::requires_grad_(bool r) const {
  KINDLE_CHECK(!r || is_differentiable_type(dtype()),
               "only Tensors of floating point and complex dtype can require gradients (got a tensor of dtype ", dtype(), ")");
  KINDLE_CHECK(!r || !is_inference() || inference_mode_enabled(),
               "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.");
  if (!r && grad_fn())
    throw Error("requires_grad_: you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  impl()->requires_grad = r;
  return *this;
}

bool Tensor::retains_grad() const {
  AutogradMeta* m = get_meta(*this);
  return m && m->retained_grad != nullptr;
}

void Tensor::retain_grad() const {
  KINDLE_CHECK(requires_grad(), "retain_grad: can't retain_grad on Tensor that has requires_grad=False");
  if (is_leaf() || retains_grad()) return;
  AutogradMeta& m = materialize_meta(*this);
  m.retained_grad = std::make_shared<Tensor>();
  m.grad_fn->tensor_hooks.push_back({m.output_nr, 0, autograd::retaining::retain_hook(m.retained_grad)});
}

uint64_t Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  KINDLE_CHECK(requires_grad(), "register_hook: cannot register a hook on a tensor that doesn't require gradient");
  uint64_t id = next_hook_id.fetch_add(1);
  auto fn = grad_fn();
  if (fn) {
    // Before retain_grad's hook, so that the retained grad is the hooked one.
    auto& hooks = fn->tensor_hooks;
    auto pos = hooks.end();
    for (auto it = hooks.begin(); it != hooks.end(); ++it)
      if (it->id == 0 && it->output_nr == output_nr()) { pos = it; break; }
    hooks.insert(pos, Node::OutputHook{output_nr(), id, std::move(hook)});
  } else {
    materialize_meta(*this).leaf_hooks.emplace_back(id, std::move(hook));
  }
  return id;
}

void Tensor::remove_hook(uint64_t id) const {
  AutogradMeta* m = get_meta(*this);
  if (!m) return;
  std::erase_if(m->leaf_hooks, [id](auto& h) { return h.first == id; });
  if (m->grad_fn) std::erase_if(m->grad_fn->tensor_hooks, [id](auto& h) { return h.id == id; });
}

uint64_t autograd::register_post_accumulate_grad_hook(const Tensor& t, std::function<void(const Tensor&)> hook) {
  KINDLE_CHECK(t.requires_grad(), "register_post_accumulate_grad_hook: cannot register a hook on a tensor that "
               "doesn't require gradient");
  KINDLE_CHECK(!t.grad_fn(), "register_post_accumulate_grad_hook: post accumulate grad hooks cannot be registered "
               "on non-leaf tensors");
  uint64_t id = next_hook_id.fetch_add(1);
  materialize_meta(t).post_accumulate_hooks.emplace_back(id, std::move(hook));
  return id;
}

void autograd::remove_post_accumulate_grad_hook(const Tensor& t, uint64_t id) {
  if (AutogradMeta* m = get_meta(t)) std::erase_if(m->post_accumulate_hooks, [id](auto& h) { return h.first == id; });
}

const Tensor& Tensor::detach_() const {
  AutogradMeta* m = get_meta(*this);
  if (m) {
    KINDLE_CHECK(!m->base.defined() || !m->grad_fn, "detach_: can't detach views in-place. Use detach() instead.");
    m->grad_fn.reset();
    m->output_nr = 0;
  }
  impl()->requires_grad = false;
  return *this;
}

bool Tensor::is_view() const {
  AutogradMeta* m = get_meta(*this);
  return m && m->base.defined();
}

Tensor Tensor::base() const {
  AutogradMeta* m = get_meta(*this);
  return m ? m->base : Tensor();
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph, {});
}

}  // namespace kindle
