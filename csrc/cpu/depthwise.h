// Depthwise convolution (one input channel per group; conv2d.cpp's kernels) as stencils over phase
// planes: the zero-padded input plane cut into its sh x sw phases (the rows and columns of one
// residue modulo the stride), each laid out Wq columns wide, the output's row length plus the
// kernel's reach. Tap (ki, kj) then reads one phase plane at one fixed offset for every output
// position, so each tap is one contiguous multiply-add over the whole plane, computed on a grid of
// oh x Wq positions whose last Wq - ow columns are discarded, at any stride and dilation. The
// previous kernels vectorised stride 1 forward only, a row (7 outputs on a 7x7 map) at a time; the
// strided forward and both gradients ran scalar loops (MobileNet-v2's depthwise layers at batch 8:
// forward 1.1-3.0x, forward and backward 1.4-3.8x torch's time).
//
// Every output, input gradient and weight gradient element is computed by one thread in a fixed
// order (the weight gradient's images in turn), so results do not depend on the thread count.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/conv_gather.h"
#include "ops/kernels.h"

// The vector helpers below are inlined: GCC's note that a 64-byte vector argument's ABI differs
// without AVX-512 does not apply to them. (Not popped: GCC reports it where the templates are
// instantiated, at the end of the including file.)
#pragma GCC diagnostic ignored "-Wpsabi"

namespace kindle::cpu {

// 64-byte vectors of T (GCC's vector extension; lowered to the build's register width).
template <typename T>
struct VecOf;
template <>
struct VecOf<float> {
  typedef float type __attribute__((vector_size(64)));
};
template <>
struct VecOf<double> {
  typedef double type __attribute__((vector_size(64)));
};

template <typename T>
struct Depthwise {
  const WindowGeom& g;
  int64_t mult;    // output channels per input channel
  int64_t Hq, Wq;  // a phase plane's rows and columns
  int64_t V;       // output positions on the oh x Wq grid
  int64_t stride;  // elements per phase plane (one spare row: the last row's discarded columns read past Hq)
  std::vector<int64_t> phase, shift;  // per tap: its phase plane, and its offset in it
  int64_t reach = 0;                   // the largest shift

  // Blocks of two vectors (GCC's vector extension: two ymm registers under AVX2, one zmm pair
  // under AVX-512, four xmm on the baseline build), the sums of every tap kept in registers.
  using Vec = typename VecOf<T>::type;
  static constexpr int64_t kLanes = 64 / sizeof(T), kBlock = 2 * kLanes;
  static Vec load(const T* p) {
    Vec v;
    std::memcpy(&v, p, sizeof(Vec));
    return v;
  }
  static void store(T* p, Vec v) { std::memcpy(p, &v, sizeof(Vec)); }
  static Vec splat(T x) { return Vec{} + x; }

