// kindle::optim: SGD, Adam, AdamW, RMSprop with parameter groups, and the StepLR and
// CosineAnnealingLR schedulers. Each group is updated by one call of the fused step kernels of
// kindle/optim.h (the Python optimizers call the same kernels, so trajectories match). State
// dicts have Python's structure and keys, so kindle::save(opt.state_dict(), path) writes what
// Python's kindle.save(opt.state_dict(), path) writes and either side loads the other's.
//
//   optim::SGD opt(net.parameters(), optim::SGDOptions(0.1).momentum(0.9));
//   optim::Adam adam({{body.parameters(), optim::AdamOptions(1e-3)},
//                     {head.parameters(), optim::AdamOptions(1e-4)}});   // two groups
//   opt.zero_grad(); loss.backward(); opt.step();
#pragma once
#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kindle/nn/options.h"
#include "kindle/optim.h"
#include "kindle/serialize.h"

namespace kindle::serialize {
class OutputArchive;
class InputArchive;
}  // namespace kindle::serialize

namespace kindle::optim {

// Betas: (beta1, beta2); std::make_tuple(0.5, 0.999) converts, as libtorch writes it.
struct Betas : std::pair<double, double> {
  using std::pair<double, double>::pair;
  Betas(const std::pair<double, double>& p) : std::pair<double, double>(p) {}
  Betas(const std::tuple<double, double>& t) : std::pair<double, double>(std::get<0>(t), std::get<1>(t)) {}
};

// The options every optimizer has (libtorch's OptimizerOptions): its learning rate.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
};

#define KINDLE_OPTIMIZER_OPTIONS(Name)                                                             \
  double get_lr() const override { return lr(); }                                                  \
  void set_lr(double v) override { lr(v); }                                                        \
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<Name>(*this); }

struct SGDOptions : OptimizerOptions {
  KINDLE_OPTIMIZER_OPTIONS(SGDOptions)
  SGDOptions(double lr = 1e-3) : lr_(lr) {}
  KINDLE_ARG(double, lr);
  KINDLE_ARG(double, momentum) = 0;
  KINDLE_ARG(double, dampening) = 0;
  KINDLE_ARG(double, weight_decay) = 0;
  KINDLE_ARG(bool, nesterov) = false;
  KINDLE_ARG(bool, maximize) = false;
};

struct AdamOptions : OptimizerOptions {
  KINDLE_OPTIMIZER_OPTIONS(AdamOptions)
  AdamOptions(double lr = 1e-3) : lr_(lr) {}
  KINDLE_ARG(double, lr);
  KINDLE_ARG(Betas, betas) = {0.9, 0.999};
  KINDLE_ARG(double, eps) = 1e-8;
  KINDLE_ARG(double, weight_decay) = 0;
  KINDLE_ARG(bool, amsgrad) = false;
  KINDLE_ARG(bool, maximize) = false;
};

// Adam with decoupled weight decay; weight_decay defaults to 1e-2, as in PyTorch.
struct AdamWOptions : OptimizerOptions {
  KINDLE_OPTIMIZER_OPTIONS(AdamWOptions)
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}
  KINDLE_ARG(double, lr);
  KINDLE_ARG(Betas, betas) = {0.9, 0.999};
  KINDLE_ARG(double, eps) = 1e-8;
  KINDLE_ARG(double, weight_decay) = 1e-2;
  KINDLE_ARG(bool, amsgrad) = false;
  KINDLE_ARG(bool, maximize) = false;
};

struct RMSpropOptions : OptimizerOptions {
  KINDLE_OPTIMIZER_OPTIONS(RMSpropOptions)
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}
  KINDLE_ARG(double, lr);
  KINDLE_ARG(double, alpha) = 0.99;
  KINDLE_ARG(double, eps) = 1e-8;
  KINDLE_ARG(double, weight_decay) = 0;
  KINDLE_ARG(double, momentum) = 0;
  KINDLE_ARG(bool, centered) = false;
  KINDLE_ARG(bool, maximize) = false;
};

