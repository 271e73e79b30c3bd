// The interface between ops/ and the device kernels: one stub per kernel family, filled in by
// each device's folder (csrc/cpu/ today). Ops never call a device's kernels directly.
#pragma once
#include "kindle/cpu_capability.h"
#include "ops/op_codes.h"
#include "ops/tensor_iter.h"

namespace kindle {

// The meta device's kernel for every stub: its outputs were already sized and typed by the op,
// and there is nothing to compute.
template <typename Fn>
struct MetaKernel;
template <typename... Args>
struct MetaKernel<void (*)(Args...)> {
  static void run(Args...) {}
};

template <typename Fn>
struct KernelStub {
  const char* name;
  Fn fns[kNumDeviceTypes] = {};
  Fn operator[](Device d) const {
    Fn f = fns[int(d.type())];
    if (!f && d.is_meta()) return &MetaKernel<Fn>::run;
    KINDLE_CHECK_NOT_IMPLEMENTED(f, name, ": no kernel for device ", d);
    return f;
  }
  bool has(Device d) const { return fns[int(d.type())] || d.is_meta(); }
};
#if defined(KINDLE_CPU_KERNELS)
// csrc/cpu/ is compiled once per instruction set (KINDLE_CPU_ISA: 0 for baseline x86-64, in
// libkindle; 1 AVX2 and 2 AVX-512, each a module): a build's kernels register only when its set is
// the one chosen at load (kindle/cpu_capability.h), so each stub holds the chosen set's kernel.
#include "kindle/cpu_capability.h"
#ifndef KINDLE_CPU_ISA
#define KINDLE_CPU_ISA 0
#endif
#define KINDLE_REGISTER_KERNEL(stub, device, fn)                                                          \
  static const bool stub##_registered_ =                                                                 \
      ::kindle::detail::cpu_kernels_selected(KINDLE_CPU_ISA) && (::kindle::stub.fns[int(device)] = (fn), true)
#else
#define KINDLE_REGISTER_KERNEL(stub, device, fn) \
  static const bool stub##_registered_ = (::kindle::stub.fns[int(device)] = (fn), true)
#endif

// out = op(in) (op(a, b) for binary); inputs are in the iterator's common dtype.
extern KernelStub<void (*)(TensorIter&, UnaryOp)> unary_stub;
extern KernelStub<void (*)(TensorIter&, BinaryOp)> binary_stub;
// out = a + alpha * b, out = a - alpha * b fused (alpha as double or int per dtype).
extern KernelStub<void (*)(TensorIter&, const Scalar&)> add_alpha_stub;
// out = cast(in): any dtype to any dtype, any strides.
extern KernelStub<void (*)(TensorIter&)> copy_stub;
// out = where(cond, a, b)
extern KernelStub<void (*)(TensorIter&)> where_stub;
// out = fill value
extern KernelStub<void (*)(TensorIter&, const Scalar&)> fill_stub;
// Parameterised elementwise ops on floats: p holds their scalars.
enum class ParamOp : uint8_t { Clamp, ClampMin, ClampMax, Softplus, NanToNum, Lerp, Addcmul, Addcdiv,
                              RoundDecimals, LeakyRelu, Hardtanh, Elu, Threshold, Mish, LogSigmoid,
                              Hardswish, Hardsigmoid,
                              // ...Grad: binary (grad, input), the first-order backward
                              HardtanhGrad, LeakyReluGrad, EluGrad, SoftplusGrad, SiluGrad, MishGrad,
                              LogSigmoidGrad, HardswishGrad, HardsigmoidGrad};
extern KernelStub<void (*)(TensorIter&, ParamOp, const double* p)> param_stub;
// kindle.special's functions on floats, computed in double (csrc/cpu/special_math.h). The unary
// ones read one input, the binary ones (Zeta onwards) two; Polygamma's order is p[0].
enum class SpecialOp : uint8_t {
  Lgamma, Digamma, Polygamma, Erfc, Erfcx, Ndtri, LogNdtr, Entr, I0, I0e, I1, I1e, BesselJ0, BesselJ1,
  BesselY0, BesselY1, ModBesselI0, ModBesselI1, ModBesselK0, ModBesselK1, ScaledBesselK0, ScaledBesselK1,
  SphericalBesselJ0, AiryAi,
  Zeta, Igamma, Igammac, Xlog1py, ChebyshevT, ChebyshevU, ChebyshevV, ChebyshevW, ShiftedChebyshevT,
  ShiftedChebyshevU, ShiftedChebyshevV, ShiftedChebyshevW, HermiteH, HermiteHe, LaguerreL, LegendreP,
};
extern KernelStub<void (*)(TensorIter&, SpecialOp, const double* p)> special_stub;
// Dense factorisations (LAPACK) on `batch` column-major matrices, each overwritten in place.
// a: m x n (leading dimension m), consecutive matrices stride_a elements apart; the other
// buffers as each routine documents in csrc/cpu/lapack.cpp. info[b] is LAPACK's status for b.
// Complex dtypes: Getrf and Getrs. Geev: real input, eigenvalues as real and imaginary parts.
enum class Lapack : uint8_t { Potrf, Getrf, Getrs, Syevd, Gesdd, Geqrf, Orgqr, Trsm, Geev, Sytrf, Sytrs };
struct LapackArgs {
  DType dtype;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  void* d = nullptr;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_d = 0;
  int32_t* ipiv = nullptr;
  int32_t* info = nullptr;
  bool upper = false, trans = false, left = true, unit = false, vectors = true, full = false;
};
extern KernelStub<void (*)(Lapack, const LapackArgs&)> lapack_stub;

}  // namespace kindle

