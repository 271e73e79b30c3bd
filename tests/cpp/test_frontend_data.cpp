// kindle::data: TensorDataset, DataLoader (batching, seeded shuffling, drop_last, worker threads
// in order, errors from workers, early exit), custom datasets, the IDX/MNIST reader.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <kindle/frontend.h>

using namespace kindle;

namespace {

data::TensorDataset counting(int64_t n) {
  return data::TensorDataset(arange(0, n, 1, kFloat32).reshape({n, 1}), arange(0, n, 1, kInt64));
}

template <typename Loader>
std::vector<int64_t> targets_of(Loader& loader) {
  std::vector<int64_t> out;
  for (auto& batch : loader) {
    EXPECT_TRUE(equal(batch.data.flatten(), batch.target.to(kFloat32)));  // rows stay paired
    for (int64_t i = 0; i < batch.target.size(0); ++i) out.push_back(batch.target.select(0, i).template item<int64_t>());
  }
  return out;
}

// A dataset that computes its examples (and may fail), to exercise the generic path.
struct Squares : data::Dataset<Squares> {
  int64_t n;
  int64_t fail_at;
  explicit Squares(int64_t n, int64_t fail_at = -1) : n(n), fail_at(fail_at) {}
  data::Example<> get(size_t i) override {
    KINDLE_CHECK_INDEX(int64_t(i) != fail_at, "Squares: example ", i, " is broken");
    return {full({2}, Scalar(double(i))), full({}, Scalar(int64_t(i * i)), kInt64)};
  }
  std::optional<size_t> size() const override { return size_t(n); }
};

}  // namespace

TEST(FrontendData, TensorDataset) {
  data::TensorDataset ds = counting(5);
  EXPECT_EQ(ds.size(), std::optional<size_t>(5));
  EXPECT_EQ(ds.get(3).target.item<int64_t>(), 3);
  EXPECT_THROW(ds.get(5), IndexError);
  data::Example<> b = ds.get_batch({4, 0});
  EXPECT_EQ(b.target.select(0, 0).item<int64_t>(), 4);
  EXPECT_THROW(data::TensorDataset(zeros({3, 2}), zeros({4})), ValueError);
}

TEST(FrontendData, SequentialBatchesAndDropLast) {
  data::DataLoader loader(counting(10), data::DataLoaderOptions(4));
  EXPECT_EQ(loader.size(), 3u);
  std::vector<int64_t> sizes;
  for (auto& b : loader) sizes.push_back(b.data.size(0));
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  std::vector<int64_t> all = targets_of(loader);
  std::vector<int64_t> want(10);
  for (int i = 0; i < 10; ++i) want[size_t(i)] = i;
  EXPECT_EQ(all, want);
  data::DataLoader dropped(counting(10), data::DataLoaderOptions(4).drop_last(true));
  EXPECT_EQ(dropped.size(), 2u);
  EXPECT_EQ(targets_of(dropped).size(), 8u);
  EXPECT_THROW(data::DataLoader(counting(3), data::DataLoaderOptions(0)), ValueError);
}

TEST(FrontendData, SeededShuffleIsAPermutationAndReproducible) {
  data::DataLoader a(counting(50), data::DataLoaderOptions(8).shuffle(true).seed(42));
  data::DataLoader b(counting(50), data::DataLoaderOptions(8).shuffle(true).seed(42));
  std::vector<int64_t> a1 = targets_of(a), a2 = targets_of(a), b1 = targets_of(b);
  EXPECT_EQ(a1, b1);       // same seed, same order
  EXPECT_NE(a1, a2);       // a new order each epoch
  EXPECT_EQ(targets_of(b), a2);  // ... reproducible epoch after epoch
  std::vector<int64_t> sorted = a1;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sorted[size_t(i)], i);
  // Without a seed, kindle::manual_seed fixes the order.
  manual_seed(9);
  data::DataLoader c(counting(50), data::DataLoaderOptions(8).shuffle(true));
  manual_seed(9);
  data::DataLoader d(counting(50), data::DataLoaderOptions(8).shuffle(true));
  EXPECT_EQ(targets_of(c), targets_of(d));
}

TEST(FrontendData, WorkersDeliverInOrder) {
  auto opts = data::DataLoaderOptions(3).shuffle(true).seed(1);
  data::DataLoader single(Squares(40).map(data::transforms::Stack<>()), opts);
  data::DataLoader threaded(Squares(40).map(data::transforms::Stack<>()), data::DataLoaderOptions(opts).num_workers(3));
  std::vector<Tensor> s, t;
  for (auto& b : single) s.push_back(b.target);
  for (auto& b : threaded) t.push_back(b.target);
  ASSERT_EQ(s.size(), t.size());
  for (size_t i = 0; i < s.size(); ++i) EXPECT_TRUE(equal(s[i], t[i]));
  // The generic path collates examples: data (3, 2), targets (3,).
  auto it = threaded.begin();  // the iterator owns the epoch: keep it while using its batch
  EXPECT_EQ(it->data.sizes(), IntArrayRef({3, 2}));
}

