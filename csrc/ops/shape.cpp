// Views (they share storage and the version counter) and shape ops that copy.
#include <algorithm>
#include <numeric>

#include "native_ops.h"
#include "ops/kernels.h"
#include "ops/triangle_kernels.h"
#include "kindle/autograd.h"

namespace kindle {
namespace {

DimVector infer_size(IntArrayRef shape, int64_t numel, const char* op) {
  DimVector out(shape);
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      KINDLE_CHECK(infer < 0, op, ": only one dimension can be inferred");
      infer = int64_t(i);
    } else {
      KINDLE_CHECK(shape[i] >= 0, op, ": invalid shape dimension ", shape[i]);
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    KINDLE_CHECK(known != 0 && numel % known == 0, op, ": shape '", shape, "' is invalid for input of size ", numel);
    out[infer] = numel / known;
  } else {
    KINDLE_CHECK(known == numel, op, ": shape '", shape, "' is invalid for input of size ", numel);
  }
  return out;
}

// Strides that let `newshape` view memory laid out as (oldshape, oldstride), if any exist.
std::optional<DimVector> compute_stride(IntArrayRef oldshape, IntArrayRef oldstride, IntArrayRef newshape) {
  if (oldshape.empty()) return DimVector(newshape.size(), 1);
  int64_t numel = numel_of(oldshape);
  if (numel == 0 && oldshape == newshape) return DimVector(oldstride);
  DimVector newstride(newshape.size());
  if (numel == 0) {
    for (int64_t v = int64_t(newshape.size()) - 1; v >= 0; --v)
      newstride[v] = v + 1 == int64_t(newshape.size()) ? 1 : std::max<int64_t>(newshape[v + 1], 1) * newstride[v + 1];
    return newstride;
  }
  int64_t view_d = int64_t(newshape.size()) - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = int64_t(oldshape.size()) - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel *= oldshape[tensor_d];
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 && oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= newshape[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

Tensor view_of(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  Tensor v = make_view(self, sizes, strides, offset);
  return v;
}

}  // namespace

Tensor native_view(const Tensor& self, IntArrayRef size) {
  DimVector shape = infer_size(size, self.numel(), "view");
  auto st = compute_stride(self.sizes(), self.strides(), shape);
  KINDLE_CHECK(st.has_value(), "view: size ", shape, " is not compatible with input tensor's size ", self.sizes(),
               " and stride ", self.strides(), " (at least one dimension spans across two contiguous subspaces). "
               "Use .reshape(...) instead.");
  return view_of(self, shape, *st, self.storage_offset());
}

Tensor reshape(const Tensor& self, IntArrayRef shape) {
  DimVector sz = infer_size(shape, self.numel(), "reshape");
  if (compute_stride(self.sizes(), self.strides(), sz)) return view(self, sz);
  return contiguous(self).view(sz);
}

Tensor view_as(const Tensor& self, const Tensor& other) { return view(self, other.sizes()); }
Tensor reshape_as(const Tensor& self, const Tensor& other) { return reshape(self, other.sizes()); }

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return self.reshape({1});
  int64_t s = wrap_dim(start_dim, self.dim(), "flatten"), e = wrap_dim(end_dim, self.dim(), "flatten");
  KINDLE_CHECK(s <= e, "flatten: start_dim (", start_dim, ") cannot come after end_dim (", end_dim, ")");
  if (s == e) return self;
  DimVector shape;
  for (int64_t i = 0; i < s; ++i) shape.push_back(self.sizes()[i]);
  int64_t m = 1;
  for (int64_t i = s; i <= e; ++i) m *= self.sizes()[i];
  shape.push_back(m);
  for (int64_t i = e + 1; i < self.dim(); ++i) shape.push_back(self.sizes()[i]);
  return reshape(self, shape);
}

Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes) {
  int64_t d = wrap_dim(dim, self.dim(), "unflatten");
  KINDLE_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  DimVector inner = infer_size(sizes, self.sizes()[d], "unflatten");
  DimVector shape;
  for (int64_t i = 0; i < d; ++i) shape.push_back(self.sizes()[i]);
  for (int64_t s : inner) shape.push_back(s);
  for (int64_t i = d + 1; i < self.dim(); ++i) shape.push_back(self.sizes()[i]);
  return view(self, shape);
}

