// libtorch's spellings in Kindle's C++ API (issue 19): holders, TensorOptions, kindle::tensor,
// from_blob, one-dim arguments, number operands, the libtorch form of custom functions, the
// functional options, Reduction, the data pipeline and save/load. tests/cpp_clients/ has whole
// libtorch programs; these are the edge cases and the errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <kindle/frontend.h>

using namespace kindle;

namespace {

struct TwoLayerImpl : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr};
  TwoLayerImpl(int64_t in, int64_t out) {
    fc1 = register_module("fc1", nn::Linear(in, 8));
    fc2 = register_module("fc2", nn::Linear(8, out));
  }
  // by value, not Module's virtual forward: Sequential must call this one
  Tensor forward(Tensor x) { return fc2(relu(fc1(x))); }
};
KINDLE_MODULE(TwoLayer);

struct Scale : autograd::Function<Scale> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x, double c) {
    ctx->saved_data["c"] = c;
    return x * c;
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    return {g[0] * ctx->saved_data["c"].toDouble(), Tensor()};
  }
};
struct TooFew : autograd::Function<TooFew> {
  static Tensor forward(autograd::AutogradContext*, Tensor x, Tensor y) { return x * y; }
  static autograd::variable_list backward(autograd::AutogradContext*, autograd::variable_list g) { return {g[0]}; }
};
struct GradForNumber : autograd::Function<GradForNumber> {
  static Tensor forward(autograd::AutogradContext*, Tensor x, double) { return x * 2; }
  static autograd::variable_list backward(autograd::AutogradContext*, autograd::variable_list g) {
    return {g[0] * 2, g[0]};
  }
};

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "kindle_libtorch_" + std::to_string(::getpid()) + "_" + name;
}

}  // namespace

TEST(FrontendLibtorch, HoldersShareAndStartEmpty) {
  nn::Linear empty{nullptr};
  EXPECT_TRUE(empty.is_empty());
  EXPECT_FALSE(bool(empty));
  EXPECT_THROW(empty->forward(zeros({1, 2})), Error);  // "Accessing empty ModuleHolder"
  nn::Linear a(2, 3);
  nn::Linear b = a;  // shares, as a std::shared_ptr copy
  EXPECT_EQ(a.get(), b.get());
  EXPECT_TRUE(b->weight.is_same(a->weight));
  TwoLayer net(4, 2);
  EXPECT_EQ(net->name(), "TwoLayer");
  EXPECT_EQ(net->named_parameters().size(), 4u);
  // Sequential calls the module's own forward (by value here), not Module's virtual one.
  nn::Sequential seq(net, nn::ReLU());
  Tensor x = randn({3, 4});
  EXPECT_TRUE(equal(seq->forward(x), relu(net(x))));
  EXPECT_EQ(seq->ptr<TwoLayer>(0).get(), net.get());
}

