// Polynomial regression in the style of libtorch's regression example: fit
// y = w1 x + w2 x^2 + w3 x^3 + w4 x^4 + b with a single torch::nn::Linear on features
// [x, x^2, x^3, x^4], drawing a fresh random batch every step, until the loss is below 1e-3.
// Before that, a few tensor and autograd basics are checked the way the tutorials show them.
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

constexpr int64_t kDegree = 4;

// Builds the feature matrix [x, x^2, x^3, x^4] from a vector of samples.
torch::Tensor make_features(torch::Tensor x) {
  x = x.unsqueeze(1);
  std::vector<torch::Tensor> xs;
  for (int64_t i = 1; i <= kDegree; ++i) xs.push_back(x.pow(i));
  return torch::cat(xs, 1);
}

// The function to learn.
torch::Tensor f(torch::Tensor x, torch::Tensor w_target, torch::Tensor b_target) {
  return x.mm(w_target) + b_target.item();
}

std::string poly_desc(torch::Tensor w, torch::Tensor b) {
  auto size = w.size(0);
  std::ostringstream stream;
  stream << "y = ";
  for (int64_t i = 0; i < size; ++i) stream << w[i].item<float>() << " x^" << i + 1 << " + ";
  stream << b[0].item<float>();
  return stream.str();
}

std::pair<torch::Tensor, torch::Tensor> get_batch(torch::Tensor w_target, torch::Tensor b_target,
                                                  int64_t batch_size = 32) {
  auto random = torch::randn({batch_size});
  auto x = make_features(random);
  auto y = f(x, w_target, b_target);
  return std::make_pair(x, y);
}

// Tensor and autograd basics, each checked with AT_ASSERT.
void basics(bool quiet) {
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  torch::Tensor t = torch::from_blob(values.data(), {2, 3}).clone();
  AT_ASSERT(t.sum(0).equal(torch::tensor({5.0f, 7.0f, 9.0f})));
  AT_ASSERT(t[1][2].item<float>() == 6.0f);
  t += torch::ones({2, 3});
  AT_ASSERT((t + 1.0).sum().item<float>() == 33.0f);
  AT_ASSERT(t.pow(2)[0].equal(torch::tensor({4.0f, 9.0f, 16.0f})));

  auto options = torch::TensorOptions().dtype(torch::kFloat32).requires_grad(true);
  torch::Tensor w = torch::full({3}, 2.0, options);
  AT_ASSERT(w.requires_grad() && w.dtype() == torch::kFloat32);
  torch::Tensor z = torch::zeros({3}, w.options());
  AT_ASSERT(z.dtype() == w.dtype() && z.device() == w.device());
  torch::Tensor r = torch::randn(3);
  AT_ASSERT(r.dim() == 1 && r.size(0) == 3);
  (w * r).sum().backward();
  AT_ASSERT(torch::allclose(w.grad(), r));

  // The autograd tutorial: out = mean(3 (x + 2)^2) with x = ones(2, 2), d out / d x = 4.5.
  torch::Tensor x = torch::ones({2, 2}, torch::requires_grad());
  torch::Tensor y = x + 2;
  torch::Tensor out = (y * y * 3).mean();
  out.backward();
  AT_ASSERT(torch::allclose(x.grad(), torch::full({2, 2}, 4.5)));
  if (!quiet) std::cout << "d out / d x:\n" << x.grad() << "\n" << torch::str("out = ", out.item<float>()) << "\n";

  // One optimizer step equals the same step written by hand under NoGradGuard.
  torch::nn::Linear a(kDegree, 1), b(kDegree, 1);
  {
    torch::NoGradGuard no_grad;
    b->weight.copy_(a->weight);
    b->bias.copy_(a->bias);
  }
  torch::optim::SGD sgd(a->parameters(), torch::optim::SGDOptions(0.05));
  auto batch = get_batch(torch::randn({kDegree, 1}), torch::randn({1}));
  sgd.zero_grad();
  torch::mse_loss(a(batch.first), batch.second).backward();
  sgd.step();
  torch::mse_loss(b->forward(batch.first), batch.second).backward();
  {
    torch::NoGradGuard no_grad;
    for (auto& p : b->named_parameters()) {
      p.value() -= 0.05 * p.value().grad();
      p.value().grad().zero_();
    }
  }
  for (auto& p : a->named_parameters()) {
    AT_ASSERT(torch::allclose(p.value(), b->named_parameters()[p.key()], 1e-5, 1e-6));
    if (!quiet) std::cout << p.key() << " " << p.value().sizes() << "\n";
  }
}

int main(int argc, char** argv) {
  int epochs = 40, threads = 1;
  uint64_t seed = 0;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--epochs" && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--quiet") quiet = true;
    else { std::fprintf(stderr, "usage: regression [--epochs N] [--threads T] [--seed S] [--quiet]\n"); return 2; }
  }
  torch::manual_seed(seed);
  torch::set_num_threads(threads);

  basics(quiet);

  auto w_target = torch::tensor({0.5, 3.0, 2.4, -1.2}, torch::kFloat).view({kDegree, 1});
  auto b_target = torch::tensor({0.9}, torch::kFloat);

  torch::nn::Linear fc(w_target.size(0), 1);
  torch::optim::SGD optim(fc->parameters(), 0.1);
  const auto held_out = get_batch(w_target, b_target, 256);

  const int batches_per_epoch = 100;
  float loss = 0;
  int64_t batch_idx = 0;
  bool converged = false;
  for (int epoch = 1; epoch <= epochs && !converged; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < batches_per_epoch; ++i) {
      auto [batch_x, batch_y] = get_batch(w_target, b_target);
      ++batch_idx;
      optim.zero_grad();
      auto output = torch::smooth_l1_loss(fc(batch_x), batch_y);
      output.backward();
      optim.step();
      // Stop on the loss over a fixed held-out batch, which is less noisy than one small batch.
      torch::NoGradGuard no_grad;
      loss = torch::smooth_l1_loss(fc(held_out.first), held_out.second).item<float>();
      if (loss < 1e-3f) { converged = true; break; }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("epoch %d seconds %.6f loss %.6f\n", epoch, seconds, loss);
  }

  const double error = (fc->weight.view({-1}) - w_target.view({-1})).abs().max().item<double>() +
                       (fc->bias - b_target).abs().item<double>();
  if (!quiet) {
    std::cout << "Loss: " << loss << " after " << batch_idx << " batches\n";
    std::cout << "==> Learned function:\t" << poly_desc(fc->weight.view({-1}), fc->bias) << "\n";
    std::cout << "==> Actual function:\t" << poly_desc(w_target.view({-1}), b_target) << "\n";
  }
  std::printf("result weight_error %.4f\n", error);
  if (!converged) { std::printf("FAIL: the loss did not get below 1e-3 in %d epochs\n", epochs); return 1; }
  if (!(error < 0.3)) { std::printf("FAIL: learned coefficients are %.4f away from the target\n", error); return 1; }
  return 0;
}