struct AdagradOptions : OptimizerOptions {
  KINDLE_OPTIMIZER_OPTIONS(AdagradOptions)
  AdagradOptions(double lr = 1e-2) : lr_(lr) {}
  KINDLE_ARG(double, lr);
  KINDLE_ARG(double, lr_decay) = 0;
  KINDLE_ARG(double, weight_decay) = 0;
  KINDLE_ARG(double, initial_accumulator_value) = 0;
  KINDLE_ARG(double, eps) = 1e-10;
  KINDLE_ARG(bool, maximize) = false;
};

struct LBFGSOptions : OptimizerOptions {
  KINDLE_OPTIMIZER_OPTIONS(LBFGSOptions)
  LBFGSOptions(double lr = 1) : lr_(lr) {}
  KINDLE_ARG(double, lr);
  KINDLE_ARG(int64_t, max_iter) = 20;
  KINDLE_ARG(std::optional<int64_t>, max_eval);  // default max_iter * 5 / 4
  KINDLE_ARG(double, tolerance_grad) = 1e-7;
  KINDLE_ARG(double, tolerance_change) = 1e-9;
  KINDLE_ARG(int64_t, history_size) = 100;
  KINDLE_ARG(std::optional<std::string>, line_search_fn);  // none or "strong_wolfe"
};

// What every optimizer offers, whatever its options type (schedulers and training loops use it).
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every parameter that has a gradient (grad mode off inside).
  virtual void step() = 0;
  // Re-evaluates the model first (grad mode on) and returns its loss (LBFGS: evaluates it as often
  // as its iterations need and returns the first loss).
  virtual Tensor step(const std::function<Tensor()>& closure);
  // Sets every grad to undefined (or, with set_to_none false, zeroes it in place).
  void zero_grad(bool set_to_none = true);

  virtual size_t num_param_groups() const = 0;
  virtual const std::vector<Tensor>& params(size_t group) const = 0;
  std::vector<Tensor> all_params() const;
  virtual double lr(size_t group) const = 0;
  virtual void set_lr(size_t group, double lr) = 0;
  // The lr a group had when the first scheduler was attached (Python's group["initial_lr"]): the
  // base every later scheduler starts from, so schedulers stepped together compose as in Python.
  // The first call for a group records its current lr.
  double initial_lr(size_t group);
  void set_initial_lr(size_t group, double lr);
  // The momentum a cyclic schedule drives (CyclicLR, OneCycleLR): momentum for SGD and RMSprop,
  // beta1 for the Adam family. ValueError for an optimizer without either.
  virtual double momentum(size_t group) const;
  virtual void set_momentum(size_t group, double momentum);
  // Whether momentum() is Adam's beta1 (the state dict's "use_beta1").
  virtual bool momentum_is_beta1() const { return false; }

  // {"state": {index: {name: tensor}}, "param_groups": [{hyperparameters..., "params": [index]}]}
  // with Python's names; state tensors are the live ones.
  virtual Value state_dict() const = 0;
  // Loads a state dict of an optimizer of the same kind over the same parameters (same group
  // sizes); floating state tensors take their parameter's dtype. ValueError on a mismatch.
  virtual void load_state_dict(const Value& state_dict) = 0;
  void save(const std::string& path) const { kindle::save(state_dict(), path); }
  void load(const std::string& path) { load_state_dict(load_value(path)); }
  // libtorch's archive forms: the state dict's entries ("state", "param_groups") as archive keys,
  // so an archive holding only an optimizer saves the file Python's kindle.load reads as one.
  void save(serialize::OutputArchive& archive) const;
  void load(serialize::InputArchive& archive);

 private:
  std::vector<std::optional<double>> initial_lrs_;
};

