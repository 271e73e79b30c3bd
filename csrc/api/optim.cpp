// SGD, Adam, AdamW, RMSprop over the fused steps of kindle/optim.h, with Python's parameter
// groups, checks and state-dict format (python/kindle/optim/*.py).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "kindle/archive.h"
#include "kindle/autograd.h"
#include "kindle/ops.h"
#include "kindle/optimizers.h"
#include "util.h"

namespace kindle::optim {


namespace {

using nn::detail::py_float;

// ---- option checks (Python's _check_hyper and constructor messages)

void check_lr(double lr) { KINDLE_CHECK_VALUE(lr >= 0.0, "Invalid learning rate: ", py_float(lr)); }
void check_eps(double eps) { KINDLE_CHECK_VALUE(eps >= 0.0, "Invalid epsilon value: ", py_float(eps)); }
void check_wd(double wd) { KINDLE_CHECK_VALUE(wd >= 0.0, "Invalid weight_decay value: ", py_float(wd)); }
void check_momentum(double m) { KINDLE_CHECK_VALUE(m >= 0.0, "Invalid momentum value: ", py_float(m)); }
void check_betas(const Betas& b) {
  KINDLE_CHECK_VALUE(b.first >= 0.0 && b.first < 1.0, "Invalid beta parameter at index 0: ", py_float(b.first));
  KINDLE_CHECK_VALUE(b.second >= 0.0 && b.second < 1.0, "Invalid beta parameter at index 1: ", py_float(b.second));
}

void validate(const SGDOptions& o) {
  check_lr(o.lr());
  check_momentum(o.momentum());
  check_wd(o.weight_decay());
  KINDLE_CHECK_VALUE(!o.nesterov() || (o.momentum() > 0 && o.dampening() == 0),
                     "Nesterov momentum requires a momentum and zero dampening");
}
template <typename O>
void validate_adam(const O& o) {
  check_lr(o.lr());
  check_eps(o.eps());
  check_betas(o.betas());
  check_wd(o.weight_decay());
}
void validate(const AdamOptions& o) { validate_adam(o); }
void validate(const LBFGSOptions& o) { check_lr(o.lr()); }
void validate(const AdamWOptions& o) { validate_adam(o); }
void validate(const AdagradOptions& o) {
  check_lr(o.lr());
  KINDLE_CHECK_VALUE(o.lr_decay() >= 0.0, "Invalid lr_decay value: ", py_float(o.lr_decay()));
  check_wd(o.weight_decay());
  KINDLE_CHECK_VALUE(o.initial_accumulator_value() >= 0.0, "Invalid initial_accumulator_value value: ",
                     py_float(o.initial_accumulator_value()));
  check_eps(o.eps());
}
void validate(const RMSpropOptions& o) {
  check_lr(o.lr());
  check_eps(o.eps());
  check_momentum(o.momentum());
  check_wd(o.weight_decay());
  KINDLE_CHECK_VALUE(o.alpha() >= 0.0, "Invalid alpha value: ", py_float(o.alpha()));
}

// Splits parallel lists by parameter dtype (a fused call takes one dtype; a group may mix them),
// keeping first-appearance order.
std::vector<std::vector<size_t>> by_dtype(const std::vector<Tensor>& params) {
  std::vector<std::vector<size_t>> buckets;
  std::vector<DType> keys;
  for (size_t i = 0; i < params.size(); ++i) {
    size_t b = 0;
    while (b < keys.size() && keys[b] != params[i].dtype()) ++b;
    if (b == keys.size()) {
      keys.push_back(params[i].dtype());
      buckets.emplace_back();
    }
    buckets[b].push_back(i);
  }
  return buckets;
}

std::vector<Tensor> pick(const std::vector<Tensor>& v, const std::vector<size_t>& idx) {
  if (v.empty()) return {};
  std::vector<Tensor> out;
  out.reserve(idx.size());
  for (size_t i : idx) out.push_back(v[i]);
  return out;
}

// state['step'] as Python keeps it: a 0-d float32 tensor.
Tensor step_tensor(int64_t step) { return full({}, Scalar(double(step)), kFloat32); }

// ---- state dict reading

struct Loaded {
  std::vector<const Value*> groups;                 // the saved param_groups
  std::vector<std::pair<Tensor, const Value*>> state;  // (our parameter, its saved state dict)
};

// Python's load_state_dict checks: same number of groups, same sizes; saved indices map onto
// our parameters in order.
template <typename G>
Loaded match(const Value& sd, const std::vector<G>& groups) {
  KINDLE_CHECK_TYPE(sd.is_dict(), "Optimizer.load_state_dict: expected a dict, got ", value_kind_name(sd.kind()));
  const Value& saved_groups = sd.at("param_groups", "Optimizer.load_state_dict");
  const Value& saved_state = sd.at("state", "Optimizer.load_state_dict");
  const auto& sg = saved_groups.items("param_groups");
  KINDLE_CHECK_VALUE(sg.size() == groups.size(), "loaded state dict has a different number of parameter groups");
  Loaded out;
  std::map<int64_t, Tensor> id_map;
  for (size_t g = 0; g < sg.size(); ++g) {
    const auto& ids = sg[g].at("params", "param_groups").items("params");
    KINDLE_CHECK_VALUE(ids.size() == groups[g].params().size(),
                       "loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
    for (size_t i = 0; i < ids.size(); ++i) id_map[ids[i].to_int("params")] = groups[g].params()[i];
    out.groups.push_back(&sg[g]);
  }
  for (auto& [k, v] : saved_state.entries("state")) {
    if (!k.is_int()) continue;  // Python keeps unknown keys aside; they never reach a step
    auto it = id_map.find(k.to_int());
    if (it == id_map.end()) continue;
    KINDLE_CHECK_TYPE(v.is_dict(), "Optimizer.load_state_dict: state of parameter ", k.to_int(), " must be a dict");
    out.state.emplace_back(it->second, &v);
  }
  return out;
}

// A saved state tensor for `param`: floating ones take the parameter's dtype; copied, so the
// loaded optimizer never shares memory with the dict it came from.
Tensor state_tensor(const Value& s, const char* key, const Tensor& param, bool required = true) {
  const Value* v = s.get(key);
  if (!v) {
    KINDLE_CHECK_AS(KeyError, !required, "Optimizer.load_state_dict: parameter state has no '", key, "'");
    return Tensor();
  }
  const Tensor& t = v->to_tensor(key);
  KINDLE_CHECK_VALUE(t.sizes() == param.sizes(), "Optimizer.load_state_dict: state '", key, "' has shape ",
                     t.sizes(), " but its parameter has shape ", param.sizes());
  return t.is_floating_point() ? t.to(param.dtype()).clone() : t.clone();
}

int64_t state_step(const Value& s) {
  const Value& v = s.at("step", "Optimizer.load_state_dict: parameter state");
  double d = v.is_tensor() ? v.to_tensor().item<double>() : v.to_double("step");
  return int64_t(d);
}

double num(const Value& g, const char* key, double current) {
  const Value* v = g.get(key);
  return v ? v->to_double(key) : current;
}
bool flag(const Value& g, const char* key, bool current) {
  const Value* v = g.get(key);
  return v ? v->to_bool(key) : current;
}
Betas betas(const Value& g, Betas current) {
  const Value* v = g.get("betas");
  if (!v) return current;
  const auto& b = v->items("betas");
  KINDLE_CHECK_VALUE(b.size() == 2, "Optimizer.load_state_dict: betas must have two values, got ", b.size());
  return {b[0].to_double("betas"), b[1].to_double("betas")};
}

// ---- state dict writing

Value::Entries group_entries(const std::vector<Tensor>& params, std::map<const TensorImpl*, int64_t>& index) {
  Value::Items ids;
  for (auto& p : params) {
    auto it = index.find(p.impl());
    if (it == index.end()) it = index.emplace(p.impl(), int64_t(index.size())).first;
    ids.push_back(Value(it->second));
  }
  Value::Entries e;
  e.emplace_back(Value("params"), Value::list(std::move(ids)));
  return e;
}

// Appends "params" last (Python's packed group order) and builds the top-level dict.
template <typename Groups, typename StateFn, typename HyperFn>
Value make_state_dict(const Groups& groups, StateFn&& state_of, HyperFn&& hyper) {
  std::map<const TensorImpl*, int64_t> index;
  Value::Items packed;
  for (auto& g : groups) {
    Value::Entries params = group_entries(g.params(), index);
    Value::Entries e = hyper(g.options());
    e.push_back(std::move(params[0]));
    packed.push_back(Value::dict(std::move(e)));
  }
  // State in parameter order.
  std::vector<std::pair<int64_t, Value>> states;
  for (auto& g : groups)
    for (auto& p : g.params()) {
      Value s = state_of(p);
      if (!s.is_none()) states.emplace_back(index.at(p.impl()), std::move(s));
    }
  Value::Entries state;
  for (auto& [i, s] : states) state.emplace_back(Value(i), std::move(s));
  return Value::dict({{Value("state"), Value::dict(std::move(state))}, {Value("param_groups"), Value::list(std::move(packed))}});
}

}  // namespace

// ---- Optimizer

Tensor Optimizer::step(const std::function<Tensor()>& closure) {
  Tensor loss;
  {
    autograd::EnableGradGuard g;
    loss = closure();
  }
  step();
  return loss;
}

void Optimizer::save(serialize::OutputArchive& archive) const {
  Value sd = state_dict();
  for (const auto& [k, v] : sd.entries("optimizer state_dict")) archive.write_value(k.to_string(), v);
}

void Optimizer::load(serialize::InputArchive& archive) {
  Value::Entries e;
  for (const char* key : {"state", "param_groups"}) {
    const Value* v = archive.try_read_value(key);
    KINDLE_CHECK_VALUE(v != nullptr, "Optimizer.load: the archive has no '", key,
                       "' entry (not an optimizer's state; its keys are its own)");
    e.emplace_back(key, *v);
  }
  load_state_dict(Value::dict(std::move(e)));
}

void Optimizer::zero_grad(bool set_to_none) {
  for (size_t gi = 0; gi < num_param_groups(); ++gi)
    for (const Tensor& p : params(gi)) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        if (g.grad_fn()) g.detach_();
        else g.requires_grad_(false);
        g.zero_();
      }
    }
}

