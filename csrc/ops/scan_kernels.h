// Kernels of the running scans and the sorted-sequence search (csrc/cpu/scan.cpp,
// csrc/cpu/search.cpp), over contiguous rows.
#pragma once
#include "ops/kernels.h"

namespace kindle {

// Over contiguous rows [M, R]: running max (or min) and the index where it was reached.
extern KernelStub<void (*)(const Tensor& in, const Tensor& values, const Tensor& indices, bool is_max)> cum_extreme_stub;
// Over contiguous floating rows [M, R]: running log(sum(exp)).
extern KernelStub<void (*)(const Tensor& in, const Tensor& out)> logcumsumexp_stub;
// For each value, its insertion point in the sorted row of `seq` ([B, N], contiguous, read in
// `sorter` order when given) that it belongs to: values are [B, K] (B = 1: one row for all);
// int64 out, left (first >= value) or right (first > value).
extern KernelStub<void (*)(const Tensor& seq, const Tensor& values, const Tensor* sorter, const Tensor& out,
                           bool right)> searchsorted_stub;

}  // namespace kindle
