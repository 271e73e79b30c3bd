// Layers: shapes, parameter names, default initialisation, agreement with the functional ops,
// training/eval behaviour and constructor checks. (Values against PyTorch are checked through
// the Python front end, which runs the same ops: tests/python/test_cpp_roundtrip.py.)
#include <gtest/gtest.h>

#include <cmath>

#include <kindle/frontend.h>

using namespace kindle;

namespace {

std::vector<std::string> keys(const StateDict& d) { return d.keys(); }
double amax_abs(const Tensor& t) { return t.abs().max().item<double>(); }
double amin_(const Tensor& t) { return t.min().item<double>(); }
double amax_(const Tensor& t) { return t.max().item<double>(); }

}  // namespace

TEST(FrontendLayers, LinearShapesInitAndForward) {
  manual_seed(0);
  nn::Linear fc(nn::LinearOptions(50, 7));
  EXPECT_EQ(fc->weight.sizes(), IntArrayRef({7, 50}));
  EXPECT_EQ(fc->bias.sizes(), IntArrayRef({7}));
  double bound = 1 / std::sqrt(50.0);
  EXPECT_LE(amax_abs(fc->weight), bound);
  EXPECT_GT(amax_abs(fc->weight), 0.9 * bound);  // uniform over the whole range
  EXPECT_LE(amax_abs(fc->bias), bound);
  Tensor x = randn({3, 50});
  EXPECT_TRUE(equal(fc(x), addmm(fc->bias, x, fc->weight.t())) || allclose(fc(x), addmm(fc->bias, x, fc->weight.t())));
  nn::Linear nobias(50, 7, false);
  EXPECT_EQ(keys(nobias->state_dict()), (std::vector<std::string>{"weight"}));
  nn::Linear f64(nn::LinearOptions(2, 2).dtype(kFloat64));
  EXPECT_EQ(f64->weight.dtype(), kFloat64);
}

TEST(FrontendLayers, SameSeedSameWeights) {
  manual_seed(7);
  nn::Conv2d a(nn::Conv2dOptions(3, 4, 3));
  manual_seed(7);
  nn::Conv2d b(nn::Conv2dOptions(3, 4, 3));
  EXPECT_TRUE(equal(a->weight, b->weight));
  EXPECT_TRUE(equal(a->bias, b->bias));
}

TEST(FrontendLayers, Conv2dOptionsAndPadding) {
  manual_seed(0);
  nn::Conv2d conv(nn::Conv2dOptions(3, 8, 3).stride(2).padding(1).bias(false));
  EXPECT_EQ(conv->weight.sizes(), IntArrayRef({8, 3, 3, 3}));
  EXPECT_FALSE(conv->bias.defined());
  double bound = 1 / std::sqrt(27.0);
  EXPECT_LE(amax_abs(conv->weight), bound);
  Tensor x = randn({2, 3, 9, 9});
  Tensor y = conv(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 8, 5, 5}));
  EXPECT_TRUE(equal(y, conv2d(x, conv->weight, std::nullopt, {2, 2}, {1, 1})));
  EXPECT_EQ(conv->repr(), "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)");

  // 'same' with an even kernel pads the extra element at the end, as PyTorch does.
  nn::Conv2d same(nn::Conv2dOptions(3, 2, {2, 3}).padding("same"));
  Tensor ys = same(x);
  EXPECT_EQ(ys.sizes(), IntArrayRef({2, 2, 9, 9}));
  Tensor manual = conv2d(pad(x, {1, 1, 0, 1}), same->weight, same->bias);
  EXPECT_TRUE(allclose(ys, manual, 1e-6, 1e-6));
  nn::Conv2d valid(nn::Conv2dOptions(3, 2, 3).padding("valid"));
  EXPECT_EQ(valid(x).sizes(), IntArrayRef({2, 2, 7, 7}));

  nn::Conv2d refl(nn::Conv2dOptions(3, 2, 3).padding(1).padding_mode("reflect"));
  EXPECT_TRUE(allclose(refl(x), conv2d(pad(x, {1, 1, 1, 1}, "reflect"), refl->weight, refl->bias), 1e-6, 1e-6));

  EXPECT_THROW(nn::Conv2d(nn::Conv2dOptions(3, 4, 3).groups(2)), ValueError);
  EXPECT_THROW(nn::Conv2d(nn::Conv2dOptions(4, 4, 3).stride(2).padding("same")), ValueError);
  EXPECT_THROW(nn::Conv2d(nn::Conv2dOptions(4, 4, 3).padding("full")), ValueError);
  EXPECT_THROW(nn::Conv2d(nn::Conv2dOptions(4, 4, 3).padding_mode("mirror")), ValueError);
  nn::Conv2d depthwise(nn::Conv2dOptions(4, 8, 3).groups(4));
  EXPECT_EQ(depthwise->weight.sizes(), IntArrayRef({8, 1, 3, 3}));
}

