// Device-side helpers of the CUDA kernels: the dtype switch, conversions through the compute
// type (float for float16/bfloat16, as on the CPU), and the grid-stride elementwise loop over a
// Loop's strided operands.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "cuda/kernels.cuh"

namespace kindle::cuda_kernels {

// kindle::DType's values
enum Code : int { kBool = 0, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64 };

template <typename T> struct OpMath { using type = T; };
template <> struct OpMath<__half> { using type = float; };
template <> struct OpMath<__nv_bfloat16> { using type = float; };
template <typename T> using opmath_t = typename OpMath<T>::type;
template <typename T>
constexpr bool is_floating_v = std::is_floating_point_v<T> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <typename To, typename From>
__device__ __forceinline__ To cvt(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<From, __half> || std::is_same_v<From, __nv_bfloat16>) {
    return cvt<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, __half>) {
    return __float2half_rn(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    // through int64, as the CPU converts (a negative float to uint8 wraps instead of saturating)
    return static_cast<To>(static_cast<int64_t>(x));
  } else {
    return static_cast<To>(x);
  }
}

// Calls f(T{}) with T the C++ type of the dtype code; false for a code without one here.
template <typename F>
bool dispatch(int code, F&& f) {
  switch (code) {
    case kBool: f(bool{}); return true;
    case kUInt8: f(uint8_t{}); return true;
    case kInt8: f(int8_t{}); return true;
    case kInt16: f(int16_t{}); return true;
    case kInt32: f(int32_t{}); return true;
    case kInt64: f(int64_t{}); return true;
    case kFloat16: f(__half{}); return true;
    case kBFloat16: f(__nv_bfloat16{}); return true;
    case kFloat32: f(float{}); return true;
    case kFloat64: f(double{}); return true;
    default: return false;
  }
}

constexpr int kThreads = 256;
// Up to 65536 blocks, the loops striding over the rest (measured on an H200: faster for a 64M-
// element add than a thread per element).
inline unsigned grid_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return unsigned(blocks < 65536 ? blocks : 65536);
}

// f(char* const* ptrs) handles one element whose operands are at ptrs[0..N).
template <int N, typename F>
__global__ void loop_kernel(Loop l, F f) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < l.numel; i += step) {
    char* p[N];
    if (l.ndim == 1) {
#pragma unroll
      for (int k = 0; k < N; ++k) p[k] = l.data[k] + i * l.strides[k][0];
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) p[k] = l.data[k];
      int64_t rem = i;
      for (int d = 0; d < l.ndim; ++d) {
        int64_t idx = rem % l.sizes[d];
        rem /= l.sizes[d];
#pragma unroll
        for (int k = 0; k < N; ++k) p[k] += idx * l.strides[k][d];
      }
    }
    f(p);
  }
}

template <int N, typename F>
void launch(const Loop& l, cudaStream_t s, F f) {
  if (l.numel == 0) return;
  loop_kernel<N><<<grid_for(l.numel), kThreads, 0, s>>>(l, f);
}

}  // namespace kindle::cuda_kernels
