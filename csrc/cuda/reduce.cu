// Reductions and softmax on CUDA. A long reduced dim gets a block per output (a tree through
// shared memory); a short one a thread per output. Accumulation is in double for float64, float
// for the other floats, int64 for integers; max/min propagate NaN as on the CPU.
#include "cuda/loops.cuh"

namespace kindle::cuda_kernels {
namespace {

template <typename T, ReduceOp Op>
struct Acc {
  using M = opmath_t<T>;
  using type = std::conditional_t<Op == ReduceOp::All || Op == ReduceOp::Any, bool,
                                  std::conditional_t<is_floating_v<T>, M, int64_t>>;
  __device__ static type init() {
    if constexpr (Op == ReduceOp::Sum || Op == ReduceOp::SumSq) return type(0);
    else if constexpr (Op == ReduceOp::Prod) return type(1);
    else if constexpr (Op == ReduceOp::All) return true;
    else if constexpr (Op == ReduceOp::Any) return false;
    else return type(0);  // Max/Min start from the first element
  }
  __device__ static type take(T x) {
    if constexpr (std::is_same_v<type, bool>) return cvt<bool>(x);
    else return type(cvt<M>(x));
  }
  __device__ static type combine(type a, type b) {
    if constexpr (Op == ReduceOp::Sum || Op == ReduceOp::SumSq) return a + b;
    else if constexpr (Op == ReduceOp::Prod) return a * b;
    else if constexpr (Op == ReduceOp::All) return a && b;
    else if constexpr (Op == ReduceOp::Any) return a || b;
    else if constexpr (Op == ReduceOp::Max) return a != a ? a : b != b ? b : (a > b ? a : b);
    else return a != a ? a : b != b ? b : (a < b ? a : b);
  }
};

__device__ __forceinline__ int64_t base_offset(const Reduction& r, int64_t m) {
  int64_t off = 0;
  for (int d = r.nkept - 1; d >= 0; --d) {
    int64_t idx = m % r.kept_sizes[d];
    m /= r.kept_sizes[d];
    off += idx * r.kept_strides[d];
  }
  return off;
}

template <typename T, typename O, ReduceOp Op>
__global__ void reduce_thread_per_output(Reduction r) {
  using A = Acc<T, Op>;
  const T* in = static_cast<const T*>(r.in);
  for (int64_t m = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; m < r.M; m += int64_t(gridDim.x) * blockDim.x) {
    const T* x = in + base_offset(r, m);
    typename A::type acc = (Op == ReduceOp::Max || Op == ReduceOp::Min) && r.R ? A::take(x[0]) : A::init();
    for (int64_t j = 0; j < r.R; ++j) {
      auto v = A::take(x[j * r.rstride]);
      if constexpr (Op == ReduceOp::SumSq) v = v * v;
      acc = A::combine(acc, v);
    }
    static_cast<O*>(r.out)[m] = cvt<O>(acc);
  }
}

template <typename V>
__device__ __forceinline__ V shfl_down(V v, int o) {
  if constexpr (std::is_same_v<V, bool>) return __shfl_down_sync(0xffffffffu, int(v), o) != 0;
  else if constexpr (std::is_same_v<V, int64_t>) return int64_t(__shfl_down_sync(0xffffffffu, (long long)v, o));
  else return __shfl_down_sync(0xffffffffu, v, o);
}

// The block's combined value, in thread 0 (every thread must hold a valid partial).
template <typename A, typename V>
__device__ __forceinline__ V block_combine(V acc) {
  __shared__ V warp_vals[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) acc = A::combine(acc, shfl_down(acc, o));
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) warp_vals[w] = acc;
  __syncthreads();
  if (threadIdx.x == 0)
    for (int i = 1; i < int(blockDim.x) / 32; ++i) acc = A::combine(acc, warp_vals[i]);
  return acc;
}

// Block (c, m) reduces elements [c * chunk, (c + 1) * chunk) of output m's contiguous row; with
// one chunk it writes the output, else a partial into work[m * chunks + c].
template <typename T, typename O, ReduceOp Op>
__global__ void reduce_rows(Reduction r, int64_t chunk, void* work) {
  using A = Acc<T, Op>;
  using V = typename A::type;
  const int64_t m = blockIdx.y + int64_t(blockIdx.z) * gridDim.y;
  if (m >= r.M) return;
  const T* x = static_cast<const T*>(r.in) + base_offset(r, m);
  const int64_t lo = int64_t(blockIdx.x) * chunk, hi = lo + chunk < r.R ? lo + chunk : r.R;
  V acc = (Op == ReduceOp::Max || Op == ReduceOp::Min) ? A::take(x[lo]) : A::init();
  for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
    V v = A::take(x[j]);
    if constexpr (Op == ReduceOp::SumSq) v = v * v;
    acc = A::combine(acc, v);
  }
  acc = block_combine<A>(acc);
  if (threadIdx.x == 0) {
    if (gridDim.x == 1) static_cast<O*>(r.out)[m] = cvt<O>(acc);
    else static_cast<V*>(work)[m * gridDim.x + blockIdx.x] = acc;
  }
}

// The second pass over the partials (squares already taken: SumSq adds them as Sum does).
template <typename T, typename O, ReduceOp Op>
__global__ void reduce_partials(const void* work, int64_t chunks, void* out, int64_t M) {
  using A = Acc<T, Op>;
  using V = typename A::type;
  const int64_t m = blockIdx.x + int64_t(blockIdx.y) * gridDim.x;
  if (m >= M) return;
  const V* p = static_cast<const V*>(work) + m * chunks;
  V acc = (Op == ReduceOp::Max || Op == ReduceOp::Min) ? p[0] : A::init();
  for (int64_t j = threadIdx.x; j < chunks; j += blockDim.x) acc = A::combine(acc, p[j]);
  acc = block_combine<A>(acc);
  if (threadIdx.x == 0) static_cast<O*>(out)[m] = cvt<O>(acc);
}

