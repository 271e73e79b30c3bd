// The three DFT primitives torch.fft is built on (as ATen's _fft_c2c, _fft_r2c, _fft_c2r): the
// transformed dims are moved last and made contiguous, the device kernel transforms them as one
// batch, and the result is permuted back. kindle.fft (python/kindle/fft.py) adds n/s, norm names
// and the Hermitian variants on top.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "native_ops.h"
#include "ops/fft_kernels.h"

namespace kindle {
namespace {

// normalization: 0 none, 1 by 1/sqrt(n), 2 by 1/n (torch's fft_norm_mode)
double norm_scale(int64_t normalization, IntArrayRef signal, const char* op) {
  KINDLE_CHECK(normalization >= 0 && normalization <= 2, op, ": normalization must be 0, 1 or 2, got ", normalization);
  double n = 1;
  for (int64_t s : signal) n *= double(s);
  if (normalization == 0 || n == 0) return 1.0;
  return normalization == 1 ? 1.0 / std::sqrt(n) : 1.0 / n;
}

struct FftLayout {
  DimVector dims, perm, inverse;  // dims wrapped; perm: batch dims then dims
};

FftLayout fft_layout(const Tensor& self, IntArrayRef dim, const char* op) {
  FftLayout l;
  std::vector<bool> seen(size_t(self.dim()), false);
  for (int64_t d : dim) {
    int64_t w = wrap_dim(d, self.dim(), op);
    KINDLE_CHECK(!seen[size_t(w)], op, ": dims must be unique, got ", dim);
    seen[size_t(w)] = true;
    l.dims.push_back(w);
  }
  for (int64_t i = 0; i < self.dim(); ++i) if (!seen[size_t(i)]) l.perm.push_back(i);
  for (int64_t d : l.dims) l.perm.push_back(d);
  l.inverse.resize(l.perm.size());
  for (size_t i = 0; i < l.perm.size(); ++i) l.inverse[size_t(l.perm[i])] = int64_t(i);
  return l;
}

DimVector signal_of(const Tensor& t, size_t n) {  // the last n sizes
  DimVector s;
  for (int64_t i = t.dim() - int64_t(n); i < t.dim(); ++i) s.push_back(t.size(i));
  return s;
}

}  // namespace

Tensor native__fft_c2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward) {
  KINDLE_CHECK(self.is_complex(), "_fft_c2c: expects a complex input tensor, but got ", self.dtype());
  if (dim.empty()) return self.clone();
  FftLayout l = fft_layout(self, dim, "_fft_c2c");
  Tensor x = contiguous(permute(self, l.perm));
  Tensor out = empty_tensor(x.sizes(), x.dtype(), x.device());
  DimVector signal = signal_of(x, l.dims.size());
  fft_stub[x.device()](FftKind::C2C, x, out, signal, forward, norm_scale(normalization, signal, "_fft_c2c"));
  return permute(out, l.inverse);
}

Tensor native__fft_r2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided) {
  KINDLE_CHECK(self.dtype() == kFloat32 || self.dtype() == kFloat64, "_fft_r2c: expects a float or double input "
               "tensor, but got ", self.dtype());
  KINDLE_CHECK(!dim.empty(), "_fft_r2c: expects at least one dim to transform");
  FftLayout l = fft_layout(self, dim, "_fft_r2c");
  Tensor x = contiguous(permute(self, l.perm));
  DimVector signal = signal_of(x, l.dims.size());
  DimVector osz(x.sizes());
  osz.back() = osz.back() / 2 + 1;
  Tensor out = empty_tensor(osz, to_complex_type(x.dtype()), x.device());
  fft_stub[x.device()](FftKind::R2C, x, out, signal, true, norm_scale(normalization, signal, "_fft_r2c"));
  if (!onesided && signal.back() > 1) {
    // the other half by Hermitian symmetry: X[k] = conj(X[(n - k) mod n]) along every transformed dim
    int64_t n = signal.back(), half = osz.back();
    Tensor full = empty_tensor(x.sizes(), out.dtype(), x.device());
    full.narrow(-1, 0, half).copy_(out);
    if (n - half > 0) {
      Tensor rest = out.narrow(-1, 1, n - half).flip({-1});  // X[n-k] for k = half .. n-1
      for (size_t k = 0; k + 1 < l.dims.size(); ++k) {  // (n - k) mod n in the other dims: roll the flip
        int64_t d = out.dim() - int64_t(l.dims.size()) + int64_t(k);
        rest = rest.flip({d}).roll({1}, {d});
      }
      full.narrow(-1, half, n - half).copy_(rest.conj());
    }
    out = full;
  }
  return permute(out, l.inverse);
}

Tensor native__fft_c2r(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size) {
  KINDLE_CHECK(self.is_complex(), "_fft_c2r: expects a complex input tensor, but got ", self.dtype());
  KINDLE_CHECK(!dim.empty(), "_fft_c2r: expects at least one dim to transform");
  KINDLE_CHECK(last_dim_size >= 1, "_fft_c2r: invalid number of data points (", last_dim_size, ") specified");
  if (dim.size() > 1) {
    // The other dims first (an inverse c2c), then a 1-d c2r on the last, as torch computes it:
    // for input that is not Hermitian a multi-dimensional c2r kernel would give another answer.
    DimVector lead;
    for (size_t i = 0; i + 1 < dim.size(); ++i) lead.push_back(dim[i]);
    Tensor y = native__fft_c2r(native__fft_c2c(self, lead, 0, false), IntArrayRef{dim.back()}, 0, last_dim_size);
    double n = double(last_dim_size);
    for (int64_t d : lead) n *= double(self.size(wrap_dim(d, self.dim(), "_fft_c2r")));
    double sc = normalization == 0 || n == 0 ? 1.0 : normalization == 1 ? 1.0 / std::sqrt(n) : 1.0 / n;
    return sc == 1.0 ? y : y.mul_(scalar_tensor_of(sc, y.dtype()));
  }
  FftLayout l = fft_layout(self, dim, "_fft_c2r");
  // a copy the kernel may overwrite, and the onesided length the real size needs
  Tensor x = permute(self, l.perm);
  int64_t need = last_dim_size / 2 + 1;
  KINDLE_CHECK(x.size(-1) >= need, "_fft_c2r: expected at least ", need, " values in the last transformed dim for ",
               last_dim_size, " output points, got ", x.size(-1));
  x = x.narrow(-1, 0, need).clone();
  if (!x.is_contiguous()) x = contiguous(x);
  DimVector signal = signal_of(x, l.dims.size());
  signal.back() = last_dim_size;
  DimVector osz(x.sizes());
  osz.back() = last_dim_size;
  Tensor out = empty_tensor(osz, to_real_value_type(x.dtype()), x.device());
  fft_stub[x.device()](FftKind::C2R, x, out, signal, false, norm_scale(normalization, signal, "_fft_c2r"));
  return permute(out, l.inverse);
}

}  // namespace kindle
