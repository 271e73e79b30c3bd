#include "autograd/formulas.h"

#include <algorithm>
#include <limits>

#include "autograd/forward_ad.h"
#include "ops/activation_kernels.h"

namespace kindle::autograd {

Tensor zero_of(const Tensor& like) { return scalar_tensor_of(0, like.dtype()); }

Tensor scale_grad(const Tensor& grad, const Scalar& s) {
  if (!s.is_floating_point() && s.to_int() == 1) return grad;
  return grad * s;
}

// The activations' first-order backward is one fused pass; while the backward itself is being
// recorded (double backward) or carries tangents (forward over forward), the composite formula.
static bool fused_backward(const Tensor& grad, const Tensor& self) {
  return !GradMode::is_enabled() && self.is_floating_point() && grad.dtype() == self.dtype() &&
         grad.sizes() == self.sizes() && !forward_ad::any_tangent(grad, self);
}

Tensor silu_backward(const Tensor& grad, const Tensor& self) {
  if (fused_backward(grad, self)) return param_backward("silu_backward", grad, self, ParamOp::SiluGrad, {});
  Tensor s = self.sigmoid();
  return grad * s * (1 + self * (1 - s));
}

Tensor gelu_backward(const Tensor& grad, const Tensor& self, std::string_view approximate) {
  if (fused_backward(grad, self) && (self.dtype() == kFloat32 || self.dtype() == kFloat64) && self.numel() > 0) {
    Tensor g = grad.contiguous(), x = self.contiguous();
    Tensor out = empty_tensor(x.sizes(), x.dtype(), x.device());
    gelu_backward_stub[x.device()](g, x, out, approximate == "tanh");
    return out;
  }
  if (approximate == "tanh") {
    const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
    Tensor x2 = self.square();
    Tensor t = (k * (self + c * x2 * self)).tanh();
    Tensor d = 0.5 * (1 + t) + 0.5 * self * (1 - t.square()) * k * (1 + 3 * c * x2);
    return grad * d;
  }
  Tensor cdf = 0.5 * (1 + (self * M_SQRT1_2).erf());
  Tensor pdf = (-0.5 * self.square()).exp() * (1.0 / std::sqrt(2 * M_PI));
  return grad * (cdf + self * pdf);
}

Tensor softplus_backward(const Tensor& grad, const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  if (fused_backward(grad, self))
    return param_backward("softplus_backward", grad, self, ParamOp::SoftplusGrad,
                          {beta.to_double(), threshold.to_double()});
  Tensor z = self * beta;
  // (at z == threshold the slope is sigmoid(z) and its own derivative 0, as in PyTorch)
  return where(z > threshold, grad, grad * where(z < threshold, z, z.detach()).sigmoid());
}

Tensor elu_backward(const Tensor& grad, const Tensor& self, const Scalar& alpha, const Scalar& scale,
                    const Scalar& input_scale) {
  double a = alpha.to_double(), s = scale.to_double(), is = input_scale.to_double();
  if (fused_backward(grad, self)) return param_backward("elu_backward", grad, self, ParamOp::EluGrad, {a, s, is});
  // (at 0 the slope is the negative side's and its own derivative 0, NaN at NaN, as in PyTorch)
  Tensor neg = (where(self < 0, self, self.detach()) * is).exp() * (s * a * is);
  return grad * where(self > 0, scalar_tensor_of(s, grad.dtype()), neg);
}

Tensor clamp_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& min,
                      const std::optional<Scalar>& max) {
  Tensor keep;
  if (min) keep = self >= *min;
  if (max) keep = keep.defined() ? logical_and(keep, self <= *max) : self <= *max;
  if (!keep.defined()) return grad;
  return where(keep, grad, zero_of(grad));
}

Tensor div_self_backward(const Tensor& grad, const Tensor& other, std::optional<std::string_view> rounding_mode) {
  if (rounding_mode) return zeros_like(grad);
  return grad / other.conj();
}

Tensor div_other_backward(const Tensor& grad, const Tensor& self, const Tensor& other,
                          std::optional<std::string_view> rounding_mode) {
  if (rounding_mode) return zeros_like(grad);
  if (self.is_complex() || other.is_complex()) return -grad * (self / (other * other)).conj();
  return -grad * self / (other * other);
}

Tensor max_min_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool is_max) {
  // Ties split the gradient evenly, as in PyTorch.
  Tensor g = where(self == other, grad / 2, grad);
  return g.masked_fill(is_max ? self < other : self > other, zero_of(grad));
}

// r2c is "to complex, c2c, keep the onesided half": its adjoint pads the half with zeros back to
// the full length, runs the opposite c2c and keeps the real part.
Tensor fft_r2c_backward(const Tensor& grad, IntArrayRef dim, int64_t normalization, bool onesided, IntArrayRef self_sizes) {
  Tensor g = grad;
  if (onesided) {
    int64_t last = wrap_dim(dim.back(), int64_t(self_sizes.size()), "_fft_r2c");
    int64_t full = self_sizes[size_t(last)], half = grad.size(last);
    if (full > half) {
      DimVector sz(grad.sizes());
      sz[size_t(last)] = full;
      g = zeros(sz, grad.dtype(), grad.device());
      g.narrow(last, 0, half).copy_(grad);
    }
  }
  return real(_fft_c2c(g, dim, normalization, false));
}

