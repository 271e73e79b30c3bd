// A data pipeline the way the tutorials write one: a custom Dataset of synthetic 3x16x16
// images (four classes: a coloured square in one of the four quadrants), Stack-ed by a
// multi-worker DataLoader with a RandomSampler, a Sequential CNN with Functional layers,
// functional dropout, Adam with two parameter groups under a StepLR schedule, and a
// checkpoint of the model and the optimizer restored into fresh objects.
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace F = torch::nn::functional;

constexpr int64_t kNumClasses = 4;

class CustomDataset : public torch::data::datasets::Dataset<CustomDataset> {
 public:
  explicit CustomDataset(int64_t count) {
    images_ = torch::randn({count, 3, 16, 16}) * 0.7;
    labels_ = torch::randint(kNumClasses, {count}, torch::kLong);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t label = labels_[i].item<int64_t>();
      const int64_t row = (label / 2) * 8 + torch::randint(0, 3, {1}).item<int64_t>();
      const int64_t col = (label % 2) * 8 + torch::randint(0, 3, {1}).item<int64_t>();
      // the square is red, green or blue by class; class 3 is red + blue
      const int64_t channel = label % 3;
      images_[i][channel].slice(0, row, row + 5).slice(1, col, col + 5) += 1.0;
      if (label == 3) images_[i][2].slice(0, row, row + 5).slice(1, col, col + 5) += 1.0;
    }
  }

  torch::data::Example<> get(size_t index) override {
    return {images_[static_cast<int64_t>(index)], labels_[static_cast<int64_t>(index)]};
  }

  torch::optional<size_t> size() const override { return static_cast<size_t>(images_.size(0)); }

 private:
  torch::Tensor images_, labels_;
};

struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl() {
    features = register_module(
        "features",
        torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)),
                              torch::nn::BatchNorm2d(8),
                              torch::nn::Functional(torch::relu),
                              torch::nn::Functional(torch::max_pool2d, 2, 2, 0, 1, false),  // 16 -> 8
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 3).padding(1)),
                              torch::nn::BatchNorm2d(16),
                              torch::nn::Functional(torch::relu),
                              torch::nn::Functional(torch::max_pool2d, 2, 2, 0, 1, false),  // 8 -> 4
                              torch::nn::Flatten()));
    head = register_module("head", torch::nn::Sequential(torch::nn::Linear(16 * 4 * 4, 32),
                                                         torch::nn::Functional(torch::relu),
                                                         torch::nn::Linear(32, kNumClasses)));
  }

  torch::Tensor forward(torch::Tensor x) {
    x = features->forward(x);
    x = F::dropout(x, F::DropoutFuncOptions().p(0.2).training(is_training()));
    return head->forward(x);
  }

  torch::nn::Sequential features{nullptr}, head{nullptr};
};
TORCH_MODULE(Classifier);

std::vector<torch::optim::OptimizerParamGroup> param_groups(Classifier& model) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(model->features->parameters(), std::make_unique<torch::optim::AdamOptions>(2e-3));
  groups.emplace_back(model->head->parameters(),
                      std::make_unique<torch::optim::AdamOptions>(torch::optim::AdamOptions(1e-3).weight_decay(1e-4)));
  return groups;
}

template <typename DataLoader>
double evaluate(Classifier& model, DataLoader& loader) {
  torch::NoGradGuard no_grad;
  model->eval();
  int64_t correct = 0, total = 0;
  for (auto& batch : loader) {
    correct += model->forward(batch.data).argmax(1).eq(batch.target).sum().template item<int64_t>();
    total += batch.data.size(0);
  }
  return static_cast<double>(correct) / static_cast<double>(total);
}