TEST(FrontendLibtorch, TensorOptionsAndFactories) {
  Tensor w = full({3}, 2.0, TensorOptions().dtype(kFloat64).requires_grad(true));
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(w.dtype(), kFloat64);
  Tensor z = zeros({2}, w.options());
  EXPECT_EQ(z.dtype(), kFloat64);
  EXPECT_TRUE(z.requires_grad());
  EXPECT_EQ(ones({2, 2}, kLong).dtype(), kInt64);
  EXPECT_TRUE(ones({2}, requires_grad()).requires_grad());
  EXPECT_EQ(randn(3).sizes(), IntArrayRef({3}));  // one integer where a shape is expected
  EXPECT_EQ(arange(5, kFloat).dtype(), kFloat32);
  EXPECT_EQ(randint(4, {6}, kLong).dtype(), kInt64);
  EXPECT_EQ(empty(4, kCPU).device(), kCPU);
  EXPECT_THROW(zeros({2}, TensorOptions(kCUDA)), Error);  // no CUDA device
  // kindle::tensor: braced doubles take the default dtype, integers int64, a vector keeps its type.
  EXPECT_EQ(tensor({1.5, 2.5}).dtype(), kFloat32);
  EXPECT_EQ(tensor({1, 2}).dtype(), kInt64);
  EXPECT_EQ(tensor({true, false}).dtype(), kBool);
  EXPECT_EQ(tensor(std::vector<double>{1, 2}).dtype(), kFloat64);
  EXPECT_EQ(tensor({{1, 2, 3}, {4, 5, 6}}).sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(tensor(3.5).dim(), 0);
  EXPECT_EQ(tensor({1, 2}, kFloat64).dtype(), kFloat64);
  EXPECT_THROW(tensor({{1, 2}, {3}}), ValueError);  // ragged
}

TEST(FrontendLibtorch, FromBlobViewsCallerMemory) {
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(v.data(), {2, 3});
  EXPECT_EQ(t[1][2].item<float>(), 6.0f);
  t[0][0].fill_(9.0);
  EXPECT_EQ(v[0], 9.0f);  // no copy
  Tensor strided = from_blob(v.data(), {3}, {2});
  EXPECT_TRUE(equal(strided, tensor({9.0f, 3.0f, 5.0f})));
  int freed = 0;
  {
    Tensor owned = from_blob(v.data(), {6}, [&](void*) { ++freed; });
    EXPECT_EQ(freed, 0);
  }
  EXPECT_EQ(freed, 1);
  EXPECT_THROW(from_blob(v.data(), {-1}), Error);
}

TEST(FrontendLibtorch, NumberOperandsIndexingAndCompoundAssignment) {
  Tensor t = tensor({1.0f, 2.0f, 3.0f});
  EXPECT_TRUE(equal(t.pow(2), tensor({1.0f, 4.0f, 9.0f})));
  EXPECT_TRUE(equal(pow(t, 2), t.pow(2)));
  EXPECT_TRUE(equal(t.mul(2).add(1), tensor({3.0f, 5.0f, 7.0f})));
  EXPECT_TRUE(equal(t.eq(2), tensor({false, true, false})));
  EXPECT_EQ(t.add(1).dtype(), kFloat32);  // a number is a wrapped scalar for promotion
  Tensor m = tensor({{1, 2}, {3, 4}});
  EXPECT_TRUE(equal(m.sum(0), tensor({4, 6})));
  EXPECT_EQ(m[1][0].item<int64_t>(), 3);
  EXPECT_TRUE(equal(m[tensor({1, 0})], tensor({{3, 4}, {1, 2}})));
  Tensor u = t.clone();
  u += t;
  u *= 2;
  u -= 1.0;
  EXPECT_TRUE(equal(u, tensor({3.0f, 7.0f, 11.0f})));
  // libtorch's mask and integer operators
  Tensor a = t > 1.5, b = t < 2.5;
  EXPECT_TRUE(equal(a & b, tensor({false, true, false})));
  EXPECT_TRUE(equal(a | b, tensor({true, true, true})));
  EXPECT_TRUE(equal(a ^ b, tensor({true, false, true})));
  EXPECT_TRUE(equal(~a, tensor({true, false, false})));
  EXPECT_TRUE(equal(m % 3, tensor({{1, 2}, {0, 1}})));
  EXPECT_TRUE(equal(m << 1, m * 2));
  EXPECT_TRUE(equal(m >> 1, tensor({{0, 1}, {1, 2}})));
  Tensor bits = tensor({0b1100, 0b1010});
  bits &= 0b1000;
  bits |= 1;
  bits ^= 0b1001;
  EXPECT_TRUE(equal(bits, tensor({0, 0})));
  Tensor r = tensor({7, 8});
  r %= 3;
  EXPECT_TRUE(equal(r, tensor({1, 2})));
  EXPECT_TRUE(equal(m.slice(1, 1, 2), tensor({{2}, {4}})));
  Tensor g = ones({2}).requires_grad_();
  EXPECT_FALSE((g * 2).data().requires_grad());
}

TEST(FrontendLibtorch, CustomFunctionsAsLibtorchWritesThem) {
  Tensor x = randn({3}, kFloat64).requires_grad_();
  Tensor y = Scale::apply(x, 2.5);
  y.sum().backward();
  EXPECT_TRUE(allclose(x.grad(), full({3}, 2.5, kFloat64)));
  Tensor a = randn({2}).requires_grad_(), b = randn({2}).requires_grad_();
  EXPECT_THROW(TooFew::apply(a, b).sum().backward(), Error);        // one gradient per argument
  EXPECT_THROW(GradForNumber::apply(a, 1.0).sum().backward(), Error);  // a number gets no gradient
}

TEST(FrontendLibtorch, IValueKinds) {
  IValue d(2.5), i(3), s("name"), t(ones({1}));
  EXPECT_EQ(d.toDouble(), 2.5);
  EXPECT_EQ(i.toInt(), 3);
  EXPECT_EQ(s.toStringRef(), "name");
  EXPECT_TRUE(t.isTensor());
  EXPECT_THROW(d.toInt(), TypeError);
  EXPECT_TRUE(IValue().isNone());
}

TEST(FrontendLibtorch, FunctionalAndReduction) {
  namespace F = nn::functional;
  Tensor logits = randn({4, 3}), target = tensor({0, 2, 1, 2});
  EXPECT_TRUE(allclose(nll_loss(logits.log_softmax(1), target, {}, Reduction::Sum),
                       nll_loss(logits.log_softmax(1), target, std::nullopt, -100, "sum")));
  EXPECT_TRUE(allclose(F::cross_entropy(logits, target, F::CrossEntropyFuncOptions().reduction(kSum)),
                       cross_entropy(logits, target, std::nullopt, -100, "sum")));
  EXPECT_TRUE(allclose(mse_loss(logits, zeros({4, 3}), Reduction::None), logits.pow(2)));
  Tensor img = randn({1, 2, 6, 6});
  EXPECT_EQ(max_pool2d(img, 2).sizes(), IntArrayRef({1, 2, 3, 3}));
  EXPECT_TRUE(equal(F::max_pool2d(img, F::MaxPool2dFuncOptions(2)), max_pool2d(img, 2)));
  EXPECT_EQ(max_pool1d(randn({1, 2, 8}), 2).sizes(), IntArrayRef({1, 2, 4}));
  Tensor eval_out = F::dropout(img, F::DropoutFuncOptions().p(0.5).training(false));
  EXPECT_TRUE(equal(eval_out, img));
  nn::Functional pool(max_pool2d, 2, 2, 0, 1, false);
  EXPECT_TRUE(equal(pool(img), max_pool2d(img, 2)));
  nn::ConvTranspose2d up(nn::ConvTranspose2dOptions(2, 3, 4).stride(2).padding(1).bias(false));
  EXPECT_EQ(up->weight.sizes(), IntArrayRef({2, 3, 4, 4}));
  EXPECT_EQ(up(img).sizes(), IntArrayRef({1, 3, 12, 12}));
  EXPECT_TRUE(equal(up(img), conv_transpose2d(img, up->weight, std::nullopt, {2, 2}, {1, 1})));
  EXPECT_EQ(up->forward(img, std::vector<int64_t>{13, 13}).sizes(), IntArrayRef({1, 3, 13, 13}));
  EXPECT_THROW(up->forward(img, std::vector<int64_t>{20, 20}), ValueError);
  nn::LeakyReLU leaky(nn::LeakyReLUOptions().negative_slope(0.2));
  EXPECT_TRUE(allclose(leaky(tensor({-1.0f})), tensor({-0.2f})));
  Tensor r = tensor({-1.0f, 2.0f});
  nn::ReLU(true)(r);  // in place
  EXPECT_TRUE(equal(r, tensor({0.0f, 2.0f})));
}

TEST(FrontendLibtorch, DataPipeline) {
  data::TensorDataset ds(arange(0, 10, 1, kFloat32).reshape({10, 1}), arange(0, 10, 1, kInt64));
  struct Rows : data::Dataset<Rows> {
    data::Example<> get(size_t i) override { return {full({1, 1, 2}, double(i)), tensor(int64_t(i))}; }  // (C, H, W)
    std::optional<size_t> size() const override { return 7; }
  };
  auto mapped = Rows().map(data::transforms::Normalize<>(1.0, 2.0)).map(data::transforms::Stack<>());
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(std::move(mapped), 3);
  std::vector<int64_t> sizes;
  for (auto& batch : *loader) {
    sizes.push_back(batch.data.size(0));
    EXPECT_TRUE(allclose(batch.data.flatten(1).select(1, 0), (batch.target.to(kFloat32) - 1.0) / 2.0));
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 1}));
  auto dropped = data::make_data_loader<data::samplers::SequentialSampler>(
      Rows().map(data::transforms::Stack<>()), data::DataLoaderOptions(3).drop_last(true).workers(2));
  int n = 0;
  for (auto& batch : *dropped) n += int(batch.data.size(0));
  EXPECT_EQ(n, 6);
  // The default sampler is random: manual_seed fixes its permutation.
  auto order = [&] {
    manual_seed(5);
    auto l = data::make_data_loader(Rows().map(data::transforms::Stack<>()), 7);
    return (*l->begin()).target.clone();
  };
  Tensor o1 = order(), o2 = order();
  EXPECT_TRUE(equal(o1, o2));
  EXPECT_TRUE(equal(std::get<0>(o1.sort()), arange(0, 7, 1, kInt64)));
  EXPECT_THROW(data::make_data_loader(Rows().map(data::transforms::Stack<>()), data::DataLoaderOptions(0)),
               ValueError);
  auto lambda = Rows().map(data::transforms::Lambda<data::Example<>>([](data::Example<> e) {
                         e.target = e.target + 100;
                         return e;
                       }))
                    .map(data::transforms::Stack<>());
  EXPECT_EQ(lambda.get_batch({0, 1}).target[1].item<int64_t>(), 101);
}

