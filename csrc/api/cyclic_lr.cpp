// The schedules that move the momentum with the learning rate, per batch: CyclicLR and
// OneCycleLR, following torch.optim.lr_scheduler's definitions step for step (so the rates a C++
// loop sets are the ones a Python loop sets), and the optimizers' momentum accessors they use.
#include <cmath>
#include <string>

#include "kindle/optimizers.h"
#include "util.h"

namespace kindle::optim {

double Optimizer::momentum(size_t) const {
  KINDLE_CHECK_VALUE(false, "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
  return 0;
}
void Optimizer::set_momentum(size_t, double) {
  KINDLE_CHECK_VALUE(false, "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
}

namespace {

// One value per parameter group: a single value serves every group (Python's _format_param).
std::vector<double> per_group(const std::vector<double>& v, size_t groups, const char* name) {
  if (v.size() == 1) return std::vector<double>(groups, v[0]);
  KINDLE_CHECK_VALUE(v.size() == groups, "expected ", groups, " values for ", name, ", got ", v.size());
  return v;
}

using detail::doubles;
using detail::to_doubles;

// Sets each group's momentum to max (the start of a cycle); checks the optimizer has one.
void start_momentums(Optimizer& opt, const std::vector<double>& max) {
  for (size_t g = 0; g < opt.num_param_groups(); ++g) {
    (void)opt.momentum(g);  // ValueError without momentum or beta1
    opt.set_momentum(g, max[g]);
  }
}

const char* mode_name(CyclicLROptions::Mode m) {
  return m == CyclicLROptions::triangular ? "triangular" : m == CyclicLROptions::triangular2 ? "triangular2" : "exp_range";
}

}  // namespace

CyclicLR::CyclicLR(Optimizer& optimizer, CyclicLROptions options) : LRScheduler(optimizer), options_(std::move(options)) {
  size_t groups = optimizer.num_param_groups();
  std::vector<double> base = per_group(options_.base_lr(), groups, "base_lr");
  for (size_t g = 0; g < groups; ++g) {
    optimizer.set_lr(g, base[g]);
    optimizer.set_initial_lr(g, base[g]);  // its cycle's base, whatever came before
  }
  max_lrs_ = per_group(options_.max_lr(), groups, "max_lr");
  KINDLE_CHECK_VALUE(options_.step_size_up() > 0, "CyclicLR: step_size_up must be positive, got ", options_.step_size_up());
  double up = double(options_.step_size_up());
  double down = options_.step_size_down() ? double(*options_.step_size_down()) : up;
  KINDLE_CHECK_VALUE(down > 0, "CyclicLR: step_size_down must be positive, got ", down);
  total_size_ = up + down;
  step_ratio_ = up / total_size_;
  if (options_.cycle_momentum()) {
    base_momentums_ = per_group(options_.base_momentum(), groups, "base_momentum");
    max_momentums_ = per_group(options_.max_momentum(), groups, "max_momentum");
    start_momentums(optimizer, max_momentums_);
  }
  initialize();
}

std::vector<double> CyclicLR::get_lr() {
  const double e = double(last_epoch_);
  const double cycle = std::floor(1 + e / total_size_);
  const double x = 1.0 + e / total_size_ - cycle;
  const double rise = x <= step_ratio_ ? x / step_ratio_ : (x - 1) / (step_ratio_ - 1);
  double scale = 1.0;
  if (options_.scale_fn()) {
    scale = options_.scale_fn()(options_.scale_by_cycle() ? cycle : e);
  } else if (options_.mode() == CyclicLROptions::triangular2) {
    scale = 1 / std::pow(2.0, cycle - 1);
  } else if (options_.mode() == CyclicLROptions::exp_range) {
    scale = std::pow(options_.gamma(), e);
  }
  std::vector<double> lrs(base_lrs_.size());
  for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = base_lrs_[g] + (max_lrs_[g] - base_lrs_[g]) * rise * scale;
  if (options_.cycle_momentum())
    for (size_t g = 0; g < lrs.size(); ++g)
      optimizer_.set_momentum(g, max_momentums_[g] - (max_momentums_[g] - base_momentums_[g]) * rise * scale);
  return lrs;
}

// Python's keys (its CyclicLR's attributes), so a state saved on either side resumes on the other.
Value::Entries CyclicLR::hyperparameters() const {
  bool by_cycle = options_.scale_fn() ? options_.scale_by_cycle() : options_.mode() != CyclicLROptions::exp_range;
  Value::Entries e = {{"max_lrs", doubles(max_lrs_)}, {"total_size", total_size_}, {"step_ratio", step_ratio_},
                      {"mode", mode_name(options_.mode())}, {"gamma", options_.gamma()},
                      {"scale_mode", by_cycle ? "cycle" : "iterations"}, {"_scale_fn_custom", nullptr},
                      {"cycle_momentum", options_.cycle_momentum()}};
  if (options_.cycle_momentum()) {
    e.emplace_back("use_beta1", optimizer_.momentum_is_beta1());
    e.emplace_back("base_momentums", doubles(base_momentums_));
    e.emplace_back("max_momentums", doubles(max_momentums_));
  }
  return e;
}

void CyclicLR::load_hyperparameters(const Value& sd) {
  const char* what = "CyclicLR state_dict";
  max_lrs_ = to_doubles(sd.at("max_lrs", what), "max_lrs");
  total_size_ = sd.at("total_size", what).to_double("total_size");
  step_ratio_ = sd.at("step_ratio", what).to_double("step_ratio");
  const std::string& mode = sd.at("mode", what).to_string("mode");
  options_.mode(mode == "triangular2" ? CyclicLROptions::triangular2
                : mode == "exp_range"  ? CyclicLROptions::exp_range
                                       : CyclicLROptions::triangular);
  options_.gamma(sd.at("gamma", what).to_double("gamma"));
  options_.cycle_momentum(sd.at("cycle_momentum", what).to_bool("cycle_momentum"));
  if (options_.cycle_momentum()) {
    base_momentums_ = to_doubles(sd.at("base_momentums", what), "base_momentums");
    max_momentums_ = to_doubles(sd.at("max_momentums", what), "max_momentums");
  }
  KINDLE_CHECK_VALUE(max_lrs_.size() == optimizer_.num_param_groups() && total_size_ > 0 && step_ratio_ > 0,
                     "CyclicLR.load_state_dict: max_lrs has ", max_lrs_.size(), " entries for ",
                     optimizer_.num_param_groups(), " groups (total_size ", total_size_, ")");
}

namespace {
enum { kInitial = 0, kMax = 1, kMin = 2 };    // lr values of a group
enum { kMaxMomentum = 0, kBaseMomentum = 1 };  // momentum values of a group
const char* const kLrNames[] = {"initial_lr", "max_lr", "min_lr"};
const char* const kMomentumNames[] = {"max_momentum", "base_momentum"};
}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, OneCycleLROptions options)
    : LRScheduler(optimizer), options_(std::move(options)) {
  const auto& o = options_;
  if (o.total_steps()) {
    KINDLE_CHECK_VALUE(*o.total_steps() > 0, "Expected positive integer total_steps, but got ", *o.total_steps());
    total_steps_ = *o.total_steps();
  } else {
    KINDLE_CHECK_VALUE(o.epochs() && o.steps_per_epoch(),
                       "You must define either total_steps OR (epochs AND steps_per_epoch)");
    KINDLE_CHECK_VALUE(*o.epochs() > 0, "Expected positive integer epochs, but got ", *o.epochs());
    KINDLE_CHECK_VALUE(*o.steps_per_epoch() > 0, "Expected positive integer steps_per_epoch, but got ",
                       *o.steps_per_epoch());
    total_steps_ = *o.epochs() * *o.steps_per_epoch();
  }
  KINDLE_CHECK_VALUE(o.pct_start() >= 0 && o.pct_start() <= 1, "Expected float between 0 and 1 pct_start, but got ",
                     o.pct_start());
  const double warmup_end = o.pct_start() * double(total_steps_) - 1, last = double(total_steps_ - 1);
  if (o.three_phase())
    phases_ = {{warmup_end, kInitial, kMax, kMaxMomentum, kBaseMomentum},
               {2 * o.pct_start() * double(total_steps_) - 2, kMax, kInitial, kBaseMomentum, kMaxMomentum},
               {last, kInitial, kMin, kMaxMomentum, kMaxMomentum}};
  else
    phases_ = {{warmup_end, kInitial, kMax, kMaxMomentum, kBaseMomentum}, {last, kMax, kMin, kBaseMomentum, kMaxMomentum}};
  size_t groups = optimizer.num_param_groups();
  std::vector<double> max_lr = per_group(o.max_lr(), groups, "max_lr");
  for (size_t g = 0; g < groups; ++g) {
    double initial = max_lr[g] / o.div_factor();
    lrs_.push_back({initial, max_lr[g], initial / o.final_div_factor()});
    optimizer.set_lr(g, initial);  // so that base_lrs are the initial lrs, as Python's
    optimizer.set_initial_lr(g, initial);
  }
  if (o.cycle_momentum()) {
    std::vector<double> max_m = per_group(o.max_momentum(), groups, "max_momentum");
    std::vector<double> base_m = per_group(o.base_momentum(), groups, "base_momentum");
    for (size_t g = 0; g < groups; ++g) momentums_.push_back({max_m[g], base_m[g]});
    start_momentums(optimizer, max_m);
  }
  initialize();
}

std::vector<double> OneCycleLR::get_lr() {
  const double step = double(last_epoch_);
  KINDLE_CHECK_VALUE(last_epoch_ <= total_steps_, "Tried to step ", last_epoch_, " times. The specified number of total steps is ",
                     total_steps_);
  const bool cosine = options_.anneal_strategy() == OneCycleLROptions::cos;
  auto anneal = [&](double start, double end, double pct) {
    return cosine ? end + (start - end) / 2.0 * (std::cos(M_PI * pct) + 1) : (end - start) * pct + start;
  };
  std::vector<double> lrs(lrs_.size());
  for (size_t g = 0; g < lrs_.size(); ++g) {
    double start_step = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& p = phases_[i];
      if (step <= p.end_step || i + 1 == phases_.size()) {
        double pct = (step - start_step) / (p.end_step - start_step);
        lrs[g] = anneal(lrs_[g][p.start_lr], lrs_[g][p.end_lr], pct);
        if (options_.cycle_momentum())
          optimizer_.set_momentum(g, anneal(momentums_[g][p.start_momentum], momentums_[g][p.end_momentum], pct));
        break;
      }
      start_step = p.end_step;
    }
  }
  return lrs;
}

// Python's keys where it has them (its per-group values live in the optimizer's param groups;
// here they are the scheduler's "group_lrs" / "group_momentums").
Value::Entries OneCycleLR::hyperparameters() const {
  Value::Items phases;
  for (const Phase& p : phases_)
    phases.push_back(Value::dict({{"end_step", p.end_step}, {"start_lr", kLrNames[p.start_lr]},
                                  {"end_lr", kLrNames[p.end_lr]}, {"start_momentum", kMomentumNames[p.start_momentum]},
                                  {"end_momentum", kMomentumNames[p.end_momentum]}}));
  Value::Items lrs, moms;
  for (const auto& l : lrs_) lrs.push_back(doubles({l[0], l[1], l[2]}));
  for (const auto& m : momentums_) moms.push_back(doubles({m[0], m[1]}));
  Value::Entries e = {{"total_steps", total_steps_}, {"_schedule_phases", Value::list(std::move(phases))},
                      {"_anneal_func_type", options_.anneal_strategy() == OneCycleLROptions::cos ? "cos" : "linear"},
                      {"cycle_momentum", options_.cycle_momentum()}, {"group_lrs", Value::list(std::move(lrs))},
                      {"group_momentums", Value::list(std::move(moms))}};
  if (options_.cycle_momentum()) e.emplace_back("use_beta1", optimizer_.momentum_is_beta1());
  return e;
}

void OneCycleLR::load_hyperparameters(const Value& sd) {
  const char* what = "OneCycleLR state_dict";
  total_steps_ = sd.at("total_steps", what).to_int("total_steps");
  options_.anneal_strategy(sd.at("_anneal_func_type", what).to_string("_anneal_func_type") == "linear"
                               ? OneCycleLROptions::linear
                               : OneCycleLROptions::cos);
  options_.cycle_momentum(sd.at("cycle_momentum", what).to_bool("cycle_momentum"));
  auto index_of = [](const std::string& name, const char* const* names, int n) {
    for (int i = 0; i < n; ++i)
      if (name == names[i]) return i;
    KINDLE_CHECK_VALUE(false, "OneCycleLR.load_state_dict: unknown schedule value '", name, "'");
    return 0;
  };
  std::vector<Phase> phases;
  for (const Value& p : sd.at("_schedule_phases", what).items("_schedule_phases"))
    phases.push_back({p.at("end_step", what).to_double("end_step"),
                      index_of(p.at("start_lr", what).to_string(), kLrNames, 3),
                      index_of(p.at("end_lr", what).to_string(), kLrNames, 3),
                      index_of(p.at("start_momentum", what).to_string(), kMomentumNames, 2),
                      index_of(p.at("end_momentum", what).to_string(), kMomentumNames, 2)});
  KINDLE_CHECK_VALUE(!phases.empty(), "OneCycleLR.load_state_dict: no schedule phases");
  phases_ = std::move(phases);
  if (const Value* l = sd.get("group_lrs")) {  // absent in Python's state: keep this scheduler's
    lrs_.clear();
    for (const Value& g : l->items("group_lrs")) {
      std::vector<double> v = to_doubles(g, "group_lrs");
      KINDLE_CHECK_VALUE(v.size() == 3, "OneCycleLR.load_state_dict: a group_lrs entry has ", v.size(), " values");
      lrs_.push_back({v[0], v[1], v[2]});
    }
  }
  if (const Value* m = sd.get("group_momentums")) {
    momentums_.clear();
    for (const Value& g : m->items("group_momentums")) {
      std::vector<double> v = to_doubles(g, "group_momentums");
      KINDLE_CHECK_VALUE(v.size() == 2, "OneCycleLR.load_state_dict: a group_momentums entry has ", v.size(), " values");
      momentums_.push_back({v[0], v[1]});
    }
  }
  KINDLE_CHECK_VALUE(lrs_.size() == optimizer_.num_param_groups() &&
                         (!options_.cycle_momentum() || momentums_.size() == optimizer_.num_param_groups()),
                     "OneCycleLR.load_state_dict: the state has values for ", lrs_.size(), " groups, the optimizer ",
                     optimizer_.num_param_groups());
}

}  // namespace kindle::optim
