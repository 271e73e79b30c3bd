// grid_sample on the CPU (ops/grid_sample_kernels.h). Each grid point's footprint (the input
// positions it reads and their weights, with the weights' derivatives for the grid's gradient)
// is computed once; the forward pass loops over channels inside a point, the backward pass
// computes all footprints of a sample first, then scatters each channel plane's gradient in its
// own task (no two tasks write one element: deterministic at any thread count).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu/parallel.h"
#include "ops/grid_sample_kernels.h"

namespace kindle::cpu {
namespace {

constexpr int kMaxTaps = 16;  // bicubic: 4 x 4

// A coordinate of a 16-bit grid computed as torch's vectorised kernel computes it: every
// operation in float, its result rounded to the 16-bit type (which decides, near a half, the
// pixel nearest picks and the taps bicubic reads).
template <typename H>
struct R {
  float v = 0;
  R() = default;
  R(float x) : v(float(H(x))) {}  // NOLINT: rounding is the point
  R(double x) : R(float(x)) {}    // NOLINT
  R(int x) : R(float(x)) {}       // NOLINT
  R(int64_t x) : R(float(x)) {}   // NOLINT
  explicit operator float() const { return v; }
  explicit operator double() const { return v; }
  explicit operator int64_t() const { return int64_t(v); }
  friend R operator+(R a, R b) { return R(a.v + b.v); }
  friend R operator-(R a, R b) { return R(a.v - b.v); }
  friend R operator*(R a, R b) { return R(a.v * b.v); }
  friend R operator/(R a, R b) { return R(a.v / b.v); }
  R operator-() const { return R(-v); }
  R& operator+=(R b) { return *this = *this + b; }
  R& operator-=(R b) { return *this = *this - b; }
  friend bool operator<(R a, R b) { return a.v < b.v; }
  friend bool operator<=(R a, R b) { return a.v <= b.v; }
  friend bool operator>(R a, R b) { return a.v > b.v; }
  friend bool operator>=(R a, R b) { return a.v >= b.v; }
  friend bool operator==(R a, R b) { return a.v == b.v; }
};
template <typename T> T floor_(T x) { return std::floor(x); }
template <typename H> R<H> floor_(R<H> x) { return R<H>(std::floor(x.v)); }
template <typename T> T nearbyint_(T x) { return std::nearbyint(x); }
template <typename H> R<H> nearbyint_(R<H> x) { return R<H>(std::nearbyint(x.v)); }
template <typename T> T fmod_(T a, T b) { return std::fmod(a, b); }
template <typename H> R<H> fmod_(R<H> a, R<H> b) { return R<H>(std::fmod(a.v, b.v)); }
template <typename T> bool isnan_(T x) { return std::isnan(x); }
template <typename H> bool isnan_(R<H> x) { return std::isnan(x.v); }

template <typename T>
struct Footprint {
  int taps = 0;
  int64_t off[kMaxTaps];  // offset in an input plane; -1: outside (reads 0)
  T w[kMaxTaps];
  T dw[kMaxTaps][3];  // d(weight)/d(source coordinate), per coordinate (x, y, z)
  T mult[3];          // d(source coordinate)/d(grid value)
  T cx[4], cy[4];     // bicubic: the separable coefficients (w[j * 4 + i] = cy[j] * cx[i])
};

// Clipping to [0, size - 1]: the gradient is 0 where it clips. A NaN clips as torch's kernels
// clip it: to 0 in 2-d (a vector max), to size - 1 in 3-d (std::max then std::min).
template <typename T>
T clip(T x, int64_t size, T& grad, bool nan_low = true) {
  if (isnan_(x)) {
    grad = 0;
    return nan_low ? T(0) : T(size - 1);
  }
  if (x <= 0) {
    grad = 0;
    return 0;
  }
  const T hi = T(size - 1);
  if (x >= hi) {
    grad = 0;
    return hi;
  }
  grad = 1;
  return x;
}

// Reflection about the bounds twice_low / 2 and twice_high / 2 (half-integers when not aligned).
template <typename T>
T reflect(T x, int64_t twice_low, int64_t twice_high, T& grad) {
  if (twice_low == twice_high) {
    grad = 0;
    return 0;
  }
  const T lo = T(twice_low) / 2, span = T(twice_high - twice_low) / 2;
  x -= lo;
  T sign = 1;
  if (x < 0) {
    sign = -1;
    x = -x;
  }
  const T extra = fmod_(x, span);
  const T flips = floor_(x / span);
  if (fmod_(flips, T(2)) == 0) {
    grad = sign;
    return extra + lo;
  }
  grad = -sign;
  return span - extra + lo;
}

template <typename T>
T unnormalize(T g, int64_t size, bool align, T& grad) {
  if (align) {
    grad = T(size - 1) / 2;
    return (g + 1) / 2 * T(size - 1);
  }
  grad = T(size) / 2;
  return ((g + 1) * T(size) - 1) / 2;
}

// A coordinate after the padding mode (border: clipped; reflection: reflected, then clipped).
template <typename T>
T pad_coord(T c, int64_t size, const GridSampleArgs& a, T& grad, bool nan_low = true) {
  grad = 1;
  if (a.padding == 1) return clip(c, size, grad, nan_low);
  if (a.padding == 2) {
    T g1, g2;
    c = a.align_corners ? reflect(c, 0, 2 * (size - 1), g1) : reflect(c, -1, 2 * size - 1, g1);
    c = clip(c, size, g2, nan_low);
    grad = g1 * g2;
  }
  return c;
}

// An integer position from an integral-valued coordinate; false where it is outside [0, size).
template <typename T>
bool position(T v, int64_t size, int64_t& i) {
  if (!(v >= 0 && v < T(size))) return false;  // NaN too
  i = static_cast<int64_t>(v);
  return true;
}

// Bicubic's A = -0.75 kernel: coefficients of the four taps at offsets -1..2 from floor(x), for
// t = x - floor(x), and their derivatives in t.
template <typename T>
void cubic(T t, T c[4], T d[4]) {
  const T A = T(-0.75);
  auto near = [&](T x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };            // |x| <= 1
  auto far = [&](T x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };        // 1 < |x| < 2
  auto dnear = [&](T x) { return (3 * (A + 2) * x - 2 * (A + 3)) * x; };
  auto dfar = [&](T x) { return (3 * A * x - 10 * A) * x + 8 * A; };
  c[0] = far(t + 1), c[1] = near(t), c[2] = near(1 - t), c[3] = far(2 - t);
  d[0] = dfar(t + 1), d[1] = dnear(t), d[2] = -dnear(1 - t), d[3] = -dfar(2 - t);
}

// C: the type coordinates are computed in (T, or R<16-bit type> for a 16-bit input).
template <typename T, int ND, typename C>
void footprint_in(const T* g, const int64_t* size, const GridSampleArgs& a, Footprint<T>& f) {
  const int64_t stride[3] = {1, size[0], size[0] * size[1]};
  if (a.interpolation == 2) {  // bicubic (2-d): padding per tap, no gradient through it
    C cx[4], cy[4], dx[4], dy[4], mx, my;
    const C ix = unnormalize(C(g[0]), size[0], a.align_corners, mx);
    const C iy = unnormalize(C(g[1]), size[1], a.align_corners, my);
    f.mult[0] = T(mx), f.mult[1] = T(my);
    const C fx = floor_(ix), fy = floor_(iy);
    cubic(ix - fx, cx, dx);
    cubic(iy - fy, cy, dy);
    for (int i = 0; i < 4; ++i) f.cx[i] = T(cx[i]), f.cy[i] = T(cy[i]);
    f.taps = 16;
    for (int j = 0; j < 4; ++j) {
      C unused;
      int64_t py = 0;
      const bool oky = position(pad_coord(fy - C(1) + C(j), size[1], a, unused), size[1], py);
      for (int i = 0; i < 4; ++i) {
        int64_t px = 0;
        const bool okx = position(pad_coord(fx - C(1) + C(i), size[0], a, unused), size[0], px);
        const int k = j * 4 + i;
        f.off[k] = okx && oky ? py * stride[1] + px : -1;
        f.w[k] = T(cy[j] * cx[i]);
        f.dw[k][0] = T(dx[i] * cy[j]);
        f.dw[k][1] = T(cx[i] * dy[j]);
      }
    }
    return;
  }
  C c[ND];
  for (int d = 0; d < ND; ++d) {
    C g1, g2;
    c[d] = unnormalize(C(g[d]), size[d], a.align_corners, g1);
    c[d] = pad_coord(c[d], size[d], a, g2, ND == 2);
    f.mult[d] = T(g1 * g2);
  }
  if (a.interpolation == 1) {  // nearest: round half to even; no gradient for the grid
    int64_t off = 0;
    bool ok = true;
    for (int d = 0; d < ND; ++d) {
      int64_t p = 0;
      ok = ok && position(nearbyint_(c[d]), size[d], p);
      off += p * stride[d];
    }
    f.taps = 1;
    f.off[0] = ok ? off : -1;
    f.w[0] = 1;
    for (int d = 0; d < ND; ++d) f.dw[0][d] = 0;
    return;
  }
  C lo[ND], wt[ND][2];
  for (int d = 0; d < ND; ++d) {
    lo[d] = floor_(c[d]);
    wt[d][1] = c[d] - lo[d];
    wt[d][0] = C(1) - wt[d][1];
  }
  f.taps = 1 << ND;
  for (int k = 0; k < f.taps; ++k) {
    int64_t off = 0;
    bool ok = true;
    C w[ND];
    for (int d = 0; d < ND; ++d) {
      const int up = (k >> d) & 1;
      int64_t p = 0;
      ok = ok && position(lo[d] + C(up), size[d], p);
      off += p * stride[d];
      w[d] = wt[d][up];
    }
    f.off[k] = ok ? off : -1;
    // torch's products: y then x in 2-d (its vectorised kernel), x, y, z in 3-d
    if constexpr (ND == 2) {
      f.w[k] = T(w[1] * w[0]);
      f.dw[k][0] = T((k & 1) ? w[1] : -w[1]);
      f.dw[k][1] = T((k & 2) ? w[0] : -w[0]);
    } else {
      f.w[k] = T(w[0] * w[1] * w[2]);
      f.dw[k][0] = T((k & 1) ? w[1] * w[2] : -(w[1] * w[2]));
      f.dw[k][1] = T((k & 2) ? w[0] * w[2] : -(w[0] * w[2]));
      f.dw[k][2] = T((k & 4) ? w[0] * w[1] : -(w[0] * w[1]));
    }
  }
}

template <typename T, int ND>
void footprint(const T* g, const int64_t* size, const GridSampleArgs& a, Footprint<T>& f) {
  if constexpr (std::is_same_v<T, float>) {
    if (a.round16 == 1) return footprint_in<T, ND, R<Half>>(g, size, a, f);
    if (a.round16 == 2) return footprint_in<T, ND, R<BFloat16>>(g, size, a, f);
  }
  footprint_in<T, ND, T>(g, size, a, f);
}

// 2-d bilinear, the common case, a block of points at a time: the coordinates and weights in
// straight loops over the block (vectorisable), then each channel reads the block's four corners.
constexpr int kBlock = 64;

template <typename T>
struct BilinearBlock {
  int64_t off[4][kBlock];  // corner offsets, clamped into the plane (the mask says what is read)
  bool ok[4][kBlock];
  T w[4][kBlock];          // nw, ne, sw, se
  T wx[2][kBlock], wy[2][kBlock], mx[kBlock], my[kBlock];
};

template <typename T>
void bilinear_block(const T* g, int count, const int64_t* size, const GridSampleArgs& a, BilinearBlock<T>& b) {
  const int64_t W = size[0], H = size[1];
  for (int i = 0; i < count; ++i) {
    T gx, gy;
    T ix = unnormalize(g[2 * i], W, a.align_corners, gx);
    T iy = unnormalize(g[2 * i + 1], H, a.align_corners, gy);
    T px, py;
    ix = pad_coord(ix, W, a, px);
    iy = pad_coord(iy, H, a, py);
    b.mx[i] = gx * px;
    b.my[i] = gy * py;
    const T fx = std::floor(ix), fy = std::floor(iy);
    const T e1 = ix - fx, n1 = iy - fy;
    b.wx[1][i] = e1, b.wx[0][i] = 1 - e1, b.wy[1][i] = n1, b.wy[0][i] = 1 - n1;
    b.w[0][i] = (1 - n1) * (1 - e1), b.w[1][i] = (1 - n1) * e1, b.w[2][i] = n1 * (1 - e1), b.w[3][i] = n1 * e1;
    const bool x0 = fx >= 0 && fx < T(W), x1 = fx + 1 >= 0 && fx + 1 < T(W);
    const bool y0 = fy >= 0 && fy < T(H), y1 = fy + 1 >= 0 && fy + 1 < T(H);
    const int64_t cx0 = x0 ? int64_t(fx) : 0, cx1 = x1 ? int64_t(fx) + 1 : 0;
    const int64_t cy0 = y0 ? int64_t(fy) : 0, cy1 = y1 ? int64_t(fy) + 1 : 0;
    b.ok[0][i] = x0 && y0, b.ok[1][i] = x1 && y0, b.ok[2][i] = x0 && y1, b.ok[3][i] = x1 && y1;
    b.off[0][i] = cy0 * W + cx0, b.off[1][i] = cy0 * W + cx1, b.off[2][i] = cy1 * W + cx0, b.off[3][i] = cy1 * W + cx1;
  }
}

template <typename T>
inline T corner(const T* src, const BilinearBlock<T>& b, int k, int i) {
  return b.ok[k][i] ? src[b.off[k][i]] : T(0);
}

struct Geometry {
  int64_t n, c, plane, points;  // plane: input elements per channel; points: grid points per sample
  int64_t size[3];              // input sizes in (x, y, z) order
};

Geometry geometry(const Tensor& input, const Tensor& grid, int nd) {
  Geometry g{input.size(0), input.size(1), 1, 1, {1, 1, 1}};
  for (int d = 0; d < nd; ++d) {
    g.size[d] = input.size(input.dim() - 1 - d);
    g.plane *= g.size[d];
  }
  for (int64_t d = 1; d < grid.dim() - 1; ++d) g.points *= grid.size(d);
  return g;
}

template <typename T, int ND>
void forward(const Tensor& out, const Tensor& input, const Tensor& grid, const Tensor& grid_tangent,
             const GridSampleArgs& a) {
  const Geometry G = geometry(input, grid, ND);
  const T* in = static_cast<const T*>(input.data_ptr());
  const T* gr = static_cast<const T*>(grid.data_ptr());
  T* o = static_cast<T*>(out.data_ptr());
  const T* gt = grid_tangent.defined() ? static_cast<const T*>(grid_tangent.data_ptr()) : nullptr;
  if (ND == 2 && a.interpolation == 0 && a.round16 == 0 && !gt) {
    const int64_t blocks = (G.points + kBlock - 1) / kBlock;
    parallel_for(0, G.n * blocks, std::max<int64_t>(1, 64 / std::max<int64_t>(G.c, 1)), [&](int64_t bb, int64_t be) {
      BilinearBlock<T> b;
      for (int64_t q = bb; q < be; ++q) {
        const int64_t n = q / blocks, p0 = (q % blocks) * kBlock;
        const int count = int(std::min<int64_t>(kBlock, G.points - p0));
        bilinear_block(gr + (n * G.points + p0) * 2, count, G.size, a, b);
        const T* src = in + n * G.c * G.plane;
        T* dst = o + n * G.c * G.points + p0;
        for (int64_t ch = 0; ch < G.c; ++ch, src += G.plane, dst += G.points)
          for (int i = 0; i < count; ++i)
            dst[i] = corner(src, b, 0, i) * b.w[0][i] + corner(src, b, 1, i) * b.w[1][i] +
                     corner(src, b, 2, i) * b.w[2][i] + corner(src, b, 3, i) * b.w[3][i];
      }
    });
    return;
  }
  const int64_t grain = std::max<int64_t>(1, 2048 / std::max<int64_t>(G.c, 1));
  parallel_for(0, G.n * G.points, grain, [&](int64_t b, int64_t e) {
    Footprint<T> f;
    for (int64_t q = b; q < e; ++q) {
      const int64_t n = q / G.points, p = q % G.points;
      footprint<T, ND>(gr + q * ND, G.size, a, f);
      if (gt) {  // forward mode along the grid: the weights become their derivatives along the tangent
        for (int k = 0; k < f.taps; ++k) {
          T dw = 0;
          if (a.interpolation != 1)
            for (int d = 0; d < ND; ++d) dw += f.dw[k][d] * f.mult[d] * gt[q * ND + d];
          f.w[k] = dw;
        }
      }
      const T* src = in + n * G.c * G.plane;
      T* dst = o + n * G.c * G.points + p;
      for (int64_t ch = 0; ch < G.c; ++ch, src += G.plane, dst += G.points) {
        T acc = 0;
        if (a.interpolation == 2 && !gt) {  // rows first, then the column (torch's order)
          for (int j = 0; j < 4; ++j) {
            T row = 0;
            for (int i = 0; i < 4; ++i) {
              const int k = j * 4 + i;
              row += (f.off[k] >= 0 ? src[f.off[k]] : T(0)) * f.cx[i];
            }
            acc += row * f.cy[j];
          }
        } else {
          for (int k = 0; k < f.taps; ++k) acc += (f.off[k] >= 0 ? src[f.off[k]] : T(0)) * f.w[k];
        }
        *dst = acc;
      }
    }
  });
}

template <typename T>
void backward_bilinear2d(const Tensor& grad_input, const Tensor& grad_grid, const Tensor& grad_out,
                         const Tensor& input, const Tensor& grid, const GridSampleArgs& a) {
  const Geometry G = geometry(input, grid, 2);
  const T* in = static_cast<const T*>(input.data_ptr());
  const T* gr = static_cast<const T*>(grid.data_ptr());
  const T* go = static_cast<const T*>(grad_out.data_ptr());
  const int64_t blocks = (G.points + kBlock - 1) / kBlock;
  if (grad_grid.defined()) {
    T* gg = static_cast<T*>(grad_grid.data_ptr());
    parallel_for(0, G.n * blocks, std::max<int64_t>(1, 64 / std::max<int64_t>(G.c, 1)), [&](int64_t bb, int64_t be) {
      BilinearBlock<T> b;
      T sx[kBlock], sy[kBlock];
      for (int64_t q = bb; q < be; ++q) {
        const int64_t n = q / blocks, p0 = (q % blocks) * kBlock;
        const int count = int(std::min<int64_t>(kBlock, G.points - p0));
        bilinear_block(gr + (n * G.points + p0) * 2, count, G.size, a, b);
        for (int i = 0; i < count; ++i) sx[i] = sy[i] = 0;
        const T* src = in + n * G.c * G.plane;
        const T* g = go + n * G.c * G.points + p0;
        for (int64_t ch = 0; ch < G.c; ++ch, src += G.plane, g += G.points)
          for (int i = 0; i < count; ++i) {
            const T nw = corner(src, b, 0, i), ne = corner(src, b, 1, i);
            const T sw = corner(src, b, 2, i), se = corner(src, b, 3, i);
            sx[i] += ((ne - nw) * b.wy[0][i] + (se - sw) * b.wy[1][i]) * g[i];
            sy[i] += ((sw - nw) * b.wx[0][i] + (se - ne) * b.wx[1][i]) * g[i];
          }
        T* out = gg + (n * G.points + p0) * 2;
        for (int i = 0; i < count; ++i) out[2 * i] = b.mx[i] * sx[i], out[2 * i + 1] = b.my[i] * sy[i];
      }
    });
  }
  if (!grad_input.defined()) return;
  // One task per (sample, channel) plane; a task's blocks are those of its current sample,
  // recomputed when the sample changes (tasks cover consecutive planes, so mostly once).
  T* gi = static_cast<T*>(grad_input.data_ptr());
  parallel_for(0, G.n * G.c, 1, [&](int64_t pb, int64_t pe) {
    std::vector<BilinearBlock<T>> bs(static_cast<size_t>(blocks));
    int64_t have = -1;
    for (int64_t plane = pb; plane < pe; ++plane) {
      const int64_t n = plane / G.c;
      if (n != have) {
        for (int64_t q = 0; q < blocks; ++q) {
          const int64_t p0 = q * kBlock;
          bilinear_block(gr + (n * G.points + p0) * 2, int(std::min<int64_t>(kBlock, G.points - p0)), G.size, a,
                         bs[size_t(q)]);
        }
        have = n;
      }
      T* dst = gi + plane * G.plane;
      std::fill(dst, dst + G.plane, T(0));
      const T* g = go + plane * G.points;
      for (int64_t q = 0; q < blocks; ++q) {
        const BilinearBlock<T>& b = bs[size_t(q)];
        const int64_t p0 = q * kBlock;
        const int count = int(std::min<int64_t>(kBlock, G.points - p0));
        for (int i = 0; i < count; ++i)
          for (int k = 0; k < 4; ++k)
            if (b.ok[k][i]) dst[b.off[k][i]] += g[p0 + i] * b.w[k][i];
      }
    }
  });
}

template <typename T, int ND>
void backward(const Tensor& grad_input, const Tensor& grad_grid, const Tensor& grad_out, const Tensor& input,
              const Tensor& grid, const GridSampleArgs& a) {
  if (ND == 2 && a.interpolation == 0 && a.round16 == 0) return backward_bilinear2d<T>(grad_input, grad_grid, grad_out, input, grid, a);
  const Geometry G = geometry(input, grid, ND);
  const T* in = static_cast<const T*>(input.data_ptr());
  const T* gr = static_cast<const T*>(grid.data_ptr());
  const T* go = static_cast<const T*>(grad_out.data_ptr());
  if (grad_grid.defined()) {
    T* gg = static_cast<T*>(grad_grid.data_ptr());
    const int64_t grain = std::max<int64_t>(1, 2048 / std::max<int64_t>(G.c, 1));
    parallel_for(0, G.n * G.points, grain, [&](int64_t b, int64_t e) {
      Footprint<T> f;
      for (int64_t q = b; q < e; ++q) {
        const int64_t n = q / G.points, p = q % G.points;
        footprint<T, ND>(gr + q * ND, G.size, a, f);
        T sum[3] = {0, 0, 0};
        if (a.interpolation != 1) {
          const T* src = in + n * G.c * G.plane;
          const T* g = go + n * G.c * G.points + p;
          for (int64_t ch = 0; ch < G.c; ++ch, src += G.plane, g += G.points)
            for (int k = 0; k < f.taps; ++k) {
              if (f.off[k] < 0) continue;
              const T v = src[f.off[k]] * *g;
              for (int d = 0; d < ND; ++d) sum[d] += v * f.dw[k][d];
            }
        }
        for (int d = 0; d < ND; ++d) gg[q * ND + d] = f.mult[d] * sum[d];
      }
    });
  }
  if (!grad_input.defined()) return;
  T* gi = static_cast<T*>(grad_input.data_ptr());
  std::vector<Footprint<T>> fps(static_cast<size_t>(G.points));
  for (int64_t n = 0; n < G.n; ++n) {
    parallel_for(0, G.points, 256, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) footprint<T, ND>(gr + (n * G.points + p) * ND, G.size, a, fps[size_t(p)]);
    });
    parallel_for(0, G.c, 1, [&](int64_t b, int64_t e) {
      for (int64_t ch = b; ch < e; ++ch) {
        T* dst = gi + (n * G.c + ch) * G.plane;
        std::fill(dst, dst + G.plane, T(0));
        const T* g = go + (n * G.c + ch) * G.points;
        for (int64_t p = 0; p < G.points; ++p) {
          const Footprint<T>& f = fps[size_t(p)];
          for (int k = 0; k < f.taps; ++k)
            if (f.off[k] >= 0) dst[f.off[k]] += g[p] * f.w[k];
        }
      }
    });
  }
}