namespace kindle {
// Random fills of a contiguous tensor with PyTorch's CPU transforms, drawing from `gen` in
// element order (torch's order; ops/ permutes strided targets first). Normal is torch's
// vectorised path (contiguous, 16 elements or more); NormalSerial its scalar one.
enum class RandomKind : uint8_t { Uniform, Normal, NormalSerial, Bernoulli, Integer, Exponential };
struct RandomArgs {
  RandomKind kind;
  double a = 0, b = 0;  // uniform [a, b); normal mean a, std b; bernoulli p = a; exponential lambda = a
  int64_t from = 0;     // integer: from + draw % range
  uint64_t range = 0;
};
extern KernelStub<void (*)(const Tensor& out, const RandomArgs&, GeneratorImpl& gen)> random_stub;
// randperm into a contiguous int64 tensor of n elements.
extern KernelStub<void (*)(const Tensor& out, GeneratorImpl& gen)> randperm_stub;
// multinomial with replacement: probs [rows, cats] contiguous floating, out [rows, samples] int64.
extern KernelStub<void (*)(const Tensor& probs, const Tensor& out, GeneratorImpl& gen)> multinomial_stub;
// arange/linspace fill: out[i] = start + i * step (linspace: symmetric from both ends), with
// torch's roundings (Note [Ranges as torch computes them] in csrc/cpu/random.cpp).
extern KernelStub<void (*)(const Tensor& out, double start, double step, double end, bool linspace)> range_stub;
// logspace fill of a real dtype: base ** linspace(start, end), torch's roundings.
extern KernelStub<void (*)(const Tensor& out, double start, double end, double base)> logspace_stub;
}  // namespace kindle

namespace kindle {
// Reductions over one (possibly strided) reduced dim of length R for each of M outputs; the
// outputs' input offsets follow the kept dims (sizes/strides in elements, innermost last).
struct ReducePlan {
  const Tensor* input;       // any strides; its data is read at the offsets below
  DimVector kept_sizes, kept_strides;
  int64_t M = 1, R = 1, rstride = 1;
  Tensor out;                // contiguous, M elements
};
extern KernelStub<void (*)(const ReducePlan&, ReduceOp)> reduce_stub;
// Over contiguous rows [M, R]: values and indices of the max (or min); NaN wins, first index on ties.
extern KernelStub<void (*)(const Tensor& in, const Tensor& values, const Tensor& indices, bool is_max)> arg_reduce_stub;
// Over contiguous rows [M, R]: softmax or log_softmax into out (same shape).
extern KernelStub<void (*)(const Tensor& in, const Tensor& out, bool log)> softmax_stub;
// Over contiguous rows [M, R]: inclusive scan (cumsum, or cumprod when prod).
extern KernelStub<void (*)(const Tensor& in, const Tensor& out, bool prod)> scan_stub;
// Over contiguous rows [M, R]: stable sort of each row, values and int64 indices.
extern KernelStub<void (*)(const Tensor& in, const Tensor& values, const Tensor& indices, bool descending)> sort_stub;
}  // namespace kindle

