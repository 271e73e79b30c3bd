// Complex numbers: the views between complex and real tensors, construction from parts, and conj.
// conj copies: Kindle has no lazy conjugate bit. A bit would make conj O(1) but every kernel and
// every copy would have to honour it; conj is rare outside backward formulas, and a copy there
// costs one pass over memory (benchmarks/README.md measures it). So resolve_conj is the tensor
// itself and is_conj is always False.
#include <cmath>

#include "kindle/operators.h"
#include "native_ops.h"
#include "ops/kernels.h"

namespace kindle {
namespace {

Tensor retyped_view(const Tensor& self, DType dt, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  return Tensor(intrusive_ptr<TensorImpl>::make(self.impl()->storage(), dt, sizes, strides, offset));
}

}  // namespace

Tensor native_view_as_real(const Tensor& self) {
  KINDLE_CHECK(self.is_complex(), "view_as_real is only supported for complex tensors, got a tensor of dtype ",
               self.dtype());
  DimVector sizes(self.sizes()), strides;
  for (int64_t s : self.strides()) strides.push_back(2 * s);
  sizes.push_back(2);
  strides.push_back(1);
  return retyped_view(self, to_real_value_type(self.dtype()), sizes, strides, 2 * self.storage_offset());
}

Tensor native_view_as_complex(const Tensor& self) {
  DType dt = self.dtype();
  KINDLE_CHECK(dt == kFloat32 || dt == kFloat64, "view_as_complex is only supported for float and double tensors, "
               "but got a tensor of scalar type: ", scalar_type_name(dt));
  KINDLE_CHECK(self.dim() > 0, "view_as_complex: Input tensor must have one or more dimensions");
  KINDLE_CHECK(self.size(-1) == 2, "view_as_complex: Tensor must have a last dimension of size 2 (got shape ",
               self.sizes(), ")");
  KINDLE_CHECK(self.stride(-1) == 1, "view_as_complex: Tensor must have a last dimension with stride 1 (got strides ",
               self.strides(), ")");
  DimVector sizes, strides;
  for (int64_t i = 0; i + 1 < self.dim(); ++i) {
    KINDLE_CHECK(self.stride(i) % 2 == 0, "view_as_complex: Tensor must have a stride divisible by 2 for all but "
                 "last dimension (got strides ", self.strides(), ")");
    sizes.push_back(self.size(i));
    strides.push_back(self.stride(i) / 2);
  }
  KINDLE_CHECK(self.storage_offset() % 2 == 0, "view_as_complex: Tensor must have a storage_offset divisible by 2 "
               "(got ", self.storage_offset(), ")");
  return retyped_view(self, to_complex_type(dt), sizes, strides, self.storage_offset() / 2);
}

Tensor native_conj(const Tensor& self) {
  if (!self.is_complex()) return self;
  TensorIterConfig cfg;
  cfg.add_output(Tensor()).add_input(self);
  TensorIter it = cfg.build("conj");
  if (it.numel) unary_stub[it.device()](it, UnaryOp::Conj);
  return it.output();
}

Tensor conj_physical(const Tensor& self) { return self.is_complex() ? conj(self) : self.clone(); }
Tensor resolve_conj(const Tensor& self) { return self; }
Tensor resolve_neg(const Tensor& self) { return self; }

Tensor real(const Tensor& self) { return self.is_complex() ? view_as_real(self).select(-1, 0) : self; }

Tensor imag(const Tensor& self) {
  KINDLE_CHECK(self.is_complex(), "imag is not implemented for tensors with non-complex dtypes.");
  return view_as_real(self).select(-1, 1);
}

Tensor complex(const Tensor& real, const Tensor& imag) {
  KINDLE_CHECK(real.dtype() == imag.dtype(), "complex(): expected object of scalar type ", scalar_type_name(real.dtype()),
                    " but got scalar type ", scalar_type_name(imag.dtype()), " for second argument");
  KINDLE_CHECK(real.dtype() == kFloat32 || real.dtype() == kFloat64, "complex(): expected both inputs to be "
                    "Float or Double tensors but got ", scalar_type_name(real.dtype()), " and ",
                    scalar_type_name(imag.dtype()));
  std::vector<Tensor> parts = broadcast_tensors({real, imag});
  return view_as_complex(stack(parts, -1));
}

Tensor polar(const Tensor& abs, const Tensor& angle) {
  KINDLE_CHECK(abs.dtype() == angle.dtype(), "polar(): expected object of scalar type ", scalar_type_name(abs.dtype()),
                    " but got scalar type ", scalar_type_name(angle.dtype()), " for second argument");
  KINDLE_CHECK(abs.dtype() == kFloat32 || abs.dtype() == kFloat64, "polar(): expected both inputs to be Float or "
                    "Double tensors but got ", scalar_type_name(abs.dtype()), " and ", scalar_type_name(angle.dtype()));
  return complex(abs * cos(angle), abs * sin(angle));
}

Tensor angle(const Tensor& self) {
  if (self.is_complex()) return atan2(imag(self), real(self));
  // a real number's angle: pi for negatives, 0 otherwise, NaN kept; integers give the default float
  Tensor x = self.is_floating_point() ? self : self.to(default_dtype());
  Tensor pi = scalar_tensor_of(M_PI, x.dtype()), zero = scalar_tensor_of(0, x.dtype());
  return where(isnan(x), x, where(x < 0, pi, zero));
}

}  // namespace kindle
