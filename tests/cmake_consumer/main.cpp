#include <kindle/kindle.h>

int main() {
  kindle::Tensor x = kindle::ones({2, 3}).requires_grad_();
  kindle::Tensor y = (x * 3).sum();
  y.backward();
  return x.grad().sum().item().to_double() == 18.0 ? 0 : 1;
}
