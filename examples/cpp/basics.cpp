// A small tour of the C++ API: tensors, broadcasting, reductions and a matrix product.
#include <iostream>

#include <kindle/kindle.h>

int main() {
  using namespace kindle;
  manual_seed(0);
  Tensor x = arange(0, 6, 1, kFloat32).reshape({2, 3});
  Tensor w = randn({3, 4});
  Tensor y = relu(matmul(x, w) + ones({4}));
  std::cout << "x =\n" << x << "\n";
  std::cout << "relu(x @ w + 1).sum(1) = " << y.sum(IntArrayRef{1}) << "\n";
  std::cout << "softmax rows: " << softmax(x, 1) << "\n";
  return 0;
}
