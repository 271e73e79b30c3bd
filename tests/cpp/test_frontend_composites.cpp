// The modules over the composites that moved into the core (csrc/nn: ctc, fractional pooling,
// feature alpha dropout, the adaptive log-softmax, gumbel_softmax, pdist): libtorch's spellings,
// wiring and properties; Python's tests compare the same ops with torch.
#include <gtest/gtest.h>

#include <cmath>

#include <kindle/frontend.h>

using namespace kindle;
namespace F = kindle::nn::functional;

TEST(FrontendComposites, FeatureAlphaDropout) {
  manual_seed(0);
  nn::FeatureAlphaDropout drop(0.5);
  Tensor x = randn({64, 32, 4});
  drop->eval();
  EXPECT_TRUE(equal(drop(x), x));
  drop->train();
  Tensor y = drop(x);
  // whole channels: within each (n, c) the dropped ones are constant
  Tensor dropped = (y.std(IntArrayRef{2}) < 1e-6);
  EXPECT_GT(dropped.sum().item<int64_t>(), 0);
  EXPECT_NEAR(y.mean().item<double>(), x.mean().item<double>(), 0.05);
  EXPECT_NEAR(y.std().item<double>(), x.std().item<double>(), 0.1);
  EXPECT_THROW(F::feature_alpha_dropout(randn({3}), F::FeatureAlphaDropoutFuncOptions().training(true)), Error);
}

TEST(FrontendComposites, FractionalMaxPool) {
  manual_seed(1);
  Tensor x = randn({2, 3, 9, 9}, TensorOptions(kFloat64)).requires_grad_(true);
  Tensor samples = rand({2, 3, 2}, TensorOptions(kFloat64));
  nn::FractionalMaxPool2d pool(nn::FractionalMaxPool2dOptions(3).output_size(4)._random_samples(samples));
  auto [v, idx] = pool->forward_with_indices(x);
  EXPECT_EQ(v.sizes(), (std::vector<int64_t>{2, 3, 4, 4}));
  // each value is the input at its index, and the maximum of a 3x3 window there
  EXPECT_TRUE(equal(v, x.detach().flatten(2).gather(2, idx.flatten(2)).reshape(v.sizes())));
  v.sum().backward();
  EXPECT_EQ(x.grad().sum().item<double>(), 2 * 3 * 16);
  nn::FractionalMaxPool2d ratio(nn::FractionalMaxPool2dOptions(2).output_ratio(std::vector<double>{0.5}));
  EXPECT_EQ(ratio(randn({1, 10, 10})).sizes(), (std::vector<int64_t>{1, 5, 5}));
  nn::FractionalMaxPool3d pool3(nn::FractionalMaxPool3dOptions(2).output_size(3));
  EXPECT_EQ(pool3(randn({1, 2, 6, 6, 6})).sizes(), (std::vector<int64_t>{1, 2, 3, 3, 3}));
  EXPECT_THROW(nn::FractionalMaxPool2d(nn::FractionalMaxPool2dOptions(2)), ValueError);
  EXPECT_THROW(pool(randn({2, 3, 5, 5})), Error);  // output 4 + kernel 3 - 1 > 5
}

TEST(FrontendComposites, CTCLoss) {
  manual_seed(2);
  const int64_t T = 12, N = 3, C = 5;
  Tensor logits = randn({T, N, C}).requires_grad_(true);
  Tensor log_probs = logits.log_softmax(2);
  Tensor targets = randint(1, C, {N, 4});
  Tensor il = full({N}, T, kInt64), tl = full({N}, 4, kInt64);
  nn::CTCLoss ctc(nn::CTCLossOptions().blank(0).reduction(kSum));
  Tensor loss = ctc(log_probs, targets, il, tl);
  EXPECT_TRUE(std::isfinite(loss.item<double>()) && loss.item<double>() > 0);
  loss.backward();
  EXPECT_TRUE(logits.grad().isfinite().all().item<bool>());
  // the per-sample losses add up to the sum; mean divides by the target lengths
  Tensor none = F::ctc_loss(log_probs, targets, il, tl, F::CTCLossFuncOptions().reduction(kNone));
  EXPECT_NEAR(none.sum().item<double>(), loss.item<double>(), 1e-4);
  Tensor mean = F::ctc_loss(log_probs, targets, il, tl);
  EXPECT_NEAR(mean.item<double>(), (none / 4).mean().item<double>(), 1e-5);
  // an impossible alignment (targets longer than the input) is infinite, or zero with zero_infinity
  Tensor short_il = full({N}, 2, kInt64);
  EXPECT_TRUE(std::isinf(F::ctc_loss(log_probs, targets, short_il, tl, F::CTCLossFuncOptions().reduction(kSum)).item<double>()));
  EXPECT_EQ(F::ctc_loss(log_probs, targets, short_il, tl, F::CTCLossFuncOptions().zero_infinity(true)).item<double>(), 0);
  EXPECT_THROW(ctc(log_probs, targets, full({N}, T + 1, kInt64), tl), Error);
}

