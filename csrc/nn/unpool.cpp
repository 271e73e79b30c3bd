// max_unpool1d/2d/3d: each pooled value written back at its saved position in a zero image (a
// scatter, so the gradient flows back by gathering). 1-d and 2-d run as PyTorch's 2-d kernel
// does, 3-d as its 3-d one; the output size is the pooling's input size, or output_size within
// one stride of it.
#include "nn/common.h"

namespace kindle {

namespace {

Tensor max_unpool(const char* op, const Tensor& input, const Tensor& indices, IntArrayRef kernel_size,
                  IntArrayRef stride, IntArrayRef padding, OptionalIntArrayRef output_size, size_t n) {
  const char* kernel = n == 3 ? "max_unpool3d" : "max_unpool2d";
  KINDLE_CHECK_NOT_IMPLEMENTED(input.is_floating_point(), op, ": \"", kernel, "\" not implemented for '",
                               scalar_type_name(input.dtype()), "'");
  // PyTorch's 1-d form appends a unit dim and runs the 2-d kernel, which takes 3-d or 4-d input.
  const int64_t lo_dim = n == 3 ? 4 : 3, rank = input.dim() + (n == 1 ? 1 : 0);
  KINDLE_CHECK(rank == lo_dim || rank == lo_dim + 1, op, ": Input to max_unpooling", n == 3 ? 3 : 2, "d should be a ",
               lo_dim, "d or ", lo_dim + 1, "d Tensor, but got a tensor with ", rank, " dimensions.");
  KINDLE_CHECK(indices.dtype() == kInt64, op, ": elements in indices should be type int64 but got: ",
               scalar_type_name(indices.dtype()));
  DimVector k = nn_detail::expand_param(kernel_size, n, "kernel_size", op);
  DimVector s = stride.empty() ? k : nn_detail::expand_param(stride, n, "stride", op);
  DimVector p = nn_detail::expand_param(padding, n, "padding", op);
  const size_t lead_n = size_t(input.dim()) - n;
  DimVector out;
  for (size_t i = 0; i < n; ++i) out.push_back((input.size(int64_t(lead_n + i)) - 1) * s[i] - 2 * p[i] + k[i]);
  if (output_size) {
    IntArrayRef want = *output_size;
    if (want.size() == n + 2) want = want.slice(2);
    KINDLE_CHECK_VALUE(want.size() == n, op, ": output_size should be a sequence containing ", n, " or ", n + 2,
                       " elements, but it has a length of '", output_size->size(), "'");
    for (size_t i = 0; i < n; ++i) {
      int64_t lo = out[i] - s[i], hi = out[i] + s[i];
      KINDLE_CHECK_VALUE(lo < want[i] && want[i] < hi, op, ": invalid output_size \"", want, "\" (dim ", i,
                         " must be between ", lo, " and ", hi, ")");
    }
    out = DimVector(want);
  }
  KINDLE_CHECK(input.sizes() == indices.sizes(), op, ": Expected shape of indices to be same as that of the input "
               "tensor (", indices.sizes(), " vs ", input.sizes(), ")");
  DimVector lead(input.sizes().slice(0, lead_n)), flat(lead), shape(lead);
  int64_t plane = 1;
  for (int64_t v : out) plane *= v;
  flat.push_back(-1);
  Tensor flat_idx = indices.reshape(flat);
  if (flat_idx.numel() && !input.is_meta()) {
    int64_t lo = flat_idx.min().item<int64_t>(), hi = flat_idx.max().item<int64_t>();
    std::string sizes;
    for (int64_t v : out) sizes += (sizes.empty() ? "" : "x") + std::to_string(v);
    KINDLE_CHECK(lo >= 0 && hi < plane, op, ": Found an invalid max index: ", hi >= plane ? hi : lo,
                 " (output volumes are of size ", sizes, ")");
  }
  DimVector result_shape(lead);
  result_shape.push_back(plane);
  Tensor result = zeros(result_shape, input.dtype(), input.device())
                      .scatter(int64_t(lead_n), flat_idx, input.reshape(flat));
  for (int64_t v : out) shape.push_back(v);
  return result.reshape(shape);
}

}  // namespace

Tensor max_unpool1d(const Tensor& self, const Tensor& indices, IntArrayRef kernel_size, IntArrayRef stride,
                    IntArrayRef padding, OptionalIntArrayRef output_size) {
  return max_unpool("max_unpool1d", self, indices, kernel_size, stride, padding, output_size, 1);
}

Tensor max_unpool2d(const Tensor& self, const Tensor& indices, IntArrayRef kernel_size, IntArrayRef stride,
                    IntArrayRef padding, OptionalIntArrayRef output_size) {
  return max_unpool("max_unpool2d", self, indices, kernel_size, stride, padding, output_size, 2);
}

Tensor max_unpool3d(const Tensor& self, const Tensor& indices, IntArrayRef kernel_size, IntArrayRef stride,
                    IntArrayRef padding, OptionalIntArrayRef output_size) {
  return max_unpool("max_unpool3d", self, indices, kernel_size, stride, padding, output_size, 3);
}

}  // namespace kindle
