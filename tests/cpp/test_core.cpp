#include <gtest/gtest.h>

#include <kindle/kindle.h>

#include "core/derived_cache.h"

using namespace kindle;

TEST(Core, FactoriesAndItem) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.dim(), 2);
  EXPECT_EQ(z.numel(), 6);
  EXPECT_EQ(z.dtype(), kFloat32);
  EXPECT_EQ(full({2}, 3.5).sum().item<double>(), 7.0);
  EXPECT_EQ(arange(0, 10, 1).sum().item<int64_t>(), 45);
}

TEST(Core, ViewsShareStorageAndVersion) {
  Tensor a = zeros({4, 4});
  Tensor v = a.transpose(0, 1).select(0, 1);
  uint32_t before = a.version();
  v.fill_(2.0);
  EXPECT_GT(a.version(), before);
  EXPECT_EQ(a.sum().item<double>(), 8.0);
  EXPECT_FALSE(a.transpose(0, 1).is_contiguous());
}

TEST(Core, BroadcastAndPromotion) {
  Tensor a = ones({3, 1}, kInt32);
  Tensor b = ones({4}, kFloat64);
  Tensor c = a + b;
  EXPECT_EQ(c.sizes(), IntArrayRef({3, 4}));
  EXPECT_EQ(c.dtype(), kFloat64);
  Tensor f = ones({2}) * 2;  // a number keeps the tensor's float32
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(promote_types(kUInt8, kInt8), kInt16);
  EXPECT_EQ(promote_types(kFloat16, kBFloat16), kFloat32);
}

TEST(Core, Errors) {
  EXPECT_THROW(zeros({2, 3}).view({4}), Error);
  EXPECT_THROW(zeros({2}).select(0, 5), IndexError);
  EXPECT_THROW(zeros({2, 3}) + zeros({4}), Error);
  EXPECT_THROW(floor_divide(ones({2}, kInt64), zeros({2}, kInt64)), Error);
  EXPECT_THROW(zeros({-1}), Error);
  EXPECT_THROW(mm(zeros({2, 3}), zeros({2, 3})), Error);
}

TEST(Core, MatmulMatchesLoop) {
  manual_seed(1);
  Tensor a = randn({5, 7}, std::nullopt, kFloat64), b = randn({7, 3}, std::nullopt, kFloat64);
  Tensor c = matmul(a, b);
  const double* A = a.data_ptr<double>();
  const double* B = b.data_ptr<double>();
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 7; ++k) s += A[i * 7 + k] * B[k * 3 + j];
      EXPECT_NEAR(c.data_ptr<double>()[i * 3 + j], s, 1e-12);
    }
}

TEST(Core, ReductionsAreThreadCountInvariant) {
  manual_seed(3);
  Tensor x = randn({1 << 20});
  int saved = get_num_threads();
  set_num_threads(1);
  double s1 = x.sum().item<double>();
  Tensor c1 = x.view({1024, 1024}).sum(IntArrayRef{0});
  set_num_threads(2);
  double s2 = x.sum().item<double>();
  Tensor c2 = x.view({1024, 1024}).sum(IntArrayRef{0});
  set_num_threads(saved);
  EXPECT_EQ(s1, s2);
  EXPECT_TRUE(equal(c1, c2));
}

TEST(Core, CachingAllocatorReusesLargeBlocks) {
  { Tensor t = empty({1 << 22}); }
  auto before = cpu_cache_stats();
  { Tensor t = empty({1 << 22}); }
  auto after = cpu_cache_stats();
  EXPECT_EQ(after.cache_hits, before.cache_hits + 1);
  empty_cache();
  EXPECT_EQ(cpu_cache_stats().cached_bytes, 0u);
}

