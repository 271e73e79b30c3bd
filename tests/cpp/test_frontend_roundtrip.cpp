// The C++ half of the C++ <-> Python round trip (tests/python/test_cpp_roundtrip.py builds the
// same models with kindle.nn, same names, same construction order).
//
// For each model: built after manual_seed(0) and saved (<kind>_init); trained three steps on a
// fixed batch and saved with its optimizer (<kind>_trained, <kind>_opt) together with the batch
// and the eval-mode output (<kind>_data); stepped once more and saved (<kind>_after). Then, in
// C++ alone, a fresh model and optimizer load those files and must reproduce the output and the
// extra step exactly.
//
// With KINDLE_ROUNDTRIP_DIR set, the files go there (otherwise to a fresh temporary folder), and any
// <kind>_python.safetensors written by the Python test (weights and an input) is evaluated and
// answered with <kind>_cpp_eval.safetensors.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <kindle/frontend.h>

using namespace kindle;

namespace {

struct ConvNet : nn::Module {
  nn::Conv2d conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)));
  nn::BatchNorm2d bn = register_module("bn", nn::BatchNorm2d(4));
  nn::Linear fc1 = register_module("fc1", nn::Linear(4 * 4 * 4, 16));
  nn::LayerNorm ln = register_module("ln", nn::LayerNorm(16));
  nn::Linear fc2 = register_module("fc2", nn::Linear(16, 5));
  Tensor forward(const Tensor& x) override {
    Tensor h = std::get<0>(max_pool2d_with_indices(relu(bn(conv(x))), {2, 2}, {2, 2}));
    return fc2(gelu(ln(fc1(h.flatten(1)))));
  }
};

struct SeqNet : nn::Module {
  nn::Embedding emb = register_module("emb", nn::Embedding(10, 6));
  nn::LSTM lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(6, 8).batch_first(true)));
  nn::Linear fc = register_module("fc", nn::Linear(8, 5));
  Tensor forward(const Tensor& tokens) override { return fc(std::get<0>(lstm(emb(tokens))).select(1, -1)); }
};

struct AttnNet : nn::Module {
  nn::TransformerEncoderLayer enc = register_module(
      "enc", nn::TransformerEncoderLayer(
                 nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0).batch_first(true)));
  nn::Linear fc = register_module("fc", nn::Linear(8, 5));
  Tensor forward(const Tensor& x) override { return fc(enc(x).mean(std::vector<int64_t>{1})); }
};

struct MLPNet : nn::Module {
  nn::Sequential body =
      register_module("body", nn::Sequential{nn::Linear(6, 12), nn::Tanh(), nn::Linear(12, 5)});
  Tensor forward(const Tensor& x) override { return body(x); }
};

// kind: the files' prefix; make: the model; input: a batch for it; opt: its optimizer.
struct Case {
  std::string kind;
  std::function<std::shared_ptr<nn::Module>()> make;
  std::function<Tensor()> input;
  std::function<std::unique_ptr<optim::Optimizer>(nn::Module&)> opt;
};

std::vector<Case> cases() {
  return {
      {"conv", [] { return std::make_shared<ConvNet>(); }, [] { return randn({6, 1, 8, 8}); },
       [](nn::Module& m) { return std::make_unique<optim::Adam>(m.parameters(), optim::AdamOptions(0.01)); }},
      {"seq", [] { return std::make_shared<SeqNet>(); }, [] { return randint(0, 10, {6, 7}); },
       [](nn::Module& m) {
         return std::make_unique<optim::SGD>(m.parameters(), optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
       }},
      {"attn", [] { return std::make_shared<AttnNet>(); }, [] { return randn({6, 4, 8}); },
       [](nn::Module& m) { return std::make_unique<optim::AdamW>(m.parameters(), optim::AdamWOptions(0.01)); }},
      {"mlp", [] { return std::make_shared<MLPNet>(); }, [] { return randn({6, 6}); },
       [](nn::Module& m) {
         return std::make_unique<optim::RMSprop>(m.parameters(),
                                                 optim::RMSpropOptions(0.01).momentum(0.5).centered(true));
       }},
  };
}

void train_step(nn::Module& model, optim::Optimizer& opt, const Tensor& x, const Tensor& y) {
  opt.zero_grad();
  Tensor loss = cross_entropy(model(x), y);
  loss.backward();
  opt.step();
}

Tensor eval_output(nn::Module& model, const Tensor& x) {
  autograd::NoGradGuard g;
  model.eval();
  Tensor out = model(x);
  model.train();
  return out;
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

}  // namespace

TEST(FrontendRoundtrip, TrainSaveLoadResume) {
  const char* env = std::getenv("KINDLE_ROUNDTRIP_DIR");
  std::string dir = env && *env ? std::string(env)
                                : ::testing::TempDir() + "kindle_frontend_roundtrip_" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0700);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.kind);
    std::string base = dir + "/" + c.kind;
    manual_seed(0);
    auto model = c.make();
    model->save(base + "_init.safetensors");
    manual_seed(1);
    Tensor x = c.input(), y = randint(0, 5, {6});
    auto opt = c.opt(*model);
    for (int i = 0; i < 3; ++i) train_step(*model, *opt, x, y);
    Tensor out = eval_output(*model, x);
    model->save(base + "_trained.safetensors");
    opt->save(base + "_opt.safetensors");
    StateDict batch;
    batch.insert("x", x);
    batch.insert("y", y);
    batch.insert("out", out);
    save(batch, base + "_data.safetensors");
    train_step(*model, *opt, x, y);
    model->save(base + "_after.safetensors");

    // C++ alone: a fresh model and optimizer resume from the files.
    manual_seed(42);
    auto fresh = c.make();
    fresh->load(base + "_trained.safetensors");
    EXPECT_TRUE(equal(eval_output(*fresh, x), out));
    auto fresh_opt = c.opt(*fresh);
    fresh_opt->load(base + "_opt.safetensors");
    train_step(*fresh, *fresh_opt, x, y);
    StateDict want = load(base + "_after.safetensors"), got = fresh->state_dict();
    ASSERT_EQ(want.keys(), got.keys());
    for (auto& [k, t] : want) EXPECT_TRUE(equal(got[k], t)) << k;

    // Python's model, if the Python test left one.
    if (exists(base + "_python.safetensors")) {
      StateDict py = load(base + "_python.safetensors");
      Tensor input = py["input"];
      py.erase("input");
      auto from_py = c.make();
      from_py->load_state_dict(py);
      StateDict answer;
      answer.insert("out", eval_output(*from_py, input));
      save(answer, base + "_cpp_eval.safetensors");
    }
  }
  if (!(env && *env)) std::filesystem::remove_all(dir);
}

