// Winograd F(2x2, 3x3): each 2x2 block of outputs comes from a 4x4 input tile through 16
// elementwise products in a transformed domain instead of 36 multiply-adds, so a 3x3
// convolution becomes 16 GEMMs (one per transformed position xi: (O x C) by (C x tiles)) with
// 2.25x fewer flops than im2col, plus cheap input and output transforms.
//
//   V = B^T d B (input tile d, 4x4), U = G g G^T (filter g, 3x3 -> 4x4), M = sum_c U .* V,
//   Y = A^T M A (2x2), with B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
//   G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], A^T = [1 1 1 0; 0 1 -1 -1].
//
// F(2x2, 3x3) keeps float32 rounding close to the direct method's (the transforms only add,
// subtract and halve); larger tiles (F(4x4, 3x3)) would save more flops but lose accuracy.
//
// Work is split into units of whole images with a fixed number of tiles (a function of the
// shapes only), and each unit's GEMMs are single-threaded, so results do not depend on the
// thread count.
#include "cpu/winograd.h"

#include <algorithm>
#include <cstring>

#include "cpu/blas.h"
#include "core/derived_cache.h"
#include "cpu/parallel.h"
#include "kindle/tensor.h"

namespace kindle::cpu {
namespace {

constexpr int64_t kUnitTiles = 512;

// U[xi][o][c] for the convolution's filters g(o, c) (3x3 each), a block of c at a time: the
// taps are first transposed into 9 rows, so that the transform is unit-stride vector code and
// each of the 16 outputs is written as a contiguous run.
void transform_weight(const float* w, bool adjoint, int64_t O, int64_t C, float* U) {
  constexpr int64_t kBlock = 64;
  const int64_t OC = O * C;
  parallel_for(0, O, 1, [&](int64_t o0, int64_t o1) {
    float g[9][kBlock], t[12][kBlock];
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t c0 = 0; c0 < C; c0 += kBlock) {
        const int64_t n = std::min(kBlock, C - c0);
        for (int64_t c = 0; c < n; ++c) {
          const float* f = adjoint ? w + ((c0 + c) * O + o) * 9 : w + (o * C + c0 + c) * 9;
          for (int k = 0; k < 9; ++k) g[k][c] = adjoint ? f[8 - k] : f[k];
        }
        // t = G g (4x3): rows of taps 0-2, 3-5, 6-8.
        for (int j = 0; j < 3; ++j)
          for (int64_t c = 0; c < n; ++c) {
            const float a = g[j][c], b = g[3 + j][c], d = g[6 + j][c];
            t[j][c] = a;
            t[3 + j][c] = 0.5f * (a + b + d);
            t[6 + j][c] = 0.5f * (a - b + d);
            t[9 + j][c] = d;
          }
        // U = t G^T, row by row.
        for (int i = 0; i < 4; ++i) {
          float* u0 = U + (4 * i + 0) * OC + o * C + c0;
          float* u1 = U + (4 * i + 1) * OC + o * C + c0;
          float* u2 = U + (4 * i + 2) * OC + o * C + c0;
          float* u3 = U + (4 * i + 3) * OC + o * C + c0;
          for (int64_t c = 0; c < n; ++c) {
            const float a = t[3 * i][c], b = t[3 * i + 1][c], d = t[3 * i + 2][c];
            u0[c] = a;
            u1[c] = 0.5f * (a + b + d);
            u2[c] = 0.5f * (a - b + d);
            u3[c] = d;
          }
        }
      }
  });
}

struct Geometry {
  int64_t N, C, H, W, O, ph, pw;
  int64_t oh, ow, th, tw, T;  // output plane, tiles per column/row, tiles per image
  int64_t Hp;                 // rows of the zero-padded plane that every tile reads inside
  int64_t nb, units;          // images per unit

  Geometry(int64_t N_, int64_t C_, int64_t H_, int64_t W_, int64_t O_, int64_t ph_, int64_t pw_)
      : N(N_), C(C_), H(H_), W(W_), O(O_), ph(ph_), pw(pw_) {
    oh = H + 2 * ph - 2;
    ow = W + 2 * pw - 2;
    th = (oh + 1) / 2;
    tw = (ow + 1) / 2;
    T = th * tw;
    Hp = 2 * th + 2;
    // At least two units for two or more images, so that units (not GEMMs) take the threads.
    nb = std::max<int64_t>(1, std::min(std::max<int64_t>(1, (N + 1) / 2), kUnitTiles / std::max<int64_t>(1, T)));
    units = (N + nb - 1) / nb;
  }
};

// The transforms' inner loops, one row of tiles at a time (separate functions with restrict
// pointers, so that the compiler vectorises them).

// t = B^T d over rows d0..d3 (n entries each).
void rows_bt(const float* __restrict d0, const float* __restrict d1, const float* __restrict d2,
             const float* __restrict d3, float* __restrict t0, float* __restrict t1, float* __restrict t2,
             float* __restrict t3, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    t0[k] = d0[k] - d2[k];
    t1[k] = d1[k] + d2[k];
    t2[k] = d2[k] - d1[k];
    t3[k] = d1[k] - d3[k];
  }
}

