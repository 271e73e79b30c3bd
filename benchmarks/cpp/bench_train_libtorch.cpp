// Training-step benchmark, libtorch (the C++ library shipped in the PyTorch wheel): the same
// workloads, batches and optimizers as bench_train_kindle.cpp, with libtorch's C++ front end.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace nn = torch::nn;

namespace {
constexpr int kBatches = 16;

nn::Sequential make_model(const std::string& w) {
  if (w == "mlp")
    return nn::Sequential(nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 512), nn::ReLU(), nn::Linear(512, 10));
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 6, 5)), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Conv2d(nn::Conv2dOptions(6, 16, 5)), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                        nn::Linear(16 * 4 * 4, 120), nn::ReLU(), nn::Linear(120, 84), nn::ReLU(), nn::Linear(84, 10));
}
}  // namespace

int main(int argc, char** argv) {
  std::string workload = "mlp";
  int threads = 1, steps = 50, warmup = 10, reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--workload") workload = v;
    else if (a == "--threads") threads = std::stoi(v);
    else if (a == "--steps") steps = std::stoi(v);
    else if (a == "--warmup") warmup = std::stoi(v);
    else if (a == "--reps") reps = std::stoi(v);
  }
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  auto model = make_model(workload);
  std::vector<torch::Tensor> xs, ys;
  for (int b = 0; b < kBatches; ++b) {
    xs.push_back(workload == "mlp" ? torch::randn({128, 784}) : torch::randn({64, 1, 28, 28}));
    ys.push_back(torch::randint(0, 10, {workload == "mlp" ? 128 : 64}));
  }
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (workload == "mlp")
    opt = std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  else
    opt = std::make_unique<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(1e-3));
  nn::CrossEntropyLoss loss_fn;
  int i = 0;
  double last = 0;
  auto step = [&] {
    const auto& x = xs[size_t(i % kBatches)];
    const auto& y = ys[size_t(i % kBatches)];
    ++i;
    opt->zero_grad();
    auto loss = loss_fn(model->forward(x), y);
    loss.backward();
    opt->step();
    last = loss.item<double>();
  };
  for (int k = 0; k < warmup; ++k) step();
  std::vector<double> per_step;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < steps; ++k) step();
    per_step.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps);
  }
  std::sort(per_step.begin(), per_step.end());
  std::printf("%s %d %.4f %.4f %.4f\n", workload.c_str(), threads, per_step[per_step.size() / 2], per_step[0], last);
  return 0;
}
