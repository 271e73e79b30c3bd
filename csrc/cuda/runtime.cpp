// The CUDA runtime side of the backend: kindle::cuda's device, stream and event API, the
// caching allocator on cudaMalloc (one per device), and copies between host and device.
// Registered as DeviceType::CUDA's allocator and copy at load time.
#include <cuda_runtime_api.h>

#include <array>
#include <memory>
#include <mutex>

#include "core/caching_allocator.h"
#include "cuda/cuda_common.h"
#include "kindle/cuda.h"
#include "kindle/storage.h"
#include "kindle/tensor.h"

namespace kindle::cuda {
namespace {

constexpr int kMaxDevices = 64;

int count_devices() {
  static int n = [] {
    int c = 0;
    if (cudaGetDeviceCount(&c) != cudaSuccess) {
      cudaGetLastError();  // no driver or no device: clear the error, report none
      return 0;
    }
    return c;
  }();
  return n;
}

int resolve(int device) {
  int n = count_devices();
  KINDLE_CHECK(n > 0, "CUDA: no CUDA GPUs are available");
  if (device < 0) return current_device();
  KINDLE_CHECK(device < n, "CUDA error: invalid device ordinal (device ", device, " of ", n, " devices)");
  return device;
}

// Switches the calling thread to `device` for its lifetime.
struct DeviceGuard {
  int prev = -1;
  explicit DeviceGuard(int device) {
    KINDLE_CUDA_CHECK(cudaGetDevice(&prev));
    if (prev != device) KINDLE_CUDA_CHECK(cudaSetDevice(device));
    else prev = -1;
  }
  ~DeviceGuard() { if (prev >= 0) cudaSetDevice(prev); }
};

thread_local std::array<uintptr_t, kMaxDevices> tls_stream{};  // 0: the default stream

// The answer of cudaEventQuery / cudaStreamQuery: done, not yet, or an error (raised).
bool query_done(cudaError_t r) {
  if (r == cudaErrorNotReady) {
    cudaGetLastError();  // not an error: clear it
    return false;
  }
  KINDLE_CUDA_CHECK(r);
  return true;
}

struct CudaRuntime final : DeviceRuntime {
  int device;
  explicit CudaRuntime(int d) : device(d) {}
  void* malloc(size_t n) override {
    DeviceGuard g(device);
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, n);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    KINDLE_CUDA_CHECK(e);
    return p;
  }
  void free(void* p) override { DeviceGuard g(device); KINDLE_CUDA_CHECK(cudaFree(p)); }
  uintptr_t event_create() override {
    DeviceGuard g(device);
    cudaEvent_t e;
    KINDLE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return uintptr_t(e);
  }
  void event_destroy(uintptr_t e) override { cudaEventDestroy(cudaEvent_t(e)); }
  void event_record(uintptr_t e, uintptr_t s) override {
    KINDLE_CUDA_CHECK(cudaEventRecord(cudaEvent_t(e), cudaStream_t(s)));
  }
  bool event_query(uintptr_t e) override { return query_done(cudaEventQuery(cudaEvent_t(e))); }
  void synchronize() override { DeviceGuard g(device); KINDLE_CUDA_CHECK(cudaDeviceSynchronize()); }
};

struct DeviceState {
  std::unique_ptr<CudaRuntime> runtime;
  std::unique_ptr<CachingAllocator> allocator;
};

// Never destroyed: storages freed during static destruction still find their allocator.
CachingAllocator& allocator_for(int device) {
  static auto* states = new std::array<DeviceState, kMaxDevices>();
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  DeviceState& st = (*states)[device];
  if (!st.allocator) {
    st.runtime = std::make_unique<CudaRuntime>(device);
    st.allocator = std::make_unique<CachingAllocator>(st.runtime.get(), "CUDA (device " + std::to_string(device) + ")");
  }
  return *st.allocator;
}

void free_block(void* ctx, void* data, size_t) {
  allocator_for(int(reinterpret_cast<intptr_t>(ctx))).free(data);
}

class CudaAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override { return allocate(nbytes, Device(DeviceType::CUDA, -1)); }
  DataPtr allocate(size_t nbytes, Device d) override {
    int dev = resolve(d.index());
    void* p = allocator_for(dev).allocate(nbytes, current_stream(dev).handle);
    return {p, &free_block, reinterpret_cast<void*>(intptr_t(dev))};
  }
};

