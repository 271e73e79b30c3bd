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

namespace {
double sum_of_products(const Tensor& a, const Tensor& b) { return (a * b).sum().item<double>(); }
}  // namespace

TEST(FrontendLayersExtra, ThreeDimensionalLayers) {
  // The 3-d layers over the ops Python's F.conv3d / max_pool3d / ... call (csrc/nn/conv3d.cpp).
  manual_seed(3);
  nn::Conv3d conv(nn::Conv3dOptions(2, 4, 3).padding(1));
  Tensor x = randn({2, 2, 4, 5, 3}, kFloat64);
  conv->to(kFloat64);
  Tensor y = conv(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 4, 4, 5, 3}));
  // One output element by the definition: sum over channels and the 3x3x3 window (zero padded).
  Tensor xp = pad(x, {1, 1, 1, 1, 1, 1});
  Tensor window = xp.index({0, indexing::Slice(), indexing::Slice(1, 4), indexing::Slice(2, 5), indexing::Slice(0, 3)});
  double want = (window * conv->weight[3]).sum().item<double>() + conv->bias[3].item<double>();
  EXPECT_NEAR(y.index({0, 3, 1, 2, 0}).item<double>(), want, 1e-10);
  EXPECT_EQ(conv->repr(), "Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=(1, 1, 1))");
  EXPECT_EQ(conv(x[0]).sizes(), IntArrayRef({4, 4, 5, 3}));  // unbatched
  nn::Conv3d same(nn::Conv3dOptions(2, 4, 3).padding(kSame));  // for a 3x3x3 kernel: padding 1
  same->to(kFloat64);
  {
    NoGradGuard guard;
    same->weight.copy_(conv->weight);
    same->bias.copy_(conv->bias);
  }
  EXPECT_TRUE(allclose(same(x), y));
  y.sum().backward();
  EXPECT_EQ(conv->weight.grad().sizes(), conv->weight.sizes());
  EXPECT_THROW(conv(randn({2, 3, 4, 4, 4}, kFloat64)), Error);

  // The transposed convolution is the adjoint of the convolution: <conv(x), g> == <x, convT(g)>.
  Tensor w = randn({2, 3, 2, 3, 2}, kFloat64), a = randn({1, 2, 3, 4, 3}, kFloat64);
  Tensor ct = conv_transpose3d(a, w, std::nullopt, {2, 1, 2}, {0, 1, 0});
  Tensor g = randn(ct.sizes(), kFloat64);
  Tensor back = conv3d(g, w, std::nullopt, {2, 1, 2}, {0, 1, 0});
  EXPECT_EQ(back.sizes(), a.sizes());
  EXPECT_NEAR(sum_of_products(ct, g), sum_of_products(a, back), 1e-9);
  nn::ConvTranspose3d convt(nn::ConvTranspose3dOptions(2, 3, {2, 3, 2}).stride(2));
  EXPECT_EQ(convt(randn({1, 2, 2, 2, 2})).sizes(), IntArrayRef({1, 3, 4, 5, 4}));
  EXPECT_EQ(convt->repr(), "ConvTranspose3d(2, 3, kernel_size=(2, 3, 2), stride=(2, 2, 2))");

  Tensor v = arange(0, 64, 1, kFloat32).reshape({1, 1, 4, 4, 4});
  nn::MaxPool3d mp(2);
  EXPECT_TRUE(equal(mp(v), tensor({21.0, 23.0, 29.0, 31.0, 53.0, 55.0, 61.0, 63.0}, kFloat32).reshape({1, 1, 2, 2, 2})));
  auto [vals, idx] = max_pool3d_with_indices(v, {2, 2, 2});
  EXPECT_TRUE(equal(idx.to(kFloat32), vals));  // arange: the value is its flat position
  EXPECT_EQ(mp->repr(), "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  nn::AvgPool3d ap(nn::AvgPool3dOptions(2).stride(1));
  EXPECT_EQ(ap(v).sizes(), IntArrayRef({1, 1, 3, 3, 3}));
  EXPECT_FLOAT_EQ(ap(v).index({0, 0, 0, 0, 0}).item<float>(), (0 + 1 + 4 + 5 + 16 + 17 + 20 + 21) / 8.0f);
  EXPECT_FLOAT_EQ(nn::AvgPool3d(nn::AvgPool3dOptions(2).divisor_override(1))(v).index({0, 0, 0, 0, 0}).item<float>(),
                  84.0f);
  EXPECT_TRUE(allclose(nn::AdaptiveAvgPool3d(1)(v), v.mean().reshape({1, 1, 1, 1, 1})));
  EXPECT_EQ(nn::AdaptiveMaxPool3d(nn::AdaptiveMaxPool3dOptions({1, 2, 2}))(v).sizes(), IntArrayRef({1, 1, 1, 2, 2}));
  auto [amax, aidx] = nn::AdaptiveMaxPool3d(nn::AdaptiveMaxPool3dOptions(1))->forward_with_indices(v);
  EXPECT_EQ(amax.item<float>(), 63.0f);
  EXPECT_EQ(aidx.item<int64_t>(), 63);
  // LP pooling with p = 1 over positive values: the window sums.
  EXPECT_TRUE(allclose(nn::LPPool3d(nn::LPPool3dOptions(1, 2))(v), nn::AvgPool3d(2)(v) * 8.0));
  nn::Dropout3d drop(0.5);
  Tensor ones5 = ones({4, 8, 2, 2, 2});
  Tensor dropped = drop(ones5);
  // Whole channels are zeroed or scaled by 2.
  Tensor per_channel = dropped.amax(IntArrayRef{2, 3, 4}), channel_min = dropped.amin(IntArrayRef{2, 3, 4});
  EXPECT_TRUE(equal(per_channel, channel_min));
  EXPECT_TRUE(((per_channel == 0) | (per_channel == 2)).all().item<bool>());
  drop->eval();
  EXPECT_TRUE(equal(drop(ones5), ones5));
  EXPECT_EQ(drop->repr(), "Dropout3d(p=0.5, inplace=False)");
  namespace F = nn::functional;
  EXPECT_TRUE(equal(F::max_pool3d(v, F::MaxPool3dFuncOptions(2)), mp(v)));
  EXPECT_TRUE(equal(max_pool3d(v, 2), mp(v)));
  EXPECT_TRUE(allclose(F::conv3d(x, conv->weight, F::Conv3dFuncOptions().bias(conv->bias).padding(1)), conv(x)));
}

