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

// How the forward kernel reads t (batch..., rows, cols; `heads` = its dim -3) in place: at most
// two batch dims, rows contiguous. Otherwise t is replaced by a contiguous copy.
void head_rows(Tensor& t, int64_t heads, HeadRows& hr) {
  const int64_t d = t.dim();
  if (d <= 4 && (t.size(-1) <= 1 || t.stride(-1) == 1)) {
    hr = {d == 4 ? t.stride(0) : 0, d >= 3 ? t.stride(-3) : 0, t.stride(-2)};
    return;
  }
  t = t.contiguous();
  hr = HeadRows::contiguous(t.size(-2), t.size(-1));
  hr.batch = hr.head * heads;
}

// q (..., L, E), k (..., S, E), v (..., S, Ev) with equal batch dims; float32 or float64.
Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
  const int64_t L = q.size(-2), S = k.size(-2), E = q.size(-1), Ev = v.size(-1);
  int64_t BH = 1;
  for (int64_t i = 0; i < q.dim() - 2; ++i) BH *= q.size(i);
  const int64_t heads = q.dim() >= 3 ? q.size(-3) : 1;
  AttentionGeom g{BH, L, S, E, Ev, scale, causal};
  g.heads = heads;
  Tensor qv = q, kv = k, vv = v, out, lse;
  {
    autograd::NoGradGuard ng;
    head_rows(qv, heads, g.q);
    head_rows(kv, heads, g.k);
    head_rows(vv, heads, g.v);
    // The output's memory follows the query's, as torch's fused CPU kernel does: a (B, heads, L,
    // E) query laid out (B, L, heads, E) (split from one projection and transposed) gets an
    // output laid out (B, L, heads, Ev), returned as its (B, heads, L, Ev) view, and the
    // transpose(1, 2).contiguous() that usually follows is free. Otherwise it is contiguous.
    const bool four = q.dim() == 4 && q.size(1) > 1 && q.size(2) > 1 && q.stride(1) < q.stride(2);
    DimVector layout(q.sizes());
    layout.back() = Ev;
    if (four) std::swap(layout[1], layout[2]);
    out = empty_tensor(layout, q.dtype(), q.device());
    if (four) out = out.transpose(1, 2);
    g.out = four ? HeadRows{L * heads * Ev, Ev, heads * Ev} : HeadRows{L * heads * Ev, L * Ev, Ev};
    lse = empty_tensor({BH, L}, q.dtype(), q.device());
    if (BH * L > 0) flash_attention_stub[q.device()](qv, kv, vv, out, lse, g);
  }
  bool need = autograd::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad());
  if (!need) return out;
  auto ctx = std::make_shared<autograd::FunctionCtx>();
  ctx->needs_input_grad = {q.requires_grad(), k.requires_grad(), v.requires_grad()};
  ctx->save_for_backward({qv, kv, vv, out, lse});
  const DimVector qs(q.sizes()), ks(k.sizes()), vs(v.sizes());
  auto outs = autograd::wrap_outputs(
      "ScaledDotProductFlashAttentionBackward0", {q, k, v}, {out}, ctx,
      [g, qs, ks, vs](autograd::FunctionCtx& c, autograd::tensor_list grads) -> autograd::tensor_list {
        autograd::tensor_list s = c.saved_tensors();
        if (!grads[0].defined()) return {Tensor(), Tensor(), Tensor()};
        // The backward kernel takes contiguous (BH, rows, cols) tensors.
        auto flat = [&](const Tensor& t, int64_t rows, int64_t cols) {
          return t.contiguous().reshape({g.BH, rows, cols});
        };
        Tensor q3 = flat(s[0], g.L, g.E), k3 = flat(s[1], g.S, g.E), v3 = flat(s[2], g.S, g.Ev);
        Tensor o3 = flat(s[3], g.L, g.Ev), go3 = flat(grads[0], g.L, g.Ev);
        Tensor dq = empty_tensor(q3.sizes(), q3.dtype(), q3.device());
        Tensor dk = empty_tensor(k3.sizes(), k3.dtype(), k3.device());
        Tensor dv = empty_tensor(v3.sizes(), v3.dtype(), v3.device());
        if (g.BH * g.L > 0) {
          flash_attention_backward_stub[dq.device()](go3, q3, k3, v3, o3, s[4], dq, dk, dv, g);
        } else {
          dk.zero_();
          dv.zero_();
        }
        return {dq.reshape(qs), dk.reshape(ks), dv.reshape(vs)};
      });
  return outs[0];
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
