// 2-D convolution as GEMMs over tiles of output positions: a tile's windows are unfolded into a
// (C*kh*kw, columns) matrix in a per-thread buffer and one GEMM per group multiplies it by the
// weight. Large planes are cut into bands of output rows (about kTileCols columns) so that a
// band's unfolded columns are still in L2 when the GEMM reads them, and the output band lands in
// NCHW directly. Small planes (8x8, 4x4 in a ResNet's late stages) put several images into one
// tile: one GEMM per image would have 16-64 columns and read the whole weight for each image.
// A 1x1, stride-1, unpadded convolution of a large plane uses the image itself as its columns.
// Units of work (one image, or one tile of images) run in parallel with single-threaded GEMMs;
// a lone image spreads its forward bands over the threads, and where there are fewer units or
// bands than threads the threads share each GEMM's rows (Filters::over_rows). MKL's threaded
// GEMM is never used: it may split the sum over K, which would make the bits depend on the
// thread count.
//
// Determinism: every unit's result is computed the same way whatever the thread count (an MKL
// product's rows are cut into the same blocks at any thread count); the weight gradient sums
// units in fixed blocks (a function of the shapes only), then adds the blocks in order.
#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cpu/blas.h"
#include "cpu/conv_gather.h"
#include "cpu/conv_subpixel.h"
#include "cpu/depthwise.h"
#include "cpu/direct_conv.h"
#include "cpu/parallel.h"
#include "cpu/sgemm.h"
#include "cpu/winograd.h"
#include "ops/kernels.h"

namespace kindle::cpu {
namespace {

constexpr int64_t kTileCols = 512;
// Several images per tile, up to this many columns. Narrow, so that the tile's unfolded columns
// and the GEMM's output stay in L2 between the GEMM and the col2im or copy that follows: on a
// Xeon (2 MB L2) 128 columns ran DCGAN's and MNIST's layers in 0.6-0.8 of the time 2048 took.
// The filters are then read once per 128 columns, 1/64 byte per flop, which even DRAM sustains.
constexpr int64_t kImageTileCols = 128;
constexpr int64_t kColumnTile = 128;

template <typename T>
struct Conv {
  const WindowGeom& g;
  int64_t O, G, Cg, Og, CgK, K, L, HW;
  int64_t nb;    // images per unit
  int64_t band;  // output rows per GEMM when a unit is one image
  bool direct;   // one image per unit, 1x1, stride 1, no padding: the image is its own column matrix

  explicit Conv(const ConvGeom& cg)
      : g(cg.w), O(cg.O), G(cg.groups), Cg(cg.w.C / cg.groups), Og(cg.O / cg.groups),
        CgK(cg.w.C / cg.groups * cg.w.kh * cg.w.kw), K(cg.w.C * cg.w.kh * cg.w.kw), L(cg.w.oh * cg.w.ow),
        HW(cg.w.H * cg.w.W) {
    // At least two units for two or more images: units run in parallel on single-threaded GEMMs,
    // whose results do not depend on the thread count (MKL's threaded GEMM may split K).
    nb = L >= kTileCols / 2 || L == 0 ? 1 : std::max<int64_t>(1, std::min((g.N + 1) / 2, kImageTileCols / L));
    band = std::max<int64_t>(1, std::min(g.oh, kTileCols / std::max<int64_t>(1, g.ow)));
    direct = nb == 1 && g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
    // Strided or narrow output rows (DCGAN's 4x4 stride-2 layers on 8-16 pixel maps, a ResNet's
    // 4x4 stage): the row-by-row copies of im2col move a few elements each and cost more than the
    // GEMM. There every tap's source in the plane is tabulated once per call, and im2col and
    // col2im become one gather (scatter-add) loop per channel and tap.
    const int64_t taps = g.kh * g.kw;
    const bool tabulable = !direct && !(Cg == 1 && G > 1) && L * taps <= (int64_t(1) << 18);
    const int64_t total = g.N * L;
    if (tabulable && L < kTileCols / 2 && total > 0) {
      // Filters of 1 MB and more are read once per tile: wider tiles share that read (256 columns
      // ran a 256-channel 7x7 layer at batch 8 in 0.93 of the time 128 took); smaller ones keep
      // the tile's columns in L2 (DCGAN's 64->128 layer: 0.95 at 128).
      const int64_t target = O * K >= (int64_t(1) << 18) ? 2 * kColumnTile : kColumnTile;
      tile_w = column_tile(total, target);
    }
    if (tabulable && (tile_w > 0 || g.sw > 1 || g.ow < 16)) {
      table.resize(size_t(taps * L));
      for (int64_t ki = 0; ki < g.kh; ++ki)
        for (int64_t kj = 0; kj < g.kw; ++kj)
          for (int64_t oy = 0; oy < g.oh; ++oy)
            for (int64_t ox = 0; ox < g.ow; ++ox) {
              const int64_t ih = oy * g.sh - g.ph + ki * g.dh, iw = ox * g.sw - g.pw + kj * g.dw;
              table[size_t((ki * g.kw + kj) * L + oy * g.ow + ox)] =
                  ih >= 0 && ih < g.H && iw >= 0 && iw < g.W ? int32_t(ih * g.W + iw) : -1;
            }
      for (int64_t t = 0; t < taps; ++t) shifts.push_back(table_shift(table.data() + t * L, L));
    }
  }

