#include <gtest/gtest.h>

#include <kindle/kindle.h>

using namespace kindle;
namespace ag = kindle::autograd;

static std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

TEST(Autograd, BackwardAccumulatesIntoLeaves) {
  Tensor x = arange(0, 3, 1, kFloat64).requires_grad_();
  Tensor y = (x * x + x).sum();
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn()->name(), "SumBackward0");
  y.backward();
  EXPECT_EQ(values(x.grad()), std::vector<double>({1, 3, 5}));  // 2x + 1
  (x * 2).sum().backward();                                      // accumulates
  EXPECT_EQ(values(x.grad()), std::vector<double>({3, 5, 7}));
}

TEST(Autograd, BroadcastGradientsAreReducedToInputShapes) {
  Tensor a = ones({3, 1}, kFloat32).requires_grad_();
  Tensor b = ones({4}, kFloat64).requires_grad_();
  (a * b).sum().backward();
  EXPECT_EQ(a.grad().sizes(), IntArrayRef({3, 1}));
  EXPECT_EQ(a.grad().dtype(), kFloat32);
  EXPECT_EQ(values(a.grad()), std::vector<double>({4, 4, 4}));
  EXPECT_EQ(values(b.grad()), std::vector<double>({3, 3, 3, 3}));
}

TEST(Autograd, NoGradGuardRecordsNothing) {
  Tensor x = ones({2}).requires_grad_();
  Tensor y;
  {
    ag::NoGradGuard g;
    y = x * 2;
  }
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
}

TEST(Autograd, InferenceModeMakesInferenceTensors) {
  Tensor n = ones({3});
  Tensor w = ones({2}).requires_grad_();
  Tensor x, v;
  {
    InferenceMode guard;
    EXPECT_FALSE(ag::GradMode::is_enabled());
    EXPECT_TRUE(InferenceMode::is_enabled());
    x = ones({2});
    v = n.narrow(0, 0, 2);  // a view of a normal tensor stays normal
    {
      InferenceMode off(false);
      EXPECT_TRUE(ag::GradMode::is_enabled());
      EXPECT_FALSE(ones({1}).is_inference());
    }
    x.add_(scalar_to_tensor(1));
  }
  EXPECT_TRUE(ag::GradMode::is_enabled());
  EXPECT_FALSE(InferenceMode::is_enabled());
  EXPECT_TRUE(x.is_inference());
  EXPECT_TRUE(x.narrow(0, 0, 1).is_inference());
  EXPECT_FALSE(v.is_inference());
  EXPECT_FALSE((x + 1).is_inference());
  EXPECT_THROW(x.add_(scalar_to_tensor(1)), Error);
  EXPECT_THROW(x.requires_grad_(), Error);
  EXPECT_THROW((x * w).sum(), Error);
  Tensor y = (x.clone() * w).sum();
  y.backward();
  EXPECT_EQ(values(w.grad()), std::vector<double>({2, 2}));
}

TEST(Autograd, ModifiedSavedTensorRaisesWithNodeName) {
  Tensor x = ones({2, 3}).requires_grad_();
  Tensor y = x.exp();
  y.add_(scalar_to_tensor(1));
  try {
    y.sum().backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("ExpBackward0"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("version 1"), std::string::npos) << m;
  }
}

TEST(Autograd, InPlaceOnViewOfNonLeaf) {
  Tensor x = ones({2, 2}, kFloat64).requires_grad_();
  Tensor y = x * 1;
  y.select(0, 0).mul_(scalar_to_tensor(3));
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), std::vector<double>({3, 3, 1, 1}));
}

TEST(Autograd, GradWithCreateGraphGivesSecondDerivative) {
  Tensor x = full({1}, 2.0, kFloat64).requires_grad_();
  Tensor y = (x * x * x).sum();
  auto g = ag::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_EQ(values(g[0]), std::vector<double>({12}));  // 3x^2
  auto gg = ag::grad({g[0].sum()}, {x});
  EXPECT_EQ(values(gg[0]), std::vector<double>({12}));  // 6x
}

struct CubeFn : ag::Function<CubeFn> {
  static Tensor forward(ag::FunctionCtx& ctx, const Tensor& x) {
    ctx.save_for_backward({x});
    return x * x * x;
  }
  static ag::tensor_list backward(ag::FunctionCtx& ctx, ag::tensor_list grads) {
    Tensor x = ctx.saved_tensors()[0];
    return {grads[0] * 3 * x * x};
  }
};

