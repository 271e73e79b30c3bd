// Custom autograd functions the way the libtorch autograd tutorial writes them: LinearFunction
// (saves its inputs with save_for_backward) and MulConstant (keeps a non-tensor argument in
// saved_data). Their gradients are compared with the built-in ops, torch::autograd::grad is
// used for a gradient penalty, and a small network whose layers call LinearFunction::apply is
// trained on a synthetic classification problem.
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

constexpr double kPi = 3.14159265358979323846;

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;

// y = x W^T + b
class LinearFunction : public torch::autograd::Function<LinearFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor input, torch::Tensor weight,
                               torch::Tensor bias = torch::Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    auto output = input.mm(weight.t());
    if (bias.defined()) output += bias.unsqueeze(0).expand_as(output);
    return output;
  }

  static torch::autograd::tensor_list backward(AutogradContext* ctx, torch::autograd::tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto input = saved[0];
    auto weight = saved[1];
    auto bias = saved[2];

    auto grad_output = grad_outputs[0];
    auto grad_input = grad_output.mm(weight);
    auto grad_weight = grad_output.t().mm(input);
    auto grad_bias = torch::Tensor();
    if (bias.defined()) grad_bias = grad_output.sum(0);
    return {grad_input, grad_weight, grad_bias};
  }
};

// y = x * constant, with the constant kept in saved_data
class MulConstant : public torch::autograd::Function<MulConstant> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor tensor, double constant) {
    ctx->saved_data["constant"] = constant;
    return tensor * constant;
  }

  static torch::autograd::tensor_list backward(AutogradContext* ctx, torch::autograd::tensor_list grad_outputs) {
    // one gradient per forward argument: none for the double
    return {grad_outputs[0] * ctx->saved_data["constant"].toDouble(), torch::Tensor()};
  }
};

// A linear layer whose forward goes through the custom function.
struct CustomLinearImpl : torch::nn::Module {
  CustomLinearImpl(int64_t in_features, int64_t out_features) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
    weight = register_parameter("weight", torch::empty({out_features, in_features}).uniform_(-bound, bound));
    bias = register_parameter("bias", torch::zeros(out_features));
  }
  torch::Tensor forward(torch::Tensor x) { return LinearFunction::apply(x, weight, bias); }
  torch::Tensor weight, bias;
};
TORCH_MODULE(CustomLinear);

struct MLPImpl : torch::nn::Module {
  MLPImpl() : fc1(2, 32), fc2(32, 3) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::tanh(fc1(x));
    return MulConstant::apply(fc2(x), 2.0);
  }
  CustomLinear fc1, fc2;
};
TORCH_MODULE(MLP);

