// kindle.linalg's factorisations over LAPACK (csrc/cpu/lapack.cpp): Cholesky, LU (solve, det,
// slogdet), symmetric eigendecomposition, SVD, QR and triangular solves. Inputs are copied into
// column-major batches (LAPACK's layout, and the strides torch's results have); the Python
// layer (python/kindle/linalg.py) broadcasts batch dims before calling these.
#include <cmath>
#include <complex>
#include <optional>
#include <type_traits>
#include <string>

#include "kindle/operators.h"
#include "kindle/parallel.h"
#include "native_ops.h"
#include "ops/kernels.h"
#include "ops/value_checks.h"

namespace kindle {
namespace {

// The operands of a solve: on one device (the factorisation runs where A is).
void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  KINDLE_CHECK(a.device() == b.device(), op, ": expected all tensors to be on the same device, but found at least two "
               "devices, ", a.device(), " and ", b.device(), "!");
}

void check_matrix(const Tensor& a, const char* op, bool square, bool complex_ok = false) {
  KINDLE_CHECK(a.dim() >= 2, op, ": The input tensor A must have at least 2 dimensions.");
  if (square)
    KINDLE_CHECK(a.size(-1) == a.size(-2), op, ": A must be batches of square matrices, but they are ", a.size(-2),
                 " by ", a.size(-1), " matrices");
  if (a.is_complex()) {
    KINDLE_CHECK_NOT_IMPLEMENTED(complex_ok, op, ": complex input (", scalar_type_name(a.dtype()),
                                 ") is not implemented in Kindle yet");
    return;
  }
  // RuntimeError, as torch raises for most (a few of its ops raise NotImplementedError, a subclass)
  KINDLE_CHECK(a.is_floating_point(), op, ": Expected a floating point or complex tensor as input. Got ",
               scalar_type_name(a.dtype()));
  KINDLE_CHECK(a.dtype() == kFloat32 || a.dtype() == kFloat64, op, ": Low precision dtypes not supported. Got ",
               scalar_type_name(a.dtype()));
}

int64_t batch_of(const Tensor& a) {
  int64_t b = 1;
  for (int64_t d = 0; d < a.dim() - 2; ++d) b *= a.size(d);
  return b;
}

// A column-major copy of a's matrices (rows x cols each), batch dims first and contiguous.
Tensor colmajor(const Tensor& a, int64_t rows, int64_t cols) {
  DimVector sz(IntArrayRef(a.sizes().data(), size_t(a.dim() - 2)));
  sz.push_back(rows), sz.push_back(cols);
  DimVector strides(sz.size());
  int64_t s = rows * cols;
  for (int64_t d = int64_t(sz.size()) - 3; d >= 0; --d) strides[size_t(d)] = s, s *= sz[size_t(d)];
  strides[sz.size() - 2] = 1, strides[sz.size() - 1] = std::max<int64_t>(rows, 1);
  Tensor out = empty_strided(sz, strides, a.dtype(), a.device());
  if (a.size(-2) == rows && a.size(-1) == cols) out.copy_(a);
  return out;
}

DimVector batch_shape(const Tensor& a, std::initializer_list<int64_t> tail = {}) {
  DimVector sz(IntArrayRef(a.sizes().data(), size_t(a.dim() - 2)));
  for (int64_t t : tail) sz.push_back(t);
  return sz;
}

// "linalg.cholesky: (Batch element 3): The factorization could not be completed because ..."
std::string batch_prefix(const Tensor& info, int64_t b) {
  return info.dim() > 0 ? detail::str_cat("(Batch element ", b, "): ") : std::string();
}

int64_t first_failure(const Tensor& info) {
  if (info.is_meta()) return -1;  // (no status: a meta tensor has no values to fail on)
  const int32_t* p = static_cast<const int32_t*>(info.data_ptr());
  for (int64_t b = 0; b < info.numel(); ++b)
    if (p[b] != 0) return b;
  return -1;
}

// LAPACK's buffers: a meta tensor passes no address (its kernel, lapack_stub's meta one, does nothing).
void* lapack_ptr(const Tensor& t) { return t.is_meta() ? nullptr : t.data_ptr(); }
int32_t* lapack_ints(const Tensor& t) { return static_cast<int32_t*>(lapack_ptr(t)); }

LapackArgs args_for(const Tensor& a, int64_t m, int64_t n) {
  LapackArgs g;
  g.dtype = a.dtype();
  g.batch = batch_of(a);
  g.m = m, g.n = n;
  g.a = lapack_ptr(a);
  g.stride_a = m * n;
  return g;
}

// LU factors of a batch of m x n matrices (column-major) with pivots and info; empty matrices factor trivially.
// of_transpose: factor A^T instead (a plain row-major copy, cheaper than transposing), for what
// A^T shares with A: its determinant.
std::tuple<Tensor, Tensor, Tensor> lu_factor(const Tensor& a, bool of_transpose = false) {
  int64_t m = a.size(-2), n = a.size(-1);
  KINDLE_INTERNAL_ASSERT(!of_transpose || m == n, "lu_factor: the transpose's factors only for square matrices");
  Tensor lu = of_transpose ? contiguous(a).clone() : colmajor(a, m, n);
  Tensor piv = empty(batch_shape(a, {std::min(m, n)}), kInt32, a.device());
  Tensor info = zeros(batch_shape(a), kInt32, a.device());
  if (lu.numel()) {
    LapackArgs g = args_for(lu, m, n);
    g.ipiv = lapack_ints(piv);
    g.info = lapack_ints(info);
    lapack_stub[a.device()](Lapack::Getrf, g);
  }
  return {lu, piv, info};
}

void check_invertible(const Tensor& info, const char* op) {
  int64_t b = first_failure(info);
  if (b < 0) return;
  int32_t i = static_cast<const int32_t*>(info.data_ptr())[b];
  KINDLE_CHECK_AS(LinAlgError, false, op, ": ", batch_prefix(info, b),
                  "The diagonal element ", i, " is zero, the solve could not be completed because the input matrix is "
                  "singular.");
}

}  // namespace