Tensor native_squeeze(const Tensor& self, OptionalIntArrayRef dim) {
  std::vector<bool> drop(size_t(self.dim()), false);
  if (!dim) {
    for (int64_t i = 0; i < self.dim(); ++i) drop[i] = self.sizes()[i] == 1;
  } else {
    for (int64_t d : *dim) {
      if (self.dim() == 0) { wrap_dim(d, 0, "squeeze"); continue; }
      int64_t w = wrap_dim(d, self.dim(), "squeeze");
      drop[w] = self.sizes()[w] == 1;
    }
  }
  DimVector sz, st;
  for (int64_t i = 0; i < self.dim(); ++i)
    if (!drop[i]) { sz.push_back(self.sizes()[i]); st.push_back(self.strides()[i]); }
  return view_of(self, sz, st, self.storage_offset());
}

Tensor native_unsqueeze(const Tensor& self, int64_t dim) {
  int64_t d = wrap_dim(dim, self.dim() + 1, "unsqueeze");
  DimVector sz(self.sizes()), st(self.strides());
  int64_t stride = d < self.dim() ? self.sizes()[d] * self.strides()[d] : 1;
  sz.insert(size_t(d), 1);
  st.insert(size_t(d), stride);
  return view_of(self, sz, st, self.storage_offset());
}

static const Tensor& set_geometry(const Tensor& self, const Tensor& v) {
  self.impl()->set_sizes_and_strides(v.sizes(), v.strides(), v.storage_offset());
  return self;
}
const Tensor& native_squeeze_(const Tensor& self, OptionalIntArrayRef dim) { return set_geometry(self, squeeze(self, dim)); }
const Tensor& native_unsqueeze_(const Tensor& self, int64_t dim) { return set_geometry(self, unsqueeze(self, dim)); }

Tensor native_permute(const Tensor& self, IntArrayRef dims) {
  KINDLE_CHECK(int64_t(dims.size()) == self.dim(), "permute: number of dims don't match in permute (got ",
               dims.size(), " dims for a tensor of shape ", self.sizes(), ")");
  DimVector sz(dims.size()), st(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], self.dim(), "permute");
    KINDLE_CHECK(!seen[d], "permute: repeated dim ", dims[i], " in dims ", dims);
    seen[d] = true;
    sz[i] = self.sizes()[d];
    st[i] = self.strides()[d];
  }
  return view_of(self, sz, st, self.storage_offset());
}

Tensor native_transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  if (self.dim() == 0) { wrap_dim(dim0, 0, "transpose"); wrap_dim(dim1, 0, "transpose"); return view_of(self, {}, {}, self.storage_offset()); }
  int64_t a = wrap_dim(dim0, self.dim(), "transpose"), b = wrap_dim(dim1, self.dim(), "transpose");
  DimVector sz(self.sizes()), st(self.strides());
  std::swap(sz[a], sz[b]);
  std::swap(st[a], st[b]);
  return view_of(self, sz, st, self.storage_offset());
}
Tensor swapaxes(const Tensor& self, int64_t a, int64_t b) { return transpose(self, a, b); }
Tensor swapdims(const Tensor& self, int64_t a, int64_t b) { return transpose(self, a, b); }
const Tensor& native_transpose_(const Tensor& self, int64_t a, int64_t b) { return set_geometry(self, transpose(self, a, b)); }

