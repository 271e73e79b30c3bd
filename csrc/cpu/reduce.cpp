// Reduction kernels. Results never depend on the thread count: a row longer than kBlock is cut
// into fixed blocks whatever the threads, each block is reduced with a fixed lane pattern, and
// the block results are combined in order. Threads only decide who computes which block.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "cpu/complex.h"
#include "cpu/loops.h"
#include "cpu/parallel.h"
#include "cpu/vec_math.h"
#include "ops/kernels.h"

namespace kindle::cpu {
namespace {

constexpr int64_t kBlock = 1 << 15;
constexpr int kLanes = 16;

template <typename T> struct AccType { using type = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, double, int64_t>; };
template <> struct AccType<bool> { using type = int64_t; };

template <typename T, ReduceOp OP>
struct Reducer {
  using A = typename AccType<T>::type;
  static A init() {
    if constexpr (OP == ReduceOp::Prod || OP == ReduceOp::All) return A(1);
    else if constexpr (OP == ReduceOp::Max) return std::is_floating_point_v<A> ? A(-INFINITY) : std::numeric_limits<A>::lowest();
    else if constexpr (OP == ReduceOp::Min) return std::is_floating_point_v<A> ? A(INFINITY) : std::numeric_limits<A>::max();
    else return A(0);
  }
  static A step(A acc, A x) {
    if constexpr (OP == ReduceOp::Sum || OP == ReduceOp::Any) return wrap_add(acc, OP == ReduceOp::Any ? A(x != 0) : x);
    else if constexpr (OP == ReduceOp::SumSq) return wrap_add(acc, wrap_mul(x, x));
    else if constexpr (OP == ReduceOp::Prod) return wrap_mul(acc, x);
    else if constexpr (OP == ReduceOp::All) return acc * A(x != 0);
    else if constexpr (OP == ReduceOp::Max) return (x != x || x > acc) ? x : acc;
    else return (x != x || x < acc) ? x : acc;
  }
  static A combine(A a, A b) {
    if constexpr (OP == ReduceOp::Sum || OP == ReduceOp::SumSq || OP == ReduceOp::Any) return wrap_add(a, b);
    else if constexpr (OP == ReduceOp::Prod || OP == ReduceOp::All) return wrap_mul(a, b);
    else return step(a, b);
  }
  // A contiguous run: fixed lanes, combined pairwise.
  static A run(const T* p, int64_t n) {
    if constexpr (std::is_same_v<T, float> && (OP == ReduceOp::Sum || OP == ReduceOp::SumSq)) return run_f32(p, n);
    else return run_lanes(p, n);
  }
  // float32 sums: 32 float lanes over chunks of 1024 (fast, vectorised), chunks added in double.
  static A run_f32(const float* p, int64_t n) {
    constexpr int L = 32;
    constexpr int64_t kChunk = 1024;
    double total = 0;
    for (int64_t c = 0; c < n; c += kChunk) {
      const int64_t m = std::min(kChunk, n - c);
      const float* q = p + c;
      float lanes[L] = {};
      int64_t i = 0;
      for (; i + L <= m; i += L)
        for (int l = 0; l < L; ++l) lanes[l] += OP == ReduceOp::SumSq ? q[i + l] * q[i + l] : q[i + l];
      for (; i < m; ++i) lanes[0] += OP == ReduceOp::SumSq ? q[i] * q[i] : q[i];
      for (int w = L / 2; w > 0; w /= 2)
        for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
      total += double(lanes[0]);
    }
    return A(total);
  }
  static A run_lanes(const T* p, int64_t n) {
    A lanes[kLanes];
    for (int l = 0; l < kLanes; ++l) lanes[l] = init();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int l = 0; l < kLanes; ++l) lanes[l] = step(lanes[l], A(load(p + i + l)));
    for (; i < n; ++i) lanes[0] = step(lanes[0], A(load(p + i)));
    for (int w = kLanes / 2; w > 0; w /= 2)
      for (int l = 0; l < w; ++l) lanes[l] = combine(lanes[l], lanes[l + w]);
    return lanes[0];
  }
  static A run_strided(const T* p, int64_t n, int64_t s) {
    A acc = init();
    for (int64_t i = 0; i < n; ++i) acc = step(acc, A(load(p + i * s)));
    return acc;
  }
};

template <typename T, typename O, ReduceOp OP>
void reduce_typed(const ReducePlan& pl) {
  using Red = Reducer<T, OP>;
  using A = typename Red::A;
  const T* in = static_cast<const T*>(pl.input->data_ptr());
  O* out = static_cast<O*>(pl.out.data_ptr());
  const int64_t M = pl.M, R = pl.R, rs = pl.rstride;
  const int64_t nk = int64_t(pl.kept_sizes.size());
  auto offset_of = [&](int64_t m) {
    int64_t off = 0;
    for (int64_t d = nk - 1; d >= 0; --d) { off += (m % pl.kept_sizes[d]) * pl.kept_strides[d]; m /= pl.kept_sizes[d]; }
    return off;
  };
  auto store = [&](int64_t m, A v) { out[m] = O(v); };
  auto reduce_row = [&](const T* p) -> A {
    if (rs != 1) return Red::run_strided(p, R, rs);
    if (R <= kBlock) return Red::run(p, R);
    A acc = Red::init();
    for (int64_t b = 0; b < R; b += kBlock) acc = Red::combine(acc, Red::run(p + b, std::min(kBlock, R - b)));
    return acc;
  };
  if (M == 1 && rs == 1 && R > kBlock) {  // one long row: blocks in parallel, combined in order
    int64_t nb = (R + kBlock - 1) / kBlock;
    std::vector<A> partial(static_cast<size_t>(nb));
    const T* p = in + offset_of(0);
    parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) partial[b] = Red::run(p + b * kBlock, std::min(kBlock, R - b * kBlock));
    });
    A acc = Red::init();
    for (A v : partial) acc = Red::combine(acc, v);
    store(0, acc);
    return;
  }
  // Columns: the innermost kept dim is contiguous and the reduced dim is not. Accumulate whole
  // rows of outputs at once (vectorised); each output still sums its inputs in order.
  if (rs != 1 && nk >= 1 && pl.kept_strides[nk - 1] == 1 && pl.kept_sizes[nk - 1] > 1) {
    int64_t inner = pl.kept_sizes[nk - 1];
    parallel_for(0, M, rows_grain(R), [&](int64_t m0, int64_t m1) {
      std::vector<A> acc;
      for (int64_t m = m0; m < m1;) {
        int64_t j0 = m % inner, len = std::min(inner - j0, m1 - m);
        const T* base = in + offset_of(m);
        acc.assign(size_t(len), Red::init());
        for (int64_t r = 0; r < R; ++r) {
          const T* row = base + r * rs;
          for (int64_t j = 0; j < len; ++j) acc[j] = Red::step(acc[j], A(load(row + j)));
        }
        for (int64_t j = 0; j < len; ++j) store(m + j, acc[j]);
        m += len;
      }
    });
    return;
  }
  parallel_for(0, M, rows_grain(R), [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) store(m, reduce_row(in + offset_of(m)));
  });
}