  std::vector<int32_t> table;  // (tap, output position): offset in the input plane, -1 in the padding
  std::vector<int64_t> shifts;  // per tap: table_shift (conv_gather.h)
  // The forward pass and weight gradient of a small plane (under kTileCols / 2 positions, a lone
  // image's too): the output columns of all the images, (image, position) flattened, in tiles of
  // tile_w columns (a multiple of 16; 0 where this path is not taken). MKL's kernels take 16
  // columns at a time and a ragged last block costs a whole one, so a tile of two 7x7 images (98
  // columns) cost as much as 112, and one 4x4 image's 16 columns left the GEMM's fixed costs
  // unshared.
  int64_t tile_w = 0;
  int64_t column_tiles() const { return tile_w > 0 ? (g.N * L + tile_w - 1) / tile_w : 0; }

  int64_t units() const { return (g.N + nb - 1) / nb; }
  // 3x3, stride 1, undilated, ungrouped, float32, with channels enough for the transforms to pay:
  // Winograd F(2x2, 3x3) (csrc/cpu/winograd.cpp) for the forward pass and the input gradient.
  // Not on maps under 10x10 (a ResNet's 7x7 and 4x4 stages): their few tiles make 16 thin GEMMs,
  // and the per-call filter transform outweighs the saving (im2col ran in half the time at 7x7).
  bool winograd() const {
    return std::is_same_v<T, float> && G == 1 && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 &&
           g.dw == 1 && std::min(g.C, O) >= 16 && g.oh * g.ow >= 100;
  }
  // Stride 1, undilated, ungrouped float32: the shapes the direct kernels (csrc/cpu/direct_conv.cpp)
  // take, where their own rules (kernel size, channels, padding) pick them.
  bool dense_stride1() const {
    return std::is_same_v<T, float> && G == 1 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1;
  }
  // The direct kernel for the forward pass, or for the input gradient (on the adjoint, whose output
  // rows are the input's).
  bool large_kernel(bool adjoint) const {
    return dense_stride1() && (adjoint ? direct_conv_applies(O, g.C, g.kh, g.kw, g.W, g.ph, g.pw, true)
                                       : direct_conv_applies(g.C, O, g.kh, g.kw, g.ow, g.ph, g.pw, false));
  }
  // Columns of the widest tile.
  int64_t tile_cols() const { return nb == 1 ? band * g.ow : nb * L; }
  // Per-thread scratch: the unfolded tile, then (several images per unit) the tile's output or
  // output gradient in (O, columns) layout.
  int64_t buffer_size() const {
    return std::max(K * tile_cols() + (nb > 1 ? O * tile_cols() : 0), (K + O) * tile_w);
  }

  // The output columns [lo, hi) whose input column ox*sw + off lies inside the image.
  void valid_range(int64_t off, int64_t& lo, int64_t& hi) const {
    lo = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;
    hi = (g.W - 1 - off) < 0 ? 0 : std::min(g.ow, (g.W - 1 - off) / g.sw + 1);
    lo = std::min(lo, hi);
  }

