// Activations of torch.nn.functional that are compositions of core ops.
#include "nn/common.h"

#include <charconv>

namespace kindle {

Tensor relu6(const Tensor& self) { return hardtanh(self, 0, 6); }

Tensor selu(const Tensor& self) { return elu(self, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946); }

Tensor celu(const Tensor& self, const Scalar& alpha) {
  double a = alpha.to_double();
  KINDLE_CHECK(a != 0, "celu: ZeroDivisionError: alpha cannot be 0 for CELU");
  return elu(self, a, 1, 1.0 / a);
}

Tensor softsign(const Tensor& self) { return self / (self.abs() + 1); }

Tensor tanhshrink(const Tensor& self) { return self - self.tanh(); }


// NaN stays NaN (times zero) with a zero gradient, as torch's kernels do.
Tensor hardshrink(const Tensor& self, const Scalar& lambd) {
  check_kernel_dtype(self.dtype(), "hardshrink_cpu", false, false);
  return where(self.abs() > lambd, self, self * 0);
}

Tensor softshrink(const Tensor& self, const Scalar& lambd) {
  check_kernel_dtype(self.dtype(), "softshrink_check", false, false);
  double l = lambd.to_double();
  if (l < 0) {
    char buf[32];  // the shortest round-trip digits, ".0" when integral: Python's float in torch's message
    std::string v(buf, std::to_chars(buf, buf + sizeof(buf), l).ptr);
    if (v.find_first_of(".en") == std::string::npos) v += ".0";
    throw Error("softshrink: lambda must be greater or equal to 0, but found to be " + v + ".");
  }
  return where(self.abs() > lambd, self - self.sign() * lambd, self * 0);
}

Tensor rrelu(const Tensor& self, double lower, double upper, bool training, const std::optional<Generator>& generator) {
  KINDLE_CHECK(lower <= upper, "rrelu: Lower bound should be less than or equal to the upper bound");
  if (!training) return leaky_relu(self, (lower + upper) / 2);
  KINDLE_CHECK_NOT_IMPLEMENTED(self.is_floating_point(), "rrelu: \"rrelu_with_noise\" not implemented for '",
                               scalar_type_name(self.dtype()), "'");
  Tensor negative = (self <= 0).contiguous().reshape({-1});
  Tensor slopes = empty({negative.sum().item<int64_t>()}, kFloat64).uniform_(lower, upper, generator);
  Tensor noise = ones({self.numel()}, self.dtype(), self.device()).masked_scatter(negative, slopes.to(self.dtype()));
  return self * noise.reshape(self.sizes());
}

Tensor softmin(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return softmax(dtype ? -self.to(*dtype) : -self, dim);
}

Tensor glu(const Tensor& self, int64_t dim) {
  check_kernel_dtype(self.dtype(), "glu_cpu", true, true);  // no complex kernel
  check_kernel_dtype(self.dtype(), "glu_cpu", false, false);
  KINDLE_CHECK(self.dim() > 0, "glu: glu does not support scalars because halving size must be even");
  int64_t d = wrap_dim(dim, self.dim(), "glu");
  KINDLE_CHECK(self.size(d) % 2 == 0, "glu: Halving dimension must be even, but dimension ", d, " is size ",
               self.size(d));
  int64_t h = self.size(d) / 2;
  return self.narrow(d, 0, h) * self.narrow(d, h, h).sigmoid();
}

Tensor prelu(const Tensor& self, const Tensor& weight) {
  check_kernel_dtype(self.dtype(), "prelu_cpu", false, false);
  int64_t channels = self.dim() >= 2 ? self.size(1) : 1;
  KINDLE_CHECK(weight.numel() == 1 || weight.numel() == channels, "prelu: Mismatch of parameter numbers and input "
               "channel size. Found parameter numbers = ", weight.numel(), " and channel size = ", channels, ".");
  Tensor w = weight.numel() == 1 ? weight.reshape({}) : weight;
  if (self.dim() >= 2) {
    DimVector shape(size_t(self.dim()), 1);
    shape[1] = weight.numel();
    w = weight.reshape(shape);
  }
  return where(self > 0, self, w * self);
}

}  // namespace kindle
