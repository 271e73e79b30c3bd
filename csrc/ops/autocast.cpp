// CPU autocast state, casts and the weight cache.
#include "kindle/autocast.h"

#include <unordered_map>

#include "kindle/ops.h"

namespace kindle::autocast {

namespace detail {
std::atomic<int> enabled_threads{0};
}  // namespace detail

namespace {
struct State {
  bool enabled = false;
  bool excluded = false;
  DType dtype = kBFloat16;
  bool cache_enabled = true;
  // the casts of weights (leaves that require grad) made in this region, by source tensor
  std::unordered_map<const TensorImpl*, std::pair<Tensor, Tensor>> cache;  // impl -> (source, cast)
};
State& state() {
  thread_local State s;
  return s;
}

bool eligible(const Tensor& t) {  // floating, not double (as PyTorch's CPU autocast)
  return t.defined() && (t.dtype() == kFloat32 || t.dtype() == kFloat16 || t.dtype() == kBFloat16);
}

Tensor cast_to(const Tensor& t, DType dt) {
  if (!eligible(t) || t.dtype() == dt) return t;
  State& s = state();
  bool cacheable = s.cache_enabled && t.requires_grad() && t.is_leaf();
  if (cacheable) {
    auto it = s.cache.find(t.impl());
    if (it != s.cache.end() && it->second.second.dtype() == dt) return it->second.second;
  }
  Tensor r = t.to(dt);
  if (cacheable) s.cache[t.impl()] = {t, r};
  return r;
}
}  // namespace

bool detail::thread_active() {
  const State& s = state();
  return s.enabled && !s.excluded;
}

bool is_enabled() { return state().enabled; }

void set_enabled(bool enabled) {
  State& s = state();
  if (s.enabled == enabled) return;
  s.enabled = enabled;
  detail::enabled_threads.fetch_add(enabled ? 1 : -1, std::memory_order_relaxed);
}

DType get_dtype() { return state().dtype; }

void set_dtype(DType dtype) {
  KINDLE_CHECK(dtype == kBFloat16 || dtype == kFloat16, "In CPU autocast, but the target dtype is not supported. "
               "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.");
  state().dtype = dtype;
}

void clear_cache() { state().cache.clear(); }
void set_cache_enabled(bool enabled) { state().cache_enabled = enabled; }

Exclude::Exclude() : prev_(state().excluded) { state().excluded = true; }
Exclude::~Exclude() { state().excluded = prev_; }

Tensor cast(Policy p, const Tensor& t) {
  switch (p) {
    case Policy::Lower: return cast_to(t, state().dtype);
    case Policy::Fp32: return cast_to(t, kFloat32);
    case Policy::Promote: return t;  // (a single tensor has nothing to be promoted with)
  }
  return t;
}

std::optional<Tensor> cast(Policy p, const std::optional<Tensor>& t) {
  if (!t) return t;
  return cast(p, *t);
}

std::vector<Tensor> cast(Policy p, const std::vector<Tensor>& ts) {
  if (p != Policy::Promote) {
    std::vector<Tensor> out;
    out.reserve(ts.size());
    for (const Tensor& t : ts) out.push_back(cast(p, t));
    return out;
  }
  // the widest floating dtype among them
  std::optional<DType> widest;
  for (const Tensor& t : ts)
    if (t.defined() && t.is_floating_point()) widest = widest ? promote_types(*widest, t.dtype()) : t.dtype();
  if (!widest) return ts;
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(eligible(t) && t.dtype() != *widest ? t.to(*widest) : t);
  return out;
}

}  // namespace kindle::autocast
