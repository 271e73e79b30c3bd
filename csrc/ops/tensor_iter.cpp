#include "ops/tensor_iter.h"

#include <algorithm>

namespace kindle {

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    KINDLE_CHECK(da == db || da == 1 || db == 1, op, ": the size of tensor a (", da,
                 ") must match the size of tensor b (", db, ") at non-singleton dimension ", i,
                 " (shapes ", a, " and ", b, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {
enum Category { kNone = 0, kBoolCat, kIntCat, kFloatCat, kComplexCat };
int category(DType t) {
  return t == kBool ? kBoolCat : is_floating_point(t) ? kFloatCat : is_complex(t) ? kComplexCat : kIntCat;
}

struct ResultState {
  std::optional<DType> dim, zero, wrapped;
  static void update(std::optional<DType>& slot, DType t) { slot = slot ? promote_types(*slot, t) : t; }
  void add(const Tensor& t) {
    DType d = t.dtype();
    if (t.impl()->wrapped_number)
      update(wrapped, is_floating_point(d) ? default_dtype() : is_complex(d) ? to_complex_type(default_dtype()) : d);
    else if (t.dim() == 0) update(zero, d);
    else update(dim, d);
  }
  static std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
    if (!higher) return lower;
    if (!lower) return higher;
    int ch = category(*higher), cl = category(*lower);
    if (cl <= ch) return higher;
    // a float tensor with a complex number: the complex type of the tensor's precision
    // (bfloat16 has no complex type: torch takes complex64)
    if (ch == kFloatCat) {
      KINDLE_CHECK_NOT_IMPLEMENTED(*higher != kFloat16, "a ", *higher, " tensor with a complex "
                                   "number gives a complex32 (ComplexHalf) result, which Kindle does not support");
      return *higher == kBFloat16 ? kComplex64 : to_complex_type(*higher);
    }
    return promote_types(*higher, *lower);
  }
  DType result() const { return combine(dim, combine(zero, wrapped)).value_or(default_dtype()); }
};
}  // namespace

DType result_type(ArrayRef<Tensor> tensors) {
  ResultState st;
  for (const Tensor& t : tensors) st.add(t);
  return st.result();
}

bool can_cast(DType from, DType to) { return category(from) <= category(to); }

namespace {
// The bytes [begin, end) a tensor spans in its storage; dense when it touches each element once.
struct MemRange {
  int64_t begin, end;
  bool dense;
};
MemRange mem_range(const Tensor& t) {
  int64_t lo = t.storage_offset(), hi = lo, es = int64_t(t.element_size());
  for (int64_t d = 0; d < t.dim(); ++d) {
    int64_t span = (t.sizes()[d] - 1) * t.strides()[d];
    (span < 0 ? lo : hi) += span;
  }
  return {lo * es, (hi + 1) * es, hi - lo + 1 == t.numel()};
}
}  // namespace

TensorIter TensorIterConfig::build(const char* op) {
  TensorIter it;
  // 1. broadcast
  DimVector shape;
  for (int i = 0; i < n_in; ++i) shape = broadcast_shapes(shape, inputs[i].sizes(), op);
  for (int i = 0; i < n_out; ++i) {
    if (!outputs[i].defined()) continue;
    KINDLE_CHECK(IntArrayRef(outputs[i].sizes()) == IntArrayRef(shape) ||
                     broadcast_shapes(outputs[i].sizes(), shape, op) == DimVector(outputs[i].sizes()),
                 op, ": output with shape ", outputs[i].sizes(),
                 " doesn't match the broadcast shape ", shape);
    if (IntArrayRef(outputs[i].sizes()) != IntArrayRef(shape)) shape = DimVector(outputs[i].sizes());
  }
  if (check_internal_overlap)
    for (int i = 0; i < n_out; ++i) {
      if (!outputs[i].defined() || outputs[i].numel() == 0) continue;
      for (int64_t d = 0; d < outputs[i].dim(); ++d)
        KINDLE_CHECK(outputs[i].strides()[d] != 0 || outputs[i].sizes()[d] <= 1, op,
                     ": unsupported operation: more than one element of the written-to tensor refers to a single "
                     "memory location (shape ", outputs[i].sizes(), ", strides ", outputs[i].strides(),
                     "). Please clone() the tensor before performing the operation.");
    }
  // 2. dtypes
  DType common;
  if (compute_dtype) common = *compute_dtype;
  else {
    ResultState st;
    for (int i = 0; i < n_in; ++i)
      if (!(keep_input_dtype & (1u << i))) st.add(inputs[i]);
    common = n_in ? st.result() : (outputs[0].defined() ? outputs[0].dtype() : default_dtype());
    if (int_to_float && !is_floating_point(common) && !is_complex(common)) common = default_dtype();
  }
  it.common_dtype = common;
  // The device: an output's, else the first input's that is not a CPU scalar (a 0-d CPU tensor
  // joins a computation on another device, as in PyTorch).
  Device device = outputs[0].defined() ? outputs[0].device() : (n_in ? inputs[0].device() : kCPU);
  if (!outputs[0].defined())
    for (int i = 0; i < n_in; ++i)
      if (!(inputs[i].device().is_cpu() && inputs[i].dim() == 0)) {
        device = inputs[i].device();
        break;
      }
  for (int i = 0; i < n_in; ++i) {
    if (inputs[i].device() != device) {
      KINDLE_CHECK(inputs[i].dim() == 0 && inputs[i].device().is_cpu(), op,
                   ": expected all tensors to be on the same device, but found at least two devices, ", device,
                   " and ", inputs[i].device(), "!");
      inputs[i] = inputs[i]._to_device(device);  // the device's kernels read device memory
    }
    if (promote_inputs && !(keep_input_dtype & (1u << i)) && inputs[i].dtype() != common)
      inputs[i] = inputs[i].to(common);
  }
  // 3. dimension order: innermost first, by the strides of the first operand that decides
  int64_t nd = int64_t(shape.size());
  auto stride_of = [&](const Tensor& t, int64_t d) -> int64_t {
    int64_t off = nd - t.dim();
    if (d < off || t.sizes()[d - off] == 1) return 0;
    return t.strides()[d - off];
  };
  DimVector perm(nd);  // perm[0] is the innermost dim
  for (int64_t i = 0; i < nd; ++i) perm[i] = nd - 1 - i;
  auto inner_first = [&](int64_t a, int64_t b) -> int {  // 1: dim a inside dim b; -1: outside; 0: undecided
    auto decide = [&](const Tensor& t) -> int {
      int64_t sa = stride_of(t, a), sb = stride_of(t, b);
      if (sa == 0 || sb == 0 || sa == sb) return 0;
      return sa < sb ? 1 : -1;
    };
    for (int i = 0; i < n_out; ++i)
      if (outputs[i].defined()) if (int r = decide(outputs[i])) return r;
    for (int i = 0; i < n_in; ++i)
      if (int r = decide(inputs[i])) return r;
    return 0;
  };
  // Insertion sort that looks past undecided pairs (a size-1 or broadcast dim between two that
  // are ordered) and keeps the default order on ties, as PyTorch's TensorIterator; so a result
  // keeps a permuted input's memory order.
  for (int64_t i = 1; i < nd; ++i) {
    int64_t cur = i;
    for (int64_t j = i - 1; j >= 0; --j) {
      int r = inner_first(perm[cur], perm[j]);
      if (r > 0) {
        std::swap(perm[cur], perm[j]);
        cur = j;
      } else if (r < 0) {
        break;
      }
    }
  }
  // 4. allocate outputs with that memory order
  for (int i = 0; i < n_out; ++i) {
    if (outputs[i].defined()) {
      DType want = output_dtype.value_or(common);
      if (outputs[i].dtype() == want) continue;
      KINDLE_CHECK(can_cast(want, outputs[i].dtype()), op, ": result type ", want,
                   " can't be cast to the desired output type ", outputs[i].dtype());
      it.writeback_dst = outputs[i];
      outputs[i] = Tensor();
    }
    DimVector st(nd);
    int64_t s = 1;
    for (int64_t k = 0; k < nd; ++k) {  // wraps only for an empty shape, whose strides are never read
      st[perm[k]] = s;
      __builtin_mul_overflow(s, std::max<int64_t>(shape[perm[k]], 1), &s);
    }
    outputs[i] = empty_strided_tensor(shape, st, output_dtype.value_or(common), device);
    if (it.writeback_dst.defined()) {
      KINDLE_INTERNAL_ASSERT(n_out == 1);
      outputs[i] = empty_tensor(shape, output_dtype.value_or(common), device);
    }
  }
  it.n_outputs = n_out;
  it.n_operands = n_out + n_in;
  for (int i = 0; i < n_out; ++i) it.operands[i] = outputs[i];
  for (int i = 0; i < n_in; ++i) it.operands[n_out + i] = inputs[i];
  // An input that overlaps an output in memory would be read after being written. Dense
  // operands whose ranges partly overlap raise, as PyTorch's assert_no_partial_overlap; other
  // aliasing (a transposed view of the output, interleaved strides) reads from a copy.
  for (int i = n_out; i < it.n_operands; ++i)
    for (int o = 0; o < n_out; ++o) {
      const Tensor& in = it.operands[i];
      const Tensor& out = it.operands[o];
      if (in.impl()->storage() != out.impl()->storage() || in.numel() == 0 || out.numel() == 0) continue;
      if (in.storage_offset() == out.storage_offset() && in.strides() == out.strides() &&
          in.sizes() == out.sizes())
        continue;
      MemRange a = mem_range(in), b = mem_range(out);
      if (a.end <= b.begin || b.end <= a.begin) continue;
      bool both_dense = a.dense && b.dense;
      KINDLE_CHECK(!both_dense || (a.begin == b.begin && a.end == b.end), op,
                   ": unsupported operation: some elements of the input tensor and the written-to tensor refer "
                   "to a single memory location. Please clone() the tensor before performing the operation.");
      it.operands[i] = in.clone();
    }
  it.numel = numel_of(shape);
  if (it.numel == 0) {  // nothing to visit; an empty tensor's strides may be huge, so skip them
    it.shape = DimVector{0};
    for (int i = 0; i < it.n_operands; ++i) it.strides[i] = DimVector{0};
    return it;
  }
  // 5. byte strides in perm order, then merge dims contiguous for every operand
  it.shape.resize(nd);
  for (int64_t k = 0; k < nd; ++k) it.shape[k] = shape[perm[k]];
  for (int i = 0; i < it.n_operands; ++i) {
    const Tensor& t = it.operands[i];
    int64_t es = int64_t(t.element_size());
    it.strides[i].resize(nd);
    for (int64_t k = 0; k < nd; ++k) it.strides[i][k] = stride_of(t, perm[k]) * es;
  }
  int64_t out_nd = 0;
  for (int64_t k = 0; k < nd; ++k) {
    if (it.shape[k] == 1 && nd > 1) continue;  // size-1 dims contribute nothing
    bool merge = out_nd > 0;
    for (int i = 0; merge && i < it.n_operands; ++i)
      merge = it.strides[i][k] == it.strides[i][out_nd - 1] * it.shape[out_nd - 1];
    if (merge) { it.shape[out_nd - 1] *= it.shape[k]; continue; }
    it.shape[out_nd] = it.shape[k];
    for (int i = 0; i < it.n_operands; ++i) it.strides[i][out_nd] = it.strides[i][k];
    ++out_nd;
  }
  if (out_nd == 0) {  // 0-d (or all size-1): one element
    it.shape.resize(1);
    it.shape[0] = 1;
    for (int i = 0; i < it.n_operands; ++i) { it.strides[i].resize(1); it.strides[i][0] = 0; }
  } else {
    it.shape.resize(out_nd);
    for (int i = 0; i < it.n_operands; ++i) it.strides[i].resize(out_nd);
  }
  return it;
}

void TensorIter::finish() {
  if (writeback_dst.defined()) {
    writeback_dst.copy_(operands[0]);
    operands[0] = writeback_dst;
  }
}

}  // namespace kindle