// Scheduler state: saved after four epochs, a fresh scheduler resumes it exactly. The files
// (sched_<kind>.safetensors) are left in KINDLE_ROUNDTRIP_DIR for the Python test, and a
// sched_<kind>_python.safetensors written there by Python is resumed here for three epochs, with
// the learning rates answered in sched_<kind>_cpp_lrs.safetensors.
TEST(FrontendRoundtrip, SchedulerState) {
  const char* env = std::getenv("KINDLE_ROUNDTRIP_DIR");
  std::string dir = env && *env ? std::string(env)
                                : ::testing::TempDir() + "kindle_sched_roundtrip_" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0700);
  using Make = std::function<std::unique_ptr<optim::LRScheduler>(optim::Optimizer&)>;
  std::vector<std::pair<std::string, Make>> kinds = {
      {"step", [](optim::Optimizer& o) { return std::make_unique<optim::StepLR>(o, 3, 0.5); }},
      {"cosine", [](optim::Optimizer& o) { return std::make_unique<optim::CosineAnnealingLR>(o, 5, 0.01); }},
  };
  for (auto& [kind, make] : kinds) {
    SCOPED_TRACE(kind);
    Tensor p = ones({1}).requires_grad_();
    optim::SGD opt({p}, optim::SGDOptions(0.1));
    auto sched = make(opt);
    // StepLR follows libtorch (no step when built): one call more reaches Python's epoch 4.
    for (int i = 0; i < (kind == "step" ? 5 : 4); ++i) sched->step();
    std::string file = dir + "/sched_" + kind + ".safetensors";
    sched->save(file);

    Tensor q = ones({1}).requires_grad_();
    optim::SGD opt2({q}, optim::SGDOptions(0.1));
    auto resumed = make(opt2);
    resumed->load(file);
    opt2.set_lr(0, opt.lr(0));  // as Python: the optimizer's own state carries the current lr
    EXPECT_EQ(resumed->last_epoch(), 4);
    for (int i = 0; i < 8; ++i) {
      sched->step();
      resumed->step();
      EXPECT_EQ(resumed->get_last_lr(), sched->get_last_lr()) << "epoch " << sched->last_epoch();
    }

    // Wrong number of groups.
    Tensor r = ones({1}).requires_grad_();
    optim::SGD two({{{q}, optim::SGDOptions(0.1)}, {{r}, optim::SGDOptions(0.1)}});
    auto other = make(two);
    EXPECT_THROW(other->load(file), ValueError);

    std::string py = dir + "/sched_" + kind + "_python.safetensors";
    if (exists(py)) {
      Tensor s = ones({1}).requires_grad_();
      optim::SGD opt3({s}, optim::SGDOptions(0.1));
      auto from_py = make(opt3);
      from_py->load(py);
      opt3.set_lr(0, from_py->get_last_lr()[0]);
      Tensor lrs = empty({3}, kFloat64);
      for (int i = 0; i < 3; ++i) {
        from_py->step();
        lrs.data_ptr<double>()[i] = from_py->get_last_lr()[0];
      }
      StateDict answer;
      answer.insert("lrs", lrs);
      save(answer, dir + "/sched_" + kind + "_cpp_lrs.safetensors");
    }
  }
  if (!(env && *env)) std::filesystem::remove_all(dir);
}
