// LSTM pointwise kernels (see ops/rnn_kernels.h): one pass over the gates instead of a dozen
// elementwise ops (and their autograd nodes) per time step.
#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "cpu/blas.h"
#include "cpu/parallel.h"
#include "cpu/sgemm.h"
#include "cpu/vec_math.h"
#include "ops/rnn_kernels.h"

namespace kindle::cpu {
namespace {

// libmvec's vector exp/tanh inside `omp simd` loops (the scalar libm calls dominated).
template <typename T>
inline T sigmoid(T x) { return T(1) / (T(1) + vm::exp(-x)); }

template <typename T>
void forward(const Tensor& gates, const Tensor& cx, const Tensor& hy, const Tensor& cy) {
  const int64_t B = cx.numel() == 0 ? 0 : gates.size(0), H = cx.size(-1);
  const T *g = static_cast<const T*>(gates.data_ptr()), *c = static_cast<const T*>(cx.data_ptr());
  T *h = static_cast<T*>(hy.data_ptr()), *cn = static_cast<T*>(cy.data_ptr());
  // At least kGrainSize elements per task: a recurrent step (20 x 256) stays on one thread.
  parallel_for(0, B, rows_grain(H), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const T* __restrict gr = g + b * 4 * H;
      const T* __restrict cr = c + b * H;
      T* __restrict hr = h + b * H;
      T* __restrict cnr = cn + b * H;
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        T i = sigmoid(gr[j]), f = sigmoid(gr[H + j]), gg = vm::tanh(gr[2 * H + j]), o = sigmoid(gr[3 * H + j]);
        T cv = f * cr[j] + i * gg;
        cnr[j] = cv;
        hr[j] = o * vm::tanh(cv);
      }
    }
  });
}

template <typename T>
void backward(const Tensor* ghy, const Tensor* gcy, const Tensor& gates, const Tensor& cx, const Tensor& cy,
              const Tensor& dgates, const Tensor& dcx) {
  const int64_t B = cx.numel() == 0 ? 0 : gates.size(0), H = cx.size(-1);
  const T *g = static_cast<const T*>(gates.data_ptr()), *c = static_cast<const T*>(cx.data_ptr()),
          *cn = static_cast<const T*>(cy.data_ptr());
  const T *gh = ghy ? static_cast<const T*>(ghy->data_ptr()) : nullptr,
          *gc = gcy ? static_cast<const T*>(gcy->data_ptr()) : nullptr;
  T *dg = static_cast<T*>(dgates.data_ptr()), *dc = static_cast<T*>(dcx.data_ptr());
  const std::vector<T> zero(size_t(H), T(0));  // stands in for a missing output gradient
  parallel_for(0, B, rows_grain(H), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const T* __restrict gr = g + b * 4 * H;
      T* __restrict dr = dg + b * 4 * H;
      const T* __restrict cr = c + b * H;
      const T* __restrict cnr = cn + b * H;
      const T* __restrict ghr = gh ? gh + b * H : zero.data();
      const T* __restrict gcr = gc ? gc + b * H : zero.data();
      T* __restrict dcr = dc + b * H;
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        T i = sigmoid(gr[j]), f = sigmoid(gr[H + j]), gg = vm::tanh(gr[2 * H + j]), o = sigmoid(gr[3 * H + j]);
        T tc = vm::tanh(cnr[j]);
        T dh = ghr[j];
        T dct = gcr[j] + dh * o * (T(1) - tc * tc);
        dr[j] = dct * gg * i * (T(1) - i);
        dr[H + j] = dct * cr[j] * f * (T(1) - f);
        dr[2 * H + j] = dct * i * (T(1) - gg * gg);
        dr[3 * H + j] = dh * tc * o * (T(1) - o);
        dcr[j] = dct * f;
      }
    }
  });
}