std::tuple<Tensor, Tensor> native_linalg_cholesky_ex(const Tensor& self, bool upper, bool check_errors) {
  check_matrix(self, "linalg.cholesky", true, /*complex_ok=*/true);
  int64_t n = self.size(-1);
  // One small matrix: the copy, the factorisation (already one MKL thread, lapack.cpp) and the
  // triangle on this thread (at 2 threads a 256x256 took 2x its 1-thread time, all in wake-ups).
  std::optional<ThreadLimitGuard> one_thread;
  if (batch_of(self) == 1 && n <= 384) one_thread.emplace(1);
  Tensor l = colmajor(self, n, n);
  Tensor info = zeros(batch_shape(self), kInt32, self.device());
  if (l.numel()) {
    LapackArgs g = args_for(l, n, n);
    g.upper = upper;
    g.info = lapack_ints(info);
    lapack_stub[self.device()](Lapack::Potrf, g);
  }
  if (check_errors) {
    int64_t b = first_failure(info);
    if (b >= 0)
      KINDLE_CHECK_AS(LinAlgError, false, "linalg.cholesky: ", batch_prefix(info, b),
                      "The factorization could not be completed because the input is not positive-definite (the "
                      "leading minor of order ", static_cast<const int32_t*>(info.data_ptr())[b],
                      " is not positive-definite).");
  }
  // LAPACK leaves the other triangle as it was: torch's result has zeros there
  return {upper ? l.triu_() : l.tril_(), info};
}