// V = t B for one row of t split into even (ev) and odd (od) columns: tile tx reads ev[tx],
// od[tx], ev[tx + 1], od[tx + 1].
void cols_b(const float* __restrict ev, const float* __restrict od, float* __restrict v0, float* __restrict v1,
            float* __restrict v2, float* __restrict v3, int64_t n) {
  for (int64_t tx = 0; tx < n; ++tx) {
    v0[tx] = ev[tx] - ev[tx + 1];
    v1[tx] = od[tx] + ev[tx + 1];
    v2[tx] = ev[tx + 1] - od[tx];
    v3[tx] = od[tx] - od[tx + 1];
  }
}

// (s0, s1) = A^T (m0, m1, m2, m3).
void rows_at(const float* __restrict m0, const float* __restrict m1, const float* __restrict m2,
             const float* __restrict m3, float* __restrict s0, float* __restrict s1, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    s0[k] = m0[k] + m1[k] + m2[k];
    s1[k] = m1[k] - m2[k] - m3[k];
  }
}

// Y = A^T m A over n tiles at once, plus bias: y0 and y1 are the top row's columns 0 and 1,
// y2 and y3 the bottom row's; s holds the 8 intermediate rows.
void cols_a(const float* __restrict s, float bias, float* __restrict y, int64_t n) {
  const float* __restrict s0 = s;
  const float* __restrict s1 = s + n;
  const float* __restrict s2 = s + 2 * n;
  const float* __restrict s3 = s + 3 * n;
  const float* __restrict s4 = s + 4 * n;
  const float* __restrict s5 = s + 5 * n;
  const float* __restrict s6 = s + 6 * n;
  const float* __restrict s7 = s + 7 * n;
  float* __restrict y0 = y;
  float* __restrict y1 = y + n;
  float* __restrict y2 = y + 2 * n;
  float* __restrict y3 = y + 3 * n;
  for (int64_t k = 0; k < n; ++k) {
    y0[k] = s0[k] + s1[k] + s2[k] + bias;
    y1[k] = s1[k] - s2[k] - s3[k] + bias;
    y2[k] = s4[k] + s5[k] + s6[k] + bias;
    y3[k] = s5[k] - s6[k] - s7[k] + bias;
  }
}

// Interleaves a row of tiles' two output columns (even, odd) into an output row of `width`.
void interleave(const float* __restrict even, const float* __restrict odd, float* __restrict row, int64_t width) {
  const int64_t full = width / 2;
  for (int64_t tx = 0; tx < full; ++tx) {
    row[2 * tx] = even[tx];
    row[2 * tx + 1] = odd[tx];
  }
  if (width % 2) row[width - 1] = even[full];
}

// V[xi][c][p] for the tiles p of images [0, m) of x (P = m * T columns). The padded plane is
// kept with each row split into its even and odd columns, so that both transform passes are
// unit-stride loops over a row of tiles (tile tx reads columns 2tx .. 2tx+3).
void transform_input(const Geometry& g, const float* x, int64_t m, float* V, float* scratch) {
  const int64_t P = m * g.T, CP = g.C * P, E = g.tw + 1;  // E: even (and odd) columns per row
  float* plane = scratch;                                  // Hp rows of [even E | odd E]
  float* t = plane + g.Hp * 2 * E;                         // 4 transformed rows, [even | odd]
  for (int64_t i = 0; i < m; ++i)
    for (int64_t c = 0; c < g.C; ++c) {
      const float* src = x + (i * g.C + c) * g.H * g.W;
      for (int64_t r = 0; r < g.Hp; ++r) {
        float* ev = plane + r * 2 * E;
        float* od = ev + E;
        const int64_t ih = r - g.ph;
        if (ih < 0 || ih >= g.H) {
          std::fill(ev, ev + 2 * E, 0.f);
          continue;
        }
        const float* row = src + ih * g.W;
        std::fill(ev, ev + 2 * E, 0.f);
        // Padded column pc = input column pc - pw; even ones to ev[pc / 2], odd ones to od.
        const int64_t pc_end = std::min(2 * E, g.pw + g.W);
        for (int64_t k = (g.pw + 1) / 2; 2 * k < pc_end; ++k) ev[k] = row[2 * k - g.pw];
        for (int64_t k = g.pw / 2; 2 * k + 1 < pc_end; ++k) od[k] = row[2 * k + 1 - g.pw];
      }
      float* v = V + c * P + i * g.T;
      for (int64_t ty = 0; ty < g.th; ++ty) {
        const float* d0 = plane + 2 * ty * 2 * E;
        rows_bt(d0, d0 + 2 * E, d0 + 4 * E, d0 + 6 * E, t, t + 2 * E, t + 4 * E, t + 6 * E, 2 * E);
        for (int k = 0; k < 4; ++k) {
          float* vk = v + 4 * k * CP + ty * g.tw;
          cols_b(t + k * 2 * E, t + k * 2 * E + E, vk, vk + CP, vk + 2 * CP, vk + 3 * CP, g.tw);
        }
      }
    }
}