// One step's product with the recurrent weight, y (B x m) = x (B x k) op(W)^T + beta y, op(W) of
// m x k, packed once for every step. Where Kindle's SGEMM runs (sgemm.h) and the batch has at least
// 8 rows, op(W) is its left operand and the product is computed transposed (m x B: the batch is
// the kernel's columns), then added into y. The forward step of a batch of one or two takes dot
// products with W's rows as they are stored, on every thread (bands of W's rows, each output the
// same sum at any thread count): packing W cost a copy of it per sequence, and MKL's packed
// product of one row ran on one thread (a word-level LSTM's batch-1 inference: 37.5 -> 30 ms at
// one thread, 31 -> 22 at two). From batch 4 MKL's packed kernel was faster on one thread (the
// choice cannot depend on the thread count: the bits would). Otherwise MKL's packed GEMM with
// op(W)^T packed.
constexpr int64_t kDotBatch = 2;

template <typename T>
class StepProduct {
 public:
  // op(W) = W (stored m x k) or W^T (W stored k x m), rows ld apart.
  StepProduct(bool trans_w, int64_t B, int64_t m, int64_t k, const T* w, int64_t ld) : B_(B), m_(m), k_(k) {
    if constexpr (std::is_same_v<T, float>) {
      if (!trans_w && B <= kDotBatch && m >= 8 && sgemm::available()) {
        rows_ = w;
        ld_ = ld;
        return;
      }
      if (B >= 8 && sgemm::preferred()) {
        own_ = std::make_unique<sgemm::PackedA>(trans_w, m, k, w, ld);
        tmp_.resize(size_t(m * B));
        return;
      }
    }
    mkl_ = std::make_unique<PackedGemm<T>>(!trans_w, B, m, k, w, ld);
  }
  void multiply(const T* x, int64_t ldx, T beta, T* y, int64_t ldy) {
    if (rows_) return gemm<T>(false, true, B_, m_, k_, T(1), x, ldx, rows_, ld_, beta, y, ldy, get_num_threads());
    if (mkl_) return mkl_->multiply(x, ldx, beta, y, ldy);
    if constexpr (std::is_same_v<T, float>) {
      sgemm::multiply(*own_, true, B_, 1.f, x, ldx, 0.f, tmp_.data(), B_);
      // y += tmp^T in blocks of 64 columns of y, whose 64 rows of tmp stay in L1 across the batch.
      constexpr int64_t kBlock = 64;
      for (int64_t j0 = 0; j0 < m_; j0 += kBlock) {
        const int64_t j1 = std::min(m_, j0 + kBlock);
        for (int64_t b = 0; b < B_; ++b) {
          T* yr = y + b * ldy;
          const T* t = tmp_.data() + b;
          if (beta == T(0))
            for (int64_t j = j0; j < j1; ++j) yr[j] = t[j * B_];
          else
            for (int64_t j = j0; j < j1; ++j) yr[j] = beta * yr[j] + t[j * B_];
        }
      }
    }
  }

 private:
  int64_t B_, m_, k_, ld_ = 0;
  const T* rows_ = nullptr;
  std::unique_ptr<PackedGemm<T>> mkl_;
  std::unique_ptr<sgemm::PackedA> own_;
  std::vector<T> tmp_;
};

// The whole recurrence of one layer and direction: G holds the input projections on entry and
// the gates on exit; w_hh is packed once for all steps.
template <typename T>
void recurrence(const Tensor& G, const Tensor& h0, const Tensor& c0, const Tensor& w_hh, const Tensor& out,
                const Tensor& cells, bool reverse) {
  const int64_t steps = G.size(0), B = G.size(1), H4 = G.size(2), H = H4 / 4;
  StepProduct<T> wt(false, B, H4, H, static_cast<const T*>(w_hh.data_ptr()), H);
  Tensor h = h0, c = c0;
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = reverse ? steps - 1 - s : s;
    Tensor g = G.select(0, t), hy = out.select(0, t), cy = cells.select(0, t);
    wt.multiply(static_cast<const T*>(h.data_ptr()), H, T(1), static_cast<T*>(g.data_ptr()), H4);
    forward<T>(g, c, hy, cy);
    h = hy;
    c = cy;
  }
}

