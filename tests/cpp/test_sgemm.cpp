// Kindle's AVX-512 SGEMM (csrc/cpu/sgemm.h) against a float64 reference: every transpose
// combination, leading dimensions wider than the matrix, alpha and beta (beta == 0 must ignore NaN
// in C), shapes on and off the micro-tile and block edges, and the same bits whatever the split
// of C over threads. On a CPU without AVX-512 the kernel is never entered, and these tests skip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "cpu/sgemm.h"
#include "kindle/kindle.h"

namespace sg = kindle::cpu::sgemm;

namespace {

struct Case {
  int64_t m, n, k;
  bool ta, tb;
  int64_t pad;  // extra leading-dimension elements
  float alpha, beta;
};

void check(const Case& cs, bool packed, std::mt19937& rng) {
  std::normal_distribution<float> d;
  const int64_t lda = (cs.ta ? cs.m : cs.k) + cs.pad, ldb = (cs.tb ? cs.k : cs.n) + cs.pad, ldc = cs.n + cs.pad;
  std::vector<float> a(size_t((cs.ta ? cs.k : cs.m) * lda + 1)), b(size_t((cs.tb ? cs.n : cs.k) * ldb + 1)),
      c(size_t(cs.m * ldc + 1));
  for (auto& x : a) x = d(rng);
  for (auto& x : b) x = d(rng);
  for (auto& x : c) x = cs.beta == 0.f ? std::numeric_limits<float>::quiet_NaN() : d(rng);
  const std::vector<float> c0 = c;
  if (packed) {
    sg::PackedA pa(cs.ta, cs.m, cs.k, a.data(), lda);
    sg::multiply(pa, cs.tb, cs.n, cs.alpha, b.data(), ldb, cs.beta, c.data(), ldc);
  } else {
    sg::gemm(cs.ta, cs.tb, cs.m, cs.n, cs.k, cs.alpha, a.data(), lda, b.data(), ldb, cs.beta, c.data(), ldc);
  }
  for (int64_t i = 0; i < cs.m; ++i)
    for (int64_t j = 0; j < cs.n; ++j) {
      double s = 0, mag = 0;
      for (int64_t p = 0; p < cs.k; ++p) {
        const double x = cs.ta ? a[size_t(p * lda + i)] : a[size_t(i * lda + p)];
        const double y = cs.tb ? b[size_t(j * ldb + p)] : b[size_t(p * ldb + j)];
        s += x * y;
        mag += std::fabs(x * y);
      }
      const double ref = cs.alpha * s + (cs.beta == 0.f ? 0.0 : cs.beta * c0[size_t(i * ldc + j)]);
      const double got = c[size_t(i * ldc + j)];
      ASSERT_NEAR(got, ref, 1e-5 * (mag + 1) * std::fabs(cs.alpha) + 1e-5)
          << cs.m << "x" << cs.n << "x" << cs.k << " ta=" << cs.ta << " tb=" << cs.tb << " packed=" << packed
          << " at (" << i << ", " << j << ")";
    }
  // The padding between rows of C is never written.
  for (int64_t i = 0; i < cs.m; ++i)
    for (int64_t j = cs.n; j < ldc && i * ldc + j < int64_t(c.size()); ++j) {
      const float was = c0[size_t(i * ldc + j)], now = c[size_t(i * ldc + j)];
      ASSERT_TRUE(was == now || (std::isnan(was) && std::isnan(now))) << "wrote past column " << cs.n;
    }
}

}  // namespace

TEST(Sgemm, MatchesTheReferenceAcrossShapesAndLayouts) {
  if (!sg::available()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937 rng(7);
  // Edges of the 12-row, 32-column micro-tile (and its 16-column half), the 256 depth block and
  // the 240-row and 2048-column packing blocks; k = 0 (C = beta C).
  const int64_t ms[] = {1, 11, 12, 13, 37, 241}, ns[] = {1, 15, 16, 17, 33, 64, 2049}, ks[] = {0, 1, 5, 256, 257, 600};
  for (int64_t m : ms)
    for (int64_t n : ns)
      for (int64_t k : ks) {
        if (m * n * k > 20'000'000) continue;
        const bool ta = (m + k) % 2, tb = (n + k) % 3 == 0;
        check({m, n, k, ta, tb, (m + n) % 3, 1.f, 0.f}, (m + n + k) % 2 == 0, rng);
      }
  // A few rows against a transposed B (a linear layer at a small batch): dot products.
  for (int64_t m : {1, 2, 5, 8, 9, 16})
    for (int64_t k : {1, 15, 16, 17, 300})
      for (int64_t n : {1, 2, 3, 33}) {
        check({m, n, k, false, true, (m + k) % 2, 1.f, 0.f}, false, rng);
        check({m, n, k, false, true, 1, -0.5f, 1.5f}, false, rng);
      }
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool packed : {false, true}) {
        check({29, 45, 70, ta, tb, 2, 0.5f, 0.f}, packed, rng);
        check({29, 45, 70, ta, tb, 0, -1.5f, 2.f}, packed, rng);
        check({50, 40, 300, ta, tb, 1, 1.f, 1.f}, packed, rng);
      }
}

