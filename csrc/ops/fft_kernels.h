// The discrete Fourier transform kernel (csrc/cpu/fft.cpp): a batch of n-dimensional DFTs over
// the trailing dims of contiguous tensors.
#pragma once
#include "ops/kernels.h"

namespace kindle {

// C2C: complex in and out, same shape. R2C: real [..., n] in, the onesided complex [..., n/2+1]
// out. C2R: onesided complex in, real [..., n] out (the inverse of R2C). `signal` is the full
// (real-side) size of each transformed dim; the batch is everything before them. The result is
// multiplied by `scale` (the norm mode's 1, 1/sqrt(n) or 1/n).
enum class FftKind : uint8_t { C2C, R2C, C2R };
extern KernelStub<void (*)(FftKind kind, const Tensor& in, const Tensor& out, IntArrayRef signal, bool forward,
                           double scale)> fft_stub;

}  // namespace kindle