Tensor native_t(const Tensor& self) {
  KINDLE_CHECK(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  return self.dim() < 2 ? view(self, self.sizes()) : transpose(self, 0, 1);
}
const Tensor& native_t_(const Tensor& self) { return set_geometry(self, t(self)); }
Tensor adjoint(const Tensor& self) {
  KINDLE_CHECK(self.dim() >= 2, "adjoint: tensor must have at least 2 dimensions, got ", self.dim());
  return self.is_complex() ? transpose(self, -2, -1).conj() : transpose(self, -2, -1);  // conj copies
}

Tensor movedim(const Tensor& self, IntArrayRef source, IntArrayRef destination) {
  if (self.dim() == 0) {
    for (int64_t s : source) wrap_dim(s, 0, "movedim");
    for (int64_t d : destination) wrap_dim(d, 0, "movedim");
    return view(self, self.sizes());
  }
  KINDLE_CHECK(source.size() == destination.size(), "movedim: Invalid source or destination dims: source (",
               source, " dims) should contain the same number of dims as destination (", destination, " dims)");
  int64_t n = self.dim();
  DimVector order(n, -1);
  std::vector<bool> used(n, false);
  for (size_t i = 0; i < source.size(); ++i) {
    int64_t s = wrap_dim(source[i], n, "movedim"), d = wrap_dim(destination[i], n, "movedim");
    KINDLE_CHECK(order[d] == -1 && !used[s], "movedim: repeated dim in source ", source, " or destination ", destination);
    order[d] = s;
    used[s] = true;
  }
  int64_t next = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (order[i] != -1) continue;
    while (used[next]) ++next;
    order[i] = next;
    used[next] = true;
  }
  return permute(self, order);
}
Tensor moveaxis(const Tensor& self, IntArrayRef s, IntArrayRef d) { return movedim(self, s, d); }

Tensor native_expand(const Tensor& self, IntArrayRef size) {
  KINDLE_CHECK(int64_t(size.size()) >= self.dim(), "expand: the number of sizes provided (", size.size(),
               ") must be greater or equal to the number of dimensions in the tensor (", self.dim(), ")");
  int64_t n = int64_t(size.size()), off = n - self.dim();
  DimVector sz(n), st(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    if (i < off) {
      KINDLE_CHECK(size[i] >= 0, "expand: the expanded size of the tensor (", size[i],
                   ") isn't allowed in a leading, non-existing dimension ", i);
      sz[i] = size[i];
      st[i] = 0;
      continue;
    }
    int64_t cur = self.sizes()[i - off];
    int64_t want = size[i] == -1 ? cur : size[i];
    KINDLE_CHECK(cur == want || cur == 1, "expand: the expanded size of the tensor (", want,
                 ") must match the existing size (", cur, ") at non-singleton dimension ", i,
                 ".  Target sizes: ", size, ".  Tensor sizes: ", self.sizes());
    sz[i] = want;
    st[i] = cur == want ? self.strides()[i - off] : 0;
  }
  return view_of(self, sz, st, self.storage_offset());
}
Tensor expand_as(const Tensor& self, const Tensor& other) { return expand(self, other.sizes()); }
Tensor broadcast_to(const Tensor& self, IntArrayRef size) { return expand(self, size); }
std::vector<Tensor> broadcast_tensors(TensorList tensors) {
  if (tensors.size() == 1) return {view(tensors[0], tensors[0].sizes())};
  DimVector shape;
  for (const Tensor& t : tensors) shape = broadcast_shapes(shape, t.sizes(), "broadcast_tensors");
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) out.push_back(expand(t, shape));
  return out;
}

Tensor native_as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset) {
  KINDLE_CHECK(size.size() == stride.size(), "as_strided: mismatch in length of strides and shape");
  int64_t off = storage_offset.value_or(self.storage_offset());
  check_view_in_storage(*self.impl()->storage(), self.element_size(), size, stride, off, "as_strided");
  return view_of(self, size, stride, off);
}

Tensor native_select(const Tensor& self, int64_t dim, int64_t index) {
  KINDLE_CHECK_INDEX(self.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  int64_t d = wrap_dim(dim, self.dim(), "select");
  int64_t n = self.sizes()[d];
  KINDLE_CHECK_INDEX(index >= -n && index < n, "select(): index ", index, " out of range for tensor of size ",
                     self.sizes(), " at dimension ", d);
  if (index < 0) index += n;
  DimVector sz(self.sizes()), st(self.strides());
  sz.erase(size_t(d));
  st.erase(size_t(d));
  return view_of(self, sz, st, self.storage_offset() + index * self.strides()[d]);
}

Tensor native_slice(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  int64_t d = wrap_dim(dim, self.dim(), "slice");
  KINDLE_CHECK_VALUE(step > 0, "slice step must be positive, got ", step);
  int64_t n = self.sizes()[d];
  int64_t s = start.value_or(0), e = end.value_or(n);
  if (s < 0) s += n;
  if (e < 0) e += n;
  s = std::clamp<int64_t>(s, 0, n);
  e = std::clamp<int64_t>(e, s, n);
  DimVector sz(self.sizes()), st(self.strides());
  sz[d] = (e - s + step - 1) / step;
  st[d] *= step;
  return view_of(self, sz, st, self.storage_offset() + s * self.strides()[d]);
}

Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  KINDLE_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  int64_t d = wrap_dim(dim, self.dim(), "narrow");
  int64_t n = self.sizes()[d];
  if (start < 0) start += n;
  KINDLE_CHECK_INDEX(start >= 0 && start <= n, "narrow: start (", start, ") out of range for dimension ", d, " of size ", n);
  KINDLE_CHECK(length >= 0 && start + length <= n, "narrow: start (", start, ") + length (", length,
               ") exceeds dimension size (", n, ").");
  return slice(self, d, start, start + length, 1);
}

