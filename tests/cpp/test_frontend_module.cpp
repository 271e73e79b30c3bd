// nn::Module: registration, recursive iteration with dotted names, modes, dtype conversion,
// state dicts and their error messages, containers, repr.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include <kindle/frontend.h>

using namespace kindle;

namespace {

struct Block : nn::Module {
  nn::Linear fc = register_module("fc", nn::Linear(3, 4));
  nn::BatchNorm1d bn = register_module("bn", nn::BatchNorm1d(4));
  Tensor forward(const Tensor& x) override { return bn(fc(x)); }
};

struct Net : nn::Module {
  Tensor scale = register_parameter("scale", ones({}));
  Tensor counter = register_buffer("counter", zeros({2}));
  Tensor scratch = register_buffer("scratch", zeros({1}), /*persistent=*/false);
  nn::Ptr<Block> block = register_module("block", nn::make<Block>());
  nn::Linear head = register_module("head", nn::Linear(4, 2, /*bias=*/false));
  Tensor forward(const Tensor& x) override { return head(block(x)) * scale; }
};

std::vector<std::string> keys(const StateDict& d) { return d.keys(); }

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST(FrontendModule, NamedParametersBuffersAndModules) {
  Net net;
  EXPECT_EQ(keys(net.named_parameters()),
            (std::vector<std::string>{"scale", "block.fc.weight", "block.fc.bias", "block.bn.weight", "block.bn.bias",
                                      "head.weight"}));
  EXPECT_EQ(keys(net.named_parameters(/*recurse=*/false)), (std::vector<std::string>{"scale"}));
  EXPECT_EQ(keys(net.named_buffers()),
            (std::vector<std::string>{"counter", "scratch", "block.bn.running_mean", "block.bn.running_var",
                                      "block.bn.num_batches_tracked"}));
  EXPECT_EQ(net.named_modules().keys(), (std::vector<std::string>{"", "block", "block.fc", "block.bn", "head"}));
  EXPECT_EQ(net.parameters().size(), 6u);
  EXPECT_EQ(net.children().size(), 2u);
  for (auto& p : net.parameters()) EXPECT_TRUE(p.requires_grad());
  // The member handle and the registry are the same tensor.
  EXPECT_TRUE(net.named_parameters()["block.fc.weight"].is_same(net.block->fc->weight));
  EXPECT_EQ(net.get_submodule("block.fc").get(), net.block->fc.get());
  EXPECT_NE(error_of([&] { net.get_submodule("block.nope"); }).find("Block has no attribute `nope`"),
            std::string::npos);
}

TEST(FrontendModule, SharedModulesAndTensorsAreListedOnce) {
  struct Tied : nn::Module {
    nn::Linear a = register_module("a", nn::Linear(2, 2));
    nn::Linear b = register_module("b", a);  // the same module twice
  } tied;
  EXPECT_EQ(tied.parameters().size(), 2u);
  EXPECT_EQ(tied.named_modules().keys(), (std::vector<std::string>{"", "a"}));
  // state_dict keeps both names, as Python's does.
  EXPECT_EQ(keys(tied.state_dict()), (std::vector<std::string>{"a.weight", "a.bias", "b.weight", "b.bias"}));
}

TEST(FrontendModule, RegistrationErrors) {
  nn::Module m;
  m.register_parameter("w", zeros({2}));
  EXPECT_THROW(m.register_parameter("w", zeros({2})), KeyError);
  EXPECT_EQ(error_of([&] { m.register_buffer("w", zeros({2})); }), "attribute 'w' already exists");
  EXPECT_EQ(error_of([&] { m.register_parameter("a.b", zeros({2})); }),
            "parameter name can't contain \".\", got: a.b");
  EXPECT_EQ(error_of([&] { m.register_buffer("", zeros({2})); }), "buffer name can't be empty string \"\"");
  Tensor leaf = ones({2}).requires_grad_();
  Tensor non_leaf = leaf * 2;
  EXPECT_THROW(m.register_parameter("nl", non_leaf), ValueError);
  EXPECT_EQ(error_of([&] { m.forward(ones({1})); }), "Module [Module] is missing the required \"forward\" function");
  EXPECT_THROW(m.forward(ones({1})), NotImplementedError);
}

TEST(FrontendModule, TrainEvalPropagates) {
  Net net;
  EXPECT_TRUE(net.block->bn->is_training());
  net.eval();
  for (auto* m : net.modules()) EXPECT_FALSE(m->is_training());
  net.train();
  for (auto* m : net.modules()) EXPECT_TRUE(m->is_training());
}

TEST(FrontendModule, StateDictIsDetachedAndSharesMemory) {
  Net net;
  StateDict sd = net.state_dict();
  EXPECT_EQ(keys(sd), (std::vector<std::string>{"scale", "counter", "block.fc.weight", "block.fc.bias",
                                                "block.bn.weight", "block.bn.bias", "block.bn.running_mean",
                                                "block.bn.running_var", "block.bn.num_batches_tracked",
                                                "head.weight"}));  // "scratch" is not persistent
  EXPECT_FALSE(sd["block.fc.weight"].requires_grad());
  sd["block.fc.weight"].fill_(Scalar(3.0));
  EXPECT_EQ(net.block->fc->weight.sum().item<double>(), 36.0);
}

TEST(FrontendModule, LoadStateDictCopiesInPlace) {
  manual_seed(1);
  Net a, b;
  Tensor w = b.block->fc->weight;
  b.load_state_dict(a.state_dict());
  EXPECT_TRUE(w.is_same(b.block->fc->weight));  // same tensor, new values
  EXPECT_TRUE(equal(b.block->fc->weight, a.block->fc->weight));
  Tensor x = randn({5, 3});
  a.eval(), b.eval();
  EXPECT_TRUE(equal(a(x), b(x)));
  // A 1-element checkpoint fills a 0-d parameter, as Python accepts.
  StateDict sd = a.state_dict();
  sd.insert("scale", full({1}, Scalar(2.5)));
  b.load_state_dict(sd);
  EXPECT_EQ(b.scale.item<double>(), 2.5);
}

TEST(FrontendModule, LoadStateDictErrorsNameKeysAndShapes) {
  Net net;
  StateDict sd = net.state_dict();
  sd.erase("head.weight");
  sd.erase("counter");
  sd.insert("block.fc.extra", zeros({1}));
  sd.insert("nothing.here", zeros({1}));
  sd.insert("block.fc.weight", zeros({5, 3}));
  std::string msg = error_of([&] { net.load_state_dict(sd); });
  EXPECT_EQ(msg,
            "Error(s) in loading state_dict for Net:\n"
            "\tMissing key(s) in state_dict: \"counter\", \"head.weight\". \n"
            "\tUnexpected key(s) in state_dict: \"nothing.here\", \"block.fc.extra\". \n"
            "\tsize mismatch for block.fc.weight: copying a param with shape kindle.Size([5, 3]) from checkpoint, "
            "the shape in current model is kindle.Size([4, 3]).");
  // Non-strict: missing and unexpected keys are reported, shape mismatches still raise.
  sd.insert("block.fc.weight", zeros({4, 3}));
  nn::IncompatibleKeys k = net.load_state_dict(sd, /*strict=*/false);
  EXPECT_EQ(k.missing_keys, (std::vector<std::string>{"counter", "head.weight"}));
  EXPECT_EQ(k.unexpected_keys, (std::vector<std::string>{"nothing.here", "block.fc.extra"}));
  EXPECT_EQ(net.block->fc->weight.abs().sum().item<double>(), 0.0);
}

TEST(FrontendModule, ToDtypeKeepsIdentityAndIntegerBuffers) {
  Net net;
  Tensor w = net.block->fc->weight;
  net(randn({4, 3})).sum().backward();
  net.to(kFloat64);
  EXPECT_TRUE(w.is_same(net.block->fc->weight));
  EXPECT_EQ(w.dtype(), kFloat64);
  EXPECT_EQ(w.grad().dtype(), kFloat64);
  EXPECT_EQ(net.block->bn->running_mean.dtype(), kFloat64);
  EXPECT_EQ(net.block->bn->num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(net(randn({4, 3}, std::nullopt, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ(error_of([&] { net.to(kInt32); }),
            "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=kindle.int32");
  // An optimizer built before the conversion keeps stepping the converted parameters.
  optim::SGD opt(net.parameters(), optim::SGDOptions(0.1));
  net.to(kFloat32);
  opt.zero_grad();
  // Squared, not summed: through training-mode BatchNorm a linear loss has an exactly-zero
  // gradient for fc->weight, which rounding leaves as +-1e-9 or 0 depending on the draw.
  net(randn({4, 3})).square().sum().backward();
  EXPECT_GT(w.grad().abs().max().item<double>(), 1e-4);
  Tensor before = w.clone();
  opt.step();
  EXPECT_FALSE(equal(before, w));
}

TEST(FrontendModule, ZeroGradAndRequiresGrad) {
  Net net;
  net(randn({4, 3})).sum().backward();
  EXPECT_TRUE(net.head->weight.grad().defined());
  net.zero_grad(/*set_to_none=*/false);
  EXPECT_EQ(net.head->weight.grad().abs().sum().item<double>(), 0.0);
  net.zero_grad();
  EXPECT_FALSE(net.head->weight.grad().defined());
  net.requires_grad_(false);
  for (auto& p : net.parameters()) EXPECT_FALSE(p.requires_grad());
}

TEST(FrontendModule, ApplyVisitsChildrenFirst) {
  Net net;
  std::vector<std::string> order;
  net.apply([&](nn::Module& m) { order.push_back(m.name()); });
  EXPECT_EQ(order, (std::vector<std::string>{"Linear", "BatchNorm1d", "Block", "Linear", "Net"}));
}

TEST(FrontendModule, ReprLikePython) {
  Net net;
  EXPECT_EQ(net.repr(),
            "Net(\n"
            "  (block): Block(\n"
            "    (fc): Linear(in_features=3, out_features=4, bias=True)\n"
            "    (bn): BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)\n"
            "  )\n"
            "  (head): Linear(in_features=4, out_features=2, bias=False)\n"
            ")");
}

TEST(FrontendModule, SequentialModuleListModuleDict) {
  nn::Sequential seq{nn::Linear(3, 5), nn::ReLU(), nn::Linear(5, 2)};
  EXPECT_EQ(seq->size(), 3u);
  EXPECT_EQ(keys(seq->state_dict()), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  Tensor x = randn({4, 3});
  Tensor want = linear(relu(linear(x, seq->at<nn::LinearImpl>(0).weight, seq->at<nn::Linear>(0).bias)),
                       seq->at<nn::Linear>(-1).weight, seq->at<nn::Linear>(-1).bias);
  EXPECT_TRUE(equal(seq(x), want));
  EXPECT_THROW(seq[3], IndexError);
  EXPECT_THROW(seq->at<nn::ReLU>(0), TypeError);
  EXPECT_TRUE(equal(nn::Sequential()(x), x));

  nn::Sequential named({{"fc", nn::Linear(3, 2)}, {"act", nn::Tanh()}});
  EXPECT_EQ(keys(named->state_dict()), (std::vector<std::string>{"fc.weight", "fc.bias"}));
  named->push_back(nn::Functional([](const Tensor& t) { return t * 2; }));
  EXPECT_EQ(named->named_children().keys(), (std::vector<std::string>{"fc", "act", "2"}));

  nn::ModuleList list{nn::Linear(2, 2), nn::Linear(2, 3)};
  list->push_back(nn::Linear(3, 1));
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(list->at<nn::Linear>(2).options.out_features(), 1);
  EXPECT_THROW(list(x), NotImplementedError);

  nn::ModuleDict dict;
  dict->insert("enc", nn::Linear(2, 2));
  EXPECT_TRUE(dict->contains("enc"));
  EXPECT_THROW(dict["dec"], KeyError);
  EXPECT_EQ(keys(dict->state_dict()), (std::vector<std::string>{"enc.weight", "enc.bias"}));
}

TEST(FrontendModule, ParameterListAndParameterDict) {
  // libtorch's containers of parameters: registered under "0", "1", ... / their keys, each
  // keeping its own requires_grad, trained by an optimizer like any parameter.
  struct Net : nn::Module {
    nn::ParameterList plist =
        register_module("plist", nn::ParameterList(randn({3}).requires_grad_(), randn({2, 3}).requires_grad_()));
    nn::ParameterDict pdict = register_module("pdict", nn::ParameterDict());
  };
  Net net;
  net.plist->append(zeros({4}).requires_grad_(false));
  net.pdict->insert("scale", ones({3}).requires_grad_());
  net.pdict->insert("count", zeros({2}, kLong));
  EXPECT_EQ(keys(net.state_dict()),
            (std::vector<std::string>{"plist.0", "plist.1", "plist.2", "pdict.scale", "pdict.count"}));
  EXPECT_EQ(net.plist->size(), 3u);
  EXPECT_TRUE(net.plist[0].requires_grad() && !net.plist[-1].requires_grad());
  EXPECT_EQ(net.plist->at(1).sizes(), IntArrayRef({2, 3}));
  EXPECT_THROW(net.plist[3], IndexError);
  int n = 0;
  for (const auto& item : *net.plist) n += item.key() == std::to_string(n);
  EXPECT_EQ(n, 3);
  EXPECT_EQ(net.parameters().size(), 5u);
  EXPECT_TRUE(net.pdict->contains("scale") && !net.pdict["count"].requires_grad());
  EXPECT_EQ(net.pdict->keys(), (std::vector<std::string>{"scale", "count"}));
  EXPECT_THROW(net.pdict["missing"], KeyError);

  optim::SGD opt(net.parameters(), optim::SGDOptions(0.5));
  Tensor loss = (net.plist[0] * net.pdict["scale"]).sum() + net.plist[1].sum();
  loss.backward();
  Tensor before = net.pdict["scale"].detach().clone();
  opt.step();
  EXPECT_FALSE(equal(net.pdict["scale"], before));  // the dict's entry is the live parameter

  Tensor popped = net.pdict->pop("count");
  EXPECT_EQ(popped.dtype(), kLong);
  EXPECT_FALSE(net.pdict->contains("count"));
  EXPECT_THROW(net.pdict->pop("count"), KeyError);
  nn::ParameterDict other;
  other->insert("scale", full({3}, 7.0));
  other->insert("shift", zeros({1}));
  net.pdict->update(*other);
  EXPECT_EQ(net.pdict->keys(), (std::vector<std::string>{"scale", "shift"}));
  EXPECT_EQ(net.pdict["scale"][0].item<double>(), 7.0);
  EXPECT_EQ(net.plist->repr(),
            "ParameterList(\n    (0): Parameter containing: [kindle.float32 of size 3]\n"
            "    (1): Parameter containing: [kindle.float32 of size 2x3]\n"
            "    (2): Parameter containing: [kindle.float32 of size 4]\n)");
  EXPECT_EQ(net.pdict->repr(), "ParameterDict(\n    (scale): Parameter containing: [kindle.FloatTensor of size 3]\n"
                               "    (shift): Parameter containing: [kindle.FloatTensor of size 1]\n)");
  net.pdict->clear();
  EXPECT_TRUE(net.pdict->empty());
  EXPECT_EQ(nn::ParameterList()->repr(), "ParameterList()");
}

TEST(FrontendModule, BracedListsBuildLeftToRight) {
  // The layers draw their weights in the order written (Python's), whatever the compiler.
  manual_seed(11);
  nn::Sequential seq{nn::Linear(2, 3), nn::Linear(3, 4), nn::Ptr<nn::Module>(nn::Linear(4, 1).ptr())};
  manual_seed(11);
  nn::Linear a(2, 3), b(3, 4), c(4, 1);
  EXPECT_TRUE(equal(seq->at<nn::LinearImpl>(0).weight, a->weight));
  EXPECT_TRUE(equal(seq->at<nn::LinearImpl>(1).weight, b->weight));
  EXPECT_TRUE(equal(seq->at<nn::LinearImpl>(2).bias, c->bias));
}

TEST(FrontendModule, PtrCallsForwardAndModulesMove) {
  nn::Linear fc = nn::Linear(3, 2);
  Tensor x = randn({1, 3});
  EXPECT_TRUE(equal(fc(x), fc->forward(x)));
  nn::LinearImpl moved = std::move(*fc);  // the registry and the members move together
  EXPECT_TRUE(moved.named_parameters()["weight"].is_same(moved.weight));
}

namespace {
struct Pair : nn::Module {
  nn::Linear a = register_module("a", std::make_shared<nn::LinearImpl>(2, 3));
  Tensor forward(const Tensor& x, const Tensor& y) { return a(x) + a(y); }
  KINDLE_MODULE_CALL
};
}  // namespace

TEST(FrontendModule, CustomMultiInputModuleSharedPtrAndReplace) {
  Pair m;
  Tensor x = randn({1, 2}), y = randn({1, 2});
  EXPECT_TRUE(equal(m(x, y), m.a->forward(x) + m.a->forward(y)));
  EXPECT_THROW(static_cast<nn::Module&>(m)(x), NotImplementedError);  // no single-input forward
  Tensor w = zeros({3, 2});
  m.a->replace_parameter("weight", w);
  EXPECT_TRUE(m.a->named_parameters()["weight"].is_same(w));
  EXPECT_TRUE(w.requires_grad());
  EXPECT_THROW(m.a->replace_parameter("nope", w), KeyError);
}

TEST(FrontendModule, SaveAndLoadFile) {
  manual_seed(3);
  Net a, b;
  std::string path = ::testing::TempDir() + "kindle_frontend_module_" + std::to_string(::getpid()) + ".safetensors";
  a.save(path);
  b.load(path);
  a.eval(), b.eval();
  Tensor x = randn({2, 3});
  EXPECT_TRUE(equal(a(x), b(x)));
  nn::Linear other(3, 3);
  EXPECT_THROW(other->load(path), Error);
  std::remove(path.c_str());
}
