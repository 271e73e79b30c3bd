// The input gradient of a convolution by sub-pixel phases. Input row ih receives only from the
// taps ki with ki = (ih + ph) mod sh (mod sh): the rows of one residue mod sh (a phase) are a
// stride-1 correlation of the output gradient with that residue's taps, and the columns likewise.
// So each of the sh * sw phases is a GEMM of its taps (C x taps*O) by columns unfolded from the
// output gradient, and its result lands in its own input positions, written once. The GEMM then
// col2im way scatter-adds every tap's product into the input gradient: for a 4x4 stride-2
// transposed layer with 256 channels on 7x7 maps, a sixth of the time, after a pass zeroing it.
// At stride 1 there is one phase: the input gradient is a forward convolution of the output
// gradient with the flipped, transposed filters.
//
// The unfolded rows are the union of the phases' shifts (3x3 for a 4x4 stride-2 kernel, where the
// phases have 2x2 taps each), ordered (row shift, column shift, channel), so that the taps of a
// phase with one row shift are one contiguous block of rows: a phase is one GEMM per row shift,
// accumulated in order. Columns are (image, jy, jx) over a ceil(H/sh) x ceil(W/sw) grid shared by
// the phases (a phase with fewer rows or columns discards its last), flattened over the images and
// cut into tiles of a multiple of 16 columns: MKL's kernels take 16 columns at a time, and a
// ragged block costs as much as a whole one (two 7x7 images, 98 columns, as much as 112).
#include "cpu/conv_subpixel.h"

#include <algorithm>
#include <vector>

#include "cpu/blas.h"
#include "cpu/conv_gather.h"
#include "cpu/parallel.h"
#include "ops/kernels.h"

namespace kindle::cpu {
namespace {

// Columns per tile, before rounding to a multiple of 16.
constexpr int64_t kTileTarget = 128;
constexpr int64_t kMaxTable = int64_t(1) << 18;

// The phases along one axis of the input (size n, kernel k, stride s, padding p).
struct Axis {
  struct Phase {
    int64_t first_tap;  // the residue's first tap; its taps are first_tap + s*t, t < taps
    int64_t taps;
    int64_t shift;  // input index r + s*j reads output index j + shift - t through tap t
    int64_t count;  // input positions of this residue
  };
  std::vector<Phase> phases;
  int64_t lo = 0, span = 0;  // the union of the phases' shifts: [lo, lo + span)
  int64_t grid = 0;          // positions per phase in the shared grid: ceil(n / s)

  Axis(int64_t n, int64_t k, int64_t s, int64_t p) : grid((n + s - 1) / s) {
    int64_t hi = 0;
    bool any = false;
    for (int64_t r = 0; r < s; ++r) {
      Phase q;
      q.first_tap = (r + p) % s;
      q.taps = q.first_tap < k ? (k - q.first_tap + s - 1) / s : 0;
      q.shift = (r + p - q.first_tap) / s;
      q.count = r < n ? (n - r + s - 1) / s : 0;
      if (q.taps > 0) {
        lo = any ? std::min(lo, q.shift - q.taps + 1) : q.shift - q.taps + 1;
        hi = any ? std::max(hi, q.shift) : q.shift;
        any = true;
      }
      phases.push_back(q);
    }
    span = any ? hi - lo + 1 : 0;
  }
};

template <typename T>
struct Subpixel {
  const WindowGeom& g;
  int64_t O;
  Axis ay, ax;
  int64_t P, total, tile_w, tiles, rows;  // grid positions per image, in all; unfolded rows
  std::vector<int32_t> table;             // (union tap, grid position): offset in a gy plane, or -1
  std::vector<int64_t> shifts;            // per union tap: table_shift, kNoShift where it has none
  Tensor filters_;                        // per phase: C x (row taps * column taps * O)
  const T* filters = nullptr;
  std::vector<int64_t> filter_at;         // offset of phase (ry, rx)'s first block in `filters`