// c2r reads each onesided value once but uses the ones with a mirror image twice: its adjoint is
// r2c of the gradient with those entries doubled.
Tensor fft_c2r_backward(const Tensor& grad, IntArrayRef dim, int64_t normalization) {
  Tensor g = _fft_r2c(grad, dim, normalization, true);
  int64_t last = wrap_dim(dim.back(), grad.dim(), "_fft_c2r");
  int64_t doubled = grad.size(last) - g.size(last);
  if (doubled > 0) {
    Tensor twice = ones({g.size(last)}, to_real_value_type(g.dtype()), g.device());
    twice.narrow(0, 1, doubled).fill_(2);
    DimVector shape(size_t(g.dim()), 1);
    shape[size_t(last)] = g.size(last);
    g = g * twice.view(shape);
  }
  return g;
}

Tensor sgn_backward(const Tensor& grad, const Tensor& self, const Tensor& result) {
  if (!self.is_complex()) return zeros_like(grad);
  // s = z/|z| moves only along the circle: the gradient is g minus its radial part, over |z|
  Tensor a = self.abs();
  Tensor g = (grad - result * real(grad.conj() * result)) / a;
  return where(a == 0, zero_of(g), g);
}

Tensor pow_self_backward(const Tensor& grad, const Tensor& self, const Tensor& exponent_in) {
  // A Python-number exponent is a wrapped float64 number: `exponent - 1` with another number
  // would compute in the default dtype (float32) and lose the exponent's digits.
  Tensor exponent = exponent_in.impl()->wrapped_number ? scalar_tensor_of(exponent_in.item(), exponent_in.dtype())
                                                       : exponent_in;
  if (exponent.dtype() == kBool) exponent = exponent.to(self.dtype());  // (x ** True is x: `exponent - 1` needs a number)
  if (self.is_complex() || exponent.is_complex())
    return where(exponent == 0, zero_of(grad), grad * (exponent * self.pow(exponent - 1)).conj());
  return where(exponent == 0, zero_of(grad), grad * exponent * self.pow(exponent - 1));
}

Tensor pow_exponent_backward(const Tensor& grad, const Tensor& self, const Tensor& exponent, const Tensor& result) {
  if (self.is_complex() || exponent.is_complex())  // (0 ** e is 0 or 1 with no slope in e)
    return where(self == 0, zero_of(grad), grad * (result * self.log()).conj());
  return where(logical_and(self == 0, exponent >= 0), zero_of(grad), grad * result * self.log());
}

Tensor copysign_backward(const Tensor& grad, const Tensor& self, const Tensor& result) {
  return where(self == 0, zero_of(grad), grad * result / self);
}

Tensor xlogy_self_backward(const Tensor& grad, const Tensor& self, const Tensor& other) {
  // log in the result's precision (other may be a lower-precision float)
  return where(logical_and(self == 0, other <= 0), zero_of(grad), grad * other.to(grad.dtype()).log());
}

Tensor special_i1_backward(const Tensor& grad, const Tensor& self, const Tensor& result, bool scaled) {
  // |x| <= eps (and NaN, as in torch) takes the limit 1/2
  double eps = self.dtype() == kFloat64 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
  Tensor not_tiny = self.abs() > eps;
  Tensor x = where(not_tiny, self, full_like(self, eps));
  Tensor d = scaled ? special_i0e(x) - result * (x.sgn() + x.reciprocal()) : i0(x) - result / x;
  return grad * where(not_tiny, d, full_like(d, 0.5));
}

Tensor igamma_x_derivative(const Tensor& a, const Tensor& x) {
  return ((a - 1) * x.log() - x - lgamma(a)).exp();
}

namespace {
Tensor mT(const Tensor& t) { return t.transpose(-2, -1); }
// The identity broadcast to a's batch of n x n matrices.
Tensor eye_like(const Tensor& a, int64_t n) {
  DimVector sz(IntArrayRef(a.sizes().data(), size_t(a.dim() - 2)));
  sz.push_back(n), sz.push_back(n);
  return eye(n, std::nullopt, a.dtype(), a.device()).expand(sz);
}
}  // namespace

Tensor cholesky_backward(const Tensor& gL_in, bool upper, const Tensor& L_in) {
  // Murray (2016): with A = L L^H, gA = L^-H Phi(L^H gL) L^-1, Phi keeping the lower triangle
  // with its diagonal halved (here spread Hermitian-symmetrically: half of it above the diagonal).
  Tensor L = upper ? adjoint(L_in) : L_in, gL = upper ? adjoint(gL_in) : gL_in;
  Tensor P = matmul(adjoint(L), gL).tril();
  P = (P + adjoint(P.tril(-1))) * 0.5;
  P = linalg_solve_triangular(adjoint(L), P, /*upper=*/true, /*left=*/true, false);
  return linalg_solve_triangular(L, P, /*upper=*/false, /*left=*/false, false);
}