std::vector<Tensor> native_split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  int64_t d = wrap_dim(dim, self.dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    KINDLE_CHECK(s >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=", split_sizes);
    total += s;
  }
  KINDLE_CHECK(total == self.sizes()[d], "split_with_sizes expects split_sizes to sum exactly to ", self.sizes()[d],
               " (input tensor's size at dimension ", d, "), but got split_sizes=", split_sizes);
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : split_sizes) { out.push_back(narrow(self, d, start, s)); start += s; }
  return out;
}

std::vector<Tensor> native_split(const Tensor& self, IntArrayRef split_size_or_sections, int64_t dim) {
  if (split_size_or_sections.size() != 1) return split_with_sizes(self, split_size_or_sections, dim);
  int64_t d = wrap_dim(dim, self.dim(), "split");
  int64_t size = split_size_or_sections[0], n = self.sizes()[d];
  KINDLE_CHECK(size > 0 || (size == 0 && n == 0), "split expects split_size be non-negative, but got split_size=", size);
  std::vector<Tensor> out;
  if (n == 0) { out.push_back(self.detach()); return out; }
  for (int64_t s = 0; s < n; s += size) out.push_back(narrow(self, d, s, std::min(size, n - s)));
  return out;
}

std::vector<Tensor> native_chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  KINDLE_CHECK(self.dim() > 0, "chunk expects at least a 1-dimensional tensor");
  KINDLE_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  int64_t d = wrap_dim(dim, self.dim(), "chunk");
  int64_t n = self.sizes()[d];
  if (n == 0) return std::vector<Tensor>(size_t(chunks), narrow(self, d, 0, 0));
  int64_t size = (n + chunks - 1) / chunks;
  return split(self, {size}, d);
}

std::vector<Tensor> native_unbind(const Tensor& self, int64_t dim) {
  KINDLE_CHECK_INDEX(self.dim() > 0, "unbind: Dimension specified as ", dim, " but tensor has no dimensions");
  int64_t d = wrap_dim(dim, self.dim(), "unbind");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < self.sizes()[d]; ++i) out.push_back(select(self, d, i));
  return out;
}

Tensor native_cat(TensorList tensors, int64_t dim) {
  KINDLE_CHECK_VALUE(!tensors.empty(), "cat(): expected a non-empty list of Tensors");
  // 1-d empty tensors are skipped, as in PyTorch (legacy behaviour).
  const Tensor* ref = nullptr;
  for (const Tensor& t : tensors) if (!(t.dim() == 1 && t.numel() == 0)) { ref = &t; break; }
  DType dt = result_type(tensors);
  if (!ref) return empty_tensor({0}, dt, tensors[0].device());
  KINDLE_CHECK(ref->dim() > 0, "cat(): zero-dimensional tensor cannot be concatenated");
  int64_t d = wrap_dim(dim, ref->dim(), "cat");
  DimVector shape(ref->sizes());
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.dim() == 1 && t.numel() == 0) continue;
    KINDLE_CHECK(t.dim() == ref->dim(), "cat(): tensors must have same number of dimensions: got ", ref->dim(),
                 " and ", t.dim());
    for (int64_t k = 0; k < t.dim(); ++k)
      KINDLE_CHECK(k == d || t.sizes()[k] == shape[k], "cat(): sizes of tensors must match except in dimension ", d,
                   ". Expected size ", shape[k], " but got size ", t.sizes()[k], " for tensor number ", i, " in the list.");
    total += t.sizes()[d];
  }
  shape[d] = total;
  Tensor out = empty_tensor(shape, dt, ref->device());
  int64_t off = 0;
  for (const Tensor& t : tensors) {
    if (t.dim() == 1 && t.numel() == 0) continue;
    narrow(out, d, off, t.sizes()[d]).copy_(t);
    off += t.sizes()[d];
  }
  return out;
}
Tensor concat(TensorList t, int64_t dim) { return cat(t, dim); }
Tensor concatenate(TensorList t, int64_t dim) { return cat(t, dim); }