  // Unfolds output rows [oy0, oy1) of image x: row r of the column matrix starts at col + r * ld.
  void im2col(const T* x, T* col, int64_t ld, int64_t oy0, int64_t oy1) const {
    if (!table.empty()) {
      const int64_t taps = g.kh * g.kw, l0 = oy0 * g.ow, l1 = oy1 * g.ow;
      for (int64_t c = 0; c < g.C; ++c) {
        const T* xc = x + c * HW;
        for (int64_t t = 0; t < taps; ++t) {
          const int32_t* src = table.data() + t * L;
          gather_row(col + (c * taps + t) * ld - l0, xc, src, l0, l1);
        }
      }
      return;
    }
    // Stride 1 with output rows as wide as input rows ("same" padding): a tap's window rows are
    // one contiguous run of the input plane (whose reads stay inside the plane while pw <= W).
    const bool rows_contiguous = g.sh == 1 && g.sw == 1 && g.ow == g.W && g.pw <= g.W;
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t ki = 0; ki < g.kh; ++ki)
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          T* row = col + ((c * g.kh + ki) * g.kw + kj) * ld - oy0 * g.ow;
          const int64_t off = kj * g.dw - g.pw;
          int64_t lo, hi;
          valid_range(off, lo, hi);
          if (rows_contiguous) {
            // Output rows [a, b) read input rows a - ph + ki*dh onwards, consecutive in memory:
            // one copy of the whole run, then zeros over the columns that fall in the padding.
            const int64_t a = std::clamp(g.ph - ki * g.dh, oy0, oy1), b = std::clamp(g.H + g.ph - ki * g.dh, a, oy1);
            std::fill(row + oy0 * g.ow, row + a * g.ow, T(0));
            std::fill(row + b * g.ow, row + oy1 * g.ow, T(0));
            if (a == b) continue;
            T* r = row + a * g.ow;
            const T* src = x + (c * g.H + a - g.ph + ki * g.dh) * g.W + off;
            std::memcpy(r + lo, src + lo, size_t((b - a - 1) * g.ow + hi - lo) * sizeof(T));
            if (lo > 0 || hi < g.ow)
              for (int64_t oy = a; oy < b; ++oy, r += g.ow) {
                for (int64_t ox = 0; ox < lo; ++ox) r[ox] = T(0);
                for (int64_t ox = hi; ox < g.ow; ++ox) r[ox] = T(0);
              }
            continue;
          }
          for (int64_t oy = oy0; oy < oy1; ++oy) {
            T* r = row + oy * g.ow;
            const int64_t ih = oy * g.sh - g.ph + ki * g.dh;
            if (ih < 0 || ih >= g.H) {
              std::fill(r, r + g.ow, T(0));
              continue;
            }
            const T* src = x + (c * g.H + ih) * g.W + off;
            std::fill(r, r + lo, T(0));
            if (g.sw == 1) std::memcpy(r + lo, src + lo, size_t(hi - lo) * sizeof(T));
            else if (g.sw == 2) strided_copy<2>(r, src, lo, hi);  // a constant stride vectorises
            else if (g.sw == 4) strided_copy<4>(r, src, lo, hi);  // AlexNet's 11x11 stem
            else for (int64_t ox = lo; ox < hi; ++ox) r[ox] = src[ox * g.sw];
            std::fill(r + hi, r + g.ow, T(0));
          }
        }
  }

  // Unfolds output positions [l0, l1) of image x through the table: column l of row r is at
  // col[r * ld + l - l0].
  void im2col_positions(const T* x, T* col, int64_t ld, int64_t l0, int64_t l1) const {
    im2col_positions(x, col, ld, l0, l1, 0, g.C);
  }
  // The same for channels [c0, c1) only (row 0 of col is channel c0's first tap).
  void im2col_positions(const T* x, T* col, int64_t ld, int64_t l0, int64_t l1, int64_t c0, int64_t c1) const {
    const int64_t taps = g.kh * g.kw;
    for (int64_t c = c0; c < c1; ++c) {
      const T* xc = x + c * HW;
      for (int64_t t = 0; t < taps; ++t) {
        const int32_t* src = table.data() + t * L;
        table_row(col + ((c - c0) * taps + t) * ld - l0, xc, src, shifts[size_t(t)], l0, l1);
      }
    }
  }

  // dx += the adjoint of im2col(., ., ld, oy0, oy1) applied to col.
  void col2im(const T* col, int64_t ld, int64_t oy0, int64_t oy1, T* dx) const {
    if (!table.empty()) {
      const int64_t taps = g.kh * g.kw, l0 = oy0 * g.ow, l1 = oy1 * g.ow;
      for (int64_t c = 0; c < g.C; ++c) {
        T* dc = dx + c * HW;
        for (int64_t t = 0; t < taps; ++t) {
          const int32_t* dst = table.data() + t * L;
          scatter_add_row(col + (c * taps + t) * ld - l0, dc, dst, l0, l1);
        }
      }
      return;
    }
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t ki = 0; ki < g.kh; ++ki)
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const T* row = col + ((c * g.kh + ki) * g.kw + kj) * ld - oy0 * g.ow;
          const int64_t off = kj * g.dw - g.pw;
          int64_t lo, hi;
          valid_range(off, lo, hi);
          for (int64_t oy = oy0; oy < oy1; ++oy) {
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

  // Copies image i's (O, L) planes of src (image stride O*L) into tile, laid out (O, m*L).
  void gather(const T* src, T* tile, int64_t i, int64_t m) const {
    for (int64_t o = 0; o < O; ++o) std::memcpy(tile + o * m * L + i * L, src + (i * O + o) * L, size_t(L) * sizeof(T));
  }

  // Runs f(first_unit, last_unit, buffer, threads) over the units, in parallel when there are
  // several units and threads; threads > 1 only for a lone unit, which may spread its own work.
  template <typename F>
  void over_units(DType dt, const F& f) const {
    const int nt = get_num_threads();
    const int64_t n = units();
    auto run = [&](int64_t b, int64_t e, int threads) {
      Tensor buf = empty_tensor({buffer_size()}, dt);
      f(b, e, static_cast<T*>(buf.data_ptr()), threads);
    };
    if (n >= 2 && nt > 1 && !omp_in_parallel()) parallel_for(0, n, 1, [&](int64_t b, int64_t e) { run(b, e, 1); });
    else run(0, n, omp_in_parallel() ? 1 : nt);
  }
};

// Each group's filters as the left operand of the GEMMs: W_g (Og x CgK), or its transpose for the
// input gradient. Packed once per call where Kindle's SGEMM runs (sgemm.h), so that the units
// and bands of one call share one packing (a 512-channel 3x3 layer's filters are 9 MB).
template <typename T>
struct Filters {
  const T* w;
  int64_t Og, CgK;
  bool trans;
  std::vector<std::unique_ptr<sgemm::PackedA>> packed;