std::vector<Tensor> Optimizer::all_params() const {
  std::vector<Tensor> out;
  for (size_t g = 0; g < num_param_groups(); ++g)
    for (auto& p : params(g)) out.push_back(p);
  return out;
}

template <typename O, typename S>
OptimizerBase<O, S>::OptimizerBase(std::vector<Group> groups, const O& defaults) : defaults_(defaults) {
  validate(defaults);
  size_t total = 0;
  for (auto& g : groups) total += g.params().size();
  KINDLE_CHECK_VALUE(total > 0, "optimizer got an empty parameter list");
  for (auto& g : groups) add_param_group(std::move(g.params()), g.options());
}

template <typename O, typename S>
void OptimizerBase<O, S>::add_param_group(std::vector<Tensor> params, const O& options) {
  validate(options);
  for (auto& p : params) {
    KINDLE_CHECK_TYPE(p.defined(), "optimizer can only optimize Tensors, but one of the params is undefined");
    KINDLE_CHECK_VALUE(p.is_leaf() || p.retains_grad(), "can't optimize a non-leaf Tensor");
  }
  for (auto& g : groups_)
    for (auto& q : g.params())
      for (auto& p : params)
        KINDLE_CHECK_VALUE(!q.is_same(p), "some parameters appear in more than one parameter group");
  groups_.push_back({std::move(params), options});
}

template class OptimizerBase<SGDOptions, SGDState>;
template class OptimizerBase<AdamOptions, AdamState>;
template class OptimizerBase<AdamWOptions, AdamState>;
template class OptimizerBase<RMSpropOptions, RMSpropState>;
template class OptimizerBase<LBFGSOptions, LBFGSState>;

// ---- SGD

SGD::SGD(std::vector<Tensor> params, const SGDOptions& o) : OptimizerBase({{std::move(params), o}}, o) {}
SGD::SGD(std::vector<ParamGroup<SGDOptions>> groups, const SGDOptions& d) : OptimizerBase(std::move(groups), d) {}

void SGD::step() {
  autograd::NoGradGuard no_grad;
  for (auto& g : groups_) {
    const auto& o = g.options();
    std::vector<Tensor> params, grads, bufs;
    for (auto& p : g.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      params.push_back(p);
      grads.push_back(grad);
      if (o.momentum() != 0) {
        auto it = state_.find(p.impl());
        bufs.push_back(it == state_.end() ? Tensor() : it->second.momentum_buffer);
      } else {
        bufs.emplace_back();
      }
    }
    if (params.empty()) continue;
    SGDHyper h{o.lr(), o.momentum(), o.dampening(), o.weight_decay(), o.nesterov(), o.maximize()};
    for (auto& idx : by_dtype(params)) {
      std::vector<Tensor> b = pick(bufs, idx);
      sgd_step(pick(params, idx), pick(grads, idx), b, h);
      if (o.momentum() != 0)  // the kernel creates the buffers on the first step
        for (size_t k = 0; k < idx.size(); ++k) state_[params[idx[k]].impl()].momentum_buffer = b[k];
    }
  }
}

Value SGD::state_dict() const {
  return make_state_dict(
      groups_,
      [&](const Tensor& p) {
        const SGDState* s = state(p);
        if (!s || !s->momentum_buffer.defined()) return Value();
        return Value::dict({{Value("momentum_buffer"), Value(s->momentum_buffer)}});
      },
      [](const SGDOptions& o) {
        return Value::Entries{{Value("lr"), Value(o.lr())},
                              {Value("momentum"), Value(o.momentum())},
                              {Value("dampening"), Value(o.dampening())},
                              {Value("weight_decay"), Value(o.weight_decay())},
                              {Value("nesterov"), Value(o.nesterov())},
                              {Value("maximize"), Value(o.maximize())},
                              {Value("foreach"), Value()},
                              {Value("differentiable"), Value(false)},
                              {Value("fused"), Value()}};
      });
}

void SGD::load_state_dict(const Value& sd) {
  Loaded l = match(sd, groups_);
  std::vector<SGDOptions> opts;
  for (size_t i = 0; i < groups_.size(); ++i) {
    const Value& s = *l.groups[i];
    SGDOptions o = groups_[i].options();
    o.lr(num(s, "lr", o.lr())).momentum(num(s, "momentum", o.momentum())).dampening(num(s, "dampening", o.dampening()));
    o.weight_decay(num(s, "weight_decay", o.weight_decay())).nesterov(flag(s, "nesterov", o.nesterov()));
    o.maximize(flag(s, "maximize", o.maximize()));
    validate(o);
    opts.push_back(o);
  }
  std::unordered_map<const TensorImpl*, SGDState> state;
  for (auto& [p, s] : l.state) state[p.impl()].momentum_buffer = state_tensor(*s, "momentum_buffer", p, false);
  for (size_t i = 0; i < groups_.size(); ++i) groups_[i].options() = opts[i];
  state_ = std::move(state);
}

// ---- Adam and AdamW share the update and the state format