  Subpixel(const ConvGeom& cg, const T* w, DType dt)
      : g(cg.w), O(cg.O), ay(g.H, g.kh, g.sh, g.ph), ax(g.W, g.kw, g.sw, g.pw) {
    P = ay.grid * ax.grid;
    total = g.N * P;
    rows = ay.span * ax.span * O;
    tile_w = column_tile(total, kTileTarget);
    tiles = (total + tile_w - 1) / tile_w;
    table.resize(size_t(ay.span * ax.span * P));
    for (int64_t dy = 0; dy < ay.span; ++dy)
      for (int64_t dx = 0; dx < ax.span; ++dx)
        for (int64_t jy = 0; jy < ay.grid; ++jy)
          for (int64_t jx = 0; jx < ax.grid; ++jx) {
            const int64_t oy = jy + ay.lo + dy, ox = jx + ax.lo + dx;
            table[size_t((dy * ax.span + dx) * P + jy * ax.grid + jx)] =
                oy >= 0 && oy < g.oh && ox >= 0 && ox < g.ow ? int32_t(oy * g.ow + ox) : -1;
          }
    for (int64_t u = 0; u < ay.span * ax.span; ++u) shifts.push_back(table_shift(table.data() + u * P, P));
    // A phase's filters, C x (row taps * column taps * O): A[c][(t', u, o)] = w[o][c][ki][kj] for
    // its row tap t = taps - 1 - t' (ki = first + sh * t: ascending row shift, the order of the
    // unfolded rows) and column u of its column taps in ascending shift order (kj = first + sw *
    // (taps - 1 - u)). Read through w transposed to (C*kh*kw, O) in blocks: a gather down w's
    // columns missed the cache every element (a tenth of a 7x7 layer's input gradient).
    const int64_t taps = g.kh * g.kw, CK = g.C * taps;
    filters_ = empty_tensor({2 * O * CK}, dt);  // (the caching allocator: no page faults)
    T* f = static_cast<T*>(filters_.data_ptr());
    T* wt = f + O * CK;
    constexpr int64_t kB = 16;
    for (int64_t o0 = 0; o0 < O; o0 += kB)
      for (int64_t r0 = 0; r0 < CK; r0 += kB)
        for (int64_t r = r0; r < std::min(CK, r0 + kB); ++r)
          for (int64_t o = o0; o < std::min(O, o0 + kB); ++o) wt[r * O + o] = w[o * CK + r];
    filters = f;
    int64_t at = 0;
    for (const Axis::Phase& py : ay.phases)
      for (const Axis::Phase& px : ax.phases) {
        filter_at.push_back(at);
        const int64_t width = px.taps * O, depth = py.taps * width;
        for (int64_t t = 0; t < py.taps; ++t) {
          const int64_t ki = py.first_tap + g.sh * t;
          for (int64_t c = 0; c < g.C; ++c)
            for (int64_t u = 0; u < px.taps; ++u) {
              const int64_t kj = px.first_tap + g.sw * (px.taps - 1 - u);
              std::copy_n(wt + (c * taps + ki * g.kw + kj) * O, O,
                          f + at + c * depth + (py.taps - 1 - t) * width + u * O);
            }
        }
        at += g.C * depth;
      }
  }

  // Unfolds the tile's columns of gy into col (rows x ld), zero past cw.
  void unfold(const T* gy, int64_t c0, int64_t cw, int64_t ld, T* col) const {
    const int64_t L = g.oh * g.ow, taps = ay.span * ax.span;
    over_images(P, c0, cw, [&](int64_t i, int64_t p0, int64_t p1) {
      for (int64_t u = 0; u < taps; ++u) {
        for (int64_t o = 0; o < O; ++o)
          table_row(col + (u * O + o) * ld + i * P - c0, gy + (i * O + o) * L, table.data() + u * P,
                    shifts[size_t(u)], p0, p1);
      }
    });
    zero_padding(col, rows, cw, ld);
  }