// A group of parameters whose options are not fixed yet (libtorch's OptimizerParamGroup): the
// optimizer fills missing options from its defaults; given options must be the optimizer's own
// kind (AdamOptions for Adam), else TypeError.
class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& o)
      : params_(o.params_), options_(o.options_ ? o.options_->clone() : nullptr) {}
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options() {
    KINDLE_CHECK(options_ != nullptr, "OptimizerParamGroup: this group has no options");
    return *options_;
  }
  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

// A group of parameters with the optimizer's options.
template <typename Options>
class ParamGroup {
 public:
  ParamGroup(std::vector<Tensor> params, Options options) : params_(std::move(params)), options_(std::move(options)) {}
  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  Options& options() { return options_; }
  const Options& options() const { return options_; }
  bool has_options() const { return true; }

 private:
  std::vector<Tensor> params_;
  Options options_;
};

namespace detail {
template <typename Options>
std::vector<ParamGroup<Options>> typed_groups(std::vector<OptimizerParamGroup> groups, const Options& defaults,
                                              const char* optimizer) {
  std::vector<ParamGroup<Options>> out;
  for (auto& g : groups) {
    if (!g.has_options()) {
      out.emplace_back(g.params(), defaults);
      continue;
    }
    auto* o = dynamic_cast<Options*>(&g.options());
    KINDLE_CHECK_TYPE(o != nullptr, optimizer, ": a parameter group's options are not ", optimizer, "'s options");
    out.emplace_back(g.params(), *o);
  }
  return out;
}
}  // namespace detail

// Groups, options and per-parameter state; the subclasses add the update rule.
template <typename Options, typename State>
class OptimizerBase : public Optimizer {
 public:
  using Group = ParamGroup<Options>;

  const std::vector<Group>& param_groups() const { return groups_; }
  std::vector<Group>& param_groups() { return groups_; }
  const Options& defaults() const { return defaults_; }
  // Python's checks: non-leaf tensors and parameters already in a group raise ValueError.
  void add_param_group(std::vector<Tensor> params, const Options& options);
  void add_param_group(std::vector<Tensor> params) { add_param_group(std::move(params), defaults_); }

  size_t num_param_groups() const override { return groups_.size(); }
  const std::vector<Tensor>& params(size_t g) const override { return groups_.at(g).params(); }
  double lr(size_t g) const override { return groups_.at(g).options().lr(); }
  void set_lr(size_t g, double lr) override { groups_.at(g).options().lr(lr); }
  double momentum(size_t g) const override {
    const Options& o = groups_.at(g).options();
    if constexpr (requires { o.betas(); }) return o.betas().first;
    else if constexpr (requires { o.momentum(); }) return o.momentum();
    else return Optimizer::momentum(g);
  }
  void set_momentum(size_t g, double m) override {
    Options& o = groups_.at(g).options();
    if constexpr (requires { o.betas(); }) o.betas(Betas(m, o.betas().second));
    else if constexpr (requires { o.momentum(); }) o.momentum(m);
    else Optimizer::set_momentum(g, m);
  }
  bool momentum_is_beta1() const override { return requires(const Options& o) { o.betas(); }; }
  // The state of one parameter (nullptr before its first step).
  const State* state(const Tensor& param) const {
    auto it = state_.find(param.impl());
    return it == state_.end() ? nullptr : &it->second;
  }

 protected:
  OptimizerBase(std::vector<Group> groups, const Options& defaults);
  std::vector<Group> groups_;
  Options defaults_;
  std::unordered_map<const TensorImpl*, State> state_;
};

// ---- SGD

struct SGDState {
  Tensor momentum_buffer;  // undefined until the first step with momentum
};

class SGD : public OptimizerBase<SGDOptions, SGDState> {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options);
  SGD(std::vector<ParamGroup<SGDOptions>> groups, const SGDOptions& defaults = {});
  SGD(std::vector<OptimizerParamGroup> groups, const SGDOptions& defaults = {})
      : SGD(detail::typed_groups(std::move(groups), defaults, "SGD"), defaults) {}
  using Optimizer::step;
  void step() override;
  Value state_dict() const override;
  void load_state_dict(const Value& state_dict) override;
};