namespace {

template <typename O>
void adam_like_step(std::vector<ParamGroup<O>>& groups, std::unordered_map<const TensorImpl*, AdamState>& state,
                    bool decoupled) {
  autograd::NoGradGuard no_grad;
  for (auto& g : groups) {
    const auto& o = g.options();
    std::vector<Tensor> params, grads, m, v, vmax;
    std::vector<int64_t> steps;
    for (auto& p : g.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      AdamState& s = state[p.impl()];
      if (!s.exp_avg.defined()) {
        s.exp_avg = zeros_like(p);
        s.exp_avg_sq = zeros_like(p);
      }
      if (o.amsgrad() && !s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = zeros_like(p);
      params.push_back(p);
      grads.push_back(grad);
      m.push_back(s.exp_avg);
      v.push_back(s.exp_avg_sq);
      if (o.amsgrad()) vmax.push_back(s.max_exp_avg_sq);
      steps.push_back(++s.step);
    }
    if (params.empty()) continue;
    AdamHyper h{o.lr(), o.betas().first, o.betas().second, o.eps(), o.weight_decay(), o.amsgrad(), o.maximize(),
                decoupled};
    for (auto& idx : by_dtype(params)) {
      std::vector<int64_t> st;
      for (size_t i : idx) st.push_back(steps[i]);
      adam_step(pick(params, idx), pick(grads, idx), pick(m, idx), pick(v, idx), pick(vmax, idx), st, h);
    }
  }
}

template <typename O>
Value adam_like_state_dict(const std::vector<ParamGroup<O>>& groups,
                           const std::unordered_map<const TensorImpl*, AdamState>& state, bool decoupled) {
  return make_state_dict(
      groups,
      [&](const Tensor& p) {
        auto it = state.find(p.impl());
        if (it == state.end()) return Value();
        const AdamState& s = it->second;
        Value::Entries e{{Value("step"), Value(step_tensor(s.step))},
                         {Value("exp_avg"), Value(s.exp_avg)},
                         {Value("exp_avg_sq"), Value(s.exp_avg_sq)}};
        if (s.max_exp_avg_sq.defined()) e.emplace_back(Value("max_exp_avg_sq"), Value(s.max_exp_avg_sq));
        return Value::dict(std::move(e));
      },
      [&](const O& o) {
        return Value::Entries{{Value("lr"), Value(o.lr())},
                              {Value("betas"), Value::tuple({Value(o.betas().first), Value(o.betas().second)})},
                              {Value("eps"), Value(o.eps())},
                              {Value("weight_decay"), Value(o.weight_decay())},
                              {Value("amsgrad"), Value(o.amsgrad())},
                              {Value("maximize"), Value(o.maximize())},
                              {Value("foreach"), Value()},
                              {Value("capturable"), Value(false)},
                              {Value("differentiable"), Value(false)},
                              {Value("fused"), Value()},
                              {Value("decoupled_weight_decay"), Value(decoupled)}};
      });
}

template <typename O>
void adam_like_load(std::vector<ParamGroup<O>>& groups, std::unordered_map<const TensorImpl*, AdamState>& state_,
                    const Value& sd, bool decoupled) {
  Loaded l = match(sd, groups);
  std::vector<O> opts;
  for (size_t i = 0; i < groups.size(); ++i) {
    const Value& s = *l.groups[i];
    bool dec = flag(s, "decoupled_weight_decay", decoupled);
    KINDLE_CHECK_VALUE(dec == decoupled, "Optimizer.load_state_dict: the state dict was saved by ",
                       dec ? "AdamW" : "Adam", " (decoupled_weight_decay=", dec ? "True" : "False",
                       "); load it into optim::", dec ? "AdamW" : "Adam");
    O o = groups[i].options();
    o.lr(num(s, "lr", o.lr())).betas(betas(s, o.betas())).eps(num(s, "eps", o.eps()));
    o.weight_decay(num(s, "weight_decay", o.weight_decay())).amsgrad(flag(s, "amsgrad", o.amsgrad()));
    o.maximize(flag(s, "maximize", o.maximize()));
    validate(o);
    opts.push_back(o);
  }
  std::unordered_map<const TensorImpl*, AdamState> state;
  for (auto& [p, s] : l.state) {
    AdamState& a = state[p.impl()];
    a.step = state_step(*s);
    a.exp_avg = state_tensor(*s, "exp_avg", p);
    a.exp_avg_sq = state_tensor(*s, "exp_avg_sq", p);
    a.max_exp_avg_sq = state_tensor(*s, "max_exp_avg_sq", p, false);
  }
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options() = opts[i];
  state_ = std::move(state);
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, const AdamOptions& o) : OptimizerBase({{std::move(params), o}}, o) {}
Adam::Adam(std::vector<ParamGroup<AdamOptions>> groups, const AdamOptions& d) : OptimizerBase(std::move(groups), d) {}
void Adam::step() { adam_like_step(groups_, state_, false); }
Value Adam::state_dict() const { return adam_like_state_dict(groups_, state_, false); }
void Adam::load_state_dict(const Value& sd) { adam_like_load(groups_, state_, sd, false); }

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& o) : OptimizerBase({{std::move(params), o}}, o) {}
AdamW::AdamW(std::vector<ParamGroup<AdamWOptions>> groups, const AdamWOptions& d)
    : OptimizerBase(std::move(groups), d) {}
void AdamW::step() { adam_like_step(groups_, state_, true); }
Value AdamW::state_dict() const { return adam_like_state_dict(groups_, state_, true); }
void AdamW::load_state_dict(const Value& sd) { adam_like_load(groups_, state_, sd, true); }

// ---- RMSprop

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& o) : OptimizerBase({{std::move(params), o}}, o) {}
RMSprop::RMSprop(std::vector<ParamGroup<RMSpropOptions>> groups, const RMSpropOptions& d)
    : OptimizerBase(std::move(groups), d) {}

void RMSprop::step() {
  autograd::NoGradGuard no_grad;
  for (auto& g : groups_) {
    const auto& o = g.options();
    std::vector<Tensor> params, grads, sq, gavg, bufs;
    for (auto& p : g.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      RMSpropState& s = state_[p.impl()];
      if (!s.square_avg.defined()) s.square_avg = zeros_like(p);
      if (o.momentum() > 0 && !s.momentum_buffer.defined()) s.momentum_buffer = zeros_like(p);
      if (o.centered() && !s.grad_avg.defined()) s.grad_avg = zeros_like(p);
      params.push_back(p);
      grads.push_back(grad);
      sq.push_back(s.square_avg);
      if (o.momentum() > 0) bufs.push_back(s.momentum_buffer);
      if (o.centered()) gavg.push_back(s.grad_avg);
      ++s.step;  // bookkeeping only: the update does not read it
    }
    if (params.empty()) continue;
    RMSpropHyper h{o.lr(), o.alpha(), o.eps(), o.weight_decay(), o.momentum(), o.centered(), o.maximize()};
    for (auto& idx : by_dtype(params))
      rmsprop_step(pick(params, idx), pick(grads, idx), pick(sq, idx), pick(gavg, idx), pick(bufs, idx), h);
  }
}

Value RMSprop::state_dict() const {
  return make_state_dict(
      groups_,
      [&](const Tensor& p) {
        const RMSpropState* s = state(p);
        if (!s) return Value();
        Value::Entries e{{Value("step"), Value(step_tensor(s->step))}, {Value("square_avg"), Value(s->square_avg)}};
        if (s->momentum_buffer.defined()) e.emplace_back(Value("momentum_buffer"), Value(s->momentum_buffer));
        if (s->grad_avg.defined()) e.emplace_back(Value("grad_avg"), Value(s->grad_avg));
        return Value::dict(std::move(e));
      },
      [](const RMSpropOptions& o) {
        return Value::Entries{{Value("lr"), Value(o.lr())},
                              {Value("momentum"), Value(o.momentum())},
                              {Value("alpha"), Value(o.alpha())},
                              {Value("eps"), Value(o.eps())},
                              {Value("centered"), Value(o.centered())},
                              {Value("weight_decay"), Value(o.weight_decay())},
                              {Value("capturable"), Value(false)},
                              {Value("foreach"), Value()},
                              {Value("maximize"), Value(o.maximize())},
                              {Value("differentiable"), Value(false)}};
      });
}