std::tuple<Tensor, Tensor, Tensor> linalg_lu_factor_ex(const Tensor& A, bool pivot, bool check_errors) {
  check_matrix(A, "linalg.lu_factor", false, /*complex_ok=*/true);
  KINDLE_CHECK_NOT_IMPLEMENTED(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  auto [lu, piv, info] = lu_factor(A);
  if (check_errors) check_invertible(info, "linalg.lu_factor");
  return {lu, piv, info};
}

Tensor native__linalg_solve(const Tensor& A, const Tensor& B) {
  check_matrix(A, "linalg.solve", true, /*complex_ok=*/true);
  KINDLE_CHECK(B.dim() == A.dim() && B.size(-2) == A.size(-1), "linalg.solve: Incompatible shapes of A and B for the "
               "equation AX = B (", A.size(-2), "x", A.size(-1), " and ", B.size(-2), "x", B.size(-1), ")");
  check_same_device(A, B, "linalg.solve");
  KINDLE_CHECK(A.dtype() == B.dtype(), "linalg.solve: Expected A and B to have the same dtype, but found A of type ",
               A.dtype(), " and B of type ", B.dtype(), " instead.");
  for (int64_t d = 0; d < A.dim() - 2; ++d)
    KINDLE_CHECK(A.size(d) == B.size(d), "linalg.solve: the batch dimensions of A and B must match");
  auto [lu, piv, info] = lu_factor(A);
  check_invertible(info, "linalg.solve");
  int64_t n = A.size(-1), k = B.size(-1);
  Tensor x = colmajor(B, n, k);
  if (x.numel()) {
    LapackArgs g = args_for(lu, n, n);
    g.k = k;
    g.b = lapack_ptr(x);
    g.stride_b = n * k;
    g.ipiv = lapack_ints(piv);
    g.info = lapack_ints(info);
    lapack_stub[A.device()](Lapack::Getrs, g);
  }
  return x;
}

// det(A) = prod(diag(U)) * (-1)^(row swaps), accumulated in double per matrix: sign (a unit
// complex number for complex A, 0 when singular) and log|det| (real).
std::tuple<Tensor, Tensor> native_linalg_slogdet(const Tensor& A) {
  check_matrix(A, "linalg.slogdet", true, /*complex_ok=*/true);
  auto [lu, piv, info] = lu_factor(A, /*of_transpose=*/true);
  int64_t n = A.size(-1), batch = batch_of(A);
  Tensor sign = empty(batch_shape(A), A.dtype(), A.device());
  Tensor logabs = empty(batch_shape(A), to_real_value_type(A.dtype()), A.device());
  auto run = [&](auto* m, auto* sg, auto* la) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(m)>>;
    using R = std::remove_pointer_t<decltype(la)>;
    const int32_t* p = static_cast<const int32_t*>(piv.data_ptr());
    for (int64_t b = 0; b < batch; ++b) {
      std::complex<double> s = 1;
      double l = 0;
      for (int64_t i = 0; i < n; ++i) {
        std::complex<double> d(m[b * n * n + i * (n + 1)]);  // column-major: the diagonal is every n+1
        if (p[b * n + i] != i + 1) s = -s;
        double mag = std::abs(d);
        s = mag == 0 ? 0 : s * (d / mag);
        l += std::log(mag);
      }
      if constexpr (is_complex_v<T>) sg[b] = T(s);
      else sg[b] = T(s.real());
      la[b] = R(l);
    }
  };
  if (A.is_meta()) return {sign, logabs};  // (the factors' values are the result)
  switch (A.dtype()) {
    case kFloat32: run(static_cast<const float*>(lu.data_ptr()), static_cast<float*>(sign.data_ptr()),
                       static_cast<float*>(logabs.data_ptr())); break;
    case kFloat64: run(static_cast<const double*>(lu.data_ptr()), static_cast<double*>(sign.data_ptr()),
                       static_cast<double*>(logabs.data_ptr())); break;
    case kComplex64: run(static_cast<const c64*>(lu.data_ptr()), static_cast<c64*>(sign.data_ptr()),
                         static_cast<float*>(logabs.data_ptr())); break;
    case kComplex128: run(static_cast<const c128*>(lu.data_ptr()), static_cast<c128*>(sign.data_ptr()),
                          static_cast<double*>(logabs.data_ptr())); break;
    default: KINDLE_INTERNAL_ASSERT(false, "linalg.slogdet: unexpected dtype ", A.dtype());
  }
  return {sign, logabs};
}

