// 2-D convolution as GEMMs, one image at a time: each image's windows are unfolded into a
// (C*kh*kw, oh*ow) matrix in a per-thread buffer (a 1x1, stride-1, unpadded convolution uses
// the image itself), so the output lands in NCHW without a transpose. Images run in parallel
// with single-threaded GEMMs; a lone image gets all threads inside the GEMM.
//
// Determinism: every image's result is computed the same way whatever the thread count; the
// weight gradient sums images in fixed blocks (a function of the batch size only), then adds
// the blocks in order.
#include <algorithm>
#include <cstring>

#include "cpu/blas.h"
#include "cpu/parallel.h"
#include "ops/kernels.h"

namespace kindle::cpu {
namespace {

template <typename T>
struct Conv {
  const WindowGeom& g;
  int64_t O, G, Cg, Og, CgK, L, HW;
  bool direct;  // 1x1, stride 1, no padding: the image is its own column matrix

  explicit Conv(const ConvGeom& cg)
      : g(cg.w), O(cg.O), G(cg.groups), Cg(cg.w.C / cg.groups), Og(cg.O / cg.groups),
        CgK(cg.w.C / cg.groups * cg.w.kh * cg.w.kw), L(cg.w.oh * cg.w.ow), HW(cg.w.H * cg.w.W),
        direct(cg.w.kh == 1 && cg.w.kw == 1 && cg.w.sh == 1 && cg.w.sw == 1 && cg.w.ph == 0 && cg.w.pw == 0) {}

  // The output columns [lo, hi) whose input column ox*sw + off lies inside the image.
  void valid_range(int64_t off, int64_t& lo, int64_t& hi) const {
    lo = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;
    hi = (g.W - 1 - off) < 0 ? 0 : std::min(g.ow, (g.W - 1 - off) / g.sw + 1);
    lo = std::min(lo, hi);
  }

  void im2col(const T* x, T* col) const {
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t ki = 0; ki < g.kh; ++ki)
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          T* row = col + ((c * g.kh + ki) * g.kw + kj) * L;
          const int64_t off = kj * g.dw - g.pw;
          int64_t lo, hi;
          valid_range(off, lo, hi);
          for (int64_t oy = 0; oy < g.oh; ++oy) {
            T* r = row + oy * g.ow;
            const int64_t ih = oy * g.sh - g.ph + ki * g.dh;
            if (ih < 0 || ih >= g.H) {
              std::fill(r, r + g.ow, T(0));
              continue;
            }
            const T* src = x + (c * g.H + ih) * g.W + off;
            std::fill(r, r + lo, T(0));
            if (g.sw == 1) std::memcpy(r + lo, src + lo, size_t(hi - lo) * sizeof(T));
            else for (int64_t ox = lo; ox < hi; ++ox) r[ox] = src[ox * g.sw];
            std::fill(r + hi, r + g.ow, T(0));
          }
        }
  }

  // dx (zeroed) += the adjoint of im2col applied to col.
  void col2im(const T* col, T* dx) const {
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t ki = 0; ki < g.kh; ++ki)
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const T* row = col + ((c * g.kh + ki) * g.kw + kj) * L;
          const int64_t off = kj * g.dw - g.pw;
          int64_t lo, hi;
          valid_range(off, lo, hi);
          for (int64_t oy = 0; oy < g.oh; ++oy) {
            const int64_t ih = oy * g.sh - g.ph + ki * g.dh;
            if (ih < 0 || ih >= g.H) continue;
            const T* r = row + oy * g.ow;
            T* dst = dx + (c * g.H + ih) * g.W + off;
            if (g.sw == 1)
              for (int64_t ox = lo; ox < hi; ++ox) dst[ox] += r[ox];
            else
              for (int64_t ox = lo; ox < hi; ++ox) dst[ox * g.sw] += r[ox];
          }
        }
  }

  int64_t col_size() const { return direct ? 0 : g.C * g.kh * g.kw * L; }

  // Runs f(first, last, buffer, gemm_threads) over the images [0, n), in parallel when there
  // are several images and threads.
  template <typename F>
  void over_images(int64_t n, DType dt, const F& f) const {
    const int nt = get_num_threads();
    auto run = [&](int64_t b, int64_t e, int threads) {
      Tensor buf = empty_tensor({col_size()}, dt);
      f(b, e, static_cast<T*>(buf.data_ptr()), threads);
    };
    if (n >= 2 && nt > 1 && !omp_in_parallel()) parallel_for(0, n, 1, [&](int64_t b, int64_t e) { run(b, e, 1); });
    else run(0, n, omp_in_parallel() ? 1 : nt);
  }
};

