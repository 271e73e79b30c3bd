// im2col / col2im for convolution and pooling: rows of (N, L, C*kh*kw), one per output position.
#include "cpu/parallel.h"
#include "ops/kernels.h"

namespace kindle::cpu {
namespace {

template <typename T>
void im2col_typed(const T* img, T* cols, const WindowGeom& g) {
  const int64_t K = g.C * g.kh * g.kw, L = g.oh * g.ow;
  // One (n, oh) output row per task: its ow rows of the matrix are written contiguously.
  parallel_for(0, g.N * g.oh, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.ow * K)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int64_t n = t / g.oh, y = t % g.oh;
      const T* im = img + n * g.C * g.H * g.W;
      T* row = cols + (n * L + y * g.ow) * K;
      for (int64_t x = 0; x < g.ow; ++x, row += K) {
        T* r = row;
        for (int64_t c = 0; c < g.C; ++c) {
          const T* ch = im + c * g.H * g.W;
          for (int64_t i = 0; i < g.kh; ++i) {
            int64_t ih = y * g.sh - g.ph + i * g.dh;
            bool row_in = ih >= 0 && ih < g.H;
            for (int64_t j = 0; j < g.kw; ++j) {
              int64_t iw = x * g.sw - g.pw + j * g.dw;
              *r++ = (row_in && iw >= 0 && iw < g.W) ? ch[ih * g.W + iw] : T(0);
            }
          }
        }
      }
    }
  });
}

template <typename T>
void col2im_typed(const T* cols, T* img, const WindowGeom& g) {
  using A = opmath_t<T>;
  const int64_t K = g.C * g.kh * g.kw, L = g.oh * g.ow;
  // One (n, c) image plane per task: the plane is written by one thread only.
  parallel_for(0, g.N * g.C, 1, [&](int64_t b, int64_t e) {
    std::vector<A> acc(size_t(g.H * g.W));
    for (int64_t t = b; t < e; ++t) {
      int64_t n = t / g.C, c = t % g.C;
      std::fill(acc.begin(), acc.end(), A(0));
      const T* base = cols + n * L * K + c * g.kh * g.kw;
      for (int64_t y = 0; y < g.oh; ++y)
        for (int64_t x = 0; x < g.ow; ++x) {
          const T* r = base + (y * g.ow + x) * K;
          for (int64_t i = 0; i < g.kh; ++i) {
            int64_t ih = y * g.sh - g.ph + i * g.dh;
            if (ih < 0 || ih >= g.H) continue;
            for (int64_t j = 0; j < g.kw; ++j) {
              int64_t iw = x * g.sw - g.pw + j * g.dw;
              if (iw >= 0 && iw < g.W) acc[size_t(ih * g.W + iw)] += A(r[i * g.kw + j]);
            }
          }
        }
      T* out = img + (n * g.C + c) * g.H * g.W;
      for (int64_t k = 0; k < g.H * g.W; ++k) out[k] = T(acc[size_t(k)]);
    }
  });
}

void im2col_kernel(const Tensor& image, const Tensor& cols, const WindowGeom& g) {
  dispatch_floating(image.dtype(), "im2col", [&](auto tag) {
    using T = typename decltype(tag)::type;
    im2col_typed<T>(static_cast<const T*>(image.data_ptr()), static_cast<T*>(cols.data_ptr()), g);
  });
}

void col2im_kernel(const Tensor& cols, const Tensor& image, const WindowGeom& g) {
  dispatch_floating(cols.dtype(), "col2im", [&](auto tag) {
    using T = typename decltype(tag)::type;
    col2im_typed<T>(static_cast<const T*>(cols.data_ptr()), static_cast<T*>(image.data_ptr()), g);
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(im2col_stub, DeviceType::CPU, &cpu::im2col_kernel);
KINDLE_REGISTER_KERNEL(col2im_stub, DeviceType::CPU, &cpu::col2im_kernel);
}  // namespace kindle