TEST(FrontendLayers, Conv1dAndPooling) {
  nn::Conv1d conv(nn::Conv1dOptions(2, 3, 5).padding(2));
  Tensor x = randn({4, 2, 11});
  EXPECT_EQ(conv(x).sizes(), IntArrayRef({4, 3, 11}));
  EXPECT_EQ(conv->name(), "Conv1d");
  nn::MaxPool1d mp(2);
  Tensor m = mp(x);
  EXPECT_EQ(m.sizes(), IntArrayRef({4, 2, 5}));
  EXPECT_EQ(m.select(2, 0).sub(maximum(x.select(2, 0), x.select(2, 1))).abs().max().item<double>(), 0.0);
  nn::AvgPool1d ap(nn::AvgPool1dOptions(3).stride(1));
  EXPECT_EQ(ap(x).sizes(), IntArrayRef({4, 2, 9}));
  Tensor img = randn({2, 3, 8, 8});
  nn::MaxPool2d mp2(nn::MaxPool2dOptions(3).stride(2).padding(1));
  EXPECT_EQ(mp2(img).sizes(), IntArrayRef({2, 3, 4, 4}));
  nn::AvgPool2d ap2(2);
  EXPECT_TRUE(allclose(ap2(img).select(3, 0).select(2, 0),
                       img.narrow(2, 0, 2).narrow(3, 0, 2).mean(std::vector<int64_t>{2, 3})));
  nn::AdaptiveAvgPool2d gap(nn::ExpandingArray<2>({1, 1}));
  EXPECT_TRUE(allclose(gap(img).flatten(1), img.mean(std::vector<int64_t>{2, 3})));
}

TEST(FrontendLayers, BatchNormRunningStatistics) {
  nn::BatchNorm2d bn(nn::BatchNormOptions(3).momentum(0.5));
  EXPECT_EQ(keys(bn->state_dict()), (std::vector<std::string>{"weight", "bias", "running_mean", "running_var",
                                                             "num_batches_tracked"}));
  Tensor x = randn({8, 3, 4, 4}) * 2 + 1;
  Tensor y = bn(x);
  // Training: batch statistics, so each channel comes out with mean 0, variance 1.
  EXPECT_LT(amax_abs(y.mean(std::vector<int64_t>{0, 2, 3})), 1e-5);
  Tensor mean = x.mean(std::vector<int64_t>{0, 2, 3});
  Tensor var = x.var(std::vector<int64_t>{0, 2, 3});  // unbiased in the running estimate
  EXPECT_TRUE(allclose(bn->running_mean, mean * 0.5, 1e-5, 1e-6));
  EXPECT_TRUE(allclose(bn->running_var, var * 0.5 + 0.5, 1e-5, 1e-6));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  bn->eval();
  Tensor ye = bn(x);
  Tensor want = (x - bn->running_mean.reshape({1, 3, 1, 1})) / (bn->running_var.reshape({1, 3, 1, 1}) + 1e-5).sqrt();
  EXPECT_TRUE(allclose(ye, want, 1e-5, 1e-5));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);  // eval does not count
  EXPECT_THROW(bn(randn({2, 3})), ValueError);

  // momentum = nullopt: cumulative average.
  nn::BatchNorm1d cum(nn::BatchNormOptions(2).momentum(std::nullopt));
  Tensor a = randn({5, 2}), b = randn({5, 2});
  cum(a);
  cum(b);
  EXPECT_TRUE(allclose(cum->running_mean, (a.mean(std::vector<int64_t>{0}) + b.mean(std::vector<int64_t>{0})) / 2,
                       1e-5, 1e-6));
  nn::BatchNorm1d untracked(nn::BatchNormOptions(2).track_running_stats(false).affine(false));
  EXPECT_TRUE(untracked->state_dict().empty());
  untracked->eval();
  EXPECT_LT(amax_abs(untracked(a).mean(std::vector<int64_t>{0})), 1e-5);  // batch statistics even in eval
}