TEST(FrontendData, WorkerErrorsSurfaceAtTheirBatch) {
  data::DataLoader loader(Squares(20, 13).map(data::transforms::Stack<>()), data::DataLoaderOptions(4).num_workers(2));
  int seen = 0;
  try {
    for (auto& b : loader) {
      (void)b;
      ++seen;
    }
    FAIL() << "no error";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("example 13 is broken"), std::string::npos);
  }
  EXPECT_EQ(seen, 3);  // batches 0..2 arrived; batch 3 holds example 13
}

TEST(FrontendData, EarlyExitJoinsWorkers) {
  data::DataLoader loader(Squares(1000).map(data::transforms::Stack<>()), data::DataLoaderOptions(2).num_workers(4));
  for (int epoch = 0; epoch < 3; ++epoch) {
    int n = 0;
    for (auto& b : loader) {
      (void)b;
      if (++n == 2) break;
    }
    EXPECT_EQ(n, 2);
  }
}

TEST(FrontendData, BatchesAreBuiltWithoutGrad) {
  Tensor x = randn({6, 2}).requires_grad_();
  data::DataLoader loader(data::TensorDataset(x * 2, zeros({6}, kInt64)), data::DataLoaderOptions(3));
  for (auto& b : loader) {
    EXPECT_FALSE(b.data.requires_grad());
    EXPECT_EQ(b.data.grad_fn(), nullptr);
  }
}

TEST(FrontendData, IdxReaderAndMNIST) {
  std::string dir = ::testing::TempDir() + "kindle_frontend_idx_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  Tensor images = randint(0, 256, {5, 4, 3}, std::nullopt, kUInt8);
  Tensor labels = randint(0, 10, {5}, std::nullopt, kUInt8);
  data::write_idx(images, dir + "/train-images-idx3-ubyte");
  data::write_idx(labels, dir + "/train-labels-idx1-ubyte");
  EXPECT_TRUE(equal(data::read_idx(dir + "/train-images-idx3-ubyte"), images));
  data::MNIST mnist(dir, data::MNIST::Mode::kTrain);
  EXPECT_EQ(mnist.size(), std::optional<size_t>(5));
  EXPECT_TRUE(mnist.is_train());
  EXPECT_EQ(mnist.images().sizes(), IntArrayRef({5, 1, 4, 3}));
  EXPECT_EQ(mnist.images().dtype(), kFloat32);
  EXPECT_EQ(mnist.targets().dtype(), kInt64);
  EXPECT_TRUE(allclose(mnist.images().squeeze(std::vector<int64_t>{1}) * 255.0, images.to(kFloat32), 1e-4, 1e-4));
  EXPECT_THROW(data::MNIST(dir, data::MNIST::Mode::kTest), Error);  // no t10k files

  // Big-endian multi-byte payloads.
  std::string p32 = dir + "/int32.idx";
  {
    std::ofstream f(p32, std::ios::binary);
    const unsigned char bytes[] = {0, 0, 0x0C, 1, 0, 0, 0, 2, 0, 0, 1, 2, 0xFF, 0xFF, 0xFF, 0xFE};
    f.write(reinterpret_cast<const char*>(bytes), sizeof(bytes));
  }
  Tensor v = data::read_idx(p32);
  EXPECT_EQ(v.dtype(), kInt32);
  EXPECT_EQ(v.select(0, 0).item<int64_t>(), 258);
  EXPECT_EQ(v.select(0, 1).item<int64_t>(), -2);

  auto write_raw = [&](const std::string& name, std::vector<unsigned char> bytes) {
    std::ofstream f(dir + "/" + name, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return dir + "/" + name;
  };
  EXPECT_THROW(data::read_idx(write_raw("bad_magic", {1, 0, 8, 1, 0, 0, 0, 0})), ValueError);
  EXPECT_THROW(data::read_idx(write_raw("bad_type", {0, 0, 7, 1, 0, 0, 0, 0})), ValueError);
  EXPECT_THROW(data::read_idx(write_raw("short", {0, 0, 8, 1, 0, 0, 0, 3, 1, 2})), ValueError);
  EXPECT_THROW(data::read_idx(write_raw("long", {0, 0, 8, 1, 0, 0, 0, 1, 1, 2})), ValueError);
  EXPECT_THROW(data::read_idx(write_raw("huge", {0, 0, 8, 2, 0x7F, 0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF})),
               ValueError);
  std::filesystem::remove_all(dir);
}
