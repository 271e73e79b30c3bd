// scaled_dot_product_attention, composed of GEMMs and softmax. (Kindle keeps the attention
// matrix for backward: memory grows with L*S per head, unlike PyTorch's fused CPU kernel.)
#include <cmath>
#include <limits>

#include "nn/common.h"

namespace kindle {

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
    Tensor idx = arange(0, hq, 1, kInt64).div(scalar_to_tensor(hq / hk), "floor");
    k = key.index_select(-3, idx);
    v = value.index_select(-3, idx);
  }
  Tensor scores = matmul(query, k.transpose(-2, -1)) * s;  // (..., L, S)
  const double neg_inf = -std::numeric_limits<double>::infinity();
  Tensor keep;  // bool mask of the positions that take part (causal and/or a bool attn_mask)
  if (is_causal) keep = ones({L, S}, kBool).tril();
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
    if (m.dtype() == kBool) keep = m;
    else scores = scores + m;
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
