// Direct convolution: each output vector (16 positions of a row, for a block of up to 14 output
// channels) is accumulated in registers over every (channel, tap) from a zero-padded copy of the
// input, with no column matrix. A tap costs one load per 16 inputs and one broadcast per output
// channel, for 16 multiply-adds per channel per vector; the block's packed weights ([c][ky][kx][o],
// 114 KB for a 32-channel 9x9 layer) stay in L2 while a unit of rows runs over them. Layers with
// a multiple of 32 output channels vectorise over the channels instead (wide_chunk), and the
// weight gradient over the output channels of the transposed output gradient (weight_taps).
//
// Work is split into units of (image, channel block, a few output rows); every output element is
// summed by one unit in a fixed order (channels, then taps), so results do not depend on the
// thread count.
#include "cpu/direct_conv.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "cpu/parallel.h"
#include "kindle/error.h"

namespace kindle::cpu {

#if defined(__AVX512F__)
namespace {

// Output channels per block: 2 x 14 accumulators, two input vectors and a broadcast fit the 32
// vector registers.
constexpr int kMaxBlock = 14;
constexpr int64_t kUnitRows = 4;

struct Plan {
  int64_t C, kh, kw, oh, ow, Hp, Wp;
};

// The planes of x (H x W each), zero-padded into Hp x Wp: every tap's window is then a plain row
// segment, with zeros past the right edge for the loads of a row's last vectors.
std::vector<float> padded(const float* x, int64_t planes, int64_t H, int64_t W, int64_t ph, int64_t pw, const Plan& p) {
  const int64_t plane = p.Hp * p.Wp;
  std::vector<float> xp(size_t(planes * plane));
  parallel_for(0, planes, rows_grain(plane), [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      float* dst = xp.data() + q * plane;
      const float* src = x + q * H * W;
      std::fill(dst, dst + ph * p.Wp, 0.f);
      for (int64_t i = 0; i < H; ++i) {
        float* r = dst + (ph + i) * p.Wp;
        std::fill(r, r + pw, 0.f);
        std::copy(src + i * W, src + (i + 1) * W, r + pw);
        std::fill(r + pw + W, r + p.Wp, 0.f);
      }
      std::fill(dst + (ph + H) * p.Wp, dst + plane, 0.f);
    }
  });
  return xp;
}

// Plan for a stride-1 convolution of H x W planes: output size, padded plane size.
Plan plan(int64_t C, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t ph, int64_t pw) {
  Plan p{C, kh, kw, H + 2 * ph - kh + 1, W + 2 * pw - kw + 1, H + 2 * ph, 0};
  // A chunk's loads reach 31 + kw - 1 columns past its start, which is below ow + 15.
  p.Wp = (std::max<int64_t>(p.ow, 0) + 15) / 16 * 16 + 16 + kw - 1;
  return p;
}

// XV vectors of output row oy from column x0 on, for one channel block. xp: the image's padded
// planes (C x Hp x Wp); wp: the block's packed weights; y: the block's first output plane; `live`
// of the OB channels are stored (the rest of a last, short block are zero-weight padding).
template <int OB, int XV>
void chunk(const float* xp, const float* wp, const float* bias, float* y, int live, const Plan& p, int64_t oy,
           int64_t x0) {
  __m512 acc[OB][XV];
  #pragma GCC unroll 32
  for (int o = 0; o < OB; ++o) {
    const __m512 b = _mm512_set1_ps(bias && o < live ? bias[o] : 0.f);
    #pragma GCC unroll 32
    for (int v = 0; v < XV; ++v) acc[o][v] = b;
  }
  const int64_t plane = p.Hp * p.Wp;
  const float* xr = xp + oy * p.Wp + x0;
  const float* wr = wp;
  for (int64_t c = 0; c < p.C; ++c, xr += plane)
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const float* row = xr + ky * p.Wp;
      for (int64_t kx = 0; kx < p.kw; ++kx, wr += OB) {
        __m512 in[XV];
        #pragma GCC unroll 32
        for (int v = 0; v < XV; ++v) in[v] = _mm512_loadu_ps(row + kx + 16 * v);
        #pragma GCC unroll 32
        for (int o = 0; o < OB; ++o) {
          const __m512 wv = _mm512_set1_ps(wr[o]);
          #pragma GCC unroll 32
          for (int v = 0; v < XV; ++v) acc[o][v] = _mm512_fmadd_ps(wv, in[v], acc[o][v]);
        }
      }
    }
  const int64_t L = p.oh * p.ow;
  #pragma GCC unroll 32
  for (int v = 0; v < XV; ++v) {
    const int64_t x = x0 + 16 * v;
    if (x >= p.ow) break;
    const __mmask16 m = p.ow - x >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (p.ow - x)) - 1);
    #pragma GCC unroll 32
    for (int o = 0; o < live; ++o) _mm512_mask_storeu_ps(y + o * L + oy * p.ow + x, m, acc[o][v]);
  }
}

