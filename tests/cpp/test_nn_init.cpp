// nn::init: the one implementation behind kindle.nn.init and the C++ front end
// (tests/python/test_nn_init.py compares the Python side, and so these draws, with torch's).
#include <gtest/gtest.h>

#include <cmath>

#include <kindle/kindle.h>
#include <kindle/nn/init.h>

using namespace kindle;

TEST(NnInit, TruncNormalStaysInBoundsOnBothPaths) {
  // [-2, 2] holds most of the mass (redrawn normals); [2.5, 4] little of it (rejection sampling).
  for (auto [a, b] : {std::pair{-2.0, 2.0}, std::pair{2.5, 4.0}}) {
    Tensor t = empty({4000});
    nn::init::trunc_normal_(t, 0.0, 1.0, a, b);
    EXPECT_GE(t.min().item<double>(), a);
    EXPECT_LE(t.max().item<double>(), b);
    EXPECT_GT(t.std().item<double>(), 0.0);
  }
  // On [2.5, 4] the density falls: more mass near 2.5 than near 4.
  Tensor t = empty({4000});
  nn::init::trunc_normal_(t, 0.0, 1.0, 2.5, 4.0);
  EXPECT_LT(t.mean().item<double>(), 3.0);
}

TEST(NnInit, AGeneratorMakesDrawsReproducible) {
  Generator g1(7), g2(7);
  Tensor x = empty({16, 8}), y = empty({16, 8});
  nn::init::kaiming_uniform_(x, std::sqrt(5.0), "fan_in", "leaky_relu", g1);
  nn::init::kaiming_uniform_(y, std::sqrt(5.0), "fan_in", "leaky_relu", g2);
  EXPECT_TRUE(equal(x, y));
  nn::init::trunc_normal_(x, 0, 1, 2.5, 4, g1);
  nn::init::trunc_normal_(y, 0, 1, 2.5, 4, g2);
  EXPECT_TRUE(equal(x, y));
  // kaiming_uniform_ with a = sqrt(5) (Linear's default): bound 1/sqrt(fan_in)
  nn::init::kaiming_uniform_(x, std::sqrt(5.0));
  EXPECT_LE(x.abs().max().item<double>(), 1 / std::sqrt(8.0));
}

TEST(NnInit, FanRules) {
  Tensor w = empty({6, 4, 3, 3});
  auto [fan_in, fan_out] = nn::init::calculate_fan_in_and_fan_out(w);
  EXPECT_EQ(fan_in, 36);
  EXPECT_EQ(fan_out, 54);
  EXPECT_EQ(nn::init::calculate_correct_fan(w, "FAN_OUT"), 54);  // any case, as Python's mode.lower()
  EXPECT_THROW(nn::init::calculate_correct_fan(w, "fan_x"), ValueError);
  EXPECT_THROW(nn::init::calculate_fan_in_and_fan_out(empty({3})), ValueError);
  EXPECT_EQ(nn::init::calculate_gain("leaky_relu", 0.0), std::sqrt(2.0));
  EXPECT_THROW(nn::init::calculate_gain("swish"), ValueError);
  Tensor none = empty({0, 3});
  EXPECT_TRUE(nn::init::kaiming_normal_(none).is_same(none));  // no elements: left as it is
}