void RMSprop::load_state_dict(const Value& sd) {
  Loaded l = match(sd, groups_);
  std::vector<RMSpropOptions> opts;
  for (size_t i = 0; i < groups_.size(); ++i) {
    const Value& s = *l.groups[i];
    RMSpropOptions o = groups_[i].options();
    o.lr(num(s, "lr", o.lr())).momentum(num(s, "momentum", o.momentum())).alpha(num(s, "alpha", o.alpha()));
    o.eps(num(s, "eps", o.eps())).centered(flag(s, "centered", o.centered()));
    o.weight_decay(num(s, "weight_decay", o.weight_decay())).maximize(flag(s, "maximize", o.maximize()));
    validate(o);
    opts.push_back(o);
  }
  std::unordered_map<const TensorImpl*, RMSpropState> state;
  for (auto& [p, s] : l.state) {
    RMSpropState& r = state[p.impl()];
    r.step = state_step(*s);
    r.square_avg = state_tensor(*s, "square_avg", p);
    r.momentum_buffer = state_tensor(*s, "momentum_buffer", p, false);
    r.grad_avg = state_tensor(*s, "grad_avg", p, false);
  }
  for (size_t i = 0; i < groups_.size(); ++i) groups_[i].options() = opts[i];
  state_ = std::move(state);
}

// ---- Adagrad

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& o) : OptimizerBase({{std::move(params), o}}, o) {
  init_state();
}
Adagrad::Adagrad(std::vector<ParamGroup<AdagradOptions>> groups, const AdagradOptions& d)
    : OptimizerBase(std::move(groups), d) {
  init_state();
}

void Adagrad::init_state() {
  autograd::NoGradGuard no_grad;
  for (auto& g : groups_) {
    validate(g.options());
    for (auto& p : g.params()) {
      AdagradState& s = state_[p.impl()];
      if (!s.sum.defined()) s.sum = full_like(p, g.options().initial_accumulator_value());
    }
  }
}

void Adagrad::step() {
  autograd::NoGradGuard no_grad;
  for (auto& g : groups_) {
    const auto& o = g.options();
    std::vector<Tensor> params, grads, sums;
    std::vector<int64_t> steps;
    for (auto& p : g.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      AdagradState& s = state_[p.impl()];
      if (!s.sum.defined()) s.sum = full_like(p, o.initial_accumulator_value());  // added after construction
      params.push_back(p);
      grads.push_back(grad);
      sums.push_back(s.sum);
      steps.push_back(++s.step);
    }
    if (params.empty()) continue;
    AdagradHyper h{o.lr(), o.lr_decay(), o.weight_decay(), o.eps(), o.maximize()};
    for (auto& idx : by_dtype(params)) {
      std::vector<int64_t> st;
      for (size_t i : idx) st.push_back(steps[i]);
      adagrad_step(pick(params, idx), pick(grads, idx), pick(sums, idx), st, h);
    }
  }
}

Value Adagrad::state_dict() const {
  return make_state_dict(
      groups_,
      [&](const Tensor& p) {
        const AdagradState* s = state(p);
        if (!s) return Value();
        return Value::dict({{Value("step"), Value(step_tensor(s->step))}, {Value("sum"), Value(s->sum)}});
      },
      [](const AdagradOptions& o) {
        return Value::Entries{{Value("lr"), Value(o.lr())},
                              {Value("lr_decay"), Value(o.lr_decay())},
                              {Value("weight_decay"), Value(o.weight_decay())},
                              {Value("initial_accumulator_value"), Value(o.initial_accumulator_value())},
                              {Value("eps"), Value(o.eps())},
                              {Value("foreach"), Value()},
                              {Value("maximize"), Value(o.maximize())},
                              {Value("differentiable"), Value(false)},
                              {Value("fused"), Value()}};
      });
}

void Adagrad::load_state_dict(const Value& sd) {
  Loaded l = match(sd, groups_);
  std::vector<AdagradOptions> opts;
  for (size_t i = 0; i < groups_.size(); ++i) {
    const Value& s = *l.groups[i];
    AdagradOptions o = groups_[i].options();
    o.lr(num(s, "lr", o.lr())).lr_decay(num(s, "lr_decay", o.lr_decay())).eps(num(s, "eps", o.eps()));
    o.weight_decay(num(s, "weight_decay", o.weight_decay())).maximize(flag(s, "maximize", o.maximize()));
    o.initial_accumulator_value(num(s, "initial_accumulator_value", o.initial_accumulator_value()));
    validate(o);
    opts.push_back(o);
  }
  std::unordered_map<const TensorImpl*, AdagradState> state;
  for (auto& [p, s] : l.state) {
    AdagradState& r = state[p.impl()];
    r.step = state_step(*s);
    r.sum = state_tensor(*s, "sum", p);
  }
  for (size_t i = 0; i < groups_.size(); ++i) groups_[i].options() = opts[i];
  state_ = std::move(state);
}

// ---- schedulers

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> out;
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) out.push_back(optimizer_.lr(g));
  return out;
}

double Optimizer::initial_lr(size_t group) {
  KINDLE_CHECK_INDEX(group < num_param_groups(), "initial_lr: group ", group, " of ", num_param_groups());
  if (initial_lrs_.size() < num_param_groups()) initial_lrs_.resize(num_param_groups());
  if (!initial_lrs_[group]) initial_lrs_[group] = lr(group);
  return *initial_lrs_[group];
}

void Optimizer::set_initial_lr(size_t group, double value) {
  KINDLE_CHECK_INDEX(group < num_param_groups(), "set_initial_lr: group ", group, " of ", num_param_groups());
  if (initial_lrs_.size() < num_param_groups()) initial_lrs_.resize(num_param_groups());
  initial_lrs_[group] = value;
}

void LRScheduler::initialize() {
  // Python's base_lrs: each group's initial_lr (set by the first scheduler attached), not its
  // current lr, which an earlier scheduler's first step may already have changed.
  base_lrs_.clear();
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) base_lrs_.push_back(optimizer_.initial_lr(g));
  initial_step();
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  initial_ = true;
  step();
  initial_ = false;
}

void LRScheduler::update_lr_at(int64_t epoch) {
  last_epoch_ = epoch;
  std::optional<std::vector<double>> closed = closed_form_lr();
  std::vector<double> lrs = closed ? std::move(*closed) : get_lr();
  for (size_t g = 0; g < lrs.size(); ++g) optimizer_.set_lr(g, lrs[g]);
  last_lr_ = group_lrs();
}

// ---- closed forms (Python's _get_closed_form_lr)

namespace {
template <typename F>
std::vector<double> each_base(const std::vector<double>& base_lrs, F f) {
  std::vector<double> out;
  for (double b : base_lrs) out.push_back(f(b));
  return out;
}
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
}  // namespace