void reduce_kernel(const ReducePlan& pl, ReduceOp op) {
  DType in = pl.input->dtype(), out = pl.out.dtype();
  if (is_complex(in)) return complex_reduce(pl, op);
  dispatch_all(in, "reduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (op == ReduceOp::All || op == ReduceOp::Any) {
      KINDLE_INTERNAL_ASSERT(out == kBool);
      return op == ReduceOp::All ? reduce_typed<T, bool, ReduceOp::All>(pl) : reduce_typed<T, bool, ReduceOp::Any>(pl);
    }
    if constexpr (std::is_integral_v<T>) {
      if (out == kInt64) {
        switch (op) {
          case ReduceOp::Sum: return reduce_typed<T, int64_t, ReduceOp::Sum>(pl);
          case ReduceOp::Prod: return reduce_typed<T, int64_t, ReduceOp::Prod>(pl);
          default: break;
        }
      }
    }
    if (out == in) {
      switch (op) {
        case ReduceOp::Sum: return reduce_typed<T, T, ReduceOp::Sum>(pl);
        case ReduceOp::SumSq: return reduce_typed<T, T, ReduceOp::SumSq>(pl);
        case ReduceOp::Prod: return reduce_typed<T, T, ReduceOp::Prod>(pl);
        case ReduceOp::Max: return reduce_typed<T, T, ReduceOp::Max>(pl);
        case ReduceOp::Min: return reduce_typed<T, T, ReduceOp::Min>(pl);
        default: break;
      }
    }
    KINDLE_INTERNAL_ASSERT(false, "reduce: unsupported output dtype ", out, " for input ", in);
  });
}

void arg_reduce_kernel(const Tensor& in, const Tensor& values, const Tensor& indices, bool is_max) {
  int64_t R = in.size(-1), M = R ? in.numel() / R : 0;
  dispatch_all(in.dtype(), "max", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M_t = opmath_t<T>;
    const T* p = static_cast<const T*>(in.data_ptr());
    T* v = values.defined() ? static_cast<T*>(values.data_ptr()) : nullptr;
    int64_t* ix = static_cast<int64_t*>(indices.data_ptr());
    parallel_for(0, M, rows_grain(R), [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) {
        const T* row = p + m * R;
        M_t best = M_t(row[0]);
        int64_t bi = 0;
        for (int64_t r = 1; r < R; ++r) {
          M_t x = M_t(row[r]);
          if (best != best) break;  // NaN already wins
          if (x != x || (is_max ? x > best : x < best)) { best = x; bi = r; }
        }
        if (v) v[m] = T(best);
        ix[m] = bi;
      }
    });
  });
}