TEST(FrontendLibtorch, SaveAndLoadModulesOptimizersTensors) {
  manual_seed(0);
  TwoLayer a(3, 2), b(3, 2);
  optim::Adam opt(a->parameters(), optim::AdamOptions(1e-2).betas(std::make_tuple(0.5, 0.9)));
  EXPECT_EQ(opt.defaults().betas().first, 0.5);
  a(randn({4, 3})).sum().backward();
  opt.step();
  std::string mp = temp_path("model.pt"), op = temp_path("opt.pt"), tp = temp_path("tensors.pt");
  save(a, mp);
  save(opt, op);
  load(b, mp);
  for (auto& p : a->named_parameters()) EXPECT_TRUE(equal(p.value(), b->named_parameters()[p.key()]));
  optim::Adam opt_b(b->parameters(), optim::AdamOptions(1e-2));
  load(opt_b, op);
  EXPECT_EQ(opt_b.state(b->parameters()[0])->step, 1);
  std::vector<Tensor> ts = {ones({2}), arange(0, 3, 1, kInt64)};
  save(ts, tp);
  std::vector<Tensor> back;
  load(back, tp);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(equal(back[1], ts[1]));
  Tensor one;
  EXPECT_THROW(load(one, tp), ValueError);  // two tensors, not one
  for (auto& f : {mp, op, tp}) std::filesystem::remove(f);
}