// Output rows [oy0, oy1) of one channel block.
template <int OB>
void rows(const float* xp, const float* wp, const float* bias, float* y, int live, const Plan& p, int64_t oy0,
          int64_t oy1) {
  for (int64_t oy = oy0; oy < oy1; ++oy)
    for (int64_t x0 = 0; x0 < p.ow;) {
      if (p.ow - x0 > 16) {
        chunk<OB, 2>(xp, wp, bias, y, live, p, oy, x0);
        x0 += 32;
      } else {
        chunk<OB, 1>(xp, wp, bias, y, live, p, oy, x0);
        x0 += 16;
      }
    }
}

using RowsFn = void (*)(const float*, const float*, const float*, float*, int, const Plan&, int64_t, int64_t);

template <int... OB>
constexpr RowsFn rows_for(int ob, std::integer_sequence<int, OB...>) {
  RowsFn fns[] = {&rows<OB + 1>...};
  return fns[ob - 1];
}

// Layers with a multiple of 32 output channels: the vectors run over output channels instead,
// two of them (32 channels) times P consecutive positions of a row, so that no lane idles on a
// row's last positions or on a short last channel block (the forward of fast-neural-style's
// 32-channel 9x9 layer spent 14% of its multiply-adds on those). A tap costs two weight vector
// loads and P broadcast inputs for 32 P multiply-adds. wp: the block's packed weights
// ([c][ky][kx][32]); the sums go out through a small (position, channel) tile.
constexpr int kPositions = 14;