std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  double f = std::pow(gamma_, double(floor_div(last_epoch_, step_size_)));
  return each_base(base_lrs_, [&](double b) { return b * f; });
}
std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  double c = (1 + std::cos(M_PI * double(last_epoch_) / double(T_max_))) / 2;
  return each_base(base_lrs_, [&](double b) { return eta_min_ + (b - eta_min_) * c; });
}
std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  int64_t passed = 0;  // bisect_right over the milestones, each counted as often as listed
  for (auto [epoch, times] : milestones_)
    if (epoch <= last_epoch_) passed += times;
  double f = std::pow(gamma_, double(passed));
  return each_base(base_lrs_, [&](double b) { return b * f; });
}
std::optional<std::vector<double>> ConstantLR::closed_form_lr() const {
  double f = factor_ + (last_epoch_ >= total_iters_ ? 1.0 - factor_ : 0.0);
  return each_base(base_lrs_, [&](double b) { return b * f; });
}
std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  double f = start_factor_ +
             (end_factor_ - start_factor_) * double(std::min(total_iters_, last_epoch_)) / double(total_iters_);
  return each_base(base_lrs_, [&](double b) { return b * f; });
}
std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  double f = std::pow(gamma_, double(last_epoch_));
  return each_base(base_lrs_, [&](double b) { return b * f; });
}
std::optional<std::vector<double>> PolynomialLR::closed_form_lr() const {
  double f = std::pow(1.0 - double(std::min(total_iters_, last_epoch_)) / double(total_iters_), power_);
  return each_base(base_lrs_, [&](double b) { return b * f; });
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  std::vector<double> lrs = get_lr();
  for (size_t g = 0; g < lrs.size(); ++g) optimizer_.set_lr(g, lrs[g]);
  last_lr_ = group_lrs();
}

using detail::doubles;
using detail::to_doubles;

Value LRScheduler::state_dict() const {
  Value::Entries e = hyperparameters();
  e.emplace_back("base_lrs", doubles(base_lrs_));
  e.emplace_back("last_epoch", last_epoch_);
  e.emplace_back("_step_count", step_count_);
  e.emplace_back("_is_initial", false);
  e.emplace_back("_get_lr_called_within_step", false);
  e.emplace_back("_last_lr", doubles(last_lr_));
  return Value::dict(std::move(e));
}

void LRScheduler::load_state_dict(const Value& sd) {
  std::vector<double> base = to_doubles(sd.at("base_lrs", "scheduler state_dict"), "base_lrs");
  KINDLE_CHECK_VALUE(base.size() == optimizer_.num_param_groups(), "LRScheduler.load_state_dict: the state has ",
                     base.size(), " base_lrs but the optimizer has ", optimizer_.num_param_groups(),
                     " parameter groups");
  std::vector<double> last = base;
  if (const Value* l = sd.get("_last_lr")) last = to_doubles(*l, "_last_lr");
  KINDLE_CHECK_VALUE(last.size() == base.size(), "LRScheduler.load_state_dict: _last_lr has ", last.size(),
                     " entries, expected ", base.size());
  int64_t epoch = sd.at("last_epoch", "scheduler state_dict").to_int("last_epoch");
  int64_t count = sd.get("_step_count") ? sd.get("_step_count")->to_int("_step_count") : epoch + 1;
  load_hyperparameters(sd);
  base_lrs_ = std::move(base);
  last_lr_ = std::move(last);
  last_epoch_ = epoch;
  step_count_ = count;
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  KINDLE_CHECK_VALUE(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  // libtorch's StepLR does not step when built (Python's does): the first step() is epoch 0, so
  // the rate decays on the calls after each step_size calls (call 3, 5, ... for step_size 2).
  for (size_t g = 0; g < optimizer.num_param_groups(); ++g) base_lrs_.push_back(optimizer.initial_lr(g));
  last_lr_ = group_lrs();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

Value::Entries StepLR::hyperparameters() const { return {{"step_size", step_size_}, {"gamma", gamma_}}; }

void StepLR::load_hyperparameters(const Value& sd) {
  int64_t step_size = sd.at("step_size", "StepLR state_dict").to_int("step_size");
  KINDLE_CHECK_VALUE(step_size > 0, "StepLR.load_state_dict: step_size must be positive, got ", step_size);
  step_size_ = step_size;
  gamma_ = sd.at("gamma", "StepLR state_dict").to_double("gamma");
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  KINDLE_CHECK_VALUE(T_max > 0, "CosineAnnealingLR: T_max must be positive, got ", T_max);
  initialize();
}

Value::Entries CosineAnnealingLR::hyperparameters() const {
  return {{"T_max", T_max_}, {"eta_min", eta_min_}};
}

void CosineAnnealingLR::load_hyperparameters(const Value& sd) {
  int64_t T_max = sd.at("T_max", "CosineAnnealingLR state_dict").to_int("T_max");
  KINDLE_CHECK_VALUE(T_max > 0, "CosineAnnealingLR.load_state_dict: T_max must be positive, got ", T_max);
  T_max_ = T_max;
  eta_min_ = sd.at("eta_min", "CosineAnnealingLR state_dict").to_double("eta_min");
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  const double pi = M_PI, T = double(T_max_), e = double(last_epoch_);
  if (last_epoch_ == 0) return lrs;
  if (step_count_ == 1 && last_epoch_ > 0) {
    for (size_t g = 0; g < lrs.size(); ++g)
      lrs[g] = eta_min_ + (base_lrs_[g] - eta_min_) * (1 + std::cos(e * pi / T)) / 2;
    return lrs;
  }
  // Python's % is a floor modulo; (last_epoch - 1 - T_max) may be negative.
  int64_t r = (last_epoch_ - 1 - T_max_) % (2 * T_max_);
  if (r < 0) r += 2 * T_max_;
  if (r == 0) {
    for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = lrs[g] + (base_lrs_[g] - eta_min_) * (1 - std::cos(pi / T)) / 2;
    return lrs;
  }
  for (double& lr : lrs)
    lr = (1 + std::cos(pi * e / T)) / (1 + std::cos(pi * (e - 1) / T)) * (lr - eta_min_) + eta_min_;
  return lrs;
}

// ---- LBFGS

namespace {
Value number_or_tensor(const Tensor& t) {
  if (!t.defined()) return Value();
  if (t.impl()->wrapped_number) return Value(t.item<double>());
  return Value(t);
}
Value tensor_list(const std::vector<Tensor>& v) {
  Value::Items items;
  for (const Tensor& t : v) items.push_back(number_or_tensor(t));
  return Value::list(std::move(items));
}
Tensor stored(const Value* v) {
  if (!v || v->is_none()) return {};
  if (v->is_tensor()) return v->to_tensor();
  return scalar_to_tensor(v->to_double("LBFGS state"));
}
std::vector<Tensor> stored_list(const Value* v) {
  std::vector<Tensor> out;
  if (!v || v->is_none()) return out;
  for (const Value& item : v->items("LBFGS state")) out.push_back(stored(&item));
  return out;
}
}  // namespace

LBFGS::LBFGS(std::vector<Tensor> params, const LBFGSOptions& o) : OptimizerBase({{std::move(params), o}}, o) {}

void LBFGS::step() {
  KINDLE_CHECK(false, "LBFGS requires a closure that reevaluates the model and returns the loss: call step(closure)");
}

Tensor LBFGS::step(const std::function<Tensor()>& closure) {
  std::vector<Tensor>& params = groups_[0].params();
  KINDLE_CHECK_VALUE(!params.empty(), "LBFGS: optimizer got an empty parameter list");
  const LBFGSOptions& o = groups_[0].options();
  LBFGSHyper h;
  h.lr = o.lr(), h.tolerance_grad = o.tolerance_grad(), h.tolerance_change = o.tolerance_change();
  h.max_iter = o.max_iter(), h.history_size = o.history_size(), h.max_eval = o.max_eval();
  h.line_search_fn = o.line_search_fn();
  return lbfgs_step(params, state_[params[0].impl()], h, closure);
}

Value LBFGS::state_dict() const {
  return make_state_dict(
      groups_,
      [&](const Tensor& p) {
        const LBFGSState* s = state(p);
        if (!s) return Value();
        Value::Entries e{{Value("func_evals"), Value(s->func_evals)}, {Value("n_iter"), Value(s->n_iter)}};
        if (s->n_iter > 0) {
          e.emplace_back(Value("d"), number_or_tensor(s->d));
          e.emplace_back(Value("t"), number_or_tensor(s->t));
          e.emplace_back(Value("old_dirs"), tensor_list(s->old_dirs));
          e.emplace_back(Value("old_stps"), tensor_list(s->old_stps));
          e.emplace_back(Value("ro"), tensor_list(s->ro));
          e.emplace_back(Value("H_diag"), number_or_tensor(s->H_diag));
          e.emplace_back(Value("prev_flat_grad"), number_or_tensor(s->prev_flat_grad));
          e.emplace_back(Value("prev_loss"), s->prev_loss ? Value(*s->prev_loss) : Value());
          if (!s->al.empty()) e.emplace_back(Value("al"), tensor_list(s->al));
        }
        return Value::dict(std::move(e));
      },
      [](const LBFGSOptions& o) {
        return Value::Entries{{Value("lr"), Value(o.lr())},
                              {Value("max_iter"), Value(o.max_iter())},
                              {Value("max_eval"), Value(o.max_eval().value_or(o.max_iter() * 5 / 4))},
                              {Value("tolerance_grad"), Value(o.tolerance_grad())},
                              {Value("tolerance_change"), Value(o.tolerance_change())},
                              {Value("history_size"), Value(o.history_size())},
                              {Value("line_search_fn"), o.line_search_fn() ? Value(*o.line_search_fn()) : Value()}};
      });
}

void LBFGS::load_state_dict(const Value& sd) {
  Loaded l = match(sd, groups_);
  const Value& g = *l.groups[0];
  LBFGSOptions o = groups_[0].options();
  o.lr(num(g, "lr", o.lr())).tolerance_grad(num(g, "tolerance_grad", o.tolerance_grad()));
  o.tolerance_change(num(g, "tolerance_change", o.tolerance_change()));
  o.max_iter(int64_t(num(g, "max_iter", double(o.max_iter()))));
  o.history_size(int64_t(num(g, "history_size", double(o.history_size()))));
  if (const Value* v = g.get("max_eval"); v && !v->is_none()) o.max_eval(int64_t(v->to_double("max_eval")));
  if (const Value* v = g.get("line_search_fn")) {
    if (v->is_none()) o.line_search_fn(std::nullopt);
    else o.line_search_fn(v->to_string("line_search_fn"));
  }
  std::unordered_map<const TensorImpl*, LBFGSState> state;
  for (auto& [p, s] : l.state) {
    LBFGSState st;
    st.func_evals = int64_t(num(*s, "func_evals", 0));
    st.n_iter = int64_t(num(*s, "n_iter", 0));
    st.d = stored(s->get("d"));
    st.t = stored(s->get("t"));
    st.H_diag = stored(s->get("H_diag"));
    st.prev_flat_grad = stored(s->get("prev_flat_grad"));
    if (const Value* v = s->get("prev_loss"); v && !v->is_none()) st.prev_loss = v->to_double("prev_loss");
    st.old_dirs = stored_list(s->get("old_dirs"));
    st.old_stps = stored_list(s->get("old_stps"));
    st.ro = stored_list(s->get("ro"));
    st.al = stored_list(s->get("al"));
    state[p.impl()] = std::move(st);
  }
  groups_[0].options() = o;
  state_ = std::move(state);
}

}  // namespace kindle::optim

// ---- the other schedulers (python/kindle/optim/lr_scheduler.py has the same recursions)

namespace kindle::optim {
namespace {

std::vector<LambdaLR::Lambda> one_per_group(const Optimizer& optimizer, LambdaLR::Lambda f) {
  return std::vector<LambdaLR::Lambda>(optimizer.num_param_groups(), std::move(f));
}

void check_factor(double f, double lo, bool lo_open, const char* what, const char* op) {
  KINDLE_CHECK_VALUE(f <= 1.0 && (lo_open ? f > lo : f >= lo), op, ": ", what, " expected ",
                     lo_open ? "greater than 0 and less or equal to 1" : "between 0 and 1", ", got ", f);
}

}  // namespace

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, const char* name)
    : LRScheduler(optimizer), lambdas_(std::move(lr_lambdas)) {
  KINDLE_CHECK_VALUE(lambdas_.size() == optimizer.num_param_groups(), name, ": expected ",
                     optimizer.num_param_groups(), " lr_lambdas (one per parameter group), but got ", lambdas_.size());
  for (const Lambda& f : lambdas_) KINDLE_CHECK_TYPE(bool(f), name, ": lr_lambda should be a function, got an empty one");
}
LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas)
    : LambdaLR(optimizer, std::move(lr_lambdas), "LambdaLR") {
  initialize();
}
LambdaLR::LambdaLR(Optimizer& optimizer, Lambda lr_lambda)
    : LambdaLR(optimizer, one_per_group(optimizer, std::move(lr_lambda))) {}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> lrs(base_lrs_.size());
  for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = base_lrs_[g] * lambdas_[g](last_epoch_);
  return lrs;
}