// Note [Derived data cache]: Winograd's transformed filters (3x3, 16 channels, a 12x12 map) are
// kept from the second call with an unchanged weight on, refreshed when the weight is written in
// place, dropped with the weight, and never kept for bytes handed out through data_ptr<T>().
TEST(Core, DerivedCacheFollowsTheWeight) {
  derived_cache_clear();
  Tensor x = randn({2, 16, 12, 12}), w = randn({16, 16, 3, 3});
  auto conv = [&](const Tensor& weight) { return conv2d(x, weight, std::nullopt, {1, 1}, {1, 1}); };
  const Tensor ref = conv(w);
  const size_t hits0 = derived_cache_stats().hits;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(equal(conv(w), ref));
  EXPECT_EQ(derived_cache_stats().hits, hits0 + 2);  // the second call kept it; the third and fourth hit
  EXPECT_EQ(derived_cache_stats().bytes, size_t(16 * 16 * 16 * 4));
  w.mul_(2);  // an in-place write moves the version: the cached filters are stale
  EXPECT_TRUE(allclose(conv(w), ref * 2, 1e-5, 1e-5));
  EXPECT_EQ(derived_cache_stats().bytes, 0u);
  {
    Tensor w2 = w.clone();
    for (int i = 0; i < 3; ++i) conv(w2);
    EXPECT_EQ(derived_cache_stats().entries, 2u);
  }
  EXPECT_EQ(derived_cache_stats().entries, 1u);  // w2's went with it
  Tensor w3 = randn({16, 16, 3, 3});
  float* p = w3.data_ptr<float>();  // written behind Kindle's back below: never cached
  const size_t hits1 = derived_cache_stats().hits;
  const Tensor r3 = conv(w3);
  for (int i = 0; i < 2; ++i) conv(w3);
  for (int64_t i = 0; i < w3.numel(); ++i) p[i] = -p[i];
  EXPECT_TRUE(allclose(conv(w3), -r3, 1e-5, 1e-5));
  EXPECT_EQ(derived_cache_stats().hits, hits1);
  empty_cache();
  EXPECT_EQ(derived_cache_stats().entries, 0u);
}

TEST(Core, Printing) {
  EXPECT_EQ(arange(0, 3, 1).to_string(), "tensor([0, 1, 2])");
  EXPECT_EQ(full({2}, 1.5).to_string(), "tensor([1.5000, 1.5000])");
  EXPECT_EQ(ones({2}, kFloat64).to_string(), "tensor([1., 1.], dtype=kindle.float64)");
}

// The meta device: shapes, strides and dtypes without data; every kernel does nothing and every
// host read raises (a stray read of the missing bytes would crash this test under ASan).
TEST(Core, MetaDevice) {
  EXPECT_EQ(Device("meta"), kMeta);
  EXPECT_EQ(kMeta.str(), "meta");
  Tensor x = empty({2, 3}, std::nullopt, kMeta);
  EXPECT_TRUE(x.is_meta());
  EXPECT_EQ(x.raw_data_ptr(), nullptr);
  Tensor y = matmul(x.t(), x).relu().sum(IntArrayRef{0}, true);
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(y.sizes(), IntArrayRef({1, 3}));
  Tensor c = conv2d(empty({1, 3, 8, 8}, std::nullopt, kMeta), empty({4, 3, 3, 3}, std::nullopt, kMeta));
  EXPECT_EQ(c.sizes(), IntArrayRef({1, 4, 6, 6}));
  EXPECT_THROW(x + zeros({4}, std::nullopt, kMeta), Error);                // shape errors stay errors
  EXPECT_THROW(x + ones({2, 3}), Error);                                  // devices do not mix
  EXPECT_THROW(x.sum().item<float>(), Error);
  EXPECT_THROW(x.to(kCPU), NotImplementedError);
  EXPECT_THROW(nonzero(x), NotImplementedError);
  EXPECT_TRUE(ones({2, 3}).to(kMeta).is_meta());
  EXPECT_TRUE(x.to(kFloat64).is_meta());
  Tensor w = empty({4, 3}, std::nullopt, kMeta);
  w.requires_grad_();
  (x.matmul(w.t())).tanh().mean().backward();
  EXPECT_TRUE(w.grad().is_meta());
  EXPECT_EQ(w.grad().sizes(), IntArrayRef({4, 3}));
}
