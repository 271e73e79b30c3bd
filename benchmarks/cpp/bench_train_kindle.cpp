// Training-step benchmark, Kindle's C++ front end: the MLP and LeNet workloads of
// benchmarks/bench_e2e.py (MLP 784-512-512-10, batch 128, SGD momentum 0.9; LeNet on 1x28x28,
// batch 64, Adam), timed step by step. bench_train_libtorch.cpp is the same program for libtorch;
// run_bench.py builds both and prints them side by side.
//
//   bench_train_kindle --workload mlp|lenet [--threads N] [--steps K] [--warmup W] [--reps R]
// prints one line: workload threads median_ms_per_step min_ms_per_step final_loss
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <kindle/frontend.h>

using namespace kindle;

namespace {

constexpr int kBatches = 16;  // distinct batches the steps cycle through (as bench_e2e.py)

nn::Sequential make_model(const std::string& w) {
  if (w == "mlp")
    return nn::Sequential(
        nn::Sequential{nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 512), nn::ReLU(), nn::Linear(512, 10)});
  return nn::Sequential(nn::Sequential{nn::Conv2d(1, 6, 5), nn::ReLU(), nn::MaxPool2d(2),
                                                 nn::Conv2d(6, 16, 5), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                                                 nn::Linear(16 * 4 * 4, 120), nn::ReLU(), nn::Linear(120, 84),
                                                 nn::ReLU(), nn::Linear(84, 10)});
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
  set_num_threads(threads);
  manual_seed(0);
  auto model = make_model(workload);
  std::vector<Tensor> xs, ys;
  for (int b = 0; b < kBatches; ++b) {
    xs.push_back(workload == "mlp" ? randn({128, 784}) : randn({64, 1, 28, 28}));
    ys.push_back(randint(0, 10, {workload == "mlp" ? 128 : 64}));
  }
  std::unique_ptr<optim::Optimizer> opt;
  if (workload == "mlp")
    opt = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  else
    opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(1e-3));
  nn::CrossEntropyLoss loss_fn;
  int i = 0;
  double last = 0;
  auto step = [&] {
    const Tensor& x = xs[size_t(i % kBatches)];
    const Tensor& y = ys[size_t(i % kBatches)];
    ++i;
    opt->zero_grad();
    Tensor loss = loss_fn(model(x), y);
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
