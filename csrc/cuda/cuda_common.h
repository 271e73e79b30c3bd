// What the CUDA glue shares: turning a CUDA error into a kindle::Error, and the stream that
// kernels launch on (the calling thread's current stream of the current device).
#pragma once
#include <cuda_runtime_api.h>

#include "kindle/cuda.h"
#include "kindle/error.h"

#define KINDLE_CUDA_CHECK(expr)                                                                     \
  do {                                                                                              \
    cudaError_t kindle_cuda_err_ = (expr);                                                          \
    if (kindle_cuda_err_ != cudaSuccess) [[unlikely]]                                               \
      ::kindle::detail::throw_as<::kindle::Error>(::kindle::detail::str_cat(                        \
          "CUDA error: ", cudaGetErrorString(kindle_cuda_err_), " (", #expr, " at ", __FILE__, ":", \
          __LINE__, ")"));                                                                          \
  } while (0)

namespace kindle::cuda {
inline cudaStream_t current_cuda_stream() { return cudaStream_t(current_stream(-1).handle); }
}  // namespace kindle::cuda
