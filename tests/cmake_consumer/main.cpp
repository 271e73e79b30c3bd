// Uses the core (autograd) and the front end (nn, optim) of an installed Kindle.
#include <kindle/frontend.h>

#include <cstdio>

int main() {
  kindle::Tensor x = kindle::ones({2, 3}).requires_grad_();
  (x * 3).sum().backward();
  if (x.grad().sum().item().to_double() != 18.0) return 1;

  kindle::manual_seed(0);
  kindle::nn::Linear fc(4, 1);
  kindle::optim::SGD opt(fc->parameters(), kindle::optim::SGDOptions(0.1));
  kindle::Tensor in = kindle::randn({16, 4}), target = in.sum(kindle::IntArrayRef{1}, true);
  double first = 0, last = 0;
  for (int i = 0; i < 50; ++i) {
    opt.zero_grad();
    kindle::Tensor loss = kindle::mse_loss(fc(in), target);
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item().to_double();
  }
  std::printf("linear regression loss %.4g . %.4g\n", first, last);
  return last < first / 100 ? 0 : 1;
}