Tensor linalg_solve_backward_A(const Tensor& grad, const Tensor& A, const Tensor& X) {
  return -matmul(_linalg_solve(adjoint(A), grad), adjoint(X));
}

Tensor linalg_solve_backward_B(const Tensor& grad, const Tensor& A) { return _linalg_solve(adjoint(A), grad); }

Tensor solve_triangular_backward_A(const Tensor& grad, const Tensor& A, const Tensor& X, bool upper, bool left,
                                   bool unitriangular) {
  Tensor gB = linalg_solve_triangular(adjoint(A), grad, !upper, left, unitriangular);
  Tensor gA = left ? -matmul(gB, adjoint(X)) : -matmul(adjoint(X), gB);
  if (unitriangular) return upper ? gA.triu(1) : gA.tril(-1);
  return upper ? gA.triu() : gA.tril();
}

Tensor solve_triangular_backward_B(const Tensor& grad, const Tensor& A, bool upper, bool left, bool unitriangular) {
  return linalg_solve_triangular(adjoint(A), grad, !upper, left, unitriangular);
}

Tensor slogdet_backward(const Tensor& g_sign, const Tensor& g_logabs, const Tensor& A, const Tensor& sign) {
  // d log|det A| = Re tr(A^-1 dA), d sign = i Im tr(A^-1 dA) sign: with h = g_logabs +
  // i Im(conj(g_sign) sign), gA = conj(h) A^-H (for real A, g_logabs A^-T).
  Tensor h;
  if (A.is_complex()) {
    Tensor hr = g_logabs.defined() ? g_logabs : zeros_like(real(sign));
    Tensor hi = g_sign.defined() ? imag(g_sign.conj() * sign) : zeros_like(hr);
    h = complex(hr, -hi);  // conj(h)
  } else {
    if (!g_logabs.defined()) return {};
    h = g_logabs;
  }
  Tensor inv_h = _linalg_solve(adjoint(A), eye_like(A, A.size(-1)));
  return h.unsqueeze(-1).unsqueeze(-1) * inv_h;
}

Tensor det_backward(const Tensor& grad, const Tensor& A) {
  // d det A / dA = cof(A); for A = U diag(s) V^H, conj(cof(A)) = conj(det U det V^H) U diag(prod_{j != i}
  // s_j) V^H: defined for singular A too, where A^-H is not. gA = grad * conj(cof(A)).
  int64_t n = A.size(-1);
  if (n == 0) return zeros_like(A);
  auto [U, S, Vh] = linalg_svd(A, false);
  Tensor ones_col = ones_like(S.narrow(-1, 0, 1));
  Tensor left = cat({ones_col, S.narrow(-1, 0, n - 1)}, -1).cumprod(-1);
  Tensor right = cat({ones_col, S.flip({-1}).narrow(-1, 0, n - 1)}, -1).cumprod(-1).flip({-1});
  Tensor phase = linalg_det(U) * linalg_det(Vh);
  if (phase.is_complex()) phase = phase.conj();
  Tensor scale = left * right;
  if (A.is_complex()) scale = scale.to(A.dtype());
  Tensor cof = matmul(U * scale.unsqueeze(-2), Vh) * phase.unsqueeze(-1).unsqueeze(-1);
  return grad.unsqueeze(-1).unsqueeze(-1) * cof;
}

// gA = V^-H (diag(gL) + (V^H gV - V^H V diag(Re(V^H gV))) / conj(E)) V^H with E_ij = L_j - L_i:
// eigenvectors are defined up to a complex scale each, so the part of V^H gV along that freedom
// (its real diagonal) carries no information. A real input gets the real part.
Tensor linalg_eig_backward(const Tensor& gL, const Tensor& gV, const Tensor& self, const Tensor& L, const Tensor& V) {
  if (!gL.defined() && !gV.defined()) return {};
  Tensor VH = V.transpose(-2, -1).conj();
  Tensor inner;
  if (gV.defined()) {
    Tensor VhgV = VH.matmul(gV);
    Tensor diag_re = real(VhgV.diagonal(0, -2, -1)).contiguous();
    inner = VhgV - VH.matmul(V * diag_re.unsqueeze(-2));
    Tensor Lc = L.conj();
    Tensor E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1);
    E.diagonal(0, -2, -1).fill_(1);
    inner = inner / E;
    if (gL.defined()) inner.diagonal(0, -2, -1).copy_(gL);
    else inner.diagonal(0, -2, -1).zero_();
  } else {
    inner = diag_embed(gL.to(V.dtype()));
  }
  Tensor gA = _linalg_solve(VH, inner.matmul(VH));
  return self.is_complex() ? gA : real(gA).contiguous();
}

