#include <gtest/gtest.h>

#include <kindle/kindle.h>

using namespace kindle;

static std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

TEST(Ops, ElementwiseNonContiguousAndBroadcast) {
  Tensor a = arange(0, 12, 1, kFloat32).reshape({3, 4});
  Tensor t = a.t();  // (4, 3), non-contiguous
  Tensor r = t + arange(0, 3, 1, kFloat32);
  EXPECT_EQ(r.sizes(), IntArrayRef({4, 3}));
  EXPECT_EQ(values(r)[0], 0.0);
  EXPECT_EQ(values(r)[1], 5.0);  // t[0][1] = a[1][0] = 4, + 1
  EXPECT_TRUE(equal(exp(t), exp(t.contiguous())));
}

TEST(Ops, InPlaceChecksDtype) {
  Tensor i = ones({3}, kInt64);
  EXPECT_THROW(i.add_(full({3}, 0.5)), Error);  // float result cannot go into an int tensor
  Tensor f = ones({3});
  f.add_(ones({3}, kInt64));
  EXPECT_EQ(values(f), std::vector<double>({2, 2, 2}));
}

TEST(Ops, ReductionsOverDims) {
  Tensor a = arange(0, 24, 1, kFloat64).reshape({2, 3, 4});
  EXPECT_EQ(values(a.sum(IntArrayRef{0, 2})), std::vector<double>({60, 92, 124}));
  EXPECT_EQ(a.sum(IntArrayRef{1}, true).sizes(), IntArrayRef({2, 1, 4}));
  auto [v, i] = a.max(2);
  EXPECT_EQ(values(v), std::vector<double>({3, 7, 11, 15, 19, 23}));
  EXPECT_EQ(values(i), std::vector<double>({3, 3, 3, 3, 3, 3}));
  EXPECT_NEAR(a.var().item<double>(), 50.0, 1e-12);
  EXPECT_EQ(zeros({0, 3}).sum(IntArrayRef{0}).numel(), 3);
  EXPECT_THROW(zeros({0}).max(), Error);
}

TEST(Ops, IndexingAndScatter) {
  Tensor a = arange(0, 10, 1, kInt64);
  Tensor idx = arange(0, 10, 3, kInt64);  // 0 3 6 9
  EXPECT_EQ(values(index_select(a, 0, idx)), std::vector<double>({0, 3, 6, 9}));
  Tensor z = zeros({5}, kInt64);
  z.scatter_add_(0, full({4}, 1, kInt64), ones({4}, kInt64));
  EXPECT_EQ(values(z), std::vector<double>({0, 4, 0, 0, 0}));
  Tensor m = gt(a, scalar_to_tensor(6));
  EXPECT_EQ(values(masked_select(a, m)), std::vector<double>({7, 8, 9}));
  EXPECT_EQ(nonzero(m).sizes(), IntArrayRef({3, 1}));
  EXPECT_THROW(index_select(a, 0, full({1}, 10, kInt64)), IndexError);
  Tensor b = zeros({3, 3});
  b.index_put_({std::optional<Tensor>(arange(0, 3, 1, kInt64)), std::optional<Tensor>(arange(0, 3, 1, kInt64))}, ones({3}));
  EXPECT_TRUE(equal(b, eye(3)));
}

TEST(Ops, ShapeOps) {
  Tensor a = arange(0, 6, 1, kFloat32).reshape({2, 3});
  EXPECT_EQ(cat({a, a}, 1).sizes(), IntArrayRef({2, 6}));
  EXPECT_EQ(stack({a, a}, 0).sizes(), IntArrayRef({2, 2, 3}));
  EXPECT_EQ(a.split({1}, 1).size(), 3u);
  EXPECT_EQ(values(flip(a, {1})), std::vector<double>({2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(values(roll(a, {1}, {1})), std::vector<double>({2, 0, 1, 5, 3, 4}));
  EXPECT_EQ(a.t().reshape({6}).sizes(), IntArrayRef({6}));  // reshape copies what view cannot
  EXPECT_THROW(a.t().view({6}), Error);
  EXPECT_EQ(values(einsum("ij,jk->ik", {a, a.t()})), values(mm(a, a.t())));
}

TEST(Ops, RandomIsReproducibleAcrossThreadCounts) {
  int saved = get_num_threads();
  set_num_threads(1);
  manual_seed(7);
  Tensor a = randn({100000});
  set_num_threads(2);
  manual_seed(7);
  Tensor b = randn({100000});
  set_num_threads(saved);
  EXPECT_TRUE(equal(a, b));
  EXPECT_NEAR(a.mean().item<double>(), 0.0, 0.02);
  EXPECT_NEAR(a.std().item<double>(), 1.0, 0.02);
}
