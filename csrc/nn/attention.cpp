// scaled_dot_product_attention. Without a mask or dropout (the common case, causal or not) it
// runs the fused kernel of csrc/cpu/attention.cpp, whose memory is O(L + S) per head; with a
// mask or dropout it is composed of GEMMs and softmax and keeps the L x S weights for backward.
#include <cmath>
#include <limits>

#include "kindle/autograd.h"
#include "nn/common.h"
#include "ops/attention_kernels.h"

namespace kindle {
namespace {

// q (..., L, E), k (..., S, E), v (..., S, Ev) with equal batch dims; float32 or float64.
Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
  const int64_t L = q.size(-2), S = k.size(-2), E = q.size(-1), Ev = v.size(-1);
  int64_t BH = 1;
  for (int64_t i = 0; i < q.dim() - 2; ++i) BH *= q.size(i);
  Tensor q3 = q.reshape({BH, L, E}), k3 = k.reshape({BH, S, E}), v3 = v.reshape({BH, S, Ev});
  AttentionGeom g{BH, L, S, E, Ev, scale, causal};
  Tensor qc, kc, vc, out, lse;
  {
    autograd::NoGradGuard ng;
    qc = q3.contiguous();
    kc = k3.contiguous();
    vc = v3.contiguous();
    out = empty_tensor({BH, L, Ev}, q.dtype(), q.device());
    lse = empty_tensor({BH, L}, q.dtype(), q.device());
    if (BH * L > 0) flash_attention_stub[q.device()](qc, kc, vc, out, lse, g);
  }
  DimVector os(q.sizes());
  os.back() = Ev;
  bool need = autograd::GradMode::is_enabled() && (q3.requires_grad() || k3.requires_grad() || v3.requires_grad());
  if (!need) return out.reshape(os);
  auto ctx = std::make_shared<autograd::FunctionCtx>();
  ctx->needs_input_grad = {q3.requires_grad(), k3.requires_grad(), v3.requires_grad()};
  ctx->save_for_backward({qc, kc, vc, out, lse});
  auto outs = autograd::wrap_outputs(
      "ScaledDotProductFlashAttentionBackward0", {q3, k3, v3}, {out}, ctx,
      [g](autograd::FunctionCtx& c, autograd::tensor_list grads) -> autograd::tensor_list {
        autograd::tensor_list s = c.saved_tensors();
        if (!grads[0].defined()) return {Tensor(), Tensor(), Tensor()};
        Tensor dq = empty_tensor(s[0].sizes(), s[0].dtype(), s[0].device());
        Tensor dk = empty_tensor(s[1].sizes(), s[1].dtype(), s[1].device());
        Tensor dv = empty_tensor(s[2].sizes(), s[2].dtype(), s[2].device());
        if (g.BH * g.L > 0) {
          flash_attention_backward_stub[dq.device()](grads[0].contiguous(), s[0], s[1], s[2], s[3], s[4], dq, dk, dv,
                                                     g);
        } else {
          dk.zero_();
          dv.zero_();
        }
        return {dq, dk, dv};
      });
  return outs[0].reshape(os);
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, bool enable_gqa) {
  const char* op = "scaled_dot_product_attention";
  KINDLE_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2, op, ": expected query, key and value of at "
               "least 2 dimensions, got ", query.sizes(), ", ", key.sizes(), ", ", value.sizes());
  KINDLE_CHECK(query.size(-1) == key.size(-1), op, ": query's embedding dim ", query.size(-1),
               " must equal key's ", key.size(-1), " (query ", query.sizes(), ", key ", key.sizes(), ")");
  KINDLE_CHECK(key.size(-2) == value.size(-2), op, ": key and value must have the same sequence length, got key ",
               key.sizes(), " and value ", value.sizes());
  KINDLE_CHECK(query.is_floating_point() && query.dtype() == key.dtype() && query.dtype() == value.dtype(), op,
               ": Expected query, key, and value to have the same floating point dtype, but got query.dtype: ",
               query.dtype(), " key.dtype: ", key.dtype(), " and value.dtype: ", value.dtype(), " instead.");
  KINDLE_CHECK(!(is_causal && attn_mask), op, ": Explicit attn_mask should not be set when is_causal=True");
  KINDLE_CHECK_VALUE(dropout_p >= 0 && dropout_p < 1, op, ": dropout_p must be in [0, 1), got ", dropout_p);
  int64_t L = query.size(-2), S = key.size(-2);
  double s = scale.value_or(1.0 / std::sqrt(double(query.size(-1))));
  Tensor k = key, v = value;
  if (enable_gqa && query.dim() >= 3 && key.dim() >= 3 && query.size(-3) != key.size(-3)) {
    // grouped-query attention: each key/value head serves a group of query heads
    int64_t hq = query.size(-3), hk = key.size(-3);
    KINDLE_CHECK(hk > 0 && hq % hk == 0 && value.size(-3) == hk, op, ": with enable_gqa, the number of query heads (",
                 hq, ") must be a multiple of the key/value heads (", hk, ", ", value.size(-3), ")");
    Tensor idx = arange(0, hq, 1, kInt64, query.device()).div(scalar_to_tensor(hq / hk), "floor");
    k = key.index_select(-3, idx);
    v = value.index_select(-3, idx);
  }
  using autograd::forward_ad::is_dual;
  const bool fusable = !is_dual(query) && !is_dual(k) && !is_dual(v) && !attn_mask && dropout_p == 0 && query.dim() >= 3 && query.dim() == k.dim() &&
                       query.dim() == v.dim() && query.sizes().slice(0, size_t(query.dim() - 2)) ==
                       k.sizes().slice(0, size_t(k.dim() - 2)) && k.sizes().slice(0, size_t(k.dim() - 2)) ==
                       v.sizes().slice(0, size_t(v.dim() - 2));
  if (fusable && (query.dtype() == kFloat32 || query.dtype() == kFloat64))
    return flash_attention(query, k, v, is_causal, s);
  if (fusable && (query.dtype() == kFloat16 || query.dtype() == kBFloat16))  // in float32, rounded once
    return flash_attention(query.to(kFloat32), k.to(kFloat32), v.to(kFloat32), is_causal, s).to(query.dtype());
  Tensor scores = matmul(query, k.transpose(-2, -1)) * s;  // (..., L, S)
  const double neg_inf = -std::numeric_limits<double>::infinity();
  Tensor keep;  // bool mask of the positions that take part (causal and/or a bool attn_mask)
  if (is_causal) keep = ones({L, S}, kBool, query.device()).tril();
  if (attn_mask) {
    const Tensor& m = *attn_mask;
    DimVector want(scores.sizes());
    bool ok = m.dim() <= scores.dim();
    for (int64_t i = 1; ok && i <= m.dim(); ++i) {
      int64_t a = m.size(-i), b = want[size_t(scores.dim() - i)];
      ok = a == b || a == 1;
    }
    KINDLE_CHECK(ok, op, ": attn_mask of shape ", m.sizes(), " does not broadcast to the attention weights' shape ",
                 scores.sizes(), " (batch..., L=", L, ", S=", S, ")");
    if (m.dtype() == kBool) {
      keep = m;
    } else {
      scores = scores + m;
      // rows that an additive mask sets wholly to -inf attend to nothing, as with a bool mask
      Tensor finite = scores > scalar_tensor_of(neg_inf, scores.dtype());
      keep = keep.defined() ? logical_and(keep, finite) : finite;
    }
  }
  // A query row with no position to attend to gets zero weights (as PyTorch), not the NaN of a
  // softmax over -inf: its scores are replaced by 0 and its weights zeroed after the softmax.
  Tensor empty_row;
  if (keep.defined()) {
    scores = scores.masked_fill(logical_not(keep), scalar_tensor_of(neg_inf, scores.dtype()));
    empty_row = logical_not(keep.any(IntArrayRef{-1}, true));
    scores = scores.masked_fill(empty_row, scalar_tensor_of(0, scores.dtype()));
  }
  Tensor attn = softmax(scores, -1);
  if (empty_row.defined()) attn = attn.masked_fill(empty_row, scalar_tensor_of(0, attn.dtype()));
  if (dropout_p > 0) attn = dropout(attn, dropout_p, true);
  return matmul(attn, v);
}

}  // namespace kindle