void copy_bytes_cuda(void* dst, Device dd, const void* src, Device sd, size_t n, bool non_blocking) {
  if (n == 0) return;
  Device dev = dd.is_cpu() ? sd : dd;
  DeviceGuard g(resolve(dev.index()));
  cudaStream_t s = cudaStream_t(current_stream(-1).handle);
  cudaMemcpyKind kind = dd.is_cpu() ? cudaMemcpyDeviceToHost : sd.is_cpu() ? cudaMemcpyHostToDevice
                                                                            : cudaMemcpyDeviceToDevice;
  KINDLE_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, kind, s));
  // The host reads what came back: wait, unless the caller asked not to. (A copy from pageable
  // host memory returns once CUDA has staged the bytes, so the sender may reuse its buffer.)
  if (kind == cudaMemcpyDeviceToHost && !non_blocking) KINDLE_CUDA_CHECK(cudaStreamSynchronize(s));
}

const bool registered = [] {
  static CudaAllocator a;
  register_device(DeviceType::CUDA, &a, &copy_bytes_cuda);
  return true;
}();

}  // namespace

bool is_built() { return true; }
bool is_available() { return count_devices() > 0; }
int device_count() { return count_devices(); }

int current_device() {
  KINDLE_CHECK(count_devices() > 0, "CUDA: no CUDA GPUs are available");
  int d = 0;
  KINDLE_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void set_device(int device) { KINDLE_CUDA_CHECK(cudaSetDevice(resolve(device))); }

void synchronize(int device) {
  DeviceGuard g(resolve(device));
  KINDLE_CUDA_CHECK(cudaDeviceSynchronize());
}

DeviceProperties get_device_properties(int device) {
  cudaDeviceProp p;
  KINDLE_CUDA_CHECK(cudaGetDeviceProperties(&p, resolve(device)));
  return {p.name, p.totalGlobalMem, p.major, p.minor, p.multiProcessorCount};
}

MemoryStats memory_stats(int device) {
  if (count_devices() == 0) return {};
  return allocator_for(resolve(device)).stats();
}
void reset_peak_memory_stats(int device) {
  if (count_devices() == 0) return;
  allocator_for(resolve(device)).reset_peak();
}
void empty_cache() {
  for (int d = 0; d < count_devices(); ++d) allocator_for(d).empty_cache();
}
std::string memory_summary(int device) { return allocator_for(resolve(device)).summary(); }

Stream current_stream(int device) {
  int d = resolve(device);
  return {tls_stream[d], d};
}
Stream default_stream(int device) { return {0, resolve(device)}; }
void set_current_stream(Stream s) { tls_stream[resolve(s.device)] = s.handle; }

Stream create_stream(int device, int priority) {
  int d = resolve(device);
  DeviceGuard g(d);
  cudaStream_t s;
  KINDLE_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority));
  return {uintptr_t(s), d};
}
void destroy_stream(Stream s) { if (s.handle) cudaStreamDestroy(cudaStream_t(s.handle)); }
void stream_synchronize(Stream s) { KINDLE_CUDA_CHECK(cudaStreamSynchronize(cudaStream_t(s.handle))); }
bool stream_query(Stream s) { return query_done(cudaStreamQuery(cudaStream_t(s.handle))); }

uintptr_t create_event(bool enable_timing) {
  resolve(-1);
  cudaEvent_t e;
  KINDLE_CUDA_CHECK(cudaEventCreateWithFlags(&e, enable_timing ? cudaEventDefault : cudaEventDisableTiming));
  return uintptr_t(e);
}
void destroy_event(uintptr_t e) { if (e) cudaEventDestroy(cudaEvent_t(e)); }
void record_event(uintptr_t e, Stream s) { KINDLE_CUDA_CHECK(cudaEventRecord(cudaEvent_t(e), cudaStream_t(s.handle))); }
void event_synchronize(uintptr_t e) { KINDLE_CUDA_CHECK(cudaEventSynchronize(cudaEvent_t(e))); }
bool event_query(uintptr_t e) { return query_done(cudaEventQuery(cudaEvent_t(e))); }
void stream_wait_event(Stream s, uintptr_t e) {
  KINDLE_CUDA_CHECK(cudaStreamWaitEvent(cudaStream_t(s.handle), cudaEvent_t(e), 0));
}
float event_elapsed_ms(uintptr_t a, uintptr_t b) {
  float ms = 0;
  KINDLE_CUDA_CHECK(cudaEventElapsedTime(&ms, cudaEvent_t(a), cudaEvent_t(b)));
  return ms;
}

void record_stream(const Tensor& t, Stream s) {
  KINDLE_CHECK(t.device().type() == DeviceType::CUDA, "record_stream: expected a CUDA tensor, got one on ", t.device());
  const DataPtr& p = t.impl()->storage()->data_ptr();
  allocator_for(t.device().index()).record_stream(p.data, s.handle);
}

}  // namespace kindle::cuda