TEST(FrontendComposites, TripletMarginWithDistanceLoss) {
  manual_seed(3);
  Tensor a = randn({8, 5}), p = randn({8, 5}), n = randn({8, 5});
  auto l1 = [](const Tensor& x, const Tensor& y) { return (x - y).abs().sum(IntArrayRef{1}); };
  nn::TripletMarginWithDistanceLoss loss(nn::TripletMarginWithDistanceLossOptions().distance_function(l1).margin(0.5));
  Tensor want = clamp_min(l1(a, p) - l1(a, n) + 0.5, 0).mean();
  EXPECT_TRUE(allclose(loss(a, p, n), want));
  nn::TripletMarginWithDistanceLoss plain;
  nn::TripletMarginLoss reference;
  EXPECT_TRUE(allclose(plain(a, p, n), reference(a, p, n)));
  EXPECT_THROW(nn::TripletMarginWithDistanceLoss(nn::TripletMarginWithDistanceLossOptions().margin(0)), ValueError);
}

TEST(FrontendComposites, AdaptiveLogSoftmaxWithLoss) {
  manual_seed(4);
  nn::AdaptiveLogSoftmaxWithLoss asm_(nn::AdaptiveLogSoftmaxWithLossOptions(16, 20, {5, 12}).div_value(2.0));
  std::vector<std::string> names;
  for (auto& [k, v] : asm_->named_parameters()) names.push_back(k);
  EXPECT_EQ(names, (std::vector<std::string>{"head.weight", "tail.0.0.weight", "tail.0.1.weight", "tail.1.0.weight",
                                             "tail.1.1.weight"}));
  EXPECT_EQ(asm_->tail[0]->as<nn::Sequential>()->size(), 2u);
  Tensor x = randn({6, 16});
  Tensor target = tensor({0, 4, 5, 11, 12, 19}, kInt64);
  auto [output, loss] = asm_(x, target);
  Tensor log_prob = asm_->log_prob(x);
  EXPECT_EQ(log_prob.sizes(), (std::vector<int64_t>{6, 20}));
  EXPECT_TRUE(allclose(log_prob.exp().sum(IntArrayRef{1}), ones({6}), 1e-5, 1e-5));
  EXPECT_TRUE(allclose(output, log_prob.gather(1, target.unsqueeze(1)).squeeze(IntArrayRef{1}), 1e-5, 1e-6));
  EXPECT_NEAR(loss.item<double>(), -output.mean().item<double>(), 1e-6);
  EXPECT_TRUE(equal(asm_->predict(x), log_prob.argmax(1)));
  loss.backward();
  EXPECT_TRUE(asm_->head->weight.grad().defined());
  EXPECT_THROW(asm_(x, tensor({0, 1, 2, 3, 4, 20}, kInt64)), Error);
  EXPECT_THROW(nn::AdaptiveLogSoftmaxWithLoss(nn::AdaptiveLogSoftmaxWithLossOptions(16, 20, {12, 5})), ValueError);
}

TEST(FrontendComposites, GumbelSoftmaxAndPdist) {
  manual_seed(5);
  Tensor logits = randn({4, 6});
  Tensor soft = F::gumbel_softmax(logits, F::GumbelSoftmaxFuncOptions().tau(0.5));
  EXPECT_TRUE(allclose(soft.sum(IntArrayRef{1}), ones({4})));
  Tensor hard = F::gumbel_softmax(logits, F::GumbelSoftmaxFuncOptions().hard(true));
  EXPECT_TRUE(equal(hard.sum(IntArrayRef{1}), ones({4})));
  EXPECT_EQ((hard == 1).sum().item<int64_t>(), 4);
  Tensor x = randn({5, 3}, TensorOptions(kFloat64));
  Tensor d = F::pdist(x);
  ASSERT_EQ(d.numel(), 10);
  EXPECT_NEAR(d.select(0, 0).item<double>(), (x.select(0, 0) - x.select(0, 1)).norm().item<double>(), 1e-12);
  EXPECT_THROW(F::pdist(randn({5, 3}, TensorOptions(kFloat16))), NotImplementedError);
}
