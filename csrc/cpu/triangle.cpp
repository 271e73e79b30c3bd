// tril / triu (ops/triangle_kernels.h): bytes only (zero bits are zero in every dtype), a row
// at a time, the rows split across threads.
#include <algorithm>
#include <cstring>

#include "cpu/parallel.h"
#include "ops/triangle_kernels.h"

namespace kindle::cpu {
namespace {

void triangle_kernel(const Tensor& in, const Tensor& out, int64_t diagonal, bool lower) {
  const int64_t r = out.size(-2), c = out.size(-1), rows = out.numel() / std::max<int64_t>(c, 1);
  const size_t es = itemsize(out.dtype());
  const auto* src = static_cast<const char*>(in.data_ptr());
  auto* dst = static_cast<char*>(out.data_ptr());
  const bool copy = src != dst;
  parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(c, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      const int64_t i = row % r;
      // columns [keep_lo, keep_hi) are the triangle's; the others become zero
      const int64_t edge = std::clamp<int64_t>(lower ? i + diagonal + 1 : i + diagonal, 0, c);
      const int64_t keep_lo = lower ? 0 : edge, keep_hi = lower ? edge : c;
      char* d = dst + size_t(row * c) * es;
      if (copy) std::memcpy(d + size_t(keep_lo) * es, src + size_t(row * c + keep_lo) * es, size_t(keep_hi - keep_lo) * es);
      if (lower) std::memset(d + size_t(keep_hi) * es, 0, size_t(c - keep_hi) * es);
      else std::memset(d, 0, size_t(keep_lo) * es);
    }
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(triangle_stub, DeviceType::CPU, &cpu::triangle_kernel);
}  // namespace kindle