Tensor native_linalg_det(const Tensor& A) {
  check_matrix(A, "linalg.det", true, /*complex_ok=*/true);
  auto [sign, logabs] = native_linalg_slogdet(A);
  return sign * logabs.exp();
}

namespace {
// syevd on a column-major copy: the eigenvalues, and the eigenvectors (in that copy) when asked.
std::tuple<Tensor, Tensor> eigh_impl(const Tensor& self, std::string_view UPLO, bool vectors, const char* op) {
  check_matrix(self, op, true, /*complex_ok=*/true);
  KINDLE_CHECK(UPLO == "L" || UPLO == "U" || UPLO == "l" || UPLO == "u", op,
               ": Expected UPLO argument to be 'L' or 'U', but got ", UPLO);
  int64_t n = self.size(-1);
  Tensor v = colmajor(self, n, n);
  Tensor w = empty(batch_shape(self, {n}), to_real_value_type(self.dtype()), self.device());  // real, also for Hermitian input
  Tensor info = zeros(batch_shape(self), kInt32, self.device());
  if (v.numel()) {
    LapackArgs g = args_for(v, n, n);
    g.upper = UPLO == "U" || UPLO == "u";
    g.vectors = vectors;
    g.b = lapack_ptr(w);
    g.stride_b = n;
    g.info = lapack_ints(info);
    lapack_stub[self.device()](Lapack::Syevd, g);
  }
  int64_t b = first_failure(info);
  KINDLE_CHECK_AS(LinAlgError, b < 0, op, ": ", batch_prefix(info, b),
                  "The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
                  "repeated eigenvalues (error code: ", b < 0 ? 0 : static_cast<const int32_t*>(info.data_ptr())[b], ").");
  return {w, v};
}
}  // namespace

std::tuple<Tensor, Tensor> native_linalg_eigh(const Tensor& self, std::string_view UPLO) {
  return eigh_impl(self, UPLO, true, "linalg.eigh");
}

Tensor _linalg_eigvalsh(const Tensor& self, std::string_view UPLO) {
  return std::get<0>(eigh_impl(self, UPLO, false, "linalg.eigvalsh"));
}

namespace {
// geev on a column-major copy: the eigenvalues (complex), and the right eigenvectors. For a real
// matrix LAPACK returns them real, a conjugate pair (wi > 0, then < 0) stored as the real and
// imaginary parts in columns j and j + 1.
std::tuple<Tensor, Tensor> eig_impl(const Tensor& self, bool vectors, const char* op) {
  check_matrix(self, op, true, /*complex_ok=*/true);
  KINDLE_CHECK(detail::all_values(isfinite(self)), op,
               ": input tensor should not contain infs or NaNs.");
  int64_t n = self.size(-1);
  const bool cplx = self.is_complex();
  Tensor a = colmajor(self, n, n);
  Tensor wr = empty(batch_shape(self, {n}), self.dtype(), self.device());
  Tensor wi = cplx ? Tensor() : empty(batch_shape(self, {n}), self.dtype(), self.device());
  Tensor vr = colmajor(empty(batch_shape(self, {vectors ? n : 0, vectors ? n : 0}), self.dtype(), self.device()), vectors ? n : 0,
                       vectors ? n : 0);
  Tensor info = zeros(batch_shape(self), kInt32, self.device());
  if (a.numel()) {
    LapackArgs g = args_for(a, n, n);
    g.vectors = vectors;
    g.b = lapack_ptr(wr), g.stride_b = n;
    if (!cplx) g.c = lapack_ptr(wi), g.stride_c = n;
    g.d = vectors ? lapack_ptr(vr) : nullptr, g.stride_d = n * n;
    g.info = lapack_ints(info);
    lapack_stub[self.device()](Lapack::Geev, g);
  }
  int64_t b = first_failure(info);
  KINDLE_CHECK_AS(LinAlgError, b < 0, op, ": ", batch_prefix(info, b),
                  "The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
                  "repeated eigenvalues (error code: ", b < 0 ? 0 : static_cast<const int32_t*>(info.data_ptr())[b], ").");
  if (cplx) return {wr, vectors ? vr : Tensor()};
  Tensor L = complex(wr, wi);
  if (!vectors) return {L, Tensor()};
  Tensor pos = (wi > 0).unsqueeze(-2), neg = (wi < 0).unsqueeze(-2);  // the first and the second of a pair
  Tensor zero = zeros({}, self.dtype());
  Tensor re = where(neg, vr.roll({1}, {-1}), vr);
  Tensor im = where(pos, vr.roll({-1}, {-1}), where(neg, -vr, zero));
  return {L, complex(contiguous(re), contiguous(im))};
}
}  // namespace