template <int P>
void wide_chunk(const float* xp, const float* wp, const float* bias, float* y, const Plan& p, int64_t oy,
                int64_t x0) {
  __m512 acc[P][2];
  const __m512 b0 = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
  const __m512 b1 = bias ? _mm512_loadu_ps(bias + 16) : _mm512_setzero_ps();
#pragma GCC unroll 32
  for (int i = 0; i < P; ++i) acc[i][0] = b0, acc[i][1] = b1;
  const int64_t plane = p.Hp * p.Wp, rows = p.C * p.kh;
  const float* wr = wp;
  const float* row = xp + oy * p.Wp + x0;
  // One loop over (channel, kernel row) pairs, the taps of a row inside it.
  for (int64_t r = 0, ky = 0; r < rows; ++r) {
    for (int64_t kx = 0; kx < p.kw; ++kx, wr += 32) {
      const __m512 w0 = _mm512_loadu_ps(wr), w1 = _mm512_loadu_ps(wr + 16);
#pragma GCC unroll 32
      for (int i = 0; i < P; ++i) {
        // A broadcast straight from memory, once for both products: left to itself, GCC folded
        // it into each product, or kept the row's scalars in registers across taps and spilled.
        __m512 xb;
        __asm__("vbroadcastss %1, %0" : "=v"(xb) : "m"(row[kx + i]));
        acc[i][0] = _mm512_fmadd_ps(xb, w0, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(xb, w1, acc[i][1]);
      }
    }
    row += p.Wp;
    if (++ky == p.kh) {  // the next channel's first window row
      ky = 0;
      row += plane - p.kh * p.Wp;
    }
  }
  alignas(64) float tile[P][32];
#pragma GCC unroll 32
  for (int i = 0; i < P; ++i) {
    _mm512_store_ps(tile[i], acc[i][0]);
    _mm512_store_ps(tile[i] + 16, acc[i][1]);
  }
  const int64_t L = p.oh * p.ow;
  float* out = y + oy * p.ow + x0;
  for (int o = 0; o < 32; ++o)
    for (int i = 0; i < P; ++i) out[o * L + i] = tile[i][o];
}

using WideFn = void (*)(const float*, const float*, const float*, float*, const Plan&, int64_t, int64_t);

template <int... P>
constexpr std::array<WideFn, sizeof...(P)> wide_table(std::integer_sequence<int, P...>) {
  return {&wide_chunk<P + 1>...};
}

void wide_rows(const float* xp, const float* wp, const float* bias, float* y, int, const Plan& p, int64_t oy0,
               int64_t oy1) {
  static constexpr auto table = wide_table(std::make_integer_sequence<int, kPositions>{});
  for (int64_t oy = oy0; oy < oy1; ++oy)
    for (int64_t x0 = 0; x0 < p.ow; x0 += kPositions)
      table[size_t(std::min<int64_t>(kPositions, p.ow - x0) - 1)](xp, wp, bias, y, p, oy, x0);
}

// The weight gradient at one (input channel, kernel row) for a block of 16 x OV output channels,
// over output rows [r0, r1) counted across images (r = n * oh + oy): dw[o][kx] (+)= the sum over
// those rows' positions of gy[o] times the padded input shifted by (ky, kx). The vectors run over
// output channels, from the output gradient transposed to (position, channel): each position is
// one broadcast input per tap times OV gradient vectors, a GEMM over positions with no partial
// sums to reduce. xr: image 0's plane of the channel, from row ky; gt: position 0 at the block's
// first channel; dw: the first o's (c, ky) row, filters `filter` apart.
template <int OV, int KW>
void weight_taps(const float* xr, const float* gt, float* dw, int64_t filter, int64_t live, const Plan& p, int64_t r0,
                 int64_t r1, int64_t image_x, int64_t opad, bool accumulate) {
  __m512 acc[KW][OV];
#pragma GCC unroll 32
  for (int k = 0; k < KW; ++k)
#pragma GCC unroll 32
    for (int v = 0; v < OV; ++v) acc[k][v] = _mm512_setzero_ps();
  // One flat loop over (row, position): with the loops nested, GCC kept the sums in memory.
  const int64_t steps = (r1 - r0) * p.ow;
  int64_t oy = r0 % p.oh;
  const float* xrow = xr + r0 / p.oh * image_x + oy * p.Wp;
  const float* g = gt + r0 * p.ow * opad;
  for (int64_t s = 0, ox = 0; s < steps; ++s, g += opad) {
    __m512 gv[OV];
#pragma GCC unroll 32
    for (int v = 0; v < OV; ++v) gv[v] = _mm512_loadu_ps(g + 16 * v);
#pragma GCC unroll 32
    for (int k = 0; k < KW; ++k) {
      const __m512 xb = _mm512_set1_ps(xrow[ox + k]);
#pragma GCC unroll 32
      for (int v = 0; v < OV; ++v) acc[k][v] = _mm512_fmadd_ps(xb, gv[v], acc[k][v]);
    }
    if (++ox == p.ow) {
      ox = 0;
      xrow += p.Wp;
      if (++oy == p.oh) {  // the next image
        oy = 0;
        xrow += image_x - p.oh * p.Wp;
      }
    }
  }
  alignas(64) float lanes[16];
#pragma GCC unroll 32
  for (int k = 0; k < KW; ++k)
#pragma GCC unroll 32
    for (int v = 0; v < OV; ++v) {
      _mm512_store_ps(lanes, acc[k][v]);
      for (int64_t i = 0; i < 16 && 16 * v + i < live; ++i) {
        float& d = dw[(16 * v + i) * filter + k];
        d = accumulate ? d + lanes[i] : lanes[i];
      }
    }
}

using WeightFn = void (*)(const float*, const float*, float*, int64_t, int64_t, const Plan&, int64_t, int64_t, int64_t,
                          int64_t, bool);

// Gradient vectors per block for a kernel width: KW x OV sums, OV gradient vectors and a
// broadcast fit the 32 vector registers.
constexpr int weight_vectors(int kw) { return std::min(4, 30 / (kw + 1)); }
constexpr int kMinKw = 5, kMaxKw = 14;

template <int KW, int... V>
constexpr void fill_weight_fns(WeightFn* row, std::integer_sequence<int, V...>) {
  ((row[V] = &weight_taps<V + 1, KW>), ...);
}

template <int... K>
constexpr auto weight_table(std::integer_sequence<int, K...>) {
  std::array<std::array<WeightFn, 4>, sizeof...(K)> t{};
  (fill_weight_fns<K + kMinKw>(t[K].data(), std::make_integer_sequence<int, weight_vectors(K + kMinKw)>{}), ...);
  return t;
}

}  // namespace