void grid_sample_kernel(const Tensor& out, const Tensor& input, const Tensor& grid, const Tensor& grid_tangent,
                        const GridSampleArgs& a) {
  const bool three = input.dim() == 5;
  if (input.dtype() == kFloat64) {
    three ? forward<double, 3>(out, input, grid, grid_tangent, a) : forward<double, 2>(out, input, grid, grid_tangent, a);
  } else {
    three ? forward<float, 3>(out, input, grid, grid_tangent, a) : forward<float, 2>(out, input, grid, grid_tangent, a);
  }
}

void grid_sample_backward_kernel(const Tensor& grad_input, const Tensor& grad_grid, const Tensor& grad_out,
                                 const Tensor& input, const Tensor& grid, const GridSampleArgs& a) {
  const bool three = input.dim() == 5;
  if (input.dtype() == kFloat64) {
    three ? backward<double, 3>(grad_input, grad_grid, grad_out, input, grid, a)
          : backward<double, 2>(grad_input, grad_grid, grad_out, input, grid, a);
  } else {
    three ? backward<float, 3>(grad_input, grad_grid, grad_out, input, grid, a)
          : backward<float, 2>(grad_input, grad_grid, grad_out, input, grid, a);
  }
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(grid_sample_stub, DeviceType::CPU, &cpu::grid_sample_kernel);
KINDLE_REGISTER_KERNEL(grid_sample_backward_stub, DeviceType::CPU, &cpu::grid_sample_backward_kernel);
}  // namespace kindle