Tensor eigh_backward(const Tensor& gL, const Tensor& gV, const Tensor& L, const Tensor& V) {
  // gA = V (diag(gL) + skew(V^H gV) / E) V^H with E_ij = L_j - L_i: each eigenvector's phase (its
  // sign, for real input) is arbitrary, so only the skew-Hermitian part off the diagonal of V^H gV
  // carries information.
  Tensor inner;
  if (gV.defined()) {
    Tensor X = matmul(adjoint(V), gV);
    X = (X - adjoint(X)) * 0.5;
    Tensor E = L.unsqueeze(-2) - L.unsqueeze(-1);
    if (X.is_complex()) {  // the diagonal (i Im, along the phases' freedom) is dropped
      inner = X / (E + eye_like(E, E.size(-1))).to(X.dtype());
      inner = inner - diag_embed(inner.diagonal(0, -2, -1));
    } else {
      E = E + diag_embed(full_like(L, std::numeric_limits<double>::infinity()));  // X's diagonal is 0: 0/inf
      inner = X / E;
    }
    if (gL.defined()) inner = inner + diag_embed(gL);
  } else {
    inner = diag_embed(gL);
  }
  if (V.is_complex()) inner = inner.to(V.dtype());
  return matmul(matmul(V, inner), adjoint(V));
}

Tensor svd_backward(const Tensor& gU_in, const Tensor& gS, const Tensor& gVh_in, const Tensor& U_in, const Tensor& S,
                    const Tensor& Vh_in, bool full_matrices) {
  int64_t m = U_in.size(-2), n = Vh_in.size(-1), k = S.size(-1);
  const bool cplx = U_in.is_complex();
  auto as_u = [&](const Tensor& t) { return cplx ? t.to(U_in.dtype()) : t; };  // real S terms into U's dtype
  // the reduced factors: the extra columns of a full U (rows of Vh) do not depend on A smoothly
  Tensor U = full_matrices ? U_in.narrow(-1, 0, k) : U_in, Vh = full_matrices ? Vh_in.narrow(-2, 0, k) : Vh_in;
  Tensor gU = gU_in.defined() && full_matrices ? gU_in.narrow(-1, 0, k) : gU_in;
  Tensor gVh = gVh_in.defined() && full_matrices ? gVh_in.narrow(-2, 0, k) : gVh_in;
  if (!gU.defined() && !gVh.defined()) return matmul(U * as_u(gS).unsqueeze(-2), Vh);
  Tensor V = adjoint(Vh);
  Tensor S2 = S * S;
  Tensor E = S2.unsqueeze(-2) - S2.unsqueeze(-1);  // E_ij = s_j^2 - s_i^2
  E = E + eye_like(E, k);                             // the diagonal terms are handled apart
  Tensor inner = as_u(gS.defined() ? diag_embed(gS) : zeros_like(E));
  Tensor gauge;  // complex: i Im(diag(U^H gU) - diag(V^H gV)) / (2 s), the phase each pair shares
  if (gU.defined()) {
    Tensor X = matmul(adjoint(U), gU);
    if (cplx) gauge = imag(X.diagonal(0, -2, -1));
    X = (X - adjoint(X)) / as_u(E);
    if (cplx) X = X - diag_embed(X.diagonal(0, -2, -1));
    inner = inner + X * as_u(S).unsqueeze(-2);
  }
  Tensor gV = gVh.defined() ? adjoint(gVh) : Tensor();
  if (gV.defined()) {
    Tensor Y = matmul(Vh, gV);
    if (cplx) gauge = gauge.defined() ? gauge - imag(Y.diagonal(0, -2, -1)) : -imag(Y.diagonal(0, -2, -1));
    Y = (Y - adjoint(Y)) / as_u(E);
    if (cplx) Y = Y - diag_embed(Y.diagonal(0, -2, -1));
    inner = inner + as_u(S).unsqueeze(-1) * Y;
  }
  if (cplx) inner = inner + diag_embed(complex(zeros_like(gauge), gauge / (S * 2)));
  Tensor gA = matmul(matmul(U, inner), Vh);
  Tensor Sinv = as_u(S.reciprocal());
  if (gU.defined() && m > k) {  // the part of gU outside U's span
    Tensor proj = gU - matmul(U, matmul(adjoint(U), gU));
    gA = gA + matmul(proj * Sinv.unsqueeze(-2), Vh);
  }
  if (gV.defined() && n > k) {
    Tensor proj = gV - matmul(V, matmul(Vh, gV));
    gA = gA + matmul(U * Sinv.unsqueeze(-2), adjoint(proj));
  }
  return gA;
}