constexpr int64_t kMaxGridY = 65535;

template <typename T, typename O, ReduceOp Op>
void run_reduce(const Reduction& r, cudaStream_t s) {
  if (r.M == 0) return;
  if (r.rstride != 1 || r.R < 256) {
    // Outputs next to each other in memory read next to each other: a thread per output.
    reduce_thread_per_output<T, O, Op><<<grid_for(r.M), kThreads, 0, s>>>(r);
    return;
  }
  // A block per output row; few long rows are split across blocks (r.chunks, from the glue).
  int64_t chunks = r.chunks > 1 ? r.chunks : 1;
  int64_t chunk = (r.R + chunks - 1) / chunks;
  dim3 grid(unsigned(chunks), unsigned(r.M < kMaxGridY ? r.M : kMaxGridY), unsigned((r.M + kMaxGridY - 1) / kMaxGridY));
  reduce_rows<T, O, Op><<<grid, kThreads, 0, s>>>(r, chunk, r.work);
  if (chunks > 1) {
    dim3 g2(unsigned(r.M < kMaxGridY ? r.M : kMaxGridY), unsigned((r.M + kMaxGridY - 1) / kMaxGridY));
    reduce_partials<T, O, Op><<<g2, kThreads, 0, s>>>(r.work, chunks, r.out, r.M);
  }
}

template <typename T>
__global__ void softmax_rows(const T* in, T* out, int64_t R, bool use_log) {
  using M = opmath_t<T>;
  __shared__ M buf[kThreads];
  const T* x = in + int64_t(blockIdx.x) * R;
  T* y = out + int64_t(blockIdx.x) * R;
  M mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < R; j += blockDim.x) {
    M v = cvt<M>(x[j]);
    mx = v != v ? v : (mx > v ? mx : v);
  }
  buf[threadIdx.x] = mx;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) {
      M a = buf[threadIdx.x], b = buf[threadIdx.x + w];
      buf[threadIdx.x] = a != a ? a : b != b ? b : (a > b ? a : b);
    }
    __syncthreads();
  }
  mx = buf[0];
  __syncthreads();
  M sum = 0;
  for (int64_t j = threadIdx.x; j < R; j += blockDim.x) sum += exp(cvt<M>(x[j]) - mx);
  buf[threadIdx.x] = sum;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) buf[threadIdx.x] += buf[threadIdx.x + w];
    __syncthreads();
  }
  sum = buf[0];
  M lse = ::log(sum);
  for (int64_t j = threadIdx.x; j < R; j += blockDim.x) {
    M v = cvt<M>(x[j]) - mx;
    y[j] = cvt<T>(use_log ? v - lse : exp(v) / sum);
  }
}

}  // namespace

int64_t reduce_chunks(int64_t M, int64_t R) {
  // Enough blocks to fill the device (a few per multiprocessor), each with at least 8K elements.
  const int64_t want = 1024;
  if (M >= want || R < 16384) return 1;
  int64_t by_blocks = (want + M - 1) / M, by_size = R / 8192;
  int64_t c = by_blocks < by_size ? by_blocks : by_size;
  return c < 1 ? 1 : (c > 4096 ? 4096 : c);
}

bool reduce(const Reduction& r, int in_dtype, int out_dtype, ReduceOp op, cudaStream_t s) {
  bool ok = true;
  bool done = dispatch(in_dtype, [&](auto tag) {
    using T = decltype(tag);
    auto go = [&](auto otag) {
      using O = decltype(otag);
      switch (op) {
        case ReduceOp::Sum: return run_reduce<T, O, ReduceOp::Sum>(r, s);
        case ReduceOp::SumSq: return run_reduce<T, O, ReduceOp::SumSq>(r, s);
        case ReduceOp::Prod: return run_reduce<T, O, ReduceOp::Prod>(r, s);
        case ReduceOp::Max: return run_reduce<T, O, ReduceOp::Max>(r, s);
        case ReduceOp::Min: return run_reduce<T, O, ReduceOp::Min>(r, s);
        case ReduceOp::All: return run_reduce<T, O, ReduceOp::All>(r, s);
        case ReduceOp::Any: return run_reduce<T, O, ReduceOp::Any>(r, s);
      }
    };
    if (op == ReduceOp::All || op == ReduceOp::Any) {
      if (out_dtype != kBool) { ok = false; return; }
      go(bool{});
    } else if (out_dtype == in_dtype) {
      go(T{});
    } else if (out_dtype == kInt64 && !is_floating_v<T> && (op == ReduceOp::Sum || op == ReduceOp::Prod)) {
      go(int64_t{});
    } else {
      ok = false;
    }
  });
  return done && ok;
}

bool softmax(const void* in, void* out, int64_t M, int64_t R, int dtype, bool log, cudaStream_t s) {
  if (dtype != kFloat32 && dtype != kFloat64 && dtype != kFloat16 && dtype != kBFloat16) return false;
  if (M == 0 || R == 0) return true;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_floating_v<T>)
      softmax_rows<T><<<unsigned(M), kThreads, 0, s>>>(static_cast<const T*>(in), static_cast<T*>(out), R, log);
  });
  return true;
}

}  // namespace kindle::cuda_kernels