// Functions are not saved (Python saves None for a plain function).
Value::Entries LambdaLR::hyperparameters() const {
  Value::Items none(lambdas_.size());
  return {{"lr_lambdas", Value::list(std::move(none))}};
}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas)
    : LambdaLR(optimizer, std::move(lr_lambdas), "MultiplicativeLR") {
  initialize();
}
MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, Lambda lr_lambda)
    : MultiplicativeLR(optimizer, one_per_group(optimizer, std::move(lr_lambda))) {}

std::vector<double> MultiplicativeLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (initial()) return lrs;
  for (size_t g = 0; g < lrs.size(); ++g) lrs[g] *= lambdas_[g](last_epoch_);
  return lrs;
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, const std::vector<int64_t>& milestones, double gamma)
    : LRScheduler(optimizer), gamma_(gamma) {
  std::vector<int64_t> sorted = milestones;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t m : sorted) {
    if (!milestones_.empty() && milestones_.back().first == m) ++milestones_.back().second;
    else milestones_.emplace_back(m, 1);
  }
  initialize();
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  auto it = std::find_if(milestones_.begin(), milestones_.end(), [&](const auto& m) { return m.first == last_epoch_; });
  if (it == milestones_.end()) return lrs;
  for (double& lr : lrs) lr *= std::pow(gamma_, double(it->second));
  return lrs;
}

// Python's Counter: a dict of milestone -> count.
Value::Entries MultiStepLR::hyperparameters() const {
  Value::Entries counter;
  for (const auto& [m, n] : milestones_) counter.emplace_back(Value(m), Value(n));
  return {{"milestones", Value::dict(std::move(counter))}, {"gamma", gamma_}};
}

void MultiStepLR::load_hyperparameters(const Value& sd) {
  std::vector<std::pair<int64_t, int64_t>> ms;
  for (const auto& [k, v] : sd.at("milestones", "MultiStepLR state_dict").entries("milestones"))
    ms.emplace_back(k.to_int("milestone"), v.to_int("milestone count"));
  std::sort(ms.begin(), ms.end());
  milestones_ = std::move(ms);
  gamma_ = sd.at("gamma", "MultiStepLR state_dict").to_double("gamma");
}

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters)
    : LRScheduler(optimizer), factor_(factor), total_iters_(total_iters) {
  KINDLE_CHECK_VALUE(factor >= 0 && factor <= 1.0, "ConstantLR: Constant multiplicative factor expected to be between "
                     "0 and 1, got ", factor);
  initialize();
}