Tensor qr_backward(const Tensor& gQ_in, const Tensor& gR_in, const Tensor& Q, const Tensor& R, std::string_view mode) {
  KINDLE_CHECK(mode != "r", "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
               "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
  int64_t m = Q.size(-2), n = R.size(-1);
  KINDLE_CHECK_NOT_IMPLEMENTED(mode != "complete" || m <= n, "The QR decomposition is not differentiable when "
                               "mode='complete' and nrows > ncols.");
  Tensor gQ = gQ_in.defined() ? gQ_in : zeros_like(Q);
  Tensor gR = gR_in.defined() ? gR_in : zeros_like(R);
  // m >= n: gA = [gQ + Q copyltu(M)] R^-H with M = R gR^H - gQ^H Q, copyltu mirroring the strict
  // lower triangle (Hermitian) around M's real diagonal (R's diagonal is real). m < n: A = Q [R1 R2];
  // the columns past m enter through Y = Q R2.
  auto square_case = [&](const Tensor& gq, const Tensor& gr, const Tensor& r) {
    Tensor M = matmul(r, adjoint(gr)) - matmul(adjoint(gq), Q);
    Tensor sym = M.tril(-1);
    Tensor d = M.diagonal(0, -2, -1);
    if (d.is_complex()) d = real(d).to(M.dtype());
    sym = sym + adjoint(sym) + diag_embed(d);
    Tensor b = gq + matmul(Q, sym);
    return linalg_solve_triangular(adjoint(r), b, /*upper=*/false, /*left=*/false, false);
  };
  if (m >= n) return square_case(gQ, gR, R);
  Tensor R1 = R.narrow(-1, 0, m), gR1 = gR.narrow(-1, 0, m), gR2 = gR.narrow(-1, m, n - m);
  Tensor Y = matmul(Q, R.narrow(-1, m, n - m));
  Tensor gX = square_case(gQ + matmul(Y, adjoint(gR2)), gR1, R1);
  return cat({gX, matmul(Q, gR2)}, -1);
}

Tensor permute_backward(const Tensor& grad, IntArrayRef dims) {
  DimVector inv(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inv[size_t(wrap_dim(dims[i], grad.dim(), "permute"))] = int64_t(i);
  return grad.permute(inv);
}

Tensor select_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, int64_t index) {
  Tensor z = zeros(sizes, grad.dtype(), grad.device());
  z.select(dim, index).copy_(grad);
  return z;
}

Tensor slice_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, std::optional<int64_t> start,
                      std::optional<int64_t> end, int64_t step) {
  Tensor z = zeros(sizes, grad.dtype(), grad.device());
  kindle::slice(z, dim, start, end, step).copy_(grad);
  return z;
}

Tensor diagonal_backward(const Tensor& grad, IntArrayRef sizes, int64_t offset, int64_t dim1, int64_t dim2) {
  Tensor z = zeros(sizes, grad.dtype(), grad.device());
  z.diagonal(offset, dim1, dim2).copy_(grad);
  return z;
}

Tensor unfold_backward(const Tensor& grad, IntArrayRef sizes, IntArrayRef strides, int64_t offset, int64_t dimension,
                       int64_t size, int64_t step) {
  DimVector vs(sizes), vst(strides);
  if (sizes.empty()) {
    vs.push_back(size);
    vst.push_back(1);
  } else {
    int64_t d = wrap_dim(dimension, int64_t(sizes.size()), "unfold");
    vs[d] = (sizes[d] - size) / step + 1;
    vst[d] = strides[d] * step;
    vs.push_back(size);
    vst.push_back(strides[d]);
  }
  return as_strided_backward(grad, TensorGeometry(sizes, strides, offset), TensorGeometry(vs, vst, offset));
}

namespace {
tensor_list filled(const tensor_list& grads, const std::vector<OutputMeta>& outputs) {
  tensor_list parts;
  for (size_t i = 0; i < outputs.size(); ++i)
    parts.push_back(i < grads.size() && grads[i].defined() ? grads[i] : zeros(outputs[i].sizes, outputs[i].dtype, outputs[i].device));
  return parts;
}
}  // namespace

Tensor cat_outputs_backward(const tensor_list& grads, const std::vector<OutputMeta>& outputs, int64_t dim) {
  return cat(filled(grads, outputs), dim);
}

Tensor stack_outputs_backward(const tensor_list& grads, const std::vector<OutputMeta>& outputs, int64_t dim) {
  return stack(filled(grads, outputs), dim);
}

tensor_list cat_backward(const Tensor& grad, int64_t dim, const std::vector<DimVector>& sizes) {
  tensor_list out;
  int64_t d = wrap_dim(dim, grad.dim(), "cat"), off = 0;
  for (const DimVector& s : sizes) {
    if (s.size() == 1 && s[0] == 0) {  // skipped by cat (legacy 1-d empty tensors)
      out.push_back(zeros({0}, grad.dtype(), grad.device()));
      continue;
    }
    out.push_back(grad.narrow(d, off, s[size_t(d)]));
    off += s[size_t(d)];
  }
  return out;
}

namespace {
// grad (or result) of a reduction over `dim`, reshaped to broadcast against the input.
Tensor unsqueeze_reduced(const Tensor& g, IntArrayRef sizes, OptionalIntArrayRef dim, bool keepdim) {
  if (keepdim || sizes.empty()) return g;
  if (!dim || dim->empty()) return g.reshape(DimVector(sizes.size(), 1));
  DimVector ds;
  for (int64_t d : *dim) ds.push_back(wrap_dim(d, int64_t(sizes.size()), "reduce"));
  std::sort(ds.begin(), ds.end());
  Tensor r = g;
  for (int64_t d : ds) r = r.unsqueeze(d);
  return r;
}

int64_t reduced_numel(IntArrayRef sizes, OptionalIntArrayRef dim) {
  if (!dim || dim->empty()) return numel_of(sizes);
  int64_t n = 1;
  for (int64_t d : *dim) n *= sizes.empty() ? 1 : sizes[size_t(wrap_dim(d, int64_t(sizes.size()), "reduce"))];
  return n;
}

// The product of all other elements along d, for every element (no division: zeros are fine).
Tensor prod_of_others(const Tensor& x, int64_t d) {
  int64_t n = x.size(d);
  if (n <= 1) return ones_like(x);
  Tensor one = ones_like(x.narrow(d, 0, 1));
  Tensor left = cat({one, x.narrow(d, 0, n - 1)}, d).cumprod(d);
  Tensor right = cat({x.narrow(d, 1, n - 1), one}, d).flip({d}).cumprod(d).flip({d});
  return left * right;
}
}  // namespace

