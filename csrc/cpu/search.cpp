// Binary search of values in sorted rows (searchsorted, bucketize).
#include "cpu/loops.h"
#include "cpu/parallel.h"
#include "ops/scan_kernels.h"

namespace kindle::cpu {
namespace {

// The comparisons are written so that NaN, compared false with everything, sends the search
// right: a NaN value lands after every boundary, as in PyTorch.
void searchsorted_kernel(const Tensor& seq, const Tensor& values, const Tensor* sorter, const Tensor& out, bool right) {
  int64_t N = seq.size(-1), B = N ? seq.numel() / N : 0;
  int64_t K = values.numel() / std::max<int64_t>(B, 1);  // values per row of seq
  dispatch_all(seq.dtype(), "searchsorted", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = opmath_t<T>;
    const T* s = static_cast<const T*>(seq.data_ptr());
    const T* v = static_cast<const T*>(values.data_ptr());
    const int64_t* order = sorter ? static_cast<const int64_t*>(sorter->data_ptr()) : nullptr;
    int64_t* o = static_cast<int64_t*>(out.data_ptr());
    parallel_for(0, B * K, 2048, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        int64_t b = i / K;
        const T* row = s + b * N;
        const int64_t* ord = order ? order + b * N : nullptr;
        C x = C(v[i]);
        int64_t lo = 0, hi = N;
        while (lo < hi) {
          int64_t mid = lo + (hi - lo) / 2;
          C m = C(row[ord ? ord[mid] : mid]);
          bool go_right = right ? !(m > x) : !(m >= x);
          if (go_right) lo = mid + 1; else hi = mid;
        }
        o[i] = lo;
      }
    });
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(searchsorted_stub, DeviceType::CPU, &cpu::searchsorted_kernel);
}  // namespace kindle