TEST(FrontendLibtorch, ParamGroupsWithLibtorchOptions) {
  Tensor p = ones({1}).requires_grad_(), q = ones({1}).requires_grad_();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{p});
  groups.emplace_back(std::vector<Tensor>{q}, std::make_unique<optim::AdamOptions>(0.5));
  optim::Adam opt(groups, optim::AdamOptions(0.1));
  EXPECT_EQ(opt.param_groups()[0].options().lr(), 0.1);
  EXPECT_EQ(static_cast<optim::AdamOptions&>(opt.param_groups()[1].options()).lr(), 0.5);
  std::vector<optim::OptimizerParamGroup> wrong;
  wrong.emplace_back(std::vector<Tensor>{p}, std::make_unique<optim::SGDOptions>(0.5));
  EXPECT_THROW(optim::Adam(wrong, optim::AdamOptions()), TypeError);
}

TEST(FrontendLibtorch, TagConstantsForNames) {
  Tensor w = empty({64, 32});
  nn::init::kaiming_normal_(w, 0, kFanOut, kReLU);
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0 / 64), 0.02);
  EXPECT_EQ(nn::init::calculate_gain(kTanh), 5.0 / 3);
  EXPECT_THROW(nn::init::kaiming_uniform_(w, 0, "fan_sideways"), ValueError);
  nn::CrossEntropyLoss sum_loss(nn::CrossEntropyLossOptions().reduction(kSum));
  Tensor logits = randn({4, 3}), target = tensor({0, 1, 2, 0});
  EXPECT_TRUE(allclose(sum_loss(logits, target), cross_entropy(logits, target, std::nullopt, -100, "sum")));
  nn::MSELoss none_loss{nn::MSELossOptions(kNone)};
  EXPECT_EQ(none_loss(logits, logits).sizes(), IntArrayRef({4, 3}));
}

