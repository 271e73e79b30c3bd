// Trains an MLP and a small CNN with Kindle's C++ front end and prints their test accuracy.
//
//   python examples/cpp/export_digits.py digits/      # scikit-learn's 8x8 digits as IDX files
//   ./kindle_train_digits digits/                    # or a folder with MNIST's four IDX files
//
// Options: --epochs N (default 15), --min-accuracy A (exit status 1 if a model ends below it;
// default 0.95), --save DIR (writes mlp.safetensors and cnn.safetensors, loadable in Python with
// kindle.load), --workers N (DataLoader threads, default 2).
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <string>

#include <kindle/frontend.h>

using namespace kindle;

namespace {

struct MLP : nn::Module {
  nn::Flatten flatten = register_module("flatten", nn::Flatten());
  nn::Linear fc1{nullptr}, fc2{nullptr};
  nn::Dropout drop = register_module("drop", nn::Dropout(0.1));
  MLP(int64_t pixels, int64_t hidden, int64_t classes) {
    fc1 = register_module("fc1", nn::Linear(pixels, hidden));
    fc2 = register_module("fc2", nn::Linear(hidden, classes));
  }
  Tensor forward(const Tensor& x) override { return fc2(drop(relu(fc1(flatten(x))))); }
};

struct CNN : nn::Module {
  // A braced list: the layers are built, and draw their weights, in the order written.
  nn::Sequential features = register_module(
      "features", nn::Sequential{nn::Conv2d(nn::Conv2dOptions(1, 16, 3).padding(1)), nn::BatchNorm2d(16), nn::ReLU(),
                                 nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1)), nn::ReLU(),
                                 nn::MaxPool2d(2), nn::Flatten()});
  nn::Linear head{nullptr};
  CNN(int64_t height, int64_t width, int64_t classes) {
    head = register_module("head", nn::Linear(32 * (height / 4) * (width / 4), classes));
  }
  Tensor forward(const Tensor& x) override { return head(features(x)); }
};

// MNIST files, stacked into batches.
using Loader = data::DataLoader<data::datasets::MapDataset<data::MNIST, data::transforms::Stack<>>>;

double accuracy(nn::Module& model, Loader& loader) {
  autograd::NoGradGuard no_grad;
  model.eval();
  int64_t correct = 0, total = 0;
  for (auto& batch : loader) {
    Tensor pred = model(batch.data).argmax(1);
    correct += pred.eq(batch.target).sum().item<int64_t>();
    total += batch.target.size(0);
  }
  model.train();
  return double(correct) / double(total);
}

double train(const std::string& name, nn::Module& model, Loader& train_loader, Loader& test_loader, int epochs) {
  optim::Adam opt(model.parameters(), optim::AdamOptions(3e-3));
  optim::CosineAnnealingLR schedule(opt, epochs);
  nn::CrossEntropyLoss criterion;
  auto start = std::chrono::steady_clock::now();
  double acc = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    double loss_sum = 0;
    int64_t batches = 0;
    for (auto& batch : train_loader) {
      opt.zero_grad();
      Tensor loss = criterion(model(batch.data), batch.target);
      loss.backward();
      opt.step();
      loss_sum += loss.item<double>();
      ++batches;
    }
    schedule.step();
    acc = accuracy(model, test_loader);
    if (epoch == 1 || epoch == epochs || epoch % 5 == 0)
      std::cout << name << " epoch " << std::setw(2) << epoch << "  loss " << std::fixed << std::setprecision(4)
                << loss_sum / double(batches) << "  test accuracy " << std::setprecision(2) << 100 * acc << "%\n";
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << name << ": " << std::setprecision(2) << 100 * acc << "% test accuracy after " << epochs
            << " epochs (" << std::setprecision(1) << secs << " s)\n";
  return acc;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int epochs = 15, workers = 2;
  double min_accuracy = 0.95;
  std::string save_dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--epochs") epochs = std::stoi(next());
    else if (a == "--min-accuracy") min_accuracy = std::stod(next());
    else if (a == "--save") save_dir = next();
    else if (a == "--workers") workers = std::stoi(next());
    else if (a == "-h" || a == "--help") {
      std::cout << "usage: " << argv[0] << " DATA_DIR [--epochs N] [--min-accuracy A] [--save DIR] [--workers N]\n";
      return 0;
    } else dir = a;
  }
  if (dir.empty()) {
    std::cerr << "usage: " << argv[0] << " DATA_DIR (write one with: python examples/cpp/export_digits.py DIR)\n";
    return 2;
  }
  try {
    manual_seed(0);
    data::MNIST train_set(dir, data::MNIST::Mode::kTrain), test_set(dir, data::MNIST::Mode::kTest);
    int64_t h = train_set.images().size(2), w = train_set.images().size(3);
    std::cout << "data: " << *train_set.size() << " training and " << *test_set.size() << " test images of " << h
              << "x" << w << " pixels\n";
    Loader train_loader(train_set.map(data::transforms::Stack<>()),
                        data::DataLoaderOptions(32).shuffle(true).seed(0).num_workers(workers));
    Loader test_loader(test_set.map(data::transforms::Stack<>()), data::DataLoaderOptions(256));

    MLP mlp(h * w, 128, 10);
    CNN cnn(h, w, 10);
    double mlp_acc = train("MLP", mlp, train_loader, test_loader, epochs);
    double cnn_acc = train("CNN", cnn, train_loader, test_loader, epochs);
    if (!save_dir.empty()) {
      mlp.save(save_dir + "/mlp.safetensors");
      cnn.save(save_dir + "/cnn.safetensors");
      std::cout << "saved the models to " << save_dir << "\n";
    }
    if (mlp_acc < min_accuracy || cnn_acc < min_accuracy) {
      std::cerr << "accuracy below " << min_accuracy << "\n";
      return 1;
    }
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