// ---- Adam, AdamW

struct AdamState {
  int64_t step = 0;
  Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
};

class Adam : public OptimizerBase<AdamOptions, AdamState> {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options = {});
  Adam(std::vector<ParamGroup<AdamOptions>> groups, const AdamOptions& defaults = {});
  Adam(std::vector<OptimizerParamGroup> groups, const AdamOptions& defaults = {})
      : Adam(detail::typed_groups(std::move(groups), defaults, "Adam"), defaults) {}
  using Optimizer::step;
  void step() override;
  Value state_dict() const override;
  void load_state_dict(const Value& state_dict) override;

 protected:
  bool decoupled_ = false;
};

class AdamW : public OptimizerBase<AdamWOptions, AdamState> {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& options = {});
  AdamW(std::vector<ParamGroup<AdamWOptions>> groups, const AdamWOptions& defaults = {});
  AdamW(std::vector<OptimizerParamGroup> groups, const AdamWOptions& defaults = {})
      : AdamW(detail::typed_groups(std::move(groups), defaults, "AdamW"), defaults) {}
  using Optimizer::step;
  void step() override;
  Value state_dict() const override;
  void load_state_dict(const Value& state_dict) override;
};

// ---- RMSprop

struct RMSpropState {
  int64_t step = 0;
  Tensor square_avg, momentum_buffer, grad_avg;
};

class RMSprop : public OptimizerBase<RMSpropOptions, RMSpropState> {
 public:
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& options = {});
  RMSprop(std::vector<ParamGroup<RMSpropOptions>> groups, const RMSpropOptions& defaults = {});
  RMSprop(std::vector<OptimizerParamGroup> groups, const RMSpropOptions& defaults = {})
      : RMSprop(detail::typed_groups(std::move(groups), defaults, "RMSprop"), defaults) {}
  using Optimizer::step;
  void step() override;
  Value state_dict() const override;
  void load_state_dict(const Value& state_dict) override;
};

// The sums of squared gradients start at initial_accumulator_value when the optimizer is built
// (as Python's and libtorch's do), so a state dict saved before any step already holds them.
struct AdagradState {
  int64_t step = 0;
  Tensor sum;
};

class Adagrad : public OptimizerBase<AdagradOptions, AdagradState> {
 public:
  Adagrad(std::vector<Tensor> params, const AdagradOptions& options = {});
  Adagrad(std::vector<ParamGroup<AdagradOptions>> groups, const AdagradOptions& defaults = {});
  Adagrad(std::vector<OptimizerParamGroup> groups, const AdagradOptions& defaults = {})
      : Adagrad(detail::typed_groups(std::move(groups), defaults, "Adagrad"), defaults) {}
  using Optimizer::step;
  void step() override;
  Value state_dict() const override;
  void load_state_dict(const Value& state_dict) override;

 private:
  void init_state();
};

// ---- LBFGS: the algorithm is csrc/optim/lbfgs.cpp, shared with Python's kindle.optim.LBFGS; one
// parameter group; step(closure) only (the closure zeroes the grads, computes the loss, calls
// backward and returns the loss). The state dict is Python's (the state on the first parameter).

class LBFGS : public OptimizerBase<LBFGSOptions, LBFGSState> {
 public:
  LBFGS(std::vector<Tensor> params, const LBFGSOptions& options = {});
  void step() override;  // RuntimeError: LBFGS needs a closure
  Tensor step(const std::function<Tensor()>& closure) override;
  Value state_dict() const override;
  void load_state_dict(const Value& state_dict) override;
};