// Checks the custom functions against the built-in ops; returns false on a mismatch.
bool check_gradients(bool quiet) {
  bool ok = true;
  auto x = torch::randn({5, 3}, torch::kDouble).requires_grad_();
  auto weight = torch::randn({4, 3}, torch::kDouble).requires_grad_();
  auto bias = torch::randn({4}, torch::kDouble).requires_grad_();
  auto grad_out = torch::randn({5, 4}, torch::kDouble);

  Variable y = LinearFunction::apply(x, weight, bias);
  y.backward(grad_out);
  variable_list custom = {x.grad().clone(), weight.grad().clone(), bias.grad().clone()};
  x.grad().zero_();
  weight.grad().zero_();
  bias.grad().zero_();

  auto y_ref = torch::nn::functional::linear(x, weight, bias);
  ok = ok && torch::allclose(y, y_ref);
  y_ref.backward(grad_out);
  ok = ok && torch::allclose(custom[0], x.grad()) && torch::allclose(custom[1], weight.grad()) &&
       torch::allclose(custom[2], bias.grad());

  // Without a bias, and through torch::autograd::grad instead of backward().
  auto y2 = LinearFunction::apply(x, weight);
  variable_list g = torch::autograd::grad({y2.sum()}, {x, weight});
  ok = ok && torch::allclose(g[0], torch::ones({5, 4}, torch::kDouble).mm(weight)) &&
       torch::allclose(g[1], torch::ones({5, 4}, torch::kDouble).t().mm(x));

  // MulConstant: d(sum(3.5 x)) / dx = 3.5.
  auto a = torch::randn({4, 4}, torch::requires_grad());
  auto b = MulConstant::apply(a, 3.5);
  b.sum().backward();
  ok = ok && torch::allclose(a.grad(), torch::full({4, 4}, 3.5)) && torch::allclose(b, a * 3.5);

  // Gradient penalty: grad with create_graph, then backward through it.
  auto model = torch::nn::Linear(4, 3);
  auto input = torch::randn({3, 4}).requires_grad_(true);
  auto output = model(input);
  auto target = torch::randn({3, 3});
  auto loss = torch::nn::MSELoss()(output, target);
  auto grad_output = torch::ones_like(output);
  auto gradient = torch::autograd::grad({output}, {input}, /*grad_outputs=*/{grad_output},
                                        /*retain_graph=*/true, /*create_graph=*/true)[0];
  // Every row of d(sum output)/d input is the column sums of the weight.
  ok = ok && torch::allclose(gradient, model->weight.sum(0).unsqueeze(0).expand({3, 4}));
  auto gradient_penalty = torch::pow((gradient.norm(2, /*dim=*/1) - 1), 2).mean();
  auto combined_loss = loss + gradient_penalty;
  combined_loss.backward();
  ok = ok && model->weight.grad().defined() && input.grad().defined() &&
       std::isfinite(model->weight.grad().abs().sum().item<float>());
  if (!quiet) std::cout << "custom LinearFunction input gradient:\n" << custom[0] << "\n";
  return ok;
}

int main(int argc, char** argv) {
  int epochs = 30, threads = 1;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--epochs" && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--quiet") quiet = true;
    else { std::fprintf(stderr, "usage: custom_autograd [--epochs N] [--threads T] [--quiet]\n"); return 2; }
  }
  torch::manual_seed(0);
  torch::set_num_threads(threads);

  const bool gradients_ok = check_gradients(quiet);

  // Three classes: which of three angular sectors a point in the plane falls into.
  const int64_t n = 1536;
  auto points = torch::randn({n, 2});
  auto angle = torch::atan2(points.select(1, 1), points.select(1, 0)) + kPi;  // in [0, 2 pi]
  auto labels = (angle / (2 * kPi / 3)).floor().clamp(0, 2).to(torch::kLong);

  MLP model;
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  const int64_t batch = 64;
  double first_loss = 0, last_loss = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    auto order = torch::randperm(n);
    double sum = 0;
    for (int64_t start = 0; start < n; start += batch) {
      auto idx = order.slice(0, start, start + batch);
      optimizer.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(model(points.index_select(0, idx)), labels.index_select(0, idx));
      loss.backward();
      optimizer.step();
      sum += loss.item<double>();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double mean = sum / static_cast<double>(n / batch);
    std::printf("epoch %d seconds %.6f loss %.4f\n", epoch, seconds, mean);
    if (epoch == 1) first_loss = mean;
    last_loss = mean;
  }

  double accuracy;
  {
    torch::NoGradGuard no_grad;
    model->eval();
    accuracy = model(points).argmax(1).eq(labels).to(torch::kFloat).mean().item<double>();
  }
  if (!quiet) std::printf("gradients match the built-in ops: %d; loss %.4f -> %.4f; train accuracy %.4f\n",
                          gradients_ok, first_loss, last_loss, accuracy);
  std::printf("result final_loss %.4f\n", last_loss);
  if (!gradients_ok) { std::printf("FAIL: custom function gradients disagree with the built-in ops\n"); return 1; }
  if (!std::isfinite(last_loss) || !(last_loss < 0.5 * first_loss)) {
    std::printf("FAIL: the loss did not drop to half (%.4f -> %.4f)\n", first_loss, last_loss);
    return 1;
  }
  if (!(accuracy > 0.9)) { std::printf("FAIL: train accuracy %.4f is not above 0.9\n", accuracy); return 1; }
  return 0;
}