// y for images [0, m) from M[xi][o][p], plus bias: the transform runs over all P tiles of an
// output channel at once (unit-stride whatever the plane size), then the 2x2 blocks are placed.
void transform_output(const Geometry& g, const float* M, const float* bias, int64_t m, float* y, int64_t ys,
                      float* scratch) {
  const int64_t P = m * g.T, OP = g.O * P, tw = g.tw;
  float* s = scratch;      // 8 rows of P
  float* yt = s + 8 * P;   // 4 rows of P: the blocks' four outputs
  for (int64_t o = 0; o < g.O; ++o) {
    const float* q = M + o * P;
    for (int j = 0; j < 4; ++j) rows_at(q + j * OP, q + (4 + j) * OP, q + (8 + j) * OP, q + (12 + j) * OP, s + j * P,
                                        s + (4 + j) * P, P);
    cols_a(s, bias ? bias[o] : 0.f, yt, P);
    for (int64_t i = 0; i < m; ++i) {
      float* dst = y + i * ys + o * g.oh * g.ow;
      for (int64_t ty = 0; ty < g.th; ++ty) {
        const int64_t p = i * g.T + ty * tw;
        interleave(yt + p, yt + P + p, dst + 2 * ty * g.ow, g.ow);
        if (2 * ty + 1 < g.oh) interleave(yt + 2 * P + p, yt + 3 * P + p, dst + (2 * ty + 1) * g.ow, g.ow);
      }
    }
  }
}

}  // namespace

void winograd_conv3x3(const float* x, const Tensor& weight, bool adjoint, const float* bias, float* y, int64_t N,
                      int64_t C, int64_t H, int64_t W, int64_t O, int64_t ph, int64_t pw, int64_t y_image_stride) {
  const Geometry g(N, C, H, W, O, ph, pw);
  if (N == 0 || g.oh <= 0 || g.ow <= 0) return;
  const int64_t ys = y_image_stride ? y_image_stride : O * g.oh * g.ow;
  // The kind names this transform and its shape parameters (the bytes alone do not say them).
  const uint64_t kind = (uint64_t(0x3a9e) << 48) ^ (uint64_t(adjoint) << 47) ^ (uint64_t(O) << 24) ^ uint64_t(C);
  const Tensor u_buf = derived(weight, kind, [&] {
    Tensor u = empty_tensor({16 * O * C}, kFloat32);
    transform_weight(static_cast<const float*>(weight.data_ptr()), adjoint, O, C, static_cast<float*>(u.data_ptr()));
    return u;
  });
  const float* U = static_cast<const float*>(u_buf.data_ptr());
  const int64_t maxP = g.nb * g.T, V_size = 16 * C * maxP, M_size = 16 * O * maxP;
  // The split padded plane and 4 transformed rows (input), or 12 rows of the unit's tiles (output).
  const int64_t plane_size = std::max((g.Hp + 4) * 2 * (g.tw + 1), 12 * maxP);
  // One unit: its transforms, then the 16 GEMMs spread over the threads (xi by xi).
  auto unit = [&](int64_t u, float* scratch, bool spread) {
    const int64_t n0 = u * g.nb, m = std::min(N, n0 + g.nb) - n0, P = m * g.T;
    float* V = scratch;
    float* M = V + V_size;
    float* plane = M + M_size;
    transform_input(g, x + n0 * C * H * W, m, V, plane);
    auto products = [&](int64_t xi0, int64_t xi1) {
      for (int64_t xi = xi0; xi < xi1; ++xi)
        gemm<float>(false, false, O, P, C, 1.f, U + xi * O * C, C, V + xi * C * P, P, 0.f, M + xi * O * P, P, 1);
    };
    if (spread) parallel_for(0, 16, 1, products);
    else products(0, 16);
    transform_output(g, M, bias, m, y + n0 * ys, ys, plane);
  };
  const int64_t per_thread = V_size + M_size + plane_size;
  if (g.units >= 2 && get_num_threads() > 1 && !omp_in_parallel()) {
    parallel_for(0, g.units, 1, [&](int64_t b, int64_t e) {
      Tensor buf = empty_tensor({per_thread}, kFloat32);
      for (int64_t u = b; u < e; ++u) unit(u, static_cast<float*>(buf.data_ptr()), false);
    });
  } else {
    Tensor buf = empty_tensor({per_thread}, kFloat32);
    for (int64_t u = 0; u < g.units; ++u) unit(u, static_cast<float*>(buf.data_ptr()), true);
  }
}

}  // namespace kindle::cpu
