// Optimizers: updates against the textbook formulas written with ops, parameter groups, state
// dicts (Python's structure; save, load and continue bit for bit), checks; LR schedulers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include <cmath>

#include <kindle/frontend.h>

using namespace kindle;

namespace {

// A parameter and a fixed gradient for it at each step.
struct Problem {
  Tensor p;
  std::vector<Tensor> grads;
  explicit Problem(uint64_t seed, DType dt = kFloat64) {
    manual_seed(seed);
    p = randn({3, 4}, std::nullopt, dt).requires_grad_();
    for (int i = 0; i < 4; ++i) grads.push_back(randn({3, 4}, std::nullopt, dt));
  }
  void set_grad(int i) { p.set_grad(grads[size_t(i)].clone()); }
};

}  // namespace

TEST(FrontendOptim, SGDMomentumNesterovWeightDecay) {
  Problem pr(0);
  Tensor ref = pr.p.detach().clone(), buf;
  double lr = 0.1, mom = 0.9, wd = 0.01;
  optim::SGD opt({pr.p}, optim::SGDOptions(lr).momentum(mom).weight_decay(wd).nesterov(true));
  for (int i = 0; i < 3; ++i) {
    pr.set_grad(i);
    opt.step();
    Tensor g = pr.grads[size_t(i)] + ref * wd;
    buf = i == 0 ? g.clone() : buf * mom + g;
    ref = ref - (g + buf * mom) * lr;
  }
  EXPECT_TRUE(allclose(pr.p, ref, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(opt.state(pr.p)->momentum_buffer, buf, 1e-12, 1e-12));
}

TEST(FrontendOptim, AdamAndAdamW) {
  for (bool decoupled : {false, true}) {
    Problem pr(1);
    Tensor ref = pr.p.detach().clone(), m = zeros_like(ref), v = zeros_like(ref);
    double lr = 0.01, b1 = 0.8, b2 = 0.99, eps = 1e-6, wd = 0.1;
    std::unique_ptr<optim::Optimizer> opt;
    if (decoupled)
      opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{pr.p},
                                           optim::AdamWOptions(lr).betas({b1, b2}).eps(eps).weight_decay(wd));
    else
      opt = std::make_unique<optim::Adam>(std::vector<Tensor>{pr.p},
                                          optim::AdamOptions(lr).betas({b1, b2}).eps(eps).weight_decay(wd));
    for (int i = 0; i < 3; ++i) {
      pr.set_grad(i);
      opt->step();
      Tensor g = pr.grads[size_t(i)];
      if (decoupled) ref = ref * (1 - lr * wd);
      else g = g + ref * wd;
      m = m * b1 + g * (1 - b1);
      v = v * b2 + g * g * (1 - b2);
      double bc1 = 1 - std::pow(b1, i + 1), bc2 = 1 - std::pow(b2, i + 1);
      ref = ref - (m / bc1) / ((v / bc2).sqrt() + eps) * lr;
    }
    EXPECT_TRUE(allclose(pr.p, ref, 1e-10, 1e-12)) << "decoupled=" << decoupled;
  }
}

TEST(FrontendOptim, AdamAmsgradKeepsMax) {
  Problem pr(2);
  optim::Adam opt({pr.p}, optim::AdamOptions(0.01).amsgrad(true));
  pr.set_grad(0);
  opt.step();
  pr.set_grad(1);
  opt.step();
  const optim::AdamState* s = opt.state(pr.p);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->step, 2);
  EXPECT_TRUE(s->max_exp_avg_sq.ge(s->exp_avg_sq).all().item<bool>());
}

TEST(FrontendOptim, RMSpropCenteredMomentum) {
  Problem pr(3);
  Tensor ref = pr.p.detach().clone(), sq = zeros_like(ref), ga = zeros_like(ref), buf = zeros_like(ref);
  double lr = 0.01, alpha = 0.9, eps = 1e-8, mom = 0.5;
  optim::RMSprop opt({pr.p}, optim::RMSpropOptions(lr).alpha(alpha).eps(eps).momentum(mom).centered(true));
  for (int i = 0; i < 3; ++i) {
    pr.set_grad(i);
    opt.step();
    Tensor g = pr.grads[size_t(i)];
    sq = sq * alpha + g * g * (1 - alpha);
    ga = ga * alpha + g * (1 - alpha);
    Tensor avg = (sq - ga * ga).sqrt() + eps;
    buf = buf * mom + g / avg;
    ref = ref - buf * lr;
  }
  EXPECT_TRUE(allclose(pr.p, ref, 1e-10, 1e-12));
  EXPECT_EQ(opt.state(pr.p)->step, 3);
}

