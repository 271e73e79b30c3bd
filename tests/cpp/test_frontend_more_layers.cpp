// The C++ front end's thin layers over single core ops (padding, pixel shuffle, upsampling,
// instance and RMS norms, distances, bilinear, the remaining losses): each equals the op it
// wraps (the op Python's layer calls, compared with torch by the Python op database), with
// Python's parameter names and defaults.
#include <gtest/gtest.h>

#include <cmath>

#include <kindle/frontend.h>

using namespace kindle;

TEST(FrontendMoreLayers, Padding) {
  Tensor x = randn({1, 2, 4, 5});
  EXPECT_TRUE(equal(nn::ReflectionPad2d(1)(x), pad(x, {1, 1, 1, 1}, "reflect")));
  EXPECT_TRUE(equal(nn::ReplicationPad2d(nn::ReplicationPad2dOptions({1, 0, 2, 1}))(x),
                    pad(x, {1, 0, 2, 1}, "replicate")));
  EXPECT_TRUE(equal(nn::CircularPad1d(2)(x.flatten(2)), pad(x.flatten(2), {2, 2}, "circular")));
  EXPECT_TRUE(equal(nn::ZeroPad2d(nn::ZeroPad2dOptions({0, 1, 2, 3}))(x), pad(x, {0, 1, 2, 3})));
  nn::ConstantPad3d c(nn::ConstantPad3dOptions(1, 3.5));
  Tensor y = c(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({1, 4, 6, 7}));
  EXPECT_EQ(y[0][0][0][0].item<double>(), 3.5);
  EXPECT_EQ(c->name(), "ConstantPad3d");
  EXPECT_EQ(nn::ReflectionPad1d(1)->name(), "ReflectionPad1d");
  EXPECT_THROW(nn::ReflectionPad2d(5)(x), Error);  // reflection needs padding < the size
}

TEST(FrontendMoreLayers, PixelShuffleUpsampleUnflatten) {
  Tensor x = randn({2, 8, 3, 3});
  Tensor up = nn::PixelShuffle(2)(x);
  EXPECT_EQ(up.sizes(), IntArrayRef({2, 2, 6, 6}));
  EXPECT_TRUE(equal(nn::PixelUnshuffle(2)(up), x));
  nn::Upsample u(nn::UpsampleOptions().scale_factor(std::vector<double>{2.0}).mode("bilinear").align_corners(false));
  EXPECT_TRUE(equal(u(x), interpolate(x, {6, 6}, "bilinear", false, 2.0, 2.0)));
  EXPECT_EQ(nn::Upsample(nn::UpsampleOptions().size(std::vector<int64_t>{5, 4}))(x).sizes(), IntArrayRef({2, 8, 5, 4}));
  EXPECT_EQ(nn::Unflatten(1, std::vector<int64_t>{2, 4})(x).sizes(), IntArrayRef({2, 2, 4, 3, 3}));
}

TEST(FrontendMoreLayers, ActivationsAndDistances) {
  Tensor x = randn({4, 6});
  EXPECT_TRUE(equal(nn::Threshold(0.1, 20.0)(x), threshold(x, 0.1, 20.0)));
  EXPECT_TRUE(equal(nn::GLU()(x), glu(x, -1)));
  EXPECT_TRUE(equal(nn::Softmin(1)(x), softmin(x, 1)));
  Tensor y = randn({4, 6});
  EXPECT_TRUE(equal(nn::CosineSimilarity()(x, y), cosine_similarity(x, y, 1, 1e-8)));
  EXPECT_TRUE(equal(nn::PairwiseDistance(nn::PairwiseDistanceOptions().p(1).keepdim(true))(x, y),
                    pairwise_distance(x, y, 1, 1e-6, true)));
}