Tensor sum_backward(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim, bool keepdim) {
  return unsqueeze_reduced(grad, sizes, dim, keepdim).expand(sizes);
}

Tensor mean_backward(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim, bool keepdim) {
  return sum_backward(grad, sizes, dim, keepdim) / double(reduced_numel(sizes, dim));
}

Tensor hardswish_backward(const Tensor& grad, const Tensor& self) {
  if (fused_backward(grad, self)) return param_backward("hardswish_backward", grad, self, ParamOp::HardswishGrad, {});
  // as PyTorch: 0 up to -3, grad from 3, grad * (x/3 + 1/2) between them (and at NaN)
  return where(self <= -3, zero_of(grad), where(self >= 3, grad, grad * (self / 3 + 0.5)));
}

Tensor hardsigmoid_backward(const Tensor& grad, const Tensor& self) {
  if (fused_backward(grad, self))
    return param_backward("hardsigmoid_backward", grad, self, ParamOp::HardsigmoidGrad, {});
  return where(logical_and(self > -3, self < 3), grad / 6, zero_of(grad));
}

Tensor mish_backward(const Tensor& grad, const Tensor& self) {
  if (fused_backward(grad, self)) return param_backward("mish_backward", grad, self, ParamOp::MishGrad, {});
  Tensor t = softplus(self).tanh();
  return grad * (t + self * self.sigmoid() * (1 - t.square()));
}

Tensor logsigmoid_backward(const Tensor& grad, const Tensor& self) {
  if (fused_backward(grad, self))
    return param_backward("logsigmoid_backward", grad, self, ParamOp::LogSigmoidGrad, {});
  return grad * (-self).sigmoid();
}

Tensor bce_backward(const Tensor& grad, const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                    std::string_view reduction) {
  // The denominator is clamped (as PyTorch), so inputs of exactly 0 or 1 get finite gradients.
  Tensor g = reduction == "mean" ? grad / double(std::max<int64_t>(self.numel(), 1)) : grad;
  Tensor r = g * (self - target) / clamp_min((1 - self) * self, 1e-12);
  return weight ? r * *weight : r;
}

Tensor bce_target_backward(const Tensor& grad, const Tensor& self, const std::optional<Tensor>& weight,
                           std::string_view reduction) {
  Tensor g = reduction == "mean" ? grad / double(std::max<int64_t>(self.numel(), 1)) : grad;
  Tensor r = g * ((1 - self).log() - self.log());  // unclamped, as PyTorch: inf at 0 and 1
  return weight ? r * *weight : r;
}

Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, std::optional<int64_t> dim,
                     bool keepdim) {
  if (self.dim() == 0) return grad;
  if (!dim) {  // as PyTorch: divide when no zero, exclusive products for one zero, else all zero
    int64_t zeros_n = self.is_meta() ? 0 : (self == 0).sum().item<int64_t>();  // (meta: any branch has the shape)
    if (zeros_n == 0) return grad * result / self;
    if (zeros_n > 1) return zeros_like(self);
    return (grad * prod_of_others(self.reshape({-1}), 0)).reshape(self.sizes());
  }
  int64_t d = wrap_dim(*dim, self.dim(), "prod");
  Tensor g = keepdim ? grad : grad.unsqueeze(d);
  return g * prod_of_others(self, d);
}

Tensor extremum_backward(const Tensor& grad, const Tensor& self, const Tensor& result, OptionalIntArrayRef dim,
                         bool keepdim, bool evenly) {
  Tensor g = unsqueeze_reduced(grad, self.sizes(), dim, keepdim);
  Tensor r = unsqueeze_reduced(result, self.sizes(), dim, keepdim);
  Tensor mask = self == r;
  if (evenly) mask = logical_or(mask, logical_and(self.isnan(), r.isnan()));
  Tensor count = (dim && !dim->empty()) ? mask.sum(*dim, true) : mask.sum(std::nullopt, true);
  if (evenly) return where(mask, g / count, zero_of(grad));
  return (g / count) * mask;  // a slice holding a NaN gets NaN (0/0), as PyTorch's amax
}

Tensor indices_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, const Tensor& indices, bool keepdim) {
  if (sizes.empty()) return grad.reshape({});
  int64_t d = wrap_dim(dim, int64_t(sizes.size()), "backward");
  Tensor g = keepdim ? grad : grad.unsqueeze(d);
  Tensor idx = keepdim ? indices : indices.unsqueeze(d);
  return zeros(sizes, grad.dtype(), grad.device()).scatter(d, idx, g);
}