std::vector<double> ConstantLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0)
    for (double& lr : lrs) lr *= factor_;
  else if (last_epoch_ == total_iters_)
    for (double& lr : lrs) lr *= 1.0 / factor_;
  return lrs;
}

Value::Entries ConstantLR::hyperparameters() const { return {{"factor", factor_}, {"total_iters", total_iters_}}; }

void ConstantLR::load_hyperparameters(const Value& sd) {
  factor_ = sd.at("factor", "ConstantLR state_dict").to_double("factor");
  total_iters_ = sd.at("total_iters", "ConstantLR state_dict").to_int("total_iters");
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  check_factor(start_factor, 0, true, "Starting multiplicative factor", "LinearLR");
  check_factor(end_factor, 0, false, "Ending multiplicative factor", "LinearLR");
  initialize();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= start_factor_;
    return lrs;
  }
  if (initial() || last_epoch_ > total_iters_) return lrs;
  const double delta = end_factor_ - start_factor_;
  for (double& lr : lrs) lr *= 1.0 + delta / (double(total_iters_) * start_factor_ + double(last_epoch_ - 1) * delta);
  return lrs;
}

Value::Entries LinearLR::hyperparameters() const {
  return {{"start_factor", start_factor_}, {"end_factor", end_factor_}, {"total_iters", total_iters_}};
}

void LinearLR::load_hyperparameters(const Value& sd) {
  start_factor_ = sd.at("start_factor", "LinearLR state_dict").to_double("start_factor");
  end_factor_ = sd.at("end_factor", "LinearLR state_dict").to_double("end_factor");
  total_iters_ = sd.at("total_iters", "LinearLR state_dict").to_int("total_iters");
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) {
  initialize();
}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (initial()) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

Value::Entries ExponentialLR::hyperparameters() const { return {{"gamma", gamma_}}; }

void ExponentialLR::load_hyperparameters(const Value& sd) {
  gamma_ = sd.at("gamma", "ExponentialLR state_dict").to_double("gamma");
}

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power)
    : LRScheduler(optimizer), total_iters_(total_iters), power_(power) {
  KINDLE_CHECK_VALUE(total_iters > 0, "PolynomialLR: total_iters must be positive, got ", total_iters);
  initialize();
}

std::vector<double> PolynomialLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (initial() || last_epoch_ > total_iters_) return lrs;
  const double T = double(total_iters_), e = double(last_epoch_);
  const double decay = std::pow((1.0 - e / T) / (1.0 - (e - 1) / T), power_);
  for (double& lr : lrs) lr *= decay;
  return lrs;
}

Value::Entries PolynomialLR::hyperparameters() const { return {{"total_iters", total_iters_}, {"power", power_}}; }

void PolynomialLR::load_hyperparameters(const Value& sd) {
  total_iters_ = sd.at("total_iters", "PolynomialLR state_dict").to_int("total_iters");
  power_ = sd.at("power", "PolynomialLR state_dict").to_double("power");
}

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult,
                                                         double eta_min)
    : LRScheduler(optimizer), T_0_(T_0), T_i_(T_0), T_mult_(T_mult), eta_min_(eta_min) {
  KINDLE_CHECK_VALUE(T_0 > 0, "CosineAnnealingWarmRestarts: Expected positive integer T_0, but got ", T_0);
  KINDLE_CHECK_VALUE(T_mult >= 1, "CosineAnnealingWarmRestarts: Expected integer T_mult >= 1, but got ", T_mult);
  initialize();
}

// Python's step() advances T_cur before get_lr; here get_lr runs once per step and does it.
std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  if (initial()) {
    T_i_ = T_0_;
    T_cur_ = 0;
  } else if (++T_cur_ >= double(T_i_)) {
    T_cur_ = std::fmod(T_cur_, double(T_i_));
    T_i_ *= T_mult_;
  }
  std::vector<double> lrs(base_lrs_.size());
  for (size_t g = 0; g < lrs.size(); ++g)
    lrs[g] = eta_min_ + (base_lrs_[g] - eta_min_) * (1 + std::cos(M_PI * T_cur_ / double(T_i_))) / 2;
  return lrs;
}

Value::Entries CosineAnnealingWarmRestarts::hyperparameters() const {
  return {{"T_0", T_0_}, {"T_i", T_i_}, {"T_mult", T_mult_}, {"eta_min", eta_min_}, {"T_cur", T_cur_}};
}

void CosineAnnealingWarmRestarts::load_hyperparameters(const Value& sd) {
  const char* what = "CosineAnnealingWarmRestarts state_dict";
  T_0_ = sd.at("T_0", what).to_int("T_0");
  T_i_ = sd.at("T_i", what).to_int("T_i");
  T_mult_ = sd.at("T_mult", what).to_int("T_mult");
  eta_min_ = sd.at("eta_min", what).to_double("eta_min");
  T_cur_ = sd.at("T_cur", what).to_double("T_cur");
  KINDLE_CHECK_VALUE(T_0_ > 0 && T_i_ > 0 && T_mult_ >= 1, "CosineAnnealingWarmRestarts.load_state_dict: T_0 ", T_0_,
                     ", T_i ", T_i_, " and T_mult ", T_mult_, " must be positive");
}

ReduceLROnPlateauScheduler::ReduceLROnPlateauScheduler(Optimizer& optimizer, SchedulerMode mode, float factor,
                                                       int patience, double threshold, ThresholdMode threshold_mode,
                                                       int cooldown, const std::vector<float>& min_lr, double eps,
                                                       bool /*verbose*/)
    : optimizer_(optimizer), mode_(mode), factor_(factor), threshold_(threshold), eps_(eps), patience_(patience),
      cooldown_(cooldown), threshold_mode_(threshold_mode) {
  KINDLE_CHECK_VALUE(factor < 1.0f, "ReduceLROnPlateau: Factor should be < 1.0, got ", factor);
  const size_t groups = optimizer.num_param_groups();
  if (min_lr.empty()) min_lrs_.assign(groups, 0.0);
  else if (min_lr.size() == 1) min_lrs_.assign(groups, double(min_lr[0]));
  else min_lrs_.assign(min_lr.begin(), min_lr.end());
  KINDLE_CHECK_VALUE(min_lrs_.size() == groups, "ReduceLROnPlateau: expected ", groups, " min_lrs, got ",
                     min_lrs_.size());
  best_ = mode == min ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  for (size_t g = 0; g < groups; ++g) last_lr_.push_back(optimizer.lr(g));
}

bool ReduceLROnPlateauScheduler::is_better(double a) const {
  if (mode_ == min) return threshold_mode_ == rel ? a < best_ * (1.0 - threshold_) : a < best_ - threshold_;
  return threshold_mode_ == rel ? a > best_ * (threshold_ + 1.0) : a > best_ + threshold_;
}