std::tuple<Tensor, Tensor> native_linalg_eig(const Tensor& self) { return eig_impl(self, true, "linalg.eig"); }

Tensor _linalg_eigvals(const Tensor& self) { return std::get<0>(eig_impl(self, false, "linalg.eigvals")); }

// Bunch-Kaufman LDL^T of symmetric matrices (sytrf on the lower triangle), as torch returns it:
// the factors in the lower triangle (D's 2x2 blocks included), zeros above, LAPACK's pivots.
std::tuple<Tensor, Tensor, Tensor> native_linalg_ldl_factor_ex(const Tensor& self, bool hermitian, bool check_errors) {
  check_matrix(self, "linalg.ldl_factor_ex", true);
  (void)hermitian;  // the same factorisation for real matrices
  int64_t n = self.size(-1);
  Tensor ld = colmajor(self, n, n);
  Tensor piv = empty(batch_shape(self, {n}), kInt32, self.device());
  Tensor info = zeros(batch_shape(self), kInt32, self.device());
  if (ld.numel()) {
    LapackArgs g = args_for(ld, n, n);
    g.ipiv = lapack_ints(piv);
    g.info = lapack_ints(info);
    lapack_stub[self.device()](Lapack::Sytrf, g);
  }
  if (check_errors) {
    int64_t b = first_failure(info);
    int32_t i = b < 0 ? 0 : static_cast<const int32_t*>(info.data_ptr())[b];
    KINDLE_CHECK_AS(LinAlgError, b < 0, "linalg.ldl_factor: ", batch_prefix(info, b), "The factorization found D[", i,
                    ", ", i, "] exactly zero: the input is singular.");
  }
  return {ld.tril_(), piv, info};
}

