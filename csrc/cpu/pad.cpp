// Reflect / replicate / circular padding (ops/pad_kernels.h): each output row copies its
// source row's middle in one run and gathers the few border elements; the backward adds each
// output element into its source, one plane per task.
#include <cstdint>
#include <cstring>

#include "cpu/parallel.h"
#include "ops/pad_kernels.h"

namespace kindle::cpu {
namespace {

// E: a type of the element's size (the gather only moves bytes).
template <typename E>
void pad_gather_typed(const Tensor& in, const Tensor& out, const PadGather& g) {
  const int64_t od = int64_t(g.z_src.size()), oh = int64_t(g.y_src.size()), ow = int64_t(g.x_src.size());
  const E* src = static_cast<const E*>(in.data_ptr());
  E* dst = static_cast<E*>(out.data_ptr());
  const int64_t* xs = g.x_src.data();
  const int64_t slabs = g.planes * od;  // (plane, output depth) pairs: oh rows each
  parallel_for(0, slabs, std::max<int64_t>(1, 32768 / std::max<int64_t>(oh * ow, 1)), [&](int64_t s0, int64_t s1) {
    for (int64_t sl = s0; sl < s1; ++sl) {
      int64_t z = sl % od, p = sl / od;
      const E* sz = src + (p * g.in_d + g.z_src[size_t(z)]) * g.in_h * g.in_w;
      E* d = dst + sl * oh * ow;
      for (int64_t y = 0; y < oh; ++y, d += ow) {
        const E* s = sz + g.y_src[size_t(y)] * g.in_w;
        for (int64_t x = 0; x < g.x_lo; ++x) d[x] = s[xs[x]];
        std::memcpy(d + g.x_lo, s, size_t(g.in_w) * sizeof(E));
        for (int64_t x = g.x_lo + g.in_w; x < ow; ++x) d[x] = s[xs[x]];
      }
    }
  });
}

struct Bytes16 {
  uint64_t a, b;
};

void pad_gather_kernel(const Tensor& in, const Tensor& out, const PadGather& g) {
  switch (itemsize(in.dtype())) {
    case 1: return pad_gather_typed<uint8_t>(in, out, g);
    case 2: return pad_gather_typed<uint16_t>(in, out, g);
    case 4: return pad_gather_typed<uint32_t>(in, out, g);
    case 8: return pad_gather_typed<uint64_t>(in, out, g);
    default: return pad_gather_typed<Bytes16>(in, out, g);
  }
}

void pad_scatter_kernel(const Tensor& grad_out, const Tensor& grad_in, const PadGather& g) {
  const int64_t od = int64_t(g.z_src.size()), oh = int64_t(g.y_src.size()), ow = int64_t(g.x_src.size());
  const int64_t in_plane = g.in_d * g.in_h * g.in_w, out_plane = od * oh * ow;
  dispatch_all_and_complex(grad_out.dtype(), "pad_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      KINDLE_INTERNAL_ASSERT(false, "pad_backward: bool gradient");
    } else {
      const T* go = static_cast<const T*>(grad_out.data_ptr());
      T* gi = static_cast<T*>(grad_in.data_ptr());
      parallel_for(0, g.planes, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
          T* plane = gi + p * in_plane;
          std::fill(plane, plane + in_plane, T(0));
          const T* o = go + p * out_plane;
          for (int64_t z = 0; z < od; ++z)
            for (int64_t y = 0; y < oh; ++y) {
              T* row = plane + (g.z_src[size_t(z)] * g.in_h + g.y_src[size_t(y)]) * g.in_w;
              const T* orow = o + (z * oh + y) * ow;
              for (int64_t x = 0; x < ow; ++x) row[g.x_src[size_t(x)]] = T(row[g.x_src[size_t(x)]] + orow[x]);
            }
        }
      });
    }
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(pad_gather_stub, DeviceType::CPU, &cpu::pad_gather_kernel);
KINDLE_REGISTER_KERNEL(pad_scatter_stub, DeviceType::CPU, &cpu::pad_scatter_kernel);
}  // namespace kindle