// A product over a range of packed rows (a convolution's threads each take whole panels) writes
// exactly those rows, with the bits the whole product has there.
TEST(Sgemm, RowRangesOfAPackedProductMatchTheWhole) {
  if (!sg::available()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937 rng(11);
  std::normal_distribution<float> d;
  const int64_t m = 61, k = 300, n = 45;
  std::vector<float> a(size_t(m * k)), b(size_t(k * n));
  for (auto& x : a) x = d(rng);
  for (auto& x : b) x = d(rng);
  sg::PackedA pa(false, m, k, a.data(), k);
  std::vector<float> whole(size_t(m * n)), parts(size_t(m * n), -1.f), one(size_t(m * n), -1.f);
  sg::multiply(pa, false, n, 1.f, b.data(), n, 0.f, whole.data(), n);
  for (int64_t r0 = 0; r0 < m; r0 += 2 * sg::kPanelRows)
    sg::multiply(pa, r0, std::min<int64_t>(2 * sg::kPanelRows, m - r0), false, n, 1.f, b.data(), n, 0.f,
                 parts.data(), n);
  EXPECT_EQ(whole, parts);
  sg::multiply(pa, sg::kPanelRows, sg::kPanelRows, false, n, 1.f, b.data(), n, 0.f, one.data(), n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const bool inside = i >= sg::kPanelRows && i < 2 * sg::kPanelRows;
      ASSERT_EQ(one[size_t(i * n + j)], inside ? whole[size_t(i * n + j)] : -1.f) << "row " << i;
    }
  EXPECT_THROW(sg::multiply(pa, 5, 10, false, n, 1.f, b.data(), n, 0.f, one.data(), n), std::logic_error);
  EXPECT_THROW(sg::multiply(pa, 60, 12, false, n, 1.f, b.data(), n, 0.f, one.data(), n), std::logic_error);
}

// Through the library: a float32 matmul gives the same bits on 1 and 2 threads (C is split over
// the threads, never the sum), and agrees with float64.
TEST(Sgemm, MatmulDoesNotDependOnTheThreadCount) {
  const int saved = kindle::get_num_threads();
  kindle::manual_seed(3);
  // (The last two: MKL's threaded GEMM split their sums over k, outside its strict mode.)
  for (auto shape : {std::vector<int64_t>{300, 500, 200}, std::vector<int64_t>{40, 3000, 70},
                     std::vector<int64_t>{2000, 24, 96}, std::vector<int64_t>{128, 1024, 4096},
                     std::vector<int64_t>{2048, 64, 2048}}) {
    kindle::Tensor a = kindle::randn({shape[0], shape[2]}), b = kindle::randn({shape[2], shape[1]});
    kindle::set_num_threads(1);
    kindle::Tensor one = kindle::matmul(a, b);
    kindle::set_num_threads(2);
    kindle::Tensor two = kindle::matmul(a, b);
    kindle::Tensor bt = kindle::matmul(a, b.t().contiguous().t());
    EXPECT_TRUE(kindle::equal(one, two)) << shape[0] << "x" << shape[1];
    if (sg::preferred()) EXPECT_TRUE(kindle::equal(one, bt)) << "transposed operand";
    kindle::Tensor ref = kindle::matmul(a.to(kindle::kFloat64), b.to(kindle::kFloat64)).to(kindle::kFloat32);
    EXPECT_TRUE(kindle::allclose(one, ref, 1e-4, 1e-4));
  }
  kindle::set_num_threads(saved);
}