Tensor native_stack(TensorList tensors, int64_t dim) {
  KINDLE_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    KINDLE_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack expects each tensor to be equal size, but got ",
                 tensors[0].sizes(), " at entry 0 and ", tensors[i].sizes(), " at entry ", i);
    parts.push_back(unsqueeze(tensors[i], d));
  }
  return cat(parts, d);
}
Tensor hstack(TensorList tensors) {
  KINDLE_CHECK(!tensors.empty(), "hstack expects a non-empty TensorList");
  std::vector<Tensor> p;
  for (const Tensor& t : tensors) p.push_back(t.dim() == 0 ? t.reshape({1}) : t);
  return cat(p, p[0].dim() == 1 ? 0 : 1);
}
Tensor vstack(TensorList tensors) {
  std::vector<Tensor> p;
  for (const Tensor& t : tensors) p.push_back(t.dim() < 2 ? t.reshape({1, t.numel()}) : t);
  return cat(p, 0);
}

Tensor repeat(const Tensor& self, IntArrayRef repeats) {
  KINDLE_CHECK(int64_t(repeats.size()) >= self.dim(), "repeat: number of repeat dims (", repeats.size(),
               ") can not be smaller than number of tensor dims (", self.dim(), ")");
  int64_t n = int64_t(repeats.size()), off = n - self.dim();
  DimVector padded(n, 1), inter, expanded, final_shape;
  for (int64_t i = 0; i < self.dim(); ++i) padded[off + i] = self.sizes()[i];
  for (int64_t i = 0; i < n; ++i) {
    KINDLE_CHECK(repeats[i] >= 0, "repeat: repeats can not be negative, got ", repeats);
    inter.push_back(1); inter.push_back(padded[i]);
    expanded.push_back(repeats[i]); expanded.push_back(padded[i]);
    final_shape.push_back(repeats[i] * padded[i]);
  }
  Tensor r = self.reshape(inter).expand(expanded).contiguous();
  // Repeats of all ones leave a contiguous view of self: repeat always returns new memory.
  if (r.impl()->storage() == self.impl()->storage()) r = r.clone();
  return r.view(final_shape);
}
Tensor tile(const Tensor& self, IntArrayRef dims) {
  DimVector r(dims);
  while (int64_t(r.size()) < self.dim()) r.insert(0, 1);
  return repeat(self, r);
}

Tensor native_flip(const Tensor& self, IntArrayRef dims) {
  DimVector st(self.strides());
  int64_t off = self.storage_offset();
  std::vector<bool> seen(size_t(std::max<int64_t>(self.dim(), 1)), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, self.dim(), "flip");
    KINDLE_CHECK(!seen[w], "flip: dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
    if (self.dim() == 0) continue;
    if (self.sizes()[w] > 0) off += (self.sizes()[w] - 1) * st[w];
    st[w] = -st[w];
  }
  // A negative-stride view is only ever read by the copy below; it never escapes.
  Tensor reversed = make_view(self, self.sizes(), st, off);
  Tensor out = empty_tensor(self.sizes(), self.dtype(), self.device());
  out.copy_(reversed);
  return out;
}
Tensor fliplr(const Tensor& self) {
  KINDLE_CHECK(self.dim() >= 2, "fliplr: input tensor must be >= 2-d, got ", self.dim());
  return flip(self, {1});
}
Tensor flipud(const Tensor& self) {
  KINDLE_CHECK(self.dim() >= 1, "flipud: input tensor must be >= 1-d, got ", self.dim());
  return flip(self, {0});
}

Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  if (self.dim() == 0) return self.clone();
  if (dims.empty()) {
    KINDLE_CHECK(shifts.size() == 1, "roll: shifts and dims must align when dims is empty (shifts: ", shifts, ")");
    return roll(self.flatten(), shifts, {0}).view(self.sizes());
  }
  KINDLE_CHECK(shifts.size() == dims.size(), "roll: shifts and dimensions must align. shifts: ", shifts.size(),
               ", dims: ", dims.size());
  Tensor out = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], self.dim(), "roll");
    int64_t n = self.sizes()[d];
    if (n == 0) continue;
    int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) { if (out.is_same(self)) out = self.clone(); continue; }
    out = cat({narrow(out, d, n - s, s), narrow(out, d, 0, n - s)}, d);
  }
  return out.is_same(self) ? self.clone() : out;
}