// ---- learning-rate schedulers (Python's recursive forms, so they compose and match Python)

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {}
  virtual ~LRScheduler() = default;
  // Advances one epoch and sets every group's lr.
  virtual void step();
  std::vector<double> get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return optimizer_; }
  // Python's scheduler state dict ({"base_lrs", "last_epoch", "_step_count", "_last_lr", ...}
  // plus the subclass's hyperparameters), so a schedule saved on either side resumes on the other.
  virtual Value state_dict() const;
  // ValueError when base_lrs does not have one entry per parameter group.
  virtual void load_state_dict(const Value& state_dict);
  void save(const std::string& path) const { kindle::save(state_dict(), path); }
  void load(const std::string& path) { load_state_dict(load_value(path)); }

 protected:
  // Called by the subclass constructor: records base lrs and takes the initial step (epoch 0).
  void initialize();
  virtual std::vector<double> get_lr() = 0;
  virtual Value::Entries hyperparameters() const = 0;
  virtual void load_hyperparameters(const Value& state_dict) = 0;
  std::vector<double> group_lrs() const;
  // True during the step taken at construction (Python's `_is_initial`).
  bool initial() const { return initial_; }
  // Python's _get_closed_form_lr: the rates at last_epoch_ from base_lrs_, for the schedulers
  // that have one (nullopt otherwise).
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
  // Python's _initial_step (the step taken at construction) and _update_lr(epoch) (a jump to
  // `epoch`: the closed form where there is one, else get_lr), as SequentialLR drives them.
  void initial_step();
  void update_lr_at(int64_t epoch);
  friend class SequentialLR;
  Optimizer& optimizer_;
  std::vector<double> base_lrs_, last_lr_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  bool initial_ = false;
};

// lr * gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  Value::Entries hyperparameters() const override;
  void load_hyperparameters(const Value& state_dict) override;
  int64_t step_size_;
  double gamma_;
};

// Cosine annealing from the initial lr to eta_min over T_max epochs.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  Value::Entries hyperparameters() const override;
  void load_hyperparameters(const Value& state_dict) override;
  int64_t T_max_;
  double eta_min_;
};

// The other schedulers of torch.optim.lr_scheduler, in Python's recursive forms (each step
// derives the new rate from the current one) and with Python's state dicts. Each steps once when
// built (epoch 0), as in Python.

// lr = initial lr * lr_lambda(epoch): one function for every group, or one per group.
class LambdaLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;
  LambdaLR(Optimizer& optimizer, Lambda lr_lambda);
  LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas);

 protected:
  LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, const char* name);
  std::vector<double> get_lr() override;
  Value::Entries hyperparameters() const override;
  void load_hyperparameters(const Value&) override {}
  std::vector<Lambda> lambdas_;
};

// lr = lr * lr_lambda(epoch) at every step after the first.
class MultiplicativeLR : public LambdaLR {
 public:
  MultiplicativeLR(Optimizer& optimizer, Lambda lr_lambda);
  MultiplicativeLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas);

 protected:
  std::vector<double> get_lr() override;
};

// lr * gamma at each milestone (a milestone listed twice multiplies twice).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, const std::vector<int64_t>& milestones, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  Value::Entries hyperparameters() const override;
  void load_hyperparameters(const Value& state_dict) override;
  std::vector<std::pair<int64_t, int64_t>> milestones_;  // epoch -> times listed, sorted
  double gamma_;
};

// lr * factor for the first total_iters epochs, then lr.
class ConstantLR : public LRScheduler {
 public:
  explicit ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  Value::Entries hyperparameters() const override;
  void load_hyperparameters(const Value& state_dict) override;
  double factor_;
  int64_t total_iters_;
};

// The multiplier goes linearly from start_factor to end_factor over total_iters epochs.
class LinearLR : public LRScheduler {
 public:
  explicit LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
                    int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  Value::Entries hyperparameters() const override;
  void load_hyperparameters(const Value& state_dict) override;
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

// lr * gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  Value::Entries hyperparameters() const override;
  void load_hyperparameters(const Value& state_dict) override;
  double gamma_;
};

// lr decays as (1 - epoch / total_iters)^power, reaching 0 at total_iters.
class PolynomialLR : public LRScheduler {
 public:
  explicit PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  Value::Entries hyperparameters() const override;
  void load_hyperparameters(const Value& state_dict) override;
  int64_t total_iters_;
  double power_;
};