// Its backward, steps in reverse: dh and dc hold the gradients of the last step's h and c on
// entry and of h0 and c0 on exit; dG receives the gates' gradients.
template <typename T>
void recurrence_backward(const Tensor* dout, const Tensor& G, const Tensor& c0, const Tensor& cells,
                         const Tensor& w_hh, const Tensor& dG, const Tensor& dh, const Tensor& dc, bool reverse) {
  const int64_t steps = G.size(0), B = G.size(1), H4 = G.size(2), H = H4 / 4;
  StepProduct<T> w(true, B, H, H4, static_cast<const T*>(w_hh.data_ptr()), H);
  Tensor gh = empty_tensor({B, H}, dh.dtype(), dh.device()), dcp = empty_tensor({B, H}, dc.dtype(), dc.device());
  T* ghp = static_cast<T*>(gh.data_ptr());
  T* dhp = static_cast<T*>(dh.data_ptr());
  for (int64_t s = steps - 1; s >= 0; --s) {
    const int64_t t = reverse ? steps - 1 - s : s, prev = reverse ? t + 1 : t - 1;
    if (dout) {
      const T* d = static_cast<const T*>(dout->data_ptr()) + t * B * H;
      for (int64_t i = 0; i < B * H; ++i) ghp[i] = dhp[i] + d[i];
    } else {
      std::copy(dhp, dhp + B * H, ghp);
    }
    Tensor dg = dG.select(0, t);
    backward<T>(&gh, &dc, G.select(0, t), s == 0 ? c0 : cells.select(0, prev), cells.select(0, t), dg, dcp);
    w.multiply(static_cast<const T*>(dg.data_ptr()), H4, T(0), dhp, H);
    std::copy(static_cast<const T*>(dcp.data_ptr()), static_cast<const T*>(dcp.data_ptr()) + B * H,
              static_cast<T*>(dc.data_ptr()));
  }
}

void lstm_recurrence_kernel(const Tensor& G, const Tensor& h0, const Tensor& c0, const Tensor& w_hh,
                            const Tensor& out, const Tensor& cells, bool reverse) {
  if (G.dtype() == kFloat64) recurrence<double>(G, h0, c0, w_hh, out, cells, reverse);
  else recurrence<float>(G, h0, c0, w_hh, out, cells, reverse);
}
void lstm_recurrence_backward_kernel(const Tensor* dout, const Tensor& G, const Tensor& c0, const Tensor& cells,
                                     const Tensor& w_hh, const Tensor& dG, const Tensor& dh, const Tensor& dc,
                                     bool reverse) {
  if (G.dtype() == kFloat64) recurrence_backward<double>(dout, G, c0, cells, w_hh, dG, dh, dc, reverse);
  else recurrence_backward<float>(dout, G, c0, cells, w_hh, dG, dh, dc, reverse);
}

void lstm_pointwise_kernel(const Tensor& gates, const Tensor& cx, const Tensor& hy, const Tensor& cy) {
  if (gates.dtype() == kFloat64) forward<double>(gates, cx, hy, cy);
  else forward<float>(gates, cx, hy, cy);
}
void lstm_pointwise_backward_kernel(const Tensor* ghy, const Tensor* gcy, const Tensor& gates, const Tensor& cx,
                                    const Tensor& cy, const Tensor& dgates, const Tensor& dcx) {
  if (gates.dtype() == kFloat64) backward<double>(ghy, gcy, gates, cx, cy, dgates, dcx);
  else backward<float>(ghy, gcy, gates, cx, cy, dgates, dcx);
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(lstm_pointwise_stub, DeviceType::CPU, &cpu::lstm_pointwise_kernel);
KINDLE_REGISTER_KERNEL(lstm_pointwise_backward_stub, DeviceType::CPU, &cpu::lstm_pointwise_backward_kernel);
KINDLE_REGISTER_KERNEL(lstm_recurrence_stub, DeviceType::CPU, &cpu::lstm_recurrence_kernel);
KINDLE_REGISTER_KERNEL(lstm_recurrence_backward_stub, DeviceType::CPU, &cpu::lstm_recurrence_backward_kernel);
}  // namespace kindle