TEST(FrontendLayers, LayerNormAndGroupNorm) {
  nn::LayerNorm ln(nn::LayerNormOptions({4, 5}).eps(1e-6));
  EXPECT_EQ(ln->weight.sizes(), IntArrayRef({4, 5}));
  EXPECT_EQ(amin_(ln->weight), 1.0);
  EXPECT_EQ(amax_abs(ln->bias), 0.0);
  Tensor x = randn({3, 4, 5});
  EXPECT_TRUE(equal(ln(x), layer_norm(x, {4, 5}, ln->weight, ln->bias, 1e-6)));
  nn::LayerNorm plain(nn::LayerNormOptions(5).elementwise_affine(false));
  EXPECT_TRUE(plain->parameters().empty());
  EXPECT_EQ(ln->repr(), "LayerNorm((4, 5), eps=1e-06, elementwise_affine=True, bias=True)");
  nn::GroupNorm gn(2, 4);
  Tensor g = randn({2, 4, 3, 3});
  EXPECT_TRUE(equal(gn(g), group_norm(g, 2, gn->weight, gn->bias)));
  EXPECT_THROW(nn::GroupNorm(3, 4), ValueError);
}

TEST(FrontendLayers, DropoutTrainAndEval) {
  nn::Dropout drop(0.25);
  Tensor x = ones({20000});
  Tensor y = drop(x);
  double kept = y.ne(scalar_to_tensor(0)).to(kFloat64).mean().item<double>();
  EXPECT_NEAR(kept, 0.75, 0.02);
  EXPECT_NEAR(amax_(y), 1 / 0.75, 1e-6);
  drop->eval();
  EXPECT_TRUE(equal(drop(x), x));
  EXPECT_THROW(nn::Dropout(1.5), ValueError);
  nn::Dropout2d d2(0.5);
  Tensor z = d2(ones({4, 16, 3, 3}));
  // whole channels are zeroed or kept
  Tensor per_channel = z.amax({2, 3}) - z.amin({2, 3});
  EXPECT_EQ(amax_(per_channel), 0.0);
}

TEST(FrontendLayers, EmbeddingPaddingAndPretrained) {
  manual_seed(0);
  nn::Embedding emb(nn::EmbeddingOptions(10, 3).padding_idx(-1));
  EXPECT_EQ(emb->options.padding_idx(), std::optional<int64_t>(9));
  EXPECT_EQ(amax_abs(emb->weight.select(0, 9)), 0.0);
  Tensor idx = arange(0, 10, 1, kInt64).reshape({2, 5});
  Tensor out = emb(idx);
  EXPECT_EQ(out.sizes(), IntArrayRef({2, 5, 3}));
  out.sum().backward();
  EXPECT_EQ(amax_abs(emb->weight.grad().select(0, 9)), 0.0);  // no gradient for the padding row
  EXPECT_EQ(amin_(emb->weight.grad().select(0, 0)), 1.0);
  EXPECT_THROW(nn::Embedding(nn::EmbeddingOptions(4, 2).padding_idx(4)), ValueError);
  Tensor table = randn({4, 2});
  nn::Embedding pre = nn::Embedding::from_pretrained(table);
  EXPECT_FALSE(pre->weight.requires_grad());
  EXPECT_EQ(pre->weight.data_ptr(), table.data_ptr());  // shared, as in Python
  EXPECT_TRUE(equal(pre(full({1}, Scalar(int64_t(2)), kInt64)).select(0, 0), table.select(0, 2)));
}

