// The layers of kindle/nn/layers_extra.h: shrinkage, local response normalisation, the
// soft-margin losses, adaptive and LP pooling, fold/unfold. The ops under them are compared with
// torch by the Python op database; here each layer is checked against hand-computed values or
// the formula it stands for, with Python's reprs.
#include <gtest/gtest.h>

#include <cmath>

#include <kindle/frontend.h>

using namespace kindle;

TEST(FrontendLayersExtra, Shrinkage) {
  Tensor x = tensor({-1.0, -0.3, 0.0, 0.2, 0.8}, kFloat32);
  EXPECT_TRUE(allclose(nn::Hardshrink()(x), tensor({-1.0, 0.0, 0.0, 0.0, 0.8}, kFloat32)));
  EXPECT_TRUE(allclose(nn::Softshrink(nn::SoftshrinkOptions().lambda(0.25))(x),
                       tensor({-0.75, -0.05, 0.0, 0.0, 0.55}, kFloat32)));
  EXPECT_EQ(nn::Hardshrink(nn::HardshrinkOptions(0.3))->repr(), "Hardshrink(0.3)");
  EXPECT_THROW(nn::Softshrink(nn::SoftshrinkOptions(-1.0))(x), Error);  // the op checks lambda
  EXPECT_THROW(nn::Hardshrink()(tensor({1, 2}, kInt64)), NotImplementedError);
  Tensor g = x.clone().requires_grad_();
  nn::Hardshrink()(g).sum().backward();
  EXPECT_TRUE(allclose(g.grad(), tensor({1.0, 0.0, 0.0, 0.0, 1.0}, kFloat32)));
}

TEST(FrontendLayersExtra, LocalResponseNormAndSoftmax2d) {
  Tensor x = randn({2, 5, 3, 3});
  nn::LocalResponseNorm lrn(nn::LocalResponseNormOptions(3).alpha(0.1).beta(0.5).k(2.0));
  Tensor y = lrn(x);
  // Channel c's window: channels c-1..c+1 (zero outside), mean of squares over the window size.
  Tensor sq = x * x;
  for (int64_t c = 0; c < 5; ++c) {
    Tensor s = zeros({2, 3, 3});
    for (int64_t j = std::max<int64_t>(c - 1, 0); j <= std::min<int64_t>(c + 1, 4); ++j) s = s + sq.select(1, j);
    Tensor want = x.select(1, c) / (s / 3.0 * 0.1 + 2.0).pow(0.5);
    EXPECT_TRUE(allclose(y.select(1, c), want, 1e-5, 1e-6)) << c;
  }
  EXPECT_EQ(lrn->repr(), "LocalResponseNorm(3, alpha=0.1, beta=0.5, k=2.0)");
  EXPECT_THROW(lrn(randn({2, 5})), ValueError);
  EXPECT_TRUE(allclose(nn::Softmax2d()(x), x.softmax(1)));
  EXPECT_THROW(nn::Softmax2d()(randn({2, 3})), ValueError);
}

TEST(FrontendLayersExtra, SoftMarginLosses) {
  Tensor x = randn({4, 3}), t = sign(randn({4, 3}));
  Tensor want = log1p(exp(-t * x));
  EXPECT_TRUE(allclose(nn::SoftMarginLoss()(x, t), want.mean()));
  EXPECT_TRUE(allclose(nn::SoftMarginLoss(nn::SoftMarginLossOptions(kSum))(x, t), want.sum()));
  EXPECT_THROW(nn::SoftMarginLoss()(x, t.narrow(0, 0, 2)), ValueError);
  Tensor y = (randn({4, 3}) > 0).to(kFloat32), w = tensor({1.0, 2.0, 0.5}, kFloat32);
  Tensor per = -(y * logsigmoid(x) + (1 - y) * logsigmoid(-x)) * w;
  nn::MultiLabelSoftMarginLoss ml(nn::MultiLabelSoftMarginLossOptions().weight(w).reduction(kNone));
  EXPECT_TRUE(allclose(ml(x, y), per.sum(IntArrayRef{1}) / 3.0));
  EXPECT_EQ(ml->named_buffers().size(), 1u);  // the weight is a buffer, as Python's
  EXPECT_TRUE(allclose(nn::MultiLabelSoftMarginLoss()(x, y), (-(y * logsigmoid(x) + (1 - y) * logsigmoid(-x))).mean()));
}

