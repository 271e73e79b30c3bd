// The CUDA kernels behind the op table's stubs: each entry turns the op layer's description
// (TensorIter, ReducePlan, GemmArgs) into the plain structs of kernels.cuh, launches on the
// current stream, and raises NotImplementedError naming the op and dtype where no kernel exists.
// Stubs without an entry here raise the same way through KernelStub.
#include <cublas_v2.h>

#include <array>
#include <cstring>

#include "cuda/cuda_common.h"
#include "cuda/kernels.cuh"
#include "ops/kernels.h"

namespace kindle {
namespace ck = cuda_kernels;
namespace {

void check_launch(const char* op) {
  cudaError_t e = cudaGetLastError();
  KINDLE_CHECK(e == cudaSuccess, op, ": CUDA kernel launch failed: ", cudaGetErrorString(e));
}

[[noreturn]] void no_kernel(const char* op, DType dt) {
  throw NotImplementedError(detail::str_cat(op, ": no CUDA kernel for dtype ", dt, " yet"));
}

ck::Loop make_loop(const TensorIter& it, const char* op) {
  KINDLE_CHECK_NOT_IMPLEMENTED(it.ndim() <= ck::kMaxDims && it.n_operands <= ck::kMaxOps, op,
                               ": the CUDA loop takes at most ", ck::kMaxDims, " dims and ", ck::kMaxOps,
                               " operands");
  ck::Loop l;
  l.ndim = int(it.ndim());
  l.nops = it.n_operands;
  l.numel = it.numel;
  for (int d = 0; d < l.ndim; ++d) l.sizes[d] = it.shape[d];
  for (int k = 0; k < it.n_operands; ++k) {
    KINDLE_CHECK(it.operands[k].device().type() == DeviceType::CUDA, op, ": expected all tensors on cuda, but operand ",
                 k, " is on ", it.operands[k].device());
    l.data[k] = static_cast<char*>(it.operands[k].raw_data_ptr());
    for (int d = 0; d < l.ndim; ++d) l.strides[k][d] = it.strides[k][d];
  }
  return l;
}

void unary_cuda(TensorIter& it, UnaryOp op) {
  ck::Loop l = make_loop(it, op_code_name(op));
  if (!ck::unary(l, int(it.input_dtype(0)), int(it.output().dtype()), op, cuda::current_cuda_stream()))
    no_kernel(op_code_name(op), it.input_dtype(0));
  check_launch(op_code_name(op));
}

void binary_cuda(TensorIter& it, BinaryOp op) {
  ck::Loop l = make_loop(it, op_code_name(op));
  if (!ck::binary(l, int(it.input_dtype(0)), int(it.output().dtype()), op, cuda::current_cuda_stream()))
    no_kernel(op_code_name(op), it.input_dtype(0));
  check_launch(op_code_name(op));
}

void add_alpha_cuda(TensorIter& it, const Scalar& alpha) {
  ck::Loop l = make_loop(it, "add");
  if (!ck::add_alpha(l, int(it.input_dtype(0)), alpha.to<double>(), cuda::current_cuda_stream()))
    no_kernel("add", it.input_dtype(0));
  check_launch("add");
}

void copy_cuda(TensorIter& it) {
  ck::Loop l = make_loop(it, "copy_");
  if (!ck::copy(l, int(it.output().dtype()), int(it.input_dtype(0)), cuda::current_cuda_stream()))
    no_kernel("copy_", is_complex(it.output().dtype()) ? it.output().dtype() : it.input_dtype(0));
  check_launch("copy_");
}

void fill_cuda(TensorIter& it, const Scalar& v) {
  DType dt = it.output().dtype();
  if (is_complex(dt)) no_kernel("fill_", dt);
  uint64_t bits = 0;
  dispatch_all(dt, "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T val = v.to<T>();
    std::memcpy(&bits, &val, sizeof(T));
  });
  ck::Loop l = make_loop(it, "fill_");
  if (!ck::fill(l, int(dt), bits, cuda::current_cuda_stream())) no_kernel("fill_", dt);
  check_launch("fill_");
}

void where_cuda(TensorIter& it) {
  ck::Loop l = make_loop(it, "where");
  if (!ck::where(l, int(it.output().dtype()), cuda::current_cuda_stream())) no_kernel("where", it.output().dtype());
  check_launch("where");
}

void reduce_cuda(const ReducePlan& pl, ReduceOp op) {
  static const char* names[] = {"sum", "prod", "amax", "amin", "all", "any", "norm"};
  const char* name = names[int(op)];
  KINDLE_CHECK_NOT_IMPLEMENTED(pl.kept_sizes.size() <= size_t(ck::kMaxDims), name, ": too many kept dims for CUDA");
  ck::Reduction r;
  r.in = pl.input->raw_data_ptr();
  r.out = pl.out.raw_data_ptr();
  r.nkept = int(pl.kept_sizes.size());
  for (int d = 0; d < r.nkept; ++d) r.kept_sizes[d] = pl.kept_sizes[d], r.kept_strides[d] = pl.kept_strides[d];
  r.M = pl.M, r.R = pl.R, r.rstride = pl.rstride;
  Tensor work;
  if (r.rstride == 1 && (r.chunks = ck::reduce_chunks(r.M, r.R)) > 1) {
    work = empty_tensor({r.M * r.chunks}, kInt64, pl.out.device());  // 8 bytes per partial
    r.work = work.raw_data_ptr();
  }
  if (!ck::reduce(r, int(pl.input->dtype()), int(pl.out.dtype()), op, cuda::current_cuda_stream()))
    no_kernel(name, pl.input->dtype());
  check_launch(name);
}

void softmax_cuda(const Tensor& in, const Tensor& out, bool log) {
  int64_t R = in.dim() ? in.size(-1) : 1, M = R ? in.numel() / R : 0;
  const char* name = log ? "log_softmax" : "softmax";
  if (!ck::softmax(in.raw_data_ptr(), out.raw_data_ptr(), M, R, int(in.dtype()), log, cuda::current_cuda_stream()))
    no_kernel(name, in.dtype());
  check_launch(name);
}

// cuBLAS is column-major: a row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T,
// so the operands swap places and keep their transposition flags.
cublasHandle_t cublas_handle() {
  thread_local std::array<cublasHandle_t, 64> handles{};
  int d = cuda::current_device();
  if (!handles[d]) {
    cublasStatus_t st = cublasCreate(&handles[d]);
    KINDLE_CHECK(st == CUBLAS_STATUS_SUCCESS, "matmul: cublasCreate failed (status ", int(st), ")");
  }
  return handles[d];
}

void gemm_cuda(DType dt, const GemmArgs* g, int64_t batch, int64_t sa, int64_t sb, int64_t sc) {
  if (g->m == 0 || g->n == 0 || batch == 0) return;
  cudaDataType_t type;
  cublasComputeType_t compute;
  switch (dt) {
    case kFloat32: type = CUDA_R_32F, compute = CUBLAS_COMPUTE_32F; break;
    case kFloat64: type = CUDA_R_64F, compute = CUBLAS_COMPUTE_64F; break;
    case kFloat16: type = CUDA_R_16F, compute = CUBLAS_COMPUTE_32F; break;
    case kBFloat16: type = CUDA_R_16BF, compute = CUBLAS_COMPUTE_32F; break;
    default: throw NotImplementedError(detail::str_cat("matmul: \"addmm_cuda\" not implemented for '", dt, "'"));
  }
  for (int64_t v : {g->m, g->n, g->k, g->lda, g->ldb, g->ldc})
    KINDLE_CHECK_NOT_IMPLEMENTED(v <= INT32_MAX, "matmul: a dimension over 2^31 is not supported on CUDA");
  cublasHandle_t h = cublas_handle();
  cublasSetStream(h, cuda::current_cuda_stream());
  double alpha64 = g->alpha, beta64 = g->beta;
  float alpha32 = float(g->alpha), beta32 = float(g->beta);
  const void* alpha = dt == kFloat64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = dt == kFloat64 ? static_cast<const void*>(&beta64) : &beta32;
  cublasOperation_t ta = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t st = cublasGemmStridedBatchedEx(
      h, tb, ta, int(g->n), int(g->m), int(g->k), alpha, g->b, type, int(g->ldb), sb, g->a, type, int(g->lda), sa,
      beta, g->c, type, int(g->ldc), sc, int(batch), compute, CUBLAS_GEMM_DEFAULT);
  KINDLE_CHECK(st == CUBLAS_STATUS_SUCCESS, "matmul: cuBLAS failed (status ", int(st), ") for ", dt, " [", g->m,
               ", ", g->k, "] @ [", g->k, ", ", g->n, "] x ", batch);
}

}  // namespace

KINDLE_REGISTER_KERNEL(unary_stub, DeviceType::CUDA, &unary_cuda);
KINDLE_REGISTER_KERNEL(binary_stub, DeviceType::CUDA, &binary_cuda);
KINDLE_REGISTER_KERNEL(add_alpha_stub, DeviceType::CUDA, &add_alpha_cuda);
KINDLE_REGISTER_KERNEL(copy_stub, DeviceType::CUDA, &copy_cuda);
KINDLE_REGISTER_KERNEL(fill_stub, DeviceType::CUDA, &fill_cuda);
KINDLE_REGISTER_KERNEL(where_stub, DeviceType::CUDA, &where_cuda);
KINDLE_REGISTER_KERNEL(reduce_stub, DeviceType::CUDA, &reduce_cuda);
KINDLE_REGISTER_KERNEL(softmax_stub, DeviceType::CUDA, &softmax_cuda);
KINDLE_REGISTER_KERNEL(gemm_stub, DeviceType::CUDA, &gemm_cuda);

}  // namespace kindle