TEST(Autograd, CustomCppFunction) {
  Tensor x = full({2}, 2.0, kFloat64).requires_grad_();
  Tensor y = CubeFn::apply(x);
  EXPECT_TRUE(y.requires_grad());
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), std::vector<double>({12, 12}));
}

TEST(Autograd, HookReplacesGradient) {
  Tensor x = ones({2}).requires_grad_();
  Tensor y = x * 2;
  y.register_hook([](const Tensor& g) { return g * 10; });
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), std::vector<double>({20, 20}));
}

TEST(Autograd, BackwardTwiceWithoutRetainGraphRaises) {
  Tensor x = ones({2}).requires_grad_();
  Tensor y = (x.exp()).sum();
  y.backward(Tensor(), true);
  y.backward();
  EXPECT_THROW(y.backward(), Error);
}

TEST(Autograd, ForwardModeDualTensors) {
  namespace fw = ag::forward_ad;
  Tensor x = arange(1, 4, 1, kFloat64), v = full({3}, Scalar(0.5), kFloat64);
  Tensor y;
  {
    fw::DualLevel level;
    EXPECT_THROW(fw::enter_dual_level(), Error);  // one level at a time
    Tensor d = fw::make_dual(x, v);
    y = (d * d).sum();  // d/dx sum(x^2) . v = 2 x . v = 6
    auto [p, t] = fw::unpack_dual(y);
    ASSERT_TRUE(t.defined());
    EXPECT_DOUBLE_EQ(t.item<double>(), 6.0);
    EXPECT_DOUBLE_EQ(p.item<double>(), 14.0);
    EXPECT_FALSE(fw::unpack_dual(p).second.defined());
    // a fused kernel without a forward formula (cross entropy) takes its op path
    Tensor logits = fw::make_dual(ones({2, 3}, kFloat64), ones({2, 3}, kFloat64));
    Tensor loss = cross_entropy(logits, zeros({2}, kInt64));
    EXPECT_NEAR(fw::unpack_dual(loss).second.item<double>(), 0.0, 1e-12);  // a uniform shift changes nothing
  }
  EXPECT_FALSE(fw::unpack_dual(y).second.defined());  // dropped at the level's exit
  EXPECT_THROW(fw::make_dual(x, v), Error);
}

// Saved-tensor hooks from C++: a pair that keeps a copy elsewhere and hands it back in backward.
namespace {
struct CountingCopyHooks : ag::SavedTensorHooks {
  static inline int packs = 0, unpacks = 0;
  Tensor kept;
  void pack(const Tensor& t) override {
    ++packs;
    EXPECT_FALSE(ag::GradMode::is_enabled());
    kept = t.clone();
  }
  Tensor unpack() override {
    ++unpacks;
    return kept;
  }
};
}  // namespace

TEST(Autograd, SavedTensorsHooksPackAndUnpack) {
  Tensor x = arange(1, 4, 1, kFloat64).requires_grad_();
  Tensor y;
  {
    ag::SavedTensorsHooksGuard guard([] { return std::make_unique<CountingCopyHooks>(); });
    y = (x * x * x).sum();  // mul saves both operands twice
  }
  EXPECT_EQ(CountingCopyHooks::packs, 4);
  auto g = ag::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_EQ(values(g[0]), std::vector<double>({3, 12, 27}));  // 3x^2
  EXPECT_EQ(CountingCopyHooks::unpacks, 4);                      // each of mul's two formulas, twice
  g[0].sum().backward();  // through the unpacked copies' history: x*x's node runs (and unpacks) again
  EXPECT_EQ(values(x.grad()), std::vector<double>({6, 12, 18}));
  EXPECT_EQ(CountingCopyHooks::unpacks, 6);
  // installing while disabled raises the disabling message
  ag::set_saved_tensors_hooks_disabled("not here");
  EXPECT_THROW(ag::push_saved_tensors_hooks([] { return std::make_unique<CountingCopyHooks>(); }), Error);
  ag::set_saved_tensors_hooks_disabled("");
}

TEST(Autograd, GradWithRespectToAGradientEdge) {
  Tensor x = arange(1, 4, 1, kFloat64).requires_grad_();
  Tensor h = x * 2;
  ag::Edge edge = ag::gradient_edge(h);
  Tensor out = (h * h).sum();
  auto r = ag::run_backward({ag::BackwardArg(out)}, {}, false, false, {ag::BackwardArg(edge)}, false, false);
  EXPECT_EQ(values(r[0]), std::vector<double>({4, 8, 12}));  // 2h
}