TEST(FrontendOptim, ParamGroupsSkipsAndMixedDtypes) {
  Tensor a = ones({2}).requires_grad_(), b = ones({2}).requires_grad_(), c = ones({2}).requires_grad_();
  Tensor d = ones({2}, kFloat64).requires_grad_();
  optim::SGD opt({{{a}, optim::SGDOptions(0.1)}, {{b, c, d}, optim::SGDOptions(0.5)}});
  EXPECT_EQ(opt.num_param_groups(), 2u);
  a.set_grad(ones({2}));
  b.set_grad(ones({2}));
  d.set_grad(ones({2}, kFloat64));  // c has no grad: untouched
  opt.step();
  EXPECT_FLOAT_EQ(a.sum().item<float>(), 2 * 0.9f);
  EXPECT_FLOAT_EQ(b.sum().item<float>(), 2 * 0.5f);
  EXPECT_FLOAT_EQ(c.sum().item<float>(), 2.0f);
  EXPECT_DOUBLE_EQ(d.sum().item<double>(), 2 * 0.5);
  opt.set_lr(1, 0.25);
  EXPECT_EQ(opt.param_groups()[1].options().lr(), 0.25);
  opt.add_param_group({ones({1}).requires_grad_()});
  EXPECT_EQ(opt.num_param_groups(), 3u);
  EXPECT_EQ(opt.lr(2), 1e-3);  // the defaults (SGDOptions() unless given), as Python's lr=1e-3
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(FrontendOptim, ChecksWithPythonsMessages) {
  Tensor p = ones({2}).requires_grad_();
  auto msg = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(msg([&] { optim::SGD({p}, optim::SGDOptions(-0.1)); }), "Invalid learning rate: -0.1");
  EXPECT_EQ(msg([&] { optim::Adam({p}, optim::AdamOptions().betas({1.0, 0.9})); }),
            "Invalid beta parameter at index 0: 1.0");
  EXPECT_EQ(msg([&] { optim::RMSprop({p}, optim::RMSpropOptions().alpha(-1)); }), "Invalid alpha value: -1.0");
  EXPECT_EQ(msg([&] { optim::SGD({p}, optim::SGDOptions(0.1).nesterov(true)); }),
            "Nesterov momentum requires a momentum and zero dampening");
  EXPECT_EQ(msg([&] { optim::SGD(std::vector<Tensor>{}, optim::SGDOptions(0.1)); }),
            "optimizer got an empty parameter list");
  EXPECT_EQ(msg([&] { optim::SGD({p * 2}, optim::SGDOptions(0.1)); }), "can't optimize a non-leaf Tensor");
  EXPECT_EQ(msg([&] { optim::SGD({{{p}, optim::SGDOptions(0.1)}, {{p}, optim::SGDOptions(0.1)}}); }),
            "some parameters appear in more than one parameter group");
  EXPECT_THROW(optim::AdamW({p}, optim::AdamWOptions().eps(-1)), ValueError);
}

TEST(FrontendOptim, StateDictHasPythonsStructure) {
  Problem pr(4, kFloat32);
  optim::Adam opt({pr.p}, optim::AdamOptions(0.01));
  pr.set_grad(0);
  opt.step();
  Value sd = opt.state_dict();
  const Value& group = sd.at("param_groups").items()[0];
  std::vector<std::string> names;
  for (auto& [k, v] : group.entries()) names.push_back(k.to_string());
  EXPECT_EQ(names, (std::vector<std::string>{"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach",
                                             "capturable", "differentiable", "fused", "decoupled_weight_decay",
                                             "params"}));
  const Value& st = sd.at("state").at(Value(0));
  EXPECT_EQ(st.at("step").to_tensor().dtype(), kFloat32);
  EXPECT_EQ(st.at("step").to_tensor().item<double>(), 1.0);
  EXPECT_TRUE(st.at("exp_avg").to_tensor().is_same(opt.state(pr.p)->exp_avg));  // live tensors
}

template <typename Opt, typename Options>
void check_resume(Options options) {
  // Two runs: straight through, and saved to a file after 2 steps then resumed in a new optimizer.
  Problem a(5, kFloat32), b(5, kFloat32);
  Opt oa({a.p}, options);
  Opt ob({b.p}, options);
  for (int i = 0; i < 2; ++i) {
    a.set_grad(i), b.set_grad(i);
    oa.step(), ob.step();
  }
  std::string path = ::testing::TempDir() + "kindle_frontend_optim_" + std::to_string(::getpid()) + ".safetensors";
  ob.save(path);
  Tensor pb = b.p.detach().clone().requires_grad_();
  Opt oc({pb}, Options(123.0));  // different hyperparameters: the file's win
  oc.load(path);
  EXPECT_EQ(oc.lr(0), options.lr());
  for (int i = 2; i < 4; ++i) {
    a.set_grad(i);
    oa.step();
    pb.set_grad(a.grads[size_t(i)].clone());
    oc.step();
  }
  EXPECT_TRUE(equal(a.p, pb));
  std::remove(path.c_str());
}

TEST(FrontendOptim, SaveLoadResumesExactly) {
  check_resume<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9));
  check_resume<optim::Adam>(optim::AdamOptions(0.01).amsgrad(true));
  check_resume<optim::AdamW>(optim::AdamWOptions(0.01));
  check_resume<optim::RMSprop>(optim::RMSpropOptions(0.01).momentum(0.5).centered(true));
}