bool direct_conv_weight_applies(int64_t C, int64_t O, int64_t kh, int64_t kw, int64_t ow) {
  // Measured against im2col and MKL's GEMM (whose product has O rows and C*kh*kw columns): under
  // 16 input channels the units are few and the unfolded matrix small; with more than 64 input
  // or output channels the GEMM ran faster (a 64 -> 192 5x5 layer on 27x27: 1.3x; a 128-channel
  // 7x7 one: 1.1x); at 16-64 the direct kernel took 0.5 of the time on a 9x9 layer, 0.85 on 5x5
  // ones, and its units spread over the threads where a lone image's GEMM is one unit.
  return C >= 16 && C <= 64 && O <= 64 && kh * kw >= 25 && ow >= 16 && kw >= kMinKw && kw <= kMaxKw;
}

void direct_conv_weight(const float* x, const float* gy, float* dw, int64_t N, int64_t C, int64_t H, int64_t W,
                        int64_t O, int64_t kh, int64_t kw, int64_t ph, int64_t pw) {
  const Plan p = plan(C, H, W, kh, kw, ph, pw);
  const int64_t taps = kh * kw, filter = C * taps;
  if (O == 0 || C == 0) return;
  if (N == 0 || p.oh <= 0 || p.ow <= 0) {
    std::fill(dw, dw + O * filter, 0.f);
    return;
  }
  static constexpr auto table = weight_table(std::make_integer_sequence<int, kMaxKw - kMinKw + 1>{});
  const int64_t opad = (O + 15) / 16 * 16, L = p.oh * p.ow, plane = p.Hp * p.Wp;
  const int64_t ov = std::min<int64_t>(weight_vectors(int(kw)), opad / 16), width = 16 * ov;
  const int64_t blocks = (O + width - 1) / width;
  const std::vector<float> xp = padded(x, N * C, H, W, ph, pw, p);
  // The output gradient as (image, position, channel), channels zero-padded to whole vectors.
  std::vector<float> gt(size_t(N * L * opad), 0.f);
  parallel_for(0, N * L, rows_grain(opad), [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t n = q / L, l = q % L;
      for (int64_t o = 0; o < O; ++o) gt[size_t(q * opad + o)] = gy[(n * O + o) * L + l];
    }
  });
  // Rows of positions in chunks of about 256 KB of the transposed gradient (a function of the
  // shapes only), which the units of a chunk read from L2; the chunks add up in order. Units
  // (block, c, ky), ky fastest: consecutive units share the channel's padded plane.
  const int64_t rows = N * p.oh, chunk_rows = std::max<int64_t>(1, (int64_t(1) << 16) / (p.ow * opad));
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int64_t r1 = std::min(rows, r0 + chunk_rows);
    parallel_for(0, blocks * C * kh, 1, [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t b = u / (C * kh), c = u / kh % C, ky = u % kh;
        const int64_t live = std::min(width, O - b * width), vectors = (live + 15) / 16;
        table[size_t(kw - kMinKw)][size_t(vectors - 1)](xp.data() + c * plane + ky * p.Wp, gt.data() + b * width,
                                                        dw + (b * width * C + c) * taps + ky * kw, filter, live, p,
                                                        r0, r1, C * plane, opad, r0 > 0);
      }
    });
  }
}