TEST(FrontendLayersExtra, ShuffleUnpoolRReLUCrossMapLRN) {
  Tensor x = arange(0, 12, 1, kFloat32).reshape({1, 6, 1, 2});
  nn::ChannelShuffle shuffle(nn::ChannelShuffleOptions(2));
  // channels (0 1 2)(3 4 5) -> 0 3 1 4 2 5
  Tensor want = index_select(x, 1, tensor({0, 3, 1, 4, 2, 5}, kInt64));
  EXPECT_TRUE(equal(shuffle(x), want));
  EXPECT_EQ(shuffle->repr(), "ChannelShuffle(groups=2)");
  EXPECT_THROW(nn::ChannelShuffle(nn::ChannelShuffleOptions(4))(x), Error);

  // Unpooling puts each maximum back where max pooling found it.
  Tensor img = randn({2, 3, 4, 6});
  auto [vals, idx] = max_pool2d_with_indices(img, {2, 2});
  EXPECT_TRUE(equal(max_pool2d(img, 2), vals));  // the values-only kernel (no indices written)
  EXPECT_TRUE(equal(max_pool2d(img, 3, 2, 1, 1, true), std::get<0>(max_pool2d_with_indices(img, {3, 3}, {2, 2}, {1, 1},
                                                                                           {1, 1}, true))));
  nn::MaxUnpool2d unpool(nn::MaxUnpool2dOptions(2));
  Tensor back = unpool(vals, idx);
  EXPECT_EQ(back.sizes(), img.sizes());
  EXPECT_TRUE(equal(back.flatten(2).gather(2, idx.flatten(2)), vals.flatten(2)));
  EXPECT_EQ((back != 0).sum().item<int64_t>(), vals.numel());
  EXPECT_EQ(unpool(vals, idx, std::vector<int64_t>{5, 7}).sizes(), IntArrayRef({2, 3, 5, 7}));
  EXPECT_THROW(unpool(vals, idx, std::vector<int64_t>{9, 9}), ValueError);
  EXPECT_THROW(unpool(vals, idx.to(kInt32)), Error);
  EXPECT_EQ(unpool->repr(), "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))");
  Tensor vol = randn({1, 2, 4, 4, 4});
  auto [v3, i3] = max_pool3d_with_indices(vol, {2, 2, 2});
  EXPECT_TRUE(equal(nn::MaxUnpool3d(2)(v3, i3).flatten(2).gather(2, i3.flatten(2)), v3.flatten(2)));
  EXPECT_EQ(nn::MaxUnpool1d(nn::MaxUnpool1dOptions(3).stride(2).padding(1))->repr(),
            "MaxUnpool1d(kernel_size=(3,), stride=(2,), padding=(1,))");

  nn::RReLU rrelu;
  Tensor v = tensor({-2.0, -1.0, 0.5, 3.0}, kFloat32);
  rrelu->eval();  // the mean slope
  double mean = (1.0 / 8 + 1.0 / 3) / 2;
  EXPECT_TRUE(allclose(rrelu(v), tensor({-2.0 * mean, -mean, 0.5, 3.0}, kFloat32)));
  rrelu->train();
  Tensor y = rrelu(v);
  for (int i = 0; i < 2; ++i) {
    double slope = y[i].item<double>() / v[i].item<double>();
    EXPECT_GE(slope, 1.0 / 8 - 1e-6);
    EXPECT_LE(slope, 1.0 / 3 + 1e-6);
  }
  EXPECT_TRUE(equal(y.slice(0, 2), v.slice(0, 2)));
  EXPECT_EQ(rrelu->repr(), "RReLU(lower=0.125, upper=0.3333333333333333)");
  EXPECT_THROW(nn::RReLU(nn::RReLUOptions().lower(0.5).upper(0.1)), Error);

  // CrossMapLRN2d on one channel: x / (k + alpha / size * x^2)^beta.
  nn::CrossMapLRN2d lrn(nn::CrossMapLRN2dOptions(3).alpha(0.3).beta(0.5).k(2));
  Tensor one = tensor({1.0, 2.0}, kFloat64).reshape({1, 1, 1, 2});
  EXPECT_TRUE(allclose(lrn(one), one / (2.0 + 0.1 * one * one).sqrt()));
  EXPECT_EQ(lrn->repr(), "CrossMapLRN2d(3, alpha=0.3, beta=0.5, k=2)");
  EXPECT_THROW(lrn(randn({2, 3})), ValueError);
}