TEST(FrontendOptim, LoadStateDictMismatches) {
  Tensor p = ones({2}).requires_grad_(), q = ones({3}).requires_grad_();
  optim::Adam a({p, q}, optim::AdamOptions());
  optim::Adam one({p}, optim::AdamOptions());
  EXPECT_THROW(one.load_state_dict(a.state_dict()), ValueError);
  optim::AdamW w({p, q}, optim::AdamWOptions());
  EXPECT_THROW(w.load_state_dict(a.state_dict()), ValueError);  // Adam's dict into AdamW
  optim::Adam two_groups({{{p}, optim::AdamOptions()}, {{q}, optim::AdamOptions()}});
  EXPECT_THROW(two_groups.load_state_dict(a.state_dict()), ValueError);
}

TEST(FrontendOptim, ClosureStep) {
  Tensor w = ones({1}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.5));
  Tensor loss = opt.step([&] {
    opt.zero_grad();
    Tensor l = (w * w).sum();
    l.backward();
    return l;
  });
  EXPECT_EQ(loss.item<double>(), 1.0);
  EXPECT_EQ(w.item<double>(), 0.0);
}

TEST(FrontendOptim, LBFGSMinimisesRosenbrock) {
  // The algorithm is the one Python's kindle.optim.LBFGS runs (compared with torch's there).
  for (bool line_search : {false, true}) {
    Tensor xy = tensor({-1.5, 2.0}, kFloat64).requires_grad_();
    auto options = optim::LBFGSOptions(line_search ? 1.0 : 0.1).max_iter(100).history_size(10);
    if (line_search) options.line_search_fn("strong_wolfe");
    optim::LBFGS opt({xy}, options);
    auto closure = [&] {
      opt.zero_grad();
      Tensor x = xy[0], y = xy[1];
      Tensor loss = (1 - x).pow(2) + 100 * (y - x * x).pow(2);
      loss.backward();
      return loss;
    };
    Tensor first = opt.step(closure);
    EXPECT_NEAR(first.item<double>(), 2.5 * 2.5 + 100 * (2.0 - 2.25) * (2.0 - 2.25), 1e-12);
    for (int i = 0; i < 20; ++i) opt.step(closure);
    EXPECT_NEAR(xy[0].item<double>(), 1.0, 1e-4) << "line search " << line_search;
    EXPECT_NEAR(xy[1].item<double>(), 1.0, 1e-4);
    Value sd = opt.state_dict();
    const Value& st = sd.at("state").at(Value(0));
    EXPECT_GT(st.at("func_evals").to_int(), 20);
    EXPECT_LE(int64_t(st.at("old_dirs").items().size()), 10);
    EXPECT_EQ(sd.at("param_groups").items()[0].at("line_search_fn").is_none(), !line_search);
    // A fresh optimizer loaded from the state dict continues exactly as this one.
    Tensor other = xy.detach().clone().requires_grad_();
    optim::LBFGS twin({other}, options);
    twin.load_state_dict(sd);
    auto twin_closure = [&] {
      twin.zero_grad();
      Tensor x = other[0], y = other[1];
      Tensor loss = (1 - x).pow(2) + 100 * (y - x * x).pow(2);
      loss.backward();
      return loss;
    };
    opt.step(closure);
    twin.step(twin_closure);
    EXPECT_TRUE(equal(other, xy));
  }
  Tensor w = ones({2}).requires_grad_();
  optim::LBFGS plain({w});
  EXPECT_THROW(plain.step(), Error);
  EXPECT_THROW(optim::LBFGS({w}, optim::LBFGSOptions(-1.0)), ValueError);
  optim::LBFGS bad({w}, optim::LBFGSOptions().line_search_fn("wolfe"));
  EXPECT_THROW(bad.step([&] { return (w * w).sum(); }), Error);
  // Through the base class, step(closure) runs the L-BFGS iterations too.
  optim::Optimizer& base = plain;
  Tensor l = base.step([&] {
    plain.zero_grad();
    Tensor loss = (w * w).sum();
    loss.backward();
    return loss;
  });
  EXPECT_EQ(l.item<double>(), 2.0);
  EXPECT_LT(w.abs().max().item<double>(), 1e-6);
}