Tensor cum_extreme_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, const Tensor& indices) {
  if (sizes.empty()) return grad.reshape({});
  int64_t d = wrap_dim(dim, int64_t(sizes.size()), "backward");
  return zeros(sizes, grad.dtype(), grad.device()).scatter_add(d, indices, grad);
}

// d result_j / d x_i = exp(x_i - result_j) for i <= j, so grad_i = sum_{j>=i} grad_j exp(x_i - r_j).
// The sum runs in log space, separately over the positive and negative parts of grad, so that
// no exponential overflows: grad_i = exp(x_i + rlse_{j>=i}(log g+_j - r_j)) - (same for g-).
Tensor logcumsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim) {
  if (self.numel() == 0) return grad;
  if (self.dim() == 0) return grad;
  int64_t d = wrap_dim(dim, self.dim(), "logcumsumexp");
  auto reverse_lcse = [&](const Tensor& t) { return t.flip({d}).logcumsumexp(d).flip({d}); };
  if (self.is_complex())  // grad_i = sum_{j>=i} g_j conj(exp(x_i - r_j)); complex logs carry the signs
    return (reverse_lcse(grad.log() - result.conj()) + self.conj()).exp();
  Tensor zero = zero_of(grad);
  Tensor pos = reverse_lcse(where(grad > 0, grad, zero).log() - result);
  Tensor neg = reverse_lcse(where(grad < 0, -grad, zero).log() - result);
  return (pos + self).exp() - (neg + self).exp();
}

Tensor var_mean_backward(const Tensor& grad_var, const Tensor& grad_mean, const Tensor& self, OptionalIntArrayRef dim,
                         std::optional<bool> unbiased, bool keepdim, const std::optional<Scalar>& correction) {
  double c = correction ? correction->to_double() : (unbiased.value_or(true) ? 1.0 : 0.0);
  double n = double(reduced_numel(self.sizes(), dim));
  Tensor r;
  if (grad_var.defined()) {
    Tensor dev = self - self.mean(dim, true);
    Tensor g = unsqueeze_reduced(grad_var, self.sizes(), dim, keepdim);
    if (n - c <= 0 && (!dim || self.dim() == 0)) {  // 2 / 0 times the deviation: NaN where it is 0, inf elsewhere
                                                    // (real, as torch's full reduction)
      Tensor z = dev == Scalar(0);
      Tensor nan = full_like(g, std::numeric_limits<double>::quiet_NaN());
      r = (g * where(z, nan, full_like(g, std::numeric_limits<double>::infinity()))).to(self.dtype());
    } else {
      r = (g * (2.0 / (n - c))) * dev;
    }
  }
  if (grad_mean.defined()) {
    Tensor t = unsqueeze_reduced(grad_mean, self.sizes(), dim, keepdim).expand(self.sizes()) / n;
    r = r.defined() ? r + t : t;
  }
  return r;
}

Tensor std_backward(const Tensor& grad, const Tensor& self, const Tensor& result, OptionalIntArrayRef dim,
                    std::optional<bool> unbiased, bool keepdim, const std::optional<Scalar>& correction) {
  // d std = d var / (2 std); where std is 0 the gradient is 0 (PyTorch masks it the same way)
  Tensor gv = (grad / (2 * result)).masked_fill(result == 0, zero_of(grad));
  return var_mean_backward(gv, Tensor(), self, dim, unbiased, keepdim, correction);
}

Tensor std_mean_backward(const Tensor& grad_std, const Tensor& grad_mean, const Tensor& self, const Tensor& std,
                         OptionalIntArrayRef dim, std::optional<bool> unbiased, bool keepdim,
                         const std::optional<Scalar>& correction) {
  Tensor gv;
  if (grad_std.defined()) gv = (grad_std / (2 * std)).masked_fill(std == 0, zero_of(grad_std));
  return var_mean_backward(gv, grad_mean, self, dim, unbiased, keepdim, correction);
}

Tensor not_implemented_grad(const char* op) {
  throw NotImplementedError(detail::str_cat("the derivative for '", op, "' is not implemented."));
}

Tensor norm_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& p, const Tensor& result,
                     OptionalIntArrayRef dim, bool keepdim) {
  double pv = p ? p->to_double() : 2.0;
  Tensor g = unsqueeze_reduced(grad, self.sizes(), dim, keepdim);
  // (the norm is real also for complex input: d|x| = Re(conj(sgn x) dx), so the grad is g sgn(x) |x|^(p-1) / r^(p-1))
  Tensor r = unsqueeze_reduced(result, self.sizes(), dim, keepdim).to(to_real_value_type(self.dtype()));
  if (pv == 0.0) return Tensor();  // no gradient (None), as in PyTorch
  if (pv == 1.0) return self.sgn() * g;
  if (std::isinf(pv)) {
    Tensor mask = self.abs() == r;
    Tensor count = (dim && !dim->empty()) ? mask.sum(*dim, true) : mask.sum(std::nullopt, true);
    return self.sgn() * where(mask, g / count, zero_of(g));
  }
  Tensor scale = pv == 2.0 ? g / r : g * self.abs().pow(scalar_to_tensor(pv - 2)) / r.pow(scalar_to_tensor(pv - 1));
  if (pv == 2.0) return self * scale.masked_fill(r == 0, zero_of(scale));
  return (self * scale).masked_fill(r == 0, zero_of(scale));
}

