#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>

#include <kindle/kindle.h>

using namespace kindle;

static std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

TEST(FusedOptim, SgdMomentumMatchesTheFormula) {
  Tensor p = full({3}, 1.0, kFloat64), g = arange(0, 3, 1, kFloat64);
  std::vector<Tensor> bufs(1);
  optim::sgd_step({p}, {g}, bufs, {.lr = 0.5, .momentum = 0.9});
  EXPECT_EQ(values(bufs[0]), std::vector<double>({0, 1, 2}));  // first buffer: the gradient
  EXPECT_EQ(values(p), std::vector<double>({1, 0.5, 0}));
  optim::sgd_step({p}, {g}, bufs, {.lr = 0.5, .momentum = 0.9});
  EXPECT_EQ(values(bufs[0]), std::vector<double>({0, 1.9, 3.8}));
  EXPECT_EQ(values(p), std::vector<double>({1, 0.5 - 0.95, -1.9}));
}

TEST(FusedOptim, AdamFirstStepMovesByLr) {
  // After one step Adam moves every coordinate by lr * sign(g) (up to eps).
  Tensor p = zeros({4}, kFloat32), g = arange(1, 5, 1, kFloat32);
  g.narrow(0, 1, 1).fill_(Scalar(-2.0));
  Tensor m = zeros({4}), v = zeros({4});
  optim::adam_step({p}, {g}, {m}, {v}, {}, {1}, {.lr = 0.1});
  for (double x : values(p)) EXPECT_NEAR(std::abs(x), 0.1, 1e-6);
  EXPECT_LT(values(p)[0], 0);
  EXPECT_GT(values(p)[1], 0);
}

TEST(FusedOptim, StridedAndHalfParametersAreStaged) {
  Tensor base = ones({4, 4}, kFloat32);
  Tensor p = base.t();  // not contiguous
  Tensor g = ones({4, 4});
  std::vector<Tensor> bufs(1);
  optim::sgd_step({p}, {g}, bufs, {.lr = 0.25});
  for (double x : values(base)) EXPECT_DOUBLE_EQ(x, 0.75);
  Tensor h = ones({3}, kFloat16);
  optim::sgd_step({h}, {ones({3}, kFloat16)}, bufs = std::vector<Tensor>(1), {.lr = 0.5});
  EXPECT_EQ(values(h), std::vector<double>({0.5, 0.5, 0.5}));
}

TEST(FusedOptim, MismatchedShapesThrow) {
  Tensor p = zeros({3}), g = zeros({4});
  std::vector<Tensor> bufs(1);
  EXPECT_THROW(optim::sgd_step({p}, {g}, bufs, {}), Error);
}

TEST(SharedMemory, ViewsFollowAndChildWritesAreSeen) {
  Tensor t = arange(0, 8, 1, kFloat32);
  Tensor view = t.narrow(0, 2, 4);
  share_memory_(t);
  EXPECT_TRUE(is_shared(t));
  EXPECT_TRUE(is_shared(view));
  EXPECT_EQ(values(view), std::vector<double>({2, 3, 4, 5}));
  int fd = shared_memory_fd(t);
  pid_t pid = fork();
  if (pid == 0) {  // the child maps the memory again and writes through it
    Tensor c = tensor_from_shared_fd(fd, 32, kFloat32, {4}, {1}, 4);
    c.fill_(Scalar(-1.0));
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(values(t), std::vector<double>({0, 1, 2, 3, -1, -1, -1, -1}));
  EXPECT_THROW(tensor_from_shared_fd(fd, 32, kFloat32, {9}, {1}, 0), Error);  // past the mapping
}
