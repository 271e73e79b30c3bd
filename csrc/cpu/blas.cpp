// GEMM: OpenBLAS for float32 and float64; a plain loop for the other dtypes (no BLAS has them).
#include <atomic>

#include <cblas.h>

#include "cpu/parallel.h"
#include "ops/kernels.h"

namespace kindle::cpu {
namespace {

template <typename T>
void gemm_loop(const GemmArgs& g) {
  using A = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, opmath_t<T>, int64_t>;
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  T* c = static_cast<T*>(g.c);
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      A acc = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        A x = A(opmath_t<T>(g.trans_a ? a[p * g.lda + i] : a[i * g.lda + p]));
        A y = A(opmath_t<T>(g.trans_b ? b[j * g.ldb + p] : b[p * g.ldb + j]));
        if constexpr (std::is_same_v<T, bool>) acc = acc || (x && y);
        else acc += x * y;
      }
      A prev = g.beta == 0 ? A(0) : A(opmath_t<T>(c[i * g.ldc + j]));
      if constexpr (std::is_same_v<T, bool>) c[i * g.ldc + j] = bool(acc) || bool(prev);
      else c[i * g.ldc + j] = T(opmath_t<T>(A(g.alpha) * acc + A(g.beta) * prev));
    }
}

// OpenBLAS's thread count is global; only change it when it differs (the call is cheap, but
// not free).
void set_blas_threads(int n) {
  static std::atomic<int> current{-1};
  if (current.load(std::memory_order_relaxed) != n) {
    scipy_openblas_set_num_threads(n);
    current.store(n, std::memory_order_relaxed);
  }
}

void gemm_kernel(DType dt, const GemmArgs* g0, int64_t batch, int64_t sa, int64_t sb, int64_t sc) {
  dispatch_all(dt, "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t es = sizeof(T);
    auto one = [&](int64_t i) {
      GemmArgs g = *g0;
      g.a = static_cast<const char*>(g.a) + i * sa * es;
      g.b = static_cast<const char*>(g.b) + i * sb * es;
      g.c = static_cast<char*>(g.c) + i * sc * es;
      if (g.m == 0 || g.n == 0) return;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        auto ta = g.trans_a ? CblasTrans : CblasNoTrans, tb = g.trans_b ? CblasTrans : CblasNoTrans;
        if constexpr (std::is_same_v<T, float>)
          scipy_cblas_sgemm(CblasRowMajor, ta, tb, blasint(g.m), blasint(g.n), blasint(g.k), float(g.alpha),
                      static_cast<const float*>(g.a), blasint(g.lda), static_cast<const float*>(g.b), blasint(g.ldb),
                      float(g.beta), static_cast<float*>(g.c), blasint(g.ldc));
        else
          scipy_cblas_dgemm(CblasRowMajor, ta, tb, blasint(g.m), blasint(g.n), blasint(g.k), g.alpha,
                      static_cast<const double*>(g.a), blasint(g.lda), static_cast<const double*>(g.b), blasint(g.ldb),
                      g.beta, static_cast<double*>(g.c), blasint(g.ldc));
      } else {
        gemm_loop<T>(g);
      }
    };
    // Small products run on one BLAS thread: waking OpenBLAS's pool costs more than it saves,
    // and on a time-sliced second core it can cost milliseconds.
    bool small = double(g0->m) * double(g0->n) * double(g0->k) < double(1 << 21);
    set_blas_threads(small ? 1 : get_num_threads());
    for (int64_t i = 0; i < batch; ++i) one(i);
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KernelStub<void (*)(DType, const GemmArgs*, int64_t, int64_t, int64_t, int64_t)> gemm_stub{"matmul"};
KINDLE_REGISTER_KERNEL(gemm_stub, DeviceType::CPU, &cpu::gemm_kernel);
}  // namespace kindle