bool direct_conv_applies(int64_t C, int64_t O, int64_t kh, int64_t kw, int64_t ow, int64_t ph, int64_t pw,
                         bool adjoint) {
  // A block's packed weights (C*kh*kw x 14) stay within about 180 KB of L2 (a 128-channel 7x7
  // layer ran no faster than im2col). With fewer than 16 output channels the few sums per vector
  // wait on the multiply-add latency; that still beats im2col's GEMM with as few rows (a 32 -> 3
  // 9x9 layer: 0.3 of its time) but not the input gradient's, whose GEMM has C*kh*kw rows.
  if (kh * kw < 25 || ow < 16 || C * kh * kw > 3200) return false;
  return !adjoint || (O >= 16 && ph <= kh - 1 && pw <= kw - 1);
}

void direct_conv(const float* x, const float* w, bool adjoint, const float* bias, float* y, int64_t N, int64_t C,
                 int64_t H, int64_t W, int64_t O, int64_t kh, int64_t kw, int64_t ph, int64_t pw) {
  const Plan p = plan(C, H, W, kh, kw, ph, pw);
  if (N == 0 || O == 0 || p.oh <= 0 || p.ow <= 0) return;
  const bool wide = O % 32 == 0;
  const int64_t blocks = wide ? O / 32 : (O + kMaxBlock - 1) / kMaxBlock, ob = (O + blocks - 1) / blocks;
  const int64_t taps = kh * kw, block_size = C * taps * ob;

  // Weights packed per block as [c][ky][kx][o], zero past O.
  std::vector<float> wp(size_t(blocks * block_size), 0.f);
  parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t j = 0; j < ob && b * ob + j < O; ++j) {
        const int64_t o = b * ob + j;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t t = 0; t < taps; ++t)
            wp[size_t(b * block_size + (c * taps + t) * ob + j)] =
                adjoint ? w[(c * O + o) * taps + taps - 1 - t] : w[(o * C + c) * taps + t];
      }
  });

  const int64_t plane = p.Hp * p.Wp;
  const std::vector<float> xp = padded(x, N * C, H, W, ph, pw, p);
  const RowsFn fn = wide ? &wide_rows : rows_for(int(ob), std::make_integer_sequence<int, kMaxBlock>{});
  const int64_t groups = (p.oh + kUnitRows - 1) / kUnitRows, L = p.oh * p.ow;
  parallel_for(0, N * blocks * groups, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / (blocks * groups), b = u / groups % blocks, g = u % groups;
      const int live = int(std::min(ob, O - b * ob));
      fn(xp.data() + n * C * plane, wp.data() + b * block_size, bias ? bias + b * ob : nullptr,
         y + (n * O + b * ob) * L, live, p, g * kUnitRows, std::min(p.oh, (g + 1) * kUnitRows));
    }
  });
}

#else  // no AVX-512 in this build: conv2d keeps im2col

bool direct_conv_weight_applies(int64_t, int64_t, int64_t, int64_t, int64_t) { return false; }

void direct_conv_weight(const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                        int64_t, int64_t, int64_t) {
  KINDLE_CHECK(false, "conv2d: the direct kernel needs AVX-512 (direct_conv_weight_applies said no)");
}

bool direct_conv_applies(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool) { return false; }

void direct_conv(const float*, const float*, bool, const float*, float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                 int64_t, int64_t, int64_t, int64_t) {
  KINDLE_CHECK(false, "conv2d: the direct kernel needs AVX-512 (direct_conv_applies said no)");
}

#endif

}  // namespace kindle::cpu