TEST(FrontendLayersExtra, AdaptiveAndLPPooling) {
  Tensor x = arange(0, 12, 1, kFloat32).reshape({1, 2, 6});
  EXPECT_TRUE(allclose(nn::AdaptiveAvgPool1d(3)(x), tensor({0.5, 2.5, 4.5, 6.5, 8.5, 10.5}, kFloat32).reshape({1, 2, 3})));
  nn::AdaptiveMaxPool1d mp(2);
  auto [values, indices] = mp->forward_with_indices(x.flip({2}));
  EXPECT_TRUE(equal(values, tensor({5.0, 2.0, 11.0, 8.0}, kFloat32).reshape({1, 2, 2})));
  EXPECT_TRUE(equal(indices, tensor({0, 3, 0, 3}, kInt64).reshape({1, 2, 2})));
  EXPECT_EQ(mp->repr(), "AdaptiveMaxPool1d(output_size=2)");
  Tensor img = randn({2, 3, 6, 4});
  EXPECT_TRUE(equal(nn::AdaptiveMaxPool2d(nn::AdaptiveMaxPool2dOptions({3, 2}))(img),
                    std::get<0>(adaptive_max_pool2d(img, {3, 2}))));
  // LP pooling: the p-norm of each window.
  Tensor lp = nn::LPPool1d(nn::LPPool1dOptions(2, 3))(x);
  Tensor want = x.reshape({1, 2, 2, 3}).pow(2).sum(IntArrayRef{3}).sqrt();
  EXPECT_TRUE(allclose(lp, want, 1e-5, 1e-5));
  nn::LPPool2d lp2(nn::LPPool2dOptions(1, {2, 2}).stride(2));
  EXPECT_TRUE(allclose(lp2(img.abs()), avg_pool2d(img.abs(), {2, 2}) * 4.0, 1e-5, 1e-5));
  EXPECT_EQ(lp2->repr(), "LPPool2d(norm_type=1.0, kernel_size=2, stride=2, ceil_mode=False)");
}

TEST(FrontendLayersExtra, FoldUnfold) {
  Tensor x = randn({2, 3, 4, 6});
  nn::Unfold unfold(nn::UnfoldOptions({2, 3}).stride({2, 3}));
  Tensor cols = unfold(x);
  EXPECT_EQ(cols.sizes(), IntArrayRef({2, 3 * 2 * 3, 4}));
  // Non-overlapping windows: folding the columns back gives the image.
  nn::Fold fold(nn::FoldOptions({4, 6}, {2, 3}).stride({2, 3}));
  EXPECT_TRUE(equal(fold(cols), x));
  EXPECT_TRUE(equal(fold(cols[0]), x[0]));  // unbatched
  // Overlapping windows sum: every pixel counted once per window covering it.
  Tensor ones_img = ones({1, 1, 3, 3});
  Tensor counts = nn::Fold(nn::FoldOptions(3, 2))(nn::Unfold(nn::UnfoldOptions(2))(ones_img));
  EXPECT_TRUE(equal(counts, tensor({1.0, 2.0, 1.0, 2.0, 4.0, 2.0, 1.0, 2.0, 1.0}, kFloat32).reshape({1, 1, 3, 3})));
  EXPECT_EQ(unfold->repr(), "Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=(2, 3))");
  EXPECT_THROW(fold(randn({2, 2, 2, 2})), Error);
  EXPECT_THROW(unfold(randn({4, 6})), IndexError);
}

TEST(FrontendLayersExtra, EmbeddingBagAndBatchNorm3d) {
  Tensor w = arange(0, 12, 1, kFloat32).reshape({4, 3});
  nn::EmbeddingBag sum(nn::EmbeddingBagOptions(4, 3).mode(kSum)._weight(w));
  Tensor input = tensor({0, 2, 1, 3, 3}, kInt64), offsets = tensor({0, 2}, kInt64);
  // Bags [0, 2] and [1, 3, 3].
  Tensor want = stack({w[0] + w[2], w[1] + w[3] + w[3]});
  EXPECT_TRUE(equal(sum(input, offsets), want));
  nn::EmbeddingBag mx(nn::EmbeddingBagOptions(4, 3).mode(kMax)._weight(w));
  EXPECT_TRUE(equal(mx(input, offsets), stack({w[2], w[3]})));
  nn::EmbeddingBag mean(nn::EmbeddingBagOptions(4, 3)._weight(w).padding_idx(-1));
  EXPECT_EQ(*mean->options.padding_idx(), 3);
  Tensor bags = tensor({0, 3, 2, 1}, kInt64).reshape({2, 2});  // 2-d: each row a bag; index 3 is padding
  EXPECT_TRUE(allclose(mean(bags), stack({w[0], (w[2] + w[1]) / 2.0})));
  EXPECT_EQ(mean->repr(), "EmbeddingBag(4, 3, mode='mean', padding_idx=3)");
  nn::EmbeddingBag fresh(10, 4);
  EXPECT_EQ(fresh->weight.sizes(), IntArrayRef({10, 4}));
  EXPECT_TRUE(fresh->weight.requires_grad());
  EXPECT_THROW(nn::EmbeddingBag(nn::EmbeddingBagOptions(4, 3).padding_idx(4)), ValueError);

  nn::BatchNorm3d bn(3);
  Tensor x = randn({2, 3, 2, 2, 2});
  Tensor y = bn(x);
  EXPECT_TRUE(allclose(y.mean(IntArrayRef{0, 2, 3, 4}), zeros({3}), 1e-5, 1e-5));
  EXPECT_EQ(bn->name(), "BatchNorm3d");
  EXPECT_THROW(bn(randn({2, 3, 4, 4})), ValueError);
}