  Depthwise(const WindowGeom& geom, int64_t O) : g(geom), mult(O / geom.C) {
    int64_t ry = 0, rx = 0;
    for (int64_t ki = 0; ki < g.kh; ++ki) ry = std::max(ry, ki * g.dh / g.sh);
    for (int64_t kj = 0; kj < g.kw; ++kj) rx = std::max(rx, kj * g.dw / g.sw);
    Hq = g.oh + ry;
    Wq = g.ow + rx;
    V = g.oh * Wq;
    // (Blocks read up to kBlock past a plane's last row.)
    stride = (Hq + 1) * Wq + kBlock;
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        phase.push_back((ki * g.dh % g.sh) * g.sw + kj * g.dw % g.sw);
        shift.push_back(ki * g.dh / g.sh * Wq + kj * g.dw / g.sw);
        reach = std::max(reach, shift.back());
      }
  }
  int64_t phases() const { return g.sh * g.sw; }
  template <int S>
  static void scattered(T* __restrict dst, const T* __restrict src, int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) dst[S * c] = src[c];
  }
  // Scratch per task: the phase planes, then the oh x Wq grid with `reach` zeros before it and
  // zeros after it to the end of a phase plane (the input gradient reads it at negative shifts).
  int64_t grid_size() const { return reach + stride + kBlock; }
  int64_t scratch_size() const { return phases() * stride + grid_size(); }

  // Calls f(plane_row, input_row, c0, c1) for each phase plane row that lies in the input: columns
  // [c0, c1) of phase plane (a, b)'s row r hold input row i's columns c * sw + b - pw.
  template <typename F>
  void rows(const F& f) const {
    for (int64_t a = 0; a < g.sh; ++a)
      for (int64_t b = 0; b < g.sw; ++b)
        for (int64_t r = 0; r < Hq; ++r) {
          const int64_t i = r * g.sh + a - g.ph;
          if (i < 0 || i >= g.H) continue;
          const int64_t c0 = (g.pw - b + g.sw - 1) / g.sw, last = g.W - 1 + g.pw - b;  // (pw - b + sw - 1 >= 0)
          const int64_t c1 = last < 0 ? 0 : std::min<int64_t>(Wq, last / g.sw + 1);
          if (c1 > c0) f((a * g.sw + b) * stride + r * Wq, i * g.W + b - g.pw, c0, c1);
        }
  }

  // The phase planes of one input plane x (H x W): q[(a * sw + b) * stride + r * Wq + c] =
  // x[r * sh + a - ph][c * sw + b - pw], 0 in the padding.
  void fill(const T* x, T* q) const {
    std::fill(q, q + phases() * stride, T(0));
    rows([&](int64_t at, int64_t from, int64_t c0, int64_t c1) {
      if (g.sw == 1) std::copy(x + from + c0, x + from + c1, q + at + c0);
      else if (g.sw == 2) strided_copy<2>(q + at, x + from, c0, c1);
      else for (int64_t c = c0; c < c1; ++c) q[at + c] = x[from + c * g.sw];
    });
  }

  // y (one output plane, oh x ow) = bias + the stencil of w over x (one input plane). `next`, the
  // input plane the caller does next (or null), is prefetched while this one computes: at batch 8
  // the planes come from DRAM, and fetching each only when fill() reads it left the core waiting
  // (MobileNet-v2's 96-channel 112x112 stride-2 layer ran at 5 GB/s, twice its batch-1 time per plane).
  void forward(const T* x, const T* w, T bias, T* y, T* scratch, const T* next = nullptr) const {
    T* q = scratch;
    T* acc = scratch + phases() * stride;
    fill(x, q);
    const size_t taps = phase.size();
    constexpr int64_t kLine = 64 / sizeof(T);
    const int64_t lines = next ? (g.H * g.W + kLine - 1) / kLine : 0, blocks = (V + kBlock - 1) / kBlock;
    const int64_t per_block = (lines + blocks - 1) / blocks;
    int64_t line = 0;
    for (int64_t p0 = 0; p0 < V; p0 += kBlock) {
      for (int64_t e = std::min(lines, line + per_block); line < e; ++line) __builtin_prefetch(next + line * kLine, 0, 2);
      Vec a0 = splat(bias), a1 = a0;
      for (size_t t = 0; t < taps; ++t) {
        const Vec wv = splat(w[t]);
        const T* src = q + phase[t] * stride + shift[t] + p0;
        a0 += wv * load(src);
        a1 += wv * load(src + kLanes);
      }
      store(acc + p0, a0);
      store(acc + p0 + kLanes, a1);
    }
    for (int64_t oy = 0; oy < g.oh; ++oy) std::copy(acc + oy * Wq, acc + oy * Wq + g.ow, y + oy * g.ow);
  }

  // gy (one output plane) on the oh x Wq grid at scratch's grid (returned), zeros around it.
  T* spread(const T* gy, T* scratch) const {
    T* buf = scratch + phases() * stride;
    T* grid = buf + reach;
    std::fill(buf, grid, T(0));
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      std::copy(gy + oy * g.ow, gy + (oy + 1) * g.ow, grid + oy * Wq);
      std::fill(grid + oy * Wq + g.ow, grid + (oy + 1) * Wq, T(0));
    }
    std::fill(grid + V, buf + grid_size(), T(0));
    return grid;
  }

  // dx (one input plane) = the input gradient from the mult output planes gy[0..mult) (each oh x
  // ow, consecutive) and their filters w[0..mult). Each phase plane entry gathers its taps' terms
  // (at the negated shifts): dq[ph][i] = sum over the taps of phase ph of w * grid[i - shift].
  void backward_input(const T* gy, const T* w, T* dx, T* scratch) const {
    T* dq = scratch;
    const int64_t taps = g.kh * g.kw, end = Hq * Wq;
    for (int64_t m = 0; m < mult; ++m) {
      const T* grid = spread(gy + m * g.oh * g.ow, scratch);
      const T* wm = w + m * taps;
      for (int64_t ph = 0; ph < phases(); ++ph) {
        T* d = dq + ph * stride;
        for (int64_t i0 = 0; i0 < end; i0 += kBlock) {
          Vec a0 = m ? load(d + i0) : Vec{}, a1 = m ? load(d + i0 + kLanes) : Vec{};
          for (int64_t t = 0; t < taps; ++t) {
            if (phase[size_t(t)] != ph) continue;
            const Vec wv = splat(wm[t]);
            const T* src = grid + i0 - shift[size_t(t)];
            a0 += wv * load(src);
            a1 += wv * load(src + kLanes);
          }
          store(d + i0, a0);
          store(d + i0 + kLanes, a1);
        }
      }
    }
    // Each input position is one phase plane entry, if any: inputs no window reaches are zero.
    if ((g.H - 1 + g.ph) / g.sh >= Hq || (g.W - 1 + g.pw) / g.sw >= Wq) std::fill(dx, dx + g.H * g.W, T(0));
    rows([&](int64_t at, int64_t to, int64_t c0, int64_t c1) {
      if (g.sw == 1) std::copy(dq + at + c0, dq + at + c1, dx + to + c0);
      else if (g.sw == 2) scattered<2>(dx + to, dq + at, c0, c1);
      else for (int64_t c = c0; c < c1; ++c) dx[to + c * g.sw] = dq[at + c];
    });
  }

  // dw (one filter) += the correlation of gy (one output plane) with x (one input plane).
  // sums: taps vectors of scratch space (the caller's, sums_size() elements).
  int64_t sums_size() const { return int64_t(phase.size()) * kBlock; }
  void backward_weight(const T* gy, const T* x, T* dw, T* scratch, T* sums) const {
    T* q = scratch;
    fill(x, q);
    const T* grid = spread(gy, scratch);
    const size_t taps = phase.size();
    std::fill(sums, sums + taps * kBlock, T(0));
    for (int64_t p0 = 0; p0 < V; p0 += kBlock) {
      const Vec g0 = load(grid + p0), g1 = load(grid + p0 + kLanes);
      for (size_t t = 0; t < taps; ++t) {
        const T* src = q + phase[t] * stride + shift[t] + p0;
        store(sums + t * kBlock, load(sums + t * kBlock) + g0 * load(src) + g1 * load(src + kLanes));
      }
    }
    for (size_t t = 0; t < taps; ++t) {
      T sum = 0;
      for (int64_t l = 0; l < kBlock; ++l) sum += sums[t * kBlock + l];
      dw[t] += sum;
    }
  }
};

}  // namespace kindle::cpu