Tensor logsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result, IntArrayRef dim, bool keepdim) {
  Tensor g = unsqueeze_reduced(grad, self.sizes(), dim, keepdim);
  Tensor r = unsqueeze_reduced(result, self.sizes(), dim, keepdim);
  return g * (self - r).exp().conj();  // (conj: the complex convention; the identity on reals)
}

namespace {
// The fused row kernel when the softmax ran over the last dimension of a float tensor and the
// backward is not recorded (double backward takes the formulas with ops).
Tensor softmax_backward_fused(const Tensor& grad, const Tensor& result, int64_t dim, bool log) {
  const int64_t nd = result.dim();
  if (GradMode::is_enabled() || nd == 0 || (result.dtype() != kFloat32 && result.dtype() != kFloat64) ||
      grad.dtype() != result.dtype() || grad.sizes() != result.sizes() || result.numel() == 0 ||
      (dim < 0 ? dim + nd : dim) != nd - 1)
    return {};
  Tensor g = grad.contiguous(), y = result.contiguous();
  Tensor out = empty_tensor(y.sizes(), y.dtype(), y.device());
  const int64_t cols = y.size(-1);
  softmax_backward_stub[y.device()](g, y, out, y.numel() / cols, cols, log);
  return out;
}
}  // namespace

Tensor softmax_backward(const Tensor& grad, const Tensor& result, int64_t dim) {
  if (Tensor r = softmax_backward_fused(grad, result, dim, false); r.defined()) return r;
  return result * (grad - (grad * result).sum(IntArrayRef{dim}, true));
}

Tensor log_softmax_backward(const Tensor& grad, const Tensor& result, int64_t dim) {
  if (Tensor r = softmax_backward_fused(grad, result, dim, true); r.defined()) return r;
  return grad - result.exp() * grad.sum(IntArrayRef{dim}, true);
}

Tensor cumsum_backward(const Tensor& grad, int64_t dim) {
  if (grad.dim() == 0) return grad;
  int64_t d = wrap_dim(dim, grad.dim(), "cumsum");
  return grad.flip({d}).cumsum(d).flip({d});
}

Tensor cumprod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim) {
  if (self.dim() == 0 || self.numel() == 0) return grad;
  int64_t d = wrap_dim(dim, self.dim(), "cumprod");
  Tensor is_zero = self == 0;
  if (self.is_meta() || !is_zero.any().item<bool>()) return cumsum_backward(grad * result, d) / self;
  // With zeros, division is wrong: position i's gradient is sum_{j>=i} grad_j * prod_{k<=j,k!=i} x_k.
  int64_t n = self.size(d);
  tensor_list parts;
  Tensor one = ones_like(self.narrow(d, 0, 1));
  for (int64_t i = 0; i < n; ++i) {
    Tensor x = cat({self.narrow(d, 0, i), one, self.narrow(d, i + 1, n - i - 1)}, d);
    Tensor cp = x.cumprod(d);
    parts.push_back((grad * cp).narrow(d, i, n - i).sum(IntArrayRef{d}, true));
  }
  // Past the first zero every product includes it: the gradient is exactly 0 (also when a NaN or
  // inf elsewhere would make the products above NaN).
  Tensor zi = is_zero.to(kInt64);
  Tensor after_first_zero = (zi.cumsum(d) - zi) > 0;
  return cat(parts, d).masked_fill(after_first_zero, zero_of(grad));
}

Tensor index_backward(const Tensor& grad, IntArrayRef sizes, const std::vector<std::optional<Tensor>>& indices) {
  return zeros(sizes, grad.dtype(), grad.device()).index_put_(indices, grad, true);
}

Tensor logcumsumexp_jvp(const Tensor& self, const Tensor& self_t, const Tensor& result, int64_t dim) {
  // (a part that is empty so far, log 0 = -inf, contributes 0, also where result is -inf)
  auto part = [&](const Tensor& t) {
    Tensor lse = logcumsumexp(self + relu(t).log(), dim);
    return where(lse == -INFINITY, zeros_like(lse), (lse - result).exp());
  };
  return part(self_t) - part(-self_t);
}

Tensor prod_jvp(const Tensor& self, const Tensor& self_t, const Tensor& result, std::optional<int64_t> dim, bool keepdim) {
  Tensor partial = prod_backward(ones_like(result), self, result, dim, keepdim);
  Tensor prod_t = partial * self_t;
  return dim ? prod_t.sum(IntArrayRef{*dim}, keepdim) : prod_t.sum();
}

Tensor max_dim_jvp(const Tensor& self_t, const Tensor& indices, int64_t dim, bool keepdim) {
  if (self_t.dim() == 0) return self_t.clone();
  Tensor v = self_t.gather(dim, keepdim ? indices : indices.unsqueeze(dim));
  return keepdim ? v : v.squeeze(IntArrayRef{dim});
}

}  // namespace kindle::autograd