int main(int argc, char** argv) {
  int epochs = 4, threads = 1;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--epochs" && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--quiet") quiet = true;
    else { std::fprintf(stderr, "usage: pipeline [--epochs N] [--threads T] [--quiet]\n"); return 2; }
  }
  torch::manual_seed(0);
  torch::set_num_threads(threads);

  auto train_set = CustomDataset(2048).map(torch::data::transforms::Stack<>());
  auto test_set = CustomDataset(512).map(torch::data::transforms::Stack<>());
  const size_t train_size = train_set.size().value();
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      std::move(train_set), torch::data::DataLoaderOptions().batch_size(32).workers(2));
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(test_set), torch::data::DataLoaderOptions(128));

  Classifier model;
  torch::optim::Adam optimizer(param_groups(model), torch::optim::AdamOptions(1e-3));
  torch::optim::StepLR scheduler(optimizer, /*step_size=*/2, /*gamma=*/0.5);

  bool finite = true;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    model->train();
    double sum = 0;
    size_t batches = 0;
    for (auto& batch : *train_loader) {
      optimizer.zero_grad();
      auto loss = F::cross_entropy(model->forward(batch.data), batch.target);
      loss.backward();
      optimizer.step();
      sum += loss.item<double>();
      ++batches;
    }
    scheduler.step();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("epoch %d seconds %.6f loss %.4f\n", epoch, seconds, sum / static_cast<double>(batches));
    finite = finite && std::isfinite(sum);
  }
  const double accuracy = evaluate(model, *test_loader);
  if (!quiet) std::printf("trained on %zu examples; held-out accuracy %.4f\n", train_size, accuracy);

  // Checkpoint the model and the optimizer, restore both into fresh objects.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("pipeline_ckpt_" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count()));
  std::filesystem::create_directories(dir);
  const std::string model_path = (dir / "model.pt").string(), optimizer_path = (dir / "optimizer.pt").string();
  torch::save(model, model_path);
  torch::save(optimizer, optimizer_path);
  Classifier restored;
  torch::load(restored, model_path);
  torch::optim::Adam restored_optimizer(param_groups(restored), torch::optim::AdamOptions(1e-3));
  torch::load(restored_optimizer, optimizer_path);
  std::filesystem::remove_all(dir);

  const double restored_accuracy = evaluate(restored, *test_loader);
  const double lr = static_cast<torch::optim::AdamOptions&>(optimizer.param_groups()[1].options()).lr();
  const double restored_lr =
      static_cast<torch::optim::AdamOptions&>(restored_optimizer.param_groups()[1].options()).lr();

  // One identical step on both (eval mode, so no dropout): equal only if the Adam state came back.
  auto batch = *test_loader->begin();
  for (auto* opt : {&optimizer, &restored_optimizer}) opt->zero_grad();
  F::cross_entropy(model->forward(batch.data), batch.target).backward();
  F::cross_entropy(restored->forward(batch.data), batch.target).backward();
  optimizer.step();
  restored_optimizer.step();
  bool same_after_step = true;
  auto a = model->parameters(), b = restored->parameters();
  for (size_t i = 0; i < a.size(); ++i) same_after_step = same_after_step && torch::allclose(a[i], b[i]);

  if (!quiet)
    std::printf("restored: accuracy %.4f, head lr %.6g (trained %.6g), same after an Adam step: %d\n",
                restored_accuracy, restored_lr, lr, same_after_step);
  std::printf("result test_accuracy %.4f\n", accuracy);
  if (!finite) { std::printf("FAIL: a training loss was not finite\n"); return 1; }
  if (restored_accuracy != accuracy) { std::printf("FAIL: the restored model scores differently\n"); return 1; }
  // libtorch's StepLR decays on the calls that find step_count a positive multiple of step_size,
  // so after E calls (one per epoch) the rate is lr * gamma^((E - 1) / step_size).
  if (std::abs(restored_lr - lr) > 1e-12 || std::abs(lr - 1e-3 * std::pow(0.5, (epochs - 1) / 2)) > 1e-12) {
    std::printf("FAIL: learning rate %.6g after StepLR / %.6g after loading\n", lr, restored_lr);
    return 1;
  }
  if (!same_after_step) { std::printf("FAIL: the loaded optimizer did not restore the Adam state\n"); return 1; }
  if (!(accuracy > 0.9)) { std::printf("FAIL: held-out accuracy %.4f is not above 0.9\n", accuracy); return 1; }
  return 0;
}
