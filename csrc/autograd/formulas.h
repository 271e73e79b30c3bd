// Helpers for the backward formulas of ops.yaml. Every formula is written with ops, so that
// backward is itself differentiable (create_graph=True gives higher derivatives).
#pragma once
#include <cmath>

#include "autograd/functions.h"
#include "kindle/operators.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_2_SQRTPI 1.12837916709551257390
#endif

namespace kindle::autograd {

Tensor sum_to(const Tensor& grad, IntArrayRef shape);
Tensor zero_of(const Tensor& like);  // a 0-d zero of like's dtype
Tensor scale_grad(const Tensor& grad, const Scalar& s);

// Fused normalisation backward (csrc/nn/normalization.cpp): fused kernels, or ops when the
// backward is itself recorded (create_graph).
// With grad_weight / grad_bias (not null), the weight and bias gradients come out of the same
// pass over grad and input (the fused path only; they stay undefined otherwise).
Tensor layer_norm_grad_input(const Tensor& grad, const Tensor& input, const Tensor& mean, const Tensor& rstd,
                             const std::optional<Tensor>& weight, IntArrayRef normalized_shape, double eps,
                             Tensor* grad_weight = nullptr, Tensor* grad_bias = nullptr);
// Forward mode: the tangent of layer norm's output (undefined tangents are skipped).
Tensor layer_norm_jvp(const Tensor& input, const Tensor& input_t, const std::optional<Tensor>& weight,
                      const Tensor& weight_t, const Tensor& bias_t, IntArrayRef normalized_shape, double eps);
Tensor layer_norm_grad_param(const Tensor& grad, const Tensor& input, const Tensor& mean, const Tensor& rstd,
                             IntArrayRef normalized_shape, bool weight, double eps);
Tensor batch_norm_grad_input(const Tensor& grad, const Tensor& input, const std::optional<Tensor>& weight,
                             const Tensor& mean, const Tensor& invstd, bool training, double eps);
Tensor batch_norm_grad_param(const Tensor& grad, const Tensor& input, const Tensor& mean, const Tensor& invstd,
                             bool weight, bool training, double eps);

// lstm_pointwise (csrc/nn/rnn.cpp): the gradient of the gates (gates=true) or of cx.
Tensor lstm_pointwise_grad(const Tensor& grad_hy, const Tensor& grad_cy, const Tensor& gates, const Tensor& cx,
                           const Tensor& cy, bool gates_grad);

// _ctc_loss (csrc/nn/ctc.cpp): PyTorch's gradient with respect to log_probs.
Tensor _ctc_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                          const Tensor& input_lengths, const Tensor& target_lengths, int64_t blank, bool zero_infinity);

Tensor silu_backward(const Tensor& grad, const Tensor& self);
Tensor gelu_backward(const Tensor& grad, const Tensor& self, std::string_view approximate);
Tensor softplus_backward(const Tensor& grad, const Tensor& self, const Scalar& beta, const Scalar& threshold);
Tensor elu_backward(const Tensor& grad, const Tensor& self, const Scalar& alpha, const Scalar& scale,
                    const Scalar& input_scale);
Tensor clamp_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& min,
                      const std::optional<Scalar>& max);

Tensor div_self_backward(const Tensor& grad, const Tensor& other, std::optional<std::string_view> rounding_mode);
Tensor div_other_backward(const Tensor& grad, const Tensor& self, const Tensor& other,
                          std::optional<std::string_view> rounding_mode);
Tensor max_min_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool is_max);
Tensor fft_r2c_backward(const Tensor& grad, IntArrayRef dim, int64_t normalization, bool onesided, IntArrayRef self_sizes);
Tensor fft_c2r_backward(const Tensor& grad, IntArrayRef dim, int64_t normalization);
Tensor sgn_backward(const Tensor& grad, const Tensor& self, const Tensor& result);
Tensor pow_self_backward(const Tensor& grad, const Tensor& self, const Tensor& exponent);
Tensor pow_exponent_backward(const Tensor& grad, const Tensor& self, const Tensor& exponent, const Tensor& result);
Tensor copysign_backward(const Tensor& grad, const Tensor& self, const Tensor& result);
Tensor xlogy_self_backward(const Tensor& grad, const Tensor& self, const Tensor& other);
// d/dx I1(x) = I0(x) - I1(x)/x (1/2 at 0); scaled: d/dx i1e(x) = i0e(x) - i1e(x) (sgn(x) + 1/x).
Tensor special_i1_backward(const Tensor& grad, const Tensor& self, const Tensor& result, bool scaled);
// d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)
Tensor igamma_x_derivative(const Tensor& a, const Tensor& x);
// kindle.linalg (A = L L^T; solve AX = B; A = V diag(L) V^T; A = U diag(S) Vh; A = QR)
Tensor cholesky_backward(const Tensor& gL, bool upper, const Tensor& L);
Tensor linalg_solve_backward_A(const Tensor& grad, const Tensor& A, const Tensor& X);
Tensor solve_triangular_backward_A(const Tensor& grad, const Tensor& A, const Tensor& X, bool upper, bool left,
                                   bool unitriangular);