  Filters(const T* w_, const Conv<T>& cv, bool trans_) : w(w_), Og(cv.Og), CgK(cv.CgK), trans(trans_) {
    if constexpr (std::is_same_v<T, float>) {
      if (sgemm::preferred() && (trans ? CgK : Og) >= 8)
        for (int64_t gi = 0; gi < cv.G; ++gi)
          packed.push_back(trans ? std::make_unique<sgemm::PackedA>(true, CgK, Og, w + gi * Og * CgK, CgK)
                                 : std::make_unique<sgemm::PackedA>(false, Og, CgK, w + gi * Og * CgK, CgK));
    }
  }
  int64_t rows() const { return trans ? CgK : Og; }
  // Rows [r0, r1) of c (rows of op(W_g), n columns; c points at row 0) = op(W_g) b + beta c, on the
  // calling thread.
  void mul_rows(int64_t gi, int64_t r0, int64_t r1, int64_t n, const T* b, int64_t ldb, T beta, T* c,
                int64_t ldc) const {
    if constexpr (std::is_same_v<T, float>) {
      if (!packed.empty()) return sgemm::multiply(*packed[size_t(gi)], r0, r1 - r0, false, n, 1.f, b, ldb, beta, c, ldc);
    }
    const T* wg = w + gi * Og * CgK;
    if (trans) gemm<T>(true, false, r1 - r0, n, Og, T(1), wg + r0, CgK, b, ldb, beta, c + r0 * ldc, ldc, 1);
    else gemm<T>(false, false, r1 - r0, n, CgK, T(1), wg + r0 * CgK, CgK, b, ldb, beta, c + r0 * ldc, ldc, 1);
  }
  void mul(int64_t gi, int64_t n, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) const {
    mul_rows(gi, 0, rows(), n, b, ldb, beta, c, ldc);
  }
  // f(r0, r1) over the rows [0, rows()) of a product of n columns, so that threads > 1 can share
  // a product with enough work. Kindle's GEMM is split in blocks of whole packed panels, one per
  // thread: each of its rows is the same sum in any block. MKL's result for a row may depend on
  // how many rows a call has, so its products are cut into the same blocks (a function of the
  // shapes) at any thread count, run in parallel or in turn.
  template <typename F>
  void over_rows(int threads, int64_t n, const F& f) const {
    const int64_t m = rows();
    const bool small = double(Og) * double(CgK) * double(n) < double(1 << 22);
    if (small || (!packed.empty() && threads <= 1)) return f(0, m);
    const int64_t step = packed.empty() ? std::max<int64_t>(32, (m / 4 + 15) / 16 * 16) : sgemm::kPanelRows;
    const int64_t blocks = (m + step - 1) / step;
    auto run = [&](int64_t b0, int64_t b1) { f(b0 * step, std::min(m, b1 * step)); };
    if (threads > 1) parallel_for(0, blocks, 1, run);
    else for (int64_t bi = 0; bi < blocks; ++bi) run(bi, bi + 1);
  }
};

// Rows [0, rows) of cols elements (row stride ld) clamped to [lo, hi], for _conv2d_clamp: applied
// to each block of the output right after it is written, while it is in cache. NaN stays NaN.
template <typename T>
void clamp_rows(T* y, int64_t rows, int64_t cols, int64_t ld, const ConvGeom& cg) {
  const T lo = T(cg.lo), hi = T(cg.hi);
  for (int64_t r = 0; r < rows; ++r) {
    T* p = y + r * ld;
#pragma omp simd
    for (int64_t l = 0; l < cols; ++l) p[l] = std::min(std::max(p[l], lo), hi);
  }
}

template <typename T>
void forward(const Tensor& input, const Tensor& weight, const Tensor* bias, const Tensor& out, const ConvGeom& cg) {
  Conv<T> cv(cg);
  const WindowGeom& g = cg.w;
  const T* x = static_cast<const T*>(input.data_ptr());
  const T* w = static_cast<const T*>(weight.data_ptr());
  const T* b = bias ? static_cast<const T*>(bias->data_ptr()) : nullptr;
  T* y = static_cast<T*>(out.data_ptr());
  // Image n's output starts at y + n * ys (a channel slice of a larger tensor where ys > O * L).
  const int64_t ys = cg.out_image_stride ? cg.out_image_stride : cv.O * cv.L;
  auto clamp_images = [&] {
    if (cg.clamps())
      for (int64_t n = 0; n < g.N; ++n) clamp_rows(y + n * ys, cv.O, cv.L, cv.L, cg);
  };
  if (cv.Cg == 1 && cv.G > 1) {
    const Depthwise<T> d(g, cv.O);
    parallel_for(0, g.N * cv.O, 1, [&](int64_t b0, int64_t e0) {
      Tensor own = empty_tensor({d.scratch_size()}, input.dtype());
      T* scratch = static_cast<T*>(own.data_ptr());
      for (int64_t t = b0; t < e0; ++t) {
        const int64_t n = t / cv.O, o = t % cv.O;
        const T* plane = x + (n * g.C + o / d.mult) * cv.HW;
        const T* next = t + 1 < e0 ? x + ((t + 1) / cv.O * g.C + (t + 1) % cv.O / d.mult) * cv.HW : nullptr;
        T* yo = y + n * ys + o * cv.L;
        d.forward(plane, w + o * g.kh * g.kw, b ? b[o] : T(0), yo, scratch, next == plane ? nullptr : next);
        if (cg.clamps()) clamp_rows(yo, 1, cv.L, cv.L, cg);
      }
    });
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (cv.winograd()) {
      winograd_conv3x3(x, weight, false, b, y, g.N, g.C, g.H, g.W, cv.O, g.ph, g.pw, ys);
      clamp_images();
      return;
    }
    if (cv.large_kernel(false)) {
      if (ys == cv.O * cv.L) {
        direct_conv(x, w, false, b, y, g.N, g.C, g.H, g.W, cv.O, g.kh, g.kw, g.ph, g.pw);
      } else {  // (the direct kernel writes whole images: through a buffer into the slice)
        Tensor tmp = empty_tensor({g.N * cv.O * cv.L}, input.dtype());
        T* t = static_cast<T*>(tmp.data_ptr());
        direct_conv(x, w, false, b, t, g.N, g.C, g.H, g.W, cv.O, g.kh, g.kw, g.ph, g.pw);
        for (int64_t n = 0; n < g.N; ++n) std::copy(t + n * cv.O * cv.L, t + (n + 1) * cv.O * cv.L, y + n * ys);
      }
      clamp_images();
      return;
    }
  }
  const Filters<T> filters(w, cv, false);
  if (cv.tile_w > 0) {
    const int64_t tiles = cv.column_tiles(), total = g.N * cv.L;
    auto run = [&](int64_t t0, int64_t t1, int threads) {
      Tensor own = empty_tensor({cv.buffer_size()}, input.dtype());
      T* buf = static_cast<T*>(own.data_ptr());
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t c0 = t * cv.tile_w, cw = std::min(cv.tile_w, total - c0), ld = (cw + 15) / 16 * 16;
        T* tile = buf + cv.K * ld;
        over_images(cv.L, c0, cw, [&](int64_t i, int64_t l0, int64_t l1) {
          cv.im2col_positions(x + i * g.C * cv.HW, buf + i * cv.L + l0 - c0, ld, l0, l1);
        });
        zero_padding(buf, cv.K, cw, ld);
        filters.over_rows(threads, ld, [&](int64_t r0, int64_t r1) {
          for (int64_t gi = 0; gi < cv.G; ++gi) {
            filters.mul_rows(gi, r0, r1, ld, buf + gi * cv.CgK * ld, ld, T(0), tile + gi * cv.Og * ld, ld);
            over_images(cv.L, c0, cw, [&](int64_t i, int64_t l0, int64_t l1) {
              for (int64_t o = gi * cv.Og + r0; o < gi * cv.Og + r1; ++o) {
                const T* src = tile + o * ld + i * cv.L - c0;
                T* dst = y + i * ys + o * cv.L;
                const T bo = b ? b[o] : T(0);
                for (int64_t l = l0; l < l1; ++l) dst[l] = src[l] + bo;
                if (cg.clamps()) clamp_rows(dst + l0, 1, l1 - l0, 0, cg);
              }
            });
          }
        });
      }
    };
    // Tiles are a function of the shapes, each computed by one thread the same way at any thread
    // count; a lone tile shares its GEMM's rows (Filters::over_rows).
    if (tiles >= 2 && get_num_threads() > 1 && !omp_in_parallel())
      parallel_for(0, tiles, 1, [&](int64_t b0, int64_t b1) { run(b0, b1, 1); });
    else
      run(0, tiles, omp_in_parallel() ? 1 : get_num_threads());
    return;
  }
  cv.over_units(input.dtype(), [&](int64_t first, int64_t last, T* buf, int threads) {
    for (int64_t u = first; u < last; ++u) {
      const int64_t n0 = u * cv.nb, m = std::min(g.N, n0 + cv.nb) - n0;
      const T* xn = x + n0 * g.C * cv.HW;
      T* yn = y + n0 * ys;
      if (cv.nb > 1) {
        const int64_t cols = m * cv.L;
        T* tile = buf + cv.K * cols;
        for (int64_t i = 0; i < m; ++i) cv.im2col(xn + i * g.C * cv.HW, buf + i * cv.L, cols, 0, g.oh);
        filters.over_rows(threads, cols, [&](int64_t r0, int64_t r1) {
          for (int64_t gi = 0; gi < cv.G; ++gi) {
            T* tg = tile + gi * cv.Og * cols;
            filters.mul_rows(gi, r0, r1, cols, buf + gi * cv.CgK * cols, cols, T(0), tg, cols);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t o = gi * cv.Og + r0; o < gi * cv.Og + r1; ++o) {
                const T* src = tile + o * cols + i * cv.L;
                T* dst = yn + i * ys + o * cv.L;
                const T bo = b ? b[o] : T(0);
                for (int64_t l = 0; l < cv.L; ++l) dst[l] = src[l] + bo;
                if (cg.clamps()) clamp_rows(dst, 1, cv.L, 0, cg);
              }
          }
        });
        continue;
      }
      // One image, in bands of output rows: the same single-threaded GEMMs whatever the thread
      // count; a lone image spreads its bands over the threads (MKL's own threading may split
      // the sum over K, and the bits would then depend on the thread count).
      const int64_t bands = (g.oh + cv.band - 1) / cv.band;
      // Small convolutions (LeNet at batch 1) are not worth waking a thread for.
      const bool spread = threads > 1 && bands >= threads &&
                          double(cv.O) * double(cv.L) * double(cv.CgK) >= double(1 << 23);
      const int row_threads = spread ? 1 : threads;
      auto band = [&](int64_t oy0, T* bbuf) {
        const int64_t oy1 = std::min(g.oh, oy0 + cv.band), cw = (oy1 - oy0) * g.ow;
        const T* cols = xn + oy0 * g.ow;
        int64_t ld = cv.L;
        if (!cv.direct) {
          cv.im2col(xn, bbuf, cw, oy0, oy1);
          cols = bbuf;
          ld = cw;
        }
        T* yb = yn + oy0 * g.ow;
        // With fewer bands than threads (a 7x7 or 14x14 map), the threads share each band's rows.
        filters.over_rows(row_threads, cw, [&](int64_t r0, int64_t r1) {
          for (int64_t gi = 0; gi < cv.G; ++gi) {
            if (b)
              for (int64_t o = gi * cv.Og + r0; o < gi * cv.Og + r1; ++o) std::fill(yb + o * cv.L, yb + o * cv.L + cw, b[o]);
            filters.mul_rows(gi, r0, r1, cw, cols + gi * cv.CgK * ld, ld, b ? T(1) : T(0), yb + gi * cv.Og * cv.L,
                             cv.L);
            if (cg.clamps()) clamp_rows(yb + (gi * cv.Og + r0) * cv.L, r1 - r0, cw, cv.L, cg);
          }
        });
      };
      if (spread) {
        parallel_for(0, bands, 1, [&](int64_t b0, int64_t b1) {
          Tensor own = empty_tensor({cv.buffer_size()}, input.dtype());
          for (int64_t bi = b0; bi < b1; ++bi) band(bi * cv.band, static_cast<T*>(own.data_ptr()));
        });
      } else {
        for (int64_t bi = 0; bi < bands; ++bi) band(bi * cv.band, buf);
      }
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
    const Depthwise<T> d(g, cv.O);
    parallel_for(0, g.N * g.C, 1, [&](int64_t b0, int64_t e0) {
      Tensor own = empty_tensor({d.scratch_size()}, grad_out.dtype());
      T* scratch = static_cast<T*>(own.data_ptr());
      for (int64_t t = b0; t < e0; ++t) {
        const int64_t n = t / g.C, c = t % g.C;
        d.backward_input(gy + (n * cv.O + c * d.mult) * cv.L, w + c * d.mult * g.kh * g.kw, dx + t * cv.HW, scratch);
      }
    });
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    // The input gradient is the convolution of gy with the flipped, transposed filters, padded by
    // 2 - p (so p <= 2 here).
    if (cv.winograd() && g.ph <= 2 && g.pw <= 2) {
      winograd_conv3x3(gy, weight, true, nullptr, dx, g.N, cv.O, g.oh, g.ow, g.C, 2 - g.ph, 2 - g.pw);
      return;
    }
    if (cv.large_kernel(true)) {
      direct_conv(gy, w, true, nullptr, dx, g.N, cv.O, g.oh, g.ow, g.C, g.kh, g.kw, g.kh - 1 - g.ph, g.kw - 1 - g.pw);
      return;
    }
  }
  if (subpixel_adjoint_applies(cg)) {
    subpixel_adjoint(gy, w, dx, cg);
    return;
  }
  const Filters<T> filters(w, cv, true);
  cv.over_units(grad_out.dtype(), [&](int64_t first, int64_t last, T* buf, int threads) {
    for (int64_t u = first; u < last; ++u) {
      const int64_t n0 = u * cv.nb, m = std::min(g.N, n0 + cv.nb) - n0;
      const T* gyn = gy + n0 * cv.O * cv.L;
      T* dxn = dx + n0 * g.C * cv.HW;
      if (cv.direct) {
        for (int64_t gi = 0; gi < cv.G; ++gi)
          filters.mul(gi, cv.L, gyn + gi * cv.Og * cv.L, cv.L, T(0), dxn + gi * cv.CgK * cv.L, cv.L);
        continue;
      }
      if (cv.nb > 1) {
        std::fill(dxn, dxn + m * g.C * cv.HW, T(0));
        const int64_t cols = m * cv.L;
        T* tile = buf + cv.K * cols;
        for (int64_t i = 0; i < m; ++i) cv.gather(gyn, tile, i, m);
        filters.over_rows(threads, cols, [&](int64_t r0, int64_t r1) {
          for (int64_t gi = 0; gi < cv.G; ++gi)
            filters.mul_rows(gi, r0, r1, cols, tile + gi * cv.Og * cols, cols, T(0), buf + gi * cv.CgK * cols, cols);
        });
        if (threads > 1)  // the images' gradients are disjoint
          parallel_for(0, m, 1, [&](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i) cv.col2im(buf + i * cv.L, cols, 0, g.oh, dxn + i * g.C * cv.HW);
          });
        else
          for (int64_t i = 0; i < m; ++i) cv.col2im(buf + i * cv.L, cols, 0, g.oh, dxn + i * g.C * cv.HW);
        continue;
      }
      std::fill(dxn, dxn + g.C * cv.HW, T(0));
      for (int64_t oy0 = 0; oy0 < g.oh; oy0 += cv.band) {
        const int64_t oy1 = std::min(g.oh, oy0 + cv.band), cw = (oy1 - oy0) * g.ow;
        filters.over_rows(threads, cw, [&](int64_t r0, int64_t r1) {
          for (int64_t gi = 0; gi < cv.G; ++gi)
            filters.mul_rows(gi, r0, r1, cw, gyn + gi * cv.Og * cv.L + oy0 * g.ow, cv.L, T(0), buf + gi * cv.CgK * cw, cw);
        });
        cv.col2im(buf, cw, oy0, oy1, dxn);
      }
    }
  });
}

