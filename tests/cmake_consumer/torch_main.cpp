// A libtorch-style program built through find_package(Kindle COMPONENTS torch_compat).
#include <torch/torch.h>

#include <iostream>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{nullptr};
  NetImpl() { fc = register_module("fc", torch::nn::Linear(3, 1)); }
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

int main() {
  torch::manual_seed(0);
  Net net;
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1));
  torch::Tensor x = torch::randn({8, 3}), y = x.sum(1, /*keepdim=*/true);
  double first = 0, last = 0;
  for (int i = 0; i < 50; ++i) {
    opt.zero_grad();
    torch::Tensor loss = torch::mse_loss(net(x), y);
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item<double>();
  }
  std::cout << "torch_compat consumer: loss " << first << " -> " << last << "\n";
  return last < first ? 0 : 1;
}