TEST(FrontendLayers, Activations) {
  Tensor x = randn({64});
  EXPECT_TRUE(equal(nn::ReLU()(x), relu(x)));
  EXPECT_TRUE(equal(nn::GELU("tanh")(x), gelu(x, "tanh")));
  EXPECT_TRUE(equal(nn::LeakyReLU(0.2)(x), leaky_relu(x, 0.2)));
  EXPECT_TRUE(equal(nn::ELU(0.5)(x), elu(x, 0.5)));
  EXPECT_TRUE(equal(nn::Tanh()(x), tanh(x)));
  EXPECT_TRUE(equal(nn::Sigmoid()(x), sigmoid(x)));
  EXPECT_TRUE(equal(nn::SiLU()(x), silu(x)));
  EXPECT_TRUE(equal(nn::Softplus(2.0, 10.0)(x), softplus(x, 2.0, 10.0)));
  EXPECT_TRUE(equal(nn::Hardtanh(-0.5, 0.5)(x), hardtanh(x, -0.5, 0.5)));
  EXPECT_TRUE(equal(nn::Softmax(0)(x), softmax(x, 0)));
  EXPECT_TRUE(equal(nn::LogSoftmax(0)(x), log_softmax(x, 0)));
  EXPECT_THROW(nn::Hardtanh(1.0, -1.0), ValueError);
  nn::PReLU prelu_m(3);
  EXPECT_EQ(keys(prelu_m->state_dict()), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(amin_(prelu_m->weight), 0.25);
  Tensor img = randn({2, 3, 4});
  EXPECT_TRUE(equal(prelu_m(img), prelu(img, prelu_m->weight)));
  EXPECT_EQ(nn::GELU()->repr(), "GELU(approximate='none')");
}

TEST(FrontendLayers, Losses) {
  Tensor logits = randn({6, 4}).requires_grad_();
  Tensor labels = randint(0, 4, {6});
  nn::CrossEntropyLoss ce;
  EXPECT_TRUE(equal(ce(logits, labels), cross_entropy(logits, labels)));
  Tensor w = rand({4});
  nn::CrossEntropyLoss wce(nn::CrossEntropyLossOptions().weight(w).label_smoothing(0.1).reduction("sum"));
  EXPECT_TRUE(equal(wce(logits, labels), cross_entropy(logits, labels, w, -100, "sum", 0.1)));
  EXPECT_EQ(keys(wce->state_dict()), (std::vector<std::string>{"weight"}));  // a buffer, as in Python
  EXPECT_TRUE(ce->state_dict().empty());
  nn::NLLLoss nll;
  EXPECT_TRUE(equal(nll(log_softmax(logits, 1), labels), nll_loss(log_softmax(logits, 1), labels)));
  Tensor a = randn({5, 3}), b = randn({5, 3});
  EXPECT_TRUE(equal(nn::MSELoss()(a, b), mse_loss(a, b)));
  EXPECT_TRUE(equal(nn::L1Loss(nn::L1LossOptions("none"))(a, b), l1_loss(a, b, "none")));
  EXPECT_TRUE(equal(nn::HuberLoss(nn::HuberLossOptions().delta(0.5))(a, b), huber_loss(a, b, "mean", 0.5)));
  EXPECT_TRUE(equal(nn::SmoothL1Loss()(a, b), smooth_l1_loss(a, b)));
  Tensor p = sigmoid(a), t = rand({5, 3});
  EXPECT_TRUE(equal(nn::BCELoss()(p, t), binary_cross_entropy(p, t)));
  Tensor pw = rand({3});
  EXPECT_TRUE(equal(nn::BCEWithLogitsLoss(nn::BCEWithLogitsLossOptions().pos_weight(pw))(a, t),
                    binary_cross_entropy_with_logits(a, t, std::nullopt, pw)));
  EXPECT_TRUE(equal(nn::KLDivLoss(nn::KLDivLossOptions().reduction("sum"))(log_softmax(a, 1), softmax(b, 1)),
                    kl_div(log_softmax(a, 1), softmax(b, 1), "sum")));
  EXPECT_THROW(nn::MSELoss(nn::MSELossOptions("average")), ValueError);
  ce(logits, labels).backward();
  EXPECT_TRUE(logits.grad().defined());
}
