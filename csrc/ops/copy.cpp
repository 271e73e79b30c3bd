// Copies, fills and dtype conversion.
#include "kindle/cuda.h"
#include "native_ops.h"
#include "ops/kernels.h"

namespace kindle {

namespace {

// src's values (broadcast to dst's shape, in dst's dtype) copied into dst on another device:
// the source made dense on its own device, the bytes moved, then written into dst's layout. A
// dst that is dense in the order of its strides (a transposed or permuted result) takes the bytes
// directly, both sides viewed in that order.
void copy_across_devices(const Tensor& dst_in, const Tensor& src_in, bool non_blocking) {
  if (dst_in.device().is_meta()) {  // nothing to write; the shapes must still broadcast
    (void)src_in.expand(dst_in.sizes());
    return;
  }
  DimVector perm = dims_by_stride(dst_in);
  Tensor dst = dst_in.permute(perm);
  Tensor s = src_in.expand(dst_in.sizes()).permute(perm).to(dst.dtype()).contiguous();
  if (dst.is_contiguous()) {
    copy_bytes(dst.raw_data_ptr(), dst.device(), s.raw_data_ptr(), s.device(), s.nbytes(), non_blocking);
    return;
  }
  Tensor staged = empty_tensor(dst.sizes(), dst.dtype(), dst.device());
  copy_bytes(staged.raw_data_ptr(), dst.device(), s.raw_data_ptr(), s.device(), s.nbytes(), non_blocking);
  dst.copy_(staged);
}

}  // namespace

Tensor native__to_device(const Tensor& self, std::optional<Device> device, bool non_blocking) {
  Device d = device.value_or(kCPU);
  if (d.is_cpu()) d = kCPU;  // cpu:0 is the CPU
  else if (d.is_cuda() && d.index() < 0) d.set_index(int8_t(cuda::current_device()));
  if (self.device() == d) return self;
  bool broadcast = false;  // (an expanded input's copy is contiguous, as torch's)
  for (int64_t i = 0; i < self.dim(); ++i) broadcast = broadcast || (self.stride(i) == 0 && self.size(i) > 1);
  // otherwise the input's layout (torch's preserve_format): dense in the order of its strides
  Tensor out = self.is_contiguous() || broadcast ? empty_tensor(self.sizes(), self.dtype(), d)
                                                 : empty_tensor_like_layout(self, self.dtype(), d);
  copy_across_devices(out, self, non_blocking);
  return out;
}

const Tensor& native_copy_(const Tensor& self, const Tensor& src) {
  if (self.is_same(src)) return self;
  if (self.device() != src.device() && !(src.dim() == 0 && src.device().is_cpu())) {
    // (a CPU scalar joins the device's own copy below, as in any elementwise op)
    KINDLE_CHECK(self.numel() == 0 || src.numel() != 0, "copy_: cannot copy an empty tensor into ", self.sizes());
    if (self.numel()) copy_across_devices(self, src, false);
    self.bump_version();
    return self;
  }
  TensorIterConfig cfg;
  cfg.add_output(self).add_input(src);
  cfg.promote_inputs = false;
  cfg.compute_dtype = self.dtype();
  TensorIter it = cfg.build("copy_");
  if (it.numel) copy_stub[it.device()](it);
  self.bump_version();
  return self;
}

const Tensor& native_fill_(const Tensor& self, const Scalar& value) {
  check_scalar_fits(value, self.dtype(), "fill_");
  TensorIterConfig cfg;
  cfg.add_output(self);
  cfg.compute_dtype = self.dtype();
  cfg.check_internal_overlap = false;  // every element gets the same value: aliasing is harmless
  TensorIter it = cfg.build("fill_");
  if (it.numel) fill_stub[it.device()](it, value);
  self.bump_version();
  return self;
}

const Tensor& native_fill_(const Tensor& self, const Tensor& value) {
  KINDLE_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
               " dimensions.");
  if (value.is_meta() && self.is_meta()) return self;  // nothing to write, nothing to read
  return fill_(self, value.to(self.dtype()).item());  // converted as a copy would, unchecked (PyTorch)
}

const Tensor& zero_(const Tensor& self) { return fill_(self, 0); }

Tensor native_clone(const Tensor& self) {
  // Keep the memory layout of a dense input (as PyTorch's preserve_format does).
  TensorIterConfig cfg;
  cfg.add_output(Tensor()).add_input(self);
  cfg.promote_inputs = false;
  cfg.compute_dtype = self.dtype();
  TensorIter it = cfg.build("clone");
  if (it.numel) copy_stub[it.device()](it);
  return it.output();
}

Tensor contiguous(const Tensor& self) {
  if (self.is_contiguous()) return self;
  Tensor out = empty_tensor(self.sizes(), self.dtype(), self.device());
  out.copy_(self);
  return out;
}

Tensor native_to(const Tensor& self, DType dtype, bool copy) {
  if (self.dtype() == dtype && !copy) return self;
  TensorIterConfig cfg;
  cfg.add_output(Tensor()).add_input(self);
  cfg.promote_inputs = false;
  cfg.compute_dtype = dtype;
  TensorIter it = cfg.build("to");
  if (it.numel) copy_stub[it.device()](it);
  return it.output();
}

Tensor detach(const Tensor& self) {
  return make_view(self, self.sizes(), self.strides(), self.storage_offset());
}

}  // namespace kindle

namespace kindle {

// Tensor.resize_: contiguous strides for the new shape over the same storage when it is big
// enough (the old elements keep their bytes), else over a larger one that starts with the old
// storage's bytes. A larger storage is this tensor's own: its other views keep the old one.
const Tensor& resize_(const Tensor& self, IntArrayRef size) {
  KINDLE_CHECK(!self.requires_grad(), "cannot resize variables that require grad");
  int64_t numel = checked_numel(size, "resize_");
  DimVector strides = contiguous_strides(size);
  size_t item = itemsize(self.dtype());
  size_t need = checked_storage_nbytes(size, strides, item, "resize_") + size_t(self.storage_offset()) * item;
  TensorImpl* impl = self.impl();
  const Storage& old = impl->storage();
  if (numel > 0 && need > old->nbytes()) {
    Tensor fresh = empty_tensor({int64_t(need)}, kUInt8, self.device());
    int64_t old_n = int64_t(old->nbytes());
    if (old_n > 0) {
      Tensor old_bytes(intrusive_ptr<TensorImpl>(new TensorImpl(old, kUInt8, {old_n}, {1}, 0)));
      fresh.narrow(0, 0, old_n).copy_(old_bytes);
    }
    TensorImpl grown(fresh.impl()->storage(), self.dtype(), size, strides, self.storage_offset());
    impl->set_data(grown);
  } else {
    impl->set_sizes_and_strides(size, strides, self.storage_offset());
  }
  impl->storage()->bump_version();
  return self;
}

}  // namespace kindle