TEST(FrontendMoreLayers, BilinearDropoutNorms) {
  manual_seed(0);
  nn::Bilinear b(3, 4, 5);
  EXPECT_EQ(b->weight.sizes(), IntArrayRef({5, 3, 4}));
  EXPECT_LE(b->weight.abs().max().item<double>(), 1 / std::sqrt(3.0));
  Tensor x1 = randn({2, 3}), x2 = randn({2, 4});
  EXPECT_TRUE(equal(b(x1, x2), bilinear(x1, x2, b->weight, b->bias)));
  StateDict sd = b->state_dict();
  EXPECT_TRUE(sd.contains("weight") && sd.contains("bias"));

  nn::Dropout1d d(0.5);
  Tensor ones3 = ones({2, 4, 8});
  d->eval();
  EXPECT_TRUE(equal(d(ones3), ones3));
  d->train();
  Tensor dropped = d(ones3);  // whole channels: each (n, c) row is all 0 or all 2
  EXPECT_TRUE(equal(dropped.amax(IntArrayRef{2}), dropped.amin(IntArrayRef{2})));
  EXPECT_THROW(nn::AlphaDropout(1.5), ValueError);

  Tensor img = randn({2, 3, 4, 4});
  nn::InstanceNorm2d in(nn::InstanceNorm2dOptions(3).affine(true).track_running_stats(true));
  StateDict isd = in->state_dict();
  for (const char* k : {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"})
    EXPECT_TRUE(isd.contains(k)) << k;
  Tensor out = in(img);
  EXPECT_LT(out.mean(IntArrayRef{2, 3}).abs().max().item<double>(), 1e-5);
  EXPECT_FALSE(equal(in->running_mean, zeros({3})));  // training updates the running mean
  EXPECT_TRUE(allclose(nn::InstanceNorm2d(3)(img[0]), nn::InstanceNorm2d(3)(img.narrow(0, 0, 1))[0], 1e-6, 1e-6));
  EXPECT_THROW(nn::InstanceNorm1d(3)(img), ValueError);  // 4-D input for a 1d norm
  EXPECT_THROW(in(randn({2, 5, 4, 4})), ValueError);     // affine over 3 channels, 5 given

  nn::RMSNorm rms(nn::RMSNormOptions(4).eps(1e-6));
  Tensor v = randn({3, 4});
  EXPECT_TRUE(equal(rms(v), rms_norm(v, {4}, rms->weight, 1e-6)));
  EXPECT_TRUE(equal(rms->weight, ones({4})));
}

TEST(FrontendMoreLayers, Losses) {
  Tensor a = randn({4, 3}), b = randn({4, 3}), c = randn({4, 3});
  Tensor sign = tensor({1.0, -1.0, 1.0, -1.0}).to(kFloat32);
  EXPECT_TRUE(equal(nn::MarginRankingLoss(nn::MarginRankingLossOptions().margin(0.5))(a.select(1, 0), b.select(1, 0), sign),
                    margin_ranking_loss(a.select(1, 0), b.select(1, 0), sign, 0.5)));
  EXPECT_TRUE(equal(nn::CosineEmbeddingLoss()(a, b, sign), cosine_embedding_loss(a, b, sign)));
  EXPECT_TRUE(equal(nn::TripletMarginLoss(nn::TripletMarginLossOptions().swap(true))(a, b, c),
                    triplet_margin_loss(a, b, c, 1.0, 2, 1e-6, true)));
  EXPECT_TRUE(equal(nn::HingeEmbeddingLoss()(a, sign.unsqueeze(1).expand({4, 3})),
                    hinge_embedding_loss(a, sign.unsqueeze(1).expand({4, 3}))));
  Tensor rate = rand({4, 3});
  EXPECT_TRUE(equal(nn::PoissonNLLLoss(nn::PoissonNLLLossOptions().log_input(false))(rate, rate),
                    poisson_nll_loss(rate, rate, false)));
  EXPECT_TRUE(equal(nn::GaussianNLLLoss()(a, b, rate + 0.1), gaussian_nll_loss(a, b, rate + 0.1)));
  Tensor labels = tensor({0, 2, 1, 0});
  Tensor w = tensor({1.0, 2.0, 0.5}).to(kFloat32);
  nn::MultiMarginLoss mm(nn::MultiMarginLossOptions().p(2).weight(w).reduction("sum"));
  EXPECT_TRUE(equal(mm(a, labels), multi_margin_loss(a, labels, 2, 1.0, w, "sum")));
  EXPECT_TRUE(mm->state_dict().contains("weight"));
  Tensor ml = tensor({std::vector<int64_t>{0, 2, -1}, {1, -1, 0}, {2, 1, 0}, {-1, 0, 0}});
  EXPECT_TRUE(equal(nn::MultiLabelMarginLoss()(a, ml), multilabel_margin_loss(a, ml)));
  EXPECT_THROW(nn::MultiMarginLoss(nn::MultiMarginLossOptions().p(3)), ValueError);
}