TEST(FrontendLibtorch, ClipGradAndInterpolate) {
  Tensor a = ones({3}).requires_grad_(), b = ones({4}).requires_grad_(), c = ones({2}).requires_grad_();
  a.set_grad(full({3}, 3.0));
  b.set_grad(full({4}, 4.0));  // c has no gradient
  double total = nn::utils::clip_grad_norm_({a, b, c}, 1.0);
  EXPECT_NEAR(total, std::sqrt(27.0 + 64.0), 1e-5);  // float32 norms
  double after = std::sqrt(a.grad().pow(2).sum().item<double>() + b.grad().pow(2).sum().item<double>());
  EXPECT_NEAR(after, 1.0, 1e-5);
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b}, 10.0, INFINITY), 4.0 / (std::sqrt(91.0) + 1e-6), 1e-6);
  b.set_grad(full({4}, NAN));
  EXPECT_THROW(nn::utils::clip_grad_norm_({a, b}, 1.0, 2.0, /*error_if_nonfinite=*/true), Error);
  nn::utils::clip_grad_value_({a}, 0.01);
  EXPECT_LE(a.grad().max().item<double>(), 0.01);

  namespace F = nn::functional;
  Tensor img = randn({1, 2, 4, 4});
  Tensor up = F::interpolate(img, F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 8}).mode(kBilinear)
                                      .align_corners(false));
  EXPECT_TRUE(allclose(up, interpolate(img, {8, 8}, "bilinear", false)));
  Tensor twice = F::interpolate(img, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2}));
  EXPECT_EQ(twice.sizes(), IntArrayRef({1, 2, 8, 8}));
  EXPECT_THROW(F::interpolate(img, F::InterpolateFuncOptions()), ValueError);
}

TEST(FrontendLibtorch, IndexingWithTensorIndex) {
  using namespace indexing;
  Tensor t = arange(0, 24, 1, kInt64).reshape({2, 3, 4});
  EXPECT_TRUE(equal(t.index({Slice(), 0}), t.select(1, 0)));
  EXPECT_TRUE(equal(t.index({1, Slice(None, 2), Slice(1, None, 2)}), tensor({{13, 15}, {17, 19}})));
  EXPECT_TRUE(equal(t.index({Ellipsis, -1}), t.select(2, 3)));
  EXPECT_TRUE(equal(t.index({"...", 0}), t.select(2, 0)));
  EXPECT_EQ(t.index({None, 0}).sizes(), IntArrayRef({1, 3, 4}));
  EXPECT_TRUE(equal(t.index({t > 20}), tensor({21, 22, 23})));
  EXPECT_TRUE(equal(t.index({tensor({1, 0}), 2, 3}), tensor({23, 11})));
  Tensor v = t.index({0});  // basic indices make views
  v.index_put_({0, 0}, 100);
  EXPECT_EQ(t[0][0][0].item<int64_t>(), 100);
  t.index_put_({t > 20}, 0);
  EXPECT_EQ(t.sum().item<int64_t>(), 20 * 21 / 2);  // 100 and 21..23 are now 0
  t.index_put_({Slice(), 1}, zeros({4}, kInt64));
  EXPECT_EQ(t.index({Slice(), 1}).abs().sum().item<int64_t>(), 0);
  EXPECT_THROW(t.index({0, 0, 0, 0}), IndexError);
  EXPECT_THROW(t.index({Ellipsis, Ellipsis}), IndexError);
  EXPECT_THROW(t.index({5}), IndexError);
  EXPECT_THROW(t.index({"..x"}), IndexError);
  EXPECT_THROW(t.index_put_({t > 5}, ones({1})), Error);  // a float tensor into int64 (advanced index)
  t.index_put_({0}, ones({3, 4}));                        // basic indices copy (and cast)
  EXPECT_EQ(t[0].sum().item<int64_t>(), 12);
  EXPECT_EQ(Device(kCUDA, 1).index(), 1);
}