Tensor native_linalg_ldl_solve(const Tensor& LD, const Tensor& pivots, const Tensor& B, bool hermitian) {
  check_matrix(LD, "linalg.ldl_solve", true);
  (void)hermitian;
  int64_t n = LD.size(-1);
  KINDLE_CHECK(B.dim() == LD.dim() && B.size(-2) == n, "linalg.ldl_solve: Incompatible shapes of LD and B (",
               LD.sizes(), " and ", B.sizes(), ")");
  check_same_device(LD, B, "linalg.ldl_solve");
  check_same_device(LD, pivots, "linalg.ldl_solve");
  KINDLE_CHECK(B.dtype() == LD.dtype(), "linalg.ldl_solve: Expected LD and B to have the same dtype, but got ",
               LD.dtype(), " and ", B.dtype());
  KINDLE_CHECK(pivots.dtype() == kInt32, "linalg.ldl_solve: Expected pivots to be integers. Got ", pivots.dtype());
  KINDLE_CHECK(pivots.dim() == LD.dim() - 1 && pivots.size(-1) == n, "linalg.ldl_solve: Expected pivots of shape ",
               IntArrayRef(batch_shape(LD, {n})), ", got ", pivots.sizes());
  for (int64_t d = 0; d < LD.dim() - 2; ++d)
    KINDLE_CHECK(LD.size(d) == B.size(d) && LD.size(d) == pivots.size(d),
                 "linalg.ldl_solve: the batch dimensions of LD, pivots and B must match");
  // sytrs trusts the pivots to index the matrix: out-of-range ones would make LAPACK read and
  // write outside it
  if (pivots.numel() && !pivots.is_meta()) {
    Tensor ap = pivots.abs();
    KINDLE_CHECK(bool((pivots != 0).all().item().to_bool()) && ap.max().item().to_int() <= n,
                 "linalg.ldl_solve: pivots must be LAPACK's (1-based, between -", n, " and ", n,
                 ", nonzero), as ldl_factor returns them");
  }
  int64_t k = B.size(-1);
  Tensor a = colmajor(LD, n, n);
  Tensor p = contiguous(pivots);
  Tensor info = zeros(batch_shape(LD), kInt32, LD.device());
  Tensor x = colmajor(B, n, k);
  if (x.numel() && a.numel()) {
    LapackArgs g = args_for(a, n, n);
    g.k = k;
    g.b = lapack_ptr(x);
    g.stride_b = n * k;
    g.ipiv = lapack_ints(p);
    g.info = lapack_ints(info);
    lapack_stub[LD.device()](Lapack::Sytrs, g);
  }
  return x;
}

std::tuple<Tensor, Tensor, Tensor> native_linalg_svd(const Tensor& A, bool full_matrices) {
  check_matrix(A, "linalg.svd", false, /*complex_ok=*/true);
  int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  int64_t ucols = full_matrices ? m : k, vrows = full_matrices ? n : k;
  Tensor a = colmajor(A, m, n);
  Tensor s = empty(batch_shape(A, {k}), to_real_value_type(A.dtype()), A.device());
  Tensor u = colmajor(empty(batch_shape(A, {m, ucols}), A.dtype(), A.device()), m, ucols);
  Tensor vh = colmajor(empty(batch_shape(A, {vrows, n}), A.dtype(), A.device()), vrows, n);
  Tensor info = zeros(batch_shape(A), kInt32, A.device());
  if (a.numel()) {
    LapackArgs g = args_for(a, m, n);
    g.full = full_matrices;
    g.b = lapack_ptr(s), g.stride_b = k;
    g.c = lapack_ptr(u), g.stride_c = m * ucols;
    g.d = lapack_ptr(vh), g.stride_d = vrows * n;
    g.info = lapack_ints(info);
    lapack_stub[A.device()](Lapack::Gesdd, g);
  } else {  // an empty matrix: U and V^T are identities where they have elements
    if (u.numel()) u.copy_(eye(m, ucols, A.dtype(), A.device()).expand(u.sizes()));
    if (vh.numel()) vh.copy_(eye(vrows, n, A.dtype(), A.device()).expand(vh.sizes()));
  }
  int64_t b = first_failure(info);
  KINDLE_CHECK_AS(LinAlgError, b < 0, "linalg.svd: ", batch_prefix(info, b),
                  "The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
                  "repeated singular values (error code: ", b < 0 ? 0 : static_cast<const int32_t*>(info.data_ptr())[b],
                  ").");
  return {u, s, vh};
}

Tensor _linalg_svdvals(const Tensor& A) {
  check_matrix(A, "linalg.svdvals", false, /*complex_ok=*/true);
  int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  Tensor a = colmajor(A, m, n);
  Tensor s = empty(batch_shape(A, {k}), to_real_value_type(A.dtype()), A.device());
  Tensor info = zeros(batch_shape(A), kInt32, A.device());
  if (a.numel()) {
    LapackArgs g = args_for(a, m, n);
    g.vectors = false;
    g.b = lapack_ptr(s), g.stride_b = k;
    g.info = lapack_ints(info);
    lapack_stub[A.device()](Lapack::Gesdd, g);
  }
  KINDLE_CHECK_AS(LinAlgError, first_failure(info) < 0, "linalg.svdvals: The algorithm failed to converge.");
  return s;
}

