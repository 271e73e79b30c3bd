// The classic libtorch MNIST example on a synthetic MNIST written in the real idx format.
//
// The program first writes train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (big-endian headers, 28x28 uint8
// images) into --data DIR, then reads them back with torch::data::datasets::MNIST. The
// reader insists on the real sizes (60000 train, 10000 test), so those are written; each
// epoch trains on the first --train-examples of them. Each image is a bright bar at a
// place that depends on its class, jittered, on a noisy background.
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

// ---- Writing the data set -------------------------------------------------------------

struct Rng {  // xorshift64*, so the files do not depend on the library
  uint64_t s;
  uint32_t next() {
    s ^= s >> 12; s ^= s << 25; s ^= s >> 27;
    return static_cast<uint32_t>((s * 2685821657736338717ULL) >> 32);
  }
};

void write_be32(std::ofstream& out, uint32_t v) {
  const unsigned char b[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                              static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
  out.write(reinterpret_cast<const char*>(b), 4);
}

void write_split(const fs::path& dir, const char* images_name, const char* labels_name,
                 uint32_t count, uint64_t seed) {
  Rng rng{seed};
  std::ofstream images(dir / images_name, std::ios::binary), labels(dir / labels_name, std::ios::binary);
  write_be32(images, 2051); write_be32(images, count); write_be32(images, 28); write_be32(images, 28);
  write_be32(labels, 2049); write_be32(labels, count);
  std::vector<unsigned char> img(28 * 28);
  for (uint32_t n = 0; n < count; ++n) {
    const int label = static_cast<int>(rng.next() % 10);
    for (auto& p : img) p = static_cast<unsigned char>(rng.next() % 70);  // background noise
    // class c: a 6x4 bar, row block c / 5, column block c % 5, jittered by up to 2 pixels
    const int r0 = 3 + (label / 5) * 13 + static_cast<int>(rng.next() % 5) - 2;
    const int c0 = 2 + (label % 5) * 5 + static_cast<int>(rng.next() % 3) - 1;
    for (int r = r0; r < r0 + 6; ++r)
      for (int c = c0; c < c0 + 4; ++c)
        if (r >= 0 && r < 28 && c >= 0 && c < 28) img[r * 28 + c] = static_cast<unsigned char>(180 + rng.next() % 76);
    images.write(reinterpret_cast<const char*>(img.data()), static_cast<std::streamsize>(img.size()));
    const unsigned char l = static_cast<unsigned char>(label);
    labels.write(reinterpret_cast<const char*>(&l), 1);
  }
}

// ---- The model ------------------------------------------------------------------------

struct NetImpl : torch::nn::Module {
  NetImpl() {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)));
    conv2_drop = register_module("conv2_drop", torch::nn::Dropout2d());
    fc1 = register_module("fc1", torch::nn::Linear(320, 50));
    fc2 = register_module("fc2", torch::nn::Linear(50, 10));
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 320});
    x = torch::relu(fc1->forward(x));
    x = torch::dropout(x, /*p=*/0.5, /*train=*/is_training());
    x = fc2->forward(x);
    return torch::log_softmax(x, /*dim=*/1);
  }

  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Dropout2d conv2_drop{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Net);

template <typename DataLoader>
float train(Net& model, torch::Device device, DataLoader& data_loader, torch::optim::Optimizer& optimizer,
            size_t max_examples) {
  model->train();
  size_t seen = 0;
  double loss_sum = 0;
  int64_t batches = 0;
  for (auto& batch : data_loader) {
    if (seen >= max_examples) break;
    auto data = batch.data.to(device), targets = batch.target.to(device);
    optimizer.zero_grad();
    auto output = model->forward(data);
    auto loss = torch::nll_loss(output, targets);
    AT_ASSERT(!std::isnan(loss.template item<float>()));
    loss.backward();
    optimizer.step();
    loss_sum += loss.template item<float>();
    ++batches;
    seen += static_cast<size_t>(data.size(0));
  }
  return static_cast<float>(loss_sum / std::max<int64_t>(batches, 1));
}

template <typename DataLoader>
double test(Net& model, torch::Device device, DataLoader& data_loader, size_t dataset_size, bool quiet) {
  torch::NoGradGuard no_grad;
  model->eval();
  double test_loss = 0;
  int64_t correct = 0;
  for (const auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    auto output = model->forward(data);
    test_loss += torch::nll_loss(output, targets, /*weight=*/{}, torch::Reduction::Sum).template item<float>();
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
  }
  test_loss /= static_cast<double>(dataset_size);
  const double accuracy = static_cast<double>(correct) / static_cast<double>(dataset_size);
  if (!quiet) std::printf("test set: average loss %.4f, accuracy %.4f\n", test_loss, accuracy);
  return accuracy;
}

int main(int argc, char** argv) {
  int epochs = 3, threads = 1;
  size_t train_examples = 8000;
  bool quiet = false;
  std::string data_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--epochs" && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--train-examples" && i + 1 < argc) train_examples = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--data" && i + 1 < argc) data_dir = argv[++i];
    else if (a == "--quiet") quiet = true;
    else { std::fprintf(stderr, "usage: mnist [--epochs N] [--threads T] [--train-examples N] [--data DIR] [--quiet]\n"); return 2; }
  }
  torch::manual_seed(0);
  torch::set_num_threads(threads);

  const bool own_dir = data_dir.empty();
  if (own_dir) data_dir = (fs::temp_directory_path() / ("mnist_synthetic_" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count()))).string();
  fs::create_directories(data_dir);
  write_split(data_dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", 60000, 1);
  write_split(data_dir, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", 10000, 2);

  torch::Device device(torch::kCPU);
  if (torch::cuda::is_available()) {
    if (!quiet) std::printf("CUDA available, training on GPU\n");
    device = torch::Device(torch::kCUDA);
  }

  Net model;
  model->to(device);

  auto train_dataset = torch::data::datasets::MNIST(data_dir)
                           .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
                           .map(torch::data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  auto train_loader =
      torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(train_dataset), 64);

  auto test_dataset = torch::data::datasets::MNIST(data_dir, torch::data::datasets::MNIST::Mode::kTest)
                          .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
                          .map(torch::data::transforms::Stack<>());
  const size_t test_dataset_size = test_dataset.size().value();
  auto test_loader =
      torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(test_dataset), 1000);
  if (!quiet) std::printf("train set %zu examples (using %zu per epoch), test set %zu\n", train_dataset_size,
                          std::min(train_examples, train_dataset_size), test_dataset_size);

  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));

  bool finite = true;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    const float loss = train(model, device, *train_loader, optimizer, train_examples);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("epoch %d seconds %.6f loss %.4f\n", epoch, seconds, loss);
    finite = finite && std::isfinite(loss);
  }
  const double accuracy = test(model, device, *test_loader, test_dataset_size, quiet);
  std::printf("result test_accuracy %.4f\n", accuracy);
  if (own_dir) fs::remove_all(data_dir);

  if (!finite) { std::printf("FAIL: a training loss was not finite\n"); return 1; }
  if (!(accuracy > 0.9)) { std::printf("FAIL: test accuracy %.4f is not above 0.9\n", accuracy); return 1; }
  return 0;
}