static void check_triangle(const Tensor& self, const char* op) {
  KINDLE_CHECK(self.dim() >= 2, op, ": input tensor must have at least 2 dimensions, got ", self.dim());
}
// The mask and a where: for devices without a triangle kernel.
static Tensor triangle_by_mask(const Tensor& self, int64_t diagonal, bool lower) {
  int64_t r = self.size(-2), c = self.size(-1);
  Tensor rows = arange(0, r, 1, kInt64, self.device()).unsqueeze(1);
  Tensor cols = arange(0, c, 1, kInt64, self.device()).unsqueeze(0);
  Tensor diff = sub(cols, rows);
  Tensor mask = lower ? le(diff, scalar_to_tensor(diagonal)) : ge(diff, scalar_to_tensor(diagonal));
  return where(mask, self, scalar_tensor_of(0, self.dtype()));
}
static Tensor triangle(const Tensor& self, int64_t diagonal, bool lower, const char* op) {
  check_triangle(self, op);
  if (!triangle_stub.has(self.device())) return triangle_by_mask(self, diagonal, lower);
  Tensor src = self.contiguous();
  Tensor out = empty_tensor(self.sizes(), self.dtype(), self.device());
  if (out.numel()) triangle_stub[self.device()](src, out, diagonal, lower);
  return out;
}
static const Tensor& triangle_(const Tensor& self, int64_t diagonal, bool lower, const char* op) {
  check_triangle(self, op);
  if (self.is_contiguous() && triangle_stub.has(self.device())) {
    if (self.numel()) triangle_stub[self.device()](self, self, diagonal, lower);
    return self;
  }
  return self.copy_(triangle(self, diagonal, lower, op));
}
Tensor native_tril(const Tensor& self, int64_t diagonal) { return triangle(self, diagonal, true, "tril"); }
Tensor native_triu(const Tensor& self, int64_t diagonal) { return triangle(self, diagonal, false, "triu"); }
const Tensor& native_tril_(const Tensor& self, int64_t diagonal) { return triangle_(self, diagonal, true, "tril_"); }
const Tensor& native_triu_(const Tensor& self, int64_t diagonal) { return triangle_(self, diagonal, false, "triu_"); }

Tensor native_diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  int64_t a = wrap_dim(dim1, self.dim(), "diagonal"), b = wrap_dim(dim2, self.dim(), "diagonal");
  KINDLE_CHECK(a != b, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  int64_t off = self.storage_offset(), len;
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(self.sizes()[a], self.sizes()[b] - offset), 0);
    if (len > 0) off += offset * self.strides()[b];
  } else {
    len = std::max<int64_t>(std::min(self.sizes()[a] + offset, self.sizes()[b]), 0);
    if (len > 0) off -= offset * self.strides()[a];
  }
  DimVector sz, st;
  for (int64_t i = 0; i < self.dim(); ++i)
    if (i != a && i != b) { sz.push_back(self.sizes()[i]); st.push_back(self.strides()[i]); }
  sz.push_back(len);
  st.push_back(self.strides()[a] + self.strides()[b]);
  return view_of(self, sz, st, off);
}

Tensor diag_embed(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  int64_t nd = self.dim() + 1;
  int64_t a = wrap_dim(dim1, nd, "diag_embed"), b = wrap_dim(dim2, nd, "diag_embed");
  int64_t n = self.size(-1) + std::abs(offset);
  DimVector shape(self.sizes());
  shape.pop_back();
  int64_t lo = std::min(a, b), hi = std::max(a, b);
  shape.insert(size_t(lo), n);
  shape.insert(size_t(hi), n);
  Tensor out = zeros(shape, self.dtype(), self.device());
  diagonal(out, offset, a, b).copy_(self);
  return out;
}