  // Rows [r0, r1) of phase (ry, rx)'s product for the tile: its GEMMs over col into out (C x ld),
  // or zeros where the phase has no taps.
  void phase(int64_t ry, int64_t rx, int64_t r0, int64_t r1, const T* col, int64_t ld, T* out) const {
    const Axis::Phase &py = ay.phases[size_t(ry)], &px = ax.phases[size_t(rx)];
    if (py.taps == 0 || px.taps == 0) {
      std::fill(out + r0 * ld, out + r1 * ld, T(0));
      return;
    }
    // Row tap t's block of unfolded rows starts at row shift py.shift - t. Where the phase has
    // every column shift of the union (always at stride 1), its blocks are contiguous: one GEMM.
    const int64_t width = px.taps * O, lda = py.taps * width, blocks = px.taps == ax.span ? 1 : py.taps;
    const int64_t depth = lda / blocks;
    const T* a = filters + filter_at[size_t(ry * g.sw + rx)] + r0 * lda;
    for (int64_t bi = 0; bi < blocks; ++bi) {
      const int64_t first = ((py.shift - (py.taps - 1 - bi) - ay.lo) * ax.span + (px.shift - px.taps + 1 - ax.lo)) * O;
      gemm<T>(false, false, r1 - r0, ld, depth, T(1), a + bi * depth, lda, col + first * ld, ld, bi ? T(1) : T(0),
              out + r0 * ld, ld, 1);
    }
  }

  // Writes rows [r0, r1) of the phases' products (phase ph's at out + ph * C * ld) for the tile's
  // columns [c0, c0 + cw) into dx: each input row once, its columns interleaved from the sw column
  // phases, in order. (One phase at a time, each writing every sw-th element of every sh-th row,
  // took an eighth of a transposed layer's time.)
  void write(const T* out, int64_t c0, int64_t cw, int64_t ld, int64_t r0, int64_t r1, T* dx) const {
    const int64_t HW = g.H * g.W, gx = ax.grid;
    over_images(P, c0, cw, [&](int64_t i, int64_t p0, int64_t p1) {
      const int64_t jy0 = p0 / gx, jy1 = (p1 + gx - 1) / gx;
      for (int64_t c = r0; c < r1; ++c) {
        T* plane = dx + (i * g.C + c) * HW;
        for (int64_t jy = jy0; jy < jy1; ++jy) {
          // Grid columns [jx0, jx1) of grid row jy lie in the tile.
          const int64_t jx0 = jy == jy0 ? p0 - jy * gx : 0, jx1 = std::min(gx, p1 - jy * gx);
          const int64_t iw0 = g.sw * jx0, iw1 = std::min(g.W, g.sw * jx1);
          for (int64_t ry = 0; ry < g.sh; ++ry) {
            const int64_t ih = ry + g.sh * jy;
            if (ih >= g.H) break;
            T* d = plane + ih * g.W;
            // Phase (ry, rx)'s value for grid column jx, at src[ph][jx].
            const T* src = out + (ry * g.sw * g.C + c) * ld + i * P - c0 + jy * gx;
            const int64_t phase_stride = g.C * ld;
            if (g.sw == 1) {
              std::copy(src + iw0, src + iw1, d + iw0);
            } else if (g.sw == 2) {
              const T *s0 = src, *s1 = src + phase_stride;
              int64_t jx = jx0;
              for (; 2 * jx + 1 < iw1; ++jx) {
                d[2 * jx] = s0[jx];
                d[2 * jx + 1] = s1[jx];
              }
              if (2 * jx < iw1) d[2 * jx] = s0[jx];
            } else {
              for (int64_t jx = jx0; jx < jx1; ++jx)
                for (int64_t rx = 0; rx < g.sw && g.sw * jx + rx < iw1; ++rx) d[g.sw * jx + rx] = src[rx * phase_stride + jx];
            }
          }
        }
      }
    });
  }

