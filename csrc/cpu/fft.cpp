// DFTs through MKL's DFTI (oneMKL's official header, from the mkl-include wheel). A committed
// descriptor is reused for the same problem (the plan is most of the cost of a small transform);
// DftiCompute* may run concurrently on one committed descriptor. Built with OpenBLAS
// (KINDLE_BLAS=openblas), which has no FFT, the kernel is registered and raises NotImplementedError.
#include "ops/fft_kernels.h"

#ifdef KINDLE_BLAS_OPENBLAS
namespace kindle::cpu {
namespace {

void fft_kernel(FftKind, const Tensor&, const Tensor&, IntArrayRef, bool, double) {
  KINDLE_CHECK_NOT_IMPLEMENTED(false, "fft: this Kindle was built with OpenBLAS (KINDLE_BLAS=openblas), which has no "
                                      "FFT; build with MKL (KINDLE_BLAS=mkl) for kindle.fft");
}

}  // namespace
}  // namespace kindle::cpu
#else
#include <mkl_dfti.h>
#include <mkl_service.h>

#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "cpu/blas.h"
#include "kindle/parallel.h"

namespace kindle::cpu {
namespace {

void check(MKL_LONG status, const char* what) {
  if (status && !DftiErrorClass(status, DFTI_NO_ERROR))
    throw Error(detail::str_cat("fft: MKL DFTI ", what, " failed: ", DftiErrorMessage(status)));
}

struct Plan {
  DFTI_DESCRIPTOR_HANDLE h = nullptr;
  ~Plan() { if (h) DftiFreeDescriptor(&h); }
};

struct PlanKey {
  FftKind kind;
  bool dbl, forward;
  double scale;
  int threads;
  int64_t batch;
  std::vector<int64_t> signal;
  bool operator==(const PlanKey&) const = default;
};

std::shared_ptr<Plan> make_plan(const PlanKey& k) {
  auto p = std::make_shared<Plan>();
  const size_t nd = k.signal.size();
  std::vector<MKL_LONG> len(k.signal.begin(), k.signal.end());
  const auto prec = k.dbl ? DFTI_DOUBLE : DFTI_SINGLE;
  const auto domain = k.kind == FftKind::C2C ? DFTI_COMPLEX : DFTI_REAL;
  MKL_LONG st = nd == 1 ? DftiCreateDescriptor(&p->h, prec, domain, 1, len[0])
                        : DftiCreateDescriptor(&p->h, prec, domain, static_cast<MKL_LONG>(nd), len.data());
  check(st, "create");
  check(DftiSetValue(p->h, DFTI_PLACEMENT, DFTI_NOT_INPLACE), "placement");
  if (k.kind != FftKind::C2C) check(DftiSetValue(p->h, DFTI_CONJUGATE_EVEN_STORAGE, DFTI_COMPLEX_COMPLEX), "storage");
  // Row-major strides: the forward domain (real, or complex for C2C) has the full sizes; the
  // backward (complex) domain of a real transform has n/2+1 in the last dim.
  std::vector<MKL_LONG> fwd(nd + 1, 0), bwd(nd + 1, 0);
  MKL_LONG fs = 1, bs = 1;
  for (size_t i = nd; i-- > 0;) {
    fwd[i + 1] = fs;
    bwd[i + 1] = bs;
    fs *= len[i];
    bs *= (k.kind != FftKind::C2C && i == nd - 1) ? len[i] / 2 + 1 : len[i];
  }
  check(DftiSetValue(p->h, DFTI_FWD_STRIDES, fwd.data()), "strides");
  check(DftiSetValue(p->h, DFTI_BWD_STRIDES, bwd.data()), "strides");
  check(DftiSetValue(p->h, DFTI_NUMBER_OF_TRANSFORMS, static_cast<MKL_LONG>(k.batch)), "batch");
  check(DftiSetValue(p->h, DFTI_FWD_DISTANCE, fs), "distance");
  check(DftiSetValue(p->h, DFTI_BWD_DISTANCE, bs), "distance");
  if (k.scale != 1.0) {
    // (varargs pass a float as a double: one call for both precisions)
    check(DftiSetValue(p->h, k.forward ? DFTI_FORWARD_SCALE : DFTI_BACKWARD_SCALE, k.scale), "scale");
  }
  check(DftiSetValue(p->h, DFTI_THREAD_LIMIT, static_cast<MKL_LONG>(k.threads)), "threads");
  check(DftiCommitDescriptor(p->h), "commit");
  return p;
}

// A few recent plans (a training loop transforms the same shapes again and again).
std::shared_ptr<Plan> plan_for(const PlanKey& k) {
  static std::mutex mu;
  static std::list<std::pair<PlanKey, std::shared_ptr<Plan>>> cache;
  constexpr size_t kMaxPlans = 16;
  {
    std::lock_guard<std::mutex> g(mu);
    for (auto it = cache.begin(); it != cache.end(); ++it)
      if (it->first == k) {
        cache.splice(cache.begin(), cache, it);
        return it->second;
      }
  }
  auto p = make_plan(k);
  std::lock_guard<std::mutex> g(mu);
  cache.emplace_front(k, p);
  if (cache.size() > kMaxPlans) cache.pop_back();
  return p;
}

void fft_kernel(FftKind kind, const Tensor& in, const Tensor& out, IntArrayRef signal, bool forward, double scale) {
  init_mkl();
  int64_t n = 1;
  for (int64_t s : signal) n *= s;
  const Tensor& real_side = kind == FftKind::C2R ? out : in;
  const int64_t batch = n == 0 ? 0 : (kind == FftKind::C2C ? in.numel() : real_side.numel()) / n;
  if (batch == 0 || out.numel() == 0) return;
  const bool dbl = in.dtype() == kFloat64 || in.dtype() == kComplex128;
  // small problems on one thread (waking the pool costs more than it saves)
  const int threads = double(n) * double(batch) < 32768.0 ? 1 : get_num_threads();
  PlanKey key{kind, dbl, forward, scale, threads, batch, std::vector<int64_t>(signal.begin(), signal.end())};
  auto plan = plan_for(key);
  // MKL's thread count is per calling thread and sticky (a small GEMM sets it to 1): set it here
  mkl_set_num_threads_local(threads);
  void* src = const_cast<void*>(in.data_ptr());
  void* dst = out.data_ptr();
  bool fwd_call = kind == FftKind::R2C || (kind == FftKind::C2C && forward);
  check(fwd_call ? DftiComputeForward(plan->h, src, dst) : DftiComputeBackward(plan->h, src, dst), "compute");
}

}  // namespace
}  // namespace kindle::cpu
#endif

namespace kindle {
KINDLE_REGISTER_KERNEL(fft_stub, DeviceType::CPU, &cpu::fft_kernel);
}  // namespace kindle
