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
#include <type_traits>

#include <immintrin.h>

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


// Depthwise convolution (one input channel per group): a direct stencil per output plane. GEMMs
// with one input channel would be (1 x k*k) by (k*k x L) products, all overhead.
template <typename T>
struct Depthwise {
  const Conv<T>& cv;
  const WindowGeom& g;
  int64_t mult;  // output channels per input channel
  explicit Depthwise(const Conv<T>& c) : cv(c), g(c.g), mult(c.O / c.g.C) {}

  // Vector width in elements: rows are computed in whole vectors so that the taps' loads and
  // stores never overlap a partial store (store-to-load forwarding stalls dominated otherwise).
  static constexpr int64_t kLanes = 32 / sizeof(T);
  int64_t ow_r() const { return (g.ow + kLanes - 1) / kLanes * kLanes; }
  // The zero-padded input plane: wide enough for ow_r() outputs of every tap.
  int64_t pad_w() const { return std::max(g.W + 2 * g.pw, (ow_r() - 1) * g.sw + (g.kw - 1) * g.dw + 1); }
  int64_t pad_h() const { return std::max(g.H + 2 * g.ph, (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1); }
  // One spare row: the last input row's margin fill runs pw elements past the padded plane.
  int64_t scratch_size() const { return (pad_h() + 1) * pad_w() + ow_r(); }

  // y (one output plane) = bias + the stencil of w over x (one input plane); scratch holds
  // scratch_size() elements.
  void plane_forward(const T* x, const T* w, T bias, T* y, T* scratch) const {
    const int64_t Wp = pad_w(), Hp = pad_h(), owr = ow_r();
    T* xp = scratch;
    T* acc = scratch + (Hp + 1) * Wp;
    // Only the margins need zeros; the plane's rows are copied in between.
    std::fill(xp, xp + g.ph * Wp + g.pw, T(0));
    for (int64_t i = 0; i < g.H; ++i) {
      T* r = xp + (i + g.ph) * Wp + g.pw;
      std::memcpy(r, x + i * g.W, size_t(g.W) * sizeof(T));
      std::fill(r + g.W, r + Wp, T(0));  // right margin, then the next row's left margin
    }
    std::fill(xp + (g.H + g.ph) * Wp + g.pw, xp + (Hp + 1) * Wp, T(0));
    if constexpr (std::is_same_v<T, float>) {
      if (g.sw == 1) {  // the common case, by hand: 8 outputs in one register, all taps
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          for (int64_t ox0 = 0; ox0 < g.ow; ox0 += 8) {
            __m256 a = _mm256_set1_ps(bias);
            for (int64_t ki = 0; ki < g.kh; ++ki) {
              const float* row = xp + (oy * g.sh + ki * g.dh) * Wp + ox0;
              const float* wr = w + ki * g.kw;
              for (int64_t kj = 0; kj < g.kw; ++kj)
                a = _mm256_fmadd_ps(_mm256_set1_ps(wr[kj]), _mm256_loadu_ps(row + kj * g.dw), a);
            }
            float* dst = y + oy * g.ow + ox0;
            if (ox0 + 8 <= g.ow) {
              _mm256_storeu_ps(dst, a);
            } else {
              _mm256_storeu_ps(acc, a);
              for (int64_t l = 0; l < g.ow - ox0; ++l) dst[l] = acc[l];
            }
          }
        }
        return;
      }
    }
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < owr; ++ox) acc[ox] = bias;
      for (int64_t ki = 0; ki < g.kh; ++ki)
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const T wv = w[ki * g.kw + kj];
          const T* src = xp + (oy * g.sh + ki * g.dh) * Wp + kj * g.dw;
          for (int64_t ox = 0; ox < owr; ++ox) acc[ox] += wv * src[ox * g.sw];
        }
      std::memcpy(y + oy * g.ow, acc, size_t(g.ow) * sizeof(T));
    }
  }
  // dx (one input plane) += the adjoint stencil applied to gy (one output plane).
  void plane_backward_input(const T* gy, const T* w, T* dx) const {
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const T wv = w[ki * g.kw + kj];
        const int64_t off = kj * g.dw - g.pw;
        int64_t lo, hi;
        cv.valid_range(off, lo, hi);
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t ih = oy * g.sh - g.ph + ki * g.dh;
          if (ih < 0 || ih >= g.H) continue;
          T* dst = dx + ih * g.W + off;
          const T* src = gy + oy * g.ow;
          if (g.sw == 1)
            for (int64_t ox = lo; ox < hi; ++ox) dst[ox] += wv * src[ox];
          else
            for (int64_t ox = lo; ox < hi; ++ox) dst[ox * g.sw] += wv * src[ox];
        }
      }
  }
  // dw (one filter) += the correlation of gy (one output plane) with x (one input plane).
  void plane_backward_weight(const T* gy, const T* x, T* dw) const {
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t off = kj * g.dw - g.pw;
        int64_t lo, hi;
        cv.valid_range(off, lo, hi);
        T acc = 0;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t ih = oy * g.sh - g.ph + ki * g.dh;
          if (ih < 0 || ih >= g.H) continue;
          const T* src = x + ih * g.W + off;
          const T* gr = gy + oy * g.ow;
          T row = 0;
          if (g.sw == 1)
            for (int64_t ox = lo; ox < hi; ++ox) row += gr[ox] * src[ox];
          else
            for (int64_t ox = lo; ox < hi; ++ox) row += gr[ox] * src[ox * g.sw];
          acc += row;
        }
        dw[ki * g.kw + kj] += acc;
      }
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
  if (cv.Cg == 1 && cv.G > 1) {
    Depthwise<T> d(cv);
    parallel_for(0, g.N * cv.O, 1, [&](int64_t b0, int64_t e0) {
      std::vector<T> scratch(size_t(d.scratch_size()));
      for (int64_t t = b0; t < e0; ++t) {
        const int64_t n = t / cv.O, o = t % cv.O;
        d.plane_forward(x + (n * g.C + o / d.mult) * cv.HW, w + o * g.kh * g.kw, b ? b[o] : T(0), y + t * cv.L,
                        scratch.data());
      }
    });
    return;
  }
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
  if (cv.Cg == 1 && cv.G > 1) {
    Depthwise<T> d(cv);
    parallel_for(0, g.N * g.C, 1, [&](int64_t b0, int64_t e0) {
      for (int64_t t = b0; t < e0; ++t) {
        const int64_t n = t / g.C, c = t % g.C;
        T* dp = dx + t * cv.HW;
        std::fill(dp, dp + cv.HW, T(0));
        for (int64_t o = c * d.mult; o < (c + 1) * d.mult; ++o)
          d.plane_backward_input(gy + (n * cv.O + o) * cv.L, w + o * g.kh * g.kw, dp);
      }
    });
    return;
  }
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
  if (cv.Cg == 1 && cv.G > 1) {  // one filter per task, images summed in order
    Depthwise<T> d(cv);
    parallel_for(0, cv.O, 1, [&](int64_t b0, int64_t e0) {
      for (int64_t o = b0; o < e0; ++o) {
        T* dwo = dw + o * g.kh * g.kw;
        std::fill(dwo, dwo + g.kh * g.kw, T(0));
        for (int64_t n = 0; n < g.N; ++n)
          d.plane_backward_weight(gy + (n * cv.O + o) * cv.L, x + (n * g.C + o / d.mult) * cv.HW, dwo);
      }
    });
    return;
  }
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