template <typename T>
void forward(const Tensor& input, const Tensor& weight, const Tensor* bias, const Tensor& out, const ConvGeom& cg) {
  Conv<T> cv(cg);
  const WindowGeom& g = cg.w;
  const T* x = static_cast<const T*>(input.data_ptr());
  const T* w = static_cast<const T*>(weight.data_ptr());
  const T* b = bias ? static_cast<const T*>(bias->data_ptr()) : nullptr;
  T* y = static_cast<T*>(out.data_ptr());
  cv.over_images(g.N, input.dtype(), [&](int64_t first, int64_t last, T* buf, int threads) {
    for (int64_t n = first; n < last; ++n) {
      const T* xn = x + n * g.C * cv.HW;
      T* yn = y + n * cv.O * cv.L;
      const T* cols = xn;
      if (!cv.direct) {
        cv.im2col(xn, buf);
        cols = buf;
      }
      if (b)
        for (int64_t o = 0; o < cv.O; ++o) std::fill(yn + o * cv.L, yn + (o + 1) * cv.L, b[o]);
      for (int64_t gi = 0; gi < cv.G; ++gi)
        gemm<T>(false, false, cv.Og, cv.L, cv.CgK, T(1), w + gi * cv.Og * cv.CgK, cv.CgK, cols + gi * cv.CgK * cv.L,
                cv.L, b ? T(1) : T(0), yn + gi * cv.Og * cv.L, cv.L, threads);
    }
  });
}

template <typename T>
void backward_input(const Tensor& grad_out, const Tensor& weight, const Tensor& grad_in, const ConvGeom& cg) {
  Conv<T> cv(cg);
  const WindowGeom& g = cg.w;
  const T* gy = static_cast<const T*>(grad_out.data_ptr());
  const T* w = static_cast<const T*>(weight.data_ptr());
  T* dx = static_cast<T*>(grad_in.data_ptr());
  cv.over_images(g.N, grad_out.dtype(), [&](int64_t first, int64_t last, T* buf, int threads) {
    for (int64_t n = first; n < last; ++n) {
      const T* gyn = gy + n * cv.O * cv.L;
      T* dxn = dx + n * g.C * cv.HW;
      T* cols = cv.direct ? dxn : buf;
      for (int64_t gi = 0; gi < cv.G; ++gi)
        gemm<T>(true, false, cv.CgK, cv.L, cv.Og, T(1), w + gi * cv.Og * cv.CgK, cv.CgK, gyn + gi * cv.Og * cv.L,
                cv.L, T(0), cols + gi * cv.CgK * cv.L, cv.L, threads);
      if (!cv.direct) {
        std::fill(dxn, dxn + g.C * cv.HW, T(0));
        cv.col2im(buf, dxn);
      }
    }
  });
}