// Cosine annealing restarted every T_i epochs; T_i starts at T_0 and grows by T_mult at each
// restart.
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1, double eta_min = 0.0);

 protected:
  std::vector<double> get_lr() override;
  Value::Entries hyperparameters() const override;
  void load_hyperparameters(const Value& state_dict) override;
  int64_t T_0_, T_i_, T_mult_;
  double eta_min_, T_cur_ = 0;
};

// The lr cycles between base_lr and max_lr each step_size_up + step_size_down steps
// (triangular; triangular2 halves the amplitude each cycle; exp_range scales it by gamma^step; or
// a custom scale_fn of the cycle number or of the step), the momentum inversely between
// max_momentum and base_momentum. One entry per parameter group, or one for all. Steps per batch.
struct CyclicLROptions {
  enum Mode { triangular, triangular2, exp_range };
  CyclicLROptions(std::vector<double> base_lr, std::vector<double> max_lr)
      : base_lr_(std::move(base_lr)), max_lr_(std::move(max_lr)) {}
  CyclicLROptions(double base_lr, double max_lr) : base_lr_{base_lr}, max_lr_{max_lr} {}
  KINDLE_ARG(std::vector<double>, base_lr);
  KINDLE_ARG(std::vector<double>, max_lr);
  KINDLE_ARG(int64_t, step_size_up) = 2000;
  KINDLE_ARG(std::optional<int64_t>, step_size_down) = std::nullopt;
  KINDLE_ARG(Mode, mode) = triangular;
  KINDLE_ARG(double, gamma) = 1.0;
  // A custom scale (replaces mode): a function of the cycle number (scale_by_cycle) or of the step.
  KINDLE_ARG(std::function<double(double)>, scale_fn) = nullptr;
  KINDLE_ARG(bool, scale_by_cycle) = true;
  KINDLE_ARG(bool, cycle_momentum) = true;
  KINDLE_ARG(std::vector<double>, base_momentum) = {0.8};
  KINDLE_ARG(std::vector<double>, max_momentum) = {0.9};
};

class CyclicLR : public LRScheduler {
 public:
  CyclicLR(Optimizer& optimizer, CyclicLROptions options);

 protected:
  std::vector<double> get_lr() override;
  Value::Entries hyperparameters() const override;
  void load_hyperparameters(const Value& state_dict) override;
  CyclicLROptions options_;
  std::vector<double> max_lrs_, base_momentums_, max_momentums_;
  double total_size_, step_ratio_;
};

// The 1cycle policy: the lr warms up from max_lr / div_factor to max_lr over pct_start of
// total_steps, then anneals (cos or linear) to that / final_div_factor (three_phase: back down to
// the initial lr first); momentum (Adam's beta1) moves inversely. Steps per batch; stepping past
// total_steps raises ValueError.
struct OneCycleLROptions {
  enum AnnealStrategy { cos, linear };
  OneCycleLROptions(std::vector<double> max_lr) : max_lr_(std::move(max_lr)) {}
  OneCycleLROptions(double max_lr) : max_lr_{max_lr} {}
  KINDLE_ARG(std::vector<double>, max_lr);
  // total_steps, or epochs * steps_per_epoch
  KINDLE_ARG(std::optional<int64_t>, total_steps) = std::nullopt;
  KINDLE_ARG(std::optional<int64_t>, epochs) = std::nullopt;
  KINDLE_ARG(std::optional<int64_t>, steps_per_epoch) = std::nullopt;
  KINDLE_ARG(double, pct_start) = 0.3;
  KINDLE_ARG(AnnealStrategy, anneal_strategy) = cos;
  KINDLE_ARG(bool, cycle_momentum) = true;
  KINDLE_ARG(std::vector<double>, base_momentum) = {0.85};
  KINDLE_ARG(std::vector<double>, max_momentum) = {0.95};
  KINDLE_ARG(double, div_factor) = 25.0;
  KINDLE_ARG(double, final_div_factor) = 1e4;
  KINDLE_ARG(bool, three_phase) = false;
};