void ReduceLROnPlateauScheduler::step(float metric) {
  const double current = metric;
  ++last_epoch_;
  if (is_better(current)) {
    best_ = current;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  if (num_bad_epochs_ > patience_) {
    KINDLE_CHECK(min_lrs_.size() == optimizer_.num_param_groups(), "ReduceLROnPlateau: the optimizer has ",
                 optimizer_.num_param_groups(), " parameter groups but ", min_lrs_.size(), " min_lrs");
    for (size_t g = 0; g < min_lrs_.size(); ++g) {
      const double old_lr = optimizer_.lr(g), new_lr = std::max(old_lr * factor_, min_lrs_[g]);
      if (old_lr - new_lr > eps_) optimizer_.set_lr(g, new_lr);
    }
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) last_lr_.push_back(optimizer_.lr(g));
}

Value ReduceLROnPlateauScheduler::state_dict() const {
  return Value::dict({{"factor", factor_},
                      {"min_lrs", doubles(min_lrs_)},
                      {"patience", int64_t(patience_)},
                      {"cooldown", int64_t(cooldown_)},
                      {"eps", eps_},
                      {"last_epoch", last_epoch_},
                      {"_last_lr", doubles(last_lr_)},
                      {"best", best_},
                      {"cooldown_counter", cooldown_counter_},
                      {"num_bad_epochs", num_bad_epochs_},
                      {"mode_worse", mode_ == min ? std::numeric_limits<double>::infinity()
                                                  : -std::numeric_limits<double>::infinity()},
                      {"mode", mode_ == min ? "min" : "max"},
                      {"threshold", threshold_},
                      {"threshold_mode", threshold_mode_ == rel ? "rel" : "abs"}});
}

void ReduceLROnPlateauScheduler::load_state_dict(const Value& sd) {
  const char* what = "ReduceLROnPlateau state_dict";
  const std::string& mode = sd.at("mode", what).to_string("mode");
  const std::string& tmode = sd.at("threshold_mode", what).to_string("threshold_mode");
  KINDLE_CHECK_VALUE(mode == "min" || mode == "max", "ReduceLROnPlateau.load_state_dict: mode ", mode, " is unknown!");
  KINDLE_CHECK_VALUE(tmode == "rel" || tmode == "abs", "ReduceLROnPlateau.load_state_dict: threshold mode ", tmode,
                     " is unknown!");
  mode_ = mode == "min" ? min : max;
  threshold_mode_ = tmode == "rel" ? rel : abs;
  factor_ = sd.at("factor", what).to_double("factor");
  min_lrs_ = to_doubles(sd.at("min_lrs", what), "min_lrs");
  patience_ = int(sd.at("patience", what).to_int("patience"));
  cooldown_ = int(sd.at("cooldown", what).to_int("cooldown"));
  eps_ = sd.at("eps", what).to_double("eps");
  last_epoch_ = sd.at("last_epoch", what).to_int("last_epoch");
  best_ = sd.at("best", what).to_double("best");
  cooldown_counter_ = sd.at("cooldown_counter", what).to_int("cooldown_counter");
  num_bad_epochs_ = sd.at("num_bad_epochs", what).to_int("num_bad_epochs");
  threshold_ = sd.at("threshold", what).to_double("threshold");
  if (const Value* l = sd.get("_last_lr")) last_lr_ = to_doubles(*l, "_last_lr");
}

// ---- composite schedulers

namespace {
Optimizer& first_optimizer(const char* owner, const std::vector<std::shared_ptr<LRScheduler>>& schedulers) {
  KINDLE_CHECK_VALUE(!schedulers.empty(), owner, " expects at least one scheduler, but got no scheduler.");
  KINDLE_CHECK_VALUE(schedulers[0] != nullptr, owner, ": the scheduler at index 0 is null");
  return schedulers[0]->optimizer();
}
}  // namespace

CompositeScheduler::CompositeScheduler(const char* owner, Optimizer& optimizer,
                                       std::vector<std::shared_ptr<LRScheduler>> schedulers)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)) {
  first_optimizer(owner, schedulers_);
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    KINDLE_CHECK_VALUE(schedulers_[i] != nullptr, owner, ": the scheduler at index ", i, " is null");
    KINDLE_CHECK_VALUE(&schedulers_[i]->optimizer() == &optimizer, owner,
                       " expects all schedulers to belong to the same optimizer, but got the scheduler at index ",
                       i, " with a different one");
  }
}

Value CompositeScheduler::parts_state_dict() const {
  std::vector<Value> each;
  for (auto& s : schedulers_) each.push_back(s->state_dict());
  return Value::list(std::move(each));
}

void CompositeScheduler::load_parts_state_dict(const Value& sd, const char* owner) {
  const auto& each = sd.at("_schedulers", owner).items("_schedulers");
  KINDLE_CHECK_VALUE(each.size() == schedulers_.size(), owner, ".load_state_dict: the state has ", each.size(),
                     " schedulers, this one has ", schedulers_.size());
  for (size_t i = 0; i < each.size(); ++i) schedulers_[i]->load_state_dict(each[i]);
  if (const Value* l = sd.get("_last_lr")) last_lr_ = to_doubles(*l, "_last_lr");
}

// ---- SequentialLR

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : CompositeScheduler("SequentialLR", optimizer, std::move(schedulers)), milestones_(std::move(milestones)) {
  KINDLE_CHECK_VALUE(milestones_.size() == schedulers_.size() - 1,
                     "Sequential Schedulers expects number of schedulers provided to be one more than the number "
                     "of milestone points, but got number of schedulers ", schedulers_.size(),
                     " and the number of milestones to be equal to ", milestones_.size());
  last_epoch_ = 0;
  // Undo the initial steps the schedulers took when they were built, then start the first.
  for (size_t g = 0; g < optimizer.num_param_groups(); ++g) optimizer.set_lr(g, optimizer.initial_lr(g));
  for (auto& s : schedulers_) undo_initial_steps(*s);
  size_t idx = size_t(std::upper_bound(milestones_.begin(), milestones_.end(), int64_t(0)) - milestones_.begin());
  schedulers_[idx]->initial_step();
  last_lr_ = schedulers_[idx]->get_last_lr();
}

void SequentialLR::undo_initial_steps(LRScheduler& s) {
  if (auto* composite = dynamic_cast<CompositeScheduler*>(&s)) {
    for (auto& part : composite->schedulers()) undo_initial_steps(*part);
  } else {
    --s.last_epoch_;
  }
}

void SequentialLR::step() {
  ++last_epoch_;
  size_t idx = size_t(std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) s.update_lr_at(0);  // the next one starts over
  else s.step();
  last_lr_ = s.get_last_lr();
}

Value SequentialLR::state_dict() const {
  std::vector<Value> milestones;
  for (int64_t m : milestones_) milestones.emplace_back(m);
  return Value::dict({{Value("_milestones"), Value::list(std::move(milestones))},
                      {Value("last_epoch"), Value(last_epoch_)},
                      {Value("_last_lr"), doubles(last_lr_)},
                      {Value("_schedulers"), parts_state_dict()}});
}

void SequentialLR::load_state_dict(const Value& sd) {
  const char* what = "SequentialLR";
  std::vector<int64_t> milestones;
  for (const Value& m : sd.at("_milestones", what).items("_milestones")) milestones.push_back(m.to_int("_milestones"));
  KINDLE_CHECK_VALUE(milestones.size() == schedulers_.size() - 1, "SequentialLR.load_state_dict: ",
                     milestones.size(), " milestones for ", schedulers_.size(), " schedulers");
  load_parts_state_dict(sd, what);
  milestones_ = std::move(milestones);
  last_epoch_ = sd.at("last_epoch", what).to_int("last_epoch");
}

// ---- ChainedScheduler

ChainedScheduler::ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers)
    // (a copy, not a move: the optimizer is read from the list in the same call)
    : CompositeScheduler("ChainedScheduler", first_optimizer("ChainedScheduler", schedulers), schedulers) {
  last_lr_ = group_lrs();
}

void ChainedScheduler::step() {
  for (auto& s : schedulers_) s->step();
  last_lr_ = group_lrs();
}

Value ChainedScheduler::state_dict() const {
  return Value::dict({{Value("_last_lr"), doubles(last_lr_)}, {Value("_schedulers"), parts_state_dict()}});
}

void ChainedScheduler::load_state_dict(const Value& sd) { load_parts_state_dict(sd, "ChainedScheduler"); }

}  // namespace kindle::optim