Tensor diag(const Tensor& self, int64_t d) {
  KINDLE_CHECK(self.dim() == 1 || self.dim() == 2, "diag(): Supports 1D or 2D tensors. Got ", self.dim(), "D");
  if (self.dim() == 2) return diagonal(self, d, 0, 1).clone();
  int64_t n = self.numel() + std::abs(d);
  Tensor out = zeros({n, n}, self.dtype(), self.device());
  diagonal(out, d, 0, 1).copy_(self);
  return out;
}

Tensor native_unfold(const Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  int64_t d = wrap_dim(dimension, std::max<int64_t>(self.dim(), 1), "unfold");  // a 0-d tensor has dim 0
  int64_t n = self.dim() == 0 ? 1 : self.sizes()[d];
  KINDLE_CHECK(size >= 0, "unfold: size is ", size, " but must be >= 0");
  KINDLE_CHECK(size <= n, "unfold: maximum size for tensor at dimension ", d, " is ", n, " but size is ", size);
  KINDLE_CHECK(step > 0, "unfold: step is ", step, " but must be > 0");
  DimVector sz(self.sizes()), st(self.strides());
  if (self.dim() == 0) { sz.push_back(size); st.push_back(1); return view_of(self, sz, st, self.storage_offset()); }
  sz[d] = (n - size) / step + 1;
  st[d] = self.strides()[d] * step;
  sz.push_back(size);
  st.push_back(self.strides()[d]);
  return view_of(self, sz, st, self.storage_offset());
}

Tensor view_dtype(const Tensor& self, DType dtype) {
  KINDLE_CHECK(!(self.requires_grad() && autograd::GradMode::is_enabled() && dtype != self.dtype()),
               "view(dtype): viewing a tensor that requires grad as ", dtype_name(dtype), " is not differentiable; detach() it first");
  const int64_t from = int64_t(itemsize(self.dtype())), to = int64_t(itemsize(dtype));
  if (from == to) {
    return Tensor(intrusive_ptr<TensorImpl>::make(self.impl()->storage(), dtype, self.sizes(), self.strides(),
                                                  self.storage_offset()));
  }
  const int64_t d = self.dim();
  KINDLE_CHECK(d > 0, "view(dtype): self must have at least 1 dimension to view ", dtype_name(self.dtype()), " as ",
               dtype_name(dtype), " (element sizes ", from, " and ", to, " differ)");
  KINDLE_CHECK(self.stride(-1) == 1, "view(dtype): self.stride(-1) must be 1 to view ", dtype_name(self.dtype()),
               " as ", dtype_name(dtype), " (element sizes ", from, " and ", to, " differ), but got ", self.stride(-1));
  DimVector sizes(self.sizes()), strides(self.strides());
  int64_t offset = self.storage_offset();
  if (from > to) {  // each element becomes several
    const int64_t r = from / to;
    sizes[d - 1] *= r;
    for (int64_t i = 0; i < d - 1; ++i) strides[i] *= r;
    offset *= r;
  } else {
    const int64_t r = to / from;
    KINDLE_CHECK(sizes[d - 1] % r == 0, "view(dtype): self.size(-1) must be divisible by ", r, " to view ",
                 dtype_name(self.dtype()), " as ", dtype_name(dtype), ", but got ", sizes[d - 1]);
    KINDLE_CHECK(offset % r == 0, "view(dtype): self.storage_offset() must be divisible by ", r, " to view ",
                 dtype_name(self.dtype()), " as ", dtype_name(dtype), ", but got ", offset);
    for (int64_t i = 0; i < d - 1; ++i)
      KINDLE_CHECK(strides[i] % r == 0, "view(dtype): self.stride(", i, ") must be divisible by ", r, " to view ",
                   dtype_name(self.dtype()), " as ", dtype_name(dtype), ", but got ", strides[i]);
    sizes[d - 1] /= r;
    for (int64_t i = 0; i < d - 1; ++i) strides[i] /= r;
    offset /= r;
  }
  return Tensor(intrusive_ptr<TensorImpl>::make(self.impl()->storage(), dtype, sizes, strides, offset));
}

}  // namespace kindle