TEST(FrontendOptim, StepLR) {
  Tensor p = ones({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  optim::StepLR sched(opt, 2, 0.5);
  std::vector<double> seen;
  for (int e = 0; e < 6; ++e) {
    seen.push_back(opt.lr(0));
    opt.step();
    sched.step();
  }
  // libtorch's schedule: no step at construction, so the first call is epoch 0 and the rate
  // decays on the 3rd, 5th, ... call (Python's StepLR decays one call earlier).
  EXPECT_EQ(seen, (std::vector<double>{1, 1, 1, 0.5, 0.5, 0.25}));
  EXPECT_EQ(sched.last_epoch(), 5);
  EXPECT_EQ(sched.get_last_lr(), (std::vector<double>{0.25}));
}

TEST(FrontendOptim, CosineAnnealingLR) {
  Tensor p = ones({1}).requires_grad_();
  optim::Adam opt({p}, optim::AdamOptions(0.1));
  const int T = 5;
  const double eta = 0.01;
  optim::CosineAnnealingLR sched(opt, T, eta);
  for (int e = 0; e <= 2 * T; ++e) {
    double closed = eta + (0.1 - eta) * (1 + std::cos(M_PI * e / T)) / 2;
    EXPECT_NEAR(opt.lr(0), closed, 1e-12) << "epoch " << e;
    sched.step();
  }
}

// The other schedulers against their closed forms (Python's _get_closed_form_lr), epoch by
// epoch, with two parameter groups where the form depends on the group's base rate.
namespace {
template <typename Make, typename Closed>
void expect_schedule(const char* name, Make make, Closed closed, int epochs = 12) {
  Tensor a = ones({1}).requires_grad_(), b = ones({1}).requires_grad_();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<optim::SGDOptions>(0.4));
  optim::SGD opt(std::move(groups), optim::SGDOptions(1.0));
  auto sched = make(opt);
  for (int e = 0; e < epochs; ++e) {
    EXPECT_NEAR(opt.lr(0), closed(1.0, e), 1e-12) << name << " epoch " << e;
    EXPECT_NEAR(opt.lr(1), closed(0.4, e), 1e-12) << name << " epoch " << e << " (second group)";
    EXPECT_EQ(sched.get_last_lr(), (std::vector<double>{opt.lr(0), opt.lr(1)}));
    opt.step();
    sched.step();
  }
}
}  // namespace

TEST(FrontendOptim, TheOtherSchedulersFollowTheirClosedForms) {
  expect_schedule("LambdaLR", [](auto& o) { return optim::LambdaLR(o, [](int64_t e) { return std::pow(0.95, e); }); },
                  [](double base, int e) { return base * std::pow(0.95, e); });
  expect_schedule("MultiplicativeLR", [](auto& o) { return optim::MultiplicativeLR(o, [](int64_t) { return 0.9; }); },
                  [](double base, int e) { return base * std::pow(0.9, e); });
  expect_schedule("MultiStepLR", [](auto& o) { return optim::MultiStepLR(o, {4, 2, 4}, 0.5); },
                  [](double base, int e) { return base * std::pow(0.5, (e >= 2) + 2 * (e >= 4)); });
  expect_schedule("ConstantLR", [](auto& o) { return optim::ConstantLR(o, 0.5, 3); },
                  [](double base, int e) { return base * (e < 3 ? 0.5 : 1.0); });
  expect_schedule("LinearLR", [](auto& o) { return optim::LinearLR(o, 0.25, 1.0, 4); },
                  [](double base, int e) { return base * (0.25 + 0.75 * std::min(e, 4) / 4.0); });
  expect_schedule("ExponentialLR", [](auto& o) { return optim::ExponentialLR(o, 0.9); },
                  [](double base, int e) { return base * std::pow(0.9, e); });
  expect_schedule("PolynomialLR", [](auto& o) { return optim::PolynomialLR(o, 4, 2.0); },
                  [](double base, int e) { return base * std::pow(1.0 - std::min(e, 4) / 4.0, 2.0); });
  // T_0 = 3, T_mult = 2: restarts at epochs 3 and 9 (periods 3, 6, 12).
  expect_schedule("CosineAnnealingWarmRestarts", [](auto& o) { return optim::CosineAnnealingWarmRestarts(o, 3, 2, 0.01); },
                  [](double base, int e) {
                    const int T_i = e < 3 ? 3 : e < 9 ? 6 : 12, T_cur = e < 3 ? e : e < 9 ? e - 3 : e - 9;
                    return 0.01 + (base - 0.01) * (1 + std::cos(M_PI * T_cur / T_i)) / 2;
                  });
}

TEST(FrontendOptim, SchedulerArgumentsAreChecked) {
  Tensor p = ones({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  EXPECT_THROW(optim::ConstantLR(opt, 1.5), ValueError);
  EXPECT_THROW(optim::LinearLR(opt, 0.0), ValueError);
  EXPECT_THROW(optim::CosineAnnealingWarmRestarts(opt, 0), ValueError);
  EXPECT_THROW(optim::LambdaLR(opt, std::vector<optim::LambdaLR::Lambda>{}), ValueError);
  EXPECT_THROW(optim::ReduceLROnPlateauScheduler(opt, optim::ReduceLROnPlateauScheduler::min, 1.0f), ValueError);
}

TEST(FrontendOptim, MultiStepLRStateDictResumes) {
  Tensor p = ones({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  optim::MultiStepLR sched(opt, {2, 5}, 0.1);
  for (int i = 0; i < 3; ++i) sched.step();
  Value sd = sched.state_dict();
  optim::SGD opt2({ones({1}).requires_grad_()}, optim::SGDOptions(opt.lr(0)));
  optim::MultiStepLR resumed(opt2, {}, 0.5);
  resumed.load_state_dict(sd);
  for (int i = 0; i < 3; ++i) {
    sched.step();
    resumed.step();
    EXPECT_NEAR(opt2.lr(0), opt.lr(0), 1e-15) << "step " << i;
  }
  EXPECT_NEAR(opt.lr(0), 0.01, 1e-15);
}

TEST(FrontendOptim, ReduceLROnPlateau) {
  Tensor p = ones({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  optim::ReduceLROnPlateauScheduler sched(opt, optim::ReduceLROnPlateauScheduler::min, 0.5f, /*patience=*/1,
                                          1e-4, optim::ReduceLROnPlateauScheduler::rel, /*cooldown=*/1);
  // Improves, improves, then two bad epochs (> patience 1): halved; one cooldown epoch, in which
  // bad epochs do not count; two more bad epochs: halved again.
  const float metrics[] = {1.0f, 0.9f, 0.95f, 0.95f, 0.95f, 0.95f, 0.95f, 0.95f};
  const double expect[] = {1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25};
  for (int i = 0; i < 8; ++i) {
    sched.step(metrics[i]);
    EXPECT_DOUBLE_EQ(opt.lr(0), expect[i]) << "epoch " << i;
  }
  EXPECT_EQ(sched.get_last_lr(), (std::vector<double>{0.25}));
  Value sd = sched.state_dict();
  EXPECT_EQ(sd.at("num_bad_epochs", "sd").to_int("n"), 0);
  optim::SGD opt2({ones({1}).requires_grad_()}, optim::SGDOptions(0.25));
  optim::ReduceLROnPlateauScheduler resumed(opt2);
  resumed.load_state_dict(sd);
  EXPECT_EQ(resumed.last_epoch(), 8);
  resumed.step(0.95f);
  sched.step(0.95f);
  resumed.step(0.95f);
  sched.step(0.95f);
  EXPECT_DOUBLE_EQ(opt2.lr(0), opt.lr(0));
}

TEST(FrontendOptim, CyclicLRFollowsItsClosedForms) {
  // triangular over a 6-step cycle (2 up, 4 down); momentum moves inversely between 0.9 and 0.8
  auto position = [](int e) {
    int p = e % 6;
    return p <= 2 ? p / 2.0 : (6 - p) / 4.0;
  };
  for (auto mode : {optim::CyclicLROptions::triangular, optim::CyclicLROptions::triangular2,
                    optim::CyclicLROptions::exp_range}) {
    Tensor p = ones({1}).requires_grad_();
    optim::SGD opt({p}, optim::SGDOptions(0.5).momentum(0.5));
    optim::CyclicLR sched(opt, optim::CyclicLROptions(0.1, 1.0).step_size_up(2).step_size_down(4).mode(mode).gamma(0.9));
    for (int e = 0; e < 15; ++e) {
      double scale = mode == optim::CyclicLROptions::triangular    ? 1.0
                     : mode == optim::CyclicLROptions::triangular2 ? std::pow(0.5, e / 6)
                                                                   : std::pow(0.9, e);
      EXPECT_NEAR(opt.lr(0), 0.1 + 0.9 * position(e) * scale, 1e-12) << "mode " << mode << " step " << e;
      EXPECT_NEAR(opt.momentum(0), 0.9 - 0.1 * position(e) * scale, 1e-12) << "mode " << mode << " step " << e;
      sched.step();
    }
  }
}

TEST(FrontendOptim, CyclicLRCustomScaleAndChecks) {
  Tensor p = ones({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(0.5));
  optim::CyclicLR sched(opt, optim::CyclicLROptions(0.0, 1.0)
                                 .step_size_up(1)
                                 .scale_fn([](double x) { return 1.0 / x; })
                                 .cycle_momentum(false));
  EXPECT_NEAR(opt.lr(0), 0.0, 1e-15);
  sched.step();
  EXPECT_NEAR(opt.lr(0), 1.0, 1e-15);  // cycle 1: scale 1
  sched.step();
  sched.step();
  EXPECT_NEAR(opt.lr(0), 0.5, 1e-15);  // the peak of cycle 2: scale 1/2
  // an optimizer without momentum (or beta1) cannot cycle it
  struct PlainStep : optim::Optimizer {  // (a user-defined optimizer with just a learning rate)
    std::vector<Tensor> ps{ones({1})};
    double rate = 0.1;
    void step() override {}
    size_t num_param_groups() const override { return 1; }
    const std::vector<Tensor>& params(size_t) const override { return ps; }
    double lr(size_t) const override { return rate; }
    void set_lr(size_t, double v) override { rate = v; }
    Value state_dict() const override { return Value::dict(); }
    void load_state_dict(const Value&) override {}
  } plain;
  EXPECT_THROW(optim::CyclicLR(plain, optim::CyclicLROptions(0.1, 1.0)), ValueError);
  optim::CyclicLR no_momentum(plain, optim::CyclicLROptions(0.1, 1.0).cycle_momentum(false));
  EXPECT_NEAR(plain.lr(0), 0.1, 1e-15);
  EXPECT_THROW(optim::CyclicLR(opt, optim::CyclicLROptions({0.1, 0.2}, {1.0}).cycle_momentum(false)), ValueError);
}

TEST(FrontendOptim, OneCycleLRFollowsItsClosedForm) {
  Tensor p = ones({1}).requires_grad_();
  optim::Adam opt({p}, optim::AdamOptions(0.5));
  optim::OneCycleLR sched(opt, optim::OneCycleLROptions(1.0).total_steps(10));
  const double initial = 1.0 / 25, min = initial / 1e4;
  auto cos_anneal = [](double start, double end, double pct) { return end + (start - end) / 2 * (std::cos(M_PI * pct) + 1); };
  for (int e = 0; e <= 10; ++e) {
    bool warm = e <= 2;  // warm-up ends at 0.3 * 10 - 1
    double pct = warm ? e / 2.0 : (e - 2) / 7.0;
    EXPECT_NEAR(opt.lr(0), warm ? cos_anneal(initial, 1.0, pct) : cos_anneal(1.0, min, pct), 1e-12) << "step " << e;
    EXPECT_NEAR(opt.param_groups()[0].options().betas().first, warm ? cos_anneal(0.95, 0.85, pct) : cos_anneal(0.85, 0.95, pct),
                1e-12) << "step " << e;
    if (e < 10) sched.step();
  }
  EXPECT_THROW(sched.step(), ValueError);  // step 11 of 10
  EXPECT_THROW(optim::OneCycleLR(opt, optim::OneCycleLROptions(1.0)), ValueError);  // no total_steps
  EXPECT_THROW(optim::OneCycleLR(opt, optim::OneCycleLROptions(1.0).total_steps(10).pct_start(1.5)), ValueError);
}

TEST(FrontendOptim, OneCycleLRThreePhaseLinearAndResume) {
  Tensor p = ones({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(0.5).momentum(0.9));
  auto options = optim::OneCycleLROptions(2.0).epochs(2).steps_per_epoch(5).three_phase(true).anneal_strategy(
      optim::OneCycleLROptions::linear);
  optim::OneCycleLR sched(opt, options);
  EXPECT_EQ(sched.total_steps(), 10);
  const double initial = 2.0 / 25, min = initial / 1e4;
  // phases end at steps 2, 4 and 9: up to max_lr, back to the initial lr, down to min_lr
  auto expected = [&](int e) {
    if (e <= 2) return initial + (2.0 - initial) * e / 2.0;
    if (e <= 4) return 2.0 + (initial - 2.0) * (e - 2) / 2.0;
    return initial + (min - initial) * (e - 4) / 5.0;
  };
  for (int e = 0; e < 6; ++e) {
    EXPECT_NEAR(opt.lr(0), expected(e), 1e-12) << "step " << e;
    sched.step();
  }
  Value sd = sched.state_dict();
  Tensor q = ones({1}).requires_grad_();
  optim::SGD opt2({q}, optim::SGDOptions(0.5).momentum(0.9));
  optim::OneCycleLR resumed(opt2, optim::OneCycleLROptions(7.0).total_steps(3));
  resumed.load_state_dict(sd);
  for (int e = 6; e < 10; ++e) {
    sched.step();
    resumed.step();
    EXPECT_NEAR(opt2.lr(0), opt.lr(0), 1e-15) << "step " << e;
    EXPECT_NEAR(opt2.momentum(0), opt.momentum(0), 1e-15) << "step " << e;
    EXPECT_NEAR(opt.lr(0), expected(e + 1), 1e-12) << "step " << e + 1;
  }
}

TEST(FrontendOptim, CyclicLRStateDictResumes) {
  Tensor p = ones({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(0.5).momentum(0.5));
  optim::CyclicLR sched(opt, optim::CyclicLROptions(0.1, 1.0).step_size_up(3).mode(optim::CyclicLROptions::triangular2));
  for (int i = 0; i < 4; ++i) sched.step();
  Value sd = sched.state_dict();
  EXPECT_EQ(sd.at("mode").to_string(), "triangular2");
  EXPECT_EQ(sd.at("scale_mode").to_string(), "cycle");
  Tensor q = ones({1}).requires_grad_();
  optim::SGD opt2({q}, optim::SGDOptions(0.5).momentum(0.5));
  optim::CyclicLR resumed(opt2, optim::CyclicLROptions(0.1, 5.0));
  resumed.load_state_dict(sd);
  for (int i = 0; i < 8; ++i) {
    sched.step();
    resumed.step();
    EXPECT_NEAR(opt2.lr(0), opt.lr(0), 1e-15) << "step " << i;
    EXPECT_NEAR(opt2.momentum(0), opt.momentum(0), 1e-15) << "step " << i;
  }
}

TEST(FrontendOptim, OptimizerInArchives) {
  manual_seed(0);
  nn::Linear model(3, 2);
  optim::Adam opt(model->parameters(), optim::AdamOptions(0.01));
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    model(randn({4, 3})).pow(2).sum().backward();
    opt.step();
  }
  std::string path = testing::TempDir() + "kindle_opt_archive.pt";
  {
    serialize::OutputArchive out;
    out << opt;  // libtorch's form; optimizer.save(archive) is the same
    serialize::OutputArchive both;
    both.write("optimizer", out);
    model->save(both);
    both.save_to(path);
  }
  nn::Linear copy(3, 2);
  optim::Adam opt2(copy->parameters(), optim::AdamOptions(0.5));
  serialize::InputArchive in, nested;
  in.load_from(path);
  copy->load(in);
  ASSERT_TRUE(in.try_read("optimizer", nested));
  nested >> opt2;
  EXPECT_EQ(opt2.lr(0), 0.01);
  for (size_t i = 0; i < 2; ++i) {
    const auto* a = opt.state(model->parameters()[i]);
    const auto* b = opt2.state(copy->parameters()[i]);
    ASSERT_TRUE(a && b);
    EXPECT_TRUE(equal(a->exp_avg, b->exp_avg));
    EXPECT_TRUE(equal(a->exp_avg_sq, b->exp_avg_sq));
  }
  // a stream round trip, and an archive without an optimizer's entries
  std::stringstream ss;
  kindle::save(opt, ss);
  optim::Adam opt3(copy->parameters(), optim::AdamOptions(0.5));
  kindle::load(opt3, ss);
  EXPECT_EQ(opt3.lr(0), 0.01);
  serialize::InputArchive model_only;
  model_only.load_from(path);
  EXPECT_THROW(model_only >> opt3, ValueError);
  std::remove(path.c_str());
}

TEST(FrontendOptim, AdagradFollowsItsUpdateRule) {
  Tensor p = full({2}, 1.0, kFloat64).requires_grad_();
  optim::Adagrad opt({p}, optim::AdagradOptions(0.1).lr_decay(0.5).weight_decay(0.01).initial_accumulator_value(0.2));
  EXPECT_EQ(opt.state_dict().at("state").entries().size(), 1u);  // sums exist before any step
  double x = 1.0, sum = 0.2;
  for (int step = 1; step <= 3; ++step) {
    opt.zero_grad();
    (p * p).sum().backward();  // gradient 2x
    opt.step();
    double g = 2 * x + 0.01 * x;
    sum += g * g;
    x -= 0.1 / (1 + (step - 1) * 0.5) * g / (std::sqrt(sum) + 1e-10);
    EXPECT_NEAR(p[0].item<double>(), x, 1e-12) << "step " << step;
  }
  // state dict round trip, and Python's keys
  Value sd = opt.state_dict();
  EXPECT_EQ(sd.at("param_groups").items()[0].at("initial_accumulator_value").to_double(), 0.2);
  Tensor q = p.detach().clone().requires_grad_();
  optim::Adagrad opt2({q}, optim::AdagradOptions(1.0));
  opt2.load_state_dict(sd);
  for (auto* o : {static_cast<optim::Optimizer*>(&opt), static_cast<optim::Optimizer*>(&opt2)}) {
    o->zero_grad();
    Tensor t = o == &opt ? p : q;
    (t * t).sum().backward();
    o->step();
  }
  EXPECT_TRUE(allclose(p, q, 0, 0));
  EXPECT_THROW(optim::Adagrad({p}, optim::AdagradOptions(-1.0)), ValueError);
  EXPECT_THROW(optim::CyclicLR(opt, optim::CyclicLROptions(0.1, 1.0)), ValueError);  // no momentum to cycle
}

// Two schedulers on one optimizer: the second starts from the group's initial lr (Python's
// group["initial_lr"]), not the lr the first one's warm-up start left, and ChainedScheduler steps
// both. The expected rates are torch 2.13's for the same program.
TEST(FrontendOptim, ChainedSchedulerComposesFromTheInitialLr) {
  Tensor p = ones({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  auto warmup = std::make_shared<optim::LinearLR>(opt, 0.1, 1.0, 3);
  auto cosine = std::make_shared<optim::CosineAnnealingLR>(opt, 4);
  EXPECT_EQ(cosine->base_lrs(), std::vector<double>{1.0});
  optim::ChainedScheduler chained({warmup, cosine});
  EXPECT_NEAR(chained.get_last_lr()[0], 0.1, 1e-15);
  const double torch_lrs[] = {0.34142135623730946, 0.35, 0.14644660940672627, 0.0, 0.1464466094067262,
                              0.5000000000000001, 0.8535533905932742};
  for (double want : torch_lrs) {
    chained.step();
    EXPECT_NEAR(chained.get_last_lr()[0], want, 1e-12);
    EXPECT_NEAR(opt.lr(0), want, 1e-12);
  }
  // The state dict holds each scheduler's, and a fresh chain resumes from it.
  Value sd = chained.state_dict();
  EXPECT_EQ(sd.at("_schedulers", "test").items("test").size(), 2u);
  Tensor q = ones({1}).requires_grad_();
  optim::SGD opt2({q}, optim::SGDOptions(1.0));
  auto w2 = std::make_shared<optim::LinearLR>(opt2, 0.1, 1.0, 3);
  auto c2 = std::make_shared<optim::CosineAnnealingLR>(opt2, 4);
  optim::ChainedScheduler resumed({w2, c2});
  resumed.load_state_dict(sd);
  opt2.set_lr(0, opt.lr(0));
  chained.step();
  resumed.step();
  EXPECT_NEAR(resumed.get_last_lr()[0], chained.get_last_lr()[0], 1e-12);
  EXPECT_THROW(optim::ChainedScheduler({}), ValueError);
  EXPECT_THROW(optim::ChainedScheduler({warmup, c2}), ValueError);  // another optimizer
}

// SequentialLR: the warm-up, then the next scheduler from its epoch 0 at each milestone. The
// expected rates are torch 2.13's for the same programs.
TEST(FrontendOptim, SequentialLRSwitchesAtMilestones) {
  auto run = [](auto make, const std::vector<double>& want) {
    Tensor p = ones({1}).requires_grad_();
    optim::SGD opt({p}, optim::SGDOptions(1.0));
    auto sched = make(opt);
    std::vector<double> seen{sched->get_last_lr()[0]};
    for (size_t i = 1; i < want.size(); ++i) {
      sched->step();
      seen.push_back(opt.lr(0));
    }
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(seen[i], want[i], 1e-12) << "epoch " << i;
    return sched->state_dict();  // (the scheduler refers to `opt`: it must not outlive this call)
  };
  Value sd = run(
      [](optim::Optimizer& opt) {
        return std::make_shared<optim::SequentialLR>(
            opt,
            std::vector<std::shared_ptr<optim::LRScheduler>>{std::make_shared<optim::LinearLR>(opt, 0.1, 1.0, 3),
                                                             std::make_shared<optim::CosineAnnealingLR>(opt, 5)},
            std::vector<int64_t>{3});
      },
      {0.1, 0.39999999999999997, 0.7, 1.0, 0.9045084971874737, 0.6545084971874737, 0.3454915028125263,
       0.09549150281252632, 0.0});
  EXPECT_EQ(sd.at("last_epoch", "test").to_int("last_epoch"), 8);
  EXPECT_EQ(sd.at("_schedulers", "test").items("test").size(), 2u);
  run(
      [](optim::Optimizer& opt) {
        return std::make_shared<optim::SequentialLR>(
            opt,
            std::vector<std::shared_ptr<optim::LRScheduler>>{
                std::make_shared<optim::ConstantLR>(opt, 0.5, 2), std::make_shared<optim::ExponentialLR>(opt, 0.9),
                std::make_shared<optim::MultiStepLR>(opt, std::vector<int64_t>{0, 2}, 0.5)},
            std::vector<int64_t>{2, 5});
      },
      {0.5, 0.5, 1.0, 0.9, 0.81, 0.5, 0.5, 0.25, 0.25});
  Tensor p = ones({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  auto a = std::make_shared<optim::ExponentialLR>(opt, 0.9);
  EXPECT_THROW(optim::SequentialLR(opt, {}, {}), ValueError);
  EXPECT_THROW(optim::SequentialLR(opt, {a}, {3}), ValueError);  // one milestone too many
}