  void run(const T* gy, T* dx, DType dt) const {
    const int64_t phases = g.sh * g.sw;
    if (tiles >= 2) {
      // Tiles in parallel, each whole on one thread.
      auto work = [&](int64_t t0, int64_t t1) {
        Tensor own = empty_tensor({(rows + phases * g.C) * tile_w}, dt);
        T* col = static_cast<T*>(own.data_ptr());
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t c0 = t * tile_w, cw = std::min(tile_w, total - c0), ld = (cw + 15) / 16 * 16;
          T* out = col + rows * ld;
          unfold(gy, c0, cw, ld, col);
          for (int64_t ph = 0; ph < phases; ++ph) phase(ph / g.sw, ph % g.sw, 0, g.C, col, ld, out + ph * g.C * ld);
          write(out, c0, cw, ld, 0, g.C, dx);
        }
      };
      if (get_num_threads() > 1 && !omp_in_parallel()) parallel_for(0, tiles, 1, work);
      else work(0, tiles);
      return;
    }
    // One tile (a small batch of small planes): its phases, or at stride 1 fixed blocks of its
    // rows, shared over the threads (the same blocks at any thread count).
    const int64_t cw = total, ld = (cw + 15) / 16 * 16;
    const int64_t step = phases >= 2 ? g.C : std::max<int64_t>(32, (g.C / 4 + 15) / 16 * 16);
    const int64_t blocks = (g.C + step - 1) / step;
    Tensor own = empty_tensor({(rows + phases * g.C) * ld}, dt);
    T* col = static_cast<T*>(own.data_ptr());
    T* out = col + rows * ld;
    unfold(gy, 0, cw, ld, col);
    parallel_for(0, phases * blocks, 1, [&](int64_t b, int64_t e) {
      for (int64_t item = b; item < e; ++item) {
        const int64_t ph = item / blocks, r0 = item % blocks * step, r1 = std::min(g.C, r0 + step);
        phase(ph / g.sw, ph % g.sw, r0, r1, col, ld, out + ph * g.C * ld);
      }
    });
    parallel_for(0, g.C, 1, [&](int64_t r0, int64_t r1) { write(out, 0, cw, ld, r0, r1, dx); });
  }
};

template <typename T>
void adjoint(const T* gy, const T* w, T* dx, const ConvGeom& cg, DType dt) {
  if (cg.w.N * cg.w.C * cg.w.H * cg.w.W == 0) return;
  Subpixel<T>(cg, w, dt).run(gy, dx, dt);
}

}  // namespace

bool subpixel_adjoint_applies(const ConvGeom& cg) {
  const WindowGeom& g = cg.w;
  if (cg.groups != 1 || g.dh != 1 || g.dw != 1) return false;
  const bool strided = g.sh > 1 || g.sw > 1;
  if (!strided && g.H * g.W >= 256) return false;  // (large planes: contiguous col2im rows, Winograd, direct)
  // Where the phases lost, measured against GEMM + col2im: a kernel no larger than the stride (each
  // input position receives one tap: col2im is a plain scatter; a 1x1 stride-2 layer took 1.7x the
  // time); fewer than 128 input channels (the phases' GEMMs have C rows, where MKL's kernels run
  // under their peak: 3.3x at C = 1; at 64, DCGAN's 128->64 transposed layer 1.08x, a ResNet's
  // 64->128 stride-2 input gradient 0.93x); filters larger than the unfolded output gradient,
  // whose rearrangement per call then costs more than col2im (512 channels on a 4x4 map at batch
  // 8: 1.8x; at batch 1 on 7x7: 2.2x); output maps under 16 positions (2x2: 1.5x).
  const int64_t L = g.oh * g.ow;
  if ((g.kh <= g.sh && g.kw <= g.sw) || g.C < 128 || cg.O > g.N * L || L < 16) return false;
  const Axis ay(g.H, g.kh, g.sh, g.ph), ax(g.W, g.kw, g.sw, g.pw);
  return ay.span * ax.span * ay.grid * ax.grid <= kMaxTable;
}

void subpixel_adjoint(const float* gy, const float* w, float* dx, const ConvGeom& g) { adjoint(gy, w, dx, g, kFloat32); }
void subpixel_adjoint(const double* gy, const double* w, double* dx, const ConvGeom& g) {
  adjoint(gy, w, dx, g, kFloat64);
}

}  // namespace kindle::cpu
