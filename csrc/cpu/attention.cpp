// Fused attention (see ops/attention_kernels.h). Forward: for each block of queries, the key
// blocks are visited once with a running maximum and sum (online softmax). Backward recomputes
// each block's probabilities from the saved log-sum-exp. One task per (batch, head): every
// head is computed the same way whatever the thread count, and its gradient sums run in a
// fixed order.
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/blas.h"
#include "cpu/parallel.h"
#include "cpu/vec_math.h"
#include "ops/attention_kernels.h"

namespace kindle::cpu {
namespace {

constexpr int64_t kBr = 64, kBc = 64;  // query and key block sizes of the backward pass
// The forward's: wider key blocks (a ViT's 197 keys in one block, not 64, 64, 64 and 5) took
// 0.85-0.95 of the time of 64 (the fewer, larger products and fewer rescaled rows).
constexpr int64_t kFwdBr = 64, kFwdBc = 256;

// Runs f(bh, gemm_threads) for every head: heads in parallel, or one head with all threads.
template <typename F>
void over_heads(int64_t bh, const F& f) {
  const int nt = get_num_threads();
  if (bh >= 2 && nt > 1 && !omp_in_parallel())
    parallel_for(0, bh, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) f(i, 1);
    });
  else
    for (int64_t i = 0; i < bh; ++i) f(i, omp_in_parallel() ? 1 : nt);
}

template <typename T>
void forward(const Tensor& q_, const Tensor& k_, const Tensor& v_, const Tensor& out_, const Tensor& lse_,
             const AttentionGeom& g) {
  const T *Q = static_cast<const T*>(q_.data_ptr()), *K = static_cast<const T*>(k_.data_ptr()),
          *V = static_cast<const T*>(v_.data_ptr());
  T *O = static_cast<T*>(out_.data_ptr()), *LSE = static_cast<T*>(lse_.data_ptr());
  const T inf = std::numeric_limits<T>::infinity();
  over_heads(g.BH, [&](int64_t h, int threads) {
    std::vector<T> s(size_t(kFwdBr * kFwdBc)), acc(size_t(kFwdBr * g.Ev)), m(kFwdBr), l(kFwdBr);
    const T *q = Q + g.q.at(h, g.heads), *k = K + g.k.at(h, g.heads), *v = V + g.v.at(h, g.heads);
    T *o = O + g.out.at(h, g.heads), *lse = LSE + h * g.L;
    const int64_t qr = g.q.row, kr = g.k.row, vr = g.v.row, orow_stride = g.out.row;
    for (int64_t i0 = 0; i0 < g.L; i0 += kFwdBr) {
      const int64_t br = std::min(kFwdBr, g.L - i0);
      std::fill(m.begin(), m.end(), -inf);
      std::fill(l.begin(), l.end(), T(0));
      std::fill(acc.begin(), acc.end(), T(0));
      const int64_t jend = g.causal ? std::min(g.S, i0 + br) : g.S;
      for (int64_t j0 = 0; j0 < jend; j0 += kFwdBc) {
        const int64_t bc = std::min(kFwdBc, jend - j0);
        gemm<T>(false, true, br, bc, g.E, T(g.scale), q + i0 * qr, qr, k + j0 * kr, kr, T(0), s.data(), bc, threads);
        for (int64_t r = 0; r < br; ++r) {
          T* sr = s.data() + r * bc;
          const int64_t lim = g.causal ? std::min(bc, i0 + r - j0 + 1) : bc;  // keys j0 + c <= i0 + r
          // (std::max's NaN rule kept this loop scalar: a serial chain of compares that took a
          // fifth of the forward's time)
          T mx = m[r];
#pragma omp simd reduction(max : mx)
          for (int64_t c = 0; c < lim; ++c) mx = sr[c] > mx ? sr[c] : mx;
          if (mx == -inf) {  // nothing to attend to yet
            for (int64_t c = 0; c < bc; ++c) sr[c] = 0;
            continue;
          }
          T sum = 0;
#pragma omp simd
          for (int64_t c = 0; c < lim; ++c) sr[c] = vm::exp(sr[c] - mx);
#pragma omp simd reduction(+ : sum)
          for (int64_t c = 0; c < lim; ++c) sum += sr[c];
          for (int64_t c = lim; c < bc; ++c) sr[c] = 0;
          const T corr = std::exp(m[r] - mx);  // 0 when m[r] was -inf
          l[r] = l[r] * corr + sum;
          m[r] = mx;
          T* ar = acc.data() + r * g.Ev;
          for (int64_t e = 0; e < g.Ev; ++e) ar[e] *= corr;
        }
        gemm<T>(false, false, br, g.Ev, bc, T(1), s.data(), bc, v + j0 * vr, vr, T(1), acc.data(), g.Ev, threads);
      }
      for (int64_t r = 0; r < br; ++r) {
        T* orow = o + (i0 + r) * orow_stride;
        const T* ar = acc.data() + r * g.Ev;
        if (l[r] > 0) {
          const T inv = T(1) / l[r];
          for (int64_t e = 0; e < g.Ev; ++e) orow[e] = ar[e] * inv;
          lse[i0 + r] = m[r] + std::log(l[r]);
        } else {
          for (int64_t e = 0; e < g.Ev; ++e) orow[e] = 0;
          lse[i0 + r] = inf;
        }
      }
    }
  });
}