TEST(FrontendLibtorch, DeviceAsLibtorchSpellsIt) {
  Device d("cuda:1");
  EXPECT_EQ(d.type(), DeviceType::CUDA);
  EXPECT_EQ(d.index(), 1);
  EXPECT_TRUE(d.is_cuda() && d.has_index());
  EXPECT_EQ(d.str(), "cuda:1");
  Device cpu = std::string("cpu");
  EXPECT_TRUE(cpu.is_cpu() && !cpu.has_index());
  EXPECT_TRUE(cpu.type() == kCPU);  // libtorch compares type() with kCPU / kCUDA
  EXPECT_FALSE(d.type() == kCPU);
  EXPECT_EQ(ones({2}).device().type(), DeviceType::CPU);
  d.set_index(0);
  EXPECT_EQ(d, Device(kCUDA, 0));
  EXPECT_THROW(Device("tpu"), Error);
}

TEST(FrontendLibtorch, AccessorsReadAndWriteThroughStrides) {
  Tensor t = arange(0, 12, 1, kFloat32).reshape({3, 4});
  auto a = t.accessor<float, 2>();
  EXPECT_EQ(a.size(0), 3);
  EXPECT_EQ(a[2][1], 9.f);
  a[1][3] = -1.f;
  EXPECT_EQ(t[1][3].item<float>(), -1.f);
  Tensor tt = t.t();  // strides (1, 4)
  auto b = tt.accessor<float, 2>();
  EXPECT_EQ(b[3][1], -1.f);
  float sum = 0;
  for (int64_t i = 0; i < b.size(0); ++i)
    for (int64_t j = 0; j < b.size(1); ++j) sum += b[i][j];
  EXPECT_EQ(sum, t.sum().item<float>());
  EXPECT_THROW(a[3][0], IndexError);
  EXPECT_THROW(a[0][-1], IndexError);
  EXPECT_THROW((t.accessor<double, 2>()), TypeError);
  EXPECT_THROW((t.accessor<float, 3>()), Error);
}

TEST(FrontendLibtorch, ConvPaddingSameAndValid) {
  namespace F = nn::functional;
  Tensor x = randn({1, 2, 6, 5}), w = randn({3, 2, 2, 3});
  Tensor y = F::conv2d(x, w, F::Conv2dFuncOptions().padding(kSame));
  EXPECT_EQ(y.sizes(), IntArrayRef({1, 3, 6, 5}));
  // kernel height 2: a total padding of 1, put at the end (as PyTorch); width 3: one each side
  EXPECT_TRUE(allclose(y, conv2d(pad(x, {1, 1, 0, 1}), w), 1e-5, 1e-6));
  EXPECT_TRUE(equal(F::conv2d(x, w, F::Conv2dFuncOptions().padding("valid")), conv2d(x, w)));
  EXPECT_THROW(F::conv2d(x, w, F::Conv2dFuncOptions().padding(kSame).stride(2)), Error);
  EXPECT_THROW(F::conv2d(x, w, F::Conv2dFuncOptions().padding("full")), Error);
  // The module takes the same path.
  nn::Conv2d conv(nn::Conv2dOptions(2, 3, {2, 3}).padding(kSame).bias(false));
  conv->weight.detach().copy_(w);
  EXPECT_TRUE(allclose(conv(x), y, 1e-5, 1e-6));
}