// The weight gradient of a small plane (the forward pass's column tiles, ungrouped): dW = the sum
// over tiles of columns, in order, of gy's tile (O x columns) times the unfolded tile transposed,
// in slabs of about kSlabCols of dW's columns (whole input channels), one slab per task. Each
// slab unfolds only its own channels, and every element of dW is one sum over all the images:
// no partial sums to add, where units of images summed into separate copies of dW (9.4 MB each
// for 512 channels at 3x3) and then added them, and each GEMM had only one unit's columns to sum.
constexpr int64_t kSlabCols = 384;
constexpr int64_t kSumTile = 512;  // columns summed per GEMM

template <typename T>
void weight_in_slabs(const T* gy, const T* x, T* dw, const Conv<T>& cv, DType dt) {
  const WindowGeom& g = cv.g;
  const int64_t taps = g.kh * g.kw, total = g.N * cv.L;
  const int64_t span = std::min(kSumTile, (total + 15) / 16 * 16), tiles = (total + span - 1) / span;
  // At least 8 slabs where there are 8 channels, so that threads share them evenly.
  const int64_t cs = std::max<int64_t>(1, std::min(kSlabCols / taps, (g.C + 7) / 8)), slabs = (g.C + cs - 1) / cs;
  // (Small products on the calling thread: waking a second cost more than it saved.)
  const bool small = double(cv.O) * double(cv.K) * double(total) < double(1 << 21);
  parallel_for(0, slabs, small ? slabs : 1, [&](int64_t s0, int64_t s1) {
    Tensor own = empty_tensor({(cv.O + std::min(cs, g.C) * taps) * span}, dt);
    T* gyt = static_cast<T*>(own.data_ptr());
    T* col = gyt + cv.O * span;
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t c0 = t * span, cw = std::min(span, total - c0), ld = (cw + 15) / 16 * 16;
      over_images(cv.L, c0, cw, [&](int64_t i, int64_t l0, int64_t l1) {  // gy's columns of the tile, (O, ld)
        for (int64_t o = 0; o < cv.O; ++o)
          std::copy(gy + (i * cv.O + o) * cv.L + l0, gy + (i * cv.O + o) * cv.L + l1, gyt + o * ld + i * cv.L + l0 - c0);
      });
      zero_padding(gyt, cv.O, cw, ld);
      for (int64_t sl = s0; sl < s1; ++sl) {
        const int64_t ch0 = sl * cs, ch1 = std::min(g.C, ch0 + cs), rows = (ch1 - ch0) * taps;
        over_images(cv.L, c0, cw, [&](int64_t i, int64_t l0, int64_t l1) {
          cv.im2col_positions(x + i * g.C * cv.HW, col + i * cv.L + l0 - c0, ld, l0, l1, ch0, ch1);
        });
        zero_padding(col, rows, cw, ld);
        gemm<T>(false, true, cv.O, rows, ld, T(1), gyt, ld, col, ld, t ? T(1) : T(0), dw + ch0 * taps, cv.K, 1);
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
    const Depthwise<T> d(g, cv.O);
    parallel_for(0, cv.O, 1, [&](int64_t b0, int64_t e0) {
      Tensor own = empty_tensor({d.scratch_size() + d.sums_size()}, grad_out.dtype());
      T* scratch = static_cast<T*>(own.data_ptr());
      for (int64_t o = b0; o < e0; ++o) {
        T* dwo = dw + o * g.kh * g.kw;
        std::fill(dwo, dwo + g.kh * g.kw, T(0));
        for (int64_t n = 0; n < g.N; ++n)
          d.backward_weight(gy + (n * cv.O + o) * cv.L, x + (n * g.C + o / d.mult) * cv.HW, dwo, scratch,
                            scratch + d.scratch_size());
      }
    });
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (cv.dense_stride1() && direct_conv_weight_applies(g.C, cv.O, g.kh, g.kw, g.ow)) {
      direct_conv_weight(x, gy, dw, g.N, g.C, g.H, g.W, cv.O, g.kh, g.kw, g.ph, g.pw);
      return;
    }
  }
  if (cv.tile_w > 0 && cv.G == 1) return weight_in_slabs(gy, x, dw, cv, grad_out.dtype());
  // Items of work: tiles of images (nb > 1), or bands of one image's output rows, so that a lone
  // image's weight gradient is shared by the threads too (it was one GEMM per band on one thread:
  // a ResNet's batch-1 training step at two threads took 1.1-1.2x torch's time). The items are
  // summed in up to 4 fixed blocks of consecutive items, then the blocks in order.
  const int64_t bands = cv.nb > 1 ? 1 : (g.oh + cv.band - 1) / cv.band;
  const int64_t items = cv.units() * bands, blocks = std::min<int64_t>(items, 4);
  if (blocks == 0) {
    std::fill(dw, dw + wsize, T(0));
    return;
  }
  Tensor partial = empty_tensor({blocks, wsize}, grad_out.dtype());
  T* part = static_cast<T*>(partial.data_ptr());
  auto block = [&](int64_t bi, T* buf) {
    T* acc = part + bi * wsize;
    T beta = T(0);
    // acc (+)= gyt (O rows, ld ldg) times the transpose of cols (K rows, ld ldc), over cw columns.
    auto product = [&](const T* gyt, int64_t ldg, const T* cols, int64_t ldc, int64_t cw) {
      for (int64_t gi = 0; gi < cv.G; ++gi)
        gemm<T>(false, true, cv.Og, cv.CgK, cw, T(1), gyt + gi * cv.Og * ldg, ldg, cols + gi * cv.CgK * ldc, ldc,
                beta, acc + gi * cv.Og * cv.CgK, cv.CgK, 1);
      beta = T(1);
    };
    for (int64_t item = bi * items / blocks; item < (bi + 1) * items / blocks; ++item) {
      const int64_t u = item / bands, n0 = u * cv.nb, m = std::min(g.N, n0 + cv.nb) - n0;
      const T* xn = x + n0 * g.C * cv.HW;
      const T* gyn = gy + n0 * cv.O * cv.L;
      if (cv.nb == 1) {
        const int64_t oy0 = item % bands * cv.band, oy1 = std::min(g.oh, oy0 + cv.band), cw = (oy1 - oy0) * g.ow;
        if (cv.direct) {
          product(gyn + oy0 * g.ow, cv.L, xn + oy0 * g.ow, cv.L, cw);
        } else {
          cv.im2col(xn, buf, cw, oy0, oy1);
          product(gyn + oy0 * g.ow, cv.L, buf, cw, cw);
        }
      } else {
        const int64_t cols = m * cv.L;
        T* tile = buf + cv.K * cols;
        for (int64_t i = 0; i < m; ++i) {
          cv.im2col(xn + i * g.C * cv.HW, buf + i * cv.L, cols, 0, g.oh);
          cv.gather(gyn, tile, i, m);
        }
        product(tile, cols, buf, cols, cols);
      }
    }
    if (beta == T(0)) std::fill(acc, acc + wsize, T(0));  // no output positions
  };
  if (blocks >= 2) {
    parallel_for(0, blocks, 1, [&](int64_t b, int64_t e) {
      Tensor buf = empty_tensor({cv.buffer_size()}, grad_out.dtype());
      for (int64_t bi = b; bi < e; ++bi) block(bi, static_cast<T*>(buf.data_ptr()));
    });
  } else {
    Tensor buf = empty_tensor({cv.buffer_size()}, grad_out.dtype());
    block(0, static_cast<T*>(buf.data_ptr()));
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
KINDLE_REGISTER_KERNEL(conv2d_stub, DeviceType::CPU, &cpu::conv2d_kernel);
KINDLE_REGISTER_KERNEL(conv2d_backward_input_stub, DeviceType::CPU, &cpu::conv2d_backward_input_kernel);
KINDLE_REGISTER_KERNEL(conv2d_backward_weight_stub, DeviceType::CPU, &cpu::conv2d_backward_weight_kernel);
}  // namespace kindle
