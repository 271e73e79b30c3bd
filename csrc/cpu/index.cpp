// Gather-style reads and scatter-style writes through int64 index tensors.
#include <atomic>

#include "cpu/loops.h"
#include "ops/kernels.h"

namespace kindle::cpu {
namespace {

struct BadIndex {
  std::atomic<bool> bad{false};
  int64_t value = 0, dim_size = 0;
  void report(int64_t v, int64_t n) {
    bool expected = false;
    if (bad.compare_exchange_strong(expected, true)) { value = v; dim_size = n; }
  }
  void check(bool index_error) const {
    if (!bad.load()) return;
    std::string msg = detail::str_cat("index ", value, " is out of bounds for dimension with size ", dim_size);
    if (index_error) throw IndexError(msg);
    throw Error(msg);
  }
};

template <bool Put>
inline bool offset_of(char** p, const int64_t* s, int64_t i, const IndexDims& d, int first_idx, int64_t& off, BadIndex& bad) {
  off = 0;
  for (int k = 0; k < d.n; ++k) {
    int64_t v = *reinterpret_cast<const int64_t*>(p[first_idx + k] + i * s[first_idx + k]);
    int64_t n = d.sizes[k];
    // Indexing wraps negative indices; gather and scatter (index_error false) refuse them.
    if (v < (d.index_error ? -n : 0) || v >= n) { bad.report(v, n); return false; }
    if (v < 0) v += n;
    off += v * d.strides[k];
  }
  return true;
}

void index_kernel(TensorIter& it, const IndexDims& d) {
  BadIndex bad;
  dispatch_all_and_complex(it.output().dtype(), "index", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_run(it, [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t off;
        if (!offset_of<false>(p, s, i, d, 2, off, bad)) continue;
        *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const T*>(p[1] + i * s[1] + off);
      }
    });
  });
  bad.check(d.index_error);
}

void index_put_kernel(TensorIter& it, const IndexDims& d, PutReduce reduce) {
  BadIndex bad;
  KINDLE_CHECK_NOT_IMPLEMENTED(!is_complex(it.output().dtype()) || reduce == PutReduce::Assign ||
                               reduce == PutReduce::Add || reduce == PutReduce::Multiply,
                               "index_put_: amax and amin reductions are not implemented for complex tensors");
  dispatch_all_and_complex(it.output().dtype(), "index_put_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = opmath_t<T>;
    for_each_run(it, [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t off;
        if (!offset_of<true>(p, s, i, d, 2, off, bad)) continue;
        T* dst = reinterpret_cast<T*>(p[0] + i * s[0] + off);
        T v = *reinterpret_cast<const T*>(p[1] + i * s[1]);
        if constexpr (is_complex_v<T>) {
          if (reduce == PutReduce::Assign) *dst = v;
          else if (reduce == PutReduce::Add) *dst += v;
          else *dst *= v;
        } else if constexpr (std::is_same_v<T, bool>) {
          switch (reduce) {
            case PutReduce::Assign: *dst = v; break;
            case PutReduce::Add: case PutReduce::Max: *dst = *dst || v; break;
            case PutReduce::Multiply: case PutReduce::Min: *dst = *dst && v; break;
          }
        } else {
          C a = C(*dst), b = C(v);
          switch (reduce) {  // NaN wins max and min, as in the reductions
            case PutReduce::Assign: *dst = v; break;
            case PutReduce::Add: *dst = T(a + b); break;
            case PutReduce::Multiply: *dst = T(a * b); break;
            case PutReduce::Max: if (b != b || b > a) *dst = v; break;
            case PutReduce::Min: if (b != b || b < a) *dst = v; break;
          }
        }
      }
    }, /*serial=*/true);  // duplicate indices: the last write (or every combination) wins, in order
  });
  bad.check(d.index_error);
}

void bincount_kernel(const Tensor& x, const Tensor* w, const Tensor& out) {
  const int64_t* p = x.data_ptr<int64_t>();
  const int64_t n = x.numel();
  if (w) {
    const double* wp = w->data_ptr<double>();
    double* o = out.data_ptr<double>();
    for (int64_t i = 0; i < n; ++i) o[p[i]] += wp[i];
  } else {
    int64_t* o = out.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) o[p[i]] += 1;
  }
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(bincount_stub, DeviceType::CPU, &cpu::bincount_kernel);
KINDLE_REGISTER_KERNEL(index_stub, DeviceType::CPU, &cpu::index_kernel);
KINDLE_REGISTER_KERNEL(index_put_stub, DeviceType::CPU, &cpu::index_put_kernel);
}  // namespace kindle