std::tuple<Tensor, Tensor> native_linalg_qr(const Tensor& A, std::string_view mode) {
  check_matrix(A, "linalg.qr", false, /*complex_ok=*/true);
  KINDLE_CHECK(mode == "reduced" || mode == "complete" || mode == "r", "qr received unrecognized mode '", mode,
               "' but expected one of 'reduced' (default), 'r', or 'complete'");
  int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  bool complete = mode == "complete" && m > n;
  int64_t qcols = complete ? m : k;
  // the factored matrix has room for Q's columns when they outnumber A's
  Tensor a = colmajor(A, m, std::max(n, qcols));
  if (qcols > n) a.narrow(-1, 0, n).copy_(A);
  Tensor tau = empty(batch_shape(A, {k}), A.dtype(), A.device());
  Tensor info = zeros(batch_shape(A), kInt32, A.device());
  LapackArgs g = args_for(a, m, n);
  g.stride_a = m * std::max(n, qcols);
  g.b = lapack_ptr(tau), g.stride_b = k;
  g.info = lapack_ints(info);
  if (a.numel() && k) lapack_stub[A.device()](Lapack::Geqrf, g);
  Tensor r = a.narrow(-1, 0, n).narrow(-2, 0, mode == "complete" ? m : k).triu();
  if (mode == "r") return {empty({0}, A.dtype(), A.device()), r};
  Tensor q = a.narrow(-1, 0, qcols);
  if (k == 0) {
    q = colmajor(eye(m, qcols, A.dtype(), A.device()).expand(batch_shape(A, {m, qcols})), m, qcols);
  } else {
    g.n = qcols, g.k = k;
    lapack_stub[A.device()](Lapack::Orgqr, g);
  }
  return {q, r};
}

Tensor native_linalg_solve_triangular(const Tensor& self, const Tensor& B, bool upper, bool left, bool unitriangular) {
  check_matrix(self, "linalg.solve_triangular", true, /*complex_ok=*/true);
  KINDLE_CHECK(B.dim() == self.dim(), "linalg.solve_triangular: Incompatible shapes of A and B for the equation ",
               left ? "AX = B" : "XA = B", " (", self.size(-2), "x", self.size(-1), " and ", B.size(-2), "x",
               B.size(-1), ")");
  check_same_device(self, B, "linalg.solve_triangular");
  KINDLE_CHECK(self.dtype() == B.dtype(), "linalg.solve_triangular: Expected A and B to have the same dtype, but found "
               "A of type ", self.dtype(), " and B of type ", B.dtype(), " instead.");
  int64_t n = self.size(-1), m = B.size(-2), k = B.size(-1);
  KINDLE_CHECK((left ? m : k) == n, "linalg.solve_triangular: Incompatible shapes of A and B for the equation ",
               left ? "AX = B" : "XA = B", " (", n, "x", n, " and ", m, "x", k, ")");
  for (int64_t d = 0; d < self.dim() - 2; ++d)
    KINDLE_CHECK(self.size(d) == B.size(d), "linalg.solve_triangular: the batch dimensions of A and B must match");
  Tensor a = colmajor(self, n, n);
  Tensor x = colmajor(B, m, k);
  if (x.numel() && n) {
    LapackArgs g = args_for(x, m, k);
    g.a = lapack_ptr(a), g.stride_a = n * n;
    g.b = lapack_ptr(x), g.stride_b = m * k;
    g.k = n;
    g.upper = upper, g.left = left, g.unit = unitriangular;
    lapack_stub[self.device()](Lapack::Trsm, g);
  }
  return x;
}

}  // namespace kindle