namespace kindle {
// Advanced indexing. The iterator's operands are (out, src, idx...) for index and
// (dst, values, idx...) for index_put; src/dst are restrided with 0 along the indexed dims and
// each int64 index adds idx * stride (bounds-checked against size).
struct IndexDims {
  int n = 0;
  int64_t sizes[kMaxOperands], strides[kMaxOperands];  // strides in bytes
  bool index_error = true;  // out of range: IndexError (indexing) or RuntimeError (gather, scatter)
};
extern KernelStub<void (*)(TensorIter&, const IndexDims&)> index_stub;
// How index_put / scatter combine a value with what the destination holds.
enum class PutReduce : uint8_t { Assign, Add, Multiply, Max, Min };
extern KernelStub<void (*)(TensorIter&, const IndexDims&, PutReduce)> index_put_stub;
// out[x[i]] += w ? w[i] : 1 for i in order: x contiguous int64 in [0, out.numel()), w (if given)
// contiguous float64 of x's length, out contiguous int64 (no weights) or float64.
extern KernelStub<void (*)(const Tensor& x, const Tensor* w, const Tensor& out)> bincount_stub;
// scatter_ with a reduction (ops/index.cpp), outside autograd: composites attach gradients.
const Tensor& scatter_reduce_raw_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, PutReduce reduce);
}  // namespace kindle

namespace kindle {
// C = alpha * op(A) @ op(B) + beta * C for one matrix, row-major with leading dimensions;
// trans_a/trans_b select op(X) = X^T. Each device supplies float32/float64 (BLAS) and a
// generic loop for the other dtypes.
struct GemmArgs {
  bool trans_a, trans_b;
  int64_t m, n, k;
  const void* a; int64_t lda;
  const void* b; int64_t ldb;
  void* c; int64_t ldc;
  double alpha, beta;
};
extern KernelStub<void (*)(DType, const GemmArgs*, int64_t batch, int64_t stride_a, int64_t stride_b, int64_t stride_c)> gemm_stub;
// Sliding windows of an (N, C, H, W) image (csrc/nn/conv.cpp): im2col writes, for each output
// position l = (oh, ow), the window's C*kh*kw values as one row of an (N, L, C*kh*kw) matrix,
// zero outside the image; col2im is its adjoint (sums rows back into the image).
struct WindowGeom {
  int64_t N, C, H, W;      // image
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t oh, ow;          // output positions
};
extern KernelStub<void (*)(const Tensor& image, const Tensor& cols, const WindowGeom&)> im2col_stub;
extern KernelStub<void (*)(const Tensor& cols, const Tensor& image, const WindowGeom&)> col2im_stub;
// 2-D convolution of contiguous float32/float64 tensors (csrc/cpu/conv2d.cpp): `w` is the
// input's window geometry, O the output channels. The forward pass clamps its output to [lo, hi]
// block by block where clamps() (_conv2d_clamp: a fused ReLU/ReLU6/Hardtanh; NaN stays NaN).
struct ConvGeom {
  WindowGeom w;
  int64_t O, groups;
  double lo = -__builtin_inf(), hi = __builtin_inf();
  bool clamps() const { return lo != -__builtin_inf() || hi != __builtin_inf(); }
  // The forward pass's output image stride in elements, where it writes into a channel slice of
  // a larger tensor (kindle.compile's convolutions feeding one cat); 0: O * oh * ow.
  int64_t out_image_stride = 0;
};
extern KernelStub<void (*)(const Tensor& input, const Tensor& weight, const Tensor* bias, const Tensor& out,
                           const ConvGeom&)> conv2d_stub;
extern KernelStub<void (*)(const Tensor& grad_out, const Tensor& weight, const Tensor& grad_in, const ConvGeom&)>
    conv2d_backward_input_stub;
extern KernelStub<void (*)(const Tensor& grad_out, const Tensor& input, const Tensor& grad_weight, const ConvGeom&)>
    conv2d_backward_weight_stub;

}  // namespace kindle