Tensor slogdet_backward(const Tensor& g_sign, const Tensor& g_logabsdet, const Tensor& A, const Tensor& sign);
Tensor linalg_solve_backward_B(const Tensor& grad, const Tensor& A);
Tensor solve_triangular_backward_B(const Tensor& grad, const Tensor& A, bool upper, bool left, bool unitriangular);
Tensor det_backward(const Tensor& grad, const Tensor& A);
Tensor linalg_eig_backward(const Tensor& gL, const Tensor& gV, const Tensor& self, const Tensor& L, const Tensor& V);
Tensor eigh_backward(const Tensor& gL, const Tensor& gV, const Tensor& L, const Tensor& V);
Tensor svd_backward(const Tensor& gU, const Tensor& gS, const Tensor& gVh, const Tensor& U, const Tensor& S,
                    const Tensor& Vh, bool full_matrices);
Tensor qr_backward(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R, std::string_view mode);

Tensor permute_backward(const Tensor& grad, IntArrayRef dims);
Tensor select_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, int64_t index);
Tensor slice_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, std::optional<int64_t> start,
                      std::optional<int64_t> end, int64_t step);
Tensor diagonal_backward(const Tensor& grad, IntArrayRef sizes, int64_t offset, int64_t dim1, int64_t dim2);
Tensor unfold_backward(const Tensor& grad, IntArrayRef sizes, IntArrayRef strides, int64_t offset, int64_t dimension,
                       int64_t size, int64_t step);
Tensor cat_outputs_backward(const tensor_list& grads, const std::vector<OutputMeta>& outputs, int64_t dim);
Tensor stack_outputs_backward(const tensor_list& grads, const std::vector<OutputMeta>& outputs, int64_t dim);
tensor_list cat_backward(const Tensor& grad, int64_t dim, const std::vector<DimVector>& sizes);

Tensor hardswish_backward(const Tensor& grad, const Tensor& self);
Tensor hardsigmoid_backward(const Tensor& grad, const Tensor& self);
Tensor mish_backward(const Tensor& grad, const Tensor& self);
Tensor logsigmoid_backward(const Tensor& grad, const Tensor& self);
Tensor bce_backward(const Tensor& grad, const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                    std::string_view reduction);
Tensor bce_target_backward(const Tensor& grad, const Tensor& self, const std::optional<Tensor>& weight,
                           std::string_view reduction);
Tensor mean_backward(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim, bool keepdim);
Tensor sum_backward(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim, bool keepdim);
Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, std::optional<int64_t> dim,
                     bool keepdim);
// evenly: max()/min() (the gradient is split among ties, NaNs count as ties); otherwise amax/amin.
Tensor extremum_backward(const Tensor& grad, const Tensor& self, const Tensor& result, OptionalIntArrayRef dim,
                         bool keepdim, bool evenly);
Tensor indices_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, const Tensor& indices, bool keepdim);
// cummax/cummin: each output's gradient goes to the position it came from (summed over repeats).
Tensor cum_extreme_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, const Tensor& indices);
Tensor logcumsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim);
Tensor var_mean_backward(const Tensor& grad_var, const Tensor& grad_mean, const Tensor& self, OptionalIntArrayRef dim,
                         std::optional<bool> unbiased, bool keepdim, const std::optional<Scalar>& correction);
Tensor std_backward(const Tensor& grad, const Tensor& self, const Tensor& result, OptionalIntArrayRef dim,
                    std::optional<bool> unbiased, bool keepdim, const std::optional<Scalar>& correction);
Tensor std_mean_backward(const Tensor& grad_std, const Tensor& grad_mean, const Tensor& self, const Tensor& std,
                         OptionalIntArrayRef dim, std::optional<bool> unbiased, bool keepdim,
                         const std::optional<Scalar>& correction);
Tensor not_implemented_grad(const char* op);  // throws
Tensor norm_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& p, const Tensor& result,
                     OptionalIntArrayRef dim, bool keepdim);
Tensor logsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result, IntArrayRef dim, bool keepdim);
Tensor softmax_backward(const Tensor& grad, const Tensor& result, int64_t dim);
Tensor log_softmax_backward(const Tensor& grad, const Tensor& result, int64_t dim);
Tensor cumsum_backward(const Tensor& grad, int64_t dim);
Tensor cumprod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim);
Tensor index_backward(const Tensor& grad, IntArrayRef sizes, const std::vector<std::optional<Tensor>>& indices);

// x's real part when `like` is real and x complex (an op cast complex input to a real dtype=),
// else x.
inline Tensor real_if(const Tensor& x, const Tensor& like) {
  return x.is_complex() && !like.is_complex() ? real(x) : x;
}
// Forward mode: the tangent of max/min along dim (the tangent at the chosen index).
// prod: the partial derivatives (its backward at grad = 1) times the tangent, summed per slice.
Tensor prod_jvp(const Tensor& self, const Tensor& self_t, const Tensor& result, std::optional<int64_t> dim, bool keepdim);
Tensor max_dim_jvp(const Tensor& self_t, const Tensor& indices, int64_t dim, bool keepdim);
// d logcumsumexp = exp(-result) * cumsum(exp(self) * t), with the positive and negative parts of t
// summed in log space (no overflow where exp(self) would).
Tensor logcumsumexp_jvp(const Tensor& self, const Tensor& self_t, const Tensor& result, int64_t dim);

}  // namespace kindle::autograd