template <typename T>
void backward_weight(const Tensor& grad_out, const Tensor& input, const Tensor& grad_weight, const ConvGeom& cg) {
  Conv<T> cv(cg);
  const WindowGeom& g = cg.w;
  const T* gy = static_cast<const T*>(grad_out.data_ptr());
  const T* x = static_cast<const T*>(input.data_ptr());
  T* dw = static_cast<T*>(grad_weight.data_ptr());
  const int64_t wsize = cv.O * cv.CgK;
  const int64_t blocks = std::min<int64_t>(g.N, 4);
  if (blocks == 0) {
    std::fill(dw, dw + wsize, T(0));
    return;
  }
  Tensor partial = empty_tensor({blocks, wsize}, grad_out.dtype());
  T* part = static_cast<T*>(partial.data_ptr());
  const int nt = get_num_threads();
  auto block = [&](int64_t bi, T* buf, int threads) {
    const int64_t first = bi * g.N / blocks, last = (bi + 1) * g.N / blocks;
    T* acc = part + bi * wsize;
    for (int64_t n = first; n < last; ++n) {
      const T* xn = x + n * g.C * cv.HW;
      const T* cols = xn;
      if (!cv.direct) {
        cv.im2col(xn, buf);
        cols = buf;
      }
      for (int64_t gi = 0; gi < cv.G; ++gi)
        gemm<T>(false, true, cv.Og, cv.CgK, cv.L, T(1), gy + n * cv.O * cv.L + gi * cv.Og * cv.L, cv.L,
                cols + gi * cv.CgK * cv.L, cv.L, n == first ? T(0) : T(1), acc + gi * cv.Og * cv.CgK, cv.CgK,
                threads);
    }
  };
  if (blocks >= 2) {
    parallel_for(0, blocks, 1, [&](int64_t b, int64_t e) {
      Tensor buf = empty_tensor({cv.col_size()}, grad_out.dtype());
      for (int64_t bi = b; bi < e; ++bi) block(bi, static_cast<T*>(buf.data_ptr()), 1);
    });
  } else {
    Tensor buf = empty_tensor({cv.col_size()}, grad_out.dtype());
    block(0, static_cast<T*>(buf.data_ptr()), omp_in_parallel() ? 1 : nt);
  }
  std::memcpy(dw, part, size_t(wsize) * sizeof(T));
  for (int64_t bi = 1; bi < blocks; ++bi)
    for (int64_t i = 0; i < wsize; ++i) dw[i] += part[bi * wsize + i];
}

template <typename F>
void dispatch_gemm_float(DType d, const char* op, const F& f) {
  if (d == kFloat32) f(float{});
  else if (d == kFloat64) f(double{});
  else KINDLE_CHECK(false, op, ": the GEMM kernel takes float32 or float64, got ", d);
}

void conv2d_kernel(const Tensor& input, const Tensor& weight, const Tensor* bias, const Tensor& out, const ConvGeom& g) {
  dispatch_gemm_float(input.dtype(), "conv2d", [&](auto t) { forward<decltype(t)>(input, weight, bias, out, g); });
}
void conv2d_backward_input_kernel(const Tensor& grad_out, const Tensor& weight, const Tensor& grad_in,
                                  const ConvGeom& g) {
  dispatch_gemm_float(grad_out.dtype(), "conv2d_backward_input",
                      [&](auto t) { backward_input<decltype(t)>(grad_out, weight, grad_in, g); });
}
void conv2d_backward_weight_kernel(const Tensor& grad_out, const Tensor& input, const Tensor& grad_weight,
                                   const ConvGeom& g) {
  dispatch_gemm_float(grad_out.dtype(), "conv2d_backward_weight",
                      [&](auto t) { backward_weight<decltype(t)>(grad_out, input, grad_weight, g); });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor*, const Tensor&, const ConvGeom&)> conv2d_stub{"conv2d"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const ConvGeom&)> conv2d_backward_input_stub{
    "conv2d_backward_input"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const ConvGeom&)> conv2d_backward_weight_stub{
    "conv2d_backward_weight"};
KINDLE_REGISTER_KERNEL(conv2d_stub, DeviceType::CPU, &cpu::conv2d_kernel);
KINDLE_REGISTER_KERNEL(conv2d_backward_input_stub, DeviceType::CPU, &cpu::conv2d_backward_input_kernel);
KINDLE_REGISTER_KERNEL(conv2d_backward_weight_stub, DeviceType::CPU, &cpu::conv2d_backward_weight_kernel);
}  // namespace kindle