void softmax_kernel(const Tensor& in, const Tensor& out, bool log) {
  int64_t R = in.size(-1), M = R ? in.numel() / R : 0;
  dispatch_floating(in.dtype(), "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = opmath_t<T>;
    const T* p = static_cast<const T*>(in.data_ptr());
    T* o = static_cast<T*>(out.data_ptr());
    parallel_for(0, M, std::max<int64_t>(1, 4096 / std::max<int64_t>(R, 1)), [&](int64_t m0, int64_t m1) {
      std::vector<C> buf;
      for (int64_t m = m0; m < m1; ++m) {
        const T* x = p + m * R;
        T* y = o + m * R;
        C mx = -INFINITY;
        if constexpr (std::is_same_v<T, C>) {
#pragma omp simd reduction(max : mx)
          for (int64_t r = 0; r < R; ++r) mx = x[r] > mx ? x[r] : mx;
        } else {
          for (int64_t r = 0; r < R; ++r) mx = std::max(mx, C(x[r]));
        }
        if (std::isinf(mx)) mx = mx > 0 ? mx : C(0);
        C sum = 0;
        if constexpr (std::is_same_v<T, C>) {
          if (log) {
#pragma omp simd reduction(+ : sum)
            for (int64_t r = 0; r < R; ++r) sum += vm::exp(x[r] - mx);
            // (x - max) - log(sum), not x - (max + log(sum)): the latter loses log(sum) next to
            // a large max.
            C ls = std::log(sum);
#pragma omp simd
            for (int64_t r = 0; r < R; ++r) y[r] = (x[r] - mx) - ls;
          } else {
#pragma omp simd reduction(+ : sum)
            for (int64_t r = 0; r < R; ++r) { C e = vm::exp(x[r] - mx); y[r] = e; sum += e; }
            C inv = C(1) / sum;
#pragma omp simd
            for (int64_t r = 0; r < R; ++r) y[r] *= inv;
          }
        } else {
          buf.resize(size_t(R));
          for (int64_t r = 0; r < R; ++r) { buf[r] = vm::exp(C(x[r]) - mx); sum += buf[r]; }
          if (log) { C ls = std::log(sum); for (int64_t r = 0; r < R; ++r) y[r] = T((C(x[r]) - mx) - ls); }
          else for (int64_t r = 0; r < R; ++r) y[r] = T(buf[r] / sum);
        }
      }
    });
  });
}

void scan_kernel(const Tensor& in, const Tensor& out, bool prod) {
  int64_t R = in.size(-1), M = R ? in.numel() / R : 0;
  dispatch_all(in.dtype(), "cumsum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = typename AccType<T>::type;
    const T* p = static_cast<const T*>(in.data_ptr());
    dispatch_all(out.dtype(), "cumsum", [&](auto otag) {
      using O = typename decltype(otag)::type;
      O* o = static_cast<O*>(out.data_ptr());
      parallel_for(0, M, rows_grain(R), [&](int64_t m0, int64_t m1) {
        for (int64_t m = m0; m < m1; ++m) {
          A acc = prod ? A(1) : A(0);
          for (int64_t r = 0; r < R; ++r) {
            A x = A(load(p + m * R + r));
            acc = prod ? wrap_mul(acc, x) : wrap_add(acc, x);
            o[m * R + r] = O(opmath_t<O>(acc));
          }
        }
      });
    });
  });
}

void sort_kernel(const Tensor& in, const Tensor& values, const Tensor& indices, bool descending) {
  int64_t R = in.size(-1), M = R ? in.numel() / R : 0;
  dispatch_all(in.dtype(), "sort", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = opmath_t<T>;
    const T* p = static_cast<const T*>(in.data_ptr());
    T* v = static_cast<T*>(values.data_ptr());
    int64_t* ix = static_cast<int64_t*>(indices.data_ptr());
    parallel_for(0, M, 1, [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) {
        const T* row = p + m * R;
        int64_t* irow = ix + m * R;
        std::iota(irow, irow + R, int64_t(0));
        // NaN sorts above every number (last ascending, first descending), as in PyTorch.
        if (descending)
          std::stable_sort(irow, irow + R, [&](int64_t a, int64_t b) {
            C x = C(row[a]), y = C(row[b]);
            return (x != x && y == y) || x > y;
          });
        else
          std::stable_sort(irow, irow + R, [&](int64_t a, int64_t b) {
            C x = C(row[a]), y = C(row[b]);
            return (y != y && x == x) || x < y;
          });
        for (int64_t r = 0; r < R; ++r) v[m * R + r] = row[irow[r]];
      }
    });
  });
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(reduce_stub, DeviceType::CPU, &cpu::reduce_kernel);
KINDLE_REGISTER_KERNEL(arg_reduce_stub, DeviceType::CPU, &cpu::arg_reduce_kernel);
KINDLE_REGISTER_KERNEL(softmax_stub, DeviceType::CPU, &cpu::softmax_kernel);
KINDLE_REGISTER_KERNEL(scan_stub, DeviceType::CPU, &cpu::scan_kernel);
KINDLE_REGISTER_KERNEL(sort_stub, DeviceType::CPU, &cpu::sort_kernel);
}  // namespace kindle