template <typename T>
void backward(const Tensor& go_, const Tensor& q_, const Tensor& k_, const Tensor& v_, const Tensor& out_,
              const Tensor& lse_, const Tensor& dq_, const Tensor& dk_, const Tensor& dv_, const AttentionGeom& g) {
  const T *GO = static_cast<const T*>(go_.data_ptr()), *Q = static_cast<const T*>(q_.data_ptr()),
          *K = static_cast<const T*>(k_.data_ptr()), *V = static_cast<const T*>(v_.data_ptr()),
          *O = static_cast<const T*>(out_.data_ptr()), *LSE = static_cast<const T*>(lse_.data_ptr());
  T *DQ = static_cast<T*>(dq_.data_ptr()), *DK = static_cast<T*>(dk_.data_ptr()), *DV = static_cast<T*>(dv_.data_ptr());
  const T sc = T(g.scale);
  over_heads(g.BH, [&](int64_t h, int threads) {
    std::vector<T> p(size_t(kBr * kBc)), dp(size_t(kBr * kBc)), d(size_t(g.L));
    const T *go = GO + h * g.L * g.Ev, *q = Q + h * g.L * g.E, *k = K + h * g.S * g.E, *v = V + h * g.S * g.Ev,
            *o = O + h * g.L * g.Ev, *lse = LSE + h * g.L;
    T *dq = DQ + h * g.L * g.E, *dk = DK + h * g.S * g.E, *dv = DV + h * g.S * g.Ev;
    for (int64_t i = 0; i < g.L; ++i) {  // D_i = dO_i . O_i
      T acc = 0;
      for (int64_t e = 0; e < g.Ev; ++e) acc += go[i * g.Ev + e] * o[i * g.Ev + e];
      d[size_t(i)] = acc;
    }
    std::fill(dq, dq + g.L * g.E, T(0));
    std::fill(dk, dk + g.S * g.E, T(0));
    std::fill(dv, dv + g.S * g.Ev, T(0));
    for (int64_t j0 = 0; j0 < g.S; j0 += kBc) {
      const int64_t bc = std::min(kBc, g.S - j0);
      const int64_t istart = g.causal ? j0 / kBr * kBr : 0;  // earlier queries see none of these keys
      for (int64_t i0 = istart; i0 < g.L; i0 += kBr) {
        const int64_t br = std::min(kBr, g.L - i0);
        gemm<T>(false, true, br, bc, g.E, sc, q + i0 * g.E, g.E, k + j0 * g.E, g.E, T(0), p.data(), bc, threads);
        bool any = false;
        for (int64_t r = 0; r < br; ++r) {
          T* pr = p.data() + r * bc;
          const int64_t lim = g.causal ? std::max<int64_t>(0, std::min(bc, i0 + r - j0 + 1)) : bc;
          const T lr = lse[i0 + r];
#pragma omp simd
          for (int64_t c = 0; c < lim; ++c) pr[c] = vm::exp(pr[c] - lr);  // 0 when lse is +inf
          for (int64_t c = lim; c < bc; ++c) pr[c] = 0;
          any = any || lim > 0;
        }
        if (!any) continue;
        // dV_j += P^T dO_i ; dP = dO_i V_j^T ; dS = P * (dP - D_i)
        gemm<T>(true, false, bc, g.Ev, br, T(1), p.data(), bc, go + i0 * g.Ev, g.Ev, T(1), dv + j0 * g.Ev, g.Ev,
                threads);
        gemm<T>(false, true, br, bc, g.Ev, T(1), go + i0 * g.Ev, g.Ev, v + j0 * g.Ev, g.Ev, T(0), dp.data(), bc,
                threads);
        for (int64_t r = 0; r < br; ++r) {
          T *pr = p.data() + r * bc, *dpr = dp.data() + r * bc;
          const T di = d[size_t(i0 + r)];
          for (int64_t c = 0; c < bc; ++c) pr[c] = pr[c] * (dpr[c] - di);
        }
        // dQ_i += scale dS K_j ; dK_j += scale dS^T Q_i
        gemm<T>(false, false, br, g.E, bc, sc, p.data(), bc, k + j0 * g.E, g.E, T(1), dq + i0 * g.E, g.E, threads);
        gemm<T>(true, false, bc, g.E, br, sc, p.data(), bc, q + i0 * g.E, g.E, T(1), dk + j0 * g.E, g.E, threads);
      }
    }
  });
}

void flash_attention_kernel(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                            const AttentionGeom& g) {
  if (q.dtype() == kFloat64) forward<double>(q, k, v, out, lse, g);
  else forward<float>(q, k, v, out, lse, g);
}
void flash_attention_backward_kernel(const Tensor& go, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const Tensor& out, const Tensor& lse, const Tensor& dq, const Tensor& dk,
                                     const Tensor& dv, const AttentionGeom& g) {
  if (q.dtype() == kFloat64) backward<double>(go, q, k, v, out, lse, dq, dk, dv, g);
  else backward<float>(go, q, k, v, out, lse, dq, dk, dv, g);
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(flash_attention_stub, DeviceType::CPU, &cpu::flash_attention_kernel);
KINDLE_REGISTER_KERNEL(flash_attention_backward_stub, DeviceType::CPU, &cpu::flash_attention_backward_kernel);
}  // namespace kindle