class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, OneCycleLROptions options);
  int64_t total_steps() const { return total_steps_; }

 protected:
  struct Phase {
    double end_step;
    int start_lr, end_lr, start_momentum, end_momentum;  // indices into a group's values below
  };
  std::vector<double> get_lr() override;
  Value::Entries hyperparameters() const override;
  void load_hyperparameters(const Value& state_dict) override;
  OneCycleLROptions options_;
  int64_t total_steps_ = 0;
  std::vector<Phase> phases_;
  // per group: {initial_lr, max_lr, min_lr} and {max_momentum, base_momentum}
  std::vector<std::array<double, 3>> lrs_;
  std::vector<std::array<double, 2>> momentums_;
};

// A scheduler made of schedulers (ChainedScheduler, SequentialLR): it sets no rate of its own, and
// its state dict holds each part's under "_schedulers", as Python's.
class CompositeScheduler : public LRScheduler {
 public:
  const std::vector<std::shared_ptr<LRScheduler>>& schedulers() const { return schedulers_; }

 protected:
  // ValueError for no scheduler, a null one, or one that drives another optimizer than `optimizer`.
  CompositeScheduler(const char* owner, Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers);
  Value parts_state_dict() const;
  void load_parts_state_dict(const Value& state_dict, const char* owner);
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;

 private:
  std::vector<double> get_lr() override { return group_lrs(); }
  Value::Entries hyperparameters() const override { return {}; }
  void load_hyperparameters(const Value&) override {}
};

// Steps every scheduler of the list at each step, so their effects multiply (Python's
// ChainedScheduler). They must all drive one optimizer.
class ChainedScheduler : public CompositeScheduler {
 public:
  explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers);
  void step() override;
  // Python's: {"_last_lr", "_schedulers": [each one's state dict]}.
  Value state_dict() const override;
  void load_state_dict(const Value& state_dict) override;
};

// Runs schedulers one after another, switching to the next at each milestone epoch, where that
// one restarts from epoch 0 (Python's SequentialLR). They must all drive `optimizer`.
class SequentialLR : public CompositeScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;
  // Python's: {"_milestones", "last_epoch", "_last_lr", "_schedulers": [each one's state dict]}.
  Value state_dict() const override;
  void load_state_dict(const Value& state_dict) override;

 private:
  static void undo_initial_steps(LRScheduler& s);
  std::vector<int64_t> milestones_;
};

// libtorch's ReduceLROnPlateauScheduler (Python's ReduceLROnPlateau): lr * factor once the
// metric passed to step() has not improved for `patience` epochs, then `cooldown` epochs of rest.
class ReduceLROnPlateauScheduler {
 public:
  enum SchedulerMode { min, max };
  enum ThresholdMode { rel, abs };
  explicit ReduceLROnPlateauScheduler(Optimizer& optimizer, SchedulerMode mode = min, float factor = 0.1,
                                      int patience = 10, double threshold = 1e-4, ThresholdMode threshold_mode = rel,
                                      int cooldown = 0, const std::vector<float>& min_lr = {}, double eps = 1e-8,
                                      bool verbose = false);
  void step(float metric);
  std::vector<double> get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  // Python's state dict ("best", "num_bad_epochs", "cooldown_counter", "mode", ...).
  Value state_dict() const;
  void load_state_dict(const Value& state_dict);

 private:
  bool is_better(double a) const;
  Optimizer& optimizer_;
  SchedulerMode mode_;
  double factor_, threshold_, eps_;
  int patience_, cooldown_;
  ThresholdMode threshold_mode_;
  std::vector<double> min_lrs_, last_lr_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
};
using ReduceLROnPlateau = ReduceLROnPlateauScheduler;

}  // namespace kindle::optim
